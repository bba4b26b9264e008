"""The segment space (fstchunk.structures.segments) against brute-force enumeration."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.core.errors import InputError
from fstchunk.structures.segments import enumerate_segments
from fstchunk.structures import segments as space
from fstchunk.structures.segments import (RESTRICTIONS, kbest, kbest_fst, parse_restrictions,
                                          restrict, segment_space_fst)


def random_scores(n, T=2, seed=0, p_forbid=0.15):
    """Continuous scores (no ties) with some −inf steps."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(T, n + 2, n + 2))
    a[rng.random(a.shape) < p_forbid] = -np.inf
    return a


def enumerate_all(a, max_gap=None):
    """Every (score, t, positions) with finite score, by the formula, best first:
    :func:`fstchunk.structures.segments.enumerate_segments` (held to the formula in
    tests/test_house_oracles_structures.py)."""
    return enumerate_segments(a, max_gap)


def assert_same(got, want):
    assert [(t, p) for _, t, p in got] == [(t, p) for _, t, p in want]
    assert np.allclose([s for s, _, _ in got], [s for s, _, _ in want], rtol=0, atol=1e-9)


CASES = [(n, k, g) for n in range(1, 8) for k in (1, 5, None) for g in (None, 0, 1, 2)]


@pytest.mark.parametrize("n,k,max_gap", CASES)
def test_kbest_equals_brute_force(n, k, max_gap):
    a = random_scores(n, seed=n * 31 + (k or 0) + 7 * (max_gap or 0))
    want = enumerate_all(a, max_gap)
    kk = k if k is not None else 2 * (2 ** n - 1)
    assert_same(kbest(a, kk, max_gap), want[:kk])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 7), T=st.integers(1, 3), k=st.integers(1, 40),
       max_gap=st.one_of(st.none(), st.integers(0, 3)), seed=st.integers(0, 10 ** 6),
       p_forbid=st.sampled_from([0.0, 0.2, 0.6]))
def test_kbest_property(n, T, k, max_gap, seed, p_forbid):
    a = random_scores(n, T, seed, p_forbid)
    assert_same(kbest(a, k, max_gap), enumerate_all(a, max_gap)[:k])


def test_kbest_ties_follow_documented_order():
    """Integer scores (many ties): the order is score, type, reversed positions."""
    rng = np.random.default_rng(3)
    for n in (1, 3, 5):
        a = rng.integers(-1, 2, size=(2, n + 2, n + 2)).astype(float)
        a[0] = 0.0
        for k in (1, 4, 20, 100):
            got = kbest(a, k)
            want = enumerate_all(a)[:k]
            assert [(s, t, p) for s, t, p in got] == want


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("k,max_gap", [(300, None), (1000, None), (200, 2), (5000, None)])
def test_kbest_long_candidate_rows_equal_brute_force(ties, k, max_gap):
    """n = 11, large k: candidate rows longer than space.LONG take the pruned top-k path."""
    n = 11
    a = random_scores(n, seed=k + ties, p_forbid=0.1)
    if ties:
        a = np.where(np.isfinite(a), np.round(a), -np.inf)
    got, want = kbest(a, k, max_gap), enumerate_all(a, max_gap)[:k]
    assert_same(got, want)
    if ties:
        assert got == want


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 3), J=st.integers(1, 60), K=st.integers(1, 40), k=st.integers(1, 50),
       seed=st.integers(0, 10 ** 6), levels=st.sampled_from([2, 5, 1000]))
def test_top_equals_stable_sort(rows, J, K, k, seed, levels):
    """_top (either path) = the first k of a stable descending sort, ties and -inf too."""
    rng = np.random.default_rng(seed)
    c3 = rng.integers(0, levels, size=(rows, J, K)).astype(float)
    c3[rng.random(c3.shape) < 0.2] = -np.inf
    want = np.argsort(-c3.reshape(rows, -1), axis=1, kind="stable")[:, :k]
    assert (space._top(c3, k) == want).all()


def reference_kbest(a, k, max_gap=None):
    """Plain k-best DP over explicit position tuples, sorted by the documented key."""
    T, n = a.shape[0], a.shape[1] - 2
    key = lambda x: (-x[0], tuple(reversed(x[1])))  # noqa: E731
    out = []
    for t in range(T):
        lists = {0: [(0.0, ())]}
        for i in range(1, n + 1):
            cands = [(s + a[t, j, i], p + (i,)) for j in range(i) for s, p in lists[j]
                     if j == 0 or max_gap is None or i - j - 1 <= max_gap]
            lists[i] = sorted([c for c in cands if c[0] > -np.inf], key=key)[:k]
        out += [(s + a[t, j, n + 1], t, tuple(x - 1 for x in p))
                for j in range(1, n + 1) for s, p in lists[j] if s + a[t, j, n + 1] > -np.inf]
    return sorted(out, key=lambda x: (-x[0], x[1], tuple(reversed(x[2]))))[:k]


@pytest.mark.parametrize("n,k,max_gap,ties", [(40, 30, None, False), (40, 30, None, True),
                                              (60, 20, 4, True), (25, 64, None, True)])
def test_kbest_equals_reference_dp(n, k, max_gap, ties):
    a = random_scores(n, seed=n + k, p_forbid=0.05)
    if ties:
        a = np.where(np.isfinite(a), np.round(a), -np.inf)
    got, want = kbest(a, k, max_gap), reference_kbest(a, k, max_gap)
    assert_same(got, want)
    if ties:
        assert [(t, p) for _, t, p in got] == [(t, p) for _, t, p in want]


