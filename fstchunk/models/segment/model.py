"""The segment model: a linear score per typed segment (McDonald, Crammer & Pereira
2005, §3.1–§3.2, §4).

    s(x, y) = W[:, t]·f(x, y),   f(x, y) = Σ_j g(i_{j−1}, i_j)

over the member indices of y padded with 0 and n+1 (:mod:`.features`); the scores of
all steps for all types are F @ W (steps × T), scattered into a (T, n+2, n+2) array
(−inf for the steps not allowed), from which :func:`.space.kbest` finds the k best
segments.  A sentence's prediction (§3.1, "At test time"): the top k = n segments with
score > threshold (0 by default; §4.3 tunes it), then the §3.2.1 restrictions
(:func:`.space.restrict`, greedy best first).

Model files (:mod:`fstchunk.models.io`, kind ``segment``): the array ``W`` (D × T) and
the metadata fields ``types``, ``features`` (the feature function's version,
:data:`.features.FEATURES`), ``D``, ``max_gap``, ``k`` (None: k = n),
``restrictions``, ``threshold``, ``pos`` (whether the features read POS tags) and
``settings`` (training bookkeeping); every field is validated on load.  A model
trained by ``fstchunk segment train`` also records its training layout
(:attr:`SegmentModel.layout`, :mod:`fstchunk.layout`) over the columns its reader
gives whatever the file's format (word, and POS where the sentences have it), and the
data scheme of a CoNLL training file (IOB2; None for JSONL);
:meth:`SegmentModel.layout_mismatch` checks an input's first sentences against it.

Pitfalls: ``types`` keep their training order (the columns of W); ``k`` too small
drops segments that would score > 0; a sentence may hold segments of types the model
does not know (they are never predicted); a model trained without POS ignores the
tags of a sentence that has them (the features must be those of training); W is dense
float64 (D·T·8 bytes: 40 MB at D = 2**20 and 5 types), stored compressed;
:mod:`fstchunk.models` registers this class (kind ``segment``).
"""

from __future__ import annotations

import numbers
from typing import Any, ClassVar, Sequence

import numpy as np
import scipy.sparse as sp

from ...columns import Columns
from ...conll import Sentence
from ...errors import InputError
from ...fbeta import check_beta
from ...layout import Layout
from ...segments.data import SegSentence, Segment
from ...segments.meu import calibrated, meu_set, platt_fit
from ...segments.space import RESTRICTIONS, kbest, parse_restrictions, restrict
from ..io import Fields, load_model_file, save_model
from .features import FEATURES, SentenceFeatures, segment_vectors, sentence_features

#: the segment decoders: McDonald et al.'s threshold on the score, or exact MEU for F
DECODERS = ("threshold", "meu")

_FLAGS = tuple(r.replace("-", "_") for r in RESTRICTIONS)


def _int(value: Any, name: str, low: int, none: bool = False) -> int | None:
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise InputError(f"{name} must be {'None or ' if none else ''}an integer >= {low}, "
                         f"got {value!r}")
    return int(value)


def restriction_flags(restrictions: str | dict | None) -> dict[str, bool]:
    """The restriction keywords of :func:`.space.restrict` from a text
    (``"no-overlap,no-embedding"``), a dict of flags, or None (none)."""
    if restrictions is None or isinstance(restrictions, str):
        return parse_restrictions(restrictions)
    if isinstance(restrictions, dict):
        bad = [k for k, v in restrictions.items() if k not in _FLAGS or not isinstance(v, bool)]
        if bad:
            raise InputError(f"restriction {bad[0]!r}: expected flags among {', '.join(_FLAGS)} "
                             f"with true/false values")
        return {f: bool(restrictions.get(f, False)) for f in _FLAGS}
    raise InputError(f"restrictions must be a text, a dict of flags or None, got "
                     f"{restrictions!r}")


