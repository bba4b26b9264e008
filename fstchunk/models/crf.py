"""A first-order linear-chain CRF over a chunk scheme's valid tag sequences.

    score(y | x) = start[y_1] + Σ_i w·φ(x, i, y_i) + Σ_i trans[y_{i-1}, y_i] + end[y_n]
    Pr(y | x) = exp(score) / Z(x),   Z over the *valid* sequences of the scheme

(Lafferty et al. 2001; the validity restriction is the scheme's acceptor,
:class:`fstchunk.schemes.tagspace.TagSpace`).  State weights exist only for
(attribute, label) pairs seen in training (as in CRFsuite), so the parameter
vector θ = (state weights, trans, start, end) stays small.

The :class:`~fstchunk.models.chain_crf.ChainCRF` estimator over feature templates of
CoNLL columns (the attribute CRF is the same estimator over python-crfsuite's items).
An estimator in scikit-learn's convention, apart from the training loop (as
sklearn-crfsuite's is from CRFsuite): the constructor takes the hyper-parameters
(features, schemes, columns, ``min_count``, the objective of
:mod:`fstchunk.learn.objectives` and its λ, β, loss, ``max_iter``, ``tol``,
``select``, ``partial``: the tag column as partial annotation, :mod:`.partial`); :meth:`CRF.fit` learns the feature map, tags and pairs and then θ through
:class:`fstchunk.learn.loop.Trainer`, the one training loop; the objectives as
functions of θ are :mod:`fstchunk.models.crf_loss`.

    crf = CRF("tmpt3", "IOB2", columns="word,pos,tag", l2=1e-6).fit(train, dev=dev)
    crf.lattices(test_sentences)
    CRF.load("m.npz").set_params(objective="meu", warm_start=True).fit(more)  # --init

The model remembers the columns it was trained on (:attr:`CRF.columns_`, resolved
to absolute indices, stored in its file): :meth:`CRF.lattices` reads the words
and POS tags from them, :meth:`CRF.training_data` the gold tags too.  Trained on
columns without POS, a template that reads POS becomes its ``-nopos`` variant
(:func:`~fstchunk.models.features.resolve_template`) and the model records that
name (:attr:`CRF.features_`).  ``l2=None`` is the objective's own default λ (the
trainer resolves it).
It also records its training layout (:attr:`CRF.layout_`, :mod:`fstchunk.io.layout`:
the training file's columns, what each held, the data scheme, the word and POS
vocabularies), which the CLI checks inputs against; :attr:`CRF.data_scheme_` is
its data scheme (None for files written before the record).  Hyper-parameters are
the constructor's and stay as given; what ``fit`` learns ends in ``_``
(:mod:`fstchunk.models.estimator`).

Pitfalls:

* a sentence's lattice for decoding is :meth:`CRF.lattices` over many sentences
  (one feature transform, one product); the dense weight matrix is cached for
  the last θ, since rebuilding it per sentence (180 MB for CoNLL-2000) made
  decoding a file take minutes;
* the model's tags are those seen in training: data for ``--init`` training
  with an unseen tag is refused (:class:`~fstchunk.core.errors.SchemeError`);
* training data with no chunk or a single distinct tag, or no sentences, is
  refused (:class:`~fstchunk.core.errors.InputError` naming the file), and so is a
  file whose POS column would be the tag column (see :mod:`fstchunk.io.columns`);
* :meth:`CRF.load` validates every field of the file (tags of the scheme in
  their order, template, columns, array dtypes, shapes, ranges, finite weights)
  and the checksum of version 2 files (:mod:`fstchunk.models.io`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np

from ..schemes import encodings as enc
from ..io.columns import Columns
from ..io.conll import Sentence
from ..core.errors import InputError
from ..io.layout import Layout
from ..learn import objectives as lo
from ..schemes.tagspace import TagSet
from .design import FeatureCount, TrainingData, observed_pairs, training_data
from .base import check_training_set, chunk_dev_f, gold_tags, training_columns
from .features import TEMPLATES, FeatureMap, feature_kinds, resolve_template, template_of
from .templates import REGEX_FLAVORS, parse_template
from .io import Fields, load_model_file, save_model
from .chain_crf import ChainCRF
from .estimator import FittedAlias
from . import partial

#: the objectives a CRF trains (:mod:`fstchunk.learn.objectives`)
CRF_OBJECTIVES = (lo.ML, lo.MEU, lo.MEU_EXACT, lo.MEU_MACRO, lo.MEU_PARTIAL, lo.MEU_TYPE,
                  lo.MEU_WEIGHTED, lo.MEU_CORPUS, lo.MAX_MARGIN, lo.PERCEPTRON)


class CRF(ChainCRF):
    """A linear-chain CRF over a chunk scheme's tags, trained for likelihood, expected
    F, max margin or as a perceptron (see the module doc).

    The constructor takes the hyper-parameters only (scikit-learn's convention);
    :meth:`fit` learns the feature map, the tags, the (attribute, tag) pairs and θ,
    which :meth:`load` reads back from a model file.

    Args:
        features: the feature template: ``tmpt1`` … ``tmpt4`` (Tang et al.), ``ner``,
            or a template file.
        scheme: the tag scheme the model predicts in (``IOB2``, ``IOBES``, ...).
        data_scheme: the scheme of the training files' tags.
        columns: the files' columns (e.g. ``"word,pos,tag"``; ``None``: read from the file).
        min_count: the fewest occurrences of a feature to keep it.
        objective: a name of :data:`~fstchunk.learn.objectives.OBJECTIVES` (``ml``,
            ``meu``, ``meu-corpus``, ``max-margin``, ``perceptron``, ...).
        l2: the L2 penalty (``None``: the objective's default).
        beta: β of F_β, for the expected-F objectives.
        loss: the max-margin loss, ``hamming`` or ``f``.
        max_iter: the most iterations (or epochs).
        tol: the stopping tolerance (``None``: the solver's default).
        select: which iterate to keep: ``last`` or ``dev`` (the best on dev).
        partial: train on partial annotation (:mod:`fstchunk.models.partial`).
        warm_start: ``fit`` on a fitted model trains on from its θ, feature map and
            tags (the CLI's ``--init``); otherwise every ``fit`` starts afresh.

    Raises:
        InputError: an unknown or invalid hyper-parameter, when fitting.

    Attributes:
        theta_: θ, the weights (state weights, transitions, start, end).
        tags_: the tags seen in training, in the scheme ``scheme_`` (canonical).
        columns_: the columns read, resolved against the training file.
        features_: the template trained (``-nopos`` where the files have no POS).
        settings_: what training recorded (objective, iterations, dev F, T, ...).
        layout_: the training file's layout (:mod:`fstchunk.io.layout`).

    Examples:
        >>> import fstchunk
        >>> from fstchunk.io.conll import data_path
        >>> train = fstchunk.read_conll(data_path("conll2000", "train.txt"))[:50]
        >>> crf = fstchunk.CRF("tmpt3", max_iter=5).fit(train)
        >>> lattice = crf.lattices(train[:1])[0]
        >>> len(fstchunk.decode_meu(lattice).tags) == len(train[0])
        True
    """

    kind: ClassVar[str] = "crf"
    noun: ClassVar[str] = "a CRF"
    #: the objectives a CRF trains
    objectives = CRF_OBJECTIVES

    def __init__(self, features: str = "tmpt3", scheme: str = "IOB2", *,
                 data_scheme: str = "IOB2", columns: Columns | str | None = None,
                 min_count: int = 1, objective: str = "ml", l2: float | None = None,
                 beta: float = 1.0, loss: str = "hamming", max_iter: int = 100,
                 tol: float | None = None, select: str = "last", partial: bool = False,
                 warm_start: bool = False):
        self.features, self.scheme, self.data_scheme = features, scheme, data_scheme
        self.columns, self.min_count = columns, min_count
        self.objective, self.l2, self.beta, self.loss = objective, l2, beta, loss
        self.max_iter, self.tol, self.select = max_iter, tol, select
        self.partial, self.warm_start = partial, warm_start

    theta = FittedAlias("theta_")
    tags = FittedAlias("tags_")
    fmap = FittedAlias("fmap_")
    pairs = FittedAlias("pairs_")
    settings = FittedAlias("settings_")
    layout = FittedAlias("layout_")

    def _set_state(self, fmap: FeatureMap | FeatureCount, tags: Sequence[str], scheme: str,
                   pairs: np.ndarray, theta: np.ndarray | None = None,
                   settings: dict | None = None, columns: Columns | None = None,
                   layout: Layout | None = None) -> "CRF":
        """The fitted state: feature map, tags, (attribute, tag) pairs, θ, settings, the
        resolved reading columns and the training layout."""
        self.fmap_, self.tags_ = fmap, tuple(tags)
        self.scheme_ = enc.canonical_scheme(scheme)
        #: the reading columns (word, POS, gold tag); the feature map reads the same
        self.columns_ = columns if columns is not None else Columns(fmap.word_col,
                                                                    fmap.pos_col, -1)
        if (self.columns_.word, self.columns_.pos) != (fmap.word_col, fmap.pos_col):
            raise InputError(f"columns {self.columns_.spec()} differ from the feature map's "
                             f"(word {fmap.word_col}, pos {fmap.pos_col})")
        self.features_ = getattr(fmap, "template", self.features)
        self.pairs_ = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)   # (feature, label)
        self._set_theta(theta, "tags")
        self.settings_ = dict(settings or {})
        self.layout_ = layout
        self.data_scheme_ = None if layout is None else layout.data_scheme
        return self

    @classmethod
    def _fitted(cls, fmap: FeatureMap | FeatureCount, tags: Sequence[str], scheme: str,
                pairs: np.ndarray, theta: np.ndarray | None = None,
                settings: dict | None = None, columns: Columns | None = None,
                layout: Layout | None = None) -> "CRF":
        """A CRF of this fitted state (:meth:`load`, :meth:`scoring_copy`); its
        hyper-parameters are those the state was trained with, as far as it records them."""
        settings = dict(settings or {})
        model = cls(getattr(fmap, "template", "tmpt3"), enc.canonical_scheme(scheme),
                    data_scheme=layout.data_scheme if layout is not None else "IOB2",
                    columns=columns, min_count=settings.get("min_count", 1))
        return model._set_state(fmap, tags, scheme, pairs, theta, settings, columns, layout)

    @property
    def reads(self) -> Columns:
        """The columns the features read: :attr:`columns_`, without POS for a ``-nopos``
        template."""
        c = self.columns_
        return Columns(c.word, c.pos if self.fmap_.spec.reads_pos else None, c.tag)

    def layout_of(self, sentences: Sequence[Sentence], data_scheme: str) -> Layout:
        """The layout of training ``sentences`` read through :attr:`columns`."""
        cols = training_columns(sentences, self.columns_, "the CRF")
        return Layout.of(sentences, cols, enc.canonical_scheme(data_scheme),
                         "feature" if self.fmap_.spec.reads_pos else "unread")

    # --------------------------------------------------------------- training data
    def _prepare(self, sentences: Sequence[Sentence]) -> TrainingData:
        """Fit the feature map (``min_count``), the tags seen, the observed (attribute,
        tag) pairs and θ = 0 on ``sentences``, and return their training data.  The
        columns (default ``Columns()``: word, POS, ..., tag) are resolved against the
        sentences' lines and kept; without a POS column, the template becomes its
        ``-nopos`` variant."""
        min_count = self.min_count
        if not (isinstance(min_count, int) and not isinstance(min_count, bool)
                and min_count >= 1):
            raise InputError(f"min_count must be an integer >= 1, got {min_count!r}")
        given = Columns.parse(self.columns) if isinstance(self.columns, str) else self.columns
        items, sentences = sentences, [getattr(s, "sentence", s) for s in sentences]
        cols = training_columns(sentences, given, "a CRF")
        template = resolve_template(self.features, cols)
        scheme = enc.canonical_scheme(self.scheme)
        data_scheme = enc.canonical_scheme(self.data_scheme)
        if not self.partial:
            gold = [gold_tags(s, data_scheme, scheme, cols.tag) for s in sentences]
            check_training_set(sentences, gold, "a CRF")
        spec = template_of(template).bind(cols, len(sentences[0].rows[0]),
                                          sentences[0].where(0))
        fmap = FeatureMap.fit(sentences, spec, min_count, cols.word, cols.pos)
        if self.partial:
            data, tags, pairs = partial.prepare(fmap, items, cols.tag, data_scheme, scheme)
        else:
            tags = TagSet.from_tags({t for g in gold for t in g}, scheme).tags
            data = training_data(fmap, tags, scheme, sentences, gold)
            pairs = observed_pairs(data.X, data.gold.sequences, len(tags))
        self._set_state(fmap, tags, scheme, pairs, settings={"min_count": min_count},
                        columns=cols)
        self.layout_ = self.layout_of(sentences, data_scheme)
        self.data_scheme_ = self.layout_.data_scheme
        return data

    def _data_of(self, train: Sequence[Sentence], data_scheme: str | None) -> TrainingData:
        """The training data of sentences whose tag column, that of :attr:`columns_`,
        holds tags in ``data_scheme`` (default the model's data scheme, else IOB2)."""
        data_scheme = data_scheme or self.data_scheme_ or "IOB2"
        cols = training_columns([getattr(s, "sentence", s) for s in train], self.columns_,
                                "the CRF")
        if self.partial:
            return partial.prepare(self.fmap_, train, cols.tag, enc.canonical_scheme(
                data_scheme), self.scheme_, self.tags_)[0]
        gold = [gold_tags(s, data_scheme, self.scheme_, cols.tag) for s in train]
        check_training_set(train, gold, "the CRF")
        return training_data(self.fmap_, self.tags_, self.scheme_, train, gold)

    # --------------------------------------------------------------- objectives
    def _solver_name(self, objective: lo.Objective, data: TrainingData) -> str | None:
        """Partial annotation trains the likelihood only (:func:`.partial.check_objective`)."""
        if isinstance(data.gold, partial.PartialGold):
            partial.check_objective(objective)
        return None

    def dev_f(self, dev: Sequence[Sentence]) -> float:
        """conlleval F (percent) of MAP decoding on ``dev`` (:func:`.base.chunk_dev_f`)."""
        return chunk_dev_f(self, dev)

    def scoring_copy(self) -> "CRF":
        """This CRF without its feature dictionary (a :class:`FeatureCount` in its
        place): it scores prepared features (:meth:`statistics`) but reads no
        sentence; what a worker of :mod:`fstchunk.runtime.scale` receives."""
        fm = self.fmap_
        return CRF._fitted(FeatureCount(len(fm), fm.word_col, fm.pos_col), self.tags_,
                           self.scheme_, self.pairs_, columns=self.columns_)

    # --------------------------------------------------------------- inputs
    def _train_input(self, X: Any, y: Any) -> Sequence[Sentence] | TrainingData:
        """The training sentences (or prepared data); the tags are their tag column."""
        self._no_labels(y)
        return X

    def _dev_input(self, dev: Any) -> Sequence[Sentence] | None:
        if isinstance(dev, (str, bytes)):
            raise InputError(f"dev must be sentences (read_conll of a file), got {dev!r}; "
                             f"hyper-parameters are set with set_params(objective=...)")
        return dev

    def _inputs(self, X: Sequence[Sentence]) -> Sequence[Sentence]:
        """Sentences to score; the words (and POS tags) are read from :attr:`columns_`."""
        for s in X:
            if len(s) == 0:
                raise InputError(f"{s.source}: a sentence without tokens")
        return X

    def _fitted_state(self) -> dict[str, Any]:
        return dict(fmap=self.fmap_, tags=self.tags_, scheme=self.scheme_, pairs=self.pairs_,
                    columns=self.columns_, layout=self.layout_)

    # --------------------------------------------------------------- files
    def save(self, path) -> None:
        """Write the model file (:func:`~fstchunk.models.io.save_model`)."""
        arrays = dict(self.fmap_.to_arrays(), theta=self.theta_, pairs=self.pairs_)
        save_model(path, "crf", arrays, {
            "tags": list(self.tags_), "scheme": self.scheme_, **self.fmap_.meta(),
            "columns": self.columns_.to_json(), "settings": self.settings_}, self.layout_)

    @classmethod
    def load(cls, path) -> "CRF":
        """The CRF saved at ``path``, every field validated (ModelFileError naming the
        file and the field otherwise)."""
        f = Fields(path, *load_model_file(path, "crf"))
        scheme = f.scheme()
        tags = f.tags(scheme)
        template = f.get("template", str)
        cols = f.columns()
        if "template_source" in f.meta:
            flavor = f.get("template_regex", str, "python")     # files before: "python"
            if flavor not in REGEX_FLAVORS:
                raise f.error("template_regex", f"expected one of {', '.join(REGEX_FLAVORS)}, "
                                                f"found {flavor!r:.40}")
            try:
                spec = parse_template(f.get("template_source", str), template,
                                      flavor, saved=True).bind(cols)
            except InputError as e:
                raise f.error("template_source", str(e)) from None
        elif template not in TEMPLATES:
            raise f.error("template", f"unknown feature template {template!r}")
        else:
            spec = template_of(template)
            if spec.reads_pos and cols.pos is None:
                raise f.error("columns", f"template {template} reads POS, but the columns "
                                         f"{cols.spec()} have none")
        names = f.unique_strings("feature_names", "a feature")
        alien = set() if "template_source" in f.meta else (
            {n.split("=", 1)[0] for n in names} - feature_kinds(template))
        if alien:
            raise f.error("template", f"{template} does not write the features of this "
                                      f"model (e.g. {sorted(alien)[0]!r})")
        L = len(tags)
        pairs = f.pairs(len(names), L)
        theta = f.array("theta", "float", (len(pairs) + L * L + 2 * L,), finite=True)
        fmap = FeatureMap(spec, names, cols.word, cols.pos)
        return cls._fitted(fmap, tags, scheme, pairs, theta, f.settings(), cols,
                           f.layout(cols))

