"""Oracles as one suite (issue 45), part two: the segment space and the joint
POS+chunk structure against their ``enumerate()`` (the chain lattice's family is
tests/test_house_oracles.py, whose checks the joint model's chunk layer reuses).

* segments: :func:`fstchunk.structures.segments.enumerate_segments` (every segment by the
  formula) against the k-best DP (:func:`~fstchunk.structures.segments.kbest`) and its machine
  (:func:`~fstchunk.structures.segments.kbest_fst`); :func:`fstchunk.decoding.segments.enumerate_sets`
  (every gold set of independent decisions) against expected F of any set, of the
  k most probable, the MEU set, and the registry's segment decoder;
* joint: :meth:`fstchunk.models.joint.Parts.enumerate` against Figure 1's DP
  (:func:`~fstchunk.models.joint.viterbi`), inside-outside (log Z and every part
  marginal), the machine twin (shortest path, log Z, symbol marginals) and the
  chunk-layer lattice (its own enumeration, then every chain check).

Scales 1, 30 and 1e5 (1 and 30 for the float32 machines of k-best and Viterbi).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from fstchunk.decoding.decoders import decoder
from fstchunk.core.errors import InputError
from fstchunk.structures.lattice import Lattice
from fstchunk.models import joint as J
from fstchunk.models.joint.structure import structure_count
from fstchunk.structures.segments import enumerate_segments, kbest, kbest_fst
from fstchunk.decoding import segments as meu
from oracles import f_standard, stable_seed
from test_house_oracles import (BETAS, EPS, Sentence, check_distribution,
                                check_meu, check_posterior)

SCALES = (1.0, 30.0, 1e5)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


# ===================================================================== segments
SEGMENT_CASES = [(n, T, g, x) for n in (1, 3, 6) for T in (1, 2) for g in (None, 0, 1)
                 for x in SCALES]


@pytest.mark.parametrize("n,T,max_gap,scale", SEGMENT_CASES)
def test_segment_space_against_enumeration(n, T, max_gap, scale):
    rng = np.random.default_rng(stable_seed("seg", n, T, max_gap, scale))
    a = rng.normal(scale=scale, size=(T, n + 2, n + 2))
    a[0, 0, 1] = -np.inf                               # a forbidden step
    every = enumerate_segments(a, max_gap)
    chains = [c for m in range(1, n + 1) for c in itertools.combinations(range(n), m)
              if max_gap is None or all(j - i - 1 <= max_gap for i, j in zip(c, c[1:]))]
    assert len(every) == T * len(chains) - sum(1 for c in chains if c[0] == 0)
    assert len({(t, pos) for _, t, pos in every}) == len(every)
    for x, t, pos in every:                            # the formula, summed here
        idx = [0] + [i + 1 for i in pos] + [n + 1]
        assert x == pytest.approx(sum(a[t, j, i] for j, i in zip(idx, idx[1:])), rel=1e-12)
    for k in (1, 5, max(1, len(every))):
        got = kbest(a, k, max_gap)
        assert [(t, p) for _, t, p in got] == [(t, p) for _, t, p in every[:k]], k
        np.testing.assert_allclose([x for x, _, _ in got], [x for x, _, _ in every[:k]],
                                   rtol=1e-12, atol=0)
        if scale <= 30:                                # float32 weights (module doc)
            got = kbest_fst(a, [f"t{i}" for i in range(T)], k, max_gap)
            assert [(t, p) for _, t, p in got] == [(t, p) for _, t, p in every[:k]], k


def test_segment_enumeration_refuses_a_large_space():
    with pytest.raises(InputError, match="18 tokens and 3 types: 7.86e\\+05 segments"):
        enumerate_segments(np.zeros((3, 20, 20)), limit=10 ** 5)


MEU_CASES = [(N, beta, seed) for N in (0, 1, 4, 8) for beta in (0.0, 0.5, 1.0, 3.0)
             for seed in range(2)]


@pytest.mark.parametrize("N,beta,seed", MEU_CASES)
def test_segment_meu_against_every_gold_set(N, beta, seed):
    """U(S) = Σ_G Pr(G)·F_β(S | G) over every gold set G (enumerate_sets), for every S."""
    rng = np.random.default_rng(stable_seed("segmeu", N, beta, seed))
    p = rng.uniform(size=N) ** 2
    if N >= 4:
        p[:2] = (0.0, 1.0)                              # certain decisions
    gold = list(meu.enumerate_sets(p))
    assert math.fsum(q for _, q in gold) == pytest.approx(1.0, abs=1e-12)

    def U(S):
        return math.fsum(q * f_standard(len(set(S) & set(G)), len(S), len(G), beta)
                         for G, q in gold)
    subsets = [S for r in range(N + 1) for S in itertools.combinations(range(N), r)]
    for S in subsets:
        assert meu.expected_f(p, S, beta) == pytest.approx(U(S), abs=1e-12), S
    order, by_size = meu.expected_f_by_size(p, beta)
    for k in range(N + 1):
        assert by_size[k] == pytest.approx(U(order[:k]), abs=1e-12), k
    best = max(U(S) for S in subsets)
    chosen, value = meu.meu_set(p, beta)
    assert value == pytest.approx(best, abs=1e-12) and U(chosen) == pytest.approx(best, abs=1e-12)
    picked = decoder("meu", beta=beta).choose_segments(np.log(p + 1e-300), p, 0.0)
    assert sorted(picked) == chosen


def test_gold_set_enumeration_refuses_many_candidates():
    with pytest.raises(InputError, match="25 candidates: 3.36e\\+07 sets"):
        meu.enumerate_sets(np.full(25, 0.5))


# ======================================================================== joint
JOINT_CASES = [(n, c, p, x) for n in (1, 2, 4) for (c, p) in ((3, 2), (2, 3)) for x in SCALES]
CHUNKS, POS = ("A", "B", "O"), ("x", "y", "z")


def random_parts(rng, n, c, p, outside, scale):
    parts = J.Parts(*(rng.normal(scale=scale, size=s) for s in
                      ((n, c, p), (n, c, p, p), (n, c), (n, c), (n, c, c))))
    parts.trans[0] = 0.0
    parts.ctrans[0] = 0.0
    parts.ctrans[1:, outside, outside] = -np.inf
    return parts


@pytest.mark.parametrize("n,c,p,scale", JOINT_CASES)
def test_joint_structure_against_enumeration(n, c, p, scale):
    rng = np.random.default_rng(stable_seed("joint", n, c, p, scale))
    chunk_labels, pos_labels = CHUNKS[3 - c:], POS[:p]
    outside = c - 1
    parts = random_parts(rng, n, c, p, outside, scale)
    listed = list(parts.enumerate(outside))
    assert len(listed) == structure_count(n, c, p, outside)
    ys = [y for y, _ in listed]
    pr = np.exp([lp for _, lp in listed])
    assert math.fsum(pr) == pytest.approx(1.0, abs=1e-12)
    bound = n * sum(np.abs(np.where(np.isfinite(v), v, 0)).max()
                    for v in (parts.node, parts.trans, parts.start, parts.end, parts.ctrans))
    kappa = (2 * n + 2) * EPS * bound                   # the oracle's own rounding
    scores = np.array([J.structure_score(parts, y) for y in ys])
    logz = float(np.logaddexp.reduce(scores))
    # Figure 1's DP and its log-semiring twin
    y, best = J.viterbi(parts)
    assert y == ys[int(np.argmax(scores))]
    assert best == pytest.approx(scores.max(), rel=1e-12, abs=kappa)
    got_z, marg = J.inside_outside(parts)
    assert got_z == pytest.approx(logz, rel=1e-12, abs=kappa)
    for kind in J.KINDS:
        want = sum(q * getattr(J.structure_parts(u, c, p), kind) for u, q in zip(ys, pr))
        np.testing.assert_allclose(getattr(marg, kind), want, rtol=0, atol=1e-12 + 4 * kappa)
    # the machine twin
    model = J.JointModel.from_state(chunk_labels, pos_labels, {}, [])
    f = J.joint_fst(parts, chunk_labels, pos_labels, outside)
    assert J.fst_log_partition(f) == pytest.approx(logz, rel=1e-12, abs=kappa)
    pairs = [[J.pair_symbol(t, q) for q, t in zip(*_named(model, u))] for u in ys]
    if scale <= 30:                                     # float32 shortest path
        syms, score = J.fst_viterbi(f)
        assert syms == pairs[int(np.argmax(scores))]
        assert score == pytest.approx(scores.max(), rel=1e-5, abs=1e-5)
    names, got = J.fst_token_marginals(f)
    want = np.zeros_like(got)
    for row, q in zip(pairs, pr):
        for i, sym in enumerate(row):
            want[i, names.index(sym)] += q
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    # the chunk layer: a Lattice whose enumeration is the chunk marginal of the structures
    lat = Lattice(model.chunk_tags, "IOB2", J.chain_layers(parts, model.scorer_._tag_index),
                  raw_fst=lambda: model.chunk_fst(parts))
    law: dict = {}
    for u, lp in listed:
        law.setdefault(tuple(_named(model, u)[1]), []).append(lp)
    s = Sentence(lat, 2 * kappa)
    assert sorted(s.logp) == sorted(law)
    for key, lps in law.items():
        assert s.logp[key] == pytest.approx(float(np.logaddexp.reduce(lps)), rel=0,
                                            abs=1e-12 * max(1, abs(s.logp[key])) + 4 * kappa)
    where = ("joint chunk layer", n, c, p, scale)
    check_distribution(_Chunked, s, lat, where, entropy=False)
    with pytest.raises(InputError, match="several state paths for one tag sequence"):
        lat.entropy()                    # several (C, P, s) paths per chunk sequence
    # MAP of the chunk layer: the chunks of the best structure (Figure 1's decision;
    # the most probable chunk sequence of a marginal is not a chain's Viterbi)
    d, want = lat.map(), tuple(_named(model, ys[int(np.argmax(scores))])[1])
    assert tuple(d.tags) == want, where
    assert d.score == pytest.approx(s.logp[want], rel=1e-9, abs=1e-12 + 4 * kappa), where
    check_posterior(s, lat.posterior(), where)
    beta = BETAS[n % 3]
    check_meu(s, lat.meu(beta), beta, where)


class _Chunked:
    """What check_distribution reads of a chain case: the lattice has chunks."""
    chunked = True


def _named(model, y) -> tuple[list[str], list[str]]:
    """(POS labels, IOB2 chunk tags) of a structure."""
    return model.tags(y)


def test_entropy_of_a_machine_with_several_paths_per_tag_sequence_is_refused():
    """A union of two chains: H(state paths) > H(y), so the chain rule over the layers
    would overstate the entropy of the tags (it did: 1.1 nats for 0.66)."""
    from fstchunk.grammars.models import score_lattice
    rng = np.random.default_rng(5)
    tags = ("O", "B-NP", "I-NP")
    one = Lattice.from_scores(tags, rng.normal(size=(3, 3)), rng.normal(size=(3, 3)))
    e, t, s0, en = one.scores
    both = Lattice.from_fst(score_lattice(one.space.labels, e, t, s0, en).union(
        score_lattice(one.space.labels, e, t, s0, en)), tags, "IOB2")
    assert both.log_partition() == pytest.approx(one.log_partition() + math.log(2), rel=1e-12)
    with pytest.raises(InputError, match="several state paths for one tag sequence"):
        both.entropy()
    p = np.exp([lp for _, lp in one.enumerate()])
    assert Lattice.from_fst(one.fst, tags, "IOB2").entropy() == pytest.approx(
        -float(np.sum(p * np.log(p))), rel=1e-12)


def test_joint_enumeration_refuses_a_long_sentence():
    with pytest.raises(InputError, match="9 tokens, 3 chunk and 2 POS labels"):
        J.Parts.zeros(9, 3, 2).enumerate(2)
