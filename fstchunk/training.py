"""The training loop: L-BFGS over a trainable model's objective, with the bookkeeping.

:class:`Trainer` is the one loop (``fstchunk train`` and :meth:`CRF.fit
<fstchunk.models.crf.CRF.fit>` both run it).  The estimator stays apart from
it, as in sklearn-crfsuite: the model (a :class:`~fstchunk.models.base.TrainableModel`)
offers ``training_data(train)``, ``objective(name, data, l2, beta)`` (θ ->
value, gradient, minimised) and ``theta``; the trainer owns everything else:

* L-BFGS-B (scipy; Liu & Nocedal 1989) from the model's current θ, at most
  ``max_iter`` iterations in all (counting those before a resume);
* a tqdm progress bar (iteration, objective value, dev F);
* the dev F (conlleval F of MAP decoding on ``dev``, IOB2 gold in the last
  column) every ``dev_every`` iterations and at the end (``settings["dev_f"]``);
* checkpoints: the model saved to ``checkpoint`` every ``checkpoint_every``
  iterations (atomically, :func:`fstchunk.models.io.save_model`), with
  ``settings["iteration"]`` and ``settings["train_seconds"]``; ``resume=True``
  continues from an existing checkpoint's θ and iteration count; the checkpoint
  is removed once the run ends (after the final model is written to ``output``);
* ``callbacks``: callables called after every iteration with a :class:`Progress`;
* ``settings``: objective, l2, beta, iterations (of this run), iteration (in
  all), converged, final_objective, train_seconds (optimiser and dev checks,
  summed over resumed runs).

    Trainer(objective="ml", l2=0.01, dev=dev_sentences).fit(crf, train_sentences)

Pitfalls:

* L-BFGS keeps its curvature memory only within one run: a resumed run starts
  it afresh, so it reaches the same optimum (a convex objective: ML) but not
  along the same iterates;
* the objective value shown is that of the last evaluation, which L-BFGS-B
  makes at the accepted iterate;
* a callback may raise to stop training; the checkpoint then stays for
  ``resume``.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import scipy.optimize
from tqdm import tqdm

from .conll import Sentence
from .decode import decode_sentences
from .errors import InputError, ModelFileError
from .evaluate import evaluate
from .models.base import ChunkModel, TrainableModel
from .models.objectives import OBJECTIVES


@dataclass(frozen=True)
class Progress:
    """What a callback learns after each iteration."""
    iteration: int          # iterations done in all (a resumed run counts on)
    objective: float        # the minimised objective at ``theta``
    theta: np.ndarray
    dev_f: float            # the latest dev F (nan before the first, or without dev)
    seconds: float          # training seconds so far
    model: TrainableModel


def dev_f(model: ChunkModel, sentences: Sequence[Sentence]) -> float:
    """conlleval F (percent) of MAP decoding against the IOB2 tags of the last column."""
    preds = decode_sentences(model, sentences, "map", 1.0, output_scheme="IOB2")
    return evaluate([s.column(-1) for s in sentences], preds).overall.f


class Trainer:
    """L-BFGS training of a :class:`~fstchunk.models.base.TrainableModel`; see the module doc."""

    def __init__(self, objective: str = "ml", l2: float = 1.0, beta: float = 1.0,
                 max_iter: int = 100, tol: float = 1e-5,
                 dev: Sequence[Sentence] | None = None, dev_every: int = 10,
                 checkpoint: str | None = None, checkpoint_every: int = 10,
                 resume: bool = False, output: str | None = None, progress: bool = True,
                 callbacks: Sequence[Callable[[Progress], Any]] = (),
                 log: Callable[[str], Any] | None = None):
        if objective not in OBJECTIVES:
            raise InputError(f"unknown objective {objective!r}; use one of "
                             f"{', '.join(OBJECTIVES)}")
        for name, value in (("l2", l2), ("beta", beta)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise InputError(f"{name} must be a finite number >= 0, got {value!r}")
        for name, value in (("max_iter", max_iter), ("dev_every", dev_every),
                            ("checkpoint_every", checkpoint_every)):
            if not (isinstance(value, int) and value >= 0):
                raise InputError(f"{name} must be an integer >= 0, got {value!r}")
        self.objective, self.l2, self.beta = objective, float(l2), float(beta)
        self.max_iter, self.tol = max_iter, tol
        self.dev = list(dev or [])
        self.dev_every = dev_every
        self.checkpoint, self.checkpoint_every = checkpoint, checkpoint_every
        self.resume, self.output = resume, output
        self.progress = progress
        self.callbacks = list(callbacks)
        self.log = log or (lambda message: None)

    def fit(self, model: TrainableModel, train: Any) -> TrainableModel:
        """Train ``model`` in place on ``train`` (sentences, or the model's prepared
        ``training_data``); returns the model."""
        fun = model.objective(self.objective, model.training_data(train), self.l2, self.beta)
        done = self._restore(model)
        t0 = time.perf_counter() - model.settings["train_seconds"]
        state = {"value": math.nan, "dev_f": math.nan, "iteration": done}

        def tracked(theta: np.ndarray) -> tuple[float, np.ndarray]:
            state["value"], grad = fun(theta)
            return state["value"], grad

        def step(theta: np.ndarray) -> None:
            state["iteration"] = k = state["iteration"] + 1
            model.theta = theta.copy()
            if self.dev and self.dev_every and k % self.dev_every == 0:
                state["dev_f"] = dev_f(model, self.dev)
            bar.update(1)
            bar.set_postfix(objective=f"{state['value']:.6g}", dev_f=f"{state['dev_f']:.2f}")
            if self.checkpoint and self.checkpoint_every and k % self.checkpoint_every == 0:
                model.settings.update(iteration=k, train_seconds=time.perf_counter() - t0)
                model.save(self.checkpoint)
            info = Progress(k, state["value"], model.theta, state["dev_f"],
                            time.perf_counter() - t0, model)
            for callback in self.callbacks:
                callback(info)

        with tqdm(total=self.max_iter, initial=done, desc=f"train {self.objective}",
                  unit="it", disable=not self.progress) as bar:
            res = scipy.optimize.minimize(
                tracked, model.theta, jac=True, method="L-BFGS-B", callback=step,
                options={"maxiter": max(self.max_iter - done, 1), "gtol": self.tol,
                         "maxcor": 10})
        model.theta = res.x
        model.settings.update(objective=self.objective, l2=self.l2, beta=self.beta,
                              iterations=int(res.nit), iteration=done + int(res.nit),
                              converged=bool(res.success), final_objective=float(res.fun),
                              train_seconds=time.perf_counter() - t0)
        if self.dev:
            model.settings["dev_f"] = dev_f(model, self.dev)
            self.log(f"dev F (MAP) = {model.settings['dev_f']:.2f}")
        if self.output:
            model.save(self.output)
        if self.checkpoint and os.path.exists(self.checkpoint):
            os.remove(self.checkpoint)
        return model

    def _restore(self, model: TrainableModel) -> int:
        """θ and the bookkeeping from the checkpoint when resuming; the iterations done."""
        if not (self.resume and self.checkpoint and os.path.exists(self.checkpoint)):
            model.settings["train_seconds"] = 0.0
            return 0
        saved = type(model).load(self.checkpoint)
        if saved.theta.shape != model.theta.shape:
            raise ModelFileError(f"{self.checkpoint}: checkpoint does not fit this training "
                                 f"set's features")
        done = int(saved.settings.get("iteration", 0))
        model.theta = saved.theta.copy()
        model.settings["train_seconds"] = float(saved.settings.get("train_seconds", 0.0))
        self.log(f"resuming from {self.checkpoint} at iteration {done}")
        return done
