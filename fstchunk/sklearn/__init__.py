"""``from fstchunk.sklearn import CRF``: a drop-in for ``sklearn_crfsuite.CRF`` (0.5).

The same constructor parameters (names, defaults: None means CRFsuite's default for
the algorithm), the same ``X`` (a sequence is a list of items, python-crfsuite's
token features: :mod:`fstchunk.models.attributes`) and ``y``, the same methods and
fitted attributes, scikit-learn's conventions (``get_params``/``set_params``,
``clone``, ``cross_val_score(n_jobs=2)``, pickling).  The model is
:class:`fstchunk.models.attribute_crf.AttributeCRF`, trained through
:class:`fstchunk.learn.loop.Trainer`.

**Scale of c1, c2.**  CRFsuite minimises −Σ_i log p(y_i|x_i) + c1‖θ‖₁ + c2‖θ‖² over the
N training sequences (lib/crf/src/train_lbfgs.c); fstchunk's objectives are means per
sentence, (1/N)Σ_i ℓ_i + λ‖θ‖² + μ‖θ‖₁, so λ = c2/N and μ = c1/N: the same optimum.
The loss in ``training_log_`` is on CRFsuite's scale (N times fstchunk's).

The parameters, CRFsuite's and fstchunk's own (``scheme``, ``objective``, ``beta``,
``workers``, ``literal_labels``), are the class's (:class:`CRF`).  On top:
``predict(X, decoder="meu", beta=...)``, ``predict_chunks(X)``, ``expected_f(X, y)``;
partial labels in ``y`` (a set of tags, or ``?``, ``B-PER|O``, ``*-PER``, ...: the
marginal likelihood of what they allow, lbfgs and ml only;
:mod:`fstchunk.models.partial_labels`).

Pitfalls: ``classes_`` lists the labels seen in y in CRFsuite's order (first
appearance), as sklearn-crfsuite's (partial labels: the tags they name, ``?``
none); the tags a chunk scheme needs that y lacks are in ``model_.tags_`` and in the keys of ``predict_marginals``; ``state_features_``,
``transition_features_`` and ``attributes_`` hold the non-zero weights only, as a
CRFsuite model file does, and ``transition_features_`` each transition the scheme
forbids as ``-inf``; ``size_`` is the size of the CRFsuite model file
(:mod:`.modelfile`).
"""

from __future__ import annotations

import os
import time
from typing import Any, Sequence

import numpy as np

from ..core.namespace import public_dir
from ..decoding.confidence import marginals_all, scored_chunks_all
from ..decoding.decoders import Decoder, decoder as get_decoder
from ..core.errors import InputError
from ..decoding.expected import expected_f_all
from ..learn import objectives as lo
from ..models.attribute_crf import AttributeCRF
from ..models.labels import check_labels
from ..models.attributes import check_sequences
from ..models.partial_labels import literal, refuse_open
from ..runtime.scale import executor
from . import modelfile
from .params import ALGORITHMS, KNOWN, CRFParams, resolve
from .tagger import CALIBRATE, Tagger, normalised_scores
from .traininglog import Recorder, TrainingLog, Watch

try:                                        # scikit-learn is an optional extra
    from sklearn.base import BaseEstimator
except ImportError:                         # pragma: no cover - exercised without the extra
    from .params import BaseEstimator       # type: ignore[assignment]

__all__ = ["CRF", "ALGORITHMS", "OBJECTIVES"]


