"""One linear-chain CRF estimator over a pluggable feature map.

    score(y | x) = start[y_1] + Σ_i w·φ(x, i, y_i) + Σ_i trans[y_{i-1}, y_i] + end[y_n]
    Pr(y | x) = exp(score) / Z(x),   Z over the valid sequences of the tag space

(Lafferty et al. 2001).  :class:`ChainCRF` is everything about this model that does
not depend on what a token is: the θ layout over (attribute, tag) pairs
(:class:`.pairchain.PairChain`), ``fit`` (fresh, warm start or prepared data, then
:class:`fstchunk.learn.loop.Trainer`), the lattices of a batch of inputs (one feature
transform, one product), copies, the solver table, calibration and pickling.  What a
token is, how features are read from it and where the tags come from is the feature
map, which a subclass plugs in:

* :class:`fstchunk.models.crf.CRF`: CoNLL sentences through feature templates
  (Tang et al.'s tmpt1-4, ``ner``, a template file); the tags are the sentences' tag
  column, so ``y`` is None;
* :class:`fstchunk.models.attribute_crf.AttributeCRF`: python-crfsuite's items (a dict
  of weighted attributes per token) and labels ``y`` apart.

A new feature map is a subclass that defines, besides its constructor's
hyper-parameters: ``_train_input(X, y)`` (what ``fit`` was given, checked),
``_dev_input(dev)``, ``_prepare(train)`` (fit the feature map, tags and pairs, set the
fitted state with ``_set_state``, and return :class:`.design.TrainingData`),
``_data_of(train, data_scheme)`` (the same data under the fitted map), ``_inputs(X)`` (the
inputs checked, each with a ``len``), ``_fitted_state()`` (``_set_state``'s keywords),
``dev_f``, ``save`` and ``load``; the fitted ``fmap_`` has ``transform(inputs)``
(a sparse tokens x attributes matrix) and ``len``.

Pitfall: ``fit`` on prepared :class:`.design.TrainingData` needs the fitted model the
data were prepared by (its feature map and tags); θ restarts from 0 unless
``warm_start``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np

from ..core.errors import InputError
from ..learn import objectives as lo
from ..learn.loop import Trainer
from ..learn.solvers import Solver
from ..structures.lattice import Lattice
from .calibrated import Calibrated
from .design import TrainingData
from .estimator import Estimator, renamed_state
from .pairchain import PairChain
from .solvers import make_solver


class ChainCRF(Estimator, Calibrated, PairChain):
    """A linear-chain CRF over a feature map a subclass supplies (module doc): the
    shared ``fit``, :meth:`lattices`, :meth:`copy` and :meth:`solver`.

    Subclasses keep the hyper-parameters ``objective``, ``l2``, ``beta``, ``loss``,
    ``max_iter``, ``tol``, ``select`` and ``warm_start`` (the trainer's)."""

    kind: ClassVar[str] = "chain-crf"
    #: how messages name the model: "a CRF"
    noun: ClassVar[str] = "a chain CRF"
    #: the objectives this model trains (:mod:`fstchunk.learn.objectives`)
    objectives: ClassVar[tuple] = ()

    # --------------------------------------------------------------- the feature map's
    def _train_input(self, X: Any, y: Any) -> Any:
        raise NotImplementedError

    def _dev_input(self, dev: Any) -> Any:
        return dev

    def _prepare(self, train: Any) -> TrainingData:
        raise NotImplementedError

    def _data_of(self, train: Any, data_scheme: str | None) -> TrainingData:
        raise NotImplementedError

    def _inputs(self, X: Sequence[Any]) -> list:
        raise NotImplementedError

    def _fitted_state(self) -> dict[str, Any]:
        raise NotImplementedError

    def _set_state(self, **state: Any) -> "ChainCRF":
        raise NotImplementedError

    # --------------------------------------------------------------- shared
    def training_data(self, train: Any, data_scheme: str | None = None) -> TrainingData:
        """The training data of ``train`` under this fitted model's feature map and tags
        (``data_scheme``: that of the tags read, where the feature map reads them from
        files); prepared :class:`.design.TrainingData` pass through unchanged."""
        if isinstance(train, TrainingData):
            return train
        return self._data_of(train, data_scheme)

    def _set_theta(self, theta: np.ndarray | None, what: str) -> None:
        """θ of this model's size (zeros if None); InputError naming the size otherwise."""
        size = self.P + self.L * self.L + 2 * self.L
        theta = np.zeros(size) if theta is None else np.asarray(theta, dtype=float)
        if theta.shape != (size,):
            raise InputError(f"{theta.size} parameters do not fit {self.P} state "
                             f"weights and {self.L} {what}")
        self.theta_ = theta
        self._w_cache = None

    @property
    def free(self) -> np.ndarray:
        """θ's entries that are parameters (all of them unless a subclass fixes some)."""
        return np.ones(len(self.theta_), bool)

    def copy(self, theta: np.ndarray | None = None) -> "ChainCRF":
        """A fitted copy (its own settings), with ``theta`` if given."""
        state = self._fitted_state()
        state["theta"] = self.theta_.copy() if theta is None else theta
        state["settings"] = dict(self.settings_)
        return type(self)(**self.get_params())._set_state(**state)

    def __setstate__(self, state: dict) -> None:
        """Unpickle, a model pickled before fitted state ended in ``_`` too."""
        self.__dict__.update(renamed_state(state, type(self)))

    def lattice(self, x: Any) -> Lattice:
        """The lattice of one input (:meth:`lattices` of one)."""
        return self.lattices([x])[0]

    def lattices(self, X: Sequence[Any], require_probabilities: bool = True) -> list[Lattice]:
        """One lattice per input, with one feature transform and one product.  Scores
        are θ·φ/T (:attr:`temperature`); a max-margin model that is not calibrated is
        refused (:meth:`require_probabilities`) unless ``require_probabilities=False``
        (MAP, which no positive scale changes)."""
        self._check_fitted()
        if require_probabilities:
            self.require_probabilities()
        X = self._inputs(X)
        ch = self.chain(self.theta_ / self.temperature, self.fmap_.transform(X))
        out, k = [], 0
        for x in X:
            out.append(ch.lattice(k, k + len(x)))
            k += len(x)
        return out

    def _solver_name(self, objective: lo.Objective, data: TrainingData) -> str | None:
        """The solver to run in place of the objective's own (None: the objective's);
        a subclass refuses here what it does not train."""
        return None

    def solver(self, objective: lo.Objective, data: TrainingData, *, l2: float,
               beta: float, loss: str, tol: float | None, executor: Any) -> Solver:
        """The solver of ``objective`` (:class:`fstchunk.learn.loop.Trainer` runs it) from
        the table :data:`.solvers.SOLVERS`: L-BFGS for the smooth objectives, BCFW for
        max-margin, passes of the averaged perceptron (or the subclass's choice)."""
        name = self._solver_name(objective, data)
        return make_solver(self, objective, data, l2=l2, beta=beta, loss=loss, tol=tol,
                           executor=executor, name=name, kind=self.noun)

    def fit(self, X: Any, y: Any = None, *, dev: Any = None, **options: Any) -> "ChainCRF":
        """Learn from the training set ``X`` (with labels ``y`` where the feature map
        keeps them apart); ``self``.  The model learns its feature map, tags and pairs,
        then θ from 0; with ``warm_start=True`` a fitted model keeps them and trains on
        from its θ (the CLI's ``--init``); prepared :class:`.design.TrainingData` of a
        fitted model keep them, θ from 0 unless ``warm_start``.  θ is optimised by
        :class:`fstchunk.learn.loop.Trainer` with the hyper-parameters (``l2=None``: the
        objective's default λ); ``options`` go to the trainer (``checkpoint``,
        ``resume``, ``callbacks``, ``executor``, ``progress`` (default off), ...); a
        hyper-parameter there is an InputError (set it with :meth:`set_params`).
        ``dev``: held-out data for the dev figure and ``select="dev"``."""
        self._refuse_parameters(options)
        train = self._train_input(X, y)
        dev = self._dev_input(dev)
        if isinstance(train, TrainingData):         # of this model's features and tags
            if not self.fitted:
                raise InputError(f"prepared training data belong to a fitted model; fit "
                                 f"an unfitted {type(self).__name__} on its training set")
            data = train
            if not self.warm_start:
                self.theta_ = np.zeros_like(self.theta_)
        elif self.warm_start and self.fitted:
            data = self.training_data(train)
        else:
            data = self._prepare(train)
        options.setdefault("progress", False)
        return Trainer(objective=self.objective, l2=self.l2, beta=self.beta, loss=self.loss,
                       max_iter=self.max_iter, tol=self.tol, select=self.select, dev=dev,
                       **options).fit(self, data)
