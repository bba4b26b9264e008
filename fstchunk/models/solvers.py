"""The solver table: which :class:`~fstchunk.learn.solvers.Solver` runs an objective.

:data:`SOLVERS` maps an objective's ``solver`` name (:mod:`fstchunk.learn.objectives`)
to the function that builds that solver for a model; a model's ``solver`` method checks
what only it can check and calls :func:`make_solver`.  Where a model runs a name with
a solver of its own (the joint model's perceptron), its class attribute
``own_solvers`` (name -> builder) says so; where its smooth objective needs more than
plain L-BFGS on the call's loss object (the attribute CRF's stopping test, OWL-QN),
its ``smooth_solver(call)`` builds it.  Every builder takes (model, :class:`Call`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..learn import objectives as lo
from ..learn.loss import Loss
from ..learn.solvers import LBFGS, Solver
from .bcfw import BCFWSolver
from .joint.train import JointPerceptronSolver
from .online import MarginSolver
from .perceptron import PerceptronSolver
from .segment.train import HildrethSolver
from .sgd import L2SGDSolver


@dataclass(frozen=True)
class Call:
    """What the training loop hands a model's ``solver``: the objective, the training
    data and the hyper-parameters (``tol`` resolved to the objective's default)."""
    objective: lo.Objective
    data: Any
    l2: float
    beta: float
    loss: str
    tol: float
    executor: Any

    @property
    def objective_loss(self) -> Loss:
        """The smooth objective as a loss object: θ -> (value, gradient) on the data."""
        return Loss(self.objective, self.l2, self.beta, self.loss)


def _lbfgs(model: Any, c: Call) -> Solver:
    if hasattr(model, "smooth_solver"):
        return model.smooth_solver(c)
    return LBFGS(c.objective_loss.function(model, c.data, c.executor), c.tol)


#: solver name -> how to build it for a model (module doc)
SOLVERS: dict[str, Callable[[Any, Call], Solver]] = {
    "lbfgs": _lbfgs,
    "bcfw": lambda m, c: BCFWSolver(m, c.data, c.l2, c.loss, c.beta, c.tol, c.executor),
    "perceptron": lambda m, c: PerceptronSolver(m, c.data),
    "pa": lambda m, c: MarginSolver(m, c.data, "pa", m.options or {}),
    "arow": lambda m, c: MarginSolver(m, c.data, "arow", m.options or {}),
    "l2sgd": lambda m, c: L2SGDSolver(m, c.data, c.l2, m.options or {}),
    "mmvp": lambda m, c: JointPerceptronSolver(m, c.data, True),
    "hildreth": lambda m, c: HildrethSolver(m, c.data, m.seed, m.average, m.max_sweeps),
}


def make_solver(model: Any, objective: lo.Objective, data: Any, *, l2: float, beta: float,
                loss: str, tol: float | None, executor: Any, name: str | None = None,
                kind: str = "this model") -> Solver:
    """The solver ``name`` (default the objective's) for ``model``, from the model's
    ``own_solvers`` or :data:`SOLVERS`; InputError naming ``kind`` ("a CRF") if the
    model does not train ``objective``."""
    if not objective.among(tuple(getattr(model, "objectives", (objective,)))):
        raise lo.objective_error(kind + " does not train {}", objective.name)
    name = objective.solver if name is None else name
    build = {**SOLVERS, **getattr(model, "own_solvers", {})}[name]
    call = Call(objective, data, l2, beta, loss,
                objective.default_tol if tol is None else tol, executor)
    return build(model, call)
