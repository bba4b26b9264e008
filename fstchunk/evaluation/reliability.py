"""How well confidences are calibrated: reliability tables and the calibration errors.

Predictions with a confidence p_i ∈ [0, 1] (e.g. the chunk marginal of each predicted
chunk, :mod:`fstchunk.decoding.confidence`) and an outcome c_i ∈ {0, 1} (the chunk is in the gold)
are binned by confidence into B equal bins [b/B, (b+1)/B) (the last one closed); per bin
the count n_b, the mean confidence conf_b and the accuracy acc_b (the mean outcome)
(Naeini et al. 2015; Guo et al. 2017):

    ECE = Σ_b (n_b / N) · |acc_b − conf_b|,     MCE = max_{b: n_b > 0} |acc_b − conf_b|.

A perfectly calibrated source (Pr(c = 1 | p) = p) has ECE → 0 as N grows; an
over-confident one has conf_b > acc_b.  :func:`bootstrap` gives their standard errors by
resampling groups (sentences) with replacement, since the chunks of one sentence are not
independent.

Pitfall: ECE depends on the binning and is biased upwards on small samples (each bin's
|acc − conf| is at least its sampling noise); compare ECEs only at the same B and similar N.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ..core.errors import InputError

#: confidences this far outside [0, 1] are rounding (clipped); further is an error
TOLERANCE = 1e-9


class Reliability(NamedTuple):
    """A reliability table (bins of equal width over [0, 1]) and its calibration errors;
    ``confidence``/``accuracy`` are NaN in empty bins."""
    edges: np.ndarray
    count: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    ece: float
    mce: float

    @property
    def n(self) -> int:
        return int(self.count.sum())


def _check(confidence, correct, what: str = "") -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(confidence, dtype=float).ravel()
    c = np.asarray(correct, dtype=float).ravel()
    where = f"{what}: " if what else ""
    if p.shape != c.shape:
        raise InputError(f"{where}{p.size} confidences but {c.size} outcomes")
    bad = ~np.isfinite(p) | (p < -TOLERANCE) | (p > 1 + TOLERANCE)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{where}confidence {i} is {float(p[i])!r}, not a probability in [0, 1]")
    if not np.isin(c, (0.0, 1.0)).all():
        i = int(np.flatnonzero(~np.isin(c, (0.0, 1.0)))[0])
        raise InputError(f"{where}outcome {i} is {float(c[i])!r}, not 0/1 (False/True)")
    return np.clip(p, 0.0, 1.0), c


def bin_index(confidence: np.ndarray, bins: int) -> np.ndarray:
    """Bin b of each confidence: ⌊p·B⌋, with p = 1 in the last bin."""
    return np.minimum((np.asarray(confidence) * bins).astype(int), bins - 1)


def _sums(p: np.ndarray, c: np.ndarray, bins: int) -> np.ndarray:
    """Per bin (count, Σ confidence, Σ outcome), shape (bins, 3)."""
    b = bin_index(p, bins)
    return np.stack([np.bincount(b, minlength=bins), np.bincount(b, p, bins),
                     np.bincount(b, c, bins)], axis=1).astype(float)


def _errors(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ECE and MCE of per-bin sums (..., bins, 3), over the leading axes."""
    n = sums[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.abs(sums[..., 2] - sums[..., 1]) / n         # |acc_b − conf_b|
    gap = np.where(n > 0, gap, 0.0)
    total = n.sum(-1)
    return (n * gap).sum(-1) / np.maximum(total, 1), gap.max(-1)


def reliability(confidence: Sequence[float], correct: Sequence[bool],
                bins: int = 10) -> Reliability:
    """The reliability table of ``bins`` equal bins and the ECE/MCE (module doc)."""
    if not isinstance(bins, (int, np.integer)) or bins < 1:
        raise InputError(f"bins must be an integer >= 1, got {bins!r}")
    p, c = _check(confidence, correct)
    if p.size == 0:
        raise InputError("no confidences: the calibration error of nothing is undefined")
    s = _sums(p, c, bins)
    ece, mce = _errors(s)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf, acc = s[:, 1] / s[:, 0], s[:, 2] / s[:, 0]
    return Reliability(np.linspace(0.0, 1.0, bins + 1), s[:, 0].astype(int), conf, acc,
                       float(ece), float(mce))


def bootstrap(groups: Sequence[tuple[Sequence[float], Sequence[bool]]], bins: int = 10,
              resamples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """Standard errors of (ECE, MCE) over ``resamples`` resamples of the groups (each
    group, e.g. a sentence, its confidences and outcomes) with replacement."""
    if resamples < 2:
        raise InputError(f"resamples must be >= 2, got {resamples}")
    if not len(groups):
        raise InputError("no groups to resample")
    per = np.stack([_sums(*_check(p, c, f"group {k}"), bins)
                    for k, (p, c) in enumerate(groups)])           # (G, bins, 3)
    G = len(groups)
    rng = np.random.default_rng(seed)
    weights = np.stack([np.bincount(rng.integers(0, G, G), minlength=G)
                        for _ in range(resamples)]).astype(float)  # (R, G) multiplicities
    sums = (weights @ per.reshape(G, -1)).reshape(resamples, bins, 3)
    ece, mce = _errors(sums)
    return float(ece.std(ddof=1)), float(mce.std(ddof=1))
