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
  over additive statistics (:func:`nll_statistics`, what :mod:`fstchunk.runtime.scale`'s
  executors sum over partitions).  The joint model's default λ is its own
  (:data:`DEFAULT_L2`, not the CRF's): the old summed default 0.5 over the 8936
  CoNLL-2000 training sentences; a λ of the old summed scale divided by S is the same
  penalty.
* ``perceptron`` and ``mmvp``: Shimizu & Haas (2006), Algorithm 4.1 with Collins'
  averaging, and Algorithm 4.3 (the perceptron with the max-margin step
  δ = clip((loss − margin) / ‖Δf‖², 0, 1), C = 1), with the first-iteration trick
  (lexicalised weights frozen in epoch 1); one step of :class:`JointPerceptronSolver`
  is an epoch over the sentences in their order; no λ (averaging regularises).

Pitfalls:

* The perceptron's weights are the average w − u/t (u = Σ_t t·Δ_t, t the visits + 1:
  :class:`fstchunk.learn.epochs.Average` from count 1), not the last w; a resumed run needs the state file beside the checkpoint
  (:data:`STATE_SUFFIX`: w, u, t and the epochs of the last complete epoch), so that it
  continues exactly as an uninterrupted run would; an epoch cut short is redone.
* An epoch without a mistake has converged (the training set is separated) and
  training stops there (the registry's perceptron convention).
* Training sentences need gold structures (``Encoded.gold``): InputError otherwise.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np

from ...core.errors import InputError, ModelFileError
from ...core.outputs import atomic_path
from ...learn import objectives as lo
from ...learn.epochs import Average, EpochSolver
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
    theta_: np.ndarray
    lexical: np.ndarray
    c: int
    p: int

    def parts(self, x: Any, w: np.ndarray | None = None) -> Parts: ...

    def features(self, x: Any, parts: Parts) -> tuple[np.ndarray, np.ndarray]: ...

    def loss(self, gold: Structure, y: Structure) -> float: ...


def feature_difference(model: Trainable, x: Any, gold: Structure, y: Structure
                       ) -> tuple[np.ndarray, np.ndarray]:
    """f(x, gold) − f(x, y) as a sparse (indices, values) vector: the perceptron's and
    MMVP's update direction."""
    gi, gv = model.features(x, structure_parts(gold, model.c, model.p))
    pi, pv = model.features(x, structure_parts(y, model.c, model.p))
    idx, inv = np.unique(np.concatenate([gi, pi]), return_inverse=True)
    val = np.bincount(inv, weights=np.concatenate([gv, -pv]), minlength=len(idx))
    keep = val != 0
    return idx[keep], val[keep]


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


# ------------------------------------------------------- perceptron and MMVP
class JointPerceptronSolver(EpochSolver):
    """Algorithm 4.1 (or 4.3 with ``mmvp``) as an :class:`~fstchunk.learn.epochs.EpochSolver`
    from w₀ (the model's θ): a step is an epoch over the sentences in order; it stops
    after an epoch without a mistake; the learner is w and u = Σ t·Δ_t averaged by
    :class:`~fstchunk.learn.epochs.Average` from count 1; its state (w, u, t and the
    epochs of the last complete epoch) sits beside the checkpoint (:data:`STATE_SUFFIX`)."""

    suffix, state_name = STATE_SUFFIX, "perceptron state"
    mistakes = 0

    def __init__(self, model: Trainable, data: Sequence[Any], mmvp: bool):
        super().__init__(model, data)
        self.mmvp = mmvp
        self.epochs = 0

    def start(self, theta: np.ndarray) -> None:
        self.learner = Average([np.array(theta, dtype=float)], count=1)
        self.epochs = 0
        self._snap()

    def _snap(self) -> None:
        a = self.learner
        self.snapshot = (a.w[0].copy(), a.u[0].copy(), a.count, self.epochs)

    def epoch(self) -> tuple[float, bool, dict]:
        """One epoch over the sentences in order; (mistakes over S, none, shown)."""
        model, a = self.model, self.learner
        w = a.w[0]
        first, mistakes = self.epochs == 0, 0
        for x in self.data:
            y, _ = viterbi(model.parts(x, w))
            if y != x.gold:
                mistakes += 1
                idx, val = feature_difference(model, x, x.gold, y)
                step = 1.0
                if self.mmvp:                             # δ of Algorithm 4.3 (C = 1)
                    margin = float(w[idx] @ val)          # s(gold) − s(y)
                    norm = float(val @ val)
                    step = max(0.0, min((model.loss(x.gold, y) - margin) / norm, 1.0)) \
                        if norm > 0 else 0.0
                if first:                                 # the first-iteration trick
                    keep = ~model.lexical[idx]
                    idx, val = idx[keep], val[keep]
                a.add(0, idx, val, step)
            a.visit()
        self.epochs += 1
        self._snap()
        self.mistakes = mistakes
        return mistakes / len(self.data), mistakes == 0, {"mistakes": str(mistakes)}

    def current(self) -> tuple[np.ndarray, int]:
        """w − u/t after the last complete epoch, and the epochs."""
        w, u, t, epochs = self.snapshot
        return Average.mean(w, u, t), epochs

    def settings(self, epochs: int, value: float) -> dict:
        return {"solver": "mmvp" if self.mmvp else "averaged-perceptron", "passes": epochs,
                "mistakes": self.mistakes}

    def write(self, path: str) -> None:
        """w, u, t, epochs of the last complete epoch, atomically to ``path`` (.npz)."""
        w, u, t, epochs = self.snapshot
        with atomic_path(path, "checkpoint") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, w=w, u=u, t=np.int64(t), epochs=np.int64(epochs),
                     mmvp=np.bool_(self.mmvp))

    def load(self, path: str) -> None:
        """Restore :meth:`write`'s file; ModelFileError naming it if it cannot be read or
        is of another model or algorithm."""
        try:
            with np.load(path, allow_pickle=False) as f:
                w, u = f["w"].astype(float), f["u"].astype(float)
                t, epochs, mmvp = int(f["t"]), int(f["epochs"]), bool(f["mmvp"])
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise ModelFileError(f"{path}: not a joint perceptron state ({e})") from None
        if not (w.shape == u.shape == np.shape(self.model.theta_) and t >= 1 and epochs >= 0
                and np.all(np.isfinite(w)) and np.all(np.isfinite(u))):
            raise ModelFileError(f"{path}: the perceptron state does not fit this model's "
                                 f"weights")
        if mmvp != self.mmvp:
            raise ModelFileError(f"{path}: a state of {'mmvp' if mmvp else 'perceptron'}, "
                                 f"not of {'mmvp' if self.mmvp else 'perceptron'}")
        self.learner = Average([w], count=t)
        self.learner.u = [u]
        self.epochs = epochs
        self._snap()
