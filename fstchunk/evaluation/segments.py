"""Scoring segment sets: precision, recall and F_β over exact (type, positions) matches.

A predicted segment is a true positive iff a gold segment of the same sentence has the
same type and the same position set (McDonald et al. 2005, §4: exact match, as
conlleval for contiguous chunks):

    P = tp / |pred|,  R = tp / |gold|,  F_β = (1 + β²)·P·R / (β²·P + R)

(the standard β, as everywhere in fstchunk (:mod:`fstchunk.core.fbeta`); 0/0 := 0 for P and R
of an empty side and for F where β²·P + R = 0, as conlleval reports).
:func:`score_segments` reports it overall, per type, and for the **hard** segments,
which tagging schemes cannot express.  Each row is P, R and F over one population of
(type, positions) segments, to which both the gold and the predicted sets are
restricted, so that P and R count the same true positives: overall every segment, a
type its segments, and the hard row the segments that are hard in the gold or in the
prediction of the sentence — overlapping another segment of their set (sharing a
position, any type) or non-contiguous (:func:`hard_segments`).  A gold hard segment
that a tagger predicts exactly is a correct prediction of that row; one it misses
lowers its recall.

Pitfall: duplicates in a prediction count once (a set); sentences are paired by
order, and a count mismatch is an InputError naming both sides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..core.errors import InputError
from ..core.fbeta import check_beta, f_rates
from ..io.segments import Segment


@dataclass
class Counts:
    """tp: gold segments found (recall's numerator); tp_pred: predicted segments that
    are correct (precision's), the same number in every row (one population each)."""
    tp: int = 0
    pred: int = 0
    gold: int = 0
    tp_pred: int = 0

    def add(self, tp: int, pred: int, gold: int, tp_pred: int | None = None) -> None:
        self.tp += tp
        self.pred += pred
        self.gold += gold
        self.tp_pred += tp if tp_pred is None else tp_pred

    @property
    def precision(self) -> float:
        return 100.0 * self.tp_pred / self.pred if self.pred else 0.0

    @property
    def recall(self) -> float:
        return 100.0 * self.tp / self.gold if self.gold else 0.0

    def f(self, beta: float = 1.0) -> float:
        """F_β = (1+β²)·P·R / (β²·P + R), standard β."""
        return f_rates(self.precision, self.recall, check_beta(beta))

    def to_json(self, beta: float = 1.0) -> dict:
        return {"tp": self.tp, "tp_predicted": self.tp_pred, "predicted": self.pred,
                "gold": self.gold,
                "precision": self.precision, "recall": self.recall, "f": self.f(beta)}


@dataclass
class SegmentReport:
    overall: Counts = field(default_factory=Counts)
    by_type: dict[str, Counts] = field(default_factory=dict)
    hard: Counts = field(default_factory=Counts)
    sentences: int = 0
    beta: float = 1.0

    def to_json(self) -> dict:
        return {"sentences": self.sentences, "beta": self.beta,
                "overall": self.overall.to_json(self.beta),
                "overlapping_or_noncontiguous": self.hard.to_json(self.beta),
                "types": {t: c.to_json(self.beta) for t, c in sorted(self.by_type.items())}}

    def text(self) -> str:
        """One row per population with P, R, F_β and the counts each is made of: P =
        correct / predicted, R = found / gold, both sets restricted to the row's
        segments (module doc; the header says which)."""
        rows = [("overall", self.overall), ("overlapping/non-contiguous", self.hard),
                *sorted(self.by_type.items())]
        width = max(len(name) for name, _ in rows)
        out = [f"{self.sentences} sentences, F_{self.beta:g} over exact (type, positions) "
               f"matches; each row's P = correct/predicted and R = found/gold over its "
               f"segments of both sets: overall all, a type its own, overlapping/"
               f"non-contiguous those overlapping another of their set or non-contiguous, "
               f"in the gold or in the prediction"]
        for name, c in rows:
            out.append(f"{name:<{width}}  P {c.precision:6.2f}  R {c.recall:6.2f}  "
                       f"F {c.f(self.beta):6.2f}  (predicted: {c.tp_pred} of {c.pred} "
                       f"correct; gold: {c.tp} of {c.gold} found)")
        return "\n".join(out)


def hard_segments(segments: Iterable[Segment]) -> set[Segment]:
    """The segments of one set that overlap another of the set or are non-contiguous."""
    segs = list(dict.fromkeys(segments))
    owners: dict[int, int] = {}
    for s in segs:
        for p in s.positions:
            owners[p] = owners.get(p, 0) + 1
    return {s for s in segs if not s.contiguous or any(owners[p] > 1 for p in s.positions)}


def score_segments(gold: Sequence[Iterable[Segment]], pred: Sequence[Iterable[Segment]],
                   beta: float = 1.0) -> SegmentReport:
    """P/R/F_β of ``pred`` against ``gold`` (one set per sentence, paired by order)."""
    if len(gold) != len(pred):
        raise InputError(f"{len(gold)} gold sentences but {len(pred)} predicted ones")
    rep = SegmentReport(sentences=len(gold), beta=check_beta(beta))
    for g, h in zip(gold, pred):
        g, h = set(g), set(h)
        rep.overall.add(len(g & h), len(h), len(g))
        for t in {s.type for s in g | h}:
            gt, ht = {s for s in g if s.type == t}, {s for s in h if s.type == t}
            rep.by_type.setdefault(t, Counts()).add(len(gt & ht), len(ht), len(gt))
        hard = hard_segments(g) | hard_segments(h)      # one population for P and R
        rep.hard.add(len(g & h & hard), len(h & hard), len(g & hard))
    return rep
