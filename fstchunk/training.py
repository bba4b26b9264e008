"""The training loop: L-BFGS (or passes for max-margin and the perceptron) over a trainable model's objective,
with the bookkeeping.

:class:`Trainer` is the one loop (``fstchunk train`` and :meth:`CRF.fit
<fstchunk.models.crf.CRF.fit>` both run it).  The estimator stays apart from
it, as in sklearn-crfsuite: the model (a :class:`~fstchunk.models.base.TrainableModel`)
offers ``training_data(train)``, ``objective(name, data, l2, beta)`` (θ ->
value, gradient, minimised) and ``theta``; the trainer owns everything else:

* L-BFGS-B (scipy; Liu & Nocedal 1989) from the model's current θ, at most
  ``max_iter`` iterations in all (counting those before a resume); ``l2=None``
  is the objective's own default λ (:data:`fstchunk.models.objectives.DEFAULT_L2`,
  on the objectives' per-sentence scale);
* progress (iteration, objective value, dev F): a bar on a terminal, else one log line
  per pass (online solvers) or per ``dev_every`` (with dev), else ``checkpoint_every``
  (with a checkpoint), else 10 iterations (:func:`fstchunk.progress.progress`);
* the destinations (``output``, ``checkpoint``) checked before any work
  (:func:`fstchunk.outputs.check_output`);
* the dev F (conlleval F of MAP decoding on ``dev``, IOB2 gold in the model's tag
  column, the last one by default) every ``dev_every`` iterations and at the end
  (``settings["dev_f"]``);
* checkpoints: the model saved to ``checkpoint`` every ``checkpoint_every``
  iterations (atomically, :func:`fstchunk.models.io.save_model`), with
  ``settings["iteration"]``, ``settings["train_seconds"]`` and
  ``settings["run"]``: what must not change across a resume (objective, l2,
  beta and the caller's ``identity``: the CLI passes scheme, template, columns,
  the training file's :func:`file_digest` and the ``--init`` model).
  ``resume=True`` continues from the checkpoint's θ and iteration count; it
  refuses (:class:`~fstchunk.errors.InputError`) a missing checkpoint and a
  checkpoint of another run, naming each differing field.  The checkpoint is
  removed once the run ends (after the final model is written to ``output``).
  A resume with ``max_iter`` at or below the checkpoint's iteration takes no step:
  the model is the checkpoint's θ (bit for bit; no objective evaluated, no solver
  made), written to ``output`` with its dev F, ``iterations`` = 0, and the
  checkpoint kept, so that a larger ``max_iter`` can still continue it;
* Ctrl-C (KeyboardInterrupt) during :meth:`Trainer.fit`, from the first
  iteration until the final model is written (the final dev F included), saves
  the latest iterate to the checkpoint (if one is set) and raises
  :class:`~fstchunk.errors.TrainingInterrupted` naming it; the ``identity``
  fields must be plain JSON values (strings, finite numbers, bools, None), which
  a checkpoint gives back unchanged;
* ``objective="max-margin"`` (:mod:`fstchunk.models.maxmargin`, the CRF only) is not
  run by L-BFGS but by block-coordinate Frank–Wolfe on its dual: an iteration is a
  pass over the training set, ``loss`` (``hamming`` or ``f``: 1 − F_β) its Δ, ``tol``
  the duality gap to reach (absolute; default
  :data:`~fstchunk.models.maxmargin.DEFAULT_GAP_TOL`), λ > 0 (default
  :data:`~fstchunk.models.maxmargin.DEFAULT_L2`; C = 1/(2λN)); the bar shows the
  gap, the settings record solver, passes, duality_gap, duality_gaps (per pass),
  loss, l2 and C; ``run`` adds ``loss``; the dual state is checkpointed next to the
  checkpoint (CHECKPOINT.dual.npz) and must reproduce its θ on resume;
* ``objective="perceptron"`` (:mod:`fstchunk.models.perceptron`, the CRF only): the
  averaged perceptron, an iteration a pass, stopping after a pass without a mistake;
  no λ (an ``l2`` other than 0 is refused); the value shown is the pass's mistake rate;
  its state is checkpointed next to the checkpoint (CHECKPOINT.perceptron.npz);
  both pass-based solvers are run through :class:`fstchunk.online.Online`;
* ``executor`` (:mod:`fstchunk.scale`: local processes or a Dask cluster): the
  objective's statistics are summed over its partitions of the training set
  (L-BFGS objectives only; the same value to rounding);
* ``callbacks``: callables called after every iteration with a :class:`Progress`;
* ``beta``: the standard β of F_β (:mod:`fstchunk.fbeta`), > 0 (at β = 0 the tagging
  without chunks has F_0 = 0/0 := 1 and would win); ``settings["beta_convention"]``
  records it, so an older file's slides' β' = β² is converted on load;
* ``settings``: objective, l2, beta, run, iterations (of this run), iteration (in
  all), converged, final_objective, train_seconds (optimiser and dev checks,
  summed over resumed runs).

    Trainer(objective="ml", dev=dev_sentences).fit(crf, train_sentences)

Pitfalls:

* ``tol`` (None: 1e-9) is L-BFGS-B's absolute gradient tolerance (``gtol``): the objectives
  are means per sentence, so it is far below scipy's default (1e-9 ≈ the old
  1e-5 on the summed objective over CoNLL-2000's 8936 sentences, which never
  stopped ML before 200 iterations);
* L-BFGS keeps its curvature memory only within one run: a resumed run starts
  it afresh, so it reaches the same optimum (a convex objective: ML) but not
  along the same iterates;
* the objective value shown is that of the last evaluation, which L-BFGS-B
  makes at the accepted iterate;
* a callback may raise to stop training; the checkpoint then stays for
  ``resume``.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import scipy.optimize

from .conll import Sentence
from .batch import decode_sentences
from .errors import InputError, ModelFileError, TrainingInterrupted
from .evaluate import evaluate
from .fbeta import STANDARD, check_beta
from .models import maxmargin as mm, perceptron as pc
from .models.base import ChunkModel, TrainableModel
from .models.objectives import DEFAULT_L2, OBJECTIVES
from .online import ONLINE, SUFFIXES, Online
from .outputs import check_output
from .progress import progress


@dataclass(frozen=True)
class Progress:
    """What a callback learns after each iteration."""
    iteration: int          # iterations done in all (a resumed run counts on)
    objective: float        # the minimised objective at ``theta``
    theta: np.ndarray
    dev_f: float            # the latest dev F (nan before the first, or without dev)
    seconds: float          # training seconds so far
    model: TrainableModel


def file_digest(path) -> str:
    """sha256 (hex) of the file at ``path``: the training file's identity in a
    checkpoint.  InputError naming the file if it cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None
    return h.hexdigest()


