"""The segment space of a sentence and its k best segments (McDonald, Crammer &
Pereira 2005, §3.2 and §3.2.1).

A segment of an n-token sentence is a type t and an increasing non-empty set of
member indices i_1 < ... < i_m in 1..n (token position p is index p+1).  Padded
with the boundaries i_0 = 0 and i_{m+1} = n+1, its score is

    s(t, i) = Σ_{j=1..m+1} w·g_t(i_{j−1}, i_j) = Σ_j arc[t, i_{j−1}, i_j],

so the best segment is the DP S[i] = max_{j<i} S[j] + arc[j, i] (paper §3.2),
S[0] = 0, read at n+1.  :func:`kbest` is its k-best extension over T types,
O(n²kT), or O(n·g·kT) when member-to-member steps skip at most g tokens
(``max_gap``: i − j − 1 <= g for 1 <= j < i <= n; 0 = contiguous segments only).

* :func:`kbest` — numpy DP: for each type and member index i the k best partial
  segments ending at i, with back pointers (predecessor j, rank in j's list);
  each step gathers all candidates S_t[j][r] + arc[t, j, i] as a (T, #j, k) array
  and keeps the top k per type (a stable sort; rows longer than :data:`LONG` are
  first cut at a lower bound on their k-th best, see :func:`_top`);
* :func:`segment_space_fst` / :func:`kbest_fst` — the same space as a tropical
  acceptor (paths = segments, path weight = −score) and its k shortest paths;
* :func:`restrict` — §3.2.1's restrictions on a best-first list (greedy: keep a
  segment only if compatible with every segment kept before it).

Ties are broken deterministically and exactly (the DP's truncation never drops a
segment that this order puts in the top k): by score (higher first), then type
index (lower first), then by the positions read from the last one backwards
(``tuple(reversed(positions))`` in Python's tuple order: the segment with the
smaller last position first, then the smaller second-to-last, ...; a segment
that is a suffix of another comes first).  This order is compatible with
extending a partial segment, which makes the k-best DP exact under it.

Pitfalls:

* member indices are 1..n, token positions 0-based: results hold positions
  (index − 1); ``arc[t, 0, n+1]`` (the empty segment) is never used;
* only entries ``arc[t, j, i]`` with j < i are read (and checked for NaN/+inf);
  −inf forbids a step; a segment of score −inf is never returned;
* ``max_gap`` bounds member-to-member steps only: 0 → i and j → n+1 are free;
* OpenFst's ``standard`` arcs hold float32 weights: :func:`kbest_fst` reads the
  segments off the machine but recomputes their scores in float64 from
  ``arc_scores``; segments whose scores differ by less than float32 precision may
  be chosen or ordered differently than by :func:`kbest`;
* label 0 is epsilon in OpenFst: real labels start at 1.
"""

from __future__ import annotations

import numbers
from typing import Sequence

import numpy as np
import pynini

from ..core.errors import InputError
from ..grammars import fsa
from .enumeration import LIMIT, check_size

#: (score, type index, 0-based positions)
Scored = tuple[float, int, tuple[int, ...]]

RESTRICTIONS = ("no-overlap", "no-embedding", "contiguous")

END = "</seg>"


