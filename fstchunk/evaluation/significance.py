"""Error bars and significance tests for corpus F: the bootstrap over sentences (or
documents) and the paired tests of two systems on the same gold.

A corpus figure (conlleval's F_β, a SemEval mode's F1) is a function of counts summed
over units (sentences, or documents where ``-DOCSTART-`` lines mark them), so every
resample is a weighted sum of the units' count vectors (:func:`unit_counts`):

* :func:`bootstrap_interval` — the percentile interval of the figure over ``samples``
  resamples of the units with replacement (Efron & Tibshirani 1993, §13.3);
* :func:`paired_bootstrap` — Berg-Kirkpatrick, Burkett & Klein (2012): with the
  observed gain δ = f(A) − f(B), p = share of resamples whose gain exceeds 2δ (the
  resamples' gains are centred on δ, so this asks how often a gain of δ arises by
  chance);
* :func:`randomisation` — approximate randomisation (Noreen 1989; Yeh 2000, who shows
  that tests assuming independent chunks underestimate significance for F): each unit's
  A and B counts swapped with probability ½, p = (1 + #{|gain| ≥ |δ|}) / (1 + trials);
  ``exact=True`` enumerates all 2^U swaps instead (the oracle of the tests; U ≤ 20).

Every p-value comes with its Monte Carlo standard error √(p(1−p)/trials).  Pitfall:
resampling sentences treats them as independent; where documents are marked, resample
documents (``by="document"``), as sentences of one document share topic and names.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..core.errors import InputError
from ..core.fbeta import check_beta, to_beta_sq
from .chunks import read_chunks
from .modes import check_mode, match

#: the most units for which :func:`randomisation` enumerates every swap
EXACT_LIMIT = 20


def check_level(level: float) -> float:
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise InputError(f"the confidence level must be in (0, 1), got {level!r}",
                         cli=f"--ci {level}: the confidence level must be in (0, 1)")
    return float(level)


def check_samples(samples: int) -> int:
    if not (isinstance(samples, int) and not isinstance(samples, bool) and samples >= 10):
        raise InputError(f"samples must be an integer >= 10, got {samples!r}")
    return samples


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval of a corpus figure."""
    value: float
    low: float
    high: float
    level: float
    samples: int
    units: int
    by: str

    def as_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "level": self.level,
                "samples": self.samples, "units": self.units, "by": self.by}


def bootstrap_interval(counts: np.ndarray, figure: Callable[[np.ndarray], np.ndarray],
                       level: float = 0.95, samples: int = 1000, seed: int = 0,
                       by: str = "sentence") -> Interval:
    """The ``level`` percentile interval of ``figure`` (summed counts (S, K) -> (S,)) over
    ``samples`` resamples of the units' ``counts`` (U, K)."""
    level, samples = check_level(level), check_samples(samples)
    counts = np.asarray(counts, dtype=float)
    units = len(counts)
    if units == 0:
        raise InputError("no units to resample")
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(units, np.full(units, 1.0 / units), size=samples)
    values = figure(weights @ counts)
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    value = float(figure(counts.sum(axis=0, keepdims=True))[0])
    return Interval(value, float(low), float(high), level, samples, units, by)


@dataclass(frozen=True)
class Test:
    """A paired test of system A against B: the observed gain f(A) − f(B), the p-value
    and its Monte Carlo standard error (0 when exact)."""
    method: str
    gain: float
    p: float
    p_error: float
    trials: int

    def as_dict(self) -> dict:
        return {"method": self.method, "gain": self.gain, "p": self.p,
                "p_error": self.p_error, "trials": self.trials}


def _gain(a: np.ndarray, b: np.ndarray, figure) -> np.ndarray:
    return figure(a) - figure(b)


def paired_bootstrap(a: np.ndarray, b: np.ndarray, figure, samples: int = 1000,
                     seed: int = 0) -> Test:
    """Berg-Kirkpatrick et al.'s paired bootstrap (module doc); ``a``, ``b``: the units'
    counts (U, K) of the two systems, unit by unit."""
    samples = check_samples(samples)
    a, b = _paired(a, b)
    delta = float(_gain(a.sum(0, keepdims=True), b.sum(0, keepdims=True), figure)[0])
    rng = np.random.default_rng(seed)
    w = rng.multinomial(len(a), np.full(len(a), 1.0 / len(a)), size=samples)
    gains = _gain(w @ a, w @ b, figure)
    p = float(np.mean(gains > 2 * delta)) if delta > 0 else 1.0
    return Test("paired bootstrap", delta, p, math.sqrt(p * (1 - p) / samples), samples)


