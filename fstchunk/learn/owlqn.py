"""L1-regularised training: OWL-QN (Andrew & Gao 2007), and CRFsuite's stopping tests.

:class:`OWLQN` minimises F(θ) = f(θ) + μ‖θ‖₁ over the free entries of θ (the others
stay 0), for a smooth f given as θ -> (value, gradient):

* the pseudo-gradient ◇F: ∂f_i + μ·sign(θ_i) where θ_i ≠ 0; at θ_i = 0 the one-sided
  derivative that descends (∂f_i + μ if < 0, ∂f_i − μ if > 0), else 0;
* the direction d = −H·◇F by L-BFGS's two-loop recursion over the last ``memory``
  pairs (s, y) of steps and *smooth* gradient differences, with every d_i whose sign
  is not that of −◇F_i set to 0;
* the orthant ξ_i = sign(θ_i), or sign(−◇F_i) where θ_i = 0; the line search backtracks
  (α halved) over θ(α) = π(θ + α·d; ξ), π zeroing every entry that leaves its orthant,
  until F(θ(α)) ≤ F(θ) + γ·◇F·(θ(α) − θ), γ = 1e-4 (the constrained Armijo rule of
  the paper's §3.2; CRFsuite switches to backtracking for OWL-QN likewise).

:class:`Stopping` is liblbfgs's tests as CRFsuite sets them (lib/crf/src/train_lbfgs.c:
``epsilon``, ``period`` = ``past``, ``delta``) on fstchunk's per-sentence scale: CRFsuite's
objective is N times ours, so its ‖g‖/max(1, ‖θ‖) ≤ ε is N·‖g‖/max(1, ‖θ‖) ≤ ε here, and
the relative decrease over ``period`` iterations, (F_{k−period} − F_k)/F_k < δ, is the
same on both scales.

Pitfalls: a step that gives s·y ≤ 0 (possible at orthant changes) is not stored; the
curvature memory lives within one run (a resumed run starts it afresh); entries that
are not free never move, whatever their gradient.
"""

from __future__ import annotations

from collections import deque
from typing import Callable

import numpy as np

from .solvers import OnStep, Outcome, ThetaOnly

#: Armijo's constant of the backtracking line search
GAMMA = 1e-4
#: the most halvings of one line search
MAX_BACKTRACK = 40


class Stopping:
    """CRFsuite's convergence tests (module doc) over N training sequences; a test whose
    parameter is None is off."""

    def __init__(self, sentences: int, epsilon: float | None = None,
                 period: int | None = None, delta: float | None = None):
        self.N, self.epsilon = max(int(sentences), 1), epsilon
        self.period, self.delta = period, delta
        self.values: list[float] = []
        self.reason = ""

    def __call__(self, theta: np.ndarray, value: float, grad: np.ndarray | None) -> bool:
        """Whether to stop after an iteration at θ with objective ``value`` and
        (pseudo-)gradient ``grad`` (None: not known; that test is skipped)."""
        self.values.append(value)
        if self.epsilon is not None and grad is not None:
            ratio = self.N * float(np.linalg.norm(grad)) / max(1.0, float(np.linalg.norm(theta)))
            if ratio <= self.epsilon:
                self.reason = f"N·|g|/max(1, |θ|) = {ratio:.3g} <= epsilon {self.epsilon:g}"
                return True
        if self.period and self.delta is not None and len(self.values) > self.period:
            before = self.values[-1 - self.period]
            rate = (before - value) / abs(value) if value != 0 else 0.0
            if rate < self.delta:
                self.reason = (f"relative decrease {rate:.3g} over {self.period} iterations "
                               f"< delta {self.delta:g}")
                return True
        return False


