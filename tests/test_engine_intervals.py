"""The interval DP against enumeration of every set of non-overlapping spans."""

import numpy as np
from hypothesis import given, settings, strategies as st

from fstchunk.engine.intervals import best_chunk_set, best_chunk_sets
from oracles import all_chunkings


def _all_span_sets(n, T):
    return [[(t, s, e) for t, s, e in c] for c in all_chunkings(n, tuple(range(T)))]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 6), T=st.integers(1, 2))
def test_free_count_dp_is_the_maximum(seed, n, T):
    w = np.random.default_rng(seed).normal(size=(T, n, n + 1))
    value = lambda cs: sum(w[t, s, e] for t, s, e in cs)      # noqa: E731
    best = max(value(cs) for cs in _all_span_sets(n, T))
    got = best_chunk_set(w)
    assert np.isclose(value(got), best) and all(s < e for _, s, e in got)
    assert all(a[2] <= b[1] for a, b in zip(got, got[1:]))      # non-overlapping, in order


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 5), T=st.integers(1, 2))
def test_exact_count_dp_is_the_maximum_for_every_k(seed, n, T):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(n, n, n + 1, T))
    valid = np.triu(np.ones((n, n + 1), bool), 1)
    w = np.where(valid[None, :, :, None], w, -np.inf)
    sets = _all_span_sets(n, T)
    for k, (total, chunks) in enumerate(best_chunk_sets(w, n), start=1):
        cands = [sum(w[k - 1, s, e, t] for t, s, e in cs) for cs in sets if len(cs) == k]
        assert len(chunks) == k and np.isclose(total, max(cands))
        assert np.isclose(sum(w[k - 1, s, e, t] for t, s, e in chunks), total)
