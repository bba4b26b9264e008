"""CRFsuite's online margin learners on a chain model's features: passive-aggressive
(``-a pa``, Crammer et al. 2006) and AROW (``-a arow``, Crammer, Kulesza & Dredze 2009),
as in lib/crf/src/train_passive_aggressive.c and train_arow.c.

Each pass visits the training sequences in a random order (seeded by the pass
number); for a sequence with gold y whose Viterbi labels ŷ differ from y at d tokens:

    Δ = φ(x, y) − φ(x, ŷ)              (the model's features only: pairs, its transitions)
    PA:   cost = s(ŷ) − s(y) + √d  (``error_sensitive``; else + 1)
          τ = cost/‖Δ‖² (type 0), min(c, cost/‖Δ‖²) (type I), cost/(‖Δ‖² + 1/(2c)) (II)
          w ← w + τ·Δ;   ``averaging``: the model is the mean of w over the visits and
          the start (:class:`fstchunk.learn.epochs.Average` from count 1: w − ws/u with
          ws ← ws + τ·u·Δ and u the visits + 1)
    AROW: cost = s(ŷ) − s(y) + d;  α = cost / (γ + Σ_k Δ_k²·Σ_k)
          μ ← μ + α·Σ∘Δ;   Σ_k ← 1/(1/Σ_k + Δ_k²/γ)     (Σ₀ = ``variance``; the model is μ)

A pass's figure is its summed cost over N; training stops when it is below
``epsilon`` (0 by default: a pass without mistakes) or after ``max_iterations``.
There is no λ (the objectives :data:`fstchunk.learn.objectives.PA`, ``AROW``); the
scores are margins, not log-probabilities (calibrate before MEU or marginals).

Pitfall: the state (w, ws, u or μ, Σ, and the passes) sits beside a checkpoint
(:data:`STATE_SUFFIX`); a pass cut short by Ctrl-C is redone on resume.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.errors import InputError, ModelFileError
from ..core.outputs import atomic_path
from ..learn.epochs import Average, EpochSolver
from .blocks import ChainBlocks, ChainModel, Data
from .maxmargin import sequence_score

#: the solver state's file next to a checkpoint
STATE_SUFFIX = ".online.npz"


class MarginLearner(ChainBlocks):
    """PA or AROW (``rule``) on one model's training data (module doc).  The weights
    live as the dense W (attributes x labels, zero off the pairs) and ``rest``
    (transitions, start, end), so a visit touches only its sequence's columns; PA
    averages them (:class:`~fstchunk.learn.epochs.Average`), AROW keeps their
    variances Σ (``var``, the same layout)."""

    def __init__(self, model: ChainModel, data: Data, rule: str, options: dict):
        super().__init__(model, data)
        self.rule = rule
        self.pa_type = int(options.get("pa_type", 1))
        self.c = float(options.get("c", 1.0))
        self.error_sensitive = bool(options.get("error_sensitive", True))
        self.averaging = bool(options.get("averaging", True))
        self.variance = float(options.get("variance", 1.0))
        self.gamma = float(options.get("gamma", 1.0))
        F, L = self.mask.shape
        self.avg = Average([np.zeros((F, L)), np.zeros(L * L + 2 * L)], count=1)
        self.var = [np.full((F, L), self.variance), np.full(L * L + 2 * L, self.variance)]
        self.passes = 0
        self._snap()

    @property
    def aux(self) -> list[np.ndarray]:
        """PA's accumulators, AROW's variances: the state beside w."""
        return self.avg.u if self.rule == "pa" else self.var

    def _snap(self) -> None:
        """(w, aux, u, passes) in θ layout after the last complete pass: what
        checkpoints and Ctrl-C keep."""
        self.snapshot = (self.theta_flat(*self.avg.w), self.theta_flat(*self.aux),
                         self.avg.count, self.passes)

    @property
    def theta(self) -> np.ndarray:
        """The model after the last complete pass: PA's average (or its w), AROW's mean."""
        w, aux, u, _ = self.snapshot
        return Average.mean(w, aux, u) if self.rule == "pa" and self.averaging else w

    def run_pass(self) -> float:
        """One pass; its summed cost over N."""
        order = np.random.default_rng(self.passes).permutation(self.N)
        total = 0.0
        (W, rest), (AW, arest) = self.avg.w, self.var
        for k in order:
            k = int(k)
            trans, start, end = self.rest_parts(rest)
            (y, d), = self.oracles([k], W, trans, start, end, cost=0.0)
            if d > 0:
                g = self.gold.sequences[k]
                em = self.emissions(k, W)
                err = (sequence_score(em, trans, start, end, y)
                       - sequence_score(em, trans, start, end, g))
                E, T, S, En = self.onehots(k, [g, y], [1.0, -1.0])
                cols = self.local[k][0]
                dW = self.image(k, E)                       # masked to the pairs
                drest = np.concatenate([T.ravel(), S, En])         # masked by onehots
                if self.rule == "pa":
                    cost = err + (math.sqrt(d) if self.error_sensitive else 1.0)
                    norm2 = float((dW * dW).sum() + drest @ drest)
                    tau = (cost / norm2 if self.pa_type == 0 else
                           min(self.c, cost / norm2) if self.pa_type == 1 else
                           cost / (norm2 + 0.5 / self.c)) if norm2 > 0 else 0.0
                    self.avg.add(0, cols, dW, tau)
                    self.avg.add(1, slice(None), drest, tau)
                else:
                    cost = err + d
                    pW, prest = dW * dW, drest * drest
                    cW = AW[cols]
                    alpha = cost / (self.gamma + float((pW * cW).sum() + prest @ arest))
                    W[cols] += alpha * cW * dW
                    rest += alpha * arest * drest
                    AW[cols] = 1.0 / (1.0 / cW + pW / self.gamma)
                    arest[:] = 1.0 / (1.0 / arest + prest / self.gamma)
                total += cost
            self.avg.visit()
        self.passes += 1
        self._snap()
        return total / max(self.N, 1)

    def save_state(self, path: str) -> None:
        w, aux, u, passes = self.snapshot
        with atomic_path(path, "checkpoint") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, w=w, aux=aux, u=np.array(u), passes=np.array(passes),
                     pairs=np.asarray(self.pairs, np.int64))

    def load_state(self, path: str) -> None:
        try:
            with np.load(path, allow_pickle=False) as f:
                w, aux, u = f["w"].astype(float), f["aux"].astype(float), int(f["u"])
                passes, pairs = int(f["passes"]), f["pairs"]
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise ModelFileError(f"{path}: not a {self.rule} state ({e})") from None
        P, L = len(self.pairs), self.L
        if w.shape != (P + L * L + 2 * L,) or aux.shape != w.shape or \
                not np.array_equal(pairs, self.pairs) or u < 1 or passes < 0:
            raise ModelFileError(f"{path}: the {self.rule} state does not fit this training "
                                 f"set's features")
        self.avg.w = self.blocks_of(w)
        if self.rule == "pa":
            self.avg.u = self.blocks_of(aux)
        else:
            self.var = self.blocks_of(aux, self.variance)
        self.avg.count, self.passes = u, passes
        self._snap()


class MarginSolver(EpochSolver):
    """PA or AROW as an :class:`~fstchunk.learn.epochs.EpochSolver` (a step is a pass;
    it stops when a pass's cost over N is below ``epsilon`` (pa) or at most it (arow),
    as CRFsuite)."""

    suffix, state_name = STATE_SUFFIX, "online learner state"

    def __init__(self, model: ChainModel, data: Data, rule: str, options: dict):
        if rule not in ("pa", "arow"):
            raise InputError(f"unknown online rule {rule!r}; use pa or arow")
        super().__init__(model, data)
        self.rule, self.options = rule, dict(options)
        self.epsilon = float(options.get("epsilon", 0.0))

    def start(self, theta: np.ndarray) -> None:
        if np.any(theta != 0):
            raise InputError(f"{self.rule} training starts from θ = 0, not from a "
                             f"trained model; resume from its checkpoint instead")
        self.learner = MarginLearner(self.model, self.data, self.rule, self.options)

    def load(self, path: str) -> None:
        self.learner = MarginLearner(self.model, self.data, self.rule, self.options)
        self.learner.load_state(path)

    def epoch(self) -> tuple[float, bool, dict]:
        loss = self.learner.run_pass()
        # CRFsuite's tests: sum_loss / N < ε (train_passive_aggressive.c), <= ε (train_arow.c)
        return loss, loss <= self.epsilon if self.rule == "arow" else loss < self.epsilon, {}

    def current(self) -> tuple[np.ndarray, int]:
        return self.learner.theta, self.learner.passes

    def write(self, path: str) -> None:
        self.learner.save_state(path)

    def settings(self, epochs: int, value: float) -> dict:
        return {"solver": self.rule, "passes": epochs}
