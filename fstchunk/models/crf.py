"""A first-order linear-chain CRF over a chunk scheme's valid tag sequences.

    score(y | x) = start[y_1] + Σ_i w·φ(x, i, y_i) + Σ_i trans[y_{i-1}, y_i] + end[y_n]
    Pr(y | x) = exp(score) / Z(x),   Z over the *valid* sequences of the scheme

(Lafferty et al. 2001; the validity restriction is the scheme's acceptor,
:class:`fstchunk.tagspace.TagSpace`).  State weights exist only for
(attribute, label) pairs seen in training (as in CRFsuite), so the parameter
vector θ = (state weights, trans, start, end) stays small.

The estimator is apart from the training loop (sklearn-crfsuite style):
:meth:`CRF.prepare` builds a fresh model and its :class:`TrainingData`,
:meth:`CRF.objective` is objective ``ml``, ``meu`` or ``meu-corpus``
(:mod:`fstchunk.models.objectives`) or the ``max-margin`` hinge
(:mod:`fstchunk.models.maxmargin`, trained by its BCFW solver) as a function of θ, with the chain rule
∇W = Xᵀ·∇E and the penalty λ‖θ‖², and :meth:`CRF.fit` hands both to
:class:`fstchunk.learn.loop.Trainer`, the one training loop.

    crf, data = CRF.prepare(sentences, "tmpt3", scheme="IOB2",
                            columns=Columns.parse("word,pos,tag"))
    crf.fit(data, objective="ml", l2=0.01)          # or Trainer(...).fit(crf, data)
    crf.lattices(test_sentences)

The model remembers the columns it was trained on (:attr:`CRF.columns`, resolved
to absolute indices, stored in its file): :meth:`CRF.lattices` reads the words
and POS tags from them, :meth:`CRF.training_data` the gold tags too.  Trained on
columns without POS, a template that reads POS becomes its ``-nopos`` variant
(:func:`~fstchunk.models.features.resolve_template`) and the model records that
name.  ``l2=None`` is the objective's own default λ (the trainer resolves it).
It also records its training layout (:attr:`CRF.layout`, :mod:`fstchunk.layout`:
the training file's columns, what each held, the data scheme, the word and POS
vocabularies), which the CLI checks inputs against; :attr:`CRF.data_scheme` is
its data scheme (None for files written before the record).

Pitfalls:

* a sentence's lattice for decoding is :meth:`CRF.lattices` over many sentences
  (one feature transform, one product); the dense weight matrix is cached for
  the last θ, since rebuilding it per sentence (180 MB for CoNLL-2000) made
  decoding a file take minutes;
* the model's tags are those seen in training: data for ``--init`` training
  with an unseen tag is refused (:class:`~fstchunk.errors.SchemeError`);
* training data with no chunk or a single distinct tag, or no sentences, is
  refused (:class:`~fstchunk.errors.InputError` naming the file), and so is a
  file whose POS column would be the tag column (see :mod:`fstchunk.columns`);
* :meth:`CRF.load` validates every field of the file (tags of the scheme in
  their order, template, columns, array dtypes, shapes, ranges, finite weights)
  and the checksum of version 2 files (:mod:`fstchunk.models.io`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np
import scipy.sparse as sp

from .. import encodings as enc
from ..engine.temperature import HeldOut, fit_temperature, stack_layers
from ..columns import Columns
from ..conll import Sentence
from ..errors import InputError, SchemeError
from ..fbeta import to_beta_sq
from ..lattice import Lattice
from ..layout import Layout
from ..learn import objectives as lo
from ..learn.loop import Trainer
from ..learn.solvers import LBFGS, Solver
from ..scale import split
from ..tagspace import TagSet
from .bcfw import BCFWSolver
from .design import FeatureCount, TrainingData
from .base import check_training_set, chunk_dev_f, gold_tags, training_columns
from .features import TEMPLATES, FeatureMap, feature_kinds, reads_pos, resolve_template
from .io import Fields, load_model_file, save_model
from .maxmargin import hinge_statistics, sequence_score
from .objectives import STATISTICS, Chain, ChainGrad, Gold
from .perceptron import PerceptronSolver

#: the objectives a CRF trains (:mod:`fstchunk.learn.objectives`)
CRF_OBJECTIVES = (lo.ML, lo.MEU, lo.MEU_CORPUS, lo.MAX_MARGIN, lo.PERCEPTRON)


class CRF:
    """Linear-chain CRF; see the module doc."""

    kind: ClassVar[str] = "crf"

    def __init__(self, fmap: FeatureMap, tags: Sequence[str], scheme: str, pairs: np.ndarray,
                 theta: np.ndarray | None = None, settings: dict | None = None,
                 columns: Columns | None = None, layout: Layout | None = None):
        self.fmap, self.tags, self.scheme = fmap, tuple(tags), enc.canonical_scheme(scheme)
        #: the reading columns (word, POS, gold tag); the feature map reads the same
        self.columns = columns if columns is not None else Columns(fmap.word_col,
                                                                   fmap.pos_col, -1)
        if (self.columns.word, self.columns.pos) != (fmap.word_col, fmap.pos_col):
            raise InputError(f"columns {self.columns.spec()} differ from the feature map's "
                             f"(word {fmap.word_col}, pos {fmap.pos_col})")
        self.L = len(self.tags)
        self.pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)   # (feature, label)
        self.P = len(self.pairs)
        size = self.P + self.L * self.L + 2 * self.L
        self.theta = np.zeros(size) if theta is None else np.asarray(theta, dtype=float)
        if self.theta.shape != (size,):
            raise InputError(f"{self.theta.size} parameters do not fit {self.P} state "
                             f"weights and {self.L} tags")
        self.settings = dict(settings or {})
        #: the training layout (None: a file written before it was recorded)
        self.layout = layout
        self._w_cache: tuple[int, np.ndarray] | None = None

    @property
    def reads(self) -> Columns:
        """The columns the features read: :attr:`columns`, without POS for a ``-nopos``
        template."""
        c = self.columns
        return Columns(c.word, c.pos if reads_pos(self.fmap.template) else None, c.tag)

    @property
    def data_scheme(self) -> str | None:
        """The scheme of the training file's tag column (None if not recorded)."""
        return self.layout.data_scheme if self.layout is not None else None

    def layout_of(self, sentences: Sequence[Sentence], data_scheme: str) -> Layout:
        """The layout of training ``sentences`` read through :attr:`columns`."""
        cols = training_columns(sentences, self.columns, "the CRF")
        return Layout.of(sentences, cols, enc.canonical_scheme(data_scheme),
                         "feature" if reads_pos(self.fmap.template) else "unread")

    # --------------------------------------------------------------- parameters
    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(trans, start, end) of θ; the state weights are :meth:`emissions`'."""
        P, L = self.P, self.L
        return (theta[P:P + L * L].reshape(L, L), theta[P + L * L:P + L * L + L],
                theta[P + L * L + L:])

    def _dense_w(self, theta: np.ndarray) -> np.ndarray:
        """The state weights as a dense feature x tag matrix, cached for the last θ."""
        key = hash(theta.tobytes())
        if self._w_cache is not None and self._w_cache[0] == key:
            return self._w_cache[1]
        W = np.zeros((len(self.fmap), self.L))
        W[self.pairs[:, 0], self.pairs[:, 1]] = theta[:self.P]
        self._w_cache = (key, W)
        return W

    def emissions(self, X: sp.csr_matrix, theta: np.ndarray | None = None) -> np.ndarray:
        """X·W for the token rows of X."""
        return X @ self._dense_w(self.theta if theta is None else theta)

    def chain(self, theta: np.ndarray, X: sp.csr_matrix) -> Chain:
        """The score arrays of the tokens of X under θ."""
        return Chain(self.tags, self.scheme, self.emissions(X, theta), *self.unpack(theta))

    def lattice(self, sentence: Sentence) -> Lattice:
        return self.lattices([sentence])[0]

    def lattices(self, sentences: Sequence[Sentence],
                 require_probabilities: bool = True) -> list[Lattice]:
        """One lattice per sentence, with one feature transform and one product; the
        words (and POS tags) are read from :attr:`columns`.  Scores are θ·φ/T
        (:attr:`temperature`); a max-margin model that is not calibrated is refused
        (:meth:`require_probabilities`) unless ``require_probabilities=False`` (MAP,
        which no positive scale changes)."""
        if require_probabilities:
            self.require_probabilities()
        for s in sentences:
            if len(s) == 0:
                raise InputError(f"{s.source}: a sentence without tokens")
        ch = self.chain(self.theta / self.temperature, self.fmap.transform(sentences))
        out, k = [], 0
        for s in sentences:
            out.append(ch.lattice(k, k + len(s)))
            k += len(s)
        return out

    # --------------------------------------------------------------- probabilities
    @property
    def temperature(self) -> float:
        """T of p(y|x) ∝ exp(score(x, y)/T): the calibrated one, else 1."""
        return float(self.settings.get("temperature", 1.0))

    @property
    def probabilistic(self) -> bool:
        """Whether exp(score/T) is read as p(y|x): a likelihood- or risk-trained CRF, or a
        max-margin or perceptron one once calibrated (its scores have the scale of margins)."""
        name = self.settings.get("objective", self.settings.get("run", {}).get("objective"))
        trained = lo.OBJECTIVES.get(name)
        return trained is None or trained.probabilistic or "temperature" in self.settings

    def require_probabilities(self) -> None:
        """InputError saying how to calibrate, unless :attr:`probabilistic`."""
        if not self.probabilistic:
            objective = self.settings.get("objective",
                                          self.settings.get("run", {}).get("objective"))
            raise InputError(f"this CRF was trained by {objective}; its scores are margins, "
                             "not probabilities. Calibrate it on held-out sentences first: "
                             "fstchunk calibrate --model MODEL --input HELDOUT -o MODEL (or "
                             "fstchunk train --calibrate HELDOUT); MAP decoding needs no "
                             "calibration")

    def calibrate(self, sentences: Sequence[Sentence], source: str | None = None,
                  data_scheme: str = "IOB2") -> float:
        """Fit T by maximum likelihood of the gold tags of held-out ``sentences`` (not
        the training set; :mod:`fstchunk.engine.temperature`), store it in the settings
        (``temperature``, ``calibration_nll`` and ``calibration_nll_t1``: mean NLL per
        sentence at T and at T = 1, ``calibrated_on``) and return it."""
        data = self.training_data(sentences, data_scheme)
        ch = self.chain(self.theta, data.X)
        off, L = data.gold.offsets, len(self.tags)

        def build(idx: list[int]):
            lats = [ch.lattice(off[i], off[i + 1]).layers for i in idx]
            gold = [sequence_score(ch.emissions[off[i]:off[i + 1]], ch.trans, ch.start,
                                   ch.end, data.gold.sequences[i]) for i in idx]
            return stack_layers(lats), np.array(gold)

        try:
            fit = fit_temperature(HeldOut(build, np.diff(off), L))
        except InputError as e:
            raise InputError(f"{source}: {e}" if source else str(e)) from None
        self.settings.update(temperature=fit.temperature, calibration_nll=fit.nll,
                             calibration_nll_t1=fit.nll_untempered,
                             calibrated_on={"source": source or "<unnamed>",
                                            "sentences": fit.sentences})
        return fit.temperature

    # --------------------------------------------------------------- training data
    @classmethod
    def prepare(cls, sentences: Sequence[Sentence], template: str = "tmpt3",
                scheme: str = "IOB2", data_scheme: str = "IOB2", min_count: int = 1,
                columns: Columns | None = None) -> tuple["CRF", TrainingData]:
        """A fresh CRF for ``sentences`` (feature map fitted with ``min_count``, the
        tags seen, the observed (attribute, tag) pairs, θ = 0) and its training data.
        ``columns`` (default ``Columns()``: word, POS, ..., tag) are resolved against
        the sentences' lines and stored; without a POS column, ``template`` becomes its
        ``-nopos`` variant."""
        if not (isinstance(min_count, int) and not isinstance(min_count, bool)
                and min_count >= 1):
            raise InputError(f"min_count must be an integer >= 1, got {min_count!r}")
        cols = training_columns(sentences, columns, "a CRF")
        template = resolve_template(template, cols)
        scheme = enc.canonical_scheme(scheme)
        gold = [gold_tags(s, data_scheme, scheme, cols.tag) for s in sentences]
        check_training_set(sentences, gold, "a CRF")
        fmap = FeatureMap.fit(sentences, template, min_count, cols.word, cols.pos)
        tags = TagSet.from_tags({t for g in gold for t in g}, scheme).tags
        data = _training_data(fmap, tags, scheme, sentences, gold)
        pairs = cls.observed_pairs(data.X, data.gold.sequences, len(tags))
        crf = cls(fmap, tags, scheme, pairs, settings={"min_count": min_count}, columns=cols)
        crf.layout = crf.layout_of(sentences, data_scheme)
        return crf, data

    def training_data(self, train: Sequence[Sentence] | TrainingData,
                      data_scheme: str = "IOB2") -> TrainingData:
        """The training data of ``train`` (sentences whose tag column, that of
        :attr:`columns`, holds tags in ``data_scheme``) under this model's feature map
        and tags; prepared data pass through unchanged."""
        if isinstance(train, TrainingData):
            return train
        cols = training_columns(train, self.columns, "the CRF")
        gold = [gold_tags(s, data_scheme, self.scheme, cols.tag) for s in train]
        check_training_set(train, gold, "the CRF")
        return _training_data(self.fmap, self.tags, self.scheme, train, gold)

    @staticmethod
    def observed_pairs(X: sp.csr_matrix, gold: Sequence[np.ndarray], L: int) -> np.ndarray:
        """The (feature, tag) pairs that occur in the training data, (P, 2)."""
        y = np.concatenate(gold)
        Y = sp.csr_matrix((np.ones(len(y)), (np.arange(len(y)), y)), shape=(len(y), L))
        M = (X.T @ Y).tocoo()
        return np.stack([M.row, M.col], axis=1).astype(np.int64)

    # --------------------------------------------------------------- objectives
    #: the objectives a CRF trains
    objectives = CRF_OBJECTIVES

    def objective(self, name: str | lo.Objective, data: TrainingData, l2: float,
                  beta: float = 1.0, loss: str = "hamming", executor: Any = None):
        """θ -> (value, gradient) of a smooth objective or the max-margin hinge
        (:mod:`fstchunk.learn.objectives`; minimised: the negated log-likelihood or
        expected F) plus l2·‖θ‖²; ``max-margin``: the mean structured hinge with loss
        ``loss`` and a subgradient (:func:`fstchunk.models.maxmargin.hinge`; trained by
        BCFW, not by this function).  With an ``executor`` (:mod:`fstchunk.scale`) the
        statistics are summed over its partitions of ``data``; the value is the same to
        rounding.  ``beta``: the standard β of F_β (:mod:`fstchunk.fbeta`)."""
        o = lo.objective(name, CRF_OBJECTIVES)
        beta_sq = to_beta_sq(beta)
        if o.combination is None:
            raise InputError(f"--objective {o.name} has no objective function of θ: it is "
                             f"trained by passes of its solver")
        parts = executor.partitioned(self, data) if executor is not None else None

        def value_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
            values, G = (parts.statistics(theta, o.name, beta_sq, loss) if parts is not None
                         else self.statistics(data, theta, o.name, beta_sq, loss))
            value, w = o.combine(values, len(data.gold), beta_sq)
            return value + l2 * float(theta @ theta), w @ G + 2 * l2 * theta

        return value_and_grad

    def solver(self, objective: lo.Objective, data: TrainingData, *, l2: float,
               beta: float, loss: str, tol: float | None, executor: Any) -> Solver:
        """The solver of ``objective`` (:class:`fstchunk.learn.loop.Trainer` runs it):
        L-BFGS for the smooth objectives, BCFW for max-margin, passes of the averaged
        perceptron."""
        tol = objective.default_tol if tol is None else tol
        if objective.smooth:
            return LBFGS(self.objective(objective, data, l2, beta, loss, executor), tol)
        if objective is lo.MAX_MARGIN:
            return BCFWSolver(self, data, l2, loss, beta, tol)
        if objective is lo.PERCEPTRON:
            return PerceptronSolver(self, data)
        raise InputError(f"a CRF does not train --objective {objective.name}")

    def dev_f(self, dev: Sequence[Sentence]) -> float:
        """conlleval F (percent) of MAP decoding on ``dev`` (:func:`.base.chunk_dev_f`)."""
        return chunk_dev_f(self, dev)

    def statistics(self, data: TrainingData, theta: np.ndarray, name: str,
                   beta_sq: float = 1.0, loss: str = "hamming") -> tuple[np.ndarray, np.ndarray]:
        """The :class:`~fstchunk.models.objectives.Statistics` of objective ``name`` on
        ``data`` at θ: values (J,) and their gradients in θ-space (J', |θ|).  Sums
        over the sentences, so the statistics of a partition of ``data`` add up to
        these (the data-parallel path of :mod:`fstchunk.scale`)."""
        o = lo.objective(name, CRF_OBJECTIVES)
        AT = data.design(self.pairs, self.L)
        chain = Chain(self.tags, self.scheme, (AT.T @ theta[:self.P]).reshape(-1, self.L),
                      *self.unpack(theta))
        st = (hinge_statistics(chain, data.gold, beta_sq, loss) if o is lo.MAX_MARGIN
              else STATISTICS[o](chain, data.gold, beta_sq))
        return st.values, np.stack([self._chain_rule(data, g) for g in st.grads])

    def partitions(self, data: TrainingData, parts: int) -> list[tuple["CRF", TrainingData]]:
        """``data`` in ``parts`` runs of sentences of about equal token counts, each with a
        :meth:`scoring_copy` and its pair design matrix built (the shards of
        :mod:`fstchunk.scale`)."""
        shards = [(self.scoring_copy(), data.subset(r))
                  for r in split([len(g) for g in data.gold.sequences], parts)]
        for copy, part in shards:
            part.design(copy.pairs, copy.L)
        return shards

    def scoring_copy(self) -> "CRF":
        """This CRF without its feature dictionary (a :class:`FeatureCount` in its
        place): it scores prepared features (:meth:`statistics`) but reads no
        sentence; what a worker of :mod:`fstchunk.scale` receives."""
        fm = self.fmap
        copy = CRF(FeatureCount(len(fm), fm.word_col, fm.pos_col), self.tags, self.scheme,
                   self.pairs, columns=self.columns)
        return copy

    def _chain_rule(self, data: TrainingData, g: ChainGrad) -> np.ndarray:
        """∇θ from the gradient with respect to the score arrays: Aᵀ·vec(∇E) for the
        pairs (:mod:`fstchunk.models.design`), then the transitions, start and end."""
        AT = data.design(self.pairs, self.L)
        return np.concatenate([AT @ g.emissions.ravel(), g.trans.ravel(), g.start, g.end])

    # --------------------------------------------------------------- training
    def fit(self, train: Sequence[Sentence] | TrainingData, objective: str = "ml",
            l2: float | None = None, beta: float = 1.0, max_iter: int = 100,
            **options: Any) -> "CRF":
        """Optimise θ from its current value by :class:`fstchunk.learn.loop.Trainer`
        (``l2=None``: the objective's default λ; ``options``: the trainer's other
        arguments; no progress bar unless asked); ``self``."""
        options.setdefault("progress", False)
        return Trainer(objective=objective, l2=l2, beta=beta, max_iter=max_iter,
                       **options).fit(self, train)

    # --------------------------------------------------------------- files
    def save(self, path) -> None:
        """Write the model file (:func:`~fstchunk.models.io.save_model`)."""
        arrays = dict(self.fmap.to_arrays(), theta=self.theta, pairs=self.pairs)
        save_model(path, "crf", arrays, {
            "tags": list(self.tags), "scheme": self.scheme, "template": self.fmap.template,
            "columns": self.columns.to_json(), "settings": self.settings}, self.layout)

    @classmethod
    def load(cls, path) -> "CRF":
        """The CRF saved at ``path``, every field validated (ModelFileError naming the
        file and the field otherwise)."""
        f = Fields(path, *load_model_file(path, "crf"))
        scheme = f.scheme()
        tags = f.tags(scheme)
        template = f.get("template", str)
        if template not in TEMPLATES:
            raise f.error("template", f"unknown feature template {template!r}")
        cols = f.columns()
        if reads_pos(template) and cols.pos is None:
            raise f.error("columns", f"template {template} reads POS, but the columns "
                                     f"{cols.spec()} have none")
        blob = f.array("feature_names", "bytes", (None,))
        try:
            names = bytes(blob).decode("utf-8").split("\n")
        except UnicodeDecodeError as e:
            raise f.error("feature_names", f"not UTF-8 ({e.reason})") from None
        names = names if names != [""] else []
        if len(set(names)) != len(names):
            raise f.error("feature_names", "repeats a feature")
        alien = {n.split("=", 1)[0] for n in names} - feature_kinds(template)
        if alien:
            raise f.error("template", f"{template} does not write the features of this "
                                      f"model (e.g. {sorted(alien)[0]!r})")
        L = len(tags)
        pairs = f.array("pairs", "int", (None, 2))
        if pairs.size and ((pairs < 0).any() or (pairs[:, 0] >= len(names)).any()
                           or (pairs[:, 1] >= L).any()):
            raise f.error("pairs", f"(feature, tag) indices out of range of the "
                                   f"{len(names)} features and {L} tags")
        if len(np.unique(pairs[:, 0].astype(np.int64) * L + pairs[:, 1])) != len(pairs):
            raise f.error("pairs", "repeats a (feature, tag) pair")
        theta = f.array("theta", "float", (len(pairs) + L * L + 2 * L,), finite=True)
        fmap = FeatureMap(template, names, cols.word, cols.pos)
        return cls(fmap, tags, scheme, pairs, theta, f.settings(), cols, f.layout(cols))


def _training_data(fmap: FeatureMap, tags: tuple[str, ...], scheme: str,
                   sentences: Sequence[Sentence], gold: list[list[str]]) -> TrainingData:
    """X of the sentences under ``fmap`` and their gold tags (in ``scheme``) as indices."""
    ix = {t: i for i, t in enumerate(tags)}
    seqs = []
    for s, g in zip(sentences, gold):
        bad = [i for i, t in enumerate(g) if t not in ix]
        if bad:
            raise SchemeError(f"{s.where(bad[0])}: tag {g[bad[0]]!r} is not among the "
                              f"model's tags {', '.join(tags)}", bad[0])
        seqs.append(np.array([ix[t] for t in g], dtype=np.int64))
    return TrainingData(fmap.transform(sentences), Gold(seqs, tags, scheme))