def randomisation(a: np.ndarray, b: np.ndarray, figure, trials: int = 1000, seed: int = 0,
                  exact: bool = False) -> Test:
    """Approximate (or, ``exact``, complete) randomisation (module doc), two-sided."""
    a, b = _paired(a, b)
    delta = float(_gain(a.sum(0, keepdims=True), b.sum(0, keepdims=True), figure)[0])
    if exact:
        if len(a) > EXACT_LIMIT:
            raise InputError(f"exact randomisation enumerates 2^{len(a)} swaps; at most "
                             f"{EXACT_LIMIT} units")
        swaps = np.array(list(itertools.product((0, 1), repeat=len(a))), dtype=float)
        gains = _gain(_swapped(swaps, a, b), _swapped(swaps, b, a), figure)
        p = float(np.mean(np.abs(gains) >= abs(delta) - 1e-12))
        return Test("exact randomisation", delta, p, 0.0, len(swaps))
    trials = check_samples(trials)
    rng = np.random.default_rng(seed)
    swaps = rng.integers(0, 2, size=(trials, len(a))).astype(float)
    gains = _gain(_swapped(swaps, a, b), _swapped(swaps, b, a), figure)
    hits = int(np.sum(np.abs(gains) >= abs(delta) - 1e-12))
    p = (hits + 1) / (trials + 1)
    return Test("approximate randomisation", delta, p, math.sqrt(p * (1 - p) / trials),
                trials)


def _swapped(swaps: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Summed counts of system ``x`` with the units where swaps = 1 taken from ``y``."""
    return (1 - swaps) @ x + swaps @ y


def _paired(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or len(a) == 0:
        raise InputError(f"the two systems' units differ: {a.shape[0]} vs {b.shape[0]}")
    return a, b


def group(counts: Sequence[Sequence[float]], units: Sequence[int]) -> np.ndarray:
    """Sentence counts summed into their units (documents): ``units[i]`` is sentence i's
    unit index, increasing."""
    counts = np.asarray(counts, dtype=float)
    out = np.zeros((max(units) + 1 if len(units) else 0, counts.shape[1]))
    np.add.at(out, np.asarray(units), counts)
    return out


def unit_counts(sentences: Sequence[tuple[Sequence[str], Sequence[str]]], mode: str,
                scheme: str | None = None, beta: float = 1.0
                ) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """Each sentence's counts (S, K) and the corpus figure of summed counts: for
    ``conlleval`` (correct, found, gold) and F_β in percent, conlleval's (0 when P + R
    = 0); for a SemEval mode (COR, INC, PAR, MIS, SPU) and F1 in percent
    (:mod:`.modes`)."""
    beta_sq = to_beta_sq(check_beta(beta))
    rows = []
    for g, p in sentences:
        gc, pc = read_chunks(g, scheme), read_chunks(p, scheme)
        if mode == "conlleval":
            gs, ps = set(gc), set(pc)
            rows.append((len(gs & ps), len(ps), len(gs)))
        else:
            m = match(gc, pc, mode)
            rows.append((m.correct, m.incorrect, m.partial, m.missed, m.spurious))
    counts = np.array(rows, dtype=float).reshape(len(rows), 3 if mode == "conlleval" else 5)
    if mode == "conlleval":
        def figure(c: np.ndarray) -> np.ndarray:
            den = c[:, 1] + beta_sq * c[:, 2]
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(den > 0, 100 * (1 + beta_sq) * c[:, 0] / den, 0.0)
        return counts, figure
    check_mode(mode)
    half = 0.5 if mode == "partial" else 0.0

    def figure(c: np.ndarray) -> np.ndarray:
        credit = c[:, 0] + half * c[:, 2]
        act = c[:, 0] + c[:, 1] + c[:, 2] + c[:, 4]
        pos = c[:, 0] + c[:, 1] + c[:, 2] + c[:, 3]
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(act > 0, credit / act, 0.0)
            r = np.where(pos > 0, credit / pos, 0.0)
            return np.where(p + r > 0, 100 * 2 * p * r / (p + r), 0.0)
    return counts, figure
