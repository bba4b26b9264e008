"""A linear-chain CRF over weighted attributes and any labels (python-crfsuite's model).

    score(y | x) = Σ_i Σ_a x_{i,a}·w[a, y_i] + Σ_i trans[y_{i-1}, y_i]
    Pr(y | x) = exp(score) / Z(x)

with x_{i,a} the value of attribute a at token i (:mod:`fstchunk.models.attributes`:
python-crfsuite's items, CRFsuite's feature generation, ``min_freq``,
``all_possible_states``, ``all_possible_transitions``).  As in CRFsuite, θ holds a
weight for each state feature (attribute, label) and each transition feature kept;
the other entries of the shared θ layout (:class:`.pairchain.PairChain`: dense
transitions, start and end scores) are held at 0 (:attr:`AttributeCRF.free`, the
gradient masked), so the model is CRFsuite's.

**Labels**: ``scheme="auto"`` (default) takes the first of :data:`DETECT` under which
every label is a chunk tag and every training sequence is valid, else the
unconstrained chain; ``scheme=None`` (or ``"none"``) forces the unconstrained chain
(any labels, every transition allowed: :data:`fstchunk.schemes.tagspace.UNCONSTRAINED`); a
scheme name forces it (an invalid training sequence is refused, naming it).  With a
chunk scheme, Z sums over the scheme's valid sequences only, and the tags the data
lack for the scheme to be expressed are added after the labels seen (in order of
first appearance, as CRFsuite's).  Labels in ``y`` may be partial (sets of labels, ``?``,
``B-PER|O``, ...: the marginal likelihood, :mod:`.partial_labels`).

Training runs through :class:`fstchunk.learn.loop.Trainer` with the objectives of
:mod:`fstchunk.learn.objectives`; the solver is picked by ``algorithm`` (the
CRFsuite name) and its ``options``: ``lbfgs`` (L-BFGS; OWL-QN when ``l1 > 0``),
``l2sgd`` (:mod:`.sgd`), ``ap`` (the averaged perceptron of :mod:`.perceptron`), ``pa`` and
``arow`` (:mod:`.online`).  λ and μ (``l2``, ``l1``)
are on fstchunk's per-sentence scale: CRFsuite's c2 and c1 over N training
sequences are λ = c2/N and μ = c1/N (:mod:`fstchunk.sklearn` converts).

Files: kind ``attribute-crf``, npz + JSON (:mod:`fstchunk.models.io`): attribute names,
pairs, free transitions, θ; labels, scheme, settings.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np

from ..schemes import encodings as enc
from ..decoding.decoders import MAP
from ..core.errors import InputError, SchemeError
from ..learn import objectives as lo
from ..learn.solvers import LBFGS, Solver
from ..evaluation.chunks import evaluate
from ..schemes.tagspace import UNCONSTRAINED, TagSpace, canonical, missing_tags
from .attributes import AttributeMap, check_sequences, fit_attributes
from .labels import DETECT, check_labels, detect_scheme
from .design import TrainingData
from .io import Fields, load_model_file, save_model
from .batching import Gold
from . import partial_labels as pl
from .partial import PartialGold
from .chain_crf import ChainCRF
from .estimator import FittedAlias, renamed_state

#: the objectives an attribute CRF trains
ATTRIBUTE_OBJECTIVES = (lo.ML, lo.MEU, lo.MEU_EXACT, lo.MEU_MACRO, lo.MEU_PARTIAL,
                        lo.MEU_TYPE, lo.MEU_WEIGHTED, lo.MEU_CORPUS, lo.MAX_MARGIN, lo.PERCEPTRON, lo.PA, lo.AROW)
class AttributeCRF(ChainCRF):
    """A linear-chain CRF over weighted attributes and any labels, the model of
    python-crfsuite and sklearn-crfsuite (which :class:`fstchunk.sklearn.CRF` wraps):
    $\\mathrm{score}(y \\mid x) = \\sum_i \\sum_a x_{i,a}\\, w_{a, y_i}
    + \\sum_i \\mathrm{trans}_{y_{i-1}, y_i}$ (module doc).  A token is a dict of
    attributes (or a list of names); labels may be chunk tags, whose scheme is
    detected and then restricts Z to valid sequences, or any labels.  The constructor
    takes the hyper-parameters, :meth:`fit` learns; :meth:`lattices` gives each
    sequence's :class:`Lattice` for the decoders.

    Args:
        scheme: ``"auto"`` (detected from the labels), a scheme name, or ``None``
            (any labels, every transition allowed).
        min_freq: the fewest occurrences of an attribute to keep it (CRFsuite's).
        all_possible_states: a state feature for every (attribute, label) pair.
        all_possible_transitions: a transition feature for every label pair.
        objective: a name of :data:`fstchunk.OBJECTIVES`.
        l2: λ, the L2 penalty per sentence (``None``: the objective's default).
        l1: μ, the L1 penalty per sentence (OWL-QN when > 0).
        beta: β of F_β, for the expected-F objectives.
        loss: the max-margin loss, ``hamming`` or ``f``.
        max_iter: the most iterations (or epochs).
        tol: the stopping tolerance (``None``: the solver's default).
        select: which iterate to keep: ``last`` or ``dev`` (the best on dev).
        algorithm: CRFsuite's solver name: ``lbfgs``, ``l2sgd``, ``ap``, ``pa``, ``arow``.
        options: the solver's further settings (CRFsuite's names).
        warm_start: ``fit`` on a fitted model trains on from its θ, attributes and labels.

    Raises:
        InputError: an unknown hyper-parameter, or one the objective or algorithm
            does not take, or malformed ``X``/``y``, when fitting.
        SchemeError: labels that are not of a given ``scheme``, or an invalid sequence.

    Attributes:
        tags_: the model's labels, those of ``y`` first, then any its scheme adds.
        classes: the labels of ``y`` in order of first appearance.
        scheme_: the scheme used (``None``: unconstrained).
        theta_: θ, the weights (state features, transitions, start, end).
        settings_: what training recorded (iterations, solver, dev F, ...).

    Examples:
        >>> import fstchunk
        >>> X = [[{"w": "John"}, {"w": "ran"}], [{"w": "Mary"}, {"w": "sat"}, {"w": "down"}]]
        >>> y = [["B-PER", "O"], ["B-PER", "O", "O"]]
        >>> crf = fstchunk.AttributeCRF(max_iter=20).fit(X, y)
        >>> crf.scheme_, crf.tags_
        ('IOB2', ('B-PER', 'O', 'I-PER'))
        >>> fstchunk.decode_map(crf.lattices([[{"w": "Mary"}, {"w": "ran"}]])[0]).tags
        ['B-PER', 'O']
    """

    kind: ClassVar[str] = "attribute-crf"
    noun: ClassVar[str] = "an attribute CRF"
    objectives = ATTRIBUTE_OBJECTIVES
    calibrate_call = ("crf.calibrate(X_held_out, y_held_out) (fstchunk.sklearn.CRF; an "
                      "AttributeCRF itself: model.calibrate((X_held_out, y_held_out)))")

    def __init__(self, scheme: str | None = "auto", *, min_freq: float = 0.0,
                 all_possible_states: bool = False, all_possible_transitions: bool = False,
                 objective: str = "ml", l2: float | None = None, l1: float = 0.0,
                 beta: float = 1.0, loss: str = "hamming", max_iter: int = 100,
                 tol: float | None = None, select: str = "last", algorithm: str = "lbfgs",
                 options: dict | None = None, warm_start: bool = False):
        self.scheme, self.min_freq = scheme, min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.objective, self.l2, self.l1, self.beta, self.loss = objective, l2, l1, beta, loss
        self.max_iter, self.tol, self.select = max_iter, tol, select
        self.algorithm, self.options, self.warm_start = algorithm, options, warm_start

    theta = FittedAlias("theta_")
    tags = FittedAlias("tags_")
    fmap = FittedAlias("fmap_")
    pairs = FittedAlias("pairs_")
    settings = FittedAlias("settings_")
    transitions = FittedAlias("transitions_")
    space = FittedAlias("space_")

    def _set_state(self, fmap: AttributeMap, tags: Sequence[str], scheme: str | None,
                   pairs: np.ndarray, transitions: np.ndarray,
                   theta: np.ndarray | None = None, settings: dict | None = None
                   ) -> "AttributeCRF":
        """The fitted state (attribute map, labels, pairs, transition features, θ)."""
        self.space_ = TagSpace.of(tuple(tags), canonical(scheme))
        self.fmap_, self.tags_, self.scheme_ = fmap, self.space_.tags, self.space_.scheme
        self.pairs_ = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        self.transitions_ = np.asarray(transitions, dtype=bool).reshape(self.L, self.L)
        self._set_theta(theta, "labels")
        self.settings_ = dict(settings or {})
        return self

    @property
    def classes(self) -> list[str]:
        """The labels of the training y in order of first appearance, not the scheme's
        extra tags (partial labels, or no record: all ``tags``)."""
        seen = self.settings_.get("classes")
        return [t for t in seen if t in self.tags_] if isinstance(seen, list) else list(self.tags_)

    @property
    def free(self) -> np.ndarray:
        """θ's entries that are parameters: the state features, the transition features;
        not start and end (CRFsuite has neither)."""
        return np.concatenate([np.ones(self.P, bool), self.transitions_.ravel(),
                               np.zeros(2 * self.L, bool)])

    def _fitted_state(self) -> dict[str, Any]:
        return dict(fmap=self.fmap_, tags=self.tags_, scheme=self.scheme_, pairs=self.pairs_,
                    transitions=self.transitions_)

    def scoring_copy(self) -> "AttributeCRF":
        """What a worker of :mod:`fstchunk.runtime.scale` receives (the same model)."""
        return self.copy()

    # --------------------------------------------------------------- data
    def _prepare(self, train: tuple[Sequence[Any], Any]) -> TrainingData:
        """Fit labels, scheme, attributes, pairs and transitions on (X, y); θ = 0."""
        X, y = train
        X = check_sequences(X)
        y = check_labels(X, y, open_ok=True)
        if not X:
            raise InputError("no training sequences (X is empty)")
        if not (isinstance(self.min_freq, (int, float)) and not isinstance(self.min_freq, bool)
                and np.isfinite(self.min_freq)):
            raise InputError(f"min_freq must be a finite number, got {self.min_freq!r}")
        if pl.check_trainer(y, self.algorithm, self.objective):     # the marginal likelihood
            space, gold, fit = pl.fit_partial(
                X, y, self.scheme, DETECT, float(self.min_freq),
                bool(self.all_possible_states), bool(self.all_possible_transitions))
            auto = self.scheme == "auto"
            self._set_state(fit.attributes, space.tags, space.scheme, fit.pairs, fit.transitions,
                            settings={"min_freq": self.min_freq, "detected_scheme": auto,
                                      "classes": pl.named_labels(gold.masks, space.tags)})
            return TrainingData(fit.X, gold)
        y = [[str(t) for t in ys] for ys in y]          # a Literal label: plain from here
        order: dict[str, None] = {}
        for ys in y:
            order.update(dict.fromkeys(ys))
        labels = list(order)
        if self.scheme == "auto":
            scheme = detect_scheme(labels, y)
        else:
            scheme = canonical(self.scheme)
        if scheme != UNCONSTRAINED and self.scheme != "auto":   # auto: all valid
            for i, ys in enumerate(y):
                try:
                    enc.validate(ys, scheme)
                except SchemeError as e:
                    raise SchemeError(f"y[{i}]: {e}", e.position) from None
        if scheme != UNCONSTRAINED:
            labels += [t for t in missing_tags(labels, scheme) if t not in order]
        ix = {t: i for i, t in enumerate(labels)}
        gold = [np.array([ix[t] for t in ys], dtype=np.int64) for ys in y]
        fit = fit_attributes(X, gold, len(labels), float(self.min_freq),
                             bool(self.all_possible_states),
                             bool(self.all_possible_transitions))
        self._set_state(fit.attributes, labels, scheme, fit.pairs, fit.transitions,
                        settings={"min_freq": self.min_freq, "detected_scheme":
                                  self.scheme == "auto", "classes": list(order)})
        return TrainingData(fit.X, Gold(gold, self.tags_, self.scheme_))

    def _data_of(self, train: Any, data_scheme: str | None) -> TrainingData:
        """(X, y) under this model's attributes and labels."""
        X, y = train
        X = check_sequences(X)
        y = check_labels(X, y, open_ok=True)
        if pl.check_trainer(y, self.algorithm, self.objective):
            return TrainingData(self.fmap_.transform(X), pl.gold(y, self.space_))
        ix = {t: i for i, t in enumerate(self.tags_)}
        gold = []
        for i, ys in enumerate(y):
            for t, lab in enumerate(ys):
                if lab not in ix:
                    raise SchemeError(f"y[{i}][{t}]: label {lab!r} is not among the model's "
                                      f"labels {', '.join(self.tags_)}", t)
            if self.space_.chunked:
                try:
                    enc.validate(ys, self.scheme_)
                except SchemeError as e:
                    raise SchemeError(f"y[{i}]: {e}", e.position) from None
            gold.append(np.array([ix[t] for t in ys], dtype=np.int64))
        return TrainingData(self.fmap_.transform(X), Gold(gold, self.tags_, self.scheme_))

    def _inputs(self, X: Sequence[Any]) -> list:
        """Sequences of items (python-crfsuite's), checked."""
        return check_sequences(X)

    # --------------------------------------------------------------- training
    def _solver_name(self, objective: lo.Objective, data: TrainingData) -> str | None:
        """``l2sgd`` in place of L-BFGS when ``algorithm`` says so (module doc); refuses
        what ``algorithm``, ``l1`` and partial labels do not train."""
        l1 = self.l1
        if isinstance(l1, bool) or not isinstance(l1, (int, float, np.floating)) \
                or not np.isfinite(l1) or l1 < 0:
            raise InputError(f"l1 must be a finite number >= 0, got {l1!r}")
        if isinstance(data.gold, PartialGold) and self.algorithm != "lbfgs":
            raise InputError(f"partial labels are trained by algorithm='lbfgs' only, not "
                             f"{self.algorithm!r}")
        name = None
        if objective.smooth and self.algorithm == "l2sgd":
            if objective is not lo.ML or self.l1:
                raise InputError(f"algorithm 'l2sgd' trains the L2-regularised likelihood "
                                 f"(objective ml, no l1), not {objective.name}")
            name = "l2sgd"
        elif objective.smooth and self.algorithm != "lbfgs":
            raise InputError(f"algorithm {self.algorithm!r} does not train the smooth "
                             f"objective {objective.name}")
        elif not objective.smooth and self.l1:
            raise InputError(f"l1 (c1) applies to L-BFGS training (OWL-QN) only, not to "
                             f"{objective.name}")
        return name

    def smooth_solver(self, call: Any) -> Solver:
        """L-BFGS (OWL-QN with ``l1``) under CRFsuite's stopping test for a smooth
        objective (:func:`.solvers.make_solver` asks for it); the gradient of the
        entries that are not parameters (:attr:`free`) is 0, so they stay 0."""
        from ..learn.owlqn import OWLQN, Stopping
        opts = self.options or {}
        fun = call.objective_loss.function(self, call.data, call.executor)
        free = self.free

        def masked(theta: np.ndarray) -> tuple[float, np.ndarray]:
            value, grad = fun(theta)
            return value, np.where(free, grad, 0.0)
        stop = Stopping(len(call.data.gold), opts.get("epsilon"), opts.get("period"),
                        opts.get("delta"))
        memory = int(opts.get("num_memories", 10))
        if self.l1:
            return OWLQN(masked, float(self.l1), free, memory, stop)
        return LBFGS(masked, call.tol, memory, stop=stop,
                     max_linesearch=int(opts.get("max_linesearch", 20)))

    def dev_f(self, dev: Any) -> float:
        """Dev figure (percent) of MAP decoding on ``dev`` = (X, y): conlleval F for a
        chunk scheme, token accuracy for the unconstrained chain."""
        X, y = dev
        pred = MAP().tags(self.lattices(X, require_probabilities=False))
        if not self.space_.chunked:
            flat = [(a == b) for p, g in zip(pred, y) for a, b in zip(p, g)]
            return 100.0 * float(np.mean(flat)) if flat else 0.0
        return evaluate(list(y), pred, scheme=self.scheme_).overall.f

    def _train_input(self, X: Any, y: Any) -> tuple[Sequence[Any], Any] | TrainingData:
        """(X, y): sequences of items and their labels (or prepared data, y None)."""
        if isinstance(X, TrainingData) and y is None:
            return X
        if y is None:
            raise InputError("AttributeCRF.fit(X, y, *, dev=None): the labels y are "
                             "missing (one label, or a set of labels, per item of X)")
        return X, y

    def _dev_input(self, dev: Any) -> Any:
        """dev = (X_dev, y_dev), read once (scored often) for :meth:`dev_f`."""
        if dev is None or isinstance(dev, TrainingData):
            return dev
        X_dev = check_sequences(dev[0], "X_dev")
        dev = (X_dev, check_labels(X_dev, dev[1], "y_dev", open_ok=True))
        pl.refuse_open(dev[1], "y_dev", "the held-out figure needs one tag per token")
        return dev

    def __getstate__(self) -> dict:
        """Pickled without the tag space (pynini tables) and the dense W cache."""
        state = self.__dict__.copy()
        state.pop("space_", None)
        state["_w_cache"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        """Unpickle (a model pickled before fitted state ended in ``_`` too)."""
        state = renamed_state(state, type(self))
        if "scheme_param" in state:         # the hyper-parameter's name before
            state["scheme"] = state.pop("scheme_param")
        if "objective_" in state:
            state["objective"] = state.pop("objective_")
        state.pop("L", None), state.pop("P", None), state.pop("space_", None)
        state.setdefault("warm_start", False)
        self.__dict__.update(state)
        if "tags_" in state:
            self.space_ = TagSpace.of(self.tags_, self.scheme_)

    # --------------------------------------------------------------- files
    def save(self, path) -> None:
        arrays = dict(self.fmap_.to_arrays(), theta=self.theta_, pairs=self.pairs_,
                      transitions=self.transitions_.astype(np.int8))
        save_model(path, self.kind, arrays, {"tags": list(self.tags_), "scheme": self.scheme_,
                                             "settings": self.settings_})

    @classmethod
    def load(cls, path) -> "AttributeCRF":
        """The model saved at ``path``, every field validated."""
        f = Fields(path, *load_model_file(path, cls.kind))
        scheme_name = f.get("scheme", str)
        tags = f.get("tags", list)
        try:
            space = TagSpace.of(tuple(tags), canonical(scheme_name))
        except (InputError, SchemeError, TypeError) as e:
            raise f.error("tags", str(e)) from None
        names = f.unique_strings("attribute_names", "an attribute")
        L = len(space.tags)
        pairs = f.pairs(len(names), L, "attribute")
        trans = f.array("transitions", "int", (L, L))
        if not np.isin(trans, (0, 1)).all():
            raise f.error("transitions", "expected 0/1 flags")
        theta = f.array("theta", "float", (len(pairs) + L * L + 2 * L,), finite=True)
        model = cls(space.scheme)._set_state(AttributeMap(names), space.tags, space.scheme,
                                             pairs, trans.astype(bool), theta, f.settings())
        if np.any(theta[~model.free] != 0):
            raise f.error("theta", "weights where the model has no feature (start, end or "
                                   "a transition it does not have)")
        return model
