"""The shell of the solvers that run in epochs, and Collins' averaging, written once.

An :class:`EpochSolver` is a :class:`~fstchunk.learn.solvers.Solver` whose step is one
pass (epoch) over the training set: the averaged perceptron (chain and joint, MMVP),
PA and AROW, l2sgd, BCFW and the segment model's Hildreth learner.  The shell holds
what they share: the run loop (an epoch, then ``on_step`` with θ after it, until the
solver's criterion or ``max_steps``), the state file beside the checkpoint
(``restore`` checks that it gives the checkpoint's θ after as many epochs), and what
Ctrl-C keeps (θ after the last complete epoch; the start θ before the first).  A
subclass writes its learner's start, one epoch, θ and its state file.

:class:`Average` is the averaged perceptron's bookkeeping (Collins 2002), used by
every averaging solver: weights w, an accumulator u and the visit count c; an update
at count c adds step·Δ to w and step·c·Δ to u, and the average is w − u/c.  Started
at c = 0 (a visit counted after its update) it is the mean of w after each visit
(the chain perceptron, Hildreth); started at c = 1 it is the mean over the start
weights too (CRFsuite's PA, Shimizu & Haas' perceptron and MMVP).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .solvers import OnStep, Outcome, check_resumed


class Average:
    """Weight arrays ``w`` (updated in place), their accumulators ``u`` and the visit
    count ``count`` of the averaging trick (module doc)."""

    def __init__(self, arrays: Sequence[np.ndarray], count: int = 0):
        self.w = list(arrays)
        self.u = [np.zeros_like(a) for a in self.w]
        self.count = count

    def add(self, k: int, idx: Any, delta: np.ndarray, step: float = 1.0) -> None:
        """w_k[idx] += step·Δ and u_k[idx] += step·c·Δ (c: the present count)."""
        self.w[k][idx] += step * delta
        self.u[k][idx] += step * self.count * delta

    def visit(self) -> None:
        """Count one visit (after its update, if any)."""
        self.count += 1

    @staticmethod
    def mean(w: np.ndarray, u: np.ndarray, count: int) -> np.ndarray:
        """The average of weights ``w`` with accumulator ``u`` after ``count``: w − u/c
        (a copy of w at count 0)."""
        return w - u / count if count else w.copy()


class EpochSolver:
    """A solver whose step is an epoch (module doc).  Subclasses set ``suffix`` and
    ``state_name``, and write :meth:`start`, :meth:`epoch`, :meth:`current`,
    :meth:`load`, :meth:`write` and :meth:`settings` (and :meth:`begin` where needed); ``learner`` is None until the
    first epoch or a restore."""

    unit, suffix, state_name = "pass", "", "solver state"

    def __init__(self, model: Any, data: Any):
        self.model, self.data = model, data
        self.learner: Any = None

    # ------------------------------------------------------------------ to write
    def start(self, theta: np.ndarray) -> None:
        """Set :attr:`learner` afresh from θ (InputError where it cannot start there)."""
        raise NotImplementedError

    def epoch(self) -> tuple[float, bool, dict]:
        """One epoch: (its figure, whether the solver's criterion is met, figures to show)."""
        raise NotImplementedError

    def current(self) -> tuple[np.ndarray, int]:
        """(θ, epochs done in all) after the last complete epoch."""
        raise NotImplementedError

    def load(self, path: str) -> None:
        """Set :attr:`learner` from the state file at ``path`` (ModelFileError naming it)."""
        raise NotImplementedError

    def write(self, path: str) -> None:
        """The state after the last complete epoch to ``path``, atomically."""
        raise NotImplementedError

    def settings(self, epochs: int, value: float) -> dict:
        """What the model's settings record of a run that ends after ``epochs`` in all."""
        raise NotImplementedError

    def begin(self) -> tuple[bool, float]:
        """Before the first epoch of a run: whether the criterion is met already, and
        the figure there (BCFW's certificate); (False, nan) by default."""
        return False, math.nan

    # ------------------------------------------------------------------ the Solver
    def run(self, theta: np.ndarray, done: int, max_steps: int, on_step: OnStep) -> Outcome:
        """Epochs from θ (``done`` before, in a resumed run) until the criterion is met
        or ``max_steps`` in all; ``on_step`` after each with θ after it."""
        if self.learner is None:
            self.start(theta)
        nit = 0
        converged, value = self.begin()
        while not converged and done + nit < max_steps:
            value, converged, shown = self.epoch()
            nit += 1
            on_step(self.current()[0], value, shown)
        return Outcome(nit, converged, value, self.settings(done + nit, value))

    def restore(self, path: str, theta: np.ndarray, done: int) -> None:
        """The state saved at ``path``; ModelFileError unless it gives the checkpoint's
        θ after ``done`` epochs."""
        self.load(path)
        restored, steps = self.current()
        check_resumed(path, restored, theta, steps, done)

    def save_state(self, path: str) -> None:
        self.write(path)

    def interrupted(self) -> tuple[np.ndarray, int]:
        """θ after the last complete epoch (an epoch cut short is redone on resume);
        stopped before the learner was made, it is made from the model's θ, so that
        its state can be saved beside the checkpoint."""
        if self.learner is None:
            self.start(np.array(self.model.theta_, dtype=float))
        return self.current()
