"""The exact-MEU engine's parts against their definitions: tilted span marginals
against the count table, the pruning certificate, the exponential sums for 1/x,
Pr(m), and the quadrature basis (forced on short sentences) against brute force."""

import numpy as np
import pytest

from fstchunk import Lattice
from fstchunk.engine import meu as M
from fstchunk.engine.counting import chunk_count_marginals, count_distribution
from fstchunk.engine.spans import chunk_probs, tilted_spans
from fstchunk.schemes.tagspace import TagSet
from oracles import all_utilities, brute_force, random_scores

TYPES = ("A", "B")


def _lattice(scheme, n, scale, seed):
    tags = TagSet(scheme, TYPES).tags
    rng = np.random.default_rng(seed)
    scores = random_scores(rng, len(tags), n, scale)
    return tags, scores, Lattice.from_scores(tags, *scores, scheme=scheme)


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "IOE1"])
@pytest.mark.parametrize("scale", [0.3, 3.0, 300.0])
def test_tilted_marginals_are_the_count_table_at_z(scheme, scale):
    """Q_z(c) = Σ_m Pr(c, m) z^m for every chunk, every tilt; Pr(c) at z = 1."""
    _, _, lat = _lattice(scheme, 8, scale, 7)
    pcm = chunk_count_marginals(lat)
    z = np.array([0.05, 0.4, 0.9])
    tab = tilted_spans(lat, z)
    want = np.tensordot(pcm, z[None, :] ** np.arange(lat.n + 1)[:, None], axes=([3], [0]))
    got = np.zeros_like(want)
    got[tab.types, tab.starts, tab.ends] = tab.prob[:, None] * tab.ratio
    np.testing.assert_allclose(got, want, atol=1e-13)
    p = np.zeros(pcm.shape[:3])
    p[tab.types, tab.starts, tab.ends] = tab.prob
    np.testing.assert_allclose(p, pcm.sum(axis=3), atol=1e-13)
    assert tab.pruned == 0.0
    assert np.isclose(tab.opens, pcm.sum(), atol=1e-12)          # E[m] = Σ_c Pr(c)


def test_pruning_certificate_bounds_what_is_left_out():
    """Σ_starts max Pr(left-out chunk) ≤ the returned bound; kept chunks are exact."""
    _, _, lat = _lattice("IOB2", 10, 2.0, 3)
    full = chunk_count_marginals(lat).sum(axis=3)
    tab = tilted_spans(lat, (), prune=1e-3)
    kept = np.zeros(full.shape, bool)
    kept[tab.types, tab.starts, tab.ends] = True
    np.testing.assert_allclose(tab.prob, full[tab.types, tab.starts, tab.ends], atol=1e-13)
    left = np.where(kept, 0.0, full)
    assert left.max() > 0                                         # something was cut
    assert left.max(axis=(0, 2)).sum() <= tab.pruned + 1e-15
    assert (tab.prob > 1e-3).all()


def test_chunk_probs_of_given_chunks():
    _, _, lat = _lattice("IOBES", 9, 1.0, 5)
    full = chunk_count_marginals(lat).sum(axis=3)
    chunks = [(0, 0, 2), (1, 3, 4), (0, 5, 9)]
    np.testing.assert_allclose(chunk_probs(lat, chunks),
                               [full[t, s, e] for t, s, e in chunks], atol=1e-13)


@pytest.mark.parametrize("a,b", [(1, 1.5), (1, 10), (3, 300), (20, 40), (200, 700), (5, 5000)])
def test_exponential_sums_approximate_one_over_x(a, b):
    t, lw = M.exp_sum(a, b)
    x = np.geomspace(a, b, 3001)
    rel = np.abs(x * np.exp(lw[None, :] - np.outer(x, t)).sum(axis=1) - 1)
    assert rel.max() < 1e-14 and (t > 0).all()


def test_count_distribution_is_the_enumerated_law():
    tags, scores, lat = _lattice("IOB2", 6, 1.5, 11)
    seqs, _ = brute_force(tags, "IOB2", TYPES, 6, *scores)
    want = np.zeros(7)
    for _, c, p in seqs:
        want[len(c)] += p
    np.testing.assert_allclose(count_distribution(lat), want, atol=1e-14)


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "IOE1"])
@pytest.mark.parametrize("scale", [0.1, 1.0, 30.0, 3000.0])
@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_quadrature_basis_reaches_the_brute_force_maximum(monkeypatch, scheme, scale, beta):
    """Short sentences normally take the exact count basis; forced onto the
    quadrature path, the answer is still the maximum within its certificate."""
    monkeypatch.setattr(M, "EXACT_MAX_N", 0)
    for n in (1, 3, 6):
        tags, scores, lat = _lattice(scheme, n, scale, n + int(10 * beta))
        seqs, _ = brute_force(tags, scheme, TYPES, n, *scores)
        U = all_utilities(seqs, beta)
        r = M.exact_meu(lat, beta ** 2)               # the engine takes β² (beta_sq)
        chosen = frozenset((TYPES[t], s, e) for t, s, e in r.chunks)
        got = U[[i for i, (_, c, _) in enumerate(seqs) if c == chosen][0]]
        assert r.gap < 1e-12
        assert U.max() - got <= r.gap + 1e-12
        assert abs(r.value - got) <= r.gap + 1e-12
