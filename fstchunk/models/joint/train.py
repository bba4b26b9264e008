"""Training the joint model: its objectives, their solvers and statistics.

The joint model trains through the one training loop,
:class:`fstchunk.learn.loop.Trainer` (progress, dev F and ``select="dev"``,
checkpoints, resume, Ctrl-C), over three objectives of the registry
(:mod:`fstchunk.learn.objectives`), named by ``joint train --algorithm``
(:data:`ALGORITHMS`, also the ``algorithm`` setting of model files):

* ``crf`` = :data:`~fstchunk.learn.objectives.ML` over the joint structure: the mean
  per training sentence (S sentences) plus λ‖w‖² (the one L2 convention),

      P(w) = (1/S) Σ_i [log Z(x_i) − w·f(x_i, y_i)] + λ‖w‖²,
      ∇P   = (1/S) Σ_i [E[f(x_i, ·)] − f(x_i, y_i)] + 2λw,

  E[f] from the part marginals of :func:`~.dp.inside_outside`; minimised by L-BFGS
  over additive statistics (:func:`nll_statistics`, what :mod:`fstchunk.scale`'s
  executors sum over partitions).  The joint model's default λ is its own
  (:data:`DEFAULT_L2`, not the CRF's): the old summed default 0.5 over the 8936
  CoNLL-2000 training sentences; a λ of the old summed scale divided by S is the same
  penalty.
* ``perceptron`` and ``mmvp``: Shimizu & Haas (2006), Algorithm 4.1 with Collins'
  averaging, and Algorithm 4.3 (the perceptron with the max-margin step
  δ = clip((loss − margin) / ‖Δf‖², 0, 1), C = 1), with the first-iteration trick
  (lexicalised weights frozen in epoch 1); one step of :class:`PerceptronSolver` is an
  epoch over the sentences in their order; no λ (averaging regularises).

Pitfalls:

* The perceptron's weights are the average w − u/t (u = Σ_t t·Δ_t, t the visits + 1),
  not the last w; a resumed run needs the state file beside the checkpoint
  (:data:`STATE_SUFFIX`: w, u, t and the epochs of the last complete epoch), so that it
  continues exactly as an uninterrupted run would; an epoch cut short is redone.
* An epoch without a mistake has converged (the training set is separated) and
  training stops there (the registry's perceptron convention).
* Training sentences need gold structures (``Encoded.gold``): InputError otherwise.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ...errors import InputError, ModelFileError
from ...learn import objectives as lo
from ...learn.solvers import LBFGS, OnStep, Outcome, Solver, check_resumed
from ...outputs import atomic_path
from .dp import inside_outside, viterbi
from .structure import Parts, Structure, structure_parts, structure_score

#: the objectives the joint model trains
JOINT_OBJECTIVES = (lo.ML, lo.PERCEPTRON, lo.MMVP)
#: ``joint train --algorithm`` and the ``algorithm`` setting of model files: the joint
#: model's names of its objectives (ML over the joint structure is ``crf``)
ALGORITHMS: dict[str, lo.Objective] = {"perceptron": lo.PERCEPTRON, "mmvp": lo.MMVP,
                                       "crf": lo.ML}
#: the joint model's default λ (per sentence) where the registry's is the CRF's: 0.5 on
#: the old summed scale over CoNLL-2000's 8936 training sentences (0.5/8936), rounded
DEFAULT_L2: dict[lo.Objective, float] = {lo.ML: 5.6e-5}
#: the perceptron state's file beside a checkpoint: CHECKPOINT + STATE_SUFFIX
STATE_SUFFIX = ".perceptron.npz"


class Trainable(Protocol):
    """What training needs of a model (:class:`~.model.JointModel` has it)."""
    w: np.ndarray
    lexical: np.ndarray
    c: int
    p: int

    def parts(self, x: Any, w: np.ndarray | None = None) -> Parts: ...

    def features(self, x: Any, parts: Parts) -> tuple[np.ndarray, np.ndarray]: ...

    def loss(self, gold: Structure, y: Structure) -> float: ...

    def _difference(self, x: Any, gold: Structure, y: Structure
                    ) -> tuple[np.ndarray, np.ndarray]: ...


def algorithm(name: str | lo.Objective) -> lo.Objective:
    """The objective of an ``--algorithm`` name (``perceptron``, ``mmvp``, ``crf``), or of
    :data:`JOINT_OBJECTIVES` by object or registry name; InputError naming the choices."""
    if isinstance(name, str) and name in ALGORITHMS:
        return ALGORITHMS[name]
    try:
        return lo.objective(name, JOINT_OBJECTIVES)
    except InputError:
        raise InputError(f"unknown algorithm {name!r} ({', '.join(ALGORITHMS)}; or the "
                         f"objective {', '.join(lo.names(JOINT_OBJECTIVES))})") from None


def algorithm_name(objective: lo.Objective) -> str:
    """The ``--algorithm`` name of one of :data:`JOINT_OBJECTIVES`."""
    return next(k for k, o in ALGORITHMS.items() if o is objective)


def default_l2(objective: lo.Objective, given: float | None) -> float | None:
    """λ to hand the trainer: ``given``, else the joint model's default
    (:data:`DEFAULT_L2`), else None (the registry's default: none for the passes)."""
    return given if given is not None else DEFAULT_L2.get(objective)


def check_training(data: Sequence[Any]) -> None:
    """InputError for no training sentences or one without a gold structure."""
    if len(data) == 0:
        raise InputError("no training sentences: training needs at least one sentence with "
                         "gold POS and chunk tags")
    missing = [i for i, x in enumerate(data) if getattr(x, "gold", None) is None]
    if missing:
        raise InputError(f"training sentence {missing[0] + 1}: training sentences need "
                         f"gold POS and chunk tags")


# ---------------------------------------------------------------- ML (``crf``)
def nll_statistics(model: Trainable, data: Sequence[Any], w: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Σ_i log Z(x_i) − w·f(x_i, y_i) over ``data`` (values (1,)) and its gradient
    Σ_i E[f] − f(gold) (grads (1, |w|)): additive over sentences."""
    val, grad = 0.0, np.zeros_like(w)
    for x in data:
        parts = model.parts(x, w)
        logZ, marg = inside_outside(parts)
        val += logZ - structure_score(parts, x.gold)
        mi, mv = model.features(x, marg)          # unique indices: += adds each once
        gi, gv = model.features(x, structure_parts(x.gold, model.c, model.p))
        grad[mi] += mv
        grad[gi] -= gv
    return np.array([val]), grad[None, :]


def smooth_objective(model: Any, objective: lo.Objective, data: Sequence[Any], l2: float,
                     executor: Any = None) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """w -> (value, gradient) of a smooth objective: the combined statistics
    (:meth:`~fstchunk.learn.objectives.Objective.combine`, the mean per sentence) plus
    λ‖w‖²; with an ``executor`` the statistics are summed over its partitions of
    ``data`` (the same value to rounding)."""
    parts = executor.partitioned(model, data) if executor is not None else None

    def value_and_grad(w: np.ndarray) -> tuple[float, np.ndarray]:
        values, G = (parts.statistics(w, objective.name) if parts is not None
                     else model.statistics(data, w, objective.name))
        value, weights = objective.combine(values, len(data))
        return value + l2 * float(w @ w), weights @ G + 2.0 * l2 * w

    return value_and_grad


def solver(model: Any, objective: lo.Objective, data: Sequence[Any], l2: float,
           tol: float | None, executor: Any) -> Solver:
    """L-BFGS for ML, :class:`PerceptronSolver` for the perceptron and MMVP."""
    if objective is lo.ML:
        return LBFGS(smooth_objective(model, objective, data, l2, executor),
                     objective.default_tol if tol is None else tol)
    if objective is lo.PERCEPTRON or objective is lo.MMVP:
        return PerceptronSolver(model, data, objective is lo.MMVP)
    raise lo.objective_error("the joint model does not train {}", objective.name)


# ------------------------------------------------------- perceptron and MMVP
class AveragedPerceptron:
    """Algorithm 4.1 (or 4.3 with ``mmvp``) from w₀: w, u = Σ t·Δ_t, t, epochs done;
    the state after the last complete epoch in :attr:`snapshot`."""

    def __init__(self, model: Trainable, data: Sequence[Any], mmvp: bool, w: np.ndarray):
        self.model, self.data, self.mmvp = model, data, mmvp
        self.w, self.u = np.array(w, dtype=float), np.zeros(len(w))
        self.t, self.epochs = 1, 0
        self._snap()

    def _snap(self) -> None:
        self.snapshot = (self.w.copy(), self.u.copy(), self.t, self.epochs)

    @property
    def average(self) -> np.ndarray:
        """w − u/t after the last complete epoch."""
        w, u, t, _ = self.snapshot
        return w - u / t

    def run_epoch(self) -> int:
        """One epoch over the sentences in order; the number of mistakes."""
        model, w, u = self.model, self.w, self.u
        first, mistakes = self.epochs == 0, 0
        for x in self.data:
            y, _ = viterbi(model.parts(x, w))
            if y != x.gold:
                mistakes += 1
                idx, val = model._difference(x, x.gold, y)
                step = 1.0
                if self.mmvp:                             # δ of Algorithm 4.3 (C = 1)
                    margin = float(w[idx] @ val)          # s(gold) − s(y)
                    norm = float(val @ val)
                    step = max(0.0, min((model.loss(x.gold, y) - margin) / norm, 1.0)) \
                        if norm > 0 else 0.0
                if first:                                 # the first-iteration trick
                    keep = ~model.lexical[idx]
                    idx, val = idx[keep], val[keep]
                w[idx] += step * val
                u[idx] += self.t * step * val
            self.t += 1
        self.epochs += 1
        self._snap()
        return mistakes

    def save(self, path: str) -> None:
        """w, u, t, epochs of the last complete epoch, atomically to ``path`` (.npz)."""
        w, u, t, epochs = self.snapshot
        with atomic_path(path, "checkpoint") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, w=w, u=u, t=np.int64(t), epochs=np.int64(epochs),
                     mmvp=np.bool_(self.mmvp))

    def load(self, path: str) -> None:
        """Restore :meth:`save`'s file; ModelFileError naming it if it cannot be read or
        is of another model or algorithm."""
        try:
            with np.load(path, allow_pickle=False) as f:
                w, u = f["w"].astype(float), f["u"].astype(float)
                t, epochs, mmvp = int(f["t"]), int(f["epochs"]), bool(f["mmvp"])
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise ModelFileError(f"{path}: not a joint perceptron state ({e})") from None
        if not (w.shape == u.shape == self.w.shape and t >= 1 and epochs >= 0
                and np.all(np.isfinite(w)) and np.all(np.isfinite(u))):
            raise ModelFileError(f"{path}: the perceptron state does not fit this model's "
                                 f"weights")
        if mmvp != self.mmvp:
            raise ModelFileError(f"{path}: a state of {'mmvp' if mmvp else 'perceptron'}, "
                                 f"not of {'mmvp' if self.mmvp else 'perceptron'}")
        self.w, self.u, self.t, self.epochs = w, u, t, epochs
        self._snap()


class PerceptronSolver:
    """The averaged perceptron or MMVP as a :class:`~fstchunk.learn.solvers.Solver`: a
    step is an epoch; it stops after an epoch without a mistake; its state sits beside
    the checkpoint (:data:`STATE_SUFFIX`)."""

    unit, suffix, state_name = "pass", STATE_SUFFIX, "perceptron state"

    def __init__(self, model: Trainable, data: Sequence[Any], mmvp: bool):
        self.model, self.data, self.mmvp = model, data, mmvp
        self.state: AveragedPerceptron | None = None

    def restore(self, path: str, theta: np.ndarray, done: int) -> None:
        self.state = AveragedPerceptron(self.model, self.data, self.mmvp, theta)
        self.state.load(path)
        check_resumed(path, self.state.average, theta, self.state.epochs, done)

    def run(self, theta: np.ndarray, done: int, max_steps: int, on_step: OnStep) -> Outcome:
        if self.state is None:
            self.state = AveragedPerceptron(self.model, self.data, self.mmvp, theta)
        s = self.state
        nit, converged, rate, mistakes = 0, False, float("nan"), 0
        while not converged and done + nit < max_steps:
            mistakes = s.run_epoch()
            nit += 1
            converged, rate = mistakes == 0, mistakes / len(self.data)
            on_step(s.average, rate, {"mistakes": str(mistakes)})
        name = "mmvp" if self.mmvp else "averaged-perceptron"
        return Outcome(nit, converged, rate, {"solver": name, "passes": done + nit,
                                              "mistakes": mistakes})

    def save_state(self, path: str) -> None:
        self.state.save(path)

    def interrupted(self) -> tuple[np.ndarray, int]:
        """The average after the last complete epoch (an epoch cut short is redone)."""
        if self.state is None:
            raise RuntimeError("the solver has not run")
        return self.state.average, self.state.epochs
