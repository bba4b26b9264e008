"""Stochastic gradient descent on the L2-regularised likelihood: CRFsuite's ``-a l2sgd``
(lib/crf/src/train_l2sgd.c; Shalev-Shwartz et al.'s Pegasos step sizes).

CRFsuite minimises Σ_i ℓ_i(θ) + c2‖θ‖² (ℓ_i = −log p(y_i|x_i)) one sequence at a time,
each step on ℓ_i + (Λ/2)‖θ‖² with Λ = 2·c2/N (fstchunk's λ = c2/N, so Λ = 2λ):

    η_t = 1 / (Λ·(t₀ + t)),    θ ← (1 − η_t·Λ)·θ − η_t·∇ℓ_i(θ),    t₀ = 1/(Λ·η₀)

with the decay kept as one scale factor (θ = d·w), so a step touches only the
sequence's columns.  η₀ is calibrated as CRFsuite does: one pass from θ = 0 over a
sample of ``calibration_samples`` sequences for η = ``calibration_eta`` × rate^k
(k = 0, 1, ... while the loss falls below that of θ = 0, then η/rate, η/rate², ...),
``calibration_candidates`` successes or ``calibration_max_trials`` trials; the η of
the lowest sample loss wins.  An epoch's figure is its summed ℓ_i (at the weights of
each step) + c2‖θ‖²; training stops when it improved by less than ``delta`` (relative)
over ``period`` epochs, or after ``max_iterations`` epochs.

Pitfall: the state (w, d, t, η₀, the figures) sits beside a checkpoint
(:data:`STATE_SUFFIX`); an epoch cut short by Ctrl-C is redone on resume.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.errors import ModelFileError
from ..learn.epochs import EpochSolver
from ..core.outputs import atomic_path
from .blocks import ChainBlocks, ChainModel, Data
from .batching import Gold
from .objectives import Chain, ml_statistics

#: the solver state's file next to a checkpoint
STATE_SUFFIX = ".l2sgd.npz"


class L2SGD(ChainBlocks):
    """The learner of the module doc on one model's training data; ``l2`` is λ."""

    def __init__(self, model: ChainModel, data: Data, l2: float, options: dict):
        super().__init__(model, data)
        self.lam = 2.0 * float(l2)                  # CRFsuite's lambda = 2·c2/N
        self.opts = dict(options)
        self.golds = [Gold([g], self.tags, self.scheme) for g in self.gold.sequences]
        F, L = self.mask.shape
        self.W, self.rest = np.zeros((F, L)), np.zeros(L * L + 2 * L)
        self.decay, self.t, self.epochs, self.eta0 = 1.0, 0, 0, 0.0
        self.figures: list[float] = []
        self._snap()

    # ------------------------------------------------------------------ one sequence
    def _step(self, k: int, eta: float | None) -> float:
        """ℓ_k at the current weights; with ``eta``, one step of the module doc."""
        L, d = self.L, self.decay
        rest = d * self.rest
        chain = Chain(self.tags, self.scheme, d * self.emissions(k, self.W),
                      rest[:L * L].reshape(L, L), rest[L * L:L * L + L], rest[L * L + L:])
        st = ml_statistics(chain, self.golds[k])
        if eta is not None:
            self.decay = d = d * (1.0 - eta * self.lam)
            gain = eta / d
            g = st.grads[0]
            cols = self.local[k][0]
            self.W[cols] -= gain * self.image(k, g.emissions)
            self.rest -= gain * np.concatenate([g.trans.ravel(), g.start, g.end]) * self.rest_mask
            if d < 1e-9:                              # fold the scale in before it underflows
                self.W *= d
                self.rest *= d
                self.decay = 1.0
        return float(st.values[0])

    def epoch(self, order: np.ndarray, t0: float) -> float:
        """One pass over ``order``; Σ ℓ_i (each before its step) + (Λ/2)·N·‖θ‖²."""
        total = 0.0
        for k in order:
            eta = 1.0 / (self.lam * (t0 + self.t)) if self.lam > 0 else 1.0 / (t0 + self.t)
            total += self._step(int(k), eta)
            self.t += 1
        norm2 = self.decay ** 2 * float((self.W * self.W).sum() + self.rest @ self.rest)
        return total + 0.5 * self.lam * norm2 * len(order)

    def calibrate(self) -> float:
        """η₀ by CRFsuite's search on a sample (module doc)."""
        o = self.opts
        eta0, rate = float(o.get("calibration_eta", 0.1)), float(o.get("calibration_rate", 2.0))
        candidates = int(o.get("calibration_candidates", 10))
        max_trials = int(o.get("calibration_max_trials", 20))
        order = np.random.default_rng(0).permutation(self.N)
        sample = order[:min(self.N, int(o.get("calibration_samples", 1000)))]
        self._reset()
        base = sum(self._step(int(k), None) for k in sample)
        best, best_eta, eta, decreasing, left, trials = math.inf, eta0, eta0, False, candidates, 1
        while left > 0 or not decreasing:
            self._reset()
            loss = self.epoch(sample, 1.0 / (self.lam * eta) if self.lam > 0 else 1.0 / eta)
            ok = math.isfinite(loss) and loss < base
            if ok:
                left -= 1
                if loss < best:
                    best, best_eta = loss, eta
            if not decreasing:
                if ok and left > 0:
                    eta *= rate
                else:
                    decreasing, left, eta = True, candidates, eta0 / rate
            else:
                eta /= rate
            trials += 1
            if trials >= max_trials:
                break
        self._reset()
        return best_eta

    def _reset(self) -> None:
        self.W[:] = 0.0
        self.rest[:] = 0.0
        self.decay, self.t = 1.0, 0

    # ------------------------------------------------------------------ state
    def _theta(self) -> np.ndarray:
        L, rest = self.L, self.decay * self.rest
        return self.theta_of(self.decay * self.W, rest[:L * L].reshape(L, L),
                             rest[L * L:L * L + L], rest[L * L + L:])

    def _snap(self) -> None:
        self.snapshot = (self._theta(), self.t, self.epochs, self.eta0, list(self.figures))

    def save_state(self, path: str) -> None:
        theta, t, epochs, eta0, figures = self.snapshot
        with atomic_path(path, "checkpoint") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, theta=theta, t=np.array(t), epochs=np.array(epochs),
                     eta0=np.array(eta0), figures=np.array(figures, dtype=float),
                     pairs=np.asarray(self.pairs, np.int64))

    def load_state(self, path: str) -> None:
        try:
            with np.load(path, allow_pickle=False) as f:
                theta, t, epochs = f["theta"].astype(float), int(f["t"]), int(f["epochs"])
                eta0, figures, pairs = float(f["eta0"]), f["figures"].tolist(), f["pairs"]
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise ModelFileError(f"{path}: not an l2sgd state ({e})") from None
        P, L = len(self.pairs), self.L
        if theta.shape != (P + L * L + 2 * L,) or not np.array_equal(pairs, self.pairs) \
                or t < 0 or epochs < 0 or not eta0 > 0:
            raise ModelFileError(f"{path}: the l2sgd state does not fit this training set")
        self._reset()
        self.W[self.pairs[:, 0], self.pairs[:, 1]] = theta[:P]
        self.rest = theta[P:].copy()
        self.t, self.epochs, self.eta0, self.figures = t, epochs, eta0, figures
        self._snap()