def dev_f(model: ChunkModel, sentences: Sequence[Sentence]) -> float:
    """conlleval F (percent) of MAP decoding against the IOB2 gold tags: the model's
    tag column (``model.columns.tag``) if it has one, else the last column."""
    cols = getattr(model, "columns", None)
    tag = getattr(cols, "tag", None)
    col = -1 if tag is None else tag
    preds = decode_sentences(model, sentences, "map", 1.0, output_scheme="IOB2")
    return evaluate([s.column(col) for s in sentences], preds).overall.f


def _finite(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _count(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _plain(value: Any) -> bool:
    """A value a checkpoint's JSON gives back unchanged (an identity field)."""
    return value is None or isinstance(value, (str, bool, int)) or (
        isinstance(value, float) and math.isfinite(value))


class Trainer:
    """L-BFGS training of a :class:`~fstchunk.models.base.TrainableModel`; see the module doc."""

    def __init__(self, objective: str = "ml", l2: float | None = None, beta: float = 1.0,
                 max_iter: int = 100, tol: float | None = None,
                 dev: Sequence[Sentence] | None = None, dev_every: int = 10,
                 checkpoint: str | None = None, checkpoint_every: int = 10,
                 resume: bool = False, output: str | None = None, progress: bool = True,
                 callbacks: Sequence[Callable[[Progress], Any]] = (),
                 log: Callable[[str], Any] | None = None,
                 identity: dict | None = None, loss: str = "hamming", executor: Any = None):
        if objective not in OBJECTIVES and objective not in ONLINE:
            raise InputError(f"unknown objective {objective!r}; use one of "
                             f"{', '.join([*OBJECTIVES, *ONLINE])}")
        margin = objective == mm.MAX_MARGIN
        if objective == pc.PERCEPTRON and l2 not in (None, 0):
            raise InputError(f"the perceptron has no λ (its averaging regularises); got "
                             f"l2 = {l2!r}")
        if l2 is None:
            l2 = {mm.MAX_MARGIN: mm.DEFAULT_L2, pc.PERCEPTRON: 0.0}.get(
                objective) if objective in ONLINE else DEFAULT_L2[objective]
        if tol is None:
            tol = mm.DEFAULT_GAP_TOL if margin else 1e-9
        if not (_finite(l2) and l2 >= 0):
            raise InputError(f"l2 must be a finite number >= 0, got {l2!r}")
        if margin and l2 == 0:
            raise InputError("max-margin training needs λ > 0 (C = 1/(2λN) finite)")
        beta = check_beta(beta, positive=True)    # F_0: no chunk at all has 0/0 := 1
        if loss not in mm.LOSSES:
            raise InputError(f"unknown loss {loss!r}; use one of {', '.join(mm.LOSSES)}")
        if loss != "hamming" and not margin:
            raise InputError(f"--loss {loss} applies to --objective {mm.MAX_MARGIN} only")
        if not (_finite(tol) and tol >= 0):
            raise InputError(f"tol must be a finite number >= 0, got {tol!r}")
        if not (_count(max_iter) and max_iter >= 1):
            raise InputError(f"max_iter must be an integer >= 1, got {max_iter!r}")
        for name, value in (("dev_every", dev_every), ("checkpoint_every", checkpoint_every)):
            if not (_count(value) and value >= 0):
                raise InputError(f"{name} must be an integer >= 0, got {value!r}")
        if resume and not checkpoint:
            raise InputError("--resume: no checkpoint file given")
        if identity is not None and not isinstance(identity, dict):
            raise InputError(f"identity must be a dict, got {type(identity).__name__}")
        for key, value in (identity or {}).items():
            if not _plain(value):
                raise InputError(f"identity field {key!r}: {value!r} is not a string, "
                                 f"finite number, bool or None (a checkpoint stores it)")
        self.objective, self.l2, self.beta = objective, float(l2), float(beta)
        self.loss = loss
        self.max_iter, self.tol = int(max_iter), float(tol)
        self.dev = list(dev or [])
        self.dev_every = int(dev_every)
        self.checkpoint, self.checkpoint_every = checkpoint, int(checkpoint_every)
        self.resume, self.output = resume, output
        self.progress = progress
        self.callbacks = list(callbacks)
        self.log = log or (lambda message: None)
        self.identity = dict(identity or {})
        if executor is not None and objective in ONLINE:
            raise InputError(f"--objective {objective} trains by passes in one process; "
                             f"--workers/--scheduler apply to {', '.join(OBJECTIVES)}")
        self.executor = executor

    @property
    def run(self) -> dict:
        """What a checkpoint of this run records and a resume must match."""
        run = {"objective": self.objective, "l2": self.l2, "beta": self.beta, **self.identity}
        if self.objective == mm.MAX_MARGIN:
            run["loss"] = self.loss
        return json.loads(json.dumps(run))        # as the model file will give it back

    def fit(self, model: TrainableModel, train: Any) -> TrainableModel:
        """Train ``model`` in place on ``train`` (sentences, or the model's prepared
        ``training_data``); returns the model.  OutputError before any work if
        ``output`` or ``checkpoint`` cannot be written; TrainingInterrupted on Ctrl-C."""
        if self.output:
            self.output = check_output(self.output, "model")
        if self.checkpoint:
            self.checkpoint = check_output(self.checkpoint, "checkpoint")
        data = model.training_data(train)
        for key in ("temperature", "calibration_nll", "calibration_nll_t1", "calibrated_on"):
            model.settings.pop(key, None)        # fitted to the old θ: calibrate again
        online = self.objective in ONLINE
        if self.executor is not None and "executor" not in inspect.signature(
                model.objective).parameters:
            raise InputError(f"a {type(model).__name__} does not train data-parallel "
                             f"(--workers/--scheduler)")
        done = self._restore(model)
        idle = done >= self.max_iter                 # a resume with nothing left to do
        fun = None if online or idle else model.objective(
            self.objective, data, self.l2, self.beta,
            **({"executor": self.executor} if self.executor is not None else {}))
        solver = Online(self, model, data, done) if online and not idle else None
        model.settings["run"] = self.run
        model.settings["beta_convention"] = STANDARD      # β of F_β, fstchunk.fbeta
        t0 = time.perf_counter() - model.settings["train_seconds"]
        state: dict[str, Any] = {"value": math.nan, "dev_f": math.nan, "iteration": done}

        def tracked(theta: np.ndarray) -> tuple[float, np.ndarray]:
            state["value"], grad = fun(theta)
            return state["value"], grad

        def save_checkpoint(k: int) -> None:
            model.settings.update(iteration=k, train_seconds=time.perf_counter() - t0)
            if solver is not None:
                solver.save(self.checkpoint)
            model.save(self.checkpoint)

        def step(theta: np.ndarray, **shown: str) -> None:
            state["iteration"] = k = state["iteration"] + 1
            model.theta = theta.copy()
            if self.dev and self.dev_every and k % self.dev_every == 0:
                state["dev_f"] = dev_f(model, self.dev)
            bar.set_postfix(objective=f"{state['value']:.6g}", **shown,
                            dev_f=f"{state['dev_f']:.2f}", refresh=False)
            bar.update(1)
            if self.checkpoint and self.checkpoint_every and k % self.checkpoint_every == 0:
                save_checkpoint(k)
            info = Progress(k, state["value"], model.theta, state["dev_f"],
                            time.perf_counter() - t0, model)
            for callback in self.callbacks:
                callback(info)

        every = 1 if online else (self.dev_every if self.dev and self.dev_every else
                                  self.checkpoint_every if self.checkpoint and
                                  self.checkpoint_every else 10)
        try:        # Ctrl-C anywhere up to the final model written: keep the latest iterate
            with progress(self.max_iter, f"train {self.objective}", "pass" if online else "it",
                          initial=done, enabled=self.progress and not idle,
                          every=every) as bar:
                if idle:
                    self.log(f"--max-iter {self.max_iter}: the checkpoint is at iteration "
                             f"{done} already; no step taken, the model is the "
                             f"checkpoint's (checkpoint kept)")
                    nit, success, final = 0, False, math.nan
                elif solver is None:
                    res = scipy.optimize.minimize(
                        tracked, model.theta, jac=True, method="L-BFGS-B", callback=step,
                        options={"maxiter": max(self.max_iter - done, 1), "gtol": self.tol,
                                 "maxcor": 10})
                    model.theta = res.x
                    nit, success, final = int(res.nit), bool(res.success), float(res.fun)
                else:
                    nit, success, final = solver.run(model, done, state, step)
            model.settings.update(objective=self.objective, l2=self.l2, beta=self.beta,
                                  iterations=nit, iteration=done + nit,
                                  converged=success, final_objective=final,
                                  train_seconds=time.perf_counter() - t0)
            if idle:                    # no objective evaluated: no value to record
                model.settings.pop("final_objective")
            state["iteration"] = done + nit
            if self.dev:
                model.settings["dev_f"] = dev_f(model, self.dev)
                self.log(f"dev F (MAP) = {model.settings['dev_f']:.2f}")
            if self.output:
                model.save(self.output)
        except KeyboardInterrupt:
            k = state["iteration"]
            if solver is not None:          # what the solver can resume from
                model.theta, k = solver.interrupted()
            if not self.checkpoint:
                raise TrainingInterrupted(f"stopped at iteration {k}; no checkpoint "
                                          f"written (no checkpoint file set)") from None
            save_checkpoint(k)
            raise TrainingInterrupted(f"stopped at iteration {k}; checkpoint "
                                      f"{self.checkpoint} (continue with --resume)",
                                      checkpoint=self.checkpoint) from None
        if self.checkpoint and not idle:
            for path in (self.checkpoint, *(self.checkpoint + x for x in SUFFIXES.values())):
                if os.path.exists(path):
                    os.remove(path)
        return model

    def _restore(self, model: TrainableModel) -> int:
        """θ and the bookkeeping from the checkpoint when resuming; the iterations done.
        InputError if there is no checkpoint or it is of another run."""
        if not self.resume:
            model.settings["train_seconds"] = 0.0
            return 0
        if not os.path.isfile(self.checkpoint):
            raise InputError(f"--resume: no checkpoint at {self.checkpoint}")
        saved = type(model).load(self.checkpoint)
        if saved.theta.shape != model.theta.shape:
            raise ModelFileError(f"{self.checkpoint}: checkpoint does not fit this training "
                                 f"set's features")
        recorded = saved.settings.get("run")
        recorded = recorded if isinstance(recorded, dict) else {}
        now = self.run
        differ = [f"{key}: {_shown(recorded, key)} vs {_shown(now, key)}"
                  for key in list(now) + [k for k in recorded if k not in now]
                  if recorded.get(key, _MISSING) != now.get(key, _MISSING)]
        if differ:
            raise InputError(f"--resume: checkpoint {self.checkpoint} is of another run "
                             f"(checkpoint vs now): {'; '.join(differ)}")
        done = int(saved.settings.get("iteration", 0))
        model.theta = saved.theta.copy()
        model.settings["train_seconds"] = float(saved.settings.get("train_seconds", 0.0))
        if isinstance(saved.settings.get("duality_gaps"), list):
            model.settings["duality_gaps"] = saved.settings["duality_gaps"]
        self.log(f"resuming from {self.checkpoint} at iteration {done}")
        return done


_MISSING = object()


def _shown(record: dict, key: str) -> str:
    return repr(record[key]) if key in record else "(not recorded)"
