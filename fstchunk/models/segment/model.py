"""The segment model: a linear score per typed segment (McDonald, Crammer & Pereira
2005, §3.1–§3.2, §4).

    s(x, y) = W[:, t]·f(x, y),   f(x, y) = Σ_j g(i_{j−1}, i_j)

over the member indices of y padded with 0 and n+1 (:mod:`.features`); the scores of
all steps for all types are F @ W (steps × T), scattered into a (T, n+2, n+2) array
(−inf for the steps not allowed), from which :func:`~fstchunk.structures.segments.kbest` finds the k best
segments.  A sentence's prediction (§3.1, "At test time"): the top k = n segments with
score > threshold (0 by default, the paper's; :meth:`SegmentModel.tune_threshold`
fixes it on dev, §4.3), then the §3.2.1 restrictions
(:func:`~fstchunk.structures.segments.restrict`, greedy best first).

An estimator (the scikit-learn convention): :meth:`SegmentModel.fit` learns types, POS
use, the max gap, the layout and θ = W through :class:`fstchunk.learn.loop.Trainer`
(objective ``multilabel``; the solver is :class:`.train.HildrethSolver`, one step an
epoch), so dev F, ``select="dev"``, checkpoints, resume and Ctrl-C are the loop's.

Model files: :mod:`.files` (kind ``segment``: W and every hyper-parameter, validated on
load; the training layout, :mod:`fstchunk.io.layout`, that
:meth:`SegmentModel.layout_mismatch` checks an input against).  Decision rules fixed
on dev (threshold, calibration): :mod:`.decisions`.

Pitfalls: ``types`` keep their training order (the columns of W); ``k`` too small
drops segments that would score > 0; a sentence may hold segments of types the model
does not know (they are never predicted); a model trained without POS ignores the
tags of a sentence that has them (the features must be those of training); W is dense
float64 (D·T·8 bytes: 40 MB at D = 2**20 and 5 types), stored compressed, and
training holds about four such arrays (θ, the learner's W and U, the best θ on dev);
:mod:`fstchunk.models` registers this class (kind ``segment``).
"""

from __future__ import annotations

import json
import numbers
from typing import Any, ClassVar, Sequence

import numpy as np
import scipy.sparse as sp

from ...decoding.decoders import Decoder, decoder as get_decoder, names
from ...core.errors import InputError
from ...io.layout import Layout
from ...learn import objectives as lo
from ...learn.loop import Trainer
from ...io.segments import SegSentence, Segment, iter_types
from ...decoding.segments import calibrated
from ...structures.segments import kbest, restrict
from . import decisions
from .cache import FeatureCache
from .layout import mismatch, training_layout
from .files import check_int, read_model, restriction_flags, restriction_text, write_model
from .features import (DEFAULT_PREDICATES, SentenceFeatures, check_predicates,
                       feature_version, segment_vectors, sentence_features)
from .train import HildrethSolver, SegmentData, max_gap_of, segment_f

#: the segment decoders (:func:`fstchunk.decoding.decoders.names` of ``segments``): McDonald et
#: al.'s threshold on the score, or exact MEU for F
DECODERS = names("segments")


