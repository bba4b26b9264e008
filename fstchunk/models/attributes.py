"""Weighted attributes: python-crfsuite's token features, as a sparse matrix.

A sequence is a list of items (tokens); an item is what python-crfsuite's ``to_item``
reads (pycrfsuite/_pycrfsuite.pyx), flattened by :func:`flatten_item` into
(attribute name, value) pairs:

* a dict ``{name: value}``: a string (or bytes) value gives ``name:value`` with 1.0;
  a number gives ``name`` with that weight (a bool, numpy's too: 1.0 or 0.0); a nested
  dict, list or set gives ``name:`` + each of its own attributes (``{"a": {"b": 2}}`` is
  ``a:b`` = 2, ``{"a": ["x", "y"]}`` is ``a:x``, ``a:y`` = 1);
* a list, tuple or set of strings: each string an attribute with 1.0.

A token that is a bare string (pycrfsuite would read its characters) and values that
are neither (None, a tuple, NaN) are refused, one :class:`InputError` naming the
sequence, the token and the attribute.

:func:`fit_attributes` builds what CRFsuite's ``crf1df_generate`` builds
(lib/crf/src/crf1d_feature.c): the frequency of a state feature (attribute a,
label l) is Σ of a's values over the tokens labelled l, a transition's the count of
the label bigram; a feature is kept when ``min_freq <= freq`` (``feature.minfreq``);
``all_possible_states`` adds every (attribute, label) pair at frequency 0,
``all_possible_transitions`` every label pair.  Attributes left without a state
feature are dropped (as CRFsuite's model writer drops them); the rest keep their
order of first appearance.  :class:`AttributeMap` is the name -> column dictionary;
its :meth:`AttributeMap.transform` gives tokens x attributes with the values
(unknown attributes are ignored, as CRFsuite's tagger ignores them).

Pitfall: an attribute repeated in one item adds up (CRFsuite's item holds both).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from numbers import Real
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from ..core.errors import InputError
from ..core.stringpack import pack
from ..io.conll import Sentence

#: python-crfsuite's separator between a prefix and a nested name or a string value
SEP = ":"
#: ints at or beyond it (float's range) leave the fast path, to be refused by name
BIG = 2 ** 1023


def _name(key: Any, where: str) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        try:
            return key.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{where}: attribute name {key!r} is not UTF-8") from None
    raise InputError(f"{where}: attribute name {key!r} is not a string")


def _flat(x: Any, prefix: str, names: list, values: list, where: str) -> None:
    if isinstance(x, dict):
        for key, value in x.items():
            name = prefix + _name(key, where)
            if isinstance(value, str):
                names.append(name + SEP + value)
                values.append(1.0)
            elif isinstance(value, (dict, list, set)):
                _flat(value, name + SEP, names, values, where)
            elif isinstance(value, bytes):
                names.append(name + SEP + _name(value, where))
                values.append(1.0)
            elif isinstance(value, (Real, np.bool_)):      # numpy's bool is no Real
                try:
                    v = float(value)
                except OverflowError:                        # an int beyond float's range
                    v = math.inf
                if not math.isfinite(v):
                    raise InputError(f"{where}: attribute {name!r} has the value {value!r:.40}; "
                                     f"a weight must be a finite number")
                names.append(name)
                values.append(v)
            else:
                raise InputError(f"{where}: attribute {name!r} has a value of type "
                                 f"{type(value).__name__} ({value!r:.40}); python-crfsuite "
                                 f"reads str, bytes, numbers, bool, dict, list and set")
    elif isinstance(x, (list, tuple, set)):
        for key in x:
            names.append(prefix + _name(key, where))
            values.append(1.0)
    else:
        raise InputError(f"{where}: an item must be a dict of attributes or a list of "
                         f"attribute names, got {type(x).__name__} ({x!r:.40})")


def flatten_item(item: Any, where: str = "item") -> tuple[list[str], list[float]]:
    """The (names, values) of one item (module doc); InputError naming ``where``."""
    if isinstance(item, (str, bytes)):
        raise InputError(f"{where}: an item is a dict of attributes or a list of attribute "
                         f"names, not the string {item!r:.40} (a sentence is a list of "
                         f"items, one per token)")
    names: list[str] = []
    values: list[float] = []
    _flat(item, "", names, values, where)
    return names, values


def check_sequences(X: Any, what: str = "X") -> list:
    """``X`` as a list of sequences, each a non-empty list of items; InputError naming
    the sequence otherwise."""
    if isinstance(X, (str, bytes, dict)) or not hasattr(X, "__iter__"):
        raise InputError(f"{what} must be a list of sequences (each a list of token "
                         f"features), got {type(X).__name__}")
    out = []
    for i, seq in enumerate(X):
        if isinstance(seq, Sentence):
            raise InputError(f"{seq.source}: an attribute CRF reads item sequences (token "
                             f"features as python-crfsuite takes them), not CoNLL columns")
        if isinstance(seq, (str, bytes, dict)) or not hasattr(seq, "__len__"):
            raise InputError(f"{what}[{i}]: a sequence must be a list of items (token "
                             f"features), got {type(seq).__name__}")
        if len(seq) == 0:
            raise InputError(f"{what}[{i}]: a sequence without tokens")
        out.append(seq)
    return out


def _flatten_all(X: Sequence[Sequence[Any]], what: str
                 ) -> tuple[list[str], list[float], np.ndarray]:
    """Every item's names and values, concatenated, and the entry offset of each token.
    The common item (a dict of str keys to str, bool, int or float values) takes a
    fast path; anything else goes through :func:`_flat`, which checks every value."""
    names: list[str] = []
    values: list[float] = []
    offsets = [0]
    add_name, add_value = names.append, values.append
    isfinite = math.isfinite
    for i, seq in enumerate(X):
        for t, item in enumerate(seq):
            if type(item) is dict:
                for key, value in item.items():
                    tv = type(value)
                    if type(key) is not str:
                        break
                    if tv is str:
                        add_name(key + SEP + value)
                        add_value(1.0)
                    elif tv is bool or (tv is float and isfinite(value)) or (
                            tv is int and -BIG < value < BIG):
                        add_name(key)
                        add_value(float(value))
                    else:
                        break
                else:
                    offsets.append(len(names))
                    continue
                del names[offsets[-1]:], values[offsets[-1]:]     # the slow path instead
            elif isinstance(item, (str, bytes)):
                flatten_item(item, f"{what}[{i}][{t}]")       # raises
            _flat(item, "", names, values, f"{what}[{i}][{t}]")
            offsets.append(len(names))
    return names, values, np.asarray(offsets, dtype=np.int64)


@dataclass
class AttributeMap:
    """Attribute names -> columns (module doc)."""
    names: list[str]

    def __post_init__(self) -> None:
        self.index = {n: i for i, n in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def transform(self, X: Sequence[Sequence[Any]], what: str = "X") -> sp.csr_matrix:
        """Tokens x attributes with the items' values; unknown attributes ignored.

        The common item (a dict of str keys to str, bool, int or float values) is read
        without building its ``name:value`` strings: (key, value) looked up in
        :attr:`pairs`; any other item goes through :func:`flatten_item` (which checks
        every value) and the names."""
        cols: list[int] = []
        values: list[float] = []
        offsets = [0]
        add_col, add_value = cols.append, values.append
        pairs, index = self.pairs.get, self.index.get
        none: dict = {}
        for i, seq in enumerate(X):
            for t, item in enumerate(seq):
                if type(item) is dict:
                    mark = len(cols)
                    for key, value in item.items():
                        tv = value.__class__
                        if key.__class__ is not str:
                            break
                        if tv is str:
                            add_col(pairs(key, none).get(value, -1))
                            add_value(1.0)
                        elif tv is float and value - value == 0.0 or tv is bool or (
                                tv is int and -BIG < value < BIG):
                            add_col(pairs(key, none).get(None, -1))
                            add_value(float(value))
                        else:
                            break
                    else:
                        offsets.append(len(cols))
                        continue
                    del cols[mark:], values[mark:]        # the slow path instead
                names, vals = flatten_item(item, f"{what}[{i}][{t}]")
                cols.extend(index(n, -1) for n in names)
                values.extend(vals)
                offsets.append(len(cols))
        return _rows(np.asarray(cols, dtype=np.int64), np.asarray(values, dtype=float),
                     np.asarray(offsets, dtype=np.int64), len(self))

    @functools.cached_property
    def pairs(self) -> dict[str, dict[str | None, int]]:
        """key -> {string value (None: a number's weight) -> column}: every way of
        reading each name as ``key:value`` (cut at any of its colons) or as a key of
        a number, so that a lookup by (key, value) finds what ``key + ":" + value``
        would find (python-crfsuite's names are those strings)."""
        out: dict[str, dict[str | None, int]] = {}
        for name, col in self.index.items():
            out.setdefault(name, {}).setdefault(None, col)
            at = name.find(SEP)
            while at >= 0:
                out.setdefault(name[:at], {}).setdefault(name[at + 1:], col)
                at = name.find(SEP, at + 1)
        return out

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The names, losslessly (:mod:`fstchunk.core.stringpack`, as the CRF's
        ``feature_names``)."""
        return pack("attribute_names", self.names)


def _rows(cols: np.ndarray, values: np.ndarray, offsets: np.ndarray, width: int
          ) -> sp.csr_matrix:
    """CSR with token t's entries at offsets[t]..offsets[t+1]; columns < 0 dropped,
    explicit zeros kept (a False attribute is a feature of frequency 0)."""
    keep = cols >= 0
    kept = np.concatenate([[0], np.cumsum(keep)])
    indptr = kept[offsets]
    return sp.csr_matrix((values[keep], cols[keep], indptr),
                         shape=(len(offsets) - 1, width))


@dataclass
class Fitted:
    """What :func:`fit_attributes` learns: the attribute map, X of the training
    tokens, the state feature pairs (attribute, label) and the free transitions."""
    attributes: AttributeMap
    X: sp.csr_matrix
    pairs: np.ndarray
    transitions: np.ndarray      # (L, L) bool: the transition features


def fit_attributes(X: Sequence[Sequence[Any]], gold: Sequence[np.ndarray], L: int,
                   min_freq: float = 0.0, all_possible_states: bool = False,
                   all_possible_transitions: bool = False) -> Fitted:
    """CRFsuite's feature generation over the training sequences (module doc);
    ``gold``: each sequence's label indices, or boolean masks (n, L) of the labels
    each token stands for (partial labels, :mod:`.partial`: a token counts for every
    label its row holds, freq(a, l) = Σ_t x_{t,a}·M[t, l], bigram counts
    Σ_t M[t-1]ᵀM[t]; one-hot rows are the indices' counts)."""
    names, values, offsets = _flatten_all(X, "X")
    first = {n: i for i, n in enumerate(dict.fromkeys(names))}     # order of appearance
    cols = np.fromiter(map(first.__getitem__, names), dtype=np.int64, count=len(names))
    vals = np.asarray(values, dtype=float)
    A = len(first)
    if len(gold) and np.ndim(gold[0]) == 2:
        return _fit_masks(gold, L, min_freq, all_possible_states,
                          all_possible_transitions, first, cols, vals, offsets)
    y = np.concatenate(gold) if len(gold) else np.zeros(0, dtype=np.int64)
    labels = np.repeat(y, np.diff(offsets))
    keys = cols * L + labels
    freq = np.bincount(keys, weights=vals, minlength=A * L)
    seen = np.zeros(A * L, bool)
    seen[keys] = True
    tcount = np.zeros((L, L))
    for g in gold:
        np.add.at(tcount, (g[:-1], g[1:]), 1.0)
    return _keep(freq, seen, tcount, L, min_freq, all_possible_states,
                 all_possible_transitions, first, cols, vals, offsets)


def _fit_masks(masks, L, min_freq, all_possible_states, all_possible_transitions,
               first, cols, vals, offsets) -> Fitted:
    """:func:`fit_attributes` over label masks (its doc)."""
    A, T = len(first), len(offsets) - 1
    M = np.concatenate(masks).astype(float)
    tok = np.repeat(np.arange(T), np.diff(offsets))
    C = sp.csr_matrix((vals, (cols, tok)), shape=(A, T))
    S = sp.csr_matrix((np.ones_like(vals), (cols, tok)), shape=(A, T))
    freq = np.asarray(C @ M).ravel()
    seen = np.asarray(S @ M).ravel() > 0
    tcount = np.zeros((L, L))
    for m in masks:
        mf = np.asarray(m, dtype=float)
        tcount += mf[:-1].T @ mf[1:]
    return _keep(freq, seen, tcount, L, min_freq, all_possible_states,
                 all_possible_transitions, first, cols, vals, offsets)


def _keep(freq, seen, tcount, L, min_freq, all_possible_states, all_possible_transitions,
          first, cols, vals, offsets) -> Fitted:
    """The kept features of the frequencies (module doc)."""
    A = len(first)
    candidates = np.ones(A * L, bool) if all_possible_states else seen
    kept = candidates & (freq >= min_freq)
    # attributes with a state feature keep their order of first appearance
    used = kept.reshape(A, L).any(axis=1)
    new = np.full(A, -1, dtype=np.int64)
    new[used] = np.arange(int(used.sum()))
    order = list(first)
    amap = AttributeMap([n for n, u in zip(order, used) if u])
    a, lab = np.divmod(np.flatnonzero(kept), L)
    pairs = np.stack([new[a], lab], axis=1).astype(np.int64)
    trans = ((tcount > 0) | all_possible_transitions) & (tcount >= min_freq)
    return Fitted(amap, _rows(new[cols], vals, offsets, len(amap)), pairs, trans)
