"""Decision rules of the segment model fixed on held-out sentences (McDonald, Crammer &
Pereira 2005, §3.1, §4.3 and Figure 5).

At test time the paper keeps the top-k segments of score > 0.  §4.3 finds that the
learner "tends to favor precision at the expense of recall", that another separation
threshold can do better, and leaves learning it to further work.  Two rules here,
both fixed on sentences with gold segments that training did not see (dev):

* the threshold: :func:`threshold_curve` is Figure 5, the precision, recall and F_β
  (over exact (type, positions) matches, :func:`fstchunk.evaluation.segments.score_segments`)
  of the threshold decoder at each value of a grid, the top k computed once per
  sentence; :func:`best_threshold` is the value of the highest F_β (ties: the value
  nearest 0, then the lower); :meth:`SegmentModel.tune_threshold` makes it the model's;
* calibration: p(c ∈ gold) = σ(a·s(c) + b) fitted on the dev candidates
  (:func:`calibrate`, Platt scaling, :func:`fstchunk.decoding.segments.platt_fit`), which
  MEU decoding reads.

Pitfalls: a threshold chosen on the test set is a wrong figure (choose on dev); the
grid bounds the choice (:data:`THRESHOLDS`, the paper's Figure 5 axis −1 … +1 in
steps of 0.2: scores are in units of the update's margin of 1), and a best value at the
grid's edge is reported as such (``settings["threshold_tuned_on"]["at_edge"]``); the
restrictions of the decoding the threshold is for apply after it, as in decoding — the
model's by default, and for a CoNLL output also no-overlap and contiguous, which
``segment decode`` always adds there (``segment train --threshold dev`` with a CoNLL
dev file tunes with them).
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np

from ...core.errors import InputError
from ...core.fbeta import check_beta
from ...io.segments import SegSentence, Segment
from ...decoding.segments import platt_fit
from ...evaluation.segments import score_segments
from ...structures.segments import restrict
from .files import restriction_flags, restriction_text

#: the thresholds of :func:`threshold_curve` by default: Figure 5's axis, −1.0 … +1.0
THRESHOLDS = tuple(round(x / 5, 1) for x in range(-5, 6))


def _gold(sentences: Sequence[SegSentence], what: str) -> list[list[Segment]]:
    """The gold segments of each sentence; InputError naming the first without any."""
    if not len(sentences):
        raise InputError(f"{what} needs held-out sentences with gold segments, got none")
    for s in sentences:
        if s.segments is None:
            raise InputError(f"{s.source}: {what} needs gold segments")
    return [list(s.segments) for s in sentences]


def check_thresholds(thresholds: Sequence[float]) -> tuple[float, ...]:
    """``thresholds`` as finite floats in increasing order; InputError otherwise."""
    iterable = hasattr(thresholds, "__iter__") and not isinstance(thresholds, (str, bytes))
    values = list(thresholds) if iterable else []
    if not values or any(isinstance(t, bool) or not isinstance(t, numbers.Real)
                         or not np.isfinite(t) for t in values):
        raise InputError(f"thresholds must be a non-empty list of finite numbers, got "
                         f"{thresholds!r}")
    return tuple(sorted({float(t) for t in values}))


def threshold_curve(model: Any, sentences: Sequence[SegSentence],
                    thresholds: Sequence[float] = THRESHOLDS, beta: float = 1.0,
                    restrictions: str | dict | None = None
                    ) -> list[tuple[float, float, float, float]]:
    """Figure 5: ``(threshold, P, R, F_β)`` (percent) of ``model``'s threshold decoder
    (``restrictions``, default the model's, applied after the threshold, as
    :meth:`SegmentModel.decode` applies them) on ``sentences``, one row per threshold
    in increasing order; the top-k candidates are computed once."""
    grid, beta = check_thresholds(thresholds), check_beta(beta)
    gold = _gold(sentences, "a threshold curve")
    flags = (model.restrictions_ if restrictions is None
             else restriction_flags(restrictions))
    cands = [model.candidates(s) for s in sentences]
    rows = []
    for t in grid:
        pred = []
        for c in cands:
            top = [x for x in c if x[0] > t]
            if any(flags.values()):
                top = restrict(top, **flags)
            pred.append([Segment(model.types_[ti], pos) for _, ti, pos in top])
        o = score_segments(gold, pred, beta).overall
        rows.append((t, o.precision, o.recall, o.f(beta)))
    return rows


def best_threshold(curve: Sequence[tuple[float, float, float, float]]
                   ) -> tuple[float, float, float, float]:
    """The row of the highest F (to 1e-9); ties: the threshold nearest 0, then the lower."""
    if not len(curve):
        raise InputError("an empty threshold curve has no best threshold")
    return max(curve, key=lambda r: (round(r[3], 9), -abs(r[0]), -r[0]))


def tune_threshold(model: Any, sentences: Sequence[SegSentence],
                   thresholds: Sequence[float] = THRESHOLDS, beta: float = 1.0,
                   source: str | None = None, restrictions: str | dict | None = None) -> float:
    """Set ``model.threshold_`` (the threshold decoding uses) to the value of ``thresholds`` of the best F_β of the
    threshold decoder on held-out ``sentences`` (:func:`best_threshold`: ties nearest 0)
    under ``restrictions`` (those the decoding will apply; default the model's);
    recorded in ``settings_["threshold_tuned_on"]`` with the whole curve, the
    restrictions and the threshold before (the hyper-parameter ``threshold``, which
    stays, and from which a new fit starts); the threshold."""
    flags = model.restrictions_ if restrictions is None else restriction_flags(restrictions)
    curve = threshold_curve(model, sentences, thresholds, beta, flags)
    t, p, r, f = best_threshold(curve)
    before = untuned(model.settings_, model.threshold_)
    model.threshold_ = float(t)
    model.settings_["threshold_tuned_on"] = {
        "before": before, "source": source or "<unnamed>", "sentences": len(sentences),
        "beta": beta, "restrictions": restriction_text(flags), "f": f, "precision": p,
        "recall": r, "at_edge": t in (curve[0][0], curve[-1][0]) and len(curve) > 1,
        "curve": [list(row) for row in curve]}
    return model.threshold_


def untuned(settings: dict, threshold: float) -> float:
    """The threshold before :meth:`SegmentModel.tune_threshold` changed it (recorded in
    ``settings["threshold_tuned_on"]["before"]``), else ``threshold``."""
    tuned = settings.get("threshold_tuned_on")
    before = tuned.get("before") if isinstance(tuned, dict) else None
    ok = isinstance(before, numbers.Real) and not isinstance(before, bool) and np.isfinite(before)
    return float(before) if ok else threshold


def calibrate(model: Any, sentences: Sequence[SegSentence], source: str | None = None
              ) -> tuple[float, float]:
    """Platt's (a, b) of p(c ∈ gold) = σ(a·s(c) + b), maximum likelihood over the top-k
    candidates of ``sentences``, stored in ``model.settings_["platt"]``."""
    scores, labels = [], []
    for s, gold in zip(sentences, _gold(sentences, "calibration")):
        gold = set(gold)
        for score, t, pos in model.candidates(s):
            scores.append(score)
            labels.append(Segment(model.types_[t], pos) in gold)
    try:
        a, b = platt_fit(scores, labels)
    except InputError as e:
        raise InputError(f"{source}: {e}" if source else str(e)) from None
    model.settings_.update(platt=[a, b], calibrated_on={"source": source or "<unnamed>",
                                                       "sentences": len(sentences),
                                                       "candidates": len(scores)})
    return a, b


def platt(model: Any) -> tuple[float, float]:
    """The model's calibration (a, b); InputError saying how to get one if it has none."""
    ab = model.settings_.get("platt")
    if not (isinstance(ab, list) and len(ab) == 2
            and all(isinstance(x, numbers.Real) and np.isfinite(x) for x in ab)):
        what = "this segment model has no probability calibration: MEU decoding needs one "
        raise InputError(what + "(model.calibrate(held_out_sentences) fits it on held-out "
                         "sentences with gold segments)",
                         cli=what + "(fstchunk segment train --dev FILE fits it on the dev "
                         "sentences)")
    return float(ab[0]), float(ab[1])
