"""Temperature scaling: one scalar T that turns a model's scores into probabilities.

Models trained for margins (the averaged perceptron and MMVP of the joint model, the
max-margin CRF) learn scores score(x, y) of arbitrary scale: Viterbi needs only their
order, but exp(score) is not a distribution one can take expectations under.
Temperature scaling (Guo et al. 2017, "On calibration of modern neural networks",
§4.2, there for classifiers; here over structures) reads them as

    p_T(y | x) = exp(score(x, y) / T) / Z_T(x),   Z_T(x) = Σ_y exp(score(x, y) / T),

with the one scalar T > 0 fitted by maximum likelihood of the gold structures y_i of
held-out sentences x_i:

    NLL(T) = Σ_i log Z_T(x_i) − score(x_i, y_i) / T
    dNLL/dT = Σ_i (score(x_i, y_i) − E_T[score(x_i, ·)]) / T².

In τ = 1/T the NLL is convex (d²NLL/dτ² = Σ_i Var_T[score] ≥ 0), so

    h(log T) = Σ_i score(x_i, y_i) − E_T[score(x_i, ·)]   (= T·dNLL/d log T)

increases with T and has at most one root, the maximum-likelihood T: :func:`fit_temperature`
brackets it by steps of ×4 from T = 1 and solves h = 0 by Brent's method on log T.
Each held-out sentence is a chain (:class:`~fstchunk.engine.chain.Layers`) whose
paths are its structures; E_T[score] is Σ over the arcs of Pr_T(arc)·weight, the arc
posteriors from the forward and backward vectors (exact); sentences of one length
run as batches of at most :data:`BATCH_FLOATS` arc weights (:class:`HeldOut`).

Pitfalls:

* MAP decoding does not change with T (Viterbi is invariant to a positive scale).
* If the gold is the model's best structure on every held-out sentence, the
  likelihood grows towards 1 as T → 0: the fit stops at :data:`T_MIN` times the
  scale of the scores, or earlier where p_T(gold) is 1 to rounding (|h| below
  1e-12 of Σ|gold score|), with ``at_bound`` set (a point mass on the MAP
  structure, whose MEU decision is the MAP one).  If the gold scores below the
  average structure (h < 0 for every T up to :data:`T_MAX` times the scale) the
  scores carry no information: :class:`~fstchunk.core.errors.InputError`.
* The layers of all held-out sentences are kept between evaluations only while they
  fit in :data:`CACHE_FLOATS` numbers; beyond that they are rebuilt at each one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from ..core.errors import InputError
from .chain import Layers, backward, forward

#: the fit's range, relative to the scale of the scores (their mean |gold score| per token)
T_MIN, T_MAX = 1e-6, 1e6
#: the most chain-layer numbers kept between evaluations (8 bytes each)
CACHE_FLOATS = 20_000_000
#: the most chain-layer numbers of one batch (sentences of one length run together)
BATCH_FLOATS = 2_000_000
#: the fit's tolerance on log T
LOG_T_TOL = 1e-7


@dataclass(frozen=True)
class TemperatureFit:
    """The fitted T, the mean NLL per sentence at T and at T = 1, and the work done."""
    temperature: float
    nll: float
    nll_untempered: float
    sentences: int
    evaluations: int
    at_bound: bool = False


def stack_layers(group: Sequence[Layers]) -> Layers:
    """Chains of one length and state layout as one batch (leading axis)."""
    n = len(group[0].weights)
    return Layers([np.stack([g.weights[k] for g in group]) for k in range(n)],
                  group[0].labels, np.stack([g.final for g in group]))


def _masked_sum(post: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Σ post·w over the last two axes, arcs with w = −inf (post 0) left out."""
    return np.where(np.isfinite(w), post * w, 0.0).sum(axis=(-2, -1))


