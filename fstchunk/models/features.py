"""Feature templates and the feature map (strings -> columns of a sparse matrix).

Every template is a template file (:mod:`fstchunk.models.templates`: CRF++'s syntax,
Wapiti's commands, fstchunk's functions); the built-in names are the files shipped in
``fstchunk/models/tpl/`` (package data), and ``--features PATH`` reads any other.
The built-in chunking templates of Tang et al. (Tables 2-6; W = word, P = POS,
offsets -2..2):

* ``tmpt1`` (Table 3): atomic W-2..W2, P-2..P2; word bigrams W-2W-1, W-1W0, W0W1,
  W1W2; POS bigrams and trigrams P-2P-1, P-1P0, P0P1, P1P2, P-2P-1P0, P-1P0P1, P0P1P2.
* ``tmpt2`` (Table 4): tmpt1 plus word trigrams W-2W-1W0, W-1W0W1, W0W1W2.
* ``tmpt3`` (Table 5): tmpt1 plus mixed P-1W-1, P0W0, P-1P0W-1, P-1P0W0, P-1W-1W0,
  P0W-1W0, P-1P0P1W0.
* ``tmpt4`` (Table 6): tmpt3 plus the word trigrams.

``ner`` (CoNLL-2002): lower-cased words in a ±2 window, word shape of W-1..W1,
prefixes and suffixes of W0 up to 4 characters, POS in a ±2 window, and a
first-token flag.  Every token also has the bias feature ``b``.

POS-free variants (``tmpt1-nopos`` ... ``tmpt4-nopos``, ``ner-nopos``) are for files
without a POS column (``--columns word,tag``): every P item becomes S, the word
shape (:func:`word_shape`) at the same offset (so P-1P0 becomes the shape bigram
S-1S0 and P0W0 becomes S0W0), and the tmpt variants add the prefixes and suffixes of
W0 up to 4 characters; ``ner-nopos`` drops the POS window and widens the shape
window to ±2.  :func:`resolve_template` picks the variant: a built-in template that
reads POS becomes its ``-nopos`` variant when the columns have no POS column, and
that is the name a model records (a template file is never changed: one that reads
POS without a POS column is refused).  :data:`TEMPLATES` names the built-ins.

Pitfalls:

* positions outside the sentence read as ``__BOS-1__``/``__EOS+1__`` (the tmpt
  files' ``%pad``; ``__PAD__-1``/``__PAD__1`` in ner), so W-2 at the first token is a
  feature, not a missing value;
* a template that reads POS on lines without the POS column is refused
  (:class:`~fstchunk.core.errors.InputError` naming file:line and the fix); it is never
  read from another column.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ..io.columns import Columns
from ..io.conll import Sentence
from ..core import sources
from ..core.errors import InputError
from ..core.stringpack import pack, unpack
from .templates import Template, capital_class, parse_template, read_template, word_shape

__all__ = ["TEMPLATES", "NOPOS", "FeatureMap", "Template", "capital_class", "feature_kinds",
           "reads_pos", "resolve_template", "template_of", "token_features", "word_shape"]

#: the suffix of a template's POS-free variant
NOPOS = "-nopos"
#: where the built-in template files are
TEMPLATE_DIR = Path(__file__).parent / "tpl"
#: every built-in template by name: its file
TEMPLATES: dict[str, Path] = {
    name + variant: TEMPLATE_DIR / f"{name}{variant}.tpl"
    for name in ("tmpt1", "tmpt2", "tmpt3", "tmpt4", "ner") for variant in ("", NOPOS)}


@functools.lru_cache(maxsize=None)
def _builtin(name: str) -> Template:
    return parse_template(TEMPLATES[name].read_text(encoding="utf-8"), name)


def template_of(template: "str | Template") -> Template:
    """The parsed template: a :class:`Template` itself, a built-in name, or the path of
    a template file; InputError naming an unknown name or an unreadable file."""
    if isinstance(template, Template):
        return template
    if template in TEMPLATES:
        return _builtin(template)
    if sources.is_readable(template):
        return read_template(template)
    raise InputError(f"unknown feature template {template!r}; use a template file or one "
                     f"of {', '.join(TEMPLATES)}")


def reads_pos(template: "str | Template") -> bool:
    """Whether ``template`` reads a POS column (every built-in but the ``-nopos`` ones;
    a template file: whether a macro reads ``pos``, or a column number before it is
    bound to the columns)."""
    return template_of(template).reads_pos


def resolve_template(template: "str | Template", columns: Columns) -> "str | Template":
    """The template a model trained on ``columns`` uses: ``template`` itself, or the
    ``-nopos`` variant of a built-in that reads POS when ``columns.pos`` is None."""
    if isinstance(template, str) and template in TEMPLATES and not template.endswith(
            NOPOS) and columns.pos is None:
        return template + NOPOS
    template_of(template)
    return template


@functools.lru_cache(maxsize=None)
def feature_kinds(template: str) -> frozenset[str]:
    """The kinds of feature a built-in ``template`` writes (each feature string's part
    before its first ``=``: ``W0``, ``P-1W-1``, ``suf3``, ``first``, ...), so that a
    model file's feature names can be checked against its template."""
    words = ["Abcd", "efgh", "ijkl"]
    feats = token_features(words, ["P"] * len(words) if reads_pos(template) else None,
                           template)
    return frozenset(f.split("=", 1)[0] for token in feats for f in token)


