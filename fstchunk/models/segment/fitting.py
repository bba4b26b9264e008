"""How a segment model learns (:class:`Fitting`, a base of
:class:`~.model.SegmentModel`): θ = W as the training loop's parameter vector
(``theta_``), the training data, the solver, the dev F and :meth:`Fitting.fit`, which
runs :class:`fstchunk.learn.loop.Trainer` (objective ``multilabel``).

The estimator contract (:mod:`fstchunk.models.estimator`) as the segment model keeps it:

* hyper-parameters (constructor): ``D``, ``max_gap``, ``k``, ``restrictions``,
  ``threshold``, ``average``, ``seed``, ``max_sweeps``, ``predicates``, ``max_iter``,
  ``warm_start``; checked by ``fit`` (:func:`.files.check_hyper`), never rewritten;
* run options (``fit``'s keywords): the Trainer's (``select``, ``dev_every``,
  ``checkpoint``, ``checkpoint_every``, ``resume``, ``output``, ``progress``, ``log``,
  ``callbacks``, ...), ``identity`` and ``record`` (what the run's files are) and
  ``dev_restrictions`` (how the dev set is decoded): they say how to run and measure,
  not what to learn;
* fitted state: ``types_``, ``type_index_``, ``W_`` (θ; ``theta_`` its flat view),
  ``pos_``, ``max_gap_``, ``threshold_``, ``restrictions_``, ``settings_``,
  ``layout_``, ``scheme_`` (None: segment sets have no tag scheme), ``other_weights_``.

Pitfall: ``warm_start=True`` on a fitted model is refused: the learner's state (its
last W, the averaging accumulator U, the visits) is not in the model, so training on
from θ would not be the run continued; a checkpoint holds it (``resume=True``).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from ...core.errors import InputError
from ...io.segments import SegSentence, iter_types
from ...learn import objectives as lo
from ...learn.loop import Trainer
from .cache import FeatureCache
from .features import feature_version
from .files import check_hyper, restriction_flags, restriction_text
from .train import HildrethSolver, SegmentData, max_gap_of, segment_f


class Fitting:
    """The training side of :class:`~.model.SegmentModel` (module doc)."""

    @property
    def theta_(self) -> np.ndarray:
        """θ: ``W_`` flattened (a view; D·T entries, type by type within a feature)."""
        self._check_fitted()
        return self.W_.ravel()

    @theta_.setter
    def theta_(self, value: np.ndarray) -> None:
        self._check_fitted()
        value = np.asarray(value, dtype=np.float64)
        if value.size != self.W_.size:
            raise InputError(f"θ has {value.size} entries; this model has D × T = "
                             f"{self._hp.D} × {len(self.types_)}")
        self.W_ = np.ascontiguousarray(value.reshape(self.W_.shape))

    def training_data(self, train: Sequence[SegSentence] | SegmentData) -> SegmentData:
        """The checked training sentences (:meth:`.train.SegmentData.of`); an unfitted model
        learns its types, POS use, max gap and layout from them (W = 0), a fitted one
        refuses sentences with types it does not know."""
        data = train if isinstance(train, SegmentData) else SegmentData.of(train)
        sents = data.sentences
        types = list(iter_types(sents))
        if not self.fitted:
            gap = max_gap_of(sents) if self.max_gap == "auto" else "auto"
            self._fitted(types, pos=all(s.pos is not None for s in sents), max_gap=gap)
            self.layout_ = self.layout_of(sents)
        elif any(t not in self.type_index_ for t in types):
            unknown = [t for t in types if t not in self.type_index_]
            raise InputError(f"{sents[0].source}: segment types {', '.join(unknown)} are not "
                             f"among the model's ({', '.join(self.types_)})")
        return data

    def solver(self, objective: lo.Objective, data: SegmentData, *, l2: float, beta: float,
               loss: str, tol: float | None, executor: Any) -> HildrethSolver:
        """The online multilabel learner (:class:`.train.HildrethSolver`, from the table
        :data:`fstchunk.models.solvers.SOLVERS`) with this model's ``seed``, ``average``
        and ``max_sweeps``; it answers :meth:`dev_f` while it runs."""
        from ..solvers import make_solver          # the table imports this package
        self._learner = make_solver(self, objective, data, l2=l2, beta=beta, loss=loss,
                                    tol=tol, executor=executor, kind="a segment model")
        return self._learner

    def dev_f(self, dev: Sequence[SegSentence]) -> float:
        """F (percent) over exact (type, positions) matches on ``dev``; while a solver
        trains this model, also the history's dev F (:meth:`.train.HildrethSolver.dev_f`)."""
        return self._learner.dev_f(dev) if self._learner is not None else segment_f(self, dev)

    def run_identity(self) -> dict:
        """What a checkpoint of this model's training must match (Trainer ``identity``)."""
        self._check_fitted()
        hp = self._hp
        return {"types": json.dumps(self.types_), "pos": self.pos_, "D": hp.D,
                "max_gap": self.max_gap_, "k": hp.k,
                "features": feature_version(hp.predicates),
                "restrictions": restriction_text(self.restrictions_),
                "seed": hp.seed, "average": hp.average, "max_sweeps": hp.max_sweeps,
                **({"threshold": hp.threshold} if hp.threshold else {})}  # dev F reads it

    def fit(self, X: Sequence[SegSentence], y: None = None, *,
            dev: Sequence[SegSentence] | None = None, **options: Any) -> "Fitting":
        """Learn from the sentences ``X`` (``y`` stays None) afresh (the fitted state of :meth:`training_data`, then
        ``max_iter`` epochs of the online learner) through
        :class:`fstchunk.learn.loop.Trainer`; ``options`` are how to run, never what to
        learn (a hyper-parameter among them: InputError): the trainer's (``select``,
        ``checkpoint``, ``resume``, ``output``, ``callbacks``, ``progress``, ...; dev F
        and checkpoints every epoch and no progress unless asked) and
        ``identity`` (more fields a resumed run must match: the CLI's training file
        digest), ``record`` (entries for ``settings_``: the files' names),
        ``dev_restrictions`` (those of the decoding dev F measures, default the model's;
        ``segment train`` with a CoNLL dev file: also no-overlap and contiguous, as its
        decoding).  Sets ``settings_`` ``select`` and ``selected_epoch`` (the epoch θ is
        from); ``self``.  ``warm_start=True`` on a fitted model is refused: the learner
        starts from W = 0 (its state, W, U and the visits, is in a checkpoint, not the
        model: ``resume=True``)."""
        self._refuse_parameters(options)
        self._no_labels(y)
        sentences = X
        identity = options.pop("identity", None)
        record = options.pop("record", None)
        dev_restrictions = options.pop("dev_restrictions", None)
        options.setdefault("progress", False)
        options.setdefault("dev_every", 1)
        options.setdefault("checkpoint_every", 1)
        select = options.get("select", "last")
        hp = check_hyper(self.get_params())
        if hp.warm_start and self.fitted:
            raise InputError("warm_start=True: a segment model cannot train on from its "
                             "weights (the online learner's state is in a checkpoint, not "
                             "the model); fit afresh (warm_start=False), or continue a run "
                             "from its checkpoint (checkpoint=..., resume=True)")
        self._unfit()
        data = self.training_data(sentences)
        self.settings_ = dict(record or {})
        self._dev_flags = None if dev_restrictions is None or not dev else \
            restriction_flags(dev_restrictions)                 # no dev: nothing to measure
        run = {**self.run_identity(), **(identity or {})}
        if self._dev_flags is not None and self._dev_flags != self.restrictions_:
            run["dev_restrictions"] = self.settings_["dev_restrictions"] = restriction_text(
                self._dev_flags)
        trainer = Trainer(lo.MULTILABEL, max_iter=hp.max_iter, dev=dev, identity=run,
                          **options)
        self.settings_["select"] = select
        self._cache = FeatureCache(self)
        try:
            trainer.fit(self, data)
        finally:
            self._learner, self._cache, self._dev_flags = None, None, None
        self._note_selection()
        return self

    def _note_selection(self) -> None:
        """A finished run's ``settings_`` (the Trainer's ``iterations`` recorded) also
        name the epoch θ is from: ``selected_epoch``, the best on dev or the last."""
        s = self.settings_
        if "iterations" in s and "iteration" in s:
            s["selected_epoch"] = s.get("selected_iteration", s["iteration"])