class SegmentModel:
    """McDonald, Crammer & Pereira's (2005) segment model: a segment is a typed set
    of token positions (contiguous or not, possibly overlapping), scored linearly,
    $s(x, y) = W_{:, t} \\cdot f(x, y)$ with $f$ a sum of hashed step features
    (module doc); a sentence's segments are the top k scoring above ``threshold``,
    then the restrictions.  The constructor takes the hyper-parameters; :meth:`fit`
    learns the types, the max gap and W (the ``multilabel`` objective).

    Args:
        D: the hashed feature space's size (W is D × types).
        max_gap: the largest gap inside a segment (``"auto"``: the training gold's
            largest; ``None``: any).
        k: the candidates per sentence (``None``: the sentence's length).
        restrictions: §3.2.1's restrictions, e.g. ``"no-overlap,contiguous"``, or flags.
        threshold: the score a segment must exceed.
        average: average the learner's weights.
        seed: the seed of the learner's sentence order.
        max_sweeps: Hildreth's most sweeps per update.
        predicates: the step features' predicate set (``mcp05``, ``sp03``, both).

    Raises:
        InputError: a hyper-parameter out of range or of the wrong type, naming it.

    Attributes:
        types: the segment types, in order of first appearance (W's columns).
        W: θ, the weights (D × types).
        settings: what training recorded (epochs, dev F, ...).

    Examples:
        >>> import fstchunk
        >>> from fstchunk.io.segments import SegSentence, Segment
        >>> train = [SegSentence(["John", "Smith", "ran"], [Segment("PER", (0, 1))]),
        ...          SegSentence(["Mary", "sat"], [Segment("PER", (0,))]),
        ...          SegSentence(["Bo", "Li", "fell"], [Segment("PER", (0, 1))])]
        >>> model = fstchunk.SegmentModel(D=2 ** 12).fit(train, max_iter=3)
        >>> model.types, model.W.shape
        (['PER'], (4096, 1))
        >>> model.decode([SegSentence(["Ann", "Lee", "ran"], None)])
        [[Segment(type='PER', positions=(0, 1))]]
    """

    kind: ClassVar[str] = "segment"
    #: the objectives a segment model trains (:mod:`fstchunk.learn.objectives`)
    objectives = (lo.MULTILABEL,)

    def __init__(self, D: int = 2 ** 20, max_gap: int | None | str = "auto",
                 k: int | None = None, restrictions: str | dict | None = None,
                 threshold: float = 0.0, average: bool = True, seed: int = 0,
                 max_sweeps: int = 1000, predicates: str = DEFAULT_PREDICATES):
        self.D = check_int(D, "D", 1)
        self.predicates = check_predicates(predicates)
        if max_gap != "auto":
            max_gap = check_int(max_gap, "max_gap", 0, none=True)
        self.max_gap: int | None | str = max_gap
        self._max_gap_param = max_gap
        self.k = check_int(k, "k", 1, none=True)
        self.restrictions = restriction_flags(restrictions)
        if isinstance(threshold, bool) or not (isinstance(threshold, numbers.Real)
                                               and np.isfinite(threshold)):
            raise InputError(f"threshold must be a finite number, got {threshold!r}")
        self.threshold = float(threshold)
        if not isinstance(average, bool):
            raise InputError(f"average must be True or False, got {average!r}")
        self.average = average
        self.seed = check_int(seed, "seed", 0)
        self.max_sweeps = check_int(max_sweeps, "max_sweeps", 1)
        self.types: list[str] = []
        self.type_index: dict[str, int] = {}
        self.W: np.ndarray | None = None
        self.pos = False
        self.settings: dict = {}
        #: the training layout (None: not recorded)
        self.layout: Layout | None = None
        #: the learner's last weights when training averaged (not saved)
        self.other_weights: np.ndarray | None = None
        self._learner: HildrethSolver | None = None     # while a Trainer runs its solver
        self._dev_flags: dict | None = None             # fit's dev_restrictions
        self._cache: FeatureCache | None = None          # the same: features kept (.cache)

    def _fitted(self, types: Sequence[str], pos: bool = False, W: np.ndarray | None = None
                ) -> "SegmentModel":
        """Set the fitted state (internal: :meth:`fit` and :meth:`load` build it): the
        types, whether POS is read, W (zeros by default); ``max_gap`` must be resolved."""
        types = list(types)
        if not types or not all(isinstance(t, str) and t for t in types) \
                or len(set(types)) != len(types):
            raise InputError(f"types must be distinct non-empty strings, got {types!r}")
        if self.max_gap == "auto":
            raise InputError("max_gap 'auto' is the largest gap of the training data: fit "
                             "resolves it")
        if W is None:
            W = np.zeros((self.D, len(types)))
        W = np.ascontiguousarray(W, dtype=np.float64)
        if W.shape != (self.D, len(types)):
            raise InputError(f"W must have shape (D, T) = ({self.D}, {len(types)}), "
                             f"got {W.shape}")
        self.types, self.type_index = types, {t: i for i, t in enumerate(types)}
        self.W, self.pos = W, bool(pos)
        return self

    def _check_fitted(self) -> None:
        if self.W is None:
            raise InputError("this segment model is not fitted (SegmentModel.fit, or "
                             "load a model file)")

    @property
    def data_scheme(self) -> str | None:
        """The scheme of a CoNLL training file's tag column (None: JSONL, or unknown)."""
        return self.layout.data_scheme if self.layout is not None else None

    @staticmethod
    def layout_of(sentences: Sequence[SegSentence]) -> Layout:
        """The layout of training ``sentences`` (:func:`.layout.training_layout`)."""
        return training_layout(sentences)

    def layout_mismatch(self, sentences: Sequence[SegSentence]) -> str | None:
        """Why the first ``sentences`` of an input do not look like training's word or
        POS values, None if they do or no layout is recorded (:func:`.layout.mismatch`)."""
        return None if self.layout is None else mismatch(self.layout, sentences)

    # ---------------------------------------------------------------- scores
    def features(self, sentence: SegSentence) -> SentenceFeatures:
        """The allowed steps of ``sentence`` and their features (:mod:`.features`); its
        POS tags are read only by a model trained with them (and then required)."""
        self._check_fitted()
        if self.pos and sentence.pos is None:
            raise InputError(f"{sentence.source}: the model reads POS tags, the sentence has "
                             f"none (a CoNLL file gives them in the second of three or more "
                             f"columns, a JSONL line as \"pos\")")
        if self._cache is not None:
            return self._cache.features(sentence, self._compute_features)
        return self._compute_features(sentence)

    def _compute_features(self, sentence: SegSentence) -> SentenceFeatures:
        return sentence_features(sentence.tokens, sentence.pos if self.pos else None, self.D,
                                 self.max_gap, self.predicates)

    def arc_scores(self, sentence: SegSentence, sf: SentenceFeatures | None = None,
                   W: np.ndarray | None = None) -> np.ndarray:
        """(T, n+2, n+2): ``[t, j, i]`` = W[:, t]·g(j, i) for allowed steps, −inf elsewhere
        (``W``: other weights of the same shape, e.g. the training average)."""
        self._check_fitted()
        sf = self.features(sentence) if sf is None else sf
        W = self.W if W is None else W
        out = np.full((len(self.types), sf.n + 2, sf.n + 2), -np.inf)
        out[:, sf.J, sf.I] = np.asarray(sf.F @ W).T
        return out

    def default_k(self, n: int) -> int:
        """k of a sentence of n tokens: the setting, or n (§4), at least 1."""
        return self.k if self.k is not None else max(n, 1)

    def candidates(self, sentence: SegSentence, k: int | None = None,
                   sf: SentenceFeatures | None = None,
                   W: np.ndarray | None = None) -> list[tuple[float, int, tuple[int, ...]]]:
        """The k best segments ``(score, type index, 0-based positions)``, best first
        (k = :meth:`default_k` by default)."""
        k = self.default_k(len(sentence)) if k is None else check_int(k, "k", 1)
        return kbest(self.arc_scores(sentence, sf, W), k, self.max_gap)

    def decode(self, sentences: Sequence[SegSentence], restrictions: str | dict | None = None,
               threshold: float | None = None, W: np.ndarray | None = None,
               decoder: "str | Decoder" = "threshold", beta: float = 1.0
               ) -> list[list[Segment]]:
        """Per sentence the predicted segments, filtered by ``restrictions`` (default: the
        model's), best first.  ``decoder="threshold"``: the top k with score >
        ``threshold`` (default: the model's); ``"meu"``: the set of maximal expected
        F_β (standard β) among the top k under the calibrated probabilities (:meth:`calibrate`,
        :func:`~fstchunk.decoding.segments.meu_set`), the restrictions then taken best first by probability."""
        return [[g for g, _ in row] for row in
                self.decode_scored(sentences, restrictions, threshold, W, decoder, beta)]

    def decode_scored(self, sentences: Sequence[SegSentence],
                      restrictions: str | dict | None = None, threshold: float | None = None,
                      W: np.ndarray | None = None, decoder: "str | Decoder" = "threshold",
                      beta: float = 1.0) -> list[list[tuple[Segment, float | None]]]:
        """:meth:`decode`'s segments each with its calibrated probability
        p = σ(a·s(c) + b) (:meth:`calibrate`), or None when the model has no
        calibration (then only ``decoder="threshold"`` runs)."""
        dec = get_decoder(decoder, beta=beta, structure="segments")
        flags = self.restrictions if restrictions is None else restriction_flags(restrictions)
        thr = self.threshold if threshold is None else float(threshold)
        a, b = self.platt() if dec.needs_probabilities or self.calibrated else (None, None)
        out = []
        for s in sentences:
            cands = self.candidates(s, W=W)
            p = calibrated([c[0] for c in cands], a, b) if a is not None else [None] * len(cands)
            chosen = dec.choose_segments([c[0] for c in cands], p if a is not None else None, thr)
            top = [cands[i] + (p[i],) for i in chosen]
            if any(flags.values()):
                top = restrict(top, **flags)
            out.append([(Segment(self.types[t], pos), None if q is None else float(q))
                        for _, t, pos, q in top])
        return out

    @property
    def calibrated(self) -> bool:
        """Whether :meth:`calibrate` has given the model segment probabilities."""
        return self.settings.get("platt") is not None

    def calibrate(self, sentences: Sequence[SegSentence], source: str | None = None
                  ) -> tuple[float, float]:
        """Fit p(c ∈ gold) = σ(a·s(c) + b) on the top-k candidates of held-out
        sentences with gold segments (:func:`.decisions.calibrate`, Platt, maximum
        likelihood); stored in ``settings["platt"]`` for ``decoder="meu"``; (a, b)."""
        return decisions.calibrate(self, sentences, source)

    def platt(self) -> tuple[float, float]:
        """The calibration (a, b); InputError saying how to get one if there is none."""
        return decisions.platt(self)

    def tune_threshold(self, sentences: Sequence[SegSentence],
                       thresholds: Sequence[float] = decisions.THRESHOLDS, beta: float = 1.0,
                       source: str | None = None,
                       restrictions: str | dict | None = None) -> float:
        """Set ``threshold`` to the best F_β's of ``thresholds`` on held-out ``sentences``
        under ``restrictions`` (default the model's): :func:`.decisions.tune_threshold`
        (§4.3, Figure 5; a new :meth:`fit` restores the threshold before); the threshold."""
        return decisions.tune_threshold(self, sentences, thresholds, beta, source, restrictions)

    def segment_features(self, sentence: SegSentence, segment: Segment,
                         sf: SentenceFeatures | None = None) -> sp.csr_matrix:
        """f(x, y) as a (1 × D) sparse row: the sum of the rows of F of the segment's
        steps (its score is ``W[:, type] · f``)."""
        if segment.positions and (min(segment.positions) < 0
                                  or max(segment.positions) >= len(sentence)):
            raise InputError(f"{sentence.source}: segment positions {list(segment.positions)} "
                             f"outside the sentence's {len(sentence)} tokens")
        sf = self.features(sentence) if sf is None else sf
        return segment_vectors(sf, [segment.positions], self.D)

    # ---------------------------------------------------------------- training
    @property
    def theta(self) -> np.ndarray:
        """θ: W flattened (a view; D·T entries, type by type within a feature)."""
        self._check_fitted()
        return self.W.ravel()

    @theta.setter
    def theta(self, value: np.ndarray) -> None:
        self._check_fitted()
        value = np.asarray(value, dtype=np.float64)
        if value.size != self.W.size:
            raise InputError(f"θ has {value.size} entries; this model has D × T = "
                             f"{self.D} × {len(self.types)}")
        self.W = np.ascontiguousarray(value.reshape(self.W.shape))

    def training_data(self, train: Sequence[SegSentence] | SegmentData) -> SegmentData:
        """The checked training sentences (:meth:`.train.SegmentData.of`); an unfitted model
        learns its types, POS use, max gap and layout from them (W = 0), a fitted one
        refuses sentences with types it does not know."""
        data = train if isinstance(train, SegmentData) else SegmentData.of(train)
        sents = data.sentences
        types = list(iter_types(sents))
        if self.W is None:
            if self.max_gap == "auto":
                self.max_gap = max_gap_of(sents)
            self._fitted(types, pos=all(s.pos is not None for s in sents))
            self.layout = self.layout_of(sents)
        elif any(t not in self.type_index for t in types):
            unknown = [t for t in types if t not in self.type_index]
            raise InputError(f"{sents[0].source}: segment types {', '.join(unknown)} are not "
                             f"among the model's ({', '.join(self.types)})")
        return data

    def solver(self, objective: lo.Objective, data: SegmentData, *, l2: float, beta: float,
               loss: str, tol: float | None, executor: Any) -> HildrethSolver:
        """The online multilabel learner (:class:`.train.HildrethSolver`, from the table
        :data:`fstchunk.models.solvers.SOLVERS`) with this model's ``seed``, ``average``
        and ``max_sweeps``; it answers :meth:`dev_f` while it runs."""
        from ..solvers import make_solver          # the table imports this package
        self._learner = make_solver(self, objective, data, l2=l2, beta=beta, loss=loss,
                                    tol=tol, executor=executor, kind="a segment model")
        return self._learner

    def dev_f(self, dev: Sequence[SegSentence]) -> float:
        """F (percent) over exact (type, positions) matches on ``dev``; while a solver
        trains this model, also the history's dev F (:meth:`.train.HildrethSolver.dev_f`)."""
        return self._learner.dev_f(dev) if self._learner is not None else segment_f(self, dev)

    def run_identity(self) -> dict:
        """What a checkpoint of this model's training must match (Trainer ``identity``)."""
        self._check_fitted()
        return {"types": json.dumps(self.types), "pos": self.pos, "D": self.D,
                "max_gap": self.max_gap, "k": self.k,
                "features": feature_version(self.predicates),
                "restrictions": restriction_text(self.restrictions),
                "seed": self.seed, "average": self.average, "max_sweeps": self.max_sweeps,
                **({"threshold": self.threshold} if self.threshold else {})}  # dev F reads it

    def fit(self, sentences: Sequence[SegSentence], dev: Sequence[SegSentence] | None = None,
            max_iter: int = 10, identity: dict | None = None,
            record: dict | None = None, dev_restrictions: str | dict | None = None,
            **options: Any) -> "SegmentModel":
        """Learn from ``sentences`` afresh (the fitted state of :meth:`training_data`, then
        ``max_iter`` epochs of the online learner) through
        :class:`fstchunk.learn.loop.Trainer`; ``options``: the trainer's other arguments
        (``select``, ``checkpoint``, ``resume``, ``output``, ``callbacks``, ...; dev F
        and checkpoints every epoch and no progress unless asked).  ``identity``: more
        fields a resumed run must match (the CLI: the training file's digest);
        ``record``: entries for ``settings`` (the files' names); ``dev_restrictions``:
        those of the decoding dev F measures (default the model's; ``segment train``
        with a CoNLL dev file: also no-overlap and contiguous, as its decoding).  Sets
        ``settings`` ``select`` and ``selected_epoch`` (the epoch θ is from); ``self``."""
        options.setdefault("progress", False)
        options.setdefault("dev_every", 1)
        options.setdefault("checkpoint_every", 1)
        select = options.get("select", "last")
        self.max_gap = self._max_gap_param
        self.threshold = decisions.untuned(self.settings, self.threshold)  # tuned to old W
        self.types, self.type_index, self.W, self.layout = [], {}, None, None
        self.settings, self.other_weights = dict(record or {}), None
        data = self.training_data(sentences)
        self._dev_flags = None if dev_restrictions is None or not dev else \
            restriction_flags(dev_restrictions)                 # no dev: nothing to measure
        run = {**self.run_identity(), **(identity or {})}
        if self._dev_flags is not None and self._dev_flags != self.restrictions:
            run["dev_restrictions"] = self.settings["dev_restrictions"] = restriction_text(
                self._dev_flags)
        trainer = Trainer(lo.MULTILABEL, max_iter=max_iter, dev=dev, identity=run, **options)
        self.settings["select"] = select
        self._cache = FeatureCache(self)
        try:
            trainer.fit(self, data)
        finally:
            self._learner, self._cache, self._dev_flags = None, None, None
        self._note_selection()
        return self

    def _note_selection(self) -> None:
        """A finished run's ``settings`` (the Trainer's ``iterations`` recorded) also name
        the epoch θ is from: ``selected_epoch``, the best on dev or the last."""
        s = self.settings
        if "iterations" in s and "iteration" in s:
            s["selected_epoch"] = s.get("selected_iteration", s["iteration"])

    # ---------------------------------------------------------------- files
    def save(self, path) -> None:
        """Write the model file (:func:`.files.write_model`)."""
        self._check_fitted()
        self._note_selection()
        write_model(path, self)

    @classmethod
    def load(cls, path) -> "SegmentModel":
        """The model saved at ``path``, every field validated (:func:`.files.read_model`;
        ModelFileError naming the file and the field otherwise)."""
        f = read_model(path, cls.kind)
        m = cls(f.D, f.max_gap, f.k, f.restrictions, f.threshold, **f.learner,
                predicates=f.predicates)
        m._fitted(f.types, f.pos, f.W)
        m.settings, m.layout = f.settings, f.layout
        return m
