"""The feature function g(j, i) of the segment model (McDonald, Crammer & Pereira 2005,
§3.2 eq. 1 and §3.3), hashed.

A segment with member indices 0 = i_0 < i_1 < ... < i_m < i_{m+1} = n+1 (token
position p is member index p+1) has the features f(x, y) = Σ_j g(i_{j−1}, i_j), and a
type-t segment scores s = W[:, t]·f(x, y): every feature is conjoined with the type
through the columns of W (D × T), never hashed with it.

g(j, i) is the sum of binary features, each a predicate conjoined with the step's
*state* (§3.3): start (j = 0), end (i = n+1), next (j = i−1), skip (j < i−1); start
and end override the others (footnote 1).  Predicates at an index: the word, the
lower-cased word, its shape (:func:`fstchunk.models.features.word_shape`), prefixes and
suffixes of 2 and 3 characters, the POS tag when the sentence has one, and the
lower-cased words before and after (§4.1: "a previous to next word window"; without
them a one-word segment has the same features wherever it occurs); indices 0 and n+1
have the markers ``<s>`` / ``</s>`` in every slot.  Features of a step:

* state (a bias per state); state & word_j & word_i; state & lower_j & lower_i;
  state & shape_j & shape_i; state & pred_i for each predicate; state & pred_j;
* skip steps only: the distance bucket of the gap i − j − 1 (1, 2, 3, 4-5, 6+), and
  each lower-cased word and each POS tag strictly between j and i.

Hashing: each predicate string is hashed once per token with ``zlib.crc32`` (stable
across processes and platforms, unlike the salted built-in ``hash``); a feature id is
the template's code, the state and the predicate ids combined by a fixed 64-bit mixer
(:func:`_mix`) in numpy, modulo D.  A sentence's allowed steps are all j < i except
0 → n+1 (the empty segment), with member-to-member steps skipping at most ``max_gap``
tokens (boundary steps are free); :func:`sentence_features` gives them and the CSR
matrix F (steps × D, binary, duplicates summed), so the scores of every step for every
type are F @ W.

Predicate sets (``predicates``, :data:`PREDICATES`): ``"mcp05"`` is the set above (the
"at" predicates state & pred_i and state & pred_j over :data:`SLOTS` and
:data:`CONTEXT`); ``"sp03"`` replaces those by Sha & Pereira's (2003) NP-chunking
predicates at each index p, the paper's choice for NP chunks (§4.1): the words
w[p+d] for d in −2..2, the word bigrams w[p−1]w[p] and w[p]w[p+1], and, with POS
tags, t[p+d] for d in −2..2, the four POS bigrams and three POS trigrams in the
window (:data:`WINDOW`; markers ``<s>`` / ``</s>`` beyond the sentence), each
conjoined with the state at i and at j; ``"mcp05+sp03"`` has both.  The state bias,
the word/lower/shape pairs and the skip features (distance, words and POS between;
§3.3 "we always add") are in every set.

Pitfalls: collisions make two features share a weight (harmless at D = 2**20); a gold
segment may use a step that ``max_gap`` forbids: :func:`arc_features` computes the
rows of any steps, allowed or not; changing anything here changes every id, so
:func:`feature_version` names the version that model files record (``mcp05``'s ids
are those of :data:`FEATURES`, the only version before predicate sets).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ...core.errors import InputError
from ..features import word_shape

#: the name of this feature function, recorded in model files (predicate set ``mcp05``)
FEATURES = "mcp05-hashed-v1"
#: the predicate sets (the module doc); model files record ``feature_version(name)``
PREDICATES = ("mcp05", "sp03", "mcp05+sp03")
#: the predicate set of a new model (issue 37): Sha & Pereira's window, the paper's NP
#: predicates, with issue 19's orthographic ones (chosen on CoNLL-2000 NP dev,
#: benchmarks/RESULTS.md "Segments (issue 37)"); model files keep their own
DEFAULT_PREDICATES = "mcp05+sp03"
#: Sha & Pereira's window predicates: (name, slot, offsets) over the words ("w") or the
#: POS tags ("t"); a predicate's value joins the values at p + offset
WINDOW = tuple([(f"w{d:+d}", "w", (d,)) for d in range(-2, 3)]
               + [("w-1w0", "w", (-1, 0)), ("w0w+1", "w", (0, 1))]
               + [(f"t{d:+d}", "t", (d,)) for d in range(-2, 3)]
               + [(f"t{a:+d}t{a + 1:+d}", "t", (a, a + 1)) for a in range(-2, 2)]
               + [(f"t{a:+d}t{a + 1:+d}t{a + 2:+d}", "t", (a, a + 1, a + 2))
                  for a in range(-2, 1)])
START, END, NEXT, SKIP = 0, 1, 2, 3
STATES = ("start", "end", "next", "skip")
SLOTS = ("w", "l", "s", "p2", "p3", "s2", "s3", "t")    # "t" (POS) only with POS tags
CONTEXT = ("l-1", "l+1")                                 # the last two columns of the ids
_W, _L, _S, _T = 0, 1, 2, 7
_M = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_SH1, _SH2 = np.uint64(31), np.uint64(27)
# template codes (any fixed distinct numbers)
_BIAS, _WW, _LL, _SS, _AT_I, _AT_J, _DIST, _BETW, _BETT = range(1, 10)


def crc(text: str) -> int:
    """The stable 32-bit hash of a predicate string."""
    return zlib.crc32(text.encode("utf-8"))


def _mix(*parts) -> np.ndarray:
    """A fixed 64-bit mixing of integer arrays (or ints), elementwise, wrapping."""
    h = np.uint64(0x243F6A8885A308D3)
    with np.errstate(over="ignore"):              # wrapping is the point
        for x in parts:
            h = (np.asarray(h, dtype=np.uint64) ^ np.asarray(x, dtype=np.uint64)) * _M
            h = (h ^ (h >> _SH1)) * _M2
            h = h ^ (h >> _SH2)
    return h


def feature_version(predicates: str) -> str:
    """The name model files record for predicate set ``predicates``."""
    check_predicates(predicates)
    return FEATURES if predicates == "mcp05" else f"{predicates}-hashed-v1"


def predicates_of(version: str) -> str | None:
    """The predicate set of a recorded feature version (None: not one of this fstchunk)."""
    return next((p for p in PREDICATES if feature_version(p) == version), None)


def check_predicates(predicates: object) -> str:
    """``predicates`` if it names a predicate set; InputError listing them otherwise."""
    if predicates not in PREDICATES:
        raise InputError(f"unknown predicate set {predicates!r}; use one of "
                         f"{', '.join(PREDICATES)}")
    return predicates  # type: ignore[return-value]


def token_ids(tokens: Sequence[str], pos: Sequence[str] | None = None,
              predicates: str = "mcp05") -> np.ndarray:
    """(n+2, P) uint64: the crc32 of each predicate (slot) at member indices 0..n+1:
    the slots of :data:`SLOTS` ("t" only with POS tags), then the lower-cased words
    before and after (:data:`CONTEXT`), then with ``predicates`` ``sp03`` or
    ``mcp05+sp03`` those of :data:`WINDOW` (the POS ones only with POS tags)."""
    if pos is not None and len(pos) != len(tokens):
        raise InputError(f"{len(pos)} POS tags for {len(tokens)} tokens")
    rows = [_word_ids(w) + ((crc(f"t={pos[p]}"),) if pos is not None else ())
            for p, w in enumerate(tokens)]
    P = len(SLOTS) if pos is not None else len(SLOTS) - 1
    rows = [[crc(f"{s}=<s>") for s in SLOTS[:P]], *rows, [crc(f"{s}=</s>") for s in SLOTS[:P]]]
    ids = np.array(rows, dtype=np.uint64)
    low = ids[:, _L]
    prev = np.concatenate([low[:1], low[:-1]])              # the boundaries keep their own
    nxt = np.concatenate([low[1:], low[-1:]])
    ids = np.concatenate([ids, prev[:, None], nxt[:, None]], axis=1)
    if check_predicates(predicates) == "mcp05":
        return ids
    return np.concatenate([ids, window_ids(tokens, pos)], axis=1)


def window_ids(tokens: Sequence[str], pos: Sequence[str] | None) -> np.ndarray:
    """(n+2, Q) uint64: the crc32 of Sha & Pereira's predicates (:data:`WINDOW`, the
    POS ones only with ``pos``) at member indices 0..n+1 (index p is token p − 1;
    ``<s>`` before the first token, ``</s>`` after the last, index 0 and n+1 included)."""
    n = len(tokens)
    seqs = {"w": ["<s>"] * 3 + list(tokens) + ["</s>"] * 3}
    if pos is not None:
        seqs["t"] = ["<s>"] * 3 + list(pos) + ["</s>"] * 3
    cols = [[crc(f"{name}=" + "|".join(seqs[slot][p + 2 + d] for d in offsets))
             for p in range(n + 2)]
            for name, slot, offsets in WINDOW if slot in seqs]
    return np.array(cols, dtype=np.uint64).T


def at_columns(predicates: str, pos: bool) -> np.ndarray:
    """The columns of :func:`token_ids` conjoined with the state at i and at j."""
    base = len(SLOTS) - (0 if pos else 1) + len(CONTEXT)
    extra = sum(1 for _, slot, _ in WINDOW if pos or slot == "w")
    return {"mcp05": np.arange(base), "sp03": np.arange(base, base + extra),
            "mcp05+sp03": np.arange(base + extra)}[check_predicates(predicates)]


@lru_cache(maxsize=1 << 16)
def _word_ids(w: str) -> tuple[int, ...]:
    """The ids of the word's own predicates (slots w .. s3)."""
    lw = w.lower()
    vals = (w, lw, word_shape(w), lw[:2], lw[:3], lw[-2:], lw[-3:])
    return tuple(crc(f"{s}={v}") for s, v in zip(SLOTS, vals))