def pseudo_gradient(theta: np.ndarray, grad: np.ndarray, mu: float,
                    free: np.ndarray) -> np.ndarray:
    """◇F of f + μ‖θ‖₁ at θ (module doc), 0 outside ``free``."""
    pg = np.where(theta > 0, grad + mu, np.where(theta < 0, grad - mu, 0.0))
    zero = theta == 0
    pg = np.where(zero & (grad + mu < 0), grad + mu, pg)
    pg = np.where(zero & (grad - mu > 0), grad - mu, pg)
    return np.where(free, pg, 0.0)


def two_loop(v: np.ndarray, pairs: deque) -> np.ndarray:
    """H·v for L-BFGS's inverse Hessian estimate of the (s, y) ``pairs`` (Nocedal 1980)."""
    q = v.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        a = rho * float(s @ q)
        q -= a * y
        alphas.append(a)
    if pairs:
        s, y, _ = pairs[-1]
        q *= float(s @ y) / float(y @ y)
    for (s, y, rho), a in zip(pairs, reversed(alphas)):
        b = rho * float(y @ q)
        q += (a - b) * s
    return q


class OWLQN(ThetaOnly):
    """The :class:`~fstchunk.learn.solvers.Solver` of f + μ‖θ‖₁ (module doc)."""

    unit, suffix, state_name = "it", "", "solver state"

    def __init__(self, fun: Callable[[np.ndarray], tuple[float, np.ndarray]], mu: float,
                 free: np.ndarray | None = None, memory: int = 6,
                 stop: Stopping | None = None, tol: float | None = None):
        self.fun, self.mu, self.free = fun, float(mu), free
        self.memory, self.stop, self.tol = int(memory), stop, tol
        self._last: tuple[np.ndarray, int] | None = None

    def objective(self, theta: np.ndarray) -> tuple[float, float, np.ndarray]:
        """(F(θ), f(θ), ∇f(θ))."""
        f, g = self.fun(theta)
        return f + self.mu * float(np.abs(theta).sum()), f, g

    def run(self, theta: np.ndarray, done: int, max_steps: int, on_step: OnStep) -> Outcome:
        free = np.ones(theta.shape, bool) if self.free is None else self.free
        x = np.where(free, theta, 0.0)
        F, _, g = self.objective(x)
        pairs: deque = deque(maxlen=self.memory)
        k, converged, why = done, False, "max_iterations"
        self._last = (x.copy(), k)
        while k < max_steps:
            pg = pseudo_gradient(x, g, self.mu, free)
            gnorm = float(np.linalg.norm(pg))
            if gnorm == 0.0 or (self.tol is not None and np.abs(pg).max() <= self.tol):
                converged, why = True, "pseudo-gradient 0"
                break
            d = -two_loop(pg, pairs)
            d = np.where(d * pg < 0, d, 0.0)            # the sign of −◇F, entry by entry
            orthant = np.where(x != 0, np.sign(x), np.sign(-pg))
            alpha = 1.0 / gnorm if not pairs else 1.0
            for _ in range(MAX_BACKTRACK):
                xn = x + alpha * d
                xn = np.where(np.sign(xn) == orthant, xn, 0.0)
                Fn, _, gn = self.objective(xn)
                if Fn <= F + GAMMA * float(pg @ (xn - x)):
                    break
                alpha /= 2
            else:
                why = "the line search found no decrease"
                break
            s, y = xn - x, gn - g
            sy = float(s @ y)
            if sy > 1e-12 * float(np.linalg.norm(s)) * float(np.linalg.norm(y)):
                pairs.append((s, y, 1.0 / sy))
            x, F, g = xn, Fn, gn
            k += 1
            self._last = (x.copy(), k)
            nonzero = int(np.count_nonzero(x))
            on_step(x, F, {"nonzero": nonzero})
            if self.stop is not None and self.stop(x, F, pseudo_gradient(x, g, self.mu,
                                                                          free)):
                converged, why = True, self.stop.reason
                break
        return Outcome(k - done, converged, F, {"solver": "owlqn", "l1": self.mu,
                                                "nonzero": int(np.count_nonzero(x)),
                                                "stopped_by": why})
