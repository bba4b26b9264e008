"""Feature templates and the feature map (strings -> columns of a sparse matrix).

Chunking templates of Tang et al. (Tables 2-6; W = word, P = POS, offsets -2..2):

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
window to ±2.  :func:`resolve_template` picks the variant: a template that reads
POS becomes its ``-nopos`` variant when the columns have no POS column, and that is
the name a model records.  A ``-nopos`` template never reads a POS column, even if
the file has one.  :data:`TEMPLATES` names every template (the CLI's choices).

Pitfalls:

* positions outside the sentence read as ``__BOS__``/``__EOS__`` (distinct per
  offset), so W-2 at the first token is a feature, not a missing value;
* a template that reads POS on lines without the POS column is refused
  (:class:`~fstchunk.errors.InputError` naming file:line and the fix); it is never
  read from another column.
"""

from __future__ import annotations

import functools
import re
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ..columns import Columns
from ..conll import Sentence
from ..errors import InputError


# ------------------------------------------------------------------ word shapes
def word_shape(word: str) -> str:
    """Collapsed character classes: 'Verwilghen' -> 'Xx', '1.8' -> 'd.d'
    (the HMM's unknown-word classes and the NER template's shape feature)."""
    s = re.sub(r"[A-Z]", "X", word)
    s = re.sub(r"[a-z]", "x", s)
    s = re.sub(r"[0-9]", "d", s)
    return re.sub(r"(.)\1+", r"\1", s)


def capital_class(word: str) -> str:
    """Shimizu & Haas Table 5, first rule that matches: CAPITAL, CAP_ONE, CAP_ALL, CAP_MIX, NUMBER."""
    if re.fullmatch(r"[A-Z][a-z]+", word):
        return "CAPITAL"
    if re.fullmatch(r"[A-Z]", word):
        return "CAP_ONE"
    if re.fullmatch(r"[A-Z]+", word):
        return "CAP_ALL"
    if re.match(r"[A-Z]+[a-z]+[A-Z]+[a-z]", word):
        return "CAP_MIX"
    if re.search(r"[0-9]", word):
        return "NUMBER"
    return "-"


_ATOMIC = [("W", -2), ("W", -1), ("W", 0), ("W", 1), ("W", 2),
           ("P", -2), ("P", -1), ("P", 0), ("P", 1), ("P", 2)]
_PURE = [[("W", -2), ("W", -1)], [("W", -1), ("W", 0)], [("W", 0), ("W", 1)],
         [("W", 1), ("W", 2)], [("P", -2), ("P", -1)], [("P", -1), ("P", 0)],
         [("P", 0), ("P", 1)], [("P", 1), ("P", 2)], [("P", -2), ("P", -1), ("P", 0)],
         [("P", -1), ("P", 0), ("P", 1)], [("P", 0), ("P", 1), ("P", 2)]]
_W_TRIGRAMS = [[("W", -2), ("W", -1), ("W", 0)], [("W", -1), ("W", 0), ("W", 1)],
               [("W", 0), ("W", 1), ("W", 2)]]
_MIXED = [[("P", -1), ("W", -1)], [("P", 0), ("W", 0)], [("P", -1), ("P", 0), ("W", -1)],
          [("P", -1), ("P", 0), ("W", 0)], [("P", -1), ("W", -1), ("W", 0)],
          [("P", 0), ("W", -1), ("W", 0)], [("P", -1), ("P", 0), ("P", 1), ("W", 0)]]

_BASE: dict[str, list] = {
    "tmpt1": [[a] for a in _ATOMIC] + _PURE,
    "tmpt2": [[a] for a in _ATOMIC] + _PURE + _W_TRIGRAMS,
    "tmpt3": [[a] for a in _ATOMIC] + _PURE + _MIXED,
    "tmpt4": [[a] for a in _ATOMIC] + _PURE + _W_TRIGRAMS + _MIXED,
}
#: the suffix of a template's POS-free variant
NOPOS = "-nopos"


def _shapes_for_pos(spec: list) -> list:
    return [[("S" if k == "P" else k, o) for k, o in items] for items in spec]


#: every template by name (``None``: the NER template, built by its own function)
TEMPLATES: dict[str, list | None] = {
    **_BASE, **{name + NOPOS: _shapes_for_pos(spec) for name, spec in _BASE.items()},
    "ner": None, "ner" + NOPOS: None,
}


def _check_template(template: str) -> None:
    if template not in TEMPLATES:
        raise InputError(f"unknown feature template {template!r}; use one of "
                         f"{', '.join(TEMPLATES)}")


def reads_pos(template: str) -> bool:
    """Whether ``template`` reads a POS column (every template but the ``-nopos`` ones)."""
    _check_template(template)
    return not template.endswith(NOPOS)


def resolve_template(template: str, columns: Columns) -> str:
    """The template a model trained on ``columns`` uses: ``template`` itself, or its
    ``-nopos`` variant when it reads POS and ``columns.pos`` is None."""
    if reads_pos(template) and columns.pos is None:
        return template + NOPOS
    return template


@functools.lru_cache(maxsize=None)
def feature_kinds(template: str) -> frozenset[str]:
    """The kinds of feature ``template`` writes (each feature string's part before
    its first ``=``: ``W0``, ``P-1W-1``, ``suf3``, ``first``, ...), so that a model
    file's feature names can be checked against its template."""
    words = ["Abcd", "efgh", "ijkl"]
    feats = token_features(words, ["P"] * len(words) if reads_pos(template) else None,
                           template)
    return frozenset(f.split("=", 1)[0] for token in feats for f in token)


