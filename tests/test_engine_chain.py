"""The chain engine: one recursion per sentence or per batch, log space or scaled."""

import itertools

import numpy as np
from hypothesis import given, settings, strategies as st

from fstchunk import Lattice
from fstchunk.schemes import encodings as enc
from fstchunk.engine import chain, scaled
from fstchunk.schemes.tagspace import TagSet
from oracles import brute_force, random_scores


def _random_layers(rng, sizes):
    w = [rng.normal(size=(a, b)) for a, b in zip([1] + sizes[:-1], sizes)]
    for x in w[1:]:
        x[rng.random(x.shape) < 0.2] = -np.inf          # missing arcs
    return chain.Layers(w, [np.arange(s) % 3 for s in sizes], rng.normal(size=sizes[-1]))


def _paths(layers):
    """Every state path with its log weight (the oracle of the recursions)."""
    sizes = [w.shape[1] for w in layers.weights]
    for path in itertools.product(*(range(s) for s in sizes)):
        score = layers.weights[0][0, path[0]] + layers.final[path[-1]]
        score += sum(layers.weights[i][path[i - 1], path[i]] for i in range(1, len(path)))
        yield path, score


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_forward_marginals_viterbi_equal_path_enumeration(seed, sizes):
    layers = _random_layers(np.random.default_rng(seed), sizes)
    paths = [(p, s) for p, s in _paths(layers) if np.isfinite(s)]
    if not paths:
        return
    scores = np.array([s for _, s in paths])
    logz = np.logaddexp.reduce(scores)
    assert np.isclose(chain.forward(layers)[1], logz)
    marg = chain.token_marginals(layers, 3)
    want = np.zeros_like(marg)
    for (p, s) in paths:
        for i, q in enumerate(p):
            want[i, layers.labels[i][q]] += np.exp(s - logz)
    assert np.allclose(marg, want, atol=1e-12)
    best = max(paths, key=lambda x: x[1])
    tags, score = chain.viterbi(layers)
    assert np.isclose(score, best[1])
    assert tags == [int(layers.labels[i][q]) for i, q in enumerate(best[0])]


def test_batched_log_space_equals_one_chain_at_a_time():
    rng = np.random.default_rng(3)
    sizes = [3, 4, 2, 3]
    many = [_random_layers(rng, sizes) for _ in range(5)]
    batch = chain.Layers([np.stack([m.weights[i] for m in many]) for i in range(len(sizes))],
                         many[0].labels, np.stack([m.final for m in many]))
    _, logz = chain.forward(batch)
    post = chain.state_posteriors(batch)
    for b, m in enumerate(many):
        assert np.isclose(logz[b], chain.forward(m)[1])
        for pb, pm in zip(post, chain.state_posteriors(m)):
            assert np.allclose(pb[b], pm)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), scheme=st.sampled_from(enc.SCHEMES), n=st.integers(1, 6),
       scale=st.sampled_from([0.1, 1.0, 5.0, 30.0]))
def test_scaled_batched_twin_equals_log_space_lattices(seed, scheme, n, scale):
    """The training engine (probability space, batched) and the lattices (log
    space, one sentence) give the same log Z and marginals."""
    rng = np.random.default_rng(seed)
    ts = TagSet(scheme, ("NP", "VP"))
    L = len(ts)
    B = 3
    em = rng.normal(scale=scale, size=(B, n, L))
    _, tr, st_, en = random_scores(rng, L, n, scale)
    mt = np.where(ts.trans_ok, tr, -np.inf)
    ms = np.where(ts.start_ok, st_, -np.inf)
    me = np.where(ts.end_ok, en, -np.inf)
    tmax, smax, emax = mt.max(), ms.max(), me.max()
    (phi, rmax, a, c, c_end, bt), ok = scaled.scaled_recursions(
        em, np.exp(mt - tmax), np.exp(ms - smax), np.exp(me - emax))
    assert ok
    logz = np.log(c).sum(1) + np.log(c_end) + rmax.sum(1) + smax + emax + (n - 1) * tmax
    for b in range(B):
        lat = Lattice.from_scores(ts.tags, em[b], tr, st_, en, scheme=scheme)
        assert np.isclose(logz[b], lat.log_partition(), rtol=1e-12, atol=1e-9)
        assert np.allclose(a[b] * bt[b], lat.marginals(), atol=1e-10)


def test_log_space_survives_scores_beyond_the_double_range_of_exp():
    rng = np.random.default_rng(0)
    ts = TagSet("IOB2", ("NP",))
    e, t, s, en = random_scores(rng, len(ts), 5, scale=400.0)
    lat = Lattice.from_scores(ts.tags, e, t, s, en)
    seqs, logz = brute_force(ts.tags, "IOB2", ("NP",), 5, e, t, s, en)
    assert np.isclose(lat.log_partition(), logz)
    want = np.zeros((5, len(ts)))
    for y, _, p in seqs:
        for i, tag in enumerate(y):
            want[i, ts.index(tag)] += p
    assert np.allclose(lat.marginals(), want, atol=1e-12)