class L2SGDSolver(EpochSolver):
    """:class:`L2SGD` as an :class:`~fstchunk.learn.epochs.EpochSolver` (a step is an
    epoch; it stops when the figure improved by less than ``delta`` over ``period``)."""

    suffix, state_name = STATE_SUFFIX, "l2sgd state"

    def __init__(self, model: ChainModel, data: Data, l2: float, options: dict):
        super().__init__(model, data)
        self.l2, self.options = l2, dict(options)
        self.period = int(options.get("period", 10))
        self.delta = float(options.get("delta", 1e-6))
        self.why = "max_iterations"

    def start(self, theta: np.ndarray) -> None:
        self.learner = s = L2SGD(self.model, self.data, self.l2, self.options)
        s.eta0 = s.calibrate()
        if np.any(theta != 0):                    # --init: start from the given θ
            P = len(s.pairs)
            s.W[s.pairs[:, 0], s.pairs[:, 1]] = theta[:P]
            s.rest = theta[P:].copy()

    def load(self, path: str) -> None:
        self.learner = L2SGD(self.model, self.data, self.l2, self.options)
        self.learner.load_state(path)

    def epoch(self) -> tuple[float, bool, dict]:
        s = self.learner
        t0 = 1.0 / (s.lam * s.eta0) if s.lam > 0 else 1.0 / s.eta0
        figure = s.epoch(np.random.default_rng(s.epochs + 1).permutation(s.N), t0)
        s.epochs += 1
        s.figures.append(figure)
        s._snap()
        converged = False
        if len(s.figures) > self.period:
            before = s.figures[-1 - self.period]
            improvement = (before - figure) / figure if figure else 0.0
            if improvement < self.delta:
                converged = True
                self.why = (f"improvement {improvement:.3g} over {self.period} epochs < "
                            f"delta {self.delta:g}")
        return figure / max(s.N, 1), converged, {}

    def current(self) -> tuple[np.ndarray, int]:
        return self.learner.snapshot[0], self.learner.snapshot[2]

    def write(self, path: str) -> None:
        self.learner.save_state(path)

    def settings(self, epochs: int, value: float) -> dict:
        return {"solver": "l2sgd", "eta0": self.learner.eta0, "stopped_by": self.why}
