"""A training loss as one object (as scikit-learn's ``LinearModelLoss`` is): an objective
of :mod:`fstchunk.learn.objectives` with its settings, as a function of θ.

    P(θ) = combine(Σ_i s_i(θ)) + λ‖θ‖²

where s_i are the objective's additive statistics of sentence i (a model computes them:
``model.statistics(data, θ, loss)``) and ``combine`` is
:meth:`~fstchunk.learn.objectives.Objective.combine` (the mean per sentence, or the
corpus F's ratio of expected counts).  :class:`Loss` is what solvers and executors are
handed: picklable (its objective travels by name), it carries β of F_β and the margin's
loss Δ where the objective reads them, and sums the statistics in one process or over an
executor's partitions (:mod:`fstchunk.runtime.scale`).

Pitfall: a partitioned value equals the single-process one to rounding (~1e-12
relative), not bit for bit: the sums run in another order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..core.fbeta import to_beta_sq
from .objectives import Objective, objective_error


@dataclass(frozen=True)
class Loss:
    """``objective`` on a training set plus ``l2``·‖θ‖²; ``beta``: the standard β of
    F_β (meu, meu-corpus, max-margin's F loss); ``margin``: max-margin's loss Δ
    (``hamming`` or ``f``)."""

    objective: Objective
    l2: float = 0.0
    beta: float = 1.0
    margin: str = "hamming"

    def __post_init__(self) -> None:
        if self.objective.combination is None:
            raise objective_error("{} has no objective function of θ: it is trained by "
                                  "passes of its solver", self.objective.name)

    @property
    def beta_sq(self) -> float:
        """β², as the engines and the statistics take it."""
        return to_beta_sq(self.beta)

    def statistics(self, model: Any, data: Any, theta: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The summed statistics over ``data`` at θ: values (J,) and their gradients in
        θ-space (J, |θ|)."""
        return model.statistics(data, theta, self)

    def combine(self, values: np.ndarray, G: np.ndarray, theta: np.ndarray, sentences: int
                ) -> tuple[float, np.ndarray]:
        """P(θ) and ∇P(θ) from the summed statistics of ``sentences`` sentences."""
        value, w = self.objective.combine(values, sentences, self.beta_sq)
        return value + self.l2 * float(theta @ theta), w @ G + 2 * self.l2 * theta

    def function(self, model: Any, data: Any, executor: Any = None
                 ) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
        """θ -> (P(θ), ∇P(θ)) on ``data`` (``len(data)`` sentences), the statistics summed
        over ``executor``'s partitions of ``data`` when one is given."""
        parts = executor.partitioned(model, data) if executor is not None else None
        sentences = len(data)

        def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
            values, G = (parts.statistics(theta, self) if parts is not None
                         else self.statistics(model, data, theta))
            return self.combine(values, G, theta, sentences)

        return fun
