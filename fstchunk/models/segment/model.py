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

An estimator (the scikit-learn convention, :mod:`fstchunk.models.estimator`): the
constructor stores the hyper-parameters as given; :meth:`SegmentModel.fit` checks them
(:func:`.files.check_hyper`) and learns types, POS use, the max gap, the layout and
θ = W (``types_``, ``pos_``, ``max_gap_``, ``layout_``, ``W_``) through :class:`fstchunk.learn.loop.Trainer`
(objective ``multilabel``; the solver is :class:`.train.HildrethSolver`, one step an
epoch), so dev F, ``select="dev"``, checkpoints, resume and Ctrl-C are the loop's.

Model files: :mod:`.files` (kind ``segment``: W and every hyper-parameter, validated on
load; the training layout, :mod:`fstchunk.io.layout`, that
:meth:`SegmentModel.layout_mismatch` checks an input against).  Decision rules fixed
on dev (threshold, calibration): :mod:`.decisions`.

Pitfalls: ``types_`` keep their training order (the columns of W); ``k`` too small
drops segments that would score > 0; a sentence may hold segments of types the model
does not know (they are never predicted); a model trained without POS ignores the
tags of a sentence that has them (the features must be those of training); W is dense
float64 (D·T·8 bytes: 40 MB at D = 2**20 and 5 types), stored compressed, and
training holds about four such arrays (θ, the learner's W and U, the best θ on dev);
:mod:`fstchunk.models` registers this class (kind ``segment``).
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import numpy as np
import scipy.sparse as sp

from ...decoding.decoders import Decoder, decoder as get_decoder, names
from ...core.errors import InputError
from ...io.layout import Layout
from ...learn import objectives as lo
from ...io.segments import SegSentence, Segment
from ...decoding.segments import calibrated
from ...structures.segments import kbest, restrict
from ..estimator import Estimator, FittedAlias
from . import decisions
from .cache import FeatureCache
from .fitting import Fitting
from .layout import mismatch, training_layout
from .files import check_hyper, check_int, read_model, restriction_flags, write_model
from .features import DEFAULT_PREDICATES, SentenceFeatures, segment_vectors, sentence_features
from .train import HildrethSolver

#: the segment decoders (:func:`fstchunk.decoding.decoders.names` of ``segments``): McDonald et
#: al.'s threshold on the score, or exact MEU for F
DECODERS = names("segments")


class SegmentModel(Fitting, Estimator):
    """McDonald, Crammer & Pereira's (2005) segment model: a segment is a typed set
    of token positions (contiguous or not, possibly overlapping), scored linearly,
    $s(x, y) = W_{:, t} \\cdot f(x, y)$ with $f$ a sum of hashed step features
    (module doc); a sentence's segments are the top k scoring above ``threshold_``,
    then the restrictions.  An estimator (:mod:`fstchunk.models.estimator`): the
    constructor stores the hyper-parameters as given, :meth:`fit` checks them and
    learns the types, the max gap and W (the ``multilabel`` objective) into ``*_``
    attributes.

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
        max_iter: the epochs (passes over the training sentences) in all.
        warm_start: refused on a fitted model (the learner starts from W = 0; a run
            continues from its checkpoint, ``fit(..., resume=True)``).

    Raises:
        InputError: (by :meth:`fit`) a hyper-parameter out of range or of the wrong
            type, naming it.

    Attributes:
        types_: the segment types, in order of first appearance (W's columns).
        W_: θ, the weights (D × types); ``theta_`` is W_ flattened.
        max_gap_: the max gap in effect (``max_gap="auto"`` resolved).
        threshold_: the threshold in effect (``threshold``, or :meth:`tune_threshold`'s).
        restrictions_: the restriction flags decoding applies by default.
        pos_: whether the features read POS tags.
        settings_: what training recorded (epochs, dev F, ...).
        layout_: the training layout (None: not recorded); ``data_scheme_`` its tag
            column's scheme.
        scheme_: None (segment sets, not tag lattices).
        other_weights_: the learner's last W when θ is the average (not saved).

    The fitted state's names before the ``_`` (``types``, ``W``, ``theta``,
    ``settings``, ...) read and write these, with a
    :class:`~fstchunk.core.errors.FstchunkDeprecationWarning`.

    Examples:
        >>> import fstchunk
        >>> from fstchunk.io.segments import SegSentence, Segment
        >>> train = [SegSentence(["John", "Smith", "ran"], [Segment("PER", (0, 1))]),
        ...          SegSentence(["Mary", "sat"], [Segment("PER", (0,))]),
        ...          SegSentence(["Bo", "Li", "fell"], [Segment("PER", (0, 1))])]
        >>> model = fstchunk.SegmentModel(D=2 ** 12, max_iter=3).fit(train)
        >>> model.types_, model.W_.shape
        (['PER'], (4096, 1))
        >>> model.decode([SegSentence(["Ann", "Lee", "ran"], None)])
        [[Segment(type='PER', positions=(0, 1))]]
    """

    kind: ClassVar[str] = "segment"
    #: the objectives a segment model trains (:mod:`fstchunk.learn.objectives`)
    objectives = (lo.MULTILABEL,)
    _fitted_attribute: ClassVar[str] = "W_"

    # the fitted state's names before the estimator contract (a deprecation warning)
    types = FittedAlias("types_")
    type_index = FittedAlias("type_index_")
    W = FittedAlias("W_")
    theta = FittedAlias("theta_")
    pos = FittedAlias("pos_")
    settings = FittedAlias("settings_")
    layout = FittedAlias("layout_")
    data_scheme = FittedAlias("data_scheme_")
    other_weights = FittedAlias("other_weights_")

    def __init__(self, D: int = 2 ** 20, max_gap: int | None | str = "auto",
                 k: int | None = None, restrictions: str | dict | None = None,
                 threshold: float = 0.0, average: bool = True, seed: int = 0,
                 max_sweeps: int = 1000, predicates: str = DEFAULT_PREDICATES,
                 max_iter: int = 10, warm_start: bool = False):
        self.D = D
        self.max_gap = max_gap
        self.k = k
        self.restrictions = restrictions
        self.threshold = threshold
        self.average = average
        self.seed = seed
        self.max_sweeps = max_sweeps
        self.predicates = predicates
        self.max_iter = max_iter
        self.warm_start = warm_start
        self._learner: HildrethSolver | None = None     # while a Trainer runs its solver
        self._dev_flags: dict | None = None             # fit's dev_restrictions
        self._cache: FeatureCache | None = None          # the same: features kept (.cache)

    def _fitted(self, types: Sequence[str], pos: bool = False, W: np.ndarray | None = None,
                max_gap: int | None | str = "auto") -> "SegmentModel":
        """Set the fitted state (internal: :meth:`fit` and :meth:`load` build it): the
        hyper-parameters checked (``_hp``), the types, whether POS is read, W (zeros by
        default), the max gap (``"auto"``: the hyper-parameter, which must be resolved),
        the threshold, restrictions, empty settings and no layout."""
        hp = check_hyper(self.get_params())
        max_gap = hp.max_gap if max_gap == "auto" else max_gap
        types = list(types)
        if not types or not all(isinstance(t, str) and t for t in types) \
                or len(set(types)) != len(types):
            raise InputError(f"types must be distinct non-empty strings, got {types!r}")
        if max_gap == "auto":
            raise InputError("max_gap 'auto' is the largest gap of the training data: fit "
                             "resolves it")
        if W is None:
            W = np.zeros((hp.D, len(types)))
        W = np.ascontiguousarray(W, dtype=np.float64)
        if W.shape != (hp.D, len(types)):
            raise InputError(f"W must have shape (D, T) = ({hp.D}, {len(types)}), "
                             f"got {W.shape}")
        self._hp = hp
        self.types_, self.type_index_ = types, {t: i for i, t in enumerate(types)}
        self.W_, self.pos_, self.max_gap_ = W, bool(pos), max_gap
        self.threshold_, self.restrictions_ = hp.threshold, dict(hp.restrictions)
        self.settings_: dict = {}
        #: the training layout (None: not recorded)
        self.layout_: Layout | None = None
        self.scheme_ = None             # segment sets, not tag lattices: no scheme
        #: the learner's last weights when training averaged (not saved)
        self.other_weights_: np.ndarray | None = None
        return self

    def _unfit(self) -> None:
        """Drop the fitted state (every ``*_`` attribute and the checked parameters)."""
        for name in [n for n in vars(self) if n.endswith("_") or n == "_hp"]:
            delattr(self, name)

    @property
    def data_scheme_(self) -> str | None:
        """The scheme of a CoNLL training file's tag column (None: JSONL, or unknown)."""
        return self.layout_.data_scheme if self.layout_ is not None else None

    @staticmethod
    def layout_of(sentences: Sequence[SegSentence]) -> Layout:
        """The layout of training ``sentences`` (:func:`.layout.training_layout`)."""
        return training_layout(sentences)

    def layout_mismatch(self, sentences: Sequence[SegSentence]) -> str | None:
        """Why the first ``sentences`` of an input do not look like training's word or
        POS values, None if they do or no layout is recorded (:func:`.layout.mismatch`)."""
        return None if self.layout_ is None else mismatch(self.layout_, sentences)

    # ---------------------------------------------------------------- scores
    def features(self, sentence: SegSentence) -> SentenceFeatures:
        """The allowed steps of ``sentence`` and their features (:mod:`.features`); its
        POS tags are read only by a model trained with them (and then required)."""
        self._check_fitted()
        if self.pos_ and sentence.pos is None:
            raise InputError(f"{sentence.source}: the model reads POS tags, the sentence has "
                             f"none (a CoNLL file gives them in the second of three or more "
                             f"columns, a JSONL line as \"pos\")")
        if self._cache is not None:
            return self._cache.features(sentence, self._compute_features)
        return self._compute_features(sentence)

    def _compute_features(self, sentence: SegSentence) -> SentenceFeatures:
        return sentence_features(sentence.tokens, sentence.pos if self.pos_ else None,
                                 self._hp.D, self.max_gap_, self._hp.predicates)

    def arc_scores(self, sentence: SegSentence, sf: SentenceFeatures | None = None,
                   W: np.ndarray | None = None) -> np.ndarray:
        """(T, n+2, n+2): ``[t, j, i]`` = W[:, t]·g(j, i) for allowed steps, −inf elsewhere
        (``W``: other weights of the same shape, e.g. the training average)."""
        self._check_fitted()
        sf = self.features(sentence) if sf is None else sf
        W = self.W_ if W is None else W
        out = np.full((len(self.types_), sf.n + 2, sf.n + 2), -np.inf)
        out[:, sf.J, sf.I] = np.asarray(sf.F @ W).T
        return out

    def default_k(self, n: int) -> int:
        """k of a sentence of n tokens: the setting, or n (§4), at least 1."""
        return self._hp.k if self._hp.k is not None else max(n, 1)

    def candidates(self, sentence: SegSentence, k: int | None = None,
                   sf: SentenceFeatures | None = None,
                   W: np.ndarray | None = None) -> list[tuple[float, int, tuple[int, ...]]]:
        """The k best segments ``(score, type index, 0-based positions)``, best first
        (k = :meth:`default_k` by default)."""
        k = self.default_k(len(sentence)) if k is None else check_int(k, "k", 1)
        return kbest(self.arc_scores(sentence, sf, W), k, self.max_gap_)

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
        self._check_fitted()
        dec = get_decoder(decoder, beta=beta, structure="segments")
        flags = self.restrictions_ if restrictions is None else restriction_flags(restrictions)
        thr = self.threshold_ if threshold is None else float(threshold)
        a, b = self.platt() if dec.needs_probabilities or self.calibrated else (None, None)
        out = []
        for s in sentences:
            cands = self.candidates(s, W=W)
            p = calibrated([c[0] for c in cands], a, b) if a is not None else [None] * len(cands)
            chosen = dec.choose_segments([c[0] for c in cands], p if a is not None else None, thr)
            top = [cands[i] + (p[i],) for i in chosen]
            if any(flags.values()):
                top = restrict(top, **flags)
            out.append([(Segment(self.types_[t], pos), None if q is None else float(q))
                        for _, t, pos, q in top])
        return out

    @property
    def calibrated(self) -> bool:
        """Whether :meth:`calibrate` has given the model segment probabilities."""
        return self.fitted and self.settings_.get("platt") is not None

    def calibrate(self, sentences: Sequence[SegSentence], source: str | None = None
                  ) -> tuple[float, float]:
        """Fit p(c ∈ gold) = σ(a·s(c) + b) on the top-k candidates of held-out
        sentences with gold segments (:func:`.decisions.calibrate`, Platt, maximum
        likelihood); stored in ``settings_["platt"]`` for ``decoder="meu"``; (a, b)."""
        return decisions.calibrate(self, sentences, source)

    def platt(self) -> tuple[float, float]:
        """The calibration (a, b); InputError saying how to get one if there is none."""
        return decisions.platt(self)

    def tune_threshold(self, sentences: Sequence[SegSentence],
                       thresholds: Sequence[float] = decisions.THRESHOLDS, beta: float = 1.0,
                       source: str | None = None,
                       restrictions: str | dict | None = None) -> float:
        """Set ``threshold_`` (the threshold decoding uses) to the best F_β's of
        ``thresholds`` on held-out ``sentences`` under ``restrictions`` (default the
        model's): :func:`.decisions.tune_threshold` (§4.3, Figure 5; the hyper-parameter
        ``threshold`` stays, and a new :meth:`fit` starts from it); the threshold."""
        return decisions.tune_threshold(self, sentences, thresholds, beta, source, restrictions)

    def segment_features(self, sentence: SegSentence, segment: Segment,
                         sf: SentenceFeatures | None = None) -> sp.csr_matrix:
        """f(x, y) as a (1 × D) sparse row: the sum of the rows of F of the segment's
        steps (its score is ``W_[:, type] · f``)."""
        if segment.positions and (min(segment.positions) < 0
                                  or max(segment.positions) >= len(sentence)):
            raise InputError(f"{sentence.source}: segment positions {list(segment.positions)} "
                             f"outside the sentence's {len(sentence)} tokens")
        sf = self.features(sentence) if sf is None else sf
        return segment_vectors(sf, [segment.positions], self._hp.D)

    # ---------------------------------------------------------------- files
    def save(self, path) -> None:
        """Write the model file (:func:`.files.write_model`)."""
        self._check_fitted()
        self._note_selection()
        write_model(path, self)

    @classmethod
    def load(cls, path) -> "SegmentModel":
        """The model saved at ``path``, every field validated (:func:`.files.read_model`;
        ModelFileError naming the file and the field otherwise): its fitted state, and
        the hyper-parameters it was fitted with (``threshold``: the one before
        :meth:`tune_threshold`, the file's in ``threshold_``)."""
        f = read_model(path, cls.kind)
        m = cls(D=f.D, max_gap=f.max_gap, k=f.k, restrictions=f.restrictions,
                threshold=decisions.untuned(f.settings, f.threshold), **f.learner,
                predicates=f.predicates)
        m._fitted(f.types, f.pos, f.W)
        m.threshold_, m.settings_, m.layout_ = f.threshold, f.settings, f.layout
        return m
