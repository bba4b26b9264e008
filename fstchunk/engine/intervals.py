"""Interval DPs: the best set of non-overlapping typed spans, over a sparse span list.

Both MEU decoders reduce to choosing chunks (t, s, e), non-overlapping, that
maximise a sum of span weights (Jansche §21):

* exact MEU for a hypothesis with k chunks: weights g_k(t, s, e), exactly k spans
  -> :func:`counted_dp` (the best j-set for every j ≤ J in one table) and
  :func:`backtrace`;
* corpus MEU (Dinkelbach step): weights (1+β²)·Pr(t, s, e) − λ, any number of spans
  -> :func:`best_span_set`.

The recursion is D[j, i] = best weight of j spans within tokens [0, i) =
max(D[j, i−1], max_{(s, i)} D[j−1, s] + w(s, i)).  :func:`counted_dp` runs it one j
at a time over all spans at once (numpy over the span list: O(J · spans)), the
free-count version one end position at a time.

Spans come as a :class:`SpanPairs`: the kept (type, start, end) triples, grouped by
(end, start); a span's best type is chosen first (the type does not interact with
the rest of the DP).  Pitfall: only listed spans exist — an unlisted span is not
"weight 0" but absent, which is what width pruning relies on.
"""

from __future__ import annotations

import heapq
import itertools

import numpy as np


class SpanPairs:
    """Typed spans sorted by (end, start, type) and grouped into (start, end) pairs.

    ``order`` sorts the caller's arrays into this order (apply it to weights)."""

    def __init__(self, types: np.ndarray, starts: np.ndarray, ends: np.ndarray, n: int):
        types, starts, ends = (np.asarray(a, dtype=int) for a in (types, starts, ends))
        self.order = np.lexsort((types, starts, ends))
        self.types, self.starts, self.ends = (a[self.order] for a in (types, starts, ends))
        self.n = n
        key = self.ends * (n + 1) + self.starts
        _, self.pair_first = np.unique(key, return_index=True)
        self.ps, self.pe = self.starts[self.pair_first], self.ends[self.pair_first]
        self.e_vals, self.e_first = np.unique(self.pe, return_index=True)

    def span(self, pair: int) -> tuple:
        """The (start, end) of one pair."""
        return int(self.ps[pair]), int(self.pe[pair])

    def __len__(self) -> int:
        return len(self.types)

    def pairs(self, w: np.ndarray) -> np.ndarray:
        """Best weight per (start, end) pair over the types (``w`` in sorted order)."""
        if len(w) == 0:
            return np.zeros(0)
        return np.maximum.reduceat(w, self.pair_first)

    def best_type(self, pair: int, w: np.ndarray) -> int:
        """The type achieving :meth:`pairs` for one pair."""
        lo = self.pair_first[pair]
        hi = self.pair_first[pair + 1] if pair + 1 < len(self.pair_first) else len(w)
        return int(self.types[lo + int(np.argmax(w[lo:hi]))])

    def dense(self, values: np.ndarray, num_types: int) -> np.ndarray:
        """(T, n, n+1) array of ``values`` (sorted order) at the listed spans, 0 elsewhere."""
        out = np.zeros((num_types, self.n, self.n + 1))
        out[self.types, self.starts, self.ends] = values
        return out


class TypedSpans(SpanPairs):
    """Each typed span its own pair (no best type taken first), for searches whose
    weights depend on the type: :meth:`span` is (type, start, end)."""

    def __init__(self, types: np.ndarray, starts: np.ndarray, ends: np.ndarray, n: int):
        super().__init__(types, starts, ends, n)
        self.pair_first = np.arange(len(self.types))
        self.ps, self.pe, self.pt = self.starts, self.ends, self.types
        self.e_vals, self.e_first = np.unique(self.pe, return_index=True)

    def span(self, pair: int) -> tuple:
        return int(self.pt[pair]), int(self.ps[pair]), int(self.pe[pair])


