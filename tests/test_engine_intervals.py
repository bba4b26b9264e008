"""The interval DPs against enumeration of every set of non-overlapping spans."""

import numpy as np
from hypothesis import given, settings, strategies as st

from fstchunk.engine.intervals import SpanPairs, backtrace, best_span_set, counted_dp
from oracles import all_chunkings


def _all_span_sets(n, T):
    return [[(t, s, e) for t, s, e in c] for c in all_chunkings(n, tuple(range(T)))]


def _listed(rng, n, T, keep=0.7):
    """A random sparse span list: (types, starts, ends) and a weight lookup."""
    trip = [(t, s, e) for t in range(T) for s in range(n) for e in range(s + 1, n + 1)
            if rng.random() < keep]
    if not trip:
        trip = [(0, 0, 1)]
    t, s, e = (np.array(a) for a in zip(*trip))
    return t, s, e


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 6), T=st.integers(1, 2))
def test_free_count_dp_is_the_maximum_over_listed_spans(seed, n, T):
    rng = np.random.default_rng(seed)
    t, s, e = _listed(rng, n, T)
    w = rng.normal(size=len(t))
    sp = SpanPairs(t, s, e, n)
    W = dict(zip(zip(t.tolist(), s.tolist(), e.tolist()), w))
    value = lambda cs: sum(W[c] for c in cs)      # noqa: E731
    listed = [cs for cs in _all_span_sets(n, T) if all(c in W for c in cs)]
    best = max(value(cs) for cs in listed)
    got = best_span_set(sp, w[sp.order])
    assert all(c in W for c in got)               # only listed spans are used
    assert np.isclose(value(got), best) and all(a < b for _, a, b in got)
    assert all(a[2] <= b[1] for a, b in zip(got, got[1:]))      # non-overlapping, in order


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 5), T=st.integers(1, 2))
def test_counted_dp_is_the_maximum_for_every_j(seed, n, T):
    rng = np.random.default_rng(seed)
    t, s, e = _listed(rng, n, T)
    w = rng.normal(size=len(t))
    sp = SpanPairs(t, s, e, n)
    ws = w[sp.order]
    wpair = sp.pairs(ws)
    D = counted_dp(sp, wpair, n)
    W = dict(zip(zip(t.tolist(), s.tolist(), e.tolist()), w))
    sets = [cs for cs in _all_span_sets(n, T) if all(c in W for c in cs)]
    for j in range(1, n + 1):
        cands = [sum(W[c] for c in cs) for cs in sets if len(cs) == j]
        if not cands:
            assert D[j, n] == -np.inf
            continue
        assert np.isclose(D[j, n], max(cands))
        chunks = backtrace(sp, wpair, D, j, ws)
        assert len(chunks) == j and np.isclose(sum(W[c] for c in chunks), D[j, n])
        assert all(a[2] <= b[1] for a, b in zip(chunks, chunks[1:]))
