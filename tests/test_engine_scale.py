"""Issue 17, the batched training path: forward-backward, corpus expectations and
the objectives give right answers (or a clear InputError, never a wrong number)
at any score scale.  Oracles: the log-space lattices and path enumeration."""

import itertools

import numpy as np
import pytest

from fstchunk import Lattice
from fstchunk.schemes import encodings as enc
from fstchunk.engine import batched, chain, scaled
from fstchunk.engine.expectation import corpus_expectations, tp_count_table_grad
from fstchunk.core.errors import InputError
from fstchunk.models.objectives import Chain, Gold, meu_corpus, ml
from fstchunk.schemes.tagspace import TagSet

TS = TagSet("IOB2", ("NP", "VP"))               # L = 5
L = len(TS)
TABS = (TS.cont, TS.opens, TS.closes, TS.type_index)
#: (emission scale, transition/start/end scale): all scores scaled together, and
#: a large in-token emission spread with ordinary transitions or the reverse
SCALES = [(s, s) for s in (1.0, 30.0, 300.0, 3000.0, 1e5)] + [(1e3, 1.0), (1.0, 1e3)]


def _scores(seed, B, n, scale, ties=False):
    """Random (emissions (B, n, L), transitions, start, end); ``ties``: integers
    times the scale, so that many paths share the best score."""
    rng = np.random.default_rng(seed)
    es, ts = scale
    draw = (lambda size: rng.integers(-2, 3, size=size).astype(float)) if ties \
        else (lambda size: rng.normal(size=size))
    return draw((B, n, L)) * es, draw((L, L)) * ts, draw(L) * ts, draw(L) * ts


def _masked(tr, st, en):
    return (np.where(TS.trans_ok, tr, -np.inf), np.where(TS.start_ok, st, -np.inf),
            np.where(TS.end_ok, en, -np.inf))


def _paths(em, tr, st, en):
    """Every valid tag sequence of one sentence with its probability (log space)."""
    n = em.shape[0]
    seqs, scores = [], []
    for y in itertools.product(range(L), repeat=n):
        if not (TS.start_ok[y[0]] and TS.end_ok[y[-1]]
                and all(TS.trans_ok[a, b] for a, b in zip(y, y[1:]))):
            continue
        seqs.append(y)
        scores.append(st[y[0]] + en[y[-1]] + sum(em[i, t] for i, t in enumerate(y))
                      + sum(tr[a, b] for a, b in zip(y, y[1:])))
    scores = np.array(scores)
    logz = np.logaddexp.reduce(scores)
    return seqs, np.exp(scores - logz), logz


def _features(y, n):
    """Counts of emissions (n, L), transitions, start and end used by ``y``."""
    fe, ft, fs, fn = np.zeros((n, L)), np.zeros((L, L)), np.zeros(L), np.zeros(L)
    fe[np.arange(n), y] = 1
    for a, b in zip(y, y[1:]):
        ft[a, b] += 1
    fs[y[0]] = fn[y[-1]] = 1
    return fe, ft, fs, fn


def _chunks(y):
    return set(enc.tags_to_chunks([TS.tags[t] for t in y], "IOB2"))


def _brute_expectations(em, tr, st, en, gold):
    """E[tp], E[m] of each sentence and ∇ of their sums, by path enumeration:
    ∇E[r] = Σ_y p(y)·(r(y) − E[r])·φ(y)."""
    B, n, _ = em.shape
    Er = np.zeros((2, B))
    gE = np.zeros((2, B, n, L))
    gT, gS, gN = np.zeros((2, L, L)), np.zeros((2, L)), np.zeros((2, L))
    for b in range(B):
        seqs, p, _ = _paths(em[b], tr, st, en)
        ref = _chunks(gold[b])
        r = np.array([[len(ref & _chunks(y)) for y in seqs], [len(_chunks(y)) for y in seqs]])
        Er[:, b] = r @ p
        for y, py, ry in zip(seqs, p, r.T):
            fe, ft, fs, fn = _features(y, n)
            for ch in (0, 1):
                w = py * (ry[ch] - Er[ch, b])
                gE[ch, b] += w * fe
                gT[ch] += w * ft
                gS[ch] += w * fs
                gN[ch] += w * fn
    return Er, gE, gT, gS, gN


