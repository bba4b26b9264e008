"""Ragged batches of the batched forward-backward (the ML objective's hot loop):
sentences of different lengths padded to the longest give, for each sentence, what
it gives alone — log Z, token marginals and expected transition counts equal to
path enumeration, 0 on the padding — on the scaled path and on the gauged one, for
schemes whose every state may end a sentence (IOB2) and schemes where some may not
(IOBES), with masked tags, at any score scale; and the ML objective does not depend
on how its sentences are cut into batches."""

import itertools

import numpy as np
import pytest

from fstchunk.engine import batched
from fstchunk.engine import ragged as O
from fstchunk.models.batching import Gold
from fstchunk.models.objectives import Chain, ml_statistics
from fstchunk.schemes.tagspace import TagSet
from oracles import stable_seed

SCALES = [1.0, 30.0, 1e3, 1e5]


def _space(scheme):
    return TagSet(scheme, ("NP", "VP"))


def _masked(ts, tr, st, en):
    return (np.where(ts.trans_ok, tr, -np.inf), np.where(ts.start_ok, st, -np.inf),
            np.where(ts.end_ok, en, -np.inf))


def _enumerate(ts, em, tr, st, en):
    """log Z, token marginals (n, L) and expected transition counts (L, L) of one
    sentence by enumerating its valid tag sequences (−inf in em forbids a tag)."""
    n, L = em.shape
    seqs, scores = [], []
    for y in itertools.product(range(L), repeat=n):
        if not (ts.start_ok[y[0]] and ts.end_ok[y[-1]]
                and all(ts.trans_ok[a, b] for a, b in zip(y, y[1:]))):
            continue
        s = (st[y[0]] + en[y[-1]] + sum(em[i, t] for i, t in enumerate(y))
             + sum(tr[a, b] for a, b in zip(y, y[1:])))
        if s > -np.inf:
            seqs.append(y)
            scores.append(s)
    scores = np.array(scores)
    logz = np.logaddexp.reduce(scores)
    p = np.exp(scores - logz)
    marg, pairs = np.zeros((n, L)), np.zeros((L, L))
    for y, w in zip(seqs, p):
        marg[np.arange(n), y] += w
        for a, b in zip(y, y[1:]):
            pairs[a, b] += w
    return logz, marg, pairs