def counted_dp(sp: SpanPairs, wpair: np.ndarray, J: int) -> np.ndarray:
    """D[j, i] = best total weight of j non-overlapping spans inside tokens [0, i),
    j = 0..J (−inf: no j spans fit); ``wpair`` from :meth:`SpanPairs.pairs`."""
    n = sp.n
    D = np.full((J + 1, n + 1), -np.inf)
    D[0] = 0.0
    A = np.full(n + 1, -np.inf)
    for j in range(1, J + 1):
        if len(wpair) == 0:
            break
        A[sp.e_vals] = np.maximum.reduceat(D[j - 1][sp.ps] + wpair, sp.e_first)
        D[j] = np.maximum.accumulate(A)
        if D[j, n] == -np.inf:
            break
    return D


def backtrace(sp: SpanPairs, wpair: np.ndarray, D: np.ndarray, j: int,
              w: np.ndarray) -> list[tuple[int, int, int]]:
    """The j spans achieving D[j, n] as (type, start, end), in order (``w``: the
    typed weights in sorted order, to pick each span's type)."""
    chunks, i = [], sp.n
    while j > 0:
        while i > 0 and D[j, i] == D[j, i - 1]:
            i -= 1
        p = int(np.flatnonzero((sp.pe == i) & (D[j - 1][sp.ps] + wpair == D[j, i]))[0])
        s = int(sp.ps[p])
        chunks.append((sp.best_type(p, w), s, i))
        i, j = s, j - 1
    return chunks[::-1]


def best_span_set(sp: SpanPairs, w: np.ndarray) -> list[tuple[int, int, int]]:
    """max Σ w over sets of non-overlapping listed spans, any number (maybe none);
    ``w`` typed weights in sorted order.  Returns [(type, start, end), ...]."""
    n = sp.n
    wpair = sp.pairs(w)
    D = np.zeros(n + 1)
    arg = np.full(n + 1, -1)                   # pair ending at i used by D[i] (-1: none)
    bounds = list(sp.e_first) + [len(wpair)]
    ends = {int(e): (bounds[q], bounds[q + 1]) for q, e in enumerate(sp.e_vals)}
    for i in range(1, n + 1):
        D[i] = D[i - 1]
        if i in ends:
            lo, hi = ends[i]
            cand = D[sp.ps[lo:hi]] + wpair[lo:hi]
            q = int(np.argmax(cand))
            if cand[q] > D[i]:
                D[i], arg[i] = cand[q], lo + q
    chunks, i = [], n
    while i > 0:
        if arg[i] < 0:
            i -= 1
            continue
        p = int(arg[i])
        chunks.append((sp.best_type(p, w), int(sp.ps[p]), i))
        i = int(sp.ps[p])
    return chunks[::-1]


def ranked_sets(sp: SpanPairs, tables: dict, floor: float = -np.inf):
    """Span sets in decreasing order of their weight: for each key ``k`` of ``tables``,
    (wpair, D, j) — the k-th weights, :func:`counted_dp`'s table for them, and the number of
    spans j — the sets of exactly j spans; yields (weight, k, [:meth:`span
    <SpanPairs.span>` of each, in order]) across all keys by one best-first search. D is
    the exact best completion of a partial set (the j' spans still to place inside [0,
    i)), so the search is A* with an exact heuristic: sets come out in order, each once
    (a set is built from its last span back). Sets of weight ≤ ``floor`` are never
    pushed; the caller may raise the floor as it goes (send it the new floor)."""
    heap, tick = [], itertools.count()
    for k, (wpair, D, j) in tables.items():
        if np.isfinite(D[j, sp.n]) and D[j, sp.n] > floor:
            heapq.heappush(heap, (-float(D[j, sp.n]), next(tick), k, j, sp.n, 0.0, ()))
    while heap:
        neg, _, k, j, i, got, chosen = heapq.heappop(heap)
        if -neg <= floor:
            return
        if j == 0:
            new = yield -neg, k, [sp.span(c) for c in reversed(chosen)]
            if new is not None:
                floor = max(floor, new)
            continue
        wpair, D, _ = tables[k]
        cand = np.flatnonzero(sp.pe <= i)
        vals = got + wpair[cand] + D[j - 1][sp.ps[cand]]
        for c, v in zip(cand[vals > floor], vals[vals > floor]):
            heapq.heappush(heap, (-float(v), next(tick), k, j - 1, int(sp.ps[c]),
                                  got + float(wpair[c]), chosen + (int(c),)))
