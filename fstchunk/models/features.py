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

Pitfall: positions outside the sentence read as ``__BOS__``/``__EOS__`` (distinct
per offset), so W-2 at the first token is a feature, not a missing value.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import scipy.sparse as sp

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

TEMPLATES: dict[str, list] = {
    "tmpt1": [[a] for a in _ATOMIC] + _PURE,
    "tmpt2": [[a] for a in _ATOMIC] + _PURE + _W_TRIGRAMS,
    "tmpt3": [[a] for a in _ATOMIC] + _PURE + _MIXED,
    "tmpt4": [[a] for a in _ATOMIC] + _PURE + _W_TRIGRAMS + _MIXED,
    "ner": None,
}


def _off(o: int) -> str:
    return f"{o:+d}" if o else "0"


def _name(items) -> str:
    return "".join(f"{k}{_off(o)}" for k, o in items)


def token_features(words: Sequence[str], pos: Sequence[str], template: str) -> list[list[str]]:
    """Feature strings of every token of one sentence."""
    if template not in TEMPLATES:
        raise InputError(f"unknown feature template {template!r}; use one of "
                         f"{', '.join(TEMPLATES)}")
    n = len(words)
    if template == "ner":
        return _ner_features(words, pos)
    cols = {"W": list(words), "P": list(pos)}

    def at(kind, i):
        if i < 0:
            return f"__BOS{i}__"
        if i >= n:
            return f"__EOS+{i - n + 1}__"
        return cols[kind][i]

    specs = [(_name(items), items) for items in TEMPLATES[template]]
    out = []
    for i in range(n):
        feats = ["b"]
        for name, items in specs:
            feats.append(name + "=" + "|".join(at(k, i + o) for k, o in items))
        out.append(feats)
    return out


def _ner_features(words, pos) -> list[list[str]]:
    n = len(words)
    low = [w.lower() for w in words]
    shp = [word_shape(w) for w in words]

    def at(seq, i, pad="__PAD__"):
        return seq[i] if 0 <= i < n else f"{pad}{i - (n - 1) if i >= n else i}"

    out = []
    for i in range(n):
        w = words[i]
        f = ["b"] + [f"w{_off(o)}={at(low, i + o)}" for o in (-2, -1, 0, 1, 2)]
        f += [f"s{_off(o)}={at(shp, i + o)}" for o in (-1, 0, 1)]
        f += [f"p{_off(o)}={at(pos, i + o)}" for o in (-2, -1, 0, 1, 2)]
        f += [f"pre{k}={w[:k]}" for k in range(1, 5) if len(w) >= k]
        f += [f"suf{k}={w[-k:]}" for k in range(1, 5) if len(w) >= k]
        f += ["w0|w+1=" + low[i] + "|" + at(low, i + 1), "w-1|w0=" + at(low, i - 1) + "|" + low[i]]
        if i == 0:
            f.append("first")
        out.append(f)
    return out


class FeatureMap:
    """Feature strings -> column indices, fixed after :meth:`fit`."""

    def __init__(self, template: str, names: Sequence[str], word_col: int = 0,
                 pos_col: int = 1) -> None:
        if template not in TEMPLATES:
            raise InputError(f"unknown feature template {template!r}")
        self.template = template
        self.names = list(names)
        self.index = {f: i for i, f in enumerate(self.names)}
        self.word_col, self.pos_col = word_col, pos_col

    @classmethod
    def fit(cls, sentences: Sequence[Sentence], template: str, min_count: int = 1,
            word_col: int = 0, pos_col: int = 1) -> "FeatureMap":
        counts: dict[str, int] = {}
        for s in sentences:
            for feats in cls._features(s, template, word_col, pos_col):
                for f in feats:
                    counts[f] = counts.get(f, 0) + 1
        names = sorted(f for f, c in counts.items() if c >= min_count)
        return cls(template, names, word_col, pos_col)

    @staticmethod
    def _features(s: Sentence, template: str, word_col: int, pos_col: int
                  ) -> list[list[str]]:
        if len(s.rows[0]) <= max(word_col, pos_col):
            raise InputError(f"{s.where(0)}: features read columns {word_col} (word) and "
                             f"{pos_col} (POS), but the line has {len(s.rows[0])} columns")
        return token_features(s.column(word_col), s.column(pos_col), template)

    def __len__(self) -> int:
        return len(self.names)

    def transform(self, sentences: Sequence[Sentence]) -> sp.csr_matrix:
        """Binary matrix (tokens of all sentences, in order) x features."""
        indptr, indices = [0], []
        for s in sentences:
            for feats in self._features(s, self.template, self.word_col, self.pos_col):
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
        names = bytes(arrays["feature_names"]).decode("utf-8").split("\n")
        return cls(meta["template"], names if names != [""] else [], meta.get("word_col", 0),
                   meta.get("pos_col", 1))
