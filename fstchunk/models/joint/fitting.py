"""The joint model as an estimator (:mod:`fstchunk.models.estimator`): its
hyper-parameters, :meth:`JointEstimator.fit`, its fitted state and what
:class:`fstchunk.learn.loop.Trainer` reads of it (its ``Learnable``).

The fitted state: ``scorer_`` (a :class:`~.scoring.PartScorer`: labels, templates,
vocabularies and the weights; read through ``chunk_labels_``, ``pos_labels_``,
``templates_``, ``vocabs_`` and ``theta_``), ``settings_`` (what training and
calibration recorded, the model file's settings), ``layout_`` (the training file's
:class:`~fstchunk.io.layout.Layout`, None when not recorded) and ``scheme_``
(``"IOB2"``, the chunk layer's scheme).  The names before the estimator contract
(``w``, ``theta``, ``settings``, ``layout``, ``chunk_labels``, ...) still read and write
these, with a :class:`~fstchunk.core.errors.FstchunkDeprecationWarning`.

Pitfalls:

* ``variant``, ``collapse_pos`` and ``np_only`` are hyper-parameters (what to build);
  ``variant_`` and ``settings_["collapse_pos"]``/``["np_only"]`` what was built.  A
  ``warm_start`` fit, or one on :class:`~.scoring.Encoded` sentences, keeps the fitted
  encoding, and refuses hyper-parameters that ask for another one.
* Encoded sentences (:func:`~.data.model_for`'s) carry the vocabulary ids of the model
  that encoded them: a fit on them needs that model (fitted), and restarts its weights
  from zero unless ``warm_start``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...core.errors import InputError
from ...io.conll import Sentence
from ...io.layout import Layout
from ...learn import objectives as lo
from ...learn.loop import SELECT, Trainer
from ...learn.loss import Loss
from ...learn.solvers import LBFGS, Solver
from ...runtime.scale import split
from ..estimator import Estimator, FittedAlias
from .build import check_variant, learn_scorer
from .corpus import Layered, layered, scores
from .encoding import encode
from .scoring import Encoded, PartScorer, Size
from .structure import Parts, Structure
from .train import (JOINT_OBJECTIVES, JointPerceptronSolver, algorithm_name,
                    check_training, default_l2, nll_statistics)
from .train import algorithm as objective_of

#: the settings of what was built (kept by a fit that keeps the encoding)
STRUCTURAL = ("collapse_pos", "np_only", "columns", "kind")


def _scoring(name: str, doc: str) -> property:
    return property(lambda self: getattr(self.scorer_, name), doc=doc)


class JointEstimator(Estimator):
    """Hyper-parameters, fit and the fitted state of :class:`~.model.JointModel`
    (module doc; the class doc is the model's)."""

    kind = "joint"
    _fitted_attribute = "scorer_"

    def __init__(self, variant: str = "joint", algorithm: str | lo.Objective = "perceptron",
                 max_iter: int = 10, l2: float | None = None, tol: float | None = None,
                 select: str = "last", collapse_pos: bool = False, np_only: bool = False,
                 warm_start: bool = False):
        self.variant = variant
        self.algorithm = algorithm
        self.max_iter = max_iter
        self.l2 = l2
        self.tol = tol
        self.select = select
        self.collapse_pos = collapse_pos
        self.np_only = np_only
        self.warm_start = warm_start

    # ---------------------------------------------------------- fitted state
    chunk_labels_ = _scoring("chunk_labels", "The chunk types, then ``O``.")
    pos_labels_ = _scoring("pos_labels", "The token labels (POS tags; a chunker's chunk tags).")
    templates_ = _scoring("templates", "The feature templates, by part kind.")
    vocabs_ = _scoring("vocabs", "Each template's vocabulary (id 0: unseen).")
    c = _scoring("c", "The number of chunk labels.")
    p = _scoring("p", "The number of token labels.")
    size = _scoring("size", "The number of weights.")
    outside = _scoring("outside", "The index of ``O`` among the chunk labels.")
    chunk_tags = _scoring("chunk_tags", "The IOB2 chunk tags of the chunk layer.")
    lexical = _scoring("lexical", "Which weights are lexicalised (the first-iteration trick).")

    @property
    def theta_(self) -> np.ndarray:
        """The weight vector (θ of :class:`~fstchunk.learn.loop.Trainer`)."""
        return self.scorer_.w

    @theta_.setter
    def theta_(self, value: np.ndarray) -> None:
        value = np.asarray(value, dtype=float)
        if value.shape != (self.scorer_.size,):
            raise InputError(f"weight vector has shape {value.shape}, expected "
                             f"{(self.scorer_.size,)}")
        self.scorer_.w = value

    @property
    def variant_(self) -> str:
        """The variant the model was built as: ``joint``, ``tagger`` or ``chunker``."""
        return self.settings_.get("kind", "joint")

    @property
    def data_scheme_(self) -> str | None:
        """The scheme of the training file's chunk column (None if not recorded)."""
        return self.layout_.data_scheme if self.layout_ is not None else None

    # the names before the estimator contract
    chunk_labels = FittedAlias("chunk_labels_")
    pos_labels = FittedAlias("pos_labels_")
    templates = FittedAlias("templates_")
    vocabs = FittedAlias("vocabs_")
    w = FittedAlias("theta_")
    theta = FittedAlias("theta_")
    settings = FittedAlias("settings_")
    layout = FittedAlias("layout_")
    scheme = FittedAlias("scheme_")
    data_scheme = FittedAlias("data_scheme_")

    def _set_state(self, scorer: PartScorer, settings: dict, layout: Layout | None) -> None:
        """The fitted state: ``scorer_``, ``settings_``, ``layout_``, ``scheme_``."""
        self.scorer_, self.settings_, self.layout_ = scorer, settings, layout
        self.scheme_ = "IOB2"

    # ---------------------------------------------------------------- scores
    #: observation columns of a sentence (:meth:`.scoring.PartScorer.columns`)
    columns = staticmethod(PartScorer.columns)

    def parts(self, x: Encoded, w: np.ndarray | None = None) -> Parts:
        """Part scores of one sentence under ``w`` (default: θ)."""
        return self.scorer_.parts(x, w)

    def features(self, x: Encoded, parts: Parts) -> tuple[np.ndarray, np.ndarray]:
        """Σ_parts value·f(x, part), sparse (:meth:`.scoring.PartScorer.features`)."""
        return self.scorer_.features(x, parts)

    def encode(self, cols: dict, pos: Sequence[str] | None = None,
               chunks: Sequence[str] | None = None, where: str = "") -> Encoded:
        """Observation ids of one sentence (:meth:`.scoring.PartScorer.encode`)."""
        return self.scorer_.encode(cols, pos, chunks, where)

    def structure(self, pos: Sequence[str], chunk_tags: Sequence[str], where: str = ""
                  ) -> Structure:
        """Gold structure from POS labels and IOB2 chunk tags."""
        return self.scorer_.structure(pos, chunk_tags, where)

    def tags(self, y: Structure) -> tuple[list[str], list[str]]:
        """(POS tags, IOB2 chunk tags) of a structure."""
        return self.scorer_.tags(y)

    def loss(self, gold: Structure, y: Structure) -> float:
        """Hamming loss over both layers: wrong POS labels + wrong chunk tags."""
        gp, gc = self.tags(gold)
        yp, yc = self.tags(y)
        return float(sum(a != b for a, b in zip(gp, yp)) + sum(a != b for a, b in zip(gc, yc)))

    # --------------------------------------------------------------- fitting
    def _checked(self) -> lo.Objective:
        """The hyper-parameters checked (the errors ``model_for`` and ``fit`` gave); the
        objective of ``algorithm``.  ``max_iter``, ``l2``, ``tol``: the trainer's checks."""
        if not isinstance(self.variant, str):
            raise InputError(f"variant={self.variant!r}: JointModel's constructor takes the "
                             f"hyper-parameters (variant='joint', algorithm=...); a model of "
                             f"given labels and vocabularies is JointModel.from_state(...)")
        check_variant(self.variant)
        for name in ("collapse_pos", "np_only", "warm_start"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.select not in SELECT:
            raise InputError(f"select must be one of {', '.join(SELECT)}, got {self.select!r}")
        return objective_of(self.algorithm)

    def _same_reading(self, why: str) -> None:
        """InputError when the hyper-parameters ask for another encoding than the fitted one."""
        built = {"variant": self.variant_,
                 "collapse_pos": bool(self.settings_.get("collapse_pos", False)),
                 "np_only": bool(self.settings_.get("np_only", False))}
        for name, value in built.items():
            if getattr(self, name) != value:
                raise InputError(f"{name}={getattr(self, name)!r}, but the model was built with "
                                 f"{name}={value!r} and {why} keeps what was built: set "
                                 f"warm_start=False and fit on sentences to build anew")

    def fit(self, X: Sequence[Sentence | Layered | Encoded], y: None = None, *,
            dev: Sequence[Layered] | None = None, **options: Any) -> "JointEstimator":
        """Learn labels, templates, vocabularies and weights from the training set ``X``
        (``y`` stays None: the tags are in it) and return the model: sentences (read by :func:`~.corpus.layered` with ``collapse_pos`` and
        ``np_only``), :class:`~.corpus.Layered` ones (read as they are) or a fitted
        model's encoded ones (:func:`~.data.model_for`).  The weights, by
        :class:`fstchunk.learn.loop.Trainer`: ``algorithm`` ``perceptron`` (Algorithm
        4.1 with Collins' averaging) or ``mmvp`` (Algorithm 4.3), both with the
        first-iteration trick, ``max_iter`` epochs; or ``crf``: the mean NLL per sentence
        + λ‖w‖² by L-BFGS, ``max_iter`` iterations (``l2=None``:
        :data:`.train.DEFAULT_L2`); from zero, or with ``warm_start`` on a fitted model
        from its weights with its vocabularies.  ``dev``: layered held-out sentences
        (dev F, ``select="dev"``).  ``options``: how to run (``checkpoint``, ``resume``,
        ``callbacks``, ``executor``, ``progress`` (default off), ``dev_every``, ...),
        ``layout`` (the training file's :class:`~fstchunk.io.layout.Layout`, recorded)
        and ``record`` (entries for ``settings_``, e.g. ``columns``).  A calibration of
        earlier weights is dropped.  See :mod:`.train`."""
        self._refuse_parameters(options)
        if "iterations" in options:
            raise InputError(f"iterations is max_iter's older name, a hyper-parameter: set "
                             f"it with model.set_params(max_iter={options['iterations']!r}) "
                             f"or the constructor, then call fit()")
        for given in (y, dev):
            if isinstance(given, (str, bytes, lo.Objective)):
                raise InputError(f"JointModel.fit(X, y=None, *, dev=None): got {given!r}; the "
                                 f"algorithm is a hyper-parameter: model.set_params("
                                 f"algorithm={given!r}) or the constructor")
        self._no_labels(y)
        train = X
        objective = self._checked()
        layout, record = options.pop("layout", None), dict(options.pop("record", None) or {})
        options.setdefault("progress", False)
        trainer = Trainer(objective=objective, l2=default_l2(objective, self.l2),
                          max_iter=self.max_iter, tol=self.tol, select=self.select, dev=dev,
                          **options)                # its checks before the state changes
        train = list(train)
        if train and all(isinstance(x, Encoded) for x in train):
            if not self.fitted:
                raise InputError("encoded training sentences need the model that encoded "
                                 "them: fit an unfitted model on sentences or "
                                 "fstchunk.joint.layered(sentences)")
            self._same_reading("a fit on encoded sentences")
            if not self.warm_start:
                kept = {k: self.settings_[k] for k in STRUCTURAL if k in self.settings_}
                self.settings_ = {**kept, **record}
                self.theta_ = np.zeros(self.scorer_.size)
        elif self.warm_start and self.fitted:
            self._same_reading("warm_start=True")
            self.settings_.update(record)
            train = self._layered(train)
        else:
            data = self._layered(train)
            scorer, cols = learn_scorer(data, self.variant)
            self._set_state(scorer, {"collapse_pos": self.collapse_pos,
                                     "np_only": self.np_only, **record,
                                     "kind": self.variant}, None)
            train = [encode(self, d, c) for d, c in zip(data, cols)]
        if layout is not None:
            self.layout_ = layout if self.layout_ is None else self.layout_.union(layout)
        trainer.fit(self, train)
        return self

    def _layered(self, train: Sequence[Sentence | Layered]) -> list[Layered]:
        """Training sentences as :class:`~.corpus.Layered` (sentences read with
        ``collapse_pos`` and ``np_only``)."""
        raw = [x for x in train if isinstance(x, Sentence)]
        if raw and len(raw) != len(train):
            raise InputError("training data mixes sentences and layered sentences: give "
                             "one kind")
        if raw:
            return layered(raw, self.collapse_pos, self.np_only, gold=True)
        for i, x in enumerate(train):
            if not isinstance(x, Layered):
                raise InputError(f"training item {i + 1}: expected a sentence (read_conll) or "
                                 f"a layered one (fstchunk.joint.layered), got "
                                 f"{type(x).__name__}")
        return train

    # ------------------------------------------------------ the Trainer's side
    #: the objectives it trains (``--algorithm``: :data:`.train.ALGORITHMS`)
    objectives = JOINT_OBJECTIVES
    #: its own solvers of names of :data:`fstchunk.models.solvers.SOLVERS`
    own_solvers = {"perceptron": lambda m, c: JointPerceptronSolver(m, c.data, False),
                   "lbfgs": lambda m, c: LBFGS(
                       c.objective_loss.function(m, c.data, c.executor), c.tol)}

    def training_data(self, train: Sequence[Encoded | Layered]) -> list[Encoded]:
        """The encoded training sentences (:func:`encode` with gold; encoded ones pass
        through); InputError for none, or one without gold POS and chunk tags."""
        data = [x if isinstance(x, Encoded) else encode(self, x) for x in train]
        check_training(data)
        return data

    def solver(self, objective: lo.Objective, data: Sequence[Encoded], *, l2: float,
               beta: float, loss: str, tol: float | None, executor: Any) -> Solver:
        """L-BFGS over the mean NLL for ML (``crf``; the statistics over ``executor``'s
        partitions when given), the perceptron or MMVP's passes, by
        :func:`fstchunk.models.solvers.make_solver`; records the ``algorithm`` and the
        training sentences in the settings."""
        from ..solvers import make_solver          # the table imports this package
        for key in ("crf_iterations", "iterations"):
            self.settings_.pop(key, None)
        self.settings_.update(algorithm=algorithm_name(objective), sentences=len(data))
        return make_solver(self, objective, data, l2=l2, beta=beta, loss=loss, tol=tol,
                           executor=executor, kind="the joint model")

    def dev_f(self, dev: Sequence[Layered]) -> float:
        """Percent, of Viterbi decoding on held-out layered ``dev`` sentences (gold POS
        and chunks): conlleval chunk F1 for the joint model and a chunker, POS accuracy
        for a tagger (which predicts no chunk) — what ``joint train --select dev``
        selects on."""
        if not dev:
            raise InputError("no dev sentences to score")
        pos, chunks = zip(*(self.map_tags(d) for d in dev))
        s = scores(dev, pos, chunks)
        return s["pos_accuracy"] if self.variant_ == "tagger" else s["np_f1"]

    def statistics(self, data: Sequence[Encoded], theta: np.ndarray, loss: Loss
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The additive statistics of ``loss``'s smooth objective (ML: Σ NLL and its
        gradient, :func:`.train.nll_statistics`) over ``data`` at θ
        (:mod:`fstchunk.runtime.scale`)."""
        name = loss.objective.name
        if lo.objective(loss.objective, JOINT_OBJECTIVES) is not lo.ML:
            raise InputError(f"algorithm={name!r} is run by passes, not as a function of θ",
                             cli=f"--algorithm {name} is run by passes, not as a function of θ")
        return nll_statistics(self, data, theta)

    def partitions(self, data: Sequence[Encoded], parts: int
                   ) -> list[tuple["JointEstimator", list[Encoded]]]:
        """``data`` in ``parts`` runs of sentences of about equal token counts, each with a
        :meth:`scoring_copy` (the shards of :mod:`fstchunk.runtime.scale`)."""
        copy = self.scoring_copy()
        return [(copy, [data[i] for i in r]) for r in split([x.n for x in data], parts)]

    def scoring_copy(self) -> "JointEstimator":
        """This model without its vocabularies' strings (their sizes only) and settings:
        it scores encoded sentences but encodes none; what a worker receives."""
        s = self.scorer_
        copy = type(self)(variant=self.variant_)
        copy._set_state(PartScorer(s.chunk_labels, s.pos_labels, s.templates,
                                   [Size(len(v)) for v in s.vocabs]), {}, None)
        return copy