class SegmentModel:
    """Weights W (D × T) over hashed step features conjoined with the segment types."""

    kind: ClassVar[str] = "segment"

    def __init__(self, types: Sequence[str], D: int = 2 ** 20, max_gap: int | None = None,
                 k: int | None = None, restrictions: str | dict | None = None,
                 threshold: float = 0.0, W: np.ndarray | None = None,
                 settings: dict | None = None, pos: bool = False):
        types = list(types)
        if not types or not all(isinstance(t, str) and t for t in types) \
                or len(set(types)) != len(types):
            raise InputError(f"types must be distinct non-empty strings, got {types!r}")
        self.types = types
        self.type_index = {t: i for i, t in enumerate(types)}
        self.other_weights: np.ndarray | None = None     # train(): not saved
        self.D = _int(D, "D", 1)
        self.max_gap = _int(max_gap, "max_gap", 0, none=True)
        self.k = _int(k, "k", 1, none=True)
        self.restrictions = restriction_flags(restrictions)
        if not (isinstance(threshold, numbers.Real) and np.isfinite(threshold)):
            raise InputError(f"threshold must be a finite number, got {threshold!r}")
        self.threshold = float(threshold)
        if W is None:
            W = np.zeros((self.D, len(types)))
        W = np.ascontiguousarray(W, dtype=np.float64)
        if W.shape != (self.D, len(types)):
            raise InputError(f"W must have shape (D, T) = ({self.D}, {len(types)}), "
                             f"got {W.shape}")
        self.W = W
        self.settings: dict = dict(settings or {})
        self.pos = bool(pos)
        #: the training layout (None: not recorded)
        self.layout: Layout | None = None

    @property
    def data_scheme(self) -> str | None:
        """The scheme of a CoNLL training file's tag column (None: JSONL, or unknown)."""
        return self.layout.data_scheme if self.layout is not None else None

    @staticmethod
    def layout_of(sentences: Sequence[SegSentence]) -> Layout:
        """The layout of training ``sentences``: word and POS (where every sentence has
        them) vocabularies; data scheme IOB2 for CoNLL sentences (JSONL ones keep
        their record)."""
        cols = _reading(sentences)
        pos = all(s.pos is not None for s in sentences)
        return Layout.of(cols, Columns(0, 1 if pos else None, None),
                         "IOB2" if sentences and not sentences[0].record else None)

    def layout_mismatch(self, sentences: Sequence[SegSentence]) -> str | None:
        """Why the first ``sentences`` of an input do not look like training's word or
        POS values (:meth:`fstchunk.layout.Layout.mismatch`, naming where they start),
        None if they do or no layout is recorded."""
        if self.layout is None or not sentences:
            return None
        pos = all(s.pos is not None for s in sentences)
        bad = self.layout.mismatch(_reading(sentences), Columns(0, 1 if pos else None, None))
        return None if bad is None else f"{sentences[0].source}: {bad[1]}"

    # ---------------------------------------------------------------- scores
    def features(self, sentence: SegSentence) -> SentenceFeatures:
        """The allowed steps of ``sentence`` and their features (:mod:`.features`); its
        POS tags are read only by a model trained with them (and then required)."""
        if self.pos and sentence.pos is None:
            raise InputError(f"{sentence.source}: the model reads POS tags, the sentence has "
                             f"none")
        return sentence_features(sentence.tokens, sentence.pos if self.pos else None, self.D,
                                 self.max_gap)

    def arc_scores(self, sentence: SegSentence, sf: SentenceFeatures | None = None,
                   W: np.ndarray | None = None) -> np.ndarray:
        """(T, n+2, n+2): ``[t, j, i]`` = W[:, t]·g(j, i) for allowed steps, −inf elsewhere
        (``W``: other weights of the same shape, e.g. the training average)."""
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
        k = self.default_k(len(sentence)) if k is None else _int(k, "k", 1)
        return kbest(self.arc_scores(sentence, sf, W), k, self.max_gap)

    def decode(self, sentences: Sequence[SegSentence], restrictions: str | dict | None = None,
               threshold: float | None = None, W: np.ndarray | None = None,
               decoder: str = "threshold", beta: float = 1.0) -> list[list[Segment]]:
        """Per sentence the predicted segments, filtered by ``restrictions`` (default: the
        model's), best first.  ``decoder="threshold"``: the top k with score >
        ``threshold`` (default: the model's); ``"meu"``: the set of maximal expected
        F_β (standard β) among the top k under the calibrated probabilities (:meth:`calibrate`,
        :func:`.meu.meu_set`), the restrictions then taken best first by probability."""
        if decoder not in DECODERS:
            raise InputError(f"unknown segment decoder {decoder!r}; use one of "
                             f"{', '.join(DECODERS)}")
        flags = self.restrictions if restrictions is None else restriction_flags(restrictions)
        thr = self.threshold if threshold is None else float(threshold)
        if decoder == "meu":
            check_beta(beta)
            a, b = self.platt()
        out = []
        for s in sentences:
            cands = self.candidates(s, W=W)
            if decoder == "meu":
                p = calibrated([c[0] for c in cands], a, b)
                chosen, _ = meu_set(p, beta)
                top = [cands[i] for i in sorted(chosen, key=lambda i: -p[i])]
            else:
                top = [c for c in cands if c[0] > thr]
            if any(flags.values()):
                top = restrict(top, **flags)
            out.append([Segment(self.types[t], pos) for _, t, pos in top])
        return out

    def calibrate(self, sentences: Sequence[SegSentence], source: str | None = None
                  ) -> tuple[float, float]:
        """Fit p(c ∈ gold) = σ(a·s(c) + b) on the top-k candidates of held-out
        sentences with gold segments (:func:`.meu.platt_fit`, maximum likelihood);
        stored in ``settings["platt"]`` for ``decoder="meu"``; returns (a, b)."""
        scores, labels = [], []
        for s in sentences:
            if s.segments is None:
                raise InputError(f"{s.source}: calibration needs gold segments")
            gold = set(s.segments)
            for score, t, pos in self.candidates(s):
                scores.append(score)
                labels.append(Segment(self.types[t], pos) in gold)
        try:
            a, b = platt_fit(scores, labels)
        except InputError as e:
            raise InputError(f"{source}: {e}" if source else str(e)) from None
        self.settings.update(platt=[a, b], calibrated_on={"source": source or "<unnamed>",
                                                          "sentences": len(sentences),
                                                          "candidates": len(scores)})
        return a, b

    def platt(self) -> tuple[float, float]:
        """The calibration (a, b); InputError saying how to get one if there is none."""
        ab = self.settings.get("platt")
        if not (isinstance(ab, list) and len(ab) == 2
                and all(isinstance(x, numbers.Real) and np.isfinite(x) for x in ab)):
            raise InputError("this segment model has no probability calibration: MEU "
                             "decoding needs one (fstchunk segment train --dev FILE fits it "
                             "on the dev sentences)")
        return float(ab[0]), float(ab[1])

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

    # ---------------------------------------------------------------- files
    def save(self, path) -> None:
        """Write the model file (:func:`fstchunk.models.io.save_model`)."""
        save_model(path, self.kind, {"W": self.W}, {
            "types": self.types, "features": FEATURES, "D": self.D, "max_gap": self.max_gap,
            "k": self.k, "restrictions": self.restrictions, "threshold": self.threshold,
            "pos": self.pos, "settings": self.settings}, self.layout)

    @classmethod
    def load(cls, path) -> "SegmentModel":
        """The model saved at ``path``, every field validated (ModelFileError naming the
        file and the field otherwise)."""
        f = Fields(path, *load_model_file(path, cls.kind))
        types = f.get("types", list)
        if not types or not all(isinstance(t, str) and t for t in types) \
                or len(set(types)) != len(types):
            raise f.error("types", "expected a non-empty list of distinct type names")
        feats = f.get("features", str)
        if feats != FEATURES:
            raise f.error("features", f"feature function {feats!r}; this fstchunk computes "
                                      f"{FEATURES!r}")
        D = f.get("D", int)
        if D < 1:
            raise f.error("D", f"expected an integer >= 1, found {D}")
        max_gap = f.get("max_gap", (int, type(None)))
        if max_gap is not None and max_gap < 0:
            raise f.error("max_gap", f"expected none or an integer >= 0, found {max_gap}")
        k = f.get("k", (int, type(None)))
        if k is not None and k < 1:
            raise f.error("k", f"expected none or an integer >= 1, found {k}")
        flags = f.get("restrictions", dict)
        try:
            flags = restriction_flags(flags)
        except InputError as e:
            raise f.error("restrictions", str(e)) from None
        threshold = f.get("threshold", (float, int))
        pos = f.get("pos", bool)
        W = f.array("W", "float", (D, len(types)), finite=True)
        m = cls(types, D, max_gap, k, flags, float(threshold), W, f.settings(), pos)
        m.layout = f.layout()
        return m


def _reading(sentences: Sequence[SegSentence]) -> list[Sentence]:
    """What the segment model reads of each sentence as CoNLL rows: word (and POS)."""
    return [Sentence([[t] if s.pos is None else [t, p]
                      for t, p in zip(s.tokens, s.pos or s.tokens)], list(s.lines), s.source)
            for s in sentences]
