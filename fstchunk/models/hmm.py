"""A first-order HMM chunker estimated by counting (relative frequencies, add-δ).

    Pr(w, x) = Π_i Pr(x_i | x_{i-1}) · Pr(pos_i | x_i) · Pr(word_i | x_i) · Pr(END | x_n)

Each token emits its POS tag and its (lower-cased) word; words seen fewer than
``min_count`` times are replaced by their shape class (``Xx``, ``d.d``, ...), so
unknown words at test time share the rare words' statistics.  The emission
factorisation (POS and word independent given the tag) is a naive-Bayes
simplification: a baseline, and the model the decoders are compared on before
the CRF.  Its lattice for a sentence is :meth:`HMM.lattice`; the same model as a
tags -> words transducer is :func:`fstchunk.grammars.models.hmm_transducer`.

    HMM(scheme="IOB2", delta=0.1, min_count=2).fit(sentences).save("hmm.npz")

The columns it reads are :attr:`HMM.columns_` (:class:`~fstchunk.io.columns.Columns`,
the ``columns`` asked for resolved against the training file and stored in the model file); without a POS
column (``Columns.parse("word,tag")``) the HMM emits the words only.

    HMM(scheme="IOB2", columns=Columns.parse("word,tag")).fit(sentences)

Like the CRF it records its training layout (:attr:`HMM.layout_`,
:mod:`fstchunk.io.layout`) and its data scheme (:attr:`HMM.data_scheme_`; None when
loaded from a file written before the record).  What ``fit`` learns ends in ``_``
(:mod:`fstchunk.models.estimator`).

Pitfalls: the HMM has no iterative training (``fit`` counts once; it is no
:class:`~fstchunk.models.base.TrainableModel`); the model file stores the
hyper-parameters in ``settings_`` and the columns in ``columns`` (files of
fstchunk 0.1 kept ``word_col``/``pos_col`` in ``settings``; they still load); an
unfitted HMM has no tags and no lattices; training data without a chunk, with a
single tag or without sentences is refused (InputError naming the file).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar, Sequence

import numpy as np

from ..schemes import encodings as enc
from ..io.columns import Columns
from ..io.conll import Sentence
from ..core.errors import FstchunkError, InputError
from ..structures.lattice import Lattice
from ..core.stringpack import pack
from ..io.layout import Layout
from ..schemes.tagspace import TagSet
from .base import check_training_set, gold_tags, training_columns
from .features import word_shape
from .io import Fields, load_model_file, save_model
from .estimator import Estimator, FittedAlias

UNKNOWN = "<unk>"


class HMM(Estimator):
    """A first-order HMM over a chunk scheme's tags, estimated by counting with
    add-δ smoothing: $p(w, y) = \\prod_i p(y_i \\mid y_{i-1})\\, p(\\mathrm{pos}_i
    \\mid y_i)\\, p(\\mathrm{word}_i \\mid y_i) \\cdot p(\\mathrm{END} \\mid y_n)$
    (module doc).  A baseline with no iterative training: :meth:`fit` counts once;
    :meth:`lattices` gives each sentence's :class:`Lattice` for the decoders.

    Args:
        scheme: the tag scheme the model predicts in.
        delta: δ of add-δ smoothing (> 0).
        min_count: words seen fewer times are replaced by their shape (``Xx``, ``d.d``).
        word_col: the word column (older spelling of ``columns``).
        pos_col: the POS column (``None``: words only).
        tag_col: the tag column.
        data_scheme: the scheme of the training files' tags.
        columns: the files' columns (:class:`~fstchunk.io.columns.Columns`; supersedes
            the three above).

    Raises:
        InputError: ``delta`` or ``min_count`` out of range; training data with no
            chunk, a single tag or no sentences, when fitting.
        SchemeError: an unknown scheme.

    Attributes:
        tags_: the model's tags, those of the scheme over the types seen.
        scheme_: the scheme of its tags (canonical).
        columns_: the columns it reads, resolved against the training data.
        settings_: δ, ``min_count`` and the number of training sentences.

    Examples:
        >>> import io, fstchunk
        >>> text = "John NNP B-NP\\nran VBD B-VP\\n\\nMary NNP B-NP\\nsat VBD B-VP\\ndown RB O\\n"
        >>> train = fstchunk.read_conll(io.StringIO(text))
        >>> hmm = fstchunk.HMM(min_count=1).fit(train)
        >>> hmm.tags_
        ('O', 'B-NP', 'I-NP', 'B-VP', 'I-VP')
        >>> fstchunk.decode_map(hmm.lattices(train[:1])[0]).tags
        ['B-NP', 'B-VP']
    """

    kind: ClassVar[str] = "hmm"
    _fitted_attribute: ClassVar[str] = "tags_"

    def __init__(self, scheme: str = "IOB2", delta: float = 0.1, min_count: int = 2,
                 word_col: int = 0, pos_col: int | None = 1, tag_col: int | None = -1,
                 data_scheme: str = "IOB2", columns: Columns | None = None):
        self.scheme, self.delta, self.min_count = scheme, delta, min_count
        self.word_col, self.pos_col, self.tag_col = word_col, pos_col, tag_col
        self.data_scheme, self.columns = data_scheme, columns

    tags = FittedAlias("tags_")
    settings = FittedAlias("settings_")
    layout = FittedAlias("layout_")
    vocab = FittedAlias("vocab_")
    pos_vocab = FittedAlias("pos_vocab_")
    log_start = FittedAlias("log_start_")
    log_trans = FittedAlias("log_trans_")
    log_end = FittedAlias("log_end_")
    log_word = FittedAlias("log_word_")
    log_pos = FittedAlias("log_pos_")

    @property
    def reads(self) -> Columns:
        """The columns the HMM reads (:attr:`columns_`)."""
        return self.columns_

    def _check_parameters(self) -> tuple[float, int]:
        """δ and ``min_count``, checked (InputError naming the value)."""
        delta, min_count = self.delta, self.min_count
        if not (isinstance(delta, (int, float)) and not isinstance(delta, bool)
                and np.isfinite(delta) and delta > 0):
            raise InputError(f"delta must be a finite number > 0, got {delta!r}")
        if not (isinstance(min_count, int) and not isinstance(min_count, bool)
                and min_count >= 1):
            raise InputError(f"min_count must be an integer >= 1, got {min_count!r}")
        return delta, min_count

    def _set_parameters(self, tags, vocab, pos_vocab, log_start, log_trans, log_end,
                        log_word, log_pos) -> None:
        self.tags_ = tuple(tags)
        self.vocab_ = {w: i for i, w in enumerate(vocab)}
        self.pos_vocab_ = {p: i for i, p in enumerate(pos_vocab)}
        self.log_start_, self.log_trans_, self.log_end_ = log_start, log_trans, log_end
        self.log_word_, self.log_pos_ = log_word, log_pos

    def _pos(self, s: Sentence) -> list[str]:
        """The POS column (every token ``UNKNOWN`` when the columns have none)."""
        pos = self.columns_.pos
        return s.column(pos) if pos is not None else [UNKNOWN] * len(s)

    def fit(self, X: Sequence[Sentence], y: None = None, *, dev: None = None,
            **options: Any) -> "HMM":
        """Relative frequencies (add-δ) of the tags, words and POS of the sentences ``X``,
        read from ``columns`` (tags in ``data_scheme``; ``y`` stays None); ``self``.
        The HMM counts once: it takes no ``dev`` and no option."""
        self._refuse_parameters(options)
        self._no_labels(y)
        sentences = X
        if options:
            raise InputError(f"HMM.fit() takes no option ({', '.join(options)}): an HMM "
                             f"counts once")
        if dev is not None:
            raise InputError("HMM.fit() takes no dev set: an HMM counts once and has "
                             "nothing to select on held-out data")
        delta, min_count = self._check_parameters()
        scheme = enc.canonical_scheme(self.scheme)
        data_scheme = enc.canonical_scheme(self.data_scheme or "IOB2")
        given = self.columns if self.columns is not None else Columns(
            self.word_col, self.pos_col, self.tag_col)
        cols = training_columns(sentences, given, "the HMM")
        gold = [gold_tags(s, data_scheme, scheme, cols.tag) for s in sentences]
        check_training_set(sentences, gold, "the HMM")
        self.scheme_, self.data_scheme_, self.columns_ = scheme, data_scheme, cols
        self.layout_ = Layout.of(sentences, cols, data_scheme)
        seqs = [(s.column(cols.word), self._pos(s), g) for s, g in zip(sentences, gold)]
        tags = TagSet.from_tags({t for _, _, ts in seqs for t in ts}, scheme).tags
        ix = {t: i for i, t in enumerate(tags)}
        L = len(tags)
        counts = Counter(w.lower() for ws, _, _ in seqs for w in ws)
        vocab = sorted(w for w, c in counts.items() if c >= min_count)
        vocab += sorted({UNKNOWN + word_shape(w) for ws, _, _ in seqs for w in ws
                         if counts[w.lower()] < min_count})
        # distinct entries, UNKNOWN last (a corpus may spell a word "<unk>")
        vocab = [w for w in dict.fromkeys(vocab) if w != UNKNOWN] + [UNKNOWN]
        vix = {w: i for i, w in enumerate(vocab)}
        pos_vocab = sorted({p for _, ps, _ in seqs for p in ps} - {UNKNOWN}) + [UNKNOWN]
        pix = {p: i for i, p in enumerate(pos_vocab)}
        start, end = np.full(L, delta), np.full(L, delta)
        trans = np.full((L, L), delta)
        word = np.full((L, len(vocab)), delta)
        pos = np.full((L, len(pos_vocab)), delta)
        for ws, ps, ts in seqs:
            t = [ix[x] for x in ts]
            start[t[0]] += 1
            end[t[-1]] += 1
            for a, b in zip(t, t[1:]):
                trans[a, b] += 1
            for w, p, x in zip(ws, ps, t):
                lw = w.lower()
                key = lw if counts[lw] >= min_count else UNKNOWN + word_shape(w)
                word[x, vix[key]] += 1
                pos[x, pix[p]] += 1
        trans_end = np.concatenate([trans, end[:, None]], axis=1)
        log_te = np.log(trans_end / trans_end.sum(axis=1, keepdims=True))
        self._set_parameters(tags, vocab, pos_vocab, np.log(start / start.sum()),
                             log_te[:, :L], log_te[:, L],
                             np.log(word / word.sum(axis=1, keepdims=True)),
                             np.log(pos / pos.sum(axis=1, keepdims=True)))
        self.settings_ = {"delta": delta, "min_count": min_count, "sentences": len(seqs)}
        return self

    def _word_index(self, w: str) -> int:
        lw = w.lower()
        if lw in self.vocab_:
            return self.vocab_[lw]
        return self.vocab_.get(UNKNOWN + word_shape(w), self.vocab_[UNKNOWN])

    def emissions(self, sentence: Sentence) -> np.ndarray:
        """log Pr(word, POS | tag) of every token, (n, L)."""
        self._check_fitted()
        if len(sentence) == 0:
            raise InputError(f"{sentence.source}: a sentence without tokens")
        self.columns_.require(len(sentence.rows[0]), sentence.where(0), "the HMM")
        w = [self._word_index(x) for x in sentence.column(self.columns_.word)]
        p = [self.pos_vocab_.get(x, self.pos_vocab_[UNKNOWN]) for x in self._pos(sentence)]
        return (self.log_word_[:, w] + self.log_pos_[:, p]).T

    def lattice(self, sentence: Sentence) -> Lattice:
        """Pr(x | w) as a lattice (the joint Pr(w, x), renormalised over valid x)."""
        emissions = self.emissions(sentence)        # refuses an unfitted HMM
        return Lattice.from_scores(self.tags_, emissions, self.log_trans_,
                                   self.log_start_, self.log_end_, scheme=self.scheme_,
                                   warn=False)

    def lattices(self, sentences: Sequence[Sentence]) -> list[Lattice]:
        """One lattice per sentence (the model protocol)."""
        return [self.lattice(s) for s in sentences]

    def save(self, path) -> None:
        """Write the model file (:func:`~fstchunk.models.io.save_model`)."""
        inv = sorted(self.vocab_, key=self.vocab_.get)
        pinv = sorted(self.pos_vocab_, key=self.pos_vocab_.get)
        save_model(path, "hmm", {
            **pack("vocab", inv), **pack("pos_vocab", pinv),
            "log_start": self.log_start_, "log_trans": self.log_trans_,
            "log_end": self.log_end_, "log_word": self.log_word_, "log_pos": self.log_pos_},
            {"tags": list(self.tags_), "scheme": self.scheme_,
             "columns": self.columns_.to_json(), "settings": self.settings_}, self.layout_)

    @classmethod
    def load(cls, path) -> "HMM":
        """The HMM saved at ``path``, every field validated (ModelFileError naming the
        file and the field otherwise)."""
        f = Fields(path, *load_model_file(path, "hmm"))
        scheme = f.scheme()
        tags = f.tags(scheme)
        settings = f.get("settings", dict)
        cols = f.columns(legacy=settings)
        m = cls(scheme, settings.get("delta", 0.1), settings.get("min_count", 2),
                columns=cols)
        try:
            m._check_parameters()
        except FstchunkError as e:
            raise f.error("settings", str(e)) from None
        vocab, pos_vocab = f.strings("vocab"), f.strings("pos_vocab")
        for field, v in (("vocab", vocab), ("pos_vocab", pos_vocab)):
            if UNKNOWN not in v:
                raise f.error(field, f"lacks the unknown-word entry {UNKNOWN!r}")
        L = len(tags)
        names = ("log_start", "log_trans", "log_end", "log_word", "log_pos")
        shapes = ((L,), (L, L), (L,), (L, len(vocab)), (L, len(pos_vocab)))
        logs = [f.array(field, "float", shape, finite=True) for field, shape in zip(names, shapes)]
        for field, a in zip(names, logs):
            if (a > 1e-9).any():
                raise f.error(field, "log-probabilities must be <= 0")
        m._set_parameters(tags, vocab, pos_vocab, *logs)
        m.scheme_, m.columns_, m.settings_ = scheme, cols, dict(settings)
        m.layout_ = f.layout(cols)
        m.data_scheme_ = m.layout_.data_scheme if m.layout_ is not None else None
        if m.data_scheme_ is not None:
            m.data_scheme = m.data_scheme_
        return m