def token_features(words: Sequence[str], pos: Sequence[str] | None,
                   template: "str | Template") -> list[list[str]]:
    """Feature strings of every token of one sentence (``pos`` is not read, and may be
    None, for a template that does not read POS); a template file's column numbers
    must be bound (:meth:`Template.bind`) first."""
    spec = template_of(template)
    if spec.reads_pos and pos is None:
        fix = (f"use {spec.name + NOPOS}" if spec.name in TEMPLATES
               else "give a POS column, or a template without pos")
        raise InputError(f"feature template {spec.name!r} reads POS tags, but there is no "
                         f"POS column; {fix}")
    if any(isinstance(r.col, int) for r in spec.refs):
        raise InputError(f"feature template {spec.name!r} reads columns by number: bind it "
                         f"to the data's columns first (Template.bind)")
    return spec.features({"word": words, "pos": pos})


class FeatureMap:
    """Feature strings -> column indices, fixed after :meth:`fit`; reads the words
    from column ``word_col`` and, if the template reads POS, the POS tags from column
    ``pos_col`` (None: no POS column).  ``template`` is a built-in name, a template
    file's path or a :class:`Template`; its column numbers are bound to these columns
    (:meth:`Template.bind`).  :attr:`template` is its name, :attr:`spec` the bound
    template."""

    def __init__(self, template: "str | Template", names: Sequence[str], word_col: int = 0,
                 pos_col: int | None = 1) -> None:
        spec = template_of(template)
        if spec.reads_pos and pos_col is None and spec.name in TEMPLATES:
            raise InputError(f"feature template {spec.name!r} reads POS tags, but there is "
                             f"no POS column; use {spec.name + NOPOS}")
        self.spec = spec.bind(Columns(word_col, pos_col, None))
        self.template = spec.name
        self.names = list(names)
        self.index = {f: i for i, f in enumerate(self.names)}
        self.word_col, self.pos_col = word_col, pos_col

    @property
    def builtin(self) -> bool:
        """Whether the template is a built-in one (a model file then stores its name
        only; a template file's text is stored whole)."""
        return self.template in TEMPLATES and self.spec.source == _builtin(
            self.template).source

    @classmethod
    def fit(cls, sentences: Sequence[Sentence], template: "str | Template",
            min_count: int = 1, word_col: int = 0, pos_col: int | None = 1) -> "FeatureMap":
        """The features of ``template`` seen at least ``min_count`` times in ``sentences``."""
        fmap = cls(template, [], word_col, pos_col)
        counts: dict[str, int] = {}
        for s in sentences:
            for feats in fmap.features(s):
                for f in feats:
                    counts[f] = counts.get(f, 0) + 1
        return cls(fmap.spec, sorted(f for f, c in counts.items() if c >= min_count),
                   word_col, pos_col)

    def features(self, s: Sentence) -> list[list[str]]:
        """The feature strings of every token of ``s``; InputError naming the line if it
        lacks a column the template reads."""
        pos_col = self.pos_col if self.spec.reads_pos else None
        Columns(self.word_col, pos_col, None).require(
            len(s.rows[0]) if s.rows else 0, s.where(0), f"feature template {self.template}")
        pos = s.column(pos_col) if pos_col is not None else None
        return self.spec.features({"word": s.column(self.word_col), "pos": pos})

    def __len__(self) -> int:
        return len(self.names)

    def transform(self, sentences: Sequence[Sentence]) -> sp.csr_matrix:
        """Binary matrix (tokens of all sentences, in order) x features."""
        indptr, indices = [0], []
        for s in sentences:
            for feats in self.features(s):
                cols = sorted({self.index[f] for f in feats if f in self.index})
                indices.extend(cols)
                indptr.append(len(indices))
        data = np.ones(len(indices))
        return sp.csr_matrix((data, np.array(indices, dtype=np.int64), np.array(indptr)),
                             shape=(len(indptr) - 1, len(self.names)))

    def to_arrays(self) -> dict[str, np.ndarray]:
        """For a model file: the names as one UTF-8 byte array (no pickle, compact,
        lossless: :mod:`fstchunk.core.stringpack`); the template's text goes to the metadata
        (:meth:`meta`)."""
        return pack("feature_names", self.names)

    def meta(self) -> dict:
        """For a model file's metadata: the template's name, and a template file's text
        (``template_source``), so that the model never depends on the file staying."""
        return {"template": self.template} if self.builtin else {
            "template": self.template, "template_source": self.spec.source,
            "template_regex": self.spec.flavor}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], meta: dict) -> "FeatureMap":
        """The feature map :meth:`to_arrays` wrote, with ``meta``'s template and columns
        (``word_col``/``pos_col``, defaults 0 and 1); the model's loader validates them."""
        names = unpack("feature_names", arrays)
        template = meta["template"]
        if "template_source" in meta:
            template = parse_template(meta["template_source"], template,
                                      meta.get("template_regex", "python"), saved=True)
        return cls(template, names, meta.get("word_col", 0),
                   meta.get("pos_col", 1))