def _random_gold(seed, em, tr, st, en):
    """A valid gold sequence per sentence (uniform over the valid ones)."""
    rng = np.random.default_rng(seed + 1)
    return [_paths(e, tr, st, en)[0][rng.integers(len(_paths(e, tr, st, en)[0]))] for e in em]


def _chunk_arrays(gold):
    rows = [(b, TS.types.index(t), s, e) for b, y in enumerate(gold)
            for t, s, e in sorted(_chunks(y), key=lambda c: c[1])]
    return tuple(np.array(rows, dtype=np.int64).reshape(-1, 4).T)


def _close(got, want, scale, what):
    """Expectations and gradients are O(1) numbers: absolute tolerance."""
    got, want = np.asarray(got, float), np.asarray(want, float)
    assert np.all(np.isfinite(got)), f"{what}: not finite at scale {scale}"
    np.testing.assert_allclose(got, want, atol=1e-8, rtol=1e-8, err_msg=f"{what} at {scale}")


# ------------------------------------------------------------------ (a) forward-backward
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("n", [1, 2, 7])
def test_batched_forward_backward_equals_log_space_lattices(scale, ties, n):
    """log Z and token marginals of the training recursion (whichever path it
    takes) equal the log-space lattice's, sentence by sentence."""
    for seed in range(4):
        em, tr, st, en = _scores(seed, 4, n, scale, ties)
        fb = batched.transfer(em, *_masked(tr, st, en))
        for b in range(len(em)):
            lat = Lattice.from_scores(TS.tags, em[b], tr, st, en)
            logz = lat.log_partition()
            assert np.isclose(fb.logz[b], logz, rtol=1e-13, atol=1e-9), (seed, b)
            _close((fb.a * fb.bt)[b], chain.token_marginals(lat.layers, L), scale, "marginals")


@pytest.mark.parametrize("scale", SCALES)
def test_scaled_recursions_are_exact_for_their_model_or_say_not_ok(scale):
    """The probability-space recursion alone: right for the weights it is given
    (a zero is a forbidden arc) or an InputError, never a wrong number; at
    ordinary scales it answers."""
    answered = 0
    for seed in range(8):
        em, tr, st, en = _scores(seed, 3, 6, scale)
        mt, ms, me = _masked(tr, st, en)
        Mt, Ms, Me = (np.exp(x - x.max()) for x in (mt, ms, me))
        (phi, rmax, a, c, c_end, bt), ok = scaled.scaled_recursions(em, Mt, Ms, Me)
        if not ok:                  # refused: the caller takes the exact gauged path
            continue
        answered += 1
        # the model it was given: log of its weights (−inf where a weight is 0)
        with np.errstate(divide="ignore"):
            lt, ls, le = np.log(Mt), np.log(Ms), np.log(Me)
        logz = (np.log(c).sum(1) + np.log(c_end) + rmax.sum(1) + ms.max() + me.max()
                + 5 * mt.max())
        for b in range(3):
            lay = chain.Layers([(ls + em[b, 0])[None]] + [lt + em[b, i] for i in range(1, 6)],
                               [np.arange(L)] * 6, le)
            want = chain.forward(lay)[1] + ms.max() + me.max() + 5 * mt.max()
            assert np.isclose(logz[b], want, rtol=1e-13, atol=1e-9)
            _close(a[b] * bt[b], chain.token_marginals(lay, L), scale, "marginals")
    if max(scale) <= 30:
        assert answered == 8
    if min(scale) >= 3000:
        assert answered < 8                    # the refusal is exercised