def allowed_arcs(n: int, max_gap: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(J, I) of the allowed steps of an n-token sentence, sorted by I then J: 0 → i and
    j → n+1 for 1 <= i, j <= n, and j → i (1 <= j < i <= n) with i − j − 1 <= max_gap."""
    J, I = np.triu_indices(n + 2, 1)
    keep = ~((J == 0) & (I == n + 1))
    if max_gap is not None:
        keep &= (J == 0) | (I == n + 1) | (I - J - 1 <= max_gap)
    J, I = J[keep], I[keep]
    order = np.lexsort((J, I))
    return J[order].astype(np.int64), I[order].astype(np.int64)


def _bucket(gap: np.ndarray) -> np.ndarray:
    """Distance buckets of gaps >= 1: 1, 2, 3, 4-5 -> 4, 6+ -> 6."""
    return np.where(gap <= 3, gap, np.where(gap <= 5, 4, 6))


def arc_features(ids: np.ndarray, J: np.ndarray, I: np.ndarray, D: int,
                 at: np.ndarray | None = None, pos: bool | None = None) -> sp.csr_matrix:
    """F (len(J) × D, CSR, float64): the features g(J[a], I[a]) of each step a of a
    sentence with predicate ids ``ids`` (:func:`token_ids`); ``at``: the columns
    conjoined with the state at i and at j (default: all), ``pos``: whether the ids
    hold POS tags (default: read off the number of columns, ``mcp05`` ids)."""
    J, I = np.asarray(J, dtype=np.int64), np.asarray(I, dtype=np.int64)
    A, n1 = len(J), ids.shape[0] - 1
    if pos is None:
        pos = ids.shape[1] > len(SLOTS) - 1 + len(CONTEXT)
    at = np.arange(ids.shape[1]) if at is None else np.asarray(at, dtype=np.int64)
    state = np.where(J == 0, START, np.where(I == n1, END, np.where(J == I - 1, NEXT, SKIP)))
    st = state.astype(np.uint64)
    idj, idi = ids[J], ids[I]                                 # (A, P)
    cols = [_mix(_BIAS, st),
            _mix(_WW, st, idj[:, _W], idi[:, _W]),
            _mix(_LL, st, idj[:, _L], idi[:, _L]),
            _mix(_SS, st, idj[:, _S], idi[:, _S])]
    slot = at.astype(np.uint64)[None, :]                     # a column's number is its slot
    dense = np.concatenate([np.stack(cols, axis=1),
                            _mix(_AT_I, st[:, None], slot, idi[:, at]),
                            _mix(_AT_J, st[:, None], slot, idj[:, at])], axis=1)  # (A, 4+2P)
    rows = [np.repeat(np.arange(A), dense.shape[1])]
    feats = [dense.ravel()]
    skip = np.flatnonzero(state == SKIP)
    if len(skip):
        gap = I[skip] - J[skip] - 1
        rows.append(skip)
        feats.append(_mix(_DIST, _bucket(gap)))
        # the tokens strictly between: arc skip[r] covers members J+1 .. I-1
        arc = np.repeat(skip, gap)
        first = np.repeat(np.cumsum(gap) - gap, gap)
        member = J[arc] + 1 + (np.arange(len(arc)) - first)
        rows.append(arc)
        feats.append(_mix(_BETW, ids[member, _L]))
        if pos:
            rows.append(arc)
            feats.append(_mix(_BETT, ids[member, _T]))
    r = np.concatenate(rows)
    c = (np.concatenate(feats) % np.uint64(D)).astype(np.int64)
    return sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(A, D))   # duplicates summed


@dataclass
class SentenceFeatures:
    """The allowed steps (J, I) of one sentence, their features F (steps × D) and
    ``index[j, i]``: the row of step j → i in F (−1: not allowed); ``at`` and ``pos``:
    :func:`arc_features`' arguments for these ids."""
    n: int
    ids: np.ndarray
    J: np.ndarray
    I: np.ndarray
    F: sp.csr_matrix
    index: np.ndarray
    at: np.ndarray | None = None
    pos: bool | None = None

    def rows(self, members: Sequence[int]) -> np.ndarray:
        """Rows of F of the steps of a padded member sequence (−1 where not allowed)."""
        m = np.asarray(members, dtype=np.int64)
        return self.index[m[:-1], m[1:]]


def members(n: int, positions: Sequence[int]) -> list[int]:
    """The member indices 0, p+1 ..., n+1 of 0-based positions."""
    return [0, *(p + 1 for p in positions), n + 1]


def sentence_features(tokens: Sequence[str], pos: Sequence[str] | None, D: int,
                      max_gap: int | None = None, predicates: str = "mcp05"
                      ) -> SentenceFeatures:
    """The allowed steps of a sentence and their features over predicate set
    ``predicates`` (see the module doc)."""
    n = len(tokens)
    if n < 1:
        raise InputError("a sentence needs at least one token")
    ids = token_ids(tokens, pos, predicates)
    at, has_pos = at_columns(predicates, pos is not None), pos is not None
    J, I, index = step_index(n, max_gap)
    return SentenceFeatures(n, ids, J, I, arc_features(ids, J, I, D, at, has_pos), index,
                            at, has_pos)


@lru_cache(maxsize=512)
def step_index(n: int, max_gap: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(J, I, index) of an n-token sentence: :func:`allowed_arcs` and ``index[j, i]``,
    the position of step j → i in them (−1: not allowed); shared by every sentence of
    length n (read-only arrays)."""
    J, I = allowed_arcs(n, max_gap)
    index = np.full((n + 2, n + 2), -1, dtype=np.int64)
    index[J, I] = np.arange(len(J))
    for a in (J, I, index):
        a.flags.writeable = False
    return J, I, index


def segment_entries(sf: SentenceFeatures, positions: Sequence[Sequence[int]],
                    D: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, value), sorted by row then column, no repeats: the nonzeros of
    f(x, y_r) = Σ of the rows of F of the steps of segment r, for each r (steps that
    ``max_gap`` forbids are computed on the fly).  Nothing here costs O(D)."""
    seg, arcs, extra_j, extra_i = [], [], [], []
    A = sf.F.shape[0]
    for r, ps in enumerate(positions):
        m = members(sf.n, ps)
        for a, j, i in zip(sf.rows(m).tolist(), m, m[1:]):
            if a < 0:
                a = A + len(extra_j)
                extra_j.append(j)
                extra_i.append(i)
            seg.append(r)
            arcs.append(a)
    F = sf.F
    if extra_j:
        F = sp.vstack([F, arc_features(sf.ids, np.array(extra_j), np.array(extra_i), D,
                                       sf.at, sf.pos)], format="csr")
    arcs_a = np.array(arcs, dtype=np.int64)
    lo, hi = F.indptr[arcs_a], F.indptr[arcs_a + 1]
    size = hi - lo
    take = np.repeat(lo - np.cumsum(size) + size, size) + np.arange(size.sum())
    keys = np.repeat(np.array(seg, dtype=np.int64), size) * D + F.indices[take]
    uniq, inv = np.unique(keys, return_inverse=True)
    vals = np.bincount(inv.ravel(), F.data[take], minlength=len(uniq))
    return uniq // D, uniq % D, vals


def segment_vectors(sf: SentenceFeatures, positions: Sequence[Sequence[int]],
                    D: int) -> sp.csr_matrix:
    """(len(positions) × D) CSR: row r = f(x, y_r) (:func:`segment_entries`)."""
    row, col, val = segment_entries(sf, positions, D)
    indptr = np.searchsorted(row, np.arange(len(positions) + 1))
    return sp.csr_matrix((val, col, indptr), shape=(len(positions), D))
