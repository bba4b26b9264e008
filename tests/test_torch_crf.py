"""fstchunk.torch.ChunkCRF against the numpy engine, brute force, and gradcheck.

Oracles: :class:`fstchunk.structures.lattice.Lattice` (log Z, token and chunk marginals),
:func:`fstchunk.decoding.expected.expected_f` (training direction, ``reference=gold``),
:func:`fstchunk.decoding.decode.decode_map` / ``decode_meu``; and an enumeration of every
valid tag sequence (itertools over all tag strings, filtered by the scheme).
"""

import itertools
import pathlib
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from oracles import f_standard, stable_seed  # noqa: E402
from fstchunk.schemes import encodings as enc  # noqa: E402
from fstchunk.decoding.decode import decode_map, decode_meu  # noqa: E402
from fstchunk.core.errors import InputError  # noqa: E402
from fstchunk.decoding.expected import expected_f  # noqa: E402
from fstchunk.torch.expected import NODE_TOL  # noqa: E402
from fstchunk.structures.lattice import Lattice  # noqa: E402
from fstchunk.torch import ChunkCRF  # noqa: E402

SCHEMES = ["IOB2", "IOE2", "IOBES", "IOB1", "BILOU"]
F64 = torch.float64


def make_batch(rng, L, lengths, n=None, scale=1.0, dtype=F64, gold_rng=None):
    n = n or max(lengths)
    B = len(lengths)
    em = torch.tensor(rng.normal(scale=scale, size=(B, n, L)), dtype=dtype)
    tr = torch.tensor(rng.normal(scale=scale, size=(L, L)), dtype=dtype)
    st = torch.tensor(rng.normal(scale=scale, size=L), dtype=dtype)
    en = torch.tensor(rng.normal(scale=scale, size=L), dtype=dtype)
    mask = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]
    return em, tr, mask, st, en


def lattice(tags, scheme, args, b, length):
    em, tr, _, st, en = (x.detach().double().numpy() if x is not None else None for x in args)
    L = len(tags)
    st, en = (np.zeros(L) if x is None else x for x in (st, en))
    return Lattice.from_scores(tags, em[b, :length], tr, st, en, scheme=scheme)


def random_gold(rng, tags, scheme, lengths):
    """Gold sequences: the MAP of unrelated random scores (valid, varied)."""
    L = len(tags)
    return [decode_map(Lattice.from_scores(tags, rng.normal(scale=2, size=(n, L)),
                                           np.zeros((L, L)), scheme=scheme)).tags
            for n in lengths]


def check_against_engine(crf, args, lengths, gold, atol, beta=1.0):
    tags, scheme = crf.tags, crf.scheme
    lz = crf.log_partition(*args)
    mg = crf.marginals(*args)
    cm = crf.chunk_marginals(*args)
    ef = crf.expected_f(*args, gold=gold, beta=beta)
    ecf = crf.expected_corpus_f(*args, gold=gold, beta=beta)
    B, n = args[2].shape
    assert lz.shape == (B,) and mg.shape == (B, n, len(tags))
    assert cm.shape == (B, n, n + 1, len(crf.types)) and ef.shape == (B,) and ecf.shape == ()
    tp = m = mg_sum = 0.0
    for b, length in enumerate(lengths):
        lat = lattice(tags, scheme, args, b, length)
        np.testing.assert_allclose(lz[b].item(), lat.log_partition(), rtol=0, atol=atol)
        np.testing.assert_allclose(mg[b, :length].double().numpy(), lat.marginals(), atol=atol)
        # the engine's types are sorted, ours in order of first appearance in tags
        perm = [lat.space.types.index(t) for t in crf.types]
        ref = lat.chunk_marginals()[perm].transpose(1, 2, 0)
        np.testing.assert_allclose(cm[b, :length, :length + 1].double().numpy(), ref,
                                   atol=atol)
        outside = cm[b].clone()
        outside[:length, :length + 1] = 0
        assert float(mg[b, length:].abs().sum()) == 0 and float(outside.abs().sum()) == 0
        e = expected_f(lat, reference=gold[b], beta=beta, method="fast")
        np.testing.assert_allclose(ef[b].item(), e.f, rtol=0, atol=atol)
        tp += e.tp
        m += ref.sum()
        mg_sum += len(enc.tags_to_chunks(gold[b], scheme))
    np.testing.assert_allclose(ecf.item(), f_standard(tp, m, mg_sum, beta), atol=atol)
    return lz, mg, cm, ef, ecf


