"""The pass-based solvers as :class:`fstchunk.training.Trainer` runs them.

Two CRF objectives are not minimised by L-BFGS but by passes over the sentences, one
sentence at a time: ``max-margin`` (:mod:`fstchunk.models.bcfw`, block-coordinate
Frank–Wolfe on the dual; an iteration is a pass, it stops when the duality gap is
≤ tol) and ``perceptron`` (:mod:`fstchunk.models.perceptron`, the averaged
perceptron; it stops after a pass without a mistake).  :class:`Online` gives the
Trainer one face for both: make the solver (or restore it from the state file next
to the checkpoint), run its passes, save its state, and say what Ctrl-C keeps.

Pitfall: each solver's state file (``CHECKPOINT.dual.npz``,
``CHECKPOINT.perceptron.npz``) must reproduce the checkpoint's θ and iteration count on
resume; otherwise the files are of different runs and ModelFileError says so.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

from .errors import InputError, ModelFileError
from .models import bcfw, maxmargin as mm, perceptron as pc
from .models.base import TrainableModel

#: the objectives run by passes, not by L-BFGS
ONLINE = (mm.MAX_MARGIN, pc.PERCEPTRON)
#: the state file of each, next to the checkpoint
SUFFIXES = {mm.MAX_MARGIN: bcfw.DUAL_SUFFIX, pc.PERCEPTRON: pc.STATE_SUFFIX}


class Online:
    """The solver of ``trainer.objective`` (one of :data:`ONLINE`) on ``data``."""

    def __init__(self, trainer: Any, model: TrainableModel, data: Any, done: int):
        self.t, self.objective = trainer, trainer.objective
        self.suffix = SUFFIXES[self.objective]
        self.solver = self._make(model, data)
        if trainer.resume:
            self._check(model, done)

    def _make(self, model: TrainableModel, data: Any):
        t = self.t
        path = (t.checkpoint or "") + self.suffix
        if t.resume and not os.path.isfile(path):
            what = "max-margin dual state" if self.objective == mm.MAX_MARGIN else \
                "perceptron state"
            raise InputError(f"--resume: no {what} at {path} (it is written next to the "
                             f"checkpoint)")
        if self.objective == pc.PERCEPTRON:
            return pc.AveragedPerceptron(model, data, path if t.resume else None)
        state = (bcfw.load_state(path, [len(g) for g in data.gold.sequences])
                 if t.resume else None)
        return bcfw.BCFW(model, data, t.l2, t.loss, t.beta, state=state)

    def _check(self, model: TrainableModel, done: int) -> None:
        path, theta = self.t.checkpoint + self.suffix, self.solver.theta
        if theta.shape != model.theta.shape or not np.allclose(theta, model.theta,
                                                               rtol=1e-9, atol=1e-12):
            raise ModelFileError(f"{path}: the solver state does not give the checkpoint's θ "
                                 f"(files of different runs?)")
        if self.passes != done:
            raise ModelFileError(f"{path}: the solver state is at pass {self.passes}, the "
                                 f"checkpoint at iteration {done}")

    @property
    def passes(self) -> int:
        """Complete passes made (what a checkpoint counts as iterations)."""
        s = self.solver
        return s.state.passes if isinstance(s, bcfw.BCFW) else s.snapshot[3]

    def save(self, checkpoint: str) -> None:
        """The solver state next to ``checkpoint``."""
        if isinstance(self.solver, bcfw.BCFW):
            bcfw.save_state(checkpoint + self.suffix, self.solver.state)
        else:
            self.solver.save_state(checkpoint + self.suffix)

    def interrupted(self) -> tuple[np.ndarray, int]:
        """(θ, passes) to keep on Ctrl-C: BCFW's w of its active sets (every block step
        is one assignment), the perceptron's average after its last complete pass."""
        if isinstance(self.solver, bcfw.BCFW):
            self.solver.sync()
        return self.solver.theta, self.passes

    def run(self, model: TrainableModel, done: int, state: dict,
            step: Callable[..., None]) -> tuple[int, bool, float]:
        """Passes (``max_iter`` in all) until converged; records the solver's settings.
        Returns (passes of this run, converged, final objective value)."""
        if isinstance(self.solver, bcfw.BCFW):
            return self._bcfw(model, done, state, step)
        t, s = self.t, self.solver
        nit, converged, rate = 0, False, float("nan")
        while not converged and done + nit < t.max_iter:
            report = s.run_pass()
            nit += 1
            converged, rate = report.converged, report.mistakes / report.sentences
            state["value"] = rate
            model.settings.update(mistakes=report.mistakes)
            step(s.theta, mistakes=str(report.mistakes))
        model.theta = s.theta
        model.settings.update(solver="averaged-perceptron", passes=done + nit)
        return nit, converged, rate

    def _bcfw(self, model: TrainableModel, done: int, state: dict,
              step: Callable[..., None]) -> tuple[int, bool, float]:
        """BCFW passes until the duality gap is <= tol; the settings record solver,
        passes, per-pass and final gap, loss, λ and C."""
        t, s = self.t, self.solver
        gaps = list(model.settings.get("duality_gaps", [])) if t.resume else []
        primal, gap = s.certificate()
        nit = 0
        while gap > t.tol and done + nit < t.max_iter:
            estimate = s.run_pass()
            primal, gap = s.certificate()
            gaps.append(gap)
            nit += 1
            state["value"] = primal
            model.settings.update(duality_gaps=gaps, duality_gap=gap, gap_estimate=estimate)
            step(s.theta, gap=f"{gap:.3g}")
        model.theta = s.theta
        model.settings.update(solver="bcfw", steps=s.method, loss=t.loss,
                              C=mm.l2_to_c(t.l2, s.N), passes=done + nit, duality_gap=gap,
                              duality_gaps=gaps, gap_tol=t.tol)
        return nit, gap <= t.tol, primal
