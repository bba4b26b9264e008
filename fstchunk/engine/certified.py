"""MEU by a certified search over a bound that is a sum over chunks.

Where a utility's credit is at most a sum of per-chunk terms (a prediction earns at
most its own chance of a match), E[u] for a decision x with k chunks is bounded by

    U(x) ≤ Σ_{p ∈ x} b_k(p),   b_k(p) = (1+β²)·E[o_p / (k + β²·m(y))],

o_p the chunk's best possible credit against y (its column of ``feats``: Pr(o_p = 1,
m(y) = m) over m).  Chunkings come out in decreasing order of this bound, across
every k the cheap bound (1+β²)·E[min(k, m)/(k + β²m)] leaves, by
:func:`.intervals.ranked_sets` over :func:`.intervals.counted_dp`'s tables; each is
evaluated exactly (``evaluate``) until the next bound is at most the best value
found — the answer is then the MEU decision, ``gap`` 0 — or ``max_candidates`` were
evaluated, and ``gap`` is the next bound minus the value reached.  The empty
decision scores Pr(m = 0).  :func:`span_search` is the front door: every span of
a sentence, the MAP and conlleval MEU decisions as seeds; used by SemEval's partial
mode (:mod:`.partial`), its type mode (:mod:`fstchunk.decoding.type_match`) and a
credit counter with a bound (:class:`fstchunk.decoding.credit_utility.CreditUtility`).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..schemes import encodings as enc
from .counting import count_distribution
from .intervals import SpanPairs, TypedSpans, counted_dp, ranked_sets
from .meu import MEUResult, global_bound, refuse_over_budget, refuse_unwritable_empty


def certified_meu(sp: SpanPairs, feats: np.ndarray, pm: np.ndarray, beta_sq: float,
                  evaluate: Callable[[list], float], max_candidates: int,
                  seeds: Sequence[list] = ()) -> MEUResult:
    """The best decision under ``evaluate`` (chunks -> exact E[u]) with its gap
    (module doc).  ``sp`` lists the spans (a :class:`.intervals.TypedSpans` where the
    bound depends on the type), ``feats`` (spans in ``sp``'s order, m) their
    per-count credit bound, ``pm`` Pr(m(y) = m).  Chunks are ``sp.span`` tuples.
    ``seeds``: decisions evaluated first (the MAP path, say), so that a search cut
    at ``max_candidates`` never returns less than the best of them."""
    n = len(pm) - 1
    ms = np.arange(n + 1)
    best, best_chunks, evaluated = float(pm[0]), [], 0
    for chunks in seeds:
        value = evaluate(list(chunks)) if chunks else float(pm[0])
        if value > best:
            best, best_chunks = value, list(chunks)
    cheap = global_bound(pm, beta_sq, ms)
    tables = {}
    for k in range(1, n + 1):
        if cheap[k] > best:
            wpair = sp.pairs((1 + beta_sq) * (feats @ (1.0 / (k + beta_sq * ms))))
            tables[k] = (wpair, counted_dp(sp, wpair, k), k)
    ranked, top = ranked_sets(sp, tables, floor=best), best
    try:
        bound, _, chunks = next(ranked)
        while True:
            if evaluated == max_candidates:
                top = bound
                break
            value = evaluate(chunks)
            evaluated += 1
            if value > best:
                best, best_chunks = value, chunks
            bound, _, chunks = ranked.send(best)
    except StopIteration:
        pass
    return MEUResult(best_chunks, best, max(0.0, top - best), evaluated, len(tables))


def span_search(lattice, what: str, beta_sq: float, memory_budget: float,
                bound: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
                evaluate: Callable[[list], float], max_candidates: int, typed: bool,
                seeds: Sequence[Sequence[str]] = ()) -> MEUResult:
    """:func:`certified_meu` over every span of ``lattice``'s sentence.

    ``bound(pm, s, e)``: the per-count credit bound of the spans [s, e) listed (untyped:
    one row each; ``typed``: one row per type and span, type-major), given Pr(m) ``pm``;
    ``evaluate``: the exact E[u] of a chunk list ((start, end), or (type index, start,
    end) when ``typed``).  The MAP and conlleval MEU decisions, and the tag sequences
    ``seeds``, are evaluated first.  β = 0 (precision; the empty decision scores 0/0 :=
    1) returns the empty decision; BudgetError when the count tables (T + 1 of n·(n+1)²
    floats) exceed ``memory_budget`` bytes, ``what`` naming the work."""
    n, types = lattice.n, lattice.space.types
    if beta_sq == 0:
        refuse_unwritable_empty(lattice.space, beta_sq)
        return MEUResult([], 1.0, 0.0, 0, 0)
    refuse_over_budget(f"{what} MEU of this {n}-token sentence",
                       8.0 * (len(types) + 1) * n * (n + 1) ** 2, memory_budget)
    pm = count_distribution(lattice)
    s_i, e_i = np.nonzero(np.triu(np.ones((n, n + 1), bool), 1))
    T = len(types) if typed else 1
    sp = (TypedSpans if typed else SpanPairs)(np.repeat(np.arange(T), len(s_i)),
                                              np.tile(s_i, T), np.tile(e_i, T), n)
    decisions = [lattice.map().tags, lattice.meu(float(np.sqrt(beta_sq)), memory_budget).tags,
                 *seeds]
    first = dict.fromkeys(tuple((types.index(t), s, e) if typed else (s, e) for t, s, e in
                                enc.tags_to_chunks(list(tags), lattice.scheme))
                          for tags in decisions)
    return certified_meu(sp, bound(pm, s_i, e_i)[sp.order], pm, beta_sq, evaluate,
                         max_candidates, [list(c) for c in first])