def _batch(seed, ts, lengths, scale, masked):
    rng = np.random.default_rng(seed)
    B, n, L = len(lengths), max(lengths), len(ts)
    em = rng.normal(size=(B, n, L)) * scale
    em[np.arange(n)[None, :] >= np.asarray(lengths)[:, None]] = rng.normal() * 1e6  # junk
    if masked:                                  # forbid a tag here and there (partial gold)
        for b, m in enumerate(lengths):
            i = rng.integers(m)
            em[b, i, rng.choice(L, size=L // 2, replace=False)] = -np.inf
    tr, st, en = (rng.normal(size=s) * scale for s in ((L, L), L, L))
    return em, tr, st, en


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES"])
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("masked", [False, True])
def test_ragged_batch_equals_each_sentence_alone(scheme, scale, masked):
    ts = _space(scheme)
    paths = set()
    for k in range(3):
        lengths = np.array([1, 4, 2, 4, 3]) if k == 0 else \
            np.random.default_rng(stable_seed(scheme, scale, k)).integers(1, 5, size=4)
        em, tr, st, en = _batch(stable_seed(scheme, scale, masked, k), ts, lengths, scale,
                                masked)
        try:
            fb = batched.transfer(em, *_masked(ts, tr, st, en), lengths=lengths)
        except Exception as e:              # a sentence without a valid sequence (masked)
            assert masked and "no weight" in str(e)
            continue
        paths.add(fb.exact)
        post = fb.a * fb.bt
        pairs = np.zeros((len(ts), len(ts)))
        for b, m in enumerate(lengths):
            logz, marg, pr = _enumerate(ts, em[b, :m], tr, st, en)
            tol = 1e-12 * max(1.0, scale * m)
            assert abs(fb.logz[b] - logz) <= tol, (b, fb.logz[b], logz)
            np.testing.assert_allclose(post[b, :m], marg, atol=1e-9)
            assert np.all(post[b, m:] == 0)              # nothing on the padding
            pairs += pr
        np.testing.assert_allclose(fb.transitions(), pairs, atol=1e-8)
    if scale <= 30 and not masked:
        assert False in paths                   # the scaled path answered
    if scale >= 1e5:
        assert True in paths                    # the gauged path was exercised


def test_ragged_batch_refuses_bad_lengths():
    ts = _space("IOB2")
    em, tr, st, en = _batch(0, ts, [2, 3], 1.0, False)
    for bad in ([0, 3], [2, 4], [3]):
        with pytest.raises(Exception, match="lengths"):
            batched.transfer(em, *_masked(ts, tr, st, en), lengths=np.array(bad))


def _corpus(seed, scheme, lengths):
    ts = _space(scheme)
    rng = np.random.default_rng(seed)
    gold = []
    for m in lengths:                # valid gold: a random walk that can still end
        ok = [ts.end_ok]             # ok[j]: states from which j more tokens can end
        for _ in range(m - 1):
            ok.append((ts.trans_ok.astype(int) @ ok[-1]) > 0)
        y = [rng.choice(np.flatnonzero(ts.start_ok & ok[m - 1]))]
        for i in range(1, m):
            y.append(rng.choice(np.flatnonzero(ts.trans_ok[y[-1]] & ok[m - 1 - i])))
        gold.append(np.array(y))
    em = rng.normal(size=(sum(lengths), len(ts))) * 3
    tr, st, en = (rng.normal(size=s) for s in ((len(ts),) * 2, len(ts), len(ts)))
    return Chain(ts.tags, scheme, em, tr, st, en), Gold(gold, ts.tags, scheme)


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES"])
def test_ml_objective_does_not_depend_on_the_batching(scheme, monkeypatch):
    """One batch per length (STEP_COST 0), the default cut, everything in one padded
    batch (a huge STEP_COST), and batches capped by BATCH_ENTRIES: the same value
    and gradient, and each sentence in exactly one batch."""
    lengths = list(np.random.default_rng(stable_seed(scheme)).integers(1, 12, size=40)) + [30]
    chain, _ = _corpus(stable_seed(scheme, "c"), scheme, lengths)
    results = []
    for step, entries in ((0, O.BATCH_ENTRIES), (O.STEP_COST, O.BATCH_ENTRIES),
                          (10 ** 9, O.BATCH_ENTRIES), (10 ** 9, 30 * 81)):
        monkeypatch.setattr(O, "STEP_COST", step)
        monkeypatch.setattr(O, "BATCH_ENTRIES", entries)
        gold = _corpus(stable_seed(scheme, "c"), scheme, lengths)[1]
        ids = sorted(k for b in gold.buckets for k in b.sentence_ids)
        assert ids == list(range(len(lengths)))
        assert sorted(gold.bucket_rows) == sorted(set(gold.bucket_rows))
        results.append(ml_statistics(chain, gold))
    base = results[0]
    for r in results[1:]:
        np.testing.assert_allclose(r.values, base.values, rtol=1e-12)
        for g, w in zip(r.grads[0], base.grads[0]):
            np.testing.assert_allclose(g, w, atol=1e-10)


def test_buckets_cut_between_padding_and_steps(monkeypatch):
    """STEP_COST trades Python steps against padding: 0 gives one batch per length,
    a huge cost one batch (within BATCH_ENTRIES)."""
    lengths = [1, 1, 2, 3, 3, 3, 7, 20]
    for step, want in ((0, 5), (10 ** 9, 1)):
        monkeypatch.setattr(O, "STEP_COST", step)
        gold = _corpus(1, "IOB2", lengths)[1]
        assert len(gold.buckets) == want
        for b in gold.buckets:
            assert b.n == max(b.lengths)
            np.testing.assert_array_equal(b.valid.sum(axis=1), b.lengths)


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES"])
def test_bucketed_chain_gives_the_corpus_order_objective(scheme):
    """Emissions handed over in the buckets' layout (TrainingData.bucketed) give the
    same value, and the same emission gradient once its rows are put back in corpus
    order (padding rows 0), as the corpus-ordered chain."""
    lengths = [3, 1, 7, 2, 2, 5, 9, 4]
    chain, gold = _corpus(stable_seed(scheme, "b"), scheme, lengths)
    src = np.full(gold.bucket_size, -1)
    src[gold.bucket_rows] = np.arange(len(chain.emissions))
    em_b = np.where(src[:, None] >= 0, chain.emissions[np.maximum(src, 0)], 0.0)
    bucketed = Chain(chain.tags, scheme, em_b, chain.trans, chain.start, chain.end,
                     bucketed=True)
    want, got = ml_statistics(chain, gold), ml_statistics(bucketed, gold)
    np.testing.assert_allclose(got.values, want.values, rtol=1e-13)
    np.testing.assert_allclose(got.grads[0].emissions[gold.bucket_rows],
                               want.grads[0].emissions, atol=1e-13)
    assert np.all(got.grads[0].emissions[src < 0] == 0)
    for g, w in zip(got.grads[0][1:], want.grads[0][1:]):
        np.testing.assert_allclose(g, w, atol=1e-12)
    with pytest.raises(Exception, match="bucketed"):
        bucketed.lattice(0, 3)