def test_kbest_all_forbidden_and_sizes():
    a = np.full((2, 5, 5), -np.inf)
    assert kbest(a, 3) == []
    a[1, 0, 2] = a[1, 2, 4] = 1.5            # only type 1, token 1
    assert kbest(a, 3) == [(3.0, 1, (1,))]
    big = random_scores(150, 5, seed=1, p_forbid=0.0)
    res = kbest(big, 30, max_gap=3)
    assert len(res) == 30 and all(x[0] >= y[0] for x, y in zip(res, res[1:]))


@pytest.mark.parametrize("n,k,max_gap", [c for c in CASES if c[0] <= 6 and c[1] != None]
                         + [(4, 30, None), (6, 200, 1)])
def test_kbest_fst_equals_kbest(n, k, max_gap):
    a = random_scores(n, seed=100 + n + k)
    types = ["PER", "ORG"]
    fst = segment_space_fst(a, types, max_gap)
    assert fst.verify()
    text = fst.print()
    assert text and "pos=0" in text and "</seg>" in text
    assert_same(kbest_fst(a, types, k, max_gap), kbest(a, k, max_gap))


def test_fst_paths_are_segments():
    a = random_scores(3, seed=5, p_forbid=0.0)
    fst = segment_space_fst(a, ["A", "B"])
    assert fst.num_states() == 1 + 2 * 4 + 1
    assert_same(kbest_fst(a, ["A", "B"], 1000), enumerate_all(a))


def greedy(segments, no_overlap=False, no_embedding=False):
    kept = []
    for s, t, p in segments:
        ok = all(not (no_overlap and set(p) & set(q)) and
                 not (no_embedding and (set(p) <= set(q) or set(p) >= set(q)))
                 for _, _, q in kept)
        if ok:
            kept.append((s, t, p))
    return kept


@pytest.mark.parametrize("n", [1, 3, 5, 6])
@pytest.mark.parametrize("flags", [(True, False), (False, True), (True, True), (False, False)])
def test_restrict_equals_greedy_on_enumeration(n, flags):
    a = random_scores(n, seed=n + 50)
    all_segs = enumerate_all(a)
    got = restrict(kbest(a, len(all_segs)), no_overlap=flags[0], no_embedding=flags[1])
    assert_same(got, greedy(all_segs, *flags))
    # embedding across types: equal position sets count
    segs = [(2.0, 0, (1, 2)), (1.0, 1, (1, 2)), (0.5, 1, (2,)), (0.2, 0, (0, 3))]
    assert restrict(segs, no_embedding=True) == [segs[0], segs[3]]
    assert restrict(segs, no_overlap=True) == [segs[0], segs[3]]


@pytest.mark.parametrize("n", [1, 4, 7])
def test_contiguous_equals_filtered_enumeration(n):
    a = random_scores(n, seed=n + 70)
    contig = [s for s in enumerate_all(a) if s[2][-1] - s[2][0] + 1 == len(s[2])]
    assert_same(kbest(a, 1000, max_gap=0), contig)
    assert_same(restrict(enumerate_all(a), contiguous=True), contig)


def test_parse_restrictions():
    assert RESTRICTIONS == ("no-overlap", "no-embedding", "contiguous")
    assert parse_restrictions("no-overlap, contiguous") == {
        "no_overlap": True, "no_embedding": False, "contiguous": True}
    assert parse_restrictions("") == {"no_overlap": False, "no_embedding": False,
                                      "contiguous": False}
    with pytest.raises(InputError, match="unknown restriction 'nested'"):
        parse_restrictions("no-overlap,nested")


@pytest.mark.parametrize("arr,k,g,msg", [
    (np.zeros((2, 2, 2)), 1, None, r"shape \(T, n\+2, n\+2\).*\(2, 2, 2\)"),
    (np.zeros((2, 4, 5)), 1, None, r"shape"),
    (np.zeros((4, 4)), 1, None, r"shape"),
    (np.zeros((0, 4, 4)), 1, None, r"T >= 1"),
    ([["a"]], 1, None, r"numeric array"),
    (np.where(np.eye(4, k=1, dtype=bool), np.nan, 0.0)[None], 1, None,
     r"finite or -inf: arc_scores\[0, 0, 1\] is nan"),
    (np.where(np.eye(4, k=2, dtype=bool), np.inf, 0.0)[None], 1, None, r"arc_scores\[0, 0, 2\]"),
    (np.zeros((1, 4, 4)), 0, None, r"k must be a positive integer, got 0"),
    (np.zeros((1, 4, 4)), 2.0, None, r"k must be a positive integer"),
    (np.zeros((1, 4, 4)), True, None, r"k must be a positive integer"),
    (np.zeros((1, 4, 4)), 1, -1, r"max_gap must be None or an integer >= 0, got -1"),
    (np.zeros((1, 4, 4)), 1, 1.5, r"max_gap must be None"),
])
def test_input_errors(arr, k, g, msg):
    with pytest.raises(InputError, match=msg):
        kbest(arr, k, g)


def test_ignored_entries_not_checked_and_fst_errors():
    a = np.zeros((1, 4, 4))
    a[0, 2, 1] = np.nan                       # j >= i: ignored
    a[0, 0, 3] = np.inf                       # the empty segment: never used
    assert len(kbest(a, 100)) == 3
    with pytest.raises(InputError, match="got 1 type names for arc_scores of 2 types"):
        segment_space_fst(np.zeros((2, 4, 4)), ["A"])
    with pytest.raises(InputError, match="distinct"):
        segment_space_fst(np.zeros((2, 4, 4)), ["A", "A"])
    with pytest.raises(InputError, match="type names"):
        segment_space_fst(np.zeros((1, 4, 4)), ["pos=0"])
    with pytest.raises(InputError, match="unknown arc type"):
        segment_space_fst(np.zeros((1, 4, 4)), ["A"], arc_type="nope")