class CRF(CRFParams, BaseEstimator):
    """sklearn_crfsuite.CRF's drop-in: the same parameters, methods and fitted
    attributes, with exact entity confidences, MEU decoding and expected F on top.

    None means CRFsuite's default for the algorithm (:data:`ALGORITHMS`); c1 and c2
    are on CRFsuite's scale (module doc).

    Args:
        algorithm: ``lbfgs`` (default), ``l2sgd``, ``ap``, ``pa`` or ``arow``.
        min_freq: keep a feature seen at least this often (CRFsuite's feature.minfreq).
        all_possible_states: every (attribute, label) pair a feature.
        all_possible_transitions: every label pair a transition feature.
        c1: L1 on the summed log-likelihood (lbfgs: OWL-QN).
        c2: L2 on the summed log-likelihood (lbfgs, l2sgd).
        max_iterations: the most iterations (lbfgs: until its stopping test; l2sgd
            1000; ap, pa, arow 100).
        num_memories: L-BFGS's memory (6).
        epsilon: the stopping tolerance (lbfgs: relative improvement; ap, pa, arow:
            the loss per sequence).
        period: lbfgs, l2sgd: the iterations the improvement test looks back.
        delta: lbfgs, l2sgd: the least relative improvement over ``period``.
        linesearch: ``MoreThuente``, ``Backtracking`` or ``StrongBacktracking``.
        max_linesearch: the most line-search trials (20).
        calibration_eta: l2sgd's initial learning rate.
        calibration_rate: l2sgd's factor on the rate while it searches.
        calibration_samples: l2sgd: the sequences its rate search reads.
        calibration_candidates: l2sgd: the rates its search tries.
        calibration_max_trials: l2sgd: the most trials of its search.
        pa_type: 0 (PA), 1 (PA-I) or 2 (PA-II).
        c: pa's aggressiveness.
        error_sensitive: pa, arow: the cost counts the wrong labels.
        averaging: pa, arow: average the weights.
        variance: arow's initial variance.
        gamma: arow's trade-off.
        verbose: one line per iteration on standard output.
        model_filename: where ``fit`` writes the model as a CRFsuite model file
            (``.npz``: fstchunk's); an existing file of either kind is loaded.
        keep_tempfiles: keep the temporary model file (``modelfile.name``).
        trainer_cls: refused unless None (there is no pycrfsuite trainer here).
        scheme: ``"auto"``: labels that are chunk tags of a scheme give a distribution
            over its valid sequences, other labels an ordinary chain; a scheme name;
            None: CRFsuite's unconstrained chain.
        objective: a name of :data:`OBJECTIVES` (``meu-weighted:T=w,...``: weights).
        beta: β of F_β for the expected-F objectives.
        workers: processes that share the objective's statistics.
        literal_labels: read every string of ``y`` as one label, never as a partial
            label (``B-PER|O``, ``?``, ...).

    Attributes:
        classes_: the labels of ``y`` in order of first appearance.
        scheme_: the scheme the model uses (``"none"``: the unconstrained chain).
        model_: the fitted :class:`fstchunk.AttributeCRF`.
        training_log_: CRFsuite's log: ``iterations``, ``last_iteration``, ``featgen_*``.
        state_features_: {(attribute, label): weight}, the non-zero ones.
        transition_features_: {(label, label): weight}; a forbidden one is ``-inf``.
        tagger_: python-crfsuite's Tagger over the model (``tag``, ``marginal``, ``dump``).

    Raises:
        InputError: an unknown or invalid parameter, or data that is not sequences of
            items and labels, naming where.

    Examples:
        >>> from fstchunk.sklearn import CRF
        >>> X = [[{"w": "Jan"}, {"w": "woont"}, {"w": "in"}, {"w": "Gent"}],
        ...      [{"w": "Marie"}, {"w": "werkt"}, {"w": "in"}, {"w": "Brugge"}]]
        >>> y = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "O", "O", "B-LOC"]]
        >>> crf = CRF(c2=0.1, max_iterations=50).fit(X, y)
        >>> crf.classes_, crf.scheme_
        (['B-PER', 'O', 'B-LOC'], 'IOB2')
        >>> list(crf.predict(X[:1])[0])
        ['B-PER', 'O', 'O', 'B-LOC']
        >>> [(c.type, c.start, c.end, c.p > 0.5) for c in crf.predict_chunks(X[:1])[0]]
        [('PER', 0, 1, True), ('LOC', 3, 4, True)]
    """

    def set_params(self, **params: Any) -> "CRF":
        """scikit-learn's set_params; an unknown name is one InputError naming it."""
        known = self.get_params(deep=False)
        for name in params:
            if name not in known:
                raise InputError(f"unknown parameter {name!r} of fstchunk.sklearn.CRF; the "
                                 f"parameters are {', '.join(sorted(known))}")
        return super().set_params(**params)

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Sequence[Any], y: Any, X_dev: Sequence[Any] | None = None,
            y_dev: Any = None) -> "CRF":
        """Train on sequences ``X`` and labels ``y`` (``X_dev``, ``y_dev``: held-out data
        whose figure — conlleval F, or token accuracy without a scheme — the log records
        each iteration)."""
        if (X_dev is None) != (y_dev is None):
            raise InputError("Pass both X_dev and y_dev to use the holdout data")
        self.__dict__.pop("_tagger", None)
        self._forget_file()
        X, y = self._data(X, y)                   # iterators read once: N is len(X)
        if X_dev is not None:
            X_dev, y_dev = self._data(X_dev, y_dev, "X_dev", "y_dev")
        run = resolve(self, len(X))
        model = AttributeCRF(self.scheme, min_freq=run.min_freq,
                             all_possible_states=run.all_possible_states,
                             all_possible_transitions=run.all_possible_transitions,
                             objective=run.objective, l2=run.l2, l1=run.l1, beta=self.beta,
                             max_iter=run.max_iter, tol=run.tol, algorithm=run.algorithm,
                             options=run.options)
        log = TrainingLog()
        dev = (X_dev, y_dev) if X_dev is not None else None
        watch = Watch() if run.algorithm == "lbfgs" else None
        record = Recorder(log, run.algorithm, max(len(X), 1), run.l1, dev, watch,
                          bool(self.verbose))
        if watch is not None:                 # the log's trials and error norm
            built = model.smooth_solver

            def smooth_solver(call):
                solver = built(call)
                if callable(getattr(solver, "fun", None)):
                    solver.fun = watch.wrap(solver.fun)
                return solver
            model.smooth_solver = smooth_solver
        ex = (executor(self.workers) if lo.objective(run.objective).spreads
              and run.algorithm == "lbfgs" else None)
        began = time.perf_counter()
        try:
            model.fit(X, y, dev=dev, callbacks=[record], dev_every=1 if dev else 10,
                      executor=ex)
        finally:
            model.__dict__.pop("smooth_solver", None)
            if ex is not None:
                ex.close()
        log.record_fit(model, time.perf_counter() - began)
        modelfile.record_anchor(model, X)
        self.model_, self.training_log_ = model, log
        began = time.perf_counter()
        if self.model_filename:
            modelfile.save(model, self.model_filename)
        log.storing_seconds = time.perf_counter() - began
        return self

    @property
    def _model(self) -> AttributeCRF | None:
        """The fitted model; one loaded from ``model_filename`` when not fitted here."""
        model = self.__dict__.get("model_")
        if model is None and self.model_filename and os.path.exists(self.model_filename):
            model = self.model_ = modelfile.load(self.model_filename, self.scheme)
        return model

    @property
    def modelfile(self) -> modelfile.ModelFile:
        """sklearn-crfsuite's ``crf.modelfile``: its ``name`` is the CRFsuite model file
        python-crfsuite opens (``model_filename``, or a temporary file written when
        first asked for; :class:`.modelfile.ModelFile`)."""
        if self.model_filename:
            return modelfile.ModelFile(os.fspath(self.model_filename), False, True)
        current = self.__dict__.get("_modelfile")
        if current is None and self._model is not None:
            current = self._modelfile = modelfile.temporary(self._model,
                                                            bool(self.keep_tempfiles))
        return current or modelfile.ModelFile(None, True, bool(self.keep_tempfiles))

    def _forget_file(self) -> None:
        """A new fit: the temporary file of the old model goes (unless kept)."""
        old = self.__dict__.pop("_modelfile", None)
        if old is not None:
            old.cleanup()

    def _fitted(self) -> AttributeCRF:
        model = self._model
        if model is None:
            raise InputError("this CRF is not fitted yet: call fit(X, y) first (or give "
                             "model_filename of a saved model)")
        return model

    # ------------------------------------------------------------------ prediction
    def predict(self, X: Sequence[Any], decoder: "str | Decoder" = "map",
                beta: float = 1.0, utility: str = "conlleval") -> np.ndarray:
        """The labels of each sequence (an object array, as sklearn-crfsuite's):
        ``decoder`` map (Viterbi, the default), posterior, meu (maximum expected F_β of
        each sentence; ``utility="exact"``: of the exact-boundary F), meu-corpus (of the
        corpus's expected counts), or any :class:`fstchunk.decoding.decoders.Decoder`."""
        dec = get_decoder(decoder, beta=beta, utility=utility)
        model = self._fitted()
        if dec.needs_probabilities:
            model.require_probabilities(CALIBRATE)
        lats = model.lattices(X, require_probabilities=False)
        return _object_array(dec.tags(lats))

    def predict_single(self, xseq: Sequence[Any]) -> list[str]:
        """The Viterbi labels of one sequence (any model: Viterbi reads no probability)."""
        self._fitted()
        return self.tagger_.tag(xseq)

    def predict_marginals(self, X: Sequence[Any]) -> np.ndarray:
        """Per sequence, per token, {label: Pr(y_t = label | x)}."""
        model = self._fitted()
        normalised_scores(model)                 # ap, pa, arow: sklearn-crfsuite's reading
        return _object_array([_marginal_dicts(model.tags_, m) for m in marginals_all(
            model.lattices(X, require_probabilities=False))])

    def predict_marginals_single(self, xseq: Sequence[Any]) -> list[dict]:
        """:meth:`predict_marginals` of one sequence."""
        model = self._fitted()
        normalised_scores(model)
        return _marginal_dicts(model.tags_, model.lattices(
            [xseq], require_probabilities=False)[0].marginals())

    def predict_chunks(self, X: Sequence[Any], decoder: "str | Decoder" = "map",
                       beta: float = 1.0, utility: str = "conlleval") -> list[list[Any]]:
        """Per sequence, the chunks of its decoded labels (``decoder`` as :meth:`predict`),
        each a :class:`fstchunk.decoding.confidence.ScoredChunk` (type, start, end exclusive, p)
        with its exact marginal probability; a chunk scheme only."""
        model = self._fitted()
        model.space_.require_chunks("predict_chunks")
        dec = get_decoder(decoder, beta=beta, utility=utility)
        model.require_probabilities(CALIBRATE)
        lats = model.lattices(X)
        return scored_chunks_all(lats, dec.tags(lats))

    def expected_f(self, X: Sequence[Any], y: Any, beta: float = 1.0) -> np.ndarray:
        """E[F_β(ŷ | y)] per sequence, ŷ drawn from the model (the training direction of
        :func:`fstchunk.decoding.expected.expected_f`); a chunk scheme only."""
        model = self._fitted()
        model.space_.require_chunks("expected_f")
        model.require_probabilities(CALIBRATE)
        X, y = self._data(X, y)                  # a partial label: refused by name
        refuse_open(y, "y", "expected F is taken against one tag sequence per sequence")
        return np.array([r.f for r in expected_f_all(model.lattices(X), y, beta)])

    def calibrate(self, X: Sequence[Any], y: Any) -> float:
        """Fit the temperature T of p(y|x) ∝ exp(score/T) on held-out (X, y) (not the
        training set): what a margin-trained model (ap, pa, arow, max-margin) needs
        before marginals, MEU or confidences (:mod:`fstchunk.models.calibrated`)."""
        self.__dict__.pop("_tagger", None)
        return self._fitted().calibrate(self._data(X, y), source="calibrate(X, y)")

    def _data(self, X: Any, y: Any, what_x: str = "X", what_y: str = "y"
              ) -> tuple[list, list]:
        """(X, y) as lists, checked (:func:`~fstchunk.models.attributes.check_sequences`,
        :func:`~fstchunk.models.attribute_crf.check_labels`): iterators are read once, as
        sklearn-crfsuite reads them; with ``literal_labels`` every string label a
        :class:`~fstchunk.models.partial_labels.Literal`."""
        if not isinstance(self.literal_labels, bool):
            raise InputError(f"literal_labels must be True or False, got "
                             f"{self.literal_labels!r}")
        X = check_sequences(X, what_x)
        return X, check_labels(X, literal(y) if self.literal_labels else y, what_y, True)

    def score(self, X: Sequence[Any], y: Any) -> float:
        """Token accuracy (sklearn-crfsuite's: ``flat_accuracy_score``) against one
        label per token (a partial label of ``y`` is refused: it is no answer to count)."""
        X, y = self._data(X, y)                  # a partial label: refused by name
        refuse_open(y, "y", "score counts the tokens whose one label is predicted")
        pred = self.predict(X)
        flat = [a == b for p, g in zip(pred, y) for a, b in zip(p, g)]
        return float(np.mean(flat)) if flat else 0.0

    # ------------------------------------------------------------------ fitted attributes
    @property
    def tagger_(self) -> Tagger | None:
        if self._model is None:
            return None
        if self.__dict__.get("_tagger") is None or self._tagger.model is not self._model:
            self._tagger = Tagger(self._model)
        return self._tagger

    @property
    def classes_(self) -> list[str] | None:
        """The labels seen in y, in order of first appearance (sklearn-crfsuite's); the
        tags a chunk scheme adds stay internal (``model_.tags_`` lists them all)."""
        return None if self._model is None else self._model.classes

    @property
    def scheme_(self) -> str | None:
        """The scheme the model uses ("none": the unconstrained chain)."""
        return None if self._model is None else self._model.scheme_

    @property
    def size_(self) -> int | None:
        """Bytes of the model's CRFsuite model file (sklearn-crfsuite's)."""
        return None if self._model is None else int(self.tagger_.info().header["size"])

    @property
    def num_attributes_(self) -> int | None:
        """Attributes with a non-zero state weight."""
        return None if self._model is None else int(self.tagger_.info().header["num_attrs"])

    @property
    def attributes_(self) -> list[str] | None:
        """Those attributes, by their id in the CRFsuite model file."""
        if self._model is None:
            return None
        ids = self.tagger_.info().attributes
        return sorted(ids, key=lambda a: int(ids[a]))

    @property
    def state_features_(self) -> dict | None:
        return None if self._model is None else self.tagger_.info().state_features

    @property
    def transition_features_(self) -> dict | None:
        return None if self._model is None else self.tagger_.info().transitions

    @property
    def num_nonzero_(self) -> int | None:
        """Non-zero weights (state and transition features)."""
        if self._model is None:
            return None
        info = self.tagger_.info()
        return len(info.state_features) + sum(np.isfinite(w) for w in
                                              info.transitions.values())

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_tagger", None)
        state.pop("_modelfile", None)            # a temporary file: written again if asked
        return state




def _marginal_dicts(tags: Sequence[str], marg: np.ndarray) -> list[dict]:
    return [dict(zip(tags, row)) for row in marg.tolist()]


def _object_array(rows: list) -> np.ndarray:
    """A 1-D object array of the rows (np.array would make a 2-D array of rows of one
    length)."""
    out = np.empty(len(rows), dtype=object)
    out[:] = rows
    return out


#: the objectives ``objective=`` takes
OBJECTIVES = tuple(o.name for o in KNOWN)

from . import eli5 as _eli5                    # noqa: E402  (needs CRF defined)
_eli5.install()                              # eli5.explain_weights(crf), when eli5 is there

__dir__ = public_dir(globals(), __all__)