def _off(o: int) -> str:
    return f"{o:+d}" if o else "0"


def _name(items) -> str:
    return "".join(f"{k}{_off(o)}" for k, o in items)


def _affixes(w: str) -> list[str]:
    return ([f"pre{k}={w[:k]}" for k in range(1, 5) if len(w) >= k] +
            [f"suf{k}={w[-k:]}" for k in range(1, 5) if len(w) >= k])


def token_features(words: Sequence[str], pos: Sequence[str] | None, template: str
                   ) -> list[list[str]]:
    """Feature strings of every token of one sentence (``pos`` is not read, and may be
    None, for a ``-nopos`` template)."""
    if reads_pos(template) and pos is None:
        raise InputError(f"feature template {template!r} reads POS tags, but there is no "
                         f"POS column; use {template + NOPOS}")
    n = len(words)
    if template.startswith("ner"):
        return _ner_features(words, pos if reads_pos(template) else None)
    cols = {"W": list(words), "P": list(pos or ()), "S": [word_shape(w) for w in words]}

    def at(kind, i):
        if i < 0:
            return f"__BOS{i}__"
        if i >= n:
            return f"__EOS+{i - n + 1}__"
        return cols[kind][i]

    specs = [(_name(items), items) for items in TEMPLATES[template]]
    affixes = not reads_pos(template)
    out = []
    for i in range(n):
        feats = ["b"]
        for name, items in specs:
            feats.append(name + "=" + "|".join(at(k, i + o) for k, o in items))
        if affixes:
            feats += _affixes(words[i])
        out.append(feats)
    return out


def _ner_features(words: Sequence[str], pos: Sequence[str] | None) -> list[list[str]]:
    n = len(words)
    low = [w.lower() for w in words]
    shp = [word_shape(w) for w in words]

    def at(seq, i, pad="__PAD__"):
        return seq[i] if 0 <= i < n else f"{pad}{i - (n - 1) if i >= n else i}"

    shape_window = (-1, 0, 1) if pos is not None else (-2, -1, 0, 1, 2)
    out = []
    for i in range(n):
        f = ["b"] + [f"w{_off(o)}={at(low, i + o)}" for o in (-2, -1, 0, 1, 2)]
        f += [f"s{_off(o)}={at(shp, i + o)}" for o in shape_window]
        if pos is not None:
            f += [f"p{_off(o)}={at(pos, i + o)}" for o in (-2, -1, 0, 1, 2)]
        f += _affixes(words[i])
        f += ["w0|w+1=" + low[i] + "|" + at(low, i + 1), "w-1|w0=" + at(low, i - 1) + "|" + low[i]]
        if i == 0:
            f.append("first")
        out.append(f)
    return out


class FeatureMap:
    """Feature strings -> column indices, fixed after :meth:`fit`; reads the words
    from column ``word_col`` and, unless the template is a ``-nopos`` one, the POS
    tags from column ``pos_col`` (None: no POS column)."""

    def __init__(self, template: str, names: Sequence[str], word_col: int = 0,
                 pos_col: int | None = 1) -> None:
        _check_template(template)
        if reads_pos(template) and pos_col is None:
            raise InputError(f"feature template {template!r} reads POS tags, but there is "
                             f"no POS column; use {template + NOPOS}")
        self.template = template
        self.names = list(names)
        self.index = {f: i for i, f in enumerate(self.names)}
        self.word_col, self.pos_col = word_col, pos_col

    @classmethod
    def fit(cls, sentences: Sequence[Sentence], template: str, min_count: int = 1,
            word_col: int = 0, pos_col: int | None = 1) -> "FeatureMap":
        """The features of ``template`` seen at least ``min_count`` times in ``sentences``."""
        fmap = cls(template, [], word_col, pos_col)
        counts: dict[str, int] = {}
        for s in sentences:
            for feats in fmap.features(s):
                for f in feats:
                    counts[f] = counts.get(f, 0) + 1
        return cls(template, sorted(f for f, c in counts.items() if c >= min_count),
                   word_col, pos_col)

    def features(self, s: Sentence) -> list[list[str]]:
        """The feature strings of every token of ``s``; InputError naming the line if it
        lacks a column the template reads."""
        pos_col = self.pos_col if reads_pos(self.template) else None
        Columns(self.word_col, pos_col, None).require(
            len(s.rows[0]) if s.rows else 0, s.where(0), f"feature template {self.template}")
        pos = s.column(pos_col) if pos_col is not None else None
        return token_features(s.column(self.word_col), pos, self.template)

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
        """For a model file: the names as one UTF-8 byte array (no pickle, compact)."""
        blob = "\n".join(self.names).encode("utf-8")
        return {"feature_names": np.frombuffer(blob, dtype=np.uint8)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], meta: dict) -> "FeatureMap":
        """The feature map :meth:`to_arrays` wrote, with ``meta``'s template and columns
        (``word_col``/``pos_col``, defaults 0 and 1); the model's loader validates them."""
        names = bytes(arrays["feature_names"]).decode("utf-8").split("\n")
        return cls(meta["template"], names if names != [""] else [], meta.get("word_col", 0),
                   meta.get("pos_col", 1))
