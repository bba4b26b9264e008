"""Learning: the one training loop, the solver protocol, the objectives' registry.

* :mod:`.objectives`: every training objective as an :class:`~.objectives.Objective`
  (default λ, whether its scores are probabilities, its solver, how its additive
  statistics combine), and the one L2 convention;
* :mod:`.solvers`: the :class:`~.solvers.Solver` protocol and :class:`~.solvers.LBFGS`;
* :mod:`.epochs`: :class:`~.epochs.EpochSolver`, the shell of every solver that runs in
  passes (the online solvers subclass it beside their models), and
  :class:`~.epochs.Average`, the averaged perceptron's bookkeeping, written once;
* :mod:`.loop`: :class:`~.loop.Trainer`, the loop every model family trains through
  (progress, dev F and best-on-dev selection, checkpoints, resume, Ctrl-C, callbacks);
* :mod:`.runs`: what a resumed run must match (the run fields a checkpoint records,
  :func:`~.runs.file_digest` of the training file).

Models (:mod:`fstchunk.models`) sit above this package: they import it, it imports no
model.
"""

from ..core.namespace import public_dir
from .loop import Progress, Trainer
from .objectives import OBJECTIVES, Objective, objective
from .runs import file_digest
from .solvers import LBFGS, Outcome, Solver

__all__ = ["LBFGS", "OBJECTIVES", "Objective", "Outcome", "Progress", "Solver", "Trainer",
           "file_digest", "objective"]

__dir__ = public_dir(globals(), __all__)