# ------------------------------------------------------------- (b) corpus expectations
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("n", [1, 3, 5])
def test_corpus_expectations_equal_path_enumeration(scale, ties, n):
    for seed in range(3):
        em, tr, st, en = _scores(10 * seed + n, 3, n, scale, ties)
        gold = _random_gold(seed, em, tr, st, en)
        got = corpus_expectations(em, _chunk_arrays(gold), *_masked(tr, st, en), TABS)
        want = _brute_expectations(em, tr, st, en, gold)
        for name, g, w in zip(("E[r]", "grad emissions", "grad transitions", "grad start",
                               "grad end"), got, want):
            _close(g, w, scale, name)


@pytest.mark.parametrize("scale", SCALES)
def test_corpus_expectations_equal_the_lattice_count_tables_on_longer_sentences(scale):
    """n = 12 (too long to enumerate): E[tp], E[m] and their gradients against
    the per-sentence expectation semiring on the lattice (tp_count_table_grad)."""
    n, B = 12, 3
    em, tr, st, en = _scores(7, B, n, scale)
    gold = [np.array(chain.viterbi(Lattice.from_scores(TS.tags, e, tr, st, en).layers)[0])
            for e in em]
    gold[1] = np.zeros(n, int)                                   # no gold chunk at all
    gold[2] = np.array([TS.tags.index(t) for t in
                        "B-NP I-NP O B-VP I-VP I-VP B-NP B-NP O O B-VP B-NP".split()])
    got = corpus_expectations(em, _chunk_arrays(gold), *_masked(tr, st, en), TABS)
    for ch, adj in ((0, (np.zeros(n + 1), np.ones(n + 1))),
                    (1, (np.arange(n + 1.0), np.zeros(n + 1)))):
        gT, gS, gN = np.zeros((L, L)), np.zeros(L), np.zeros(L)
        for b in range(B):
            lat = Lattice.from_scores(TS.tags, em[b], tr, st, en)
            fixed = sorted(_chunks(gold[b]), key=lambda c: c[1])
            gw, gfin, (Z, T) = tp_count_table_grad(lat, fixed, *adj)
            _close(got[0][ch, b], (T.sum(), np.arange(n + 1) @ Z)[ch], scale, "E[r]")
            _close(got[1][ch, b], np.stack([g.sum(axis=0) for g in gw]), scale, "grad em")
            gT += sum(gw[1:])
            gS += gw[0][0]
            gN += gfin
        _close(got[2][ch], gT, scale, "grad transitions")
        _close(got[3][ch], gS, scale, "grad start")
        _close(got[4][ch], gN, scale, "grad end")


# ------------------------------------------------------------------ (c) the objectives
def _corpus(seed, scale, lengths=(1, 3, 3, 4)):
    rng = np.random.default_rng(seed)
    es, ts = scale
    em = [rng.normal(size=(n, L)) * es for n in lengths]
    tr, st, en = rng.normal(size=(L, L)) * ts, rng.normal(size=L) * ts, rng.normal(size=L) * ts
    gold = [_random_gold(seed + k, e[None], tr, st, en)[0] for k, e in enumerate(em)]
    ch = Chain(TS.tags, "IOB2", np.concatenate(em), tr, st, en)
    return ch, Gold([np.array(g) for g in gold], TS.tags, "IOB2"), em, gold