def tempered_statistics(batch: Layers, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """log Z_T and E_T[score] of each chain of a batch, τ = 1/T: the forward and
    backward vectors of the chain with weights τ·w, and Σ_arcs Pr_T(arc)·w."""
    scaled = Layers([w * tau for w in batch.weights], batch.labels, batch.final * tau)
    alpha, logz = forward(scaled)
    beta = backward(scaled)
    logz = np.asarray(logz)
    z = logz[:, None, None]
    with np.errstate(invalid="ignore", over="ignore"):
        expect = _masked_sum(np.exp(scaled.weights[0] + beta[0][:, None, :] - z),
                             batch.weights[0])
        for k in range(1, len(batch.weights)):
            post = np.exp(alpha[k - 1][:, :, None] + scaled.weights[k]
                          + beta[k][:, None, :] - z)
            expect += _masked_sum(post, batch.weights[k])
        last = np.exp(alpha[-1] + scaled.final - logz[:, None])
        expect += np.where(np.isfinite(batch.final), last * batch.final, 0.0).sum(axis=-1)
    return logz, expect


#: a batch builder: sentence indices (one length) → their stacked layers, gold scores
Builder = Callable[[list[int]], tuple[Layers, np.ndarray]]


class HeldOut:
    """Held-out sentences as batches of chains (by length) with their gold scores.
    ``build(idx)`` gives the stacked layers and gold scores of sentences ``idx`` (all
    of one length); ``states`` (states per token) sizes the batches and the cache."""

    def __init__(self, build: Builder, lengths: Sequence[int], states: int):
        self.build, self.count = build, len(lengths)
        by_length: dict[int, list[int]] = {}
        for i, n in enumerate(lengths):
            by_length.setdefault(n, []).append(i)
        self.groups: list[list[int]] = []             # batches of one length, bounded size
        for n, idx in by_length.items():
            size = max(1, BATCH_FLOATS // max(1, n * states * states))
            self.groups += [idx[k:k + size] for k in range(0, len(idx), size)]
        self.tokens = int(sum(lengths))
        self._cache: list[tuple[Layers, np.ndarray]] | None = None
        if sum(n * states * states for n in lengths) <= CACHE_FLOATS:
            self._cache = list(self._build())
            gold = [g for _, g in self._cache]
        else:
            gold = [self._checked(idx)[1] for idx in self.groups]
        self.gold_abs = float(sum(np.abs(g).sum() for g in gold))

    def _checked(self, idx: list[int]) -> tuple[Layers, np.ndarray]:
        layers, gold = self.build(idx)
        if not np.all(np.isfinite(gold)):
            bad = idx[int(np.flatnonzero(~np.isfinite(gold))[0])]
            raise InputError(f"held-out sentence {bad + 1}: its gold structure has no "
                             f"finite score under the model")
        return layers, gold

    def _build(self) -> Iterator[tuple[Layers, np.ndarray]]:
        return (self._checked(idx) for idx in self.groups)

    def batches(self) -> Iterator[tuple[Layers, np.ndarray]]:
        return iter(self._cache) if self._cache is not None else self._build()

    def evaluate(self, temperature: float) -> tuple[float, float]:
        """(NLL(T), h = Σ gold score − E_T[score]), NLL summed over the sentences."""
        tau = 1.0 / temperature
        nll = h = 0.0
        for batch, gold in self.batches():
            logz, expect = tempered_statistics(batch, tau)
            nll += float(np.sum(logz - tau * gold))
            h += float(np.sum(gold - expect))
        return nll, h

    def scale(self) -> float:
        """Mean |gold score| per token (1 if all are 0): the scale T's range is relative to."""
        return self.gold_abs / self.tokens if self.gold_abs > 0 else 1.0


def fit_temperature(held: HeldOut) -> TemperatureFit:
    """The maximum-likelihood T of :class:`HeldOut` sentences (see the module doc)."""
    m = held.count
    if m == 0:
        raise InputError("calibration needs at least one held-out sentence with gold tags")
    calls = [0]
    memo: dict[float, tuple[float, float]] = {}

    def at(u: float) -> tuple[float, float]:
        if u not in memo:
            calls[0] += 1
            memo[u] = held.evaluate(math.exp(u))
        return memo[u]

    scale = held.scale()
    tol = 1e-12 * max(held.gold_abs, 1.0)
    lo, hi = math.log(T_MIN * scale), math.log(T_MAX * scale)
    step = math.log(4.0)
    a = b = min(max(0.0, lo), hi)
    bound = False
    if at(a)[1] > tol:                    # NLL still falls towards smaller T
        while at(a)[1] > tol and a > lo:
            b, a = a, max(a - step, lo)
        bound = at(a)[1] >= -tol            # h = 0 to rounding: a point mass on the gold
    else:
        while at(b)[1] < 0 and b < hi:
            a, b = b, min(b + step, hi)
        if at(b)[1] < 0:
            raise InputError(
                f"calibration: on the {m} held-out sentences the gold structures score "
                f"below the model's average structure at every temperature up to "
                f"{math.exp(hi):.3g}: the scores carry no information to calibrate (are "
                f"the held-out sentences tagged like the training data?)")
    if bound:
        u = a
    elif at(a)[1] == 0 or a == b:
        u = a
    elif at(b)[1] == 0:
        u = b
    else:
        import scipy.optimize            # loaded when a model is calibrated, not on import
        u = scipy.optimize.brentq(lambda v: at(v)[1], a, b, xtol=LOG_T_TOL)
    nll = at(u)[0]
    return TemperatureFit(math.exp(u), nll / m, at(0.0)[0] / m, m, calls[0], bound)
