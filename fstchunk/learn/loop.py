"""The one training loop of every model family: :class:`Trainer`.

The estimator is apart from the trainer (as sklearn-crfsuite's from CRFsuite): a
model (:class:`Learnable`) offers its training data, its parameters θ, a
:class:`~fstchunk.learn.solvers.Solver` for an objective of
:mod:`fstchunk.learn.objectives`, its dev F, and its files; the trainer owns
everything else:

* the objective and its λ (the registry's default when none is given; one L2
  convention, :mod:`fstchunk.learn.objectives`), ``max_iter`` steps in all (counting
  those before a resume);
* progress: a bar on a terminal, a line each N steps in a log (:mod:`fstchunk.core.progress`);
* the destinations (``output``, ``checkpoint``) checked before any work;
* the dev F every ``dev_every`` steps and at the end (``settings_["dev_f"]``);
  ``select="dev"`` keeps the θ of the best dev F (ties: the earlier;
  ``settings_["selected_iteration"]``), ``"last"`` the last θ;
* checkpoints: the model saved to ``checkpoint`` every ``checkpoint_every`` steps, with
  ``settings_["iteration"]``, ``settings_["train_seconds"]`` and ``settings_["run"]`` —
  what a resume must match (objective, λ, β, the loss, and the caller's ``identity``:
  the CLI passes scheme, features, columns, the training file's :func:`file_digest`),
  the solver's state beside it (``CHECKPOINT`` + its suffix) and, with
  ``select="dev"``, the best θ so far (``CHECKPOINT.best.npz``).  ``resume=True``
  continues from them, refusing a missing checkpoint and one of another run (naming
  each differing field); at or past ``max_iter`` it takes no step and writes the
  checkpoint's θ.  The checkpoint files go once the final model is written.  The
  online solvers (perceptron, PA, AROW, l2sgd, max-margin's BCFW, the joint and
  segment learners) keep their whole state, so a resumed run is the uninterrupted one
  bit for bit (on one machine); L-BFGS (and OWL-QN) restarts its curvature memory
  from θ, so a resumed run takes other steps to the same optimum (to the stopping
  tolerance), not the same iterates;
* Ctrl-C (KeyboardInterrupt; the CLI turns SIGTERM into one) from the first step until
  the final model is written saves what the solver keeps
  (:meth:`~fstchunk.learn.solvers.Solver.interrupted`) to the checkpoint and raises
  :class:`~fstchunk.core.errors.TrainingInterrupted` naming it (the CLI exits 130);
* ``executor`` (:mod:`fstchunk.runtime.scale`): the smooth objectives' statistics summed over
  its partitions of the training set (the model's solver uses it);
* ``callbacks``: called after every step with a :class:`Progress`; one may raise to
  stop (the checkpoint then stays for ``resume``).

    Trainer("ml", dev=dev_sentences).fit(crf, train_sentences)

Pitfall: the ``identity`` fields must be plain JSON values (strings, finite numbers,
bools, None), which a checkpoint gives back unchanged.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ..core.errors import InputError, ModelFileError, TrainingInterrupted
from ..core.fbeta import STANDARD, check_beta
from ..core.outputs import atomic_path, check_output
from ..core.progress import progress
from .objectives import Objective, objective as find_objective, with_loss
from .runs import check_same_run, plain
from .solvers import Solver

#: the file of the best θ so far beside a checkpoint (``select="dev"``)
BEST_SUFFIX = ".best.npz"
#: how the trainer keeps θ: the last one, or the one of the best dev F
SELECT = ("last", "dev")


class Learnable(Protocol):
    """What the trainer needs of a model (:mod:`fstchunk.models.base`)."""

    #: the objectives the model trains
    objectives: tuple[Objective, ...]
    #: the parameter vector: the start, then each iterate
    theta_: np.ndarray
    #: what training records (:mod:`fstchunk.models.estimator`)
    settings_: dict

    def training_data(self, train: Any) -> Any: ...

    def solver(self, objective: Objective, data: Any, *, l2: float, beta: float, loss: str,
               tol: float | None, executor: Any) -> Solver: ...

    def dev_f(self, dev: Sequence[Any]) -> float: ...

    def save(self, path) -> None: ...

    @classmethod
    def load(cls, path) -> "Learnable": ...


@dataclass(frozen=True)
class Progress:
    """What a callback learns after each step."""
    iteration: int          # steps done in all (a resumed run counts on)
    objective: float        # the objective at ``theta`` (a pass's figure for online solvers)
    theta: np.ndarray
    dev_f: float            # the latest dev F (nan before the first, or without dev)
    seconds: float          # training seconds so far
    model: Any


def _count(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class Trainer:
    """The one training loop of every model: it minimises an objective of
    :data:`fstchunk.OBJECTIVES` over the model's θ, with dev evaluation, the choice of
    iterate, checkpoints, resuming and Ctrl-C handled the same way for all (module
    doc).  ``model.fit(...)`` builds one from the model's hyper-parameters; build
    your own to train a fitted model on, with checkpoints or callbacks.

    Args:
        objective: a name of :data:`fstchunk.OBJECTIVES` (``ml``, ``meu``, ...).
        l2: λ, the L2 penalty (``None``: the objective's default).
        beta: β of F_β, for the expected-F objectives.
        max_iter: the most steps in all, counting those before a resume.
        tol: the stopping tolerance (``None``: the solver's default).
        dev: held-out data for the dev F (what the model's ``dev_f`` reads).
        dev_every: the dev F every so many steps (0: at the end only).
        select: the θ kept: ``last``, or ``dev`` (the best dev F).
        checkpoint: a model file written every ``checkpoint_every`` steps.
        checkpoint_every: steps between checkpoints.
        resume: continue from ``checkpoint`` (refused if it is of another run).
        output: the model file written at the end.
        progress: a progress bar on a terminal.
        callbacks: called with a :class:`Progress` after every step.
        log: called with each progress line.
        identity: JSON values a resume must match (the CLI: scheme, features, data).
        loss: the max-margin loss, ``hamming`` or ``f``.
        executor: spreads the statistics over workers (:mod:`fstchunk.runtime.scale`).

    Raises:
        InputError: an unknown objective or loss, an invalid count, ``tol`` or
            ``identity``, ``select="dev"`` without ``dev``, ``resume`` without
            ``checkpoint``, or an ``executor`` for an objective trained by passes.

    Examples:
        >>> import fstchunk
        >>> X = [[{"w": "John"}, {"w": "ran"}], [{"w": "Mary"}, {"w": "sat"}, {"w": "down"}]]
        >>> y = [["B-PER", "O"], ["B-PER", "O", "O"]]
        >>> crf = fstchunk.AttributeCRF(max_iter=3).fit(X, y)
        >>> trainer = fstchunk.Trainer("meu", beta=2.0, max_iter=3, progress=False)
        >>> trainer.fit(crf, (X, y)) is crf, crf.settings_["objective"]
        (True, 'meu')
        >>> fstchunk.Trainer(select="dev")
        Traceback (most recent call last):
        fstchunk.core.errors.InputError: select='dev' needs dev sentences (dev=...)
    """

    def __init__(self, objective: str | Objective = "ml", l2: float | None = None,
                 beta: float = 1.0, max_iter: int = 100, tol: float | None = None,
                 dev: Sequence[Any] | None = None, dev_every: int = 10, select: str = "last",
                 checkpoint: str | None = None, checkpoint_every: int = 10,
                 resume: bool = False, output: str | None = None, progress: bool = True,
                 callbacks: Sequence[Callable[[Progress], Any]] = (),
                 log: Callable[[str], Any] | None = None, identity: dict | None = None,
                 loss: str = "hamming", executor: Any = None):
        self.objective = find_objective(objective)
        self.l2_given = l2
        self.beta = check_beta(beta, positive=True)   # F_0: no chunk at all has 0/0 := 1
        o = self.objective
        if o.uses_loss and loss not in o.losses:
            raise InputError(f"unknown loss {loss!r}; use one of {', '.join(o.losses)}")
        if not o.uses_loss and loss != "hamming":
            raise InputError(f"loss={loss!r} applies to {with_loss(python=True)} only",
                             cli=f"--loss {loss} applies to {with_loss()} only")
        if tol is not None and not (isinstance(tol, (int, float)) and math.isfinite(tol)
                                    and tol >= 0):
            raise InputError(f"tol must be a finite number >= 0, got {tol!r}")
        if not (_count(max_iter) and max_iter >= 1):
            raise InputError(f"max_iter must be an integer >= 1, got {max_iter!r}")
        for name, value in (("dev_every", dev_every), ("checkpoint_every", checkpoint_every)):
            if not (_count(value) and value >= 0):
                raise InputError(f"{name} must be an integer >= 0, got {value!r}")
        if select not in SELECT:
            raise InputError(f"select must be one of {', '.join(SELECT)}, got {select!r}")
        if select == "dev" and not dev:
            raise InputError("select='dev' needs dev sentences (dev=...)",
                             cli="--select dev needs dev sentences (--dev)")
        if resume and not checkpoint:
            raise InputError("resume=True: no checkpoint file given (checkpoint=...)",
                             cli="--resume: no checkpoint file given")
        if identity is not None and not isinstance(identity, dict):
            raise InputError(f"identity must be a dict, got {type(identity).__name__}")
        for key, value in (identity or {}).items():
            if not plain(value):
                raise InputError(f"identity field {key!r}: {value!r} is not a string, "
                                 f"finite number, bool or None (a checkpoint stores it)")
        if executor is not None and not self.objective.spreads:
            why = ("trains by passes in one process; {} to the objectives with a value "
                   "(statistics summed over sentences)")
            raise InputError(f"objective={self.objective.name!r} "
                             + why.format("executor= applies"),
                             cli=f"--objective {self.objective.name} "
                             + why.format("--workers/--scheduler apply"))
        self.l2 = self.objective.l2(l2)
        self.loss, self.tol = loss, tol
        self.max_iter = int(max_iter)
        self.dev, self.dev_every, self.select = list(dev or []), int(dev_every), select
        self.checkpoint, self.checkpoint_every = checkpoint, int(checkpoint_every)
        self.resume, self.output = resume, output
        self.progress = progress
        self.callbacks = list(callbacks)
        self.log = log or (lambda message: None)
        self.identity = dict(identity or {})
        self.executor = executor

    @property
    def run(self) -> dict:
        """What a checkpoint of this run records and a resume must match."""
        o = self.objective
        run = {"objective": o.name, "l2": self.l2, "beta": self.beta, **self.identity}
        if o.uses_loss:
            run["loss"] = self.loss
        if self.select != "last":
            run["select"] = self.select
        return json.loads(json.dumps(run))        # as the model file will give it back

    # ------------------------------------------------------------------ the run
    def fit(self, model: Learnable, train: Any) -> Learnable:
        """Train ``model`` in place on ``train`` (what its ``training_data`` takes, or
        that data itself); returns the model.  OutputError before any work if
        ``output`` or ``checkpoint`` cannot be written; TrainingInterrupted on Ctrl-C."""
        o = find_objective(self.objective, tuple(model.objectives))
        if self.output:
            self.output = check_output(self.output, "model")
        if self.checkpoint:
            self.checkpoint = check_output(self.checkpoint, "checkpoint")
        data = model.training_data(train)
        for key in ("temperature", "calibration_nll", "calibration_nll_t1", "calibrated_on"):
            model.settings_.pop(key, None)        # fitted to the old θ: calibrate again
        solver = model.solver(o, data, l2=self.l2, beta=self.beta, loss=self.loss,
                              tol=self.tol, executor=self.executor)
        done, best = self._restore(model, solver)
        idle = done >= self.max_iter               # a resume with nothing left to do
        model.settings_.update(run=self.run, beta_convention=STANDARD)
        t0 = time.perf_counter() - model.settings_["train_seconds"]
        state: dict[str, Any] = {"value": math.nan, "dev_f": math.nan, "iteration": done,
                                 "best": best}

        def save_checkpoint(k: int) -> None:
            model.settings_.update(iteration=k, train_seconds=time.perf_counter() - t0)
            if solver.suffix:
                solver.save_state(self.checkpoint + solver.suffix)
            if self.select == "dev" and state["best"] is not None:
                f, at, theta = state["best"]
                with atomic_path(self.checkpoint + BEST_SUFFIX, "checkpoint") as tmp, \
                        open(tmp, "wb") as fh:
                    np.savez(fh, theta=theta, dev_f=np.float64(f), iteration=np.int64(at))
            model.save(self.checkpoint)

        def on_step(theta: np.ndarray, value: float, shown: dict) -> None:
            state["iteration"] = k = state["iteration"] + 1
            state["value"] = value
            model.theta_ = theta.copy()
            if self.dev and self.dev_every and k % self.dev_every == 0:
                self._dev(model, state, k)
            dev = {"dev_f": _figure(state["dev_f"])} if self.dev else {}   # no dev: no column
            bar.set_postfix(objective=f"{value:.6g}", **shown, **dev, refresh=False)
            bar.update(1)
            if self.checkpoint and self.checkpoint_every and k % self.checkpoint_every == 0:
                save_checkpoint(k)
            info = Progress(k, value, model.theta_, state["dev_f"],
                            time.perf_counter() - t0, model)
            for callback in self.callbacks:
                callback(info)

        online = not o.smooth
        every = 1 if online else (self.dev_every if self.dev and self.dev_every else
                                  self.checkpoint_every if self.checkpoint and
                                  self.checkpoint_every else 10)
        try:        # Ctrl-C anywhere up to the final model written: keep the latest iterate
            with progress(self.max_iter, f"train {o.name}", solver.unit, initial=done,
                          enabled=self.progress and not idle, every=every) as bar:
                if idle:
                    self.log(f"--max-iter {self.max_iter}: the checkpoint is at iteration "
                             f"{done} already; no step taken, the model is the "
                             f"checkpoint's (checkpoint kept)")
                    out = None
                else:
                    out = solver.run(model.theta_.copy(), done, self.max_iter, on_step)
                    model.theta_ = solver.interrupted()[0].copy()
            nit = 0 if out is None else out.steps
            model.settings_.update(objective=o.name, l2=self.l2, beta=self.beta,
                                  iterations=nit, iteration=done + nit,
                                  converged=bool(out and out.converged),
                                  train_seconds=time.perf_counter() - t0)
            if out is not None:
                model.settings_.update(out.settings, final_objective=out.value)
            state["iteration"] = done + nit
            if self.dev:
                self._dev(model, state, done + nit)
                self._keep(model, state)
                model.settings_["dev_f"] = state["dev_f"]
                self.log(f"dev F = {_figure(state['dev_f'])}")
            if self.output:
                model.save(self.output)
        except KeyboardInterrupt:
            k = state["iteration"]
            if not idle:                    # what the solver can resume from
                theta, k = solver.interrupted()
                model.theta_ = theta.copy()
            if not self.checkpoint:
                raise TrainingInterrupted(f"stopped at iteration {k}; no checkpoint "
                                          f"written (no checkpoint file set)") from None
            save_checkpoint(k)
            raise TrainingInterrupted(f"stopped at iteration {k}; checkpoint "
                                      f"{self.checkpoint} (continue with resume=True)",
                                      checkpoint=self.checkpoint,
                                      cli=f"stopped at iteration {k}; checkpoint "
                                      f"{self.checkpoint} (continue with --resume)") from None
        if self.checkpoint and not idle:
            for path in (self.checkpoint, self.checkpoint + BEST_SUFFIX,
                         *([self.checkpoint + solver.suffix] if solver.suffix else [])):
                if os.path.exists(path):
                    os.remove(path)
        return model

    def _dev(self, model: Learnable, state: dict, k: int) -> None:
        """The dev F of the current θ; the best so far kept for ``select="dev"``."""
        state["dev_f"] = f = float(model.dev_f(self.dev))
        best = state["best"]
        if self.select == "dev" and (best is None or f > best[0]):
            state["best"] = (f, k, model.theta_.copy())

    def _misfit(self, saved: Learnable, model: Learnable) -> ModelFileError:
        return ModelFileError(f"{self.checkpoint}: checkpoint does not fit this run: its "
                              f"{np.size(saved.theta_)} weights, this run's "
                              f"{np.size(model.theta_)} (the training data gives other "
                              f"features)")

    def _keep(self, model: Learnable, state: dict) -> None:
        """``select="dev"``: the θ of the best dev F (the last θ when it is the best)."""
        if self.select != "dev" or state["best"] is None:
            return
        f, at, theta = state["best"]
        model.settings_["selected_iteration"] = at
        if at != state["iteration"]:
            model.theta_ = theta.copy()
            state["dev_f"] = f

    def _restore(self, model: Learnable, solver: Solver) -> tuple[int, tuple | None]:
        """θ, the solver's state and the bookkeeping from the checkpoint when resuming:
        (steps done, the best (dev F, step, θ) so far).  InputError if there is no
        checkpoint or it is of another run."""
        if not self.resume:
            model.settings_["train_seconds"] = 0.0
            return 0, None
        if not os.path.isfile(self.checkpoint):
            raise InputError(f"resume=True: no checkpoint at {self.checkpoint}",
                             cli=f"--resume: no checkpoint at {self.checkpoint}")
        saved = type(model).load(self.checkpoint)
        recorded = saved.settings_.get("run")
        fits = np.shape(saved.theta_) == np.shape(model.theta_)
        if not isinstance(recorded, dict) and not fits:        # no run's checkpoint at all
            raise self._misfit(saved, model)
        # before the sizes: name the setting, not its effect
        check_same_run(self.checkpoint, recorded if isinstance(recorded, dict) else {},
                       self.run)
        if not fits:
            raise self._misfit(saved, model)
        done = int(saved.settings_.get("iteration", 0))
        model.theta_ = saved.theta_.copy()
        model.settings_["train_seconds"] = float(saved.settings_.get("train_seconds", 0.0))
        if not solver.suffix:
            solver.restore("", model.theta_, done)
        elif done < self.max_iter:
            path = self.checkpoint + solver.suffix
            if not os.path.isfile(path):
                what = (f"no {solver.state_name} at {path} (it is written next to the "
                        f"checkpoint)")
                raise InputError(f"resume=True: {what}", cli=f"--resume: {what}")
            solver.restore(path, model.theta_, done)
        best = None
        if self.select == "dev" and os.path.isfile(self.checkpoint + BEST_SUFFIX):
            with np.load(self.checkpoint + BEST_SUFFIX) as z:
                best = (float(z["dev_f"]), int(z["iteration"]), z["theta"].copy())
            if best[2].shape != np.shape(model.theta_):
                raise ModelFileError(f"{self.checkpoint + BEST_SUFFIX}: does not fit this "
                                     f"training set's features")
        self.log(f"resuming from {self.checkpoint} at iteration {done}")
        return done, best


def _figure(f: float) -> str:
    """A dev F as the progress line shows it: two decimals, ``-`` until there is one
    (before the first measurement; a dev set with nothing to measure)."""
    return f"{f:.2f}" if math.isfinite(f) else "-"
