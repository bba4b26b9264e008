"""The solver protocol, and L-BFGS for the smooth objectives.

A :class:`Solver` runs steps (an L-BFGS iteration, a pass of an online learner over
the training set) from θ₀ and reports each through ``on_step``; the training loop
(:class:`fstchunk.learn.loop.Trainer`) owns everything else: the progress line, the
dev F and best-on-dev selection, checkpoints, resume, Ctrl-C.  A solver with state
beyond θ (BCFW's dual, a perceptron's average) saves it beside the checkpoint
(:attr:`Solver.suffix`) and restores it on resume; what Ctrl-C keeps is
:meth:`Solver.interrupted`.

Solvers of this module: :class:`LBFGS` (scipy's L-BFGS-B; Liu & Nocedal 1989) over a
value-and-gradient function.  The solvers that run in passes subclass
:class:`fstchunk.learn.epochs.EpochSolver` beside their models; which solver runs an
objective is the table :data:`fstchunk.models.solvers.SOLVERS`.

Pitfalls: L-BFGS keeps its curvature memory within one run only, so a resumed run
starts it afresh (the same optimum of a convex objective, not the same iterates);
``tol`` is an absolute gradient tolerance on the per-sentence scale (1e-9 by default:
far below scipy's, since the objectives are means, not sums).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np

from ..core.errors import ModelFileError

#: what a solver reports after each step: (θ, the objective's value, figures to show)
OnStep = Callable[[np.ndarray, float, dict], None]


@dataclass
class Outcome:
    """A run's end: steps taken in this run, whether the solver's criterion was met,
    the last value, and what the model's settings should record of the solver."""
    steps: int
    converged: bool
    value: float
    settings: dict = field(default_factory=dict)


class Solver(Protocol):
    """What :class:`~fstchunk.learn.loop.Trainer` runs (module doc)."""

    #: the unit of a step for the progress line: "it" or "pass"
    unit: str
    #: the suffix of its state file beside the checkpoint ("" when θ is all its state)
    suffix: str
    #: what that file holds, for messages
    state_name: str

    def run(self, theta: np.ndarray, done: int, max_steps: int, on_step: OnStep) -> Outcome:
        """Steps from θ (``done`` taken before, in a resumed run) until converged or
        ``max_steps`` in all; ``on_step`` after each."""
        ...

    def save_state(self, path: str) -> None:
        """Its state beside a checkpoint (nothing when :attr:`suffix` is empty)."""
        ...

    def restore(self, path: str, theta: np.ndarray, done: int) -> None:
        """Its state from ``path``, which must give the checkpoint's θ after ``done``
        steps (ModelFileError otherwise)."""
        ...

    def interrupted(self) -> tuple[np.ndarray, int]:
        """(θ, steps done in all) to keep when Ctrl-C stops a run."""
        ...


class ThetaOnly:
    """What a quasi-Newton solver keeps across a checkpoint: θ and the steps done, no
    state file (its curvature pairs start afresh on resume); ``_last`` is set by ``run``
    after every step."""
    _last: tuple[np.ndarray, int] | None = None

    def save_state(self, path: str) -> None:
        return None

    def restore(self, path: str, theta: np.ndarray, done: int) -> None:
        self._last = (theta.copy(), done)

    def interrupted(self) -> tuple[np.ndarray, int]:
        if self._last is None:
            raise RuntimeError("the solver has not run")
        return self._last


class LBFGS(ThetaOnly):
    """L-BFGS-B over ``fun``: θ -> (value, gradient), minimised (module doc)."""

    unit, suffix, state_name = "it", "", "solver state"

    def __init__(self, fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
                 tol: float = 1e-9, memory: int = 10,
                 stop: Callable[[np.ndarray, float, np.ndarray | None], bool] | None = None,
                 max_linesearch: int = 20):
        """``stop(θ, value, gradient)``: a further test after each iteration (CRFsuite's,
        :class:`fstchunk.learn.owlqn.Stopping`); True ends the run as converged.
        ``max_linesearch``: the most function evaluations of one line search.  With a
        ``stop``, scipy's own relative-decrease test (``ftol``) is off: the run ends by
        ``stop``, the gradient tolerance, ``max_steps`` or a failed line search."""
        self.fun, self.tol, self.memory = fun, float(tol), int(memory)
        self.stop, self.max_linesearch = stop, int(max_linesearch)
        self._last: tuple[np.ndarray, int] | None = None

    def run(self, theta: np.ndarray, done: int, max_steps: int, on_step: OnStep) -> Outcome:
        value = [float("nan")]
        k = [done]
        last: list = [None, None]            # the last point evaluated and its gradient
        stopped = [False]
        self._last = (theta.copy(), done)

        def tracked(x: np.ndarray) -> tuple[float, np.ndarray]:
            value[0], grad = self.fun(x)
            last[0], last[1] = x.copy(), grad
            return value[0], grad

        def step(x: np.ndarray) -> None:
            k[0] += 1
            self._last = (x.copy(), k[0])
            on_step(x, value[0], {})
            if self.stop is not None:
                grad = last[1] if last[0] is not None and np.array_equal(last[0], x) else None
                if self.stop(x, value[0], grad):
                    stopped[0] = True
                    raise StopIteration
        import scipy.optimize            # loaded when a model trains, not on import
        res = scipy.optimize.minimize(
            tracked, theta, jac=True, method="L-BFGS-B", callback=step,
            options={"maxiter": max(max_steps - done, 1), "gtol": self.tol,
                     "maxcor": self.memory, "maxls": self.max_linesearch,
                     **({"ftol": 0.0} if self.stop is not None else {})})
        nit = k[0] - done
        self._last = (res.x.copy(), done + nit)
        why = getattr(self.stop, "reason", "") if stopped[0] else str(res.message)
        return Outcome(nit, bool(res.success) or stopped[0], float(res.fun),
                       {"solver": "lbfgs", "stopped_by": why})


def check_resumed(path: str, restored: np.ndarray, theta: np.ndarray, steps: int,
                  done: int) -> None:
    """ModelFileError naming ``path`` unless a solver state restored from it gives the
    checkpoint's θ after its ``done`` steps (files of different runs otherwise)."""
    if np.shape(restored) != np.shape(theta) or not np.allclose(restored, theta, rtol=1e-9,
                                                                atol=1e-12):
        raise ModelFileError(f"{path}: the solver state does not give the checkpoint's θ "
                             f"(files of different runs?)")
    if steps != done:
        raise ModelFileError(f"{path}: the solver state is at pass {steps}, the checkpoint "
                             f"at iteration {done}")