def _check(arc_scores, k: int | None, max_gap: int | None) -> np.ndarray:
    """The scores as a float64 (T, n+2, n+2) array; InputError on bad inputs."""
    try:
        a = np.asarray(arc_scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("arc_scores must be a numeric array of shape (T, n+2, n+2)") from None
    if a.ndim != 3 or a.shape[0] < 1 or a.shape[1] != a.shape[2] or a.shape[1] < 3:
        raise InputError(f"arc_scores must have shape (T, n+2, n+2) with T >= 1 and n >= 1, "
                         f"got shape {a.shape}")
    used = np.triu(np.ones(a.shape[1:], dtype=bool), 1)
    used[0, -1] = False
    bad = np.isnan(a) | (a == np.inf)
    if (bad & used).any():
        t, j, i = np.argwhere(bad & used)[0]
        raise InputError(f"arc_scores must be finite or -inf: arc_scores[{t}, {j}, {i}] "
                         f"is {a[t, j, i]}")
    if k is not None and (isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1):
        raise InputError(f"k must be a positive integer, got {k!r}")
    if max_gap is not None and (isinstance(max_gap, bool) or not isinstance(max_gap, numbers.Integral)
                                or max_gap < 0):
        raise InputError(f"max_gap must be None or an integer >= 0, got {max_gap!r}")
    return a


def _sources(i: int, max_gap: int | None) -> slice | np.ndarray:
    """Allowed predecessors j of member i, ascending: 0 and max(1, i−1−g)..i−1."""
    lo = 1 if max_gap is None else max(1, i - 1 - max_gap)
    if lo == 1:
        return slice(0, i)
    js = np.arange(lo - 1, i)
    js[0] = 0
    return js


#: candidate rows longer than this take the pruned top-k of :func:`_top`
LONG = 256


def _top(c3: np.ndarray, k: int) -> np.ndarray:
    """Flat column indices (rows, min(k, J·K)) of the k largest entries of each row of
    ``c3`` (rows, J, K) read as (rows, J·K), best first, ties by lower index first
    (exact, as a stable sort)."""
    rows, J, K = c3.shape
    c = c3.reshape(rows, J * K)
    if k == 1:
        return np.argmax(c, axis=1)[:, None]            # the first maximum
    if J * K <= max(LONG, k):
        return np.argsort(-c, axis=1, kind="stable")[:, :k]
    # long rows: the k-th largest L of the full lists of the p rows j with the best
    # first entries bounds the row's k-th largest from below; sort only c >= L
    p = min(J, max(4, -(-k // K)))
    best = np.argpartition(-c3[:, :, 0], p - 1, axis=1)[:, :p]
    sub = np.take_along_axis(c3, best[:, :, None], 1).reshape(rows, p * K)
    low = np.partition(sub, p * K - k, axis=1)[:, p * K - k, None]
    r, col = np.nonzero(c >= low)
    order = np.lexsort((col, -c[r, col], r))
    counts = np.bincount(r, minlength=rows)             # each >= k
    return col[order[(np.cumsum(counts) - counts)[:, None] + np.arange(k)]]


def kbest(arc_scores, k: int, max_gap: int | None = None) -> list[Scored]:
    """The k best segments ``(score, type_index, positions)``, best first (ties: see
    the module doc); fewer when fewer have a finite score.

    S_t[i] (k-best list) = top_k{ S_t[j][r] + arc[t, j, i] : allowed j < i, r },
    S_t[0] = [0]; the answer is top_k over t, j >= 1, r of S_t[j][r] + arc[t, j, n+1].
    """
    a = _check(arc_scores, k, max_gap)
    T, n = a.shape[0], a.shape[1] - 2
    k = int(k)
    S = np.full((T, n + 1, k), -np.inf)
    S[:, 0, 0] = 0.0
    BJ = np.zeros((T, n + 1, k), dtype=np.int64)    # predecessor member index
    BR = np.zeros((T, n + 1, k), dtype=np.int64)    # its rank in j's list
    rows = np.arange(T)[:, None]
    for i in range(1, n + 1):
        js = _sources(i, max_gap)
        c3 = S[:, js, :] + a[:, js, i][:, :, None]             # (T, #j, k)
        c = c3.reshape(T, -1)
        top = _top(c3, k)
        m = top.shape[1]
        S[:, i, :m] = c[rows, top]
        jj = np.arange(i)[js]
        BJ[:, i, :m] = jj[top // k]
        BR[:, i, :m] = top % k
    end = (S[:, 1:, :] + a[:, 1:n + 1, n + 1][:, :, None]).reshape(1, T * n, k)
    order = _top(end, k)[0]                            # flat (t, j, r) order
    end = end.reshape(1, -1)
    scores = end[0, order]
    order = order[scores > -np.inf]
    t, rest = np.divmod(order, n * k)
    j, r = np.divmod(rest, k)
    j = j + 1
    steps = []                                   # all k back-pointer walks at once
    while j.any():
        steps.append(j)
        j, r = BJ[t, j, r], BR[t, j, r]          # index 0 points to 0: walks stay done
    walks = np.array(steps).T.tolist() if steps else []
    return [(s, ti, tuple(i - 1 for i in reversed(w) if i))
            for s, ti, w in zip(scores.tolist(), t.tolist(), walks)]


def segment_score(arc_scores, type_index: int, positions: Sequence[int]) -> float:
    """s = Σ_j arc[t, i_{j−1}, i_j] over the member indices (positions + 1) padded
    with 0 and n+1 (float64; no checks beyond indexing)."""
    a = np.asarray(arc_scores, dtype=np.float64)
    idx = [0] + [p + 1 for p in positions] + [a.shape[1] - 1]
    return float(sum(a[type_index, j, i] for j, i in zip(idx, idx[1:])))


def _order_key(s: Scored) -> tuple:
    return (-s[0], s[1], tuple(reversed(s[2])))


def enumerate_segments(arc_scores, max_gap: int | None = None, limit: int = LIMIT
                       ) -> list[Scored]:
    """Every segment ``(score, type_index, positions)`` of finite score, by the
    formula s(t, i) = Σ_j arc[t, i_{j−1}, i_j] (:func:`segment_score`), in
    :func:`kbest`'s order: the oracle of :func:`kbest` and :func:`kbest_fst`
    (``kbest(a, k) == enumerate_segments(a)[:k]``).  InputError above ``limit``
    segments (T·(2^n − 1) without ``max_gap``)."""
    a = _check(arc_scores, None, max_gap)
    T, n = a.shape[0], a.shape[1] - 2
    ways = np.zeros(n + 1)                   # ways[i]: member chains ending at index i
    ways[0] = 1.0
    for i in range(1, n + 1):
        ways[i] = ways[_sources(i, max_gap)].sum()
    check_size(T * ways[1:].sum(), limit, f"the segment space of {n} tokens and {T} types",
               "segments")
    out, stack = [], [(i,) for i in range(n, 0, -1)]
    while stack:
        m = stack.pop()
        for t in range(T):
            score = segment_score(a, t, [i - 1 for i in m])
            if score > -np.inf:
                out.append((score, t, tuple(i - 1 for i in m)))
        hi = n if max_gap is None else min(n, m[-1] + 1 + max_gap)
        stack.extend(m + (i,) for i in range(hi, m[-1], -1))
    return sorted(out, key=_order_key)


def segment_symbols(types: Sequence[str], n: int) -> pynini.SymbolTable:
    """``<eps>`` = 0, the types 1..T, ``pos=0``..``pos=n−1`` T+1..T+n, ``</seg>`` T+n+1."""
    syms = pynini.SymbolTable()
    syms.add_symbol("<eps>", 0)
    for name in list(types) + [f"pos={p}" for p in range(n)] + [END]:
        syms.add_symbol(name)
    return syms


def _check_types(types: Sequence[str], T: int, n: int) -> list[str]:
    if isinstance(types, str):
        raise InputError("types must be a sequence of type names, not one string")
    types = list(types)
    if len(types) != T:
        raise InputError(f"got {len(types)} type names for arc_scores of {T} types")
    reserved = {"<eps>", END} | {f"pos={p}" for p in range(n)}
    for name in types:
        if not isinstance(name, str) or not name or name in reserved or any(c.isspace() for c in name):
            raise InputError(f"type names must be non-empty strings without white space "
                             f"other than <eps>, pos=P and {END}; got {name!r}")
    if len(set(types)) != len(types):
        raise InputError(f"type names must be distinct, got {types}")
    return types


def segment_space_fst(arc_scores, types: Sequence[str], max_gap: int | None = None,
                      arc_type: str = "standard") -> pynini.Fst:
    """Acceptor whose paths are the segments: ``<type> pos=p1 ... pos=pm </seg>``,
    weight −s(t, i) (start -type-> (t,0); (t,j) -pos=i−1 / −arc[t,j,i]-> (t,i);
    (t,i) -</seg> / −arc[t,i,n+1]-> final); −inf steps have no arc."""
    a = _check(arc_scores, None, max_gap)
    T, n = a.shape[0], a.shape[1] - 2
    types = _check_types(types, T, n)
    wt = fsa.weight_type(arc_type)
    f = pynini.Fst(arc_type)
    start = f.add_state()
    f.set_start(start)
    states = [[f.add_state() for _ in range(n + 1)] for _ in range(T)]
    final = f.add_state()
    f.set_final(final)
    one, end_label = pynini.Weight.one(wt), T + n + 1
    for t in range(T):
        f.add_arc(start, pynini.Arc(t + 1, t + 1, one, states[t][0]))
        for i in range(1, n + 1):
            js = np.arange(i)[_sources(i, max_gap)]
            for j in js:
                if a[t, j, i] > -np.inf:
                    f.add_arc(states[t][j], pynini.Arc(T + i, T + i, pynini.Weight(wt, -a[t, j, i]),
                                                       states[t][i]))
            if a[t, i, n + 1] > -np.inf:
                f.add_arc(states[t][i], pynini.Arc(end_label, end_label,
                                                   pynini.Weight(wt, -a[t, i, n + 1]), final))
    return fsa.attach(f, segment_symbols(types, n))


def kbest_fst(arc_scores, types: Sequence[str], k: int,
              max_gap: int | None = None) -> list[Scored]:
    """:func:`kbest` read off ``shortestpath(segment_space_fst(...), nshortest=k)``;
    scores recomputed in float64 along each path (see the module's pitfalls)."""
    a = _check(arc_scores, k, max_gap)
    T = a.shape[0]
    space = segment_space_fst(a, types, max_gap)
    best = pynini.shortestpath(space, nshortest=int(k))
    out = []
    if best.start() == pynini.NO_STATE_ID:
        return out
    it = best.paths()
    while not it.done():
        labels = [lab for lab in it.ilabels() if lab != 0]   # nshortest adds epsilons
        t = labels[0] - 1
        pos = tuple(lab - T - 1 for lab in labels[1:-1])
        out.append((segment_score(a, t, pos), t, pos))
        it.next()
    out = [s for s in out if s[0] > -np.inf]
    return sorted(out, key=_order_key)[:k]


def restrict(segments: Sequence[Scored], no_overlap: bool = False, no_embedding: bool = False,
             contiguous: bool = False) -> list[Scored]:
    """Greedy §3.2.1 filter of a best-first list: keep a segment iff it is compatible
    with every kept one — ``no_overlap``: no shared position (any type);
    ``no_embedding``: its position set is neither ⊆ nor ⊇ a kept one's (any type;
    equal sets count); ``contiguous``: its positions are consecutive (for a cheaper
    and complete list, ask :func:`kbest` with ``max_gap=0``)."""
    kept: list[Scored] = []
    used: set[int] = set()
    sets: list[frozenset[int]] = []
    for seg in segments:
        pos = seg[2]
        ps = frozenset(pos)
        if contiguous and pos[-1] - pos[0] + 1 != len(pos):
            continue
        if no_overlap and not used.isdisjoint(ps):
            continue
        if no_embedding and any(ps <= q or ps >= q for q in sets):
            continue
        kept.append(seg)
        used |= ps
        sets.append(ps)
    return kept


def parse_restrictions(text: str | None) -> dict[str, bool]:
    """``"no-overlap,contiguous"`` -> ``{"no_overlap": True, "no_embedding": False,
    "contiguous": True}`` (keywords of :func:`restrict`); empty or "none" = none."""
    flags = {name.replace("-", "_"): False for name in RESTRICTIONS}
    if text is None or text.strip().lower() in ("", "none"):
        return flags
    for part in text.split(","):
        name = part.strip().lower()
        if name not in RESTRICTIONS:
            raise InputError(f"unknown restriction {part.strip()!r}; use a comma-separated "
                             f"list of {', '.join(RESTRICTIONS)}")
        flags[name.replace("-", "_")] = True
    return flags