@pytest.mark.parametrize("scale", SCALES)
def test_ml_objective_equals_path_enumeration(scale):
    for seed in range(3):
        ch, gold, em, ys = _corpus(seed, scale)
        value, grad = ml(ch, gold)
        want, gE = 0.0, []
        gT, gS, gN = np.zeros((L, L)), np.zeros(L), np.zeros(L)
        for e, y in zip(em, ys):
            seqs, p, logz = _paths(e, ch.trans, ch.start, ch.end)
            fy = _features(y, len(e))
            want += logz - (ch.start[y[0]] + ch.end[y[-1]] + e[np.arange(len(e)), y].sum()
                            + sum(ch.trans[a, b] for a, b in zip(y, y[1:])))
            ef = [sum(pz * f for pz, f in zip(p, fz))
                  for fz in zip(*(_features(z, len(e)) for z in seqs))]
            gE.append(ef[0] - fy[0])
            gT += ef[1] - fy[1]
            gS += ef[2] - fy[2]
            gN += ef[3] - fy[3]
        S = len(em)
        assert np.isfinite(value)
        assert value == pytest.approx(want / S, rel=1e-12, abs=1e-9 * max(scale))
        _close(grad.emissions, np.concatenate(gE) / S, scale, "grad emissions")
        _close(grad.trans, gT / S, scale, "grad transitions")
        _close(grad.start, gS / S, scale, "grad start")
        _close(grad.end, gN / S, scale, "grad end")


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_meu_corpus_objective_equals_path_enumeration(scale, beta):
    """−(1+β²)·Σ E[tp] / (Σ E[m(x)] + β²·Σ m(y)), x ~ the model, y the gold (the
    objective takes β² as ``beta_sq``)."""
    ch, gold, em, ys = _corpus(5, scale)
    w = beta ** 2
    value, grad = meu_corpus(ch, gold, w)
    tp = m_hyp = 0.0
    parts = []
    for e, y in zip(em, ys):
        Er, gE, gT, gS, gN = _brute_expectations(e[None], ch.trans, ch.start, ch.end, [y])
        tp, m_hyp = tp + Er[0, 0], m_hyp + Er[1, 0]
        parts.append((gE[:, 0], gT, gS, gN))
    m_gold = sum(len(_chunks(y)) for y in ys)
    den = m_hyp + w * m_gold
    assert value == pytest.approx(-(1 + w) * tp / den, rel=1e-10, abs=1e-12)
    d = ((1 + w) / den, -(1 + w) * tp / den ** 2)
    want = [np.concatenate([-(d[0] * p[0][0] + d[1] * p[0][1]) for p in parts])]
    for i in (1, 2, 3):
        want.append(sum(-(d[0] * p[i][0] + d[1] * p[i][1]) for p in parts))
    for name, g, w in zip(("emissions", "transitions", "start", "end"), grad, want):
        _close(g, w, scale, "grad " + name)


def test_ordinary_scales_take_the_fast_path_and_extreme_ones_the_exact_one():
    em, tr, st, en = _scores(0, 4, 9, (3.0, 3.0))
    assert not batched.transfer(em, *_masked(tr, st, en)).exact
    em, tr, st, en = _scores(0, 4, 9, (1e4, 1e4))
    assert batched.transfer(em, *_masked(tr, st, en)).exact


def test_no_valid_sequence_is_an_input_error_on_both_paths():
    em = np.zeros((2, 3, L))
    mt, ms, me = _masked(np.zeros((L, L)), np.zeros(L), np.zeros(L))
    for scale in (1.0, 1e5):
        with pytest.raises(InputError, match="no weight"):
            batched.transfer(em * scale, mt, np.full(L, -np.inf), me)


def test_length_batches_are_bounded_and_give_the_same_objectives(monkeypatch):
    """Gold.batches splits a length group at BATCH_ENTRIES / (n·L²) sentences
    (the memory of the gauged path); the objectives do not change."""
    from fstchunk.engine import ragged
    ch, gold, _, ys = _corpus(2, (300.0, 300.0), lengths=(3, 3, 3, 4, 4))
    want = [f(ch, gold) for f in (ml, meu_corpus)]
    monkeypatch.setattr(ragged, "BATCH_ENTRIES", 1)
    small = Gold([np.array(y) for y in ys], TS.tags, "IOB2")
    assert [b.rows.shape[0] for b in small.batches] == [1] * 5
    for f, (v, g) in zip((ml, meu_corpus), want):
        v2, g2 = f(ch, small)
        assert v2 == pytest.approx(v, rel=1e-12)
        for x, y in zip(g2, g):
            np.testing.assert_allclose(x, y, atol=1e-12)