# ---------------------------------------------------------------- the numpy engine
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("scale", [1.0, 50.0])
def test_corpus_counts_are_sums_of_chunk_marginals(scheme, scale):
    """E[tp] and E[m] of the one-sweep corpus counts against the O(n²) chunk
    marginals: at the gold chunks, and over every chunk (padding and a 1-token
    sentence in the batch)."""
    from fstchunk.torch.checks import check_gold
    from fstchunk.torch.expected import corpus_counts
    rng = np.random.default_rng(7)
    tags = list(enc.scheme_tags(scheme, ("NP", "VP", "PP")))
    crf = ChunkCRF(tags, scheme)
    lengths = [9, 1, 5, 12]
    args = make_batch(rng, len(tags), lengths, scale=scale)
    gold = random_gold(rng, tags, scheme, lengths)
    bt = crf._check(*args)
    g = check_gold(gold, bt, crf.scheme, crf.types, crf.type_index)
    tp, m = corpus_counts(crf, bt, g)
    cm = crf.chunk_marginals(*args)
    want_tp = sum(float(cm[b, s, e, k]) for b, row in enumerate(g.chunks) for k, s, e in row)
    assert sum(map(len, g.chunks)) > 3
    np.testing.assert_allclose(float(tp), want_tp, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(float(m), float(cm.sum()), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_vectorised_gold_equals_the_sequence_reader(scheme):
    """ChunkCRF._gold (index tables, vectorised) against check_gold (every sequence
    read by fstchunk.schemes.encodings): chunks, ends, starts and counts, with padding, a
    1-token sentence and an all-O sentence; gold as an index tensor gives the same
    expected F; a gold tag the columns lack still takes the sequence reader."""
    from fstchunk.torch.checks import check_gold
    rng = np.random.default_rng(11)
    tags = list(enc.scheme_tags(scheme, ("NP", "VP", "PP")))
    crf = ChunkCRF(tags, scheme)
    lengths = [9, 1, 5, 12, 3]
    args = make_batch(rng, len(tags), lengths, scale=1.0)
    for trial in range(4):
        gold = random_gold(rng, tags, scheme, lengths)
        gold[4] = ["O"] * 3
        bt = crf._check(*args)
        want, got = check_gold(gold, bt, crf.scheme, crf.types, crf.type_index), crf._gold(gold, bt)
        assert got.chunks == want.chunks and sum(map(len, got.chunks)) > 3
        for name in ("last", "match", "count"):
            assert torch.equal(getattr(got, name), getattr(want, name)), name
    col = {t: i for i, t in enumerate(tags)}
    idx = torch.zeros(bt.mask.shape, dtype=torch.long)
    for b, seq in enumerate(gold):
        idx[b, :len(seq)] = torch.tensor([col[t] for t in seq])
    for name in ("expected_f", "expected_corpus_f"):
        assert torch.equal(getattr(crf, name)(*args, gold=idx), getattr(crf, name)(*args, gold=gold))
    assert tags[0] == "O"
    noo = ChunkCRF(tags[1:], scheme)
    em = args[0][..., 1:]
    out = noo.expected_f(em, args[1][1:, 1:], args[2], gold=gold)
    assert torch.isfinite(out).all() and float(out[4]) == 0.0      # m(g) = 0, y has chunks


@pytest.mark.parametrize("scheme", SCHEMES)
def test_matches_numpy_engine(scheme):
    rng = np.random.default_rng(stable_seed(scheme))
    tags = list(enc.scheme_tags(scheme, ("NP", "VP")))
    crf = ChunkCRF(tags, scheme)
    lengths = [7, 4, 1, 2]
    args = make_batch(rng, len(tags), lengths, scale=1.5)
    gold = random_gold(rng, tags, scheme, lengths)
    for beta in (1.0, 0.5, 0.0, 2.0):                   # the standard β
        check_against_engine(crf, args, lengths, gold, 1e-9, beta)
    maps = crf.decode(*args)
    meus = crf.decode(*args, method="meu", beta=2.0)
    for b, length in enumerate(lengths):
        lat = lattice(tags, scheme, args, b, length)
        assert maps[b] == decode_map(lat).tags
        assert meus[b] == decode_meu(lat, beta=2.0).tags


def test_tag_order_and_start_end_default():
    """Columns in any order, types in order of first appearance, start/end None =
    zeros, expected F by composition too."""
    rng = np.random.default_rng(5)
    tags = ["I-VP", "O", "B-NP", "B-VP", "I-NP"]
    crf = ChunkCRF(tags, "IOB2")
    assert crf.types == ("VP", "NP")
    assert ChunkCRF(["O", "B", "I"]).types == ("",)
    em, tr, mask, _, _ = make_batch(rng, 5, [5, 3])
    gold = [["B-NP", "I-NP", "O", "B-VP", "B-NP"], ["O", "B-VP", "O"]]
    check_against_engine(crf, (em, tr, mask, None, None), [5, 3], gold, 1e-9, 0.8)
    cm = crf.chunk_marginals(em, tr, mask)
    lat = Lattice.from_scores(tags, em[0].numpy(), tr.numpy(), scheme="IOB2")
    assert lat.space.types == ("NP", "VP")
    np.testing.assert_allclose(cm[0, :, :, 0].numpy(), lat.chunk_marginals()[1], atol=1e-12)
    lz = crf.log_partition(em, tr, mask)
    ef = crf.expected_f(em, tr, mask, gold=gold, beta=3.0)
    for b, length in enumerate([5, 3]):
        lat = Lattice.from_scores(tags, em[b, :length].numpy(), tr.numpy(), scheme="IOB2")
        assert lz[b].item() == pytest.approx(lat.log_partition(), abs=1e-9)
        e = expected_f(lat, reference=gold[b], beta=3.0, method="fst").f
        assert ef[b].item() == pytest.approx(e, abs=1e-9)


# ---------------------------------------------------------------- brute force
def enumerate_valid(tags, scheme, em, tr, st, en):
    """(tag list, chunk set, probability) of every valid sequence, and log Z."""
    n, out = em.shape[0], []
    for idx in itertools.product(range(len(tags)), repeat=n):
        y = [tags[i] for i in idx]
        if not enc.is_valid(y, scheme):
            continue
        s = st[idx[0]] + en[idx[-1]] + sum(em[i, j] for i, j in enumerate(idx))
        s += sum(tr[a, b] for a, b in zip(idx, idx[1:]))
        out.append((y, frozenset(enc.tags_to_chunks(y, scheme)), s))
    logz = np.logaddexp.reduce([s for *_, s in out])
    return [(y, c, np.exp(s - logz)) for y, c, s in out], logz


@pytest.mark.parametrize("scheme,types", [("IOB2", ("A", "B")), ("IOE2", ("A", "B")),
                                          ("IOBES", ("A",)), ("IOB1", ("A", "B")),
                                          ("IOE1", ("A", "B"))])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_brute_force(scheme, types, n):
    rng = np.random.default_rng(n * 7 + len(scheme))
    tags = list(enc.scheme_tags(scheme, types))
    L = len(tags)
    assert L <= 5
    crf = ChunkCRF(tags, scheme)
    args = make_batch(rng, L, [n], scale=1.2)
    em, tr, st, en = (x.numpy() for x in (args[0][0], args[1], args[3], args[4]))
    seqs, logz = enumerate_valid(tags, scheme, em, tr, st, en)
    gold = [seqs[rng.integers(len(seqs))][0]]
    g = frozenset(enc.tags_to_chunks(gold[0], scheme))
    assert crf.log_partition(*args)[0].item() == pytest.approx(logz, abs=1e-10)
    marg = np.zeros((n, L))
    cm = np.zeros((n, n + 1, len(types)))
    for y, cs, p in seqs:
        marg[np.arange(n), [tags.index(t) for t in y]] += p
        for t, s, e in cs:
            cm[s, e, types.index(t)] += p
    np.testing.assert_allclose(crf.marginals(*args)[0].numpy(), marg, atol=1e-12)
    np.testing.assert_allclose(crf.chunk_marginals(*args)[0].numpy(), cm, atol=1e-12)
    for beta in (0.0, 1.0, 2.5):
        ef = sum(p * f_standard(len(cs & g), len(cs), len(g), beta) for _, cs, p in seqs)
        got = crf.expected_f(*args, gold=gold, beta=beta)[0].item()
        # the node rule's relative error on 1/(m + β·m(g)) is at most NODE_TOL, so E[F]'s
        # absolute error is at most NODE_TOL·E[F] (plus rounding)
        assert got == pytest.approx(ef, abs=2 * NODE_TOL)
    empty = [["O"] * n]             # m(g) = 0: F = 1 only for the empty y (0/0 := 1)
    p_empty = sum(p for _, cs, p in seqs if not cs)
    assert crf.expected_f(*args, gold=empty)[0].item() == pytest.approx(p_empty, abs=1e-12)
    best = max(seqs, key=lambda r: r[2])[0]
    assert crf.decode(*args) == [best]


# ---------------------------------------------------------------- gradients
@pytest.mark.parametrize("scheme", ["IOB2", "IOBES"])
def test_gradcheck(scheme):
    rng = np.random.default_rng(11)
    types = ("A", "B") if scheme == "IOB2" else ("A",)
    tags = list(enc.scheme_tags(scheme, types))
    crf = ChunkCRF(tags, scheme)
    lengths = [3, 2]
    em, tr, mask, st, en = make_batch(rng, len(tags), lengths)
    gold = random_gold(rng, tags, scheme, lengths)
    wm = torch.tensor(rng.normal(size=(2, 3, len(tags))))
    wc = torch.tensor(rng.normal(size=(2, 3, 4, len(types))))
    fns = {
        "log_partition": lambda *a: crf.log_partition(a[0], a[1], mask, a[2], a[3]),
        "marginals": lambda *a: (crf.marginals(a[0], a[1], mask, a[2], a[3]) * wm).sum(),
        "chunk_marginals": lambda *a: (crf.chunk_marginals(a[0], a[1], mask, a[2], a[3])
                                       * wc).sum(),
        "expected_f": lambda *a: crf.expected_f(a[0], a[1], mask, a[2], a[3], gold=gold),
        "expected_corpus_f": lambda *a: crf.expected_corpus_f(a[0], a[1], mask, a[2], a[3],
                                                              gold=gold, beta=0.7),
    }
    inputs = tuple(x.clone().requires_grad_() for x in (em, tr, st, en))
    for name, fn in fns.items():
        assert torch.autograd.gradcheck(fn, inputs, atol=1e-7, rtol=1e-5), name
        out = fn(*inputs).sum()
        g = torch.autograd.grad(out, inputs[0])[0]
        assert float(g[1, 2:].abs().sum()) == 0, f"{name}: gradient on padding"


def test_gradcheck_at_large_scale():
    """Scores of size 300: the log-semiring products take their exact fallback."""
    rng = np.random.default_rng(11)
    tags = list(enc.scheme_tags("IOB2", ("A", "B")))
    crf = ChunkCRF(tags, "IOB2")
    em, tr, mask, _, _ = make_batch(rng, 5, [3, 2], scale=300.0)
    gold = [["B-A", "I-A", "O"], ["O", "B-B"]]
    wc = torch.tensor(rng.normal(size=(2, 3, 4, 2)))
    inputs = (em.requires_grad_(), tr.requires_grad_())
    for fn in (lambda e, t: crf.log_partition(e, t, mask),
               lambda e, t: (crf.chunk_marginals(e, t, mask) * wc).sum(),
               lambda e, t: crf.expected_f(e, t, mask, gold=gold)):
        assert torch.autograd.gradcheck(fn, inputs, atol=1e-5, rtol=1e-4)


def test_log_partition_gradient_is_marginals():
    rng = np.random.default_rng(3)
    tags = list(enc.scheme_tags("IOBES", ("A", "B")))
    crf = ChunkCRF(tags, "IOBES")
    em, tr, mask, st, en = make_batch(rng, len(tags), [6, 3])
    em.requires_grad_()
    (g,) = torch.autograd.grad(crf.log_partition(em, tr, mask, st, en).sum(), em)
    np.testing.assert_allclose(g.numpy(), crf.marginals(em, tr, mask, st, en).detach(),
                               atol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 300.0, 3000.0])
def test_logmatmul_matches_logsumexp(scale):
    """The scaled product with its exact fallback (scale 300, 3000: exp underflows) equals
    the broadcast log-sum-exp, values and gradients; no-path entries stay NEG-ish."""
    from fstchunk.torch.semiring import NEG, logmatmul
    rng = np.random.default_rng(2)
    X = torch.tensor(rng.normal(scale=scale, size=(2, 7, 5)))
    K = torch.tensor(rng.normal(scale=scale, size=(5, 4)))
    X[0, 1] = NEG                                   # a row with no path
    X[1, 2, :3] = NEG
    K[:, 0] = NEG                                   # a column no arc enters
    K[1:, 2] = NEG
    X.requires_grad_()
    K.requires_grad_()
    ref = torch.logsumexp(X.unsqueeze(-1) + K, -2)
    got = logmatmul(X, K)
    live = ref > NEG / 2
    assert int(live.sum()) > 20 and bool((got[~live] < NEG / 2).all())
    np.testing.assert_allclose(got[live].detach().numpy(), ref[live].detach().numpy(),
                               rtol=1e-13, atol=1e-12)
    w = torch.tensor(rng.normal(size=ref.shape)) * live
    for a, b in zip(torch.autograd.grad((got * w).sum(), (X, K)),
                    torch.autograd.grad((ref * w).sum(), (X, K))):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_gradient_at_extreme_scale_is_the_engines_marginals():
    rng = np.random.default_rng(12)
    tags = list(enc.scheme_tags("IOB2", ("A", "B")))
    crf = ChunkCRF(tags, "IOB2")
    lengths = [9, 4]
    em, tr, mask, st, en = (x * 1e4 if x.dtype == F64 else x
                            for x in make_batch(rng, len(tags), lengths, scale=0.3))
    em.requires_grad_()
    (g,) = torch.autograd.grad(crf.log_partition(em, tr, mask, st, en).sum(), em)
    for b, n in enumerate(lengths):
        ref = lattice(tags, "IOB2", (em, tr, mask, st, en), b, n).marginals()
        np.testing.assert_allclose(g[b, :n].numpy(), ref, atol=1e-9)


# ---------------------------------------------------------------- padding, scale, float32
def test_padding_equals_each_sentence_alone():
    rng = np.random.default_rng(8)
    tags = list(enc.scheme_tags("IOE2", ("A", "B")))
    crf = ChunkCRF(tags, "IOE2")
    lengths = [5, 1, 3]
    em, tr, mask, st, en = make_batch(rng, len(tags), lengths, n=7)   # 2 all-padding columns
    em[~mask] = 1e3                       # garbage on padding changes nothing
    em[2, 4, 1] = float("nan")
    gold = random_gold(rng, tags, "IOE2", lengths)
    batch = (crf.log_partition(em, tr, mask, st, en), crf.marginals(em, tr, mask, st, en),
             crf.chunk_marginals(em, tr, mask, st, en),
             crf.expected_f(em, tr, mask, st, en, gold=gold))
    for b, n in enumerate(lengths):
        one = (em[b:b + 1, :n], tr, torch.ones(1, n, dtype=torch.bool), st, en)
        alone = (crf.log_partition(*one), crf.marginals(*one), crf.chunk_marginals(*one),
                 crf.expected_f(*one, gold=[gold[b]]))
        for x, y in zip(batch, alone):
            got = x[b:b + 1]
            if got.dim() >= 3:
                got = got[:, :n]
            if got.dim() == 4:
                got = got[:, :, :n + 1]
            np.testing.assert_allclose(got.numpy(), y.numpy(), atol=1e-12)
    e = em.clone().requires_grad_()
    total = (crf.log_partition(e, tr, mask, st, en).sum() + crf.marginals(e, tr, mask)[..., 1].sum()
             + crf.chunk_marginals(e, tr, mask).sum()
             + crf.expected_f(e, tr, mask, gold=gold).sum())
    (g,) = torch.autograd.grad(total, e)
    assert bool(torch.isfinite(g).all()) and float(g[~mask].abs().sum()) == 0
    assert crf.decode(em, tr, mask, st, en) == \
        [crf.decode(em[b:b + 1, :n], tr, torch.ones(1, n, dtype=torch.bool), st, en)[0]
         for b, n in enumerate(lengths)]


def test_extreme_scale():
    rng = np.random.default_rng(4)
    tags = list(enc.scheme_tags("IOBES", ("A", "B")))
    crf = ChunkCRF(tags, "IOBES")
    lengths = [12, 5]
    em, tr, mask, st, en = make_batch(rng, len(tags), lengths)
    args = tuple(x * 1e4 if x.dtype == F64 else x for x in (em, tr, mask, st, en))
    gold = random_gold(rng, tags, "IOBES", lengths)
    lz, *_ = check_against_engine(crf, args, lengths, gold, 1e-9)
    assert torch.isfinite(lz).all() and lz.abs().min() > 1e4
    e = args[0].clone().requires_grad_()
    out = crf.expected_f(e, *args[1:], gold=gold).sum() + crf.log_partition(e, *args[1:]).sum()
    assert torch.isfinite(torch.autograd.grad(out, e)[0]).all()


def test_float32():
    rng = np.random.default_rng(6)
    tags = list(enc.scheme_tags("IOB2", ("A", "B", "C")))
    crf = ChunkCRF(tags, "IOB2")
    lengths = [9, 4]
    args = make_batch(rng, len(tags), lengths, scale=2.0)
    gold = random_gold(rng, tags, "IOB2", lengths)
    a32 = tuple(x.float() if x.dtype == F64 else x for x in args)
    for name in ("log_partition", "marginals", "chunk_marginals"):
        x32, x64 = getattr(crf, name)(*a32), getattr(crf, name)(*args)
        assert x32.dtype == torch.float32
        np.testing.assert_allclose(x32.double().numpy(), x64.numpy(), atol=1e-4, rtol=1e-5)
    for name in ("expected_f", "expected_corpus_f"):
        x32, x64 = (getattr(crf, name)(*a, gold=gold) for a in (a32, args))
        assert x32.dtype == torch.float32
        np.testing.assert_allclose(x32.double().numpy(), x64.numpy(), atol=1e-4)
    assert crf.decode(*a32) == crf.decode(*args)


def test_float32_inputs_compute_expected_f_in_float64():
    """A corpus with no gold chunk whose model almost never opens one: Σ E[m] is about
    e^-400, so the expected corpus F is 0 (no tp over a positive expected count).  In
    float32 arithmetic Σ E[m] underflowed to 0 and 0/0 := 1 gave 1.0 (review find);
    both losses now run in float64 for float32 inputs and return float32."""
    crf = ChunkCRF(["O", "B-A", "I-A"], "IOB2")
    em = torch.zeros(2, 4, 3)
    em[..., 0] = 200.0                                   # O favoured by 200 nats a token
    tr, mask = torch.zeros(3, 3), torch.tensor([[True] * 4, [True, True, False, False]])
    gold = [["O"] * 4, ["O"] * 2]
    for dt in (torch.float32, torch.float64):
        f = crf.expected_corpus_f(em.to(dt), tr.to(dt), mask, gold=gold)
        assert f.dtype == dt and float(f) == 0.0
        e = crf.expected_f(em.to(dt), tr.to(dt), mask, gold=gold)
        assert e.dtype == dt and torch.equal(e, torch.ones(2, dtype=dt))


# ---------------------------------------------------------------- errors
def test_bad_inputs():
    rng = np.random.default_rng(1)
    tags = list(enc.scheme_tags("IOB2", ("A",)))
    crf = ChunkCRF(tags, "IOB2")
    em, tr, mask, st, en = make_batch(rng, 3, [3, 2])

    def raises(pattern, fn):
        with pytest.raises(InputError, match=pattern):
            fn()

    raises("3-D", lambda: crf.log_partition(em[0], tr, mask))
    raises("4 tag columns but there are 3", lambda: crf.log_partition(
        torch.zeros(2, 3, 4, dtype=F64), tr, mask))
    raises(re.escape("transitions has shape (2, 2)"), lambda: crf.marginals(em, tr[:2, :2], mask))
    raises(re.escape("start has shape (2,)"), lambda: crf.marginals(em, tr, mask, st[:2]))
    raises("mask must be a bool", lambda: crf.marginals(em, tr, mask.long()))
    raises("float32 or float64 tensor, got torch.int64", lambda: crf.marginals(
        em.long(), tr, mask))
    raises("emissions must be a torch.Tensor", lambda: crf.marginals(em.numpy(), tr, mask))
    raises(re.escape("mask has shape (2, 2)"), lambda: crf.marginals(em, tr, mask[:, :2]))
    raises("mask of sentence 1 has no token", lambda: crf.marginals(
        em, tr, torch.tensor([[True, True, True], [False, False, False]])))
    raises("mask of sentence 0 has a hole: position 1 is False", lambda: crf.marginals(
        em, tr, torch.tensor([[True, False, True], [True, True, False]])))
    raises("dtype torch.float32", lambda: crf.marginals(em, tr.float(), mask))
    bad = em.clone()
    bad[1, 0, 2] = float("nan")
    raises(re.escape("emissions has a non-finite score nan at index (1, 0, 2)"),
           lambda: crf.log_partition(bad, tr, mask))
    bad[1, 0, 2] = 0.0
    bad[1, 2, 0] = float("inf")            # on padding: ignored
    crf.log_partition(bad, tr, mask)
    t2 = tr.clone()
    t2[0, 1] = -float("inf")
    raises(re.escape("transitions has a non-finite score -inf at index (0, 1)"),
           lambda: crf.expected_f(em, t2, mask, gold=[["O"] * 3, ["O"] * 2]))
    raises(re.escape("end has a non-finite"), lambda: crf.log_partition(
        em, tr, mask, st, en * float("inf")))
    raises("gold is required", lambda: crf.expected_f(em, tr, mask))
    raises("gold has 1 sentences but the batch has 2",
           lambda: crf.expected_f(em, tr, mask, gold=[["O"] * 3]))
    raises("gold sentence 1 has 3 tags but the mask gives it 2 tokens",
           lambda: crf.expected_f(em, tr, mask, gold=[["O"] * 3, ["O"] * 3]))
    raises("gold sentence 1: invalid IOB2 sequence: position 1: tag 'I-A' cannot stand "
           "after 'O'", lambda: crf.expected_corpus_f(em, tr, mask,
                                                      gold=[["O"] * 3, ["O", "I-A"]]))
    raises("gold sentence 0: position 0: chunk type 'B'", lambda: crf.expected_f(
        em, tr, mask, gold=[["B-B", "O", "O"], ["O", "O"]]))
    raises("unknown decoder 'best'", lambda: crf.decode(em, tr, mask, method="best"))
    raises("beta must be a finite number", lambda: crf.expected_f(
        em, tr, mask, gold=[["O"] * 3, ["O"] * 2], beta=-1))
    raises("not a IOB2 tag", lambda: ChunkCRF(["O", "E-NP"], "IOB2"))
    raises("unknown chunk scheme", lambda: ChunkCRF(["O", "B-NP"], "XYZ"))
    raises("cannot express IOBES: missing I-A, S-A", lambda: ChunkCRF(["B-A", "E-A"], "IOBES"))
    full = ChunkCRF(enc.scheme_tags("IOBES", ("A",)), "IOBES")    # scores at NEG
    args = (torch.zeros(2, 2, 5, dtype=F64), torch.full((5, 5), -1e30, dtype=F64),
            torch.tensor([[True, False], [True, True]]))
    raises("sentence 1: every valid IOBES sequence of length 2 scores below -5e[+]29",
           lambda: full.log_partition(*args))
    raises("sentence 1: every valid IOBES sequence", lambda: full.decode(*args))


def test_no_torch_import_outside_the_torch_package():
    root = pathlib.Path(__file__).resolve().parents[1] / "fstchunk"
    for p in root.rglob("*.py"):
        if "torch" in p.relative_to(root).parts[:1]:
            continue
        text = p.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(import torch|from torch)", text, re.M), p


@pytest.mark.parametrize("scale,fast", [(1.0, True), (30.0, True), (3000.0, False)])
@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_log_partition_paths_equal_autograd_through_the_scaled_forward(scale, fast, dtype):
    """log Z's custom backward (the matrix-product fast path, and the exact path it falls
    back to when a scaled product underflows) against autograd through the scaled
    forward recursion :func:`fstchunk.torch.chain.forward`: values and the gradients
    of emissions, transitions, start and end; padding and a 1-token sentence included."""
    from fstchunk.torch import chain
    rng = np.random.default_rng(21)
    tags = list(enc.scheme_tags("IOBES", ("A", "B")))
    crf = ChunkCRF(tags, "IOBES")
    lengths = [7, 1, 4]
    em, tr, mask, st, en = (x.to(dtype) if x.dtype == F64 else x
                            for x in make_batch(rng, len(tags), lengths, scale=scale))
    seen = []
    apply = chain._LogPartition.apply

    def spy(*a):
        out = apply(*a)
        seen.append(out.grad_fn)
        return out

    chain._LogPartition.apply = spy
    try:
        leaves = [x.clone().requires_grad_() for x in (em, tr, st, en)]
        lz = crf.log_partition(leaves[0], leaves[1], mask, leaves[2], leaves[3])
    finally:
        chain._LogPartition.apply = apply
    w = torch.tensor(rng.normal(size=3), dtype=dtype)
    got = torch.autograd.grad((lz * w).sum(), leaves)
    ref_leaves = [x.clone().requires_grad_() for x in (em, tr, st, en)]
    bt = crf._check(ref_leaves[0], ref_leaves[1], mask, ref_leaves[2], ref_leaves[3])
    ref = chain.forward(bt.emissions, crf._masked("trans", bt.transitions),
                        crf._masked("start", bt.start), crf._masked("end", bt.end),
                        bt.lengths, bt.mask)[3]
    want = torch.autograd.grad((ref * w).sum(), ref_leaves)
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == F64 else dict(rtol=1e-4, atol=1e-4 * scale)
    torch.testing.assert_close(lz, ref, **tol)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, **(tol if dtype == F64 else dict(rtol=1e-3, atol=1e-3)))
    ctx = seen[0]
    assert ctx.fast is fast


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES"])
def test_decode_chunks_carry_their_marginals(scheme):
    """decode_chunks: the chunks of decode's tags (MAP and MEU), each with its chunk
    marginal, equal to chunk_marginals and to the numpy engine's; an empty decision
    gives an empty list; CRFLayer passes it through."""
    from fstchunk.torch import CRFLayer
    rng = np.random.default_rng(13)
    tags = list(enc.scheme_tags(scheme, ("PER", "LOC")))
    crf = ChunkCRF(tags, scheme)
    lengths = [9, 3, 6]
    args = make_batch(rng, len(tags), lengths, scale=2.0)
    cm = crf.chunk_marginals(*args)
    for method in ("map", "meu"):
        got = crf.decode_chunks(*args, method=method)
        tags_out = crf.decode(*args, method=method)
        for b, n in enumerate(lengths):
            assert [c[:3] for c in got[b]] == enc.tags_to_chunks(tags_out[b], scheme)
            lat = lattice(tags, scheme, args, b, n)
            ref = lat.chunk_marginals()
            for t, s, e, p in got[b]:
                assert p == pytest.approx(cm[b, s, e, crf.types.index(t)].item(), abs=1e-12)
                assert p == pytest.approx(ref[lat.space.types.index(t), s, e], abs=1e-9)
    em, tr, mask, st, en = args
    quiet = em.clone()
    quiet[:, :, tags.index("O")] += 100.0                 # every token O: no chunk
    assert crf.decode_chunks(quiet, tr, mask, st, en) == [[], [], []]
    layer = CRFLayer(tags, scheme, dtype=F64)
    assert layer.decode_chunks(em, mask) == crf.decode_chunks(
        em, layer.transitions.detach(), mask, layer.start.detach(), layer.end.detach())


