"""The batched inference engine (fstchunk.engine.inference, .ragged) against brute
force and against the per-sentence engine: Viterbi, log Z, token marginals, chunk
probabilities, entropy, posterior and exact MEU decisions, on random typed models in
all eight schemes, with tag masks, ragged lengths 1 to 60 in one batch, score scales
1 to 1e5; and the MAP certificate of exact MEU against enumeration."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.schemes import encodings as enc
from fstchunk.decoding.decoders import decoder
from fstchunk.engine import inference
from fstchunk.engine.chain import entropy, viterbi
from fstchunk.engine.meu import exact_meu, map_certified
from fstchunk.engine.ragged import cut_runs, ragged_batches
from fstchunk.engine.spans import chunk_probs
from fstchunk.core.fbeta import to_beta_sq
from fstchunk.structures.lattice import Lattice
from fstchunk.structures.lattices import batches, groups
from fstchunk.schemes.tagspace import TagSet
from oracles import all_chunkings, all_utilities, stable_seed

SCHEMES = ["IOB1", "IOB2", "IOE1", "IOE2", "IOBES", "BILOU", "IOBES2", "IOBES3"]
TYPES = ("NP", "VP")


def model(rng, scheme, scale):
    ts = TagSet(scheme, TYPES)
    L = len(ts.tags)
    return ts, (rng.normal(size=(L, L)) * scale, rng.normal(size=L) * scale,
                rng.normal(size=L) * scale)


def lattices_of(rng, scheme, scale, lengths, masked=False):
    ts, (tr, st_, en) = model(rng, scheme, scale)
    L = len(ts.tags)
    out = []
    for n in lengths:
        lat = Lattice.from_scores(ts.tags, rng.normal(size=(n, L)) * scale, tr, st_, en,
                                  scheme=scheme)
        if masked and rng.random() < 0.7:
            allowed = rng.random((n, L)) < 0.75
            chunks = [c for c in _random_chunking(rng, n)]       # one valid sequence stays
            y = enc.chunks_to_tags(chunks, n, scheme)
            allowed[np.arange(n), [ts.tags.index(t) for t in y]] = True
            lat = lat.constrained(allowed)
        out.append(lat)
    return out


def _random_chunking(rng, n):
    out, i = [], 0
    while i < n:
        if rng.random() < 0.5:
            i += 1
            continue
        e = int(rng.integers(i + 1, n + 1))
        out.append((TYPES[int(rng.integers(0, 2))], i, e))
        i = e
    return out


def enumerate_lattice(lat):
    """[(tags, chunk set, Pr)] over the valid sequences the lattice allows, from the
    definition (chunkings written in the scheme, scored from the arrays, the mask
    applied), and log Z."""
    em, tr, s, e = lat.scores
    col = {t: i for i, t in enumerate(lat.tags)}
    rows = []
    for c in all_chunkings(lat.n, TYPES):
        y = enc.chunks_to_tags(c, lat.n, lat.scheme)
        if any(t not in col for t in y):
            continue
        idx = [col[t] for t in y]
        if lat.allowed is not None and not all(lat.allowed[i, k] for i, k in enumerate(idx)):
            continue
        sc = s[idx[0]] + e[idx[-1]] + sum(em[i, idx[i]] for i in range(lat.n)) + \
            sum(tr[idx[i - 1], idx[i]] for i in range(1, lat.n))
        rows.append((y, frozenset(c), sc))
    logz = float(np.logaddexp.reduce([r[2] for r in rows]))
    return [(y, c, math.exp(sc - logz)) for y, c, sc in rows], logz


def batch_results(lats):
    """Per lattice: (path tags, score, log Z, marginals, entropy, ops, batch, row)."""
    out = [None] * len(lats)
    grouped, others = groups(lats)
    assert others == []
    for ids in grouped:
        for b in batches(lats, ids):
            paths, best = inference.viterbi(b)
            ops = inference.transfer_of(b)
            marg = inference.marginals(ops, b)
            H = inference.entropy(ops, b)
            for row, i in enumerate(b.index):
                n = lats[i].n
                out[i] = ([lats[i].tags[k] for k in paths[row, :n]], best[row], ops.logz[row],
                          marg[row, :n], H[row], ops, b, row)
    return out


# ------------------------------------------------------------------ brute force
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("masked", [False, True])
def test_batched_quantities_equal_enumeration(scheme, masked):
    rng = np.random.default_rng(stable_seed("bf", scheme, masked))
    lats = lattices_of(rng, scheme, 1.5, [1, 2, 3, 4, 5, 3, 1, 4], masked)
    for lat, (tags, best, logz, marg, H, ops, b, row) in zip(lats, batch_results(lats)):
        seqs, want_logz = enumerate_lattice(lat)
        probs = np.array([p for _, _, p in seqs])
        assert logz == pytest.approx(want_logz, abs=1e-10)
        top = seqs[int(np.argmax(probs))]
        assert tags == top[0] and best - logz == pytest.approx(math.log(probs.max()), abs=1e-10)
        want = np.zeros((lat.n, len(lat.tags)))
        for y, _, p in seqs:
            want[np.arange(lat.n), [lat.tags.index(t) for t in y]] += p
        np.testing.assert_allclose(marg, want, atol=1e-12)
        assert H == pytest.approx(-sum(p * math.log(p) for p in probs if p > 0), abs=1e-10)
        # every chunk any sequence holds, and one no sequence holds
        chunks = sorted({c for _, cs, _ in seqs for c in cs}) + [("NP", 0, lat.n)]
        p = inference.chunk_probs(ops, b, [row] * len(chunks),
                                  [TYPES.index(t) for t, _, _ in chunks],
                                  [s for _, s, _ in chunks], [e for _, _, e in chunks])
        for c, q in zip(chunks, p):
            assert q == pytest.approx(sum(pr for _, cs, pr in seqs if c in cs), abs=1e-12)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_batched_decoders_equal_enumeration(scheme):
    """MAP, posterior and exact MEU (β = 0.5, 1, 2) decided on a ragged batch are the
    enumerated optima, and MEU's score is the decision's exact E[F_β]."""
    rng = np.random.default_rng(stable_seed("dec", scheme))
    lats = lattices_of(rng, scheme, 2.0, [1, 4, 2, 5, 3, 5])
    for beta in (0.5, 1.0, 2.0):
        got = decoder("meu", beta=beta).decode_all(lats)
        tags_only = decoder("meu", beta=beta).tags(lats)
        for lat, d, t in zip(lats, got, tags_only):
            seqs, _ = enumerate_lattice(lat)
            u = all_utilities([(y, c, p) for y, c, p in seqs], beta)
            x = frozenset(enc.tags_to_chunks(d.tags, scheme))
            ux = _utility(seqs, x, beta)
            assert ux == pytest.approx(u.max(), abs=1e-10) and d.score == pytest.approx(ux, abs=1e-10)
            assert t == d.tags and d.gap < 1e-12
    post = decoder("posterior").decode_all(lats)
    for lat, d in zip(lats, post):
        seqs, _ = enumerate_lattice(lat)
        marg = lat.marginals()
        value = [sum(marg[i, lat.tags.index(t)] for i, t in enumerate(y)) for y, _, _ in seqs]
        assert d.score == pytest.approx(max(value), abs=1e-12)


def _utility(seqs, x, beta):
    w = beta ** 2
    out = 0.0
    for _, c, p in seqs:
        den = len(x) + w * len(c)
        out += p * ((1 + w) * len(x & c) / den if den > 0 else 1.0)
    return out


# ------------------------------------------------------------------ per sentence
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("scale", [1.0, 30.0, 1e3, 1e5])
def test_ragged_batch_equals_each_sentence_alone(scheme, scale):
    """Lengths 1 to 60 in one batch, with and without masks: each sentence gets what
    the per-sentence engine gives it (Viterbi bit for bit; the rest to rounding)."""
    rng = np.random.default_rng(stable_seed("ragged", scheme, scale))
    lengths = [1, 60, 2, 17, 33, 5, 60, 9, 1, 44]
    for masked in (False, True):
        lats = lattices_of(rng, scheme, scale, lengths, masked)
        for lat, (tags, best, logz, marg, H, ops, b, row) in zip(lats, batch_results(lats)):
            idx, score = viterbi(lat.layers)
            assert tags == [lat.tags[i] for i in idx] and best == score
            assert logz == pytest.approx(lat.log_partition(), rel=1e-12, abs=1e-9)
            np.testing.assert_allclose(marg, lat.marginals(), atol=1e-9)
            assert H == pytest.approx(entropy(lat.chain), rel=1e-7, abs=1e-7)
            chunks = enc.tags_to_chunks(tags, scheme)
            if chunks:
                ti = [TYPES.index(t) for t, _, _ in chunks]
                p = inference.chunk_probs(ops, b, [row] * len(chunks), ti,
                                          [s for _, s, _ in chunks], [e for _, _, e in chunks])
                want = chunk_probs(lat, [(t, s, e) for t, (_, s, e) in zip(ti, chunks)])
                np.testing.assert_allclose(p, want, atol=1e-9)


@pytest.mark.parametrize("scheme", ["IOB1", "IOB2", "IOBES", "BILOU"])
@pytest.mark.parametrize("scale", [1.0, 5.0, 1e3])
def test_batched_meu_equals_the_per_sentence_search(scheme, scale):
    """The decoder's batched MEU (MAP certificate first) decides what the full
    per-sentence search decides, with its value, on a ragged batch."""
    rng = np.random.default_rng(stable_seed("meu", scheme, scale))
    lats = lattices_of(rng, scheme, scale, [1, 8, 25, 13, 40, 3, 19], masked=True)
    for beta in (0.5, 1.0, 3.0):
        got = decoder("meu", beta=beta).decode_all(lats)
        for lat, d in zip(lats, got):
            types = lat.space.types
            res = exact_meu(lat, to_beta_sq(beta))           # no MAP certificate
            want = enc.chunks_to_tags([(types[t], s, e) for t, s, e in res.chunks],
                                      lat.n, scheme)
            assert d.tags == want
            assert d.score == pytest.approx(res.value, abs=1e-10) and d.gap <= 1e-12


# ------------------------------------------------------------------ the certificate
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10 ** 6), n=st.integers(1, 5), scale=st.sampled_from([0.3, 2.0, 8.0]),
       beta=st.sampled_from([0.25, 1.0, 4.0]), scheme=st.sampled_from(SCHEMES))
def test_a_certified_map_chunking_is_the_enumerated_meu(seed, n, scale, beta, scheme):
    rng = np.random.default_rng(seed)
    (lat,) = lattices_of(rng, scheme, scale, [n])
    seqs, _ = enumerate_lattice(lat)
    probs = np.array([p for _, _, p in seqs])
    top = seqs[int(np.argmax(probs))]
    if not map_certified(probs.max(), len(top[1]), beta ** 2):
        return
    best = max(_utility(seqs, frozenset(x), beta) for x in {c for _, c, _ in seqs} | {frozenset()})
    assert _utility(seqs, top[1], beta) == pytest.approx(best, abs=1e-12)
    assert _utility(seqs, top[1], beta) >= max(
        _utility(seqs, c, beta) for _, c, _ in seqs if c != top[1]) if len(seqs) > 1 else True


def test_the_certificate_bound():
    """p*(1 + δ_M) > 1 with δ_0 = 1 and, for M ≥ 1, δ_M = 1 − max F of a chunking one
    chunk off: certified above the threshold, not below; never at β = 0."""
    for M, w in itertools.product(range(0, 6), (0.25, 1.0, 4.0)):
        if M == 0:
            f_off = 0.0
        else:
            f_off = max((1 + w) * M / (M + 1 + w * M),
                        (1 + w) * (M - 1) / (M - 1 + w * M) if M > 1 else 0.0)
        p = 1 / (2 - f_off)
        assert map_certified(p + 1e-4, M, w) and not map_certified(p - 1e-4, M, w)
    assert not map_certified(1.0, 0, 0.0)


# ------------------------------------------------------------------ the layout
def test_cut_runs_holds_every_sentence_once_sorted_by_length():
    rng = np.random.default_rng(3)
    lens = rng.integers(1, 80, size=300)
    runs = cut_runs(lens, 9)
    ids = np.concatenate(runs)
    assert sorted(ids.tolist()) == list(range(300))
    assert np.all(np.diff(lens[ids]) >= 0)


def test_ragged_batches_pad_with_zeros_and_mask_with_minus_infinity():
    ts = TagSet("IOB2", TYPES)
    L = len(ts.tags)
    ems = [np.ones((n, L)) for n in (3, 1, 2)]
    masks = [None, np.array([[True] * (L - 1) + [False]]), None]
    (b,) = ragged_batches(ems, np.zeros((L, L)), np.zeros(L), np.zeros(L), ts, masks=masks)
    assert b.B == 3 and b.n == 3 and b.masked
    row = {int(i): r for r, i in enumerate(b.index)}
    assert np.all(b.em[row[1], 0, -1] == -np.inf) and np.all(b.em[row[1], 1:] == 0)
    assert np.all(b.em[row[2], 2] == 0) and b.valid.sum() == 6


# ------------------------------------------------------------------ expected F
@pytest.mark.parametrize("scheme", SCHEMES)
def test_batched_expected_f_equals_enumeration_both_directions(scheme):
    """expected_f_all over a ragged batch, against fixed sequences (the MAP's, a chunk of
    a type the model lacks, none), equals summing over the enumerated sequences."""
    from fstchunk.decoding.expected import expected_f_all
    from oracles import brute_expectations
    rng = np.random.default_rng(stable_seed("ef", scheme))
    lats = lattices_of(rng, scheme, 1.5, [1, 3, 5, 2, 4, 5], masked=True)
    fixed = []
    for k, lat in enumerate(lats):
        if k % 3 == 0:
            fixed.append(lat.map().tags)
        elif k % 3 == 1:
            fixed.append(enc.chunks_to_tags([("VP", 0, 1)], lat.n, scheme))
        else:
            fixed.append(enc.chunks_to_tags([], lat.n, scheme))
    for direction in ("training", "decoding"):
        got = expected_f_all(lats, fixed, 0.5, direction)
        for lat, fx, r in zip(lats, fixed, got):
            seqs, _ = enumerate_lattice(lat)
            want = brute_expectations(seqs, frozenset(enc.tags_to_chunks(fx, scheme)), 0.5,
                                      direction)
            for key in ("tp", "precision", "recall", "f"):
                assert getattr(r, key) == pytest.approx(want[key], abs=1e-12), (direction, key)


@pytest.mark.parametrize("scale", [1.0, 1e3, 1e5])
def test_batched_count_tables_equal_the_per_sentence_recursion(scale):
    from fstchunk.engine.expectation import tp_count_table
    rng = np.random.default_rng(stable_seed("tables", scale))
    for scheme in ("IOB1", "IOBES", "BILOU"):
        lats = lattices_of(rng, scheme, scale, [1, 60, 7, 33, 18, 60, 2], masked=True)
        fixed = [lat.map().tags for lat in lats]
        (ids,), _ = groups(lats)
        for b in batches(lats, ids):
            chunks = [[(TYPES.index(t), s, e) for t, s, e in enc.tags_to_chunks(fixed[i], scheme)]
                      for i in b.index]
            Z, T = inference.tp_count_tables(inference.transfer_of(b), b, chunks)
            for row, i in enumerate(b.index):
                z, t = tp_count_table(lats[i], enc.tags_to_chunks(fixed[i], scheme))
                n = lats[i].n
                np.testing.assert_allclose(Z[row, :n + 1], z, atol=1e-10)
                np.testing.assert_allclose(T[row, :n + 1], t, atol=1e-9)


@pytest.mark.parametrize("scheme", ["IOB1", "IOE2", "IOBES", "BILOU"])
@pytest.mark.parametrize("scale", [1.0, 30.0, 1e4])
def test_batched_tilted_spans_equal_the_per_sentence_sweep(scheme, scale):
    """Every listed chunk's marginal and tilted marginals, and the pruning certificate:
    the batched sweep (one list of columns for all sentences) against each sentence's."""
    from fstchunk.engine import spans, spans_batch
    rng = np.random.default_rng(stable_seed("tilt", scheme, scale))
    lats = lattices_of(rng, scheme, scale, [1, 40, 6, 23, 40, 11], masked=True)
    z = np.array([0.9, 0.5, 0.1])
    (ids,), _ = groups(lats)
    for prune in (0.0, 1e-6):
        for b in batches(lats, ids):
            got = spans_batch.tilted_spans(inference.transfer_of(b), b,
                                           np.tile(z, (b.B, 1)), prune)
            for row, i in enumerate(b.index):
                want = spans.tilted_spans(lats[i], z, prune=prune)
                mine = got.sent == row
                key = lambda t, s, e: list(zip(t.tolist(), s.tolist(), e.tolist()))  # noqa: E731
                ours = dict(zip(key(got.typ[mine], got.start[mine], got.end[mine]),
                                zip(got.prob[mine], got.Q[mine])))
                theirs = dict(zip(key(want.types, want.starts, want.ends),
                                  zip(want.prob, want.prob[:, None] * want.ratio)))
                common = set(ours) & set(theirs)
                # the listed sets agree but for chunks at the pruning threshold itself
                for c in set(ours) ^ set(theirs):
                    p = (ours.get(c) or theirs.get(c))[0]
                    assert abs(p - prune) <= 1e-9 * max(prune, 1e-300) + 1e-15, c
                for c in common:
                    assert ours[c][0] == pytest.approx(theirs[c][0], rel=1e-9, abs=1e-15)
                    np.testing.assert_allclose(ours[c][1], theirs[c][1], rtol=1e-8, atol=1e-15)
                # the certificate bounds what was left out: per start, the largest
                # marginal of an unlisted chunk; and each start's part is at most prune
                full = spans.tilted_spans(lats[i], (), prune=0.0)
                left = {}
                for c, p in zip(key(full.types, full.starts, full.ends), full.prob):
                    if c not in ours:
                        left[c[1]] = max(left.get(c[1], 0.0), p)
                assert got.pruned[row] >= sum(left.values()) * (1 - 1e-9) - 1e-300
                assert got.pruned[row] <= lats[i].n * prune * (1 + 1e-9)