@pytest.mark.parametrize("scheme,util", [("IOB2", "exact"), ("IOB1", "exact"),
                                         ("BILOU", "exact"), ("IOB2", "type:VP"),
                                         ("IOB1", "macro"), ("IOB2", "partial"),
                                         ("IOBES", "weighted:NP=2"), ("BILOU", "type")])
def test_meu_for_the_exact_boundary_utility(scheme, util):
    """``utility=util`` and the other utilities (issue 47: the torch layer through
    the decoder registry): the numpy engine's MEU of each sentence's lattice for that
    utility, and its chunks; an unknown utility is one error naming it."""
    from fstchunk.decoding.utilities import utility
    from fstchunk.torch.module import CRFLayer
    rng = np.random.default_rng(stable_seed("exact-" + scheme))
    tags = list(enc.scheme_tags(scheme, ("NP", "VP")))
    crf = ChunkCRF(tags, scheme)
    lengths = [6, 3, 1]
    args = make_batch(rng, len(tags), lengths, scale=2.0)
    got = crf.decode(*args, method="meu", beta=0.5, utility=util)
    chunks = crf.decode_chunks(*args, method="meu", beta=0.5, utility=util)
    for b, length in enumerate(lengths):
        want = utility(util).decode(lattice(tags, scheme, args, b, length), beta=0.5).tags
        assert got[b] == want
        assert [c[:3] for c in chunks[b]] == [(t, s, e) for t, s, e in
                                             enc.tags_to_chunks(want, scheme)]
    with pytest.raises(InputError, match="unknown utility 'f1'"):
        crf.decode(*args, method="meu", utility="f1")
    import torch
    from fstchunk.torch.pytorch_crf import CRF
    layer = CRFLayer(tags, scheme, dtype=torch.float64)
    with torch.no_grad():
        layer.transitions.copy_(args[1])
        layer.start.copy_(args[3])
        layer.end.copy_(args[4])
    assert layer.decode(args[0], args[2], "meu", 0.5, util) == got
    drop = CRF(len(tags), batch_first=True, tags=tags, scheme=scheme).double()
    with torch.no_grad():
        drop.transitions.copy_(args[1])
        drop.start_transitions.copy_(args[3])
        drop.end_transitions.copy_(args[4])
    idx = drop.decode(args[0], args[2], decoder="meu", beta=0.5, utility=util)
    assert [[tags[i] for i in row] for row in idx] == got
