import functools
from types import SimpleNamespace

import numpy as np
import pytest

import fstchunk.engine.expectation as ex
from fstchunk import Lattice, decode_map
from fstchunk.schemes import encodings as enc
from fstchunk.decoding.expected import joint_by_composition
from fstchunk.engine.chain import Layers, scaled_layers
from fstchunk.engine.expectation import tp_count_table, tp_count_table_grad
from oracles import brute_force, random_scores, stable_seed


@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_count_table_equals_brute_force(scheme):
    rng = np.random.default_rng(stable_seed(scheme))
    types = ("NP", "VP")
    tags = enc.scheme_tags(scheme, types)
    for n in range(1, 7):
        scores = random_scores(rng, len(tags), n)
        lat = Lattice.from_scores(tags, *scores, scheme=scheme)
        seqs, _ = brute_force(tags, scheme, types, n, *scores)
        for _ in range(3):
            _, fixed, _ = seqs[rng.integers(len(seqs))]
            Z, T = tp_count_table(lat, sorted(fixed, key=lambda c: c[1]))
            Zb, Tb = np.zeros(n + 1), np.zeros(n + 1)
            for _, c, p in seqs:
                Zb[len(c)] += p
                Tb[len(c)] += p * len(fixed & c)
            np.testing.assert_allclose(Z, Zb, atol=1e-12)
            np.testing.assert_allclose(T, Tb, atol=1e-12)


def test_fixed_chunk_of_a_type_the_lattice_lacks():
    tags = ("O", "B-NP", "I-NP")
    lat = Lattice.from_scores(tags, np.zeros((3, 3)), np.zeros((3, 3)))
    Z, T = tp_count_table(lat, [("VP", 0, 2)])
    assert T.sum() == 0 and Z.sum() == pytest.approx(1.0)


# ---------------------------------------------------------------- the count windows
# The recursion runs on the counts that hold mass and, for long sentences, keeps
# checkpoints instead of every layer's tables.  Its oracles: enumeration
# (Lattice.enumerate(), up to a few tokens), the machine-built twin (the joint law of
# (tp, m) by composition, up to 17 tokens here), and on long lattices the identities
# of a lattice tilted by z per chunk (Pr_z(y) ∝ Pr(y)·z^m(y), its log partition and
# chunk marginals: other engines), which pin the tables' generating functions:
#     Σ_c Z[c] z^c = E[z^m] = Z_z / Z,   Σ_c T[c] z^c = E[z^m] · Σ_{f ∈ fixed} Pr_z(f ∈ y).
# Gradients: central finite differences of the tables under perturbed chain weights
# (coordinates and random directions) and gauge invariance (the distribution does not
# change when a state's incoming log weights gain what its outgoing ones lose).

FD_H = 1e-5           # central differences: truncation O(h²), rounding O(eps / h)
FD_TOL = 1e-6         # relative to the size of the directional derivative (or 1)
TILTS = (0.5, 0.8, 1.25, 2.0)


def _adjoints(n, m_fixed, beta):
    """E[F_β]'s adjoints in the training direction (as the meu objective seeds them)."""
    c = np.arange(n + 1.0)
    den = c + beta * m_fixed
    return (np.where(den > 0, 0.0, 1.0),
            np.where(den > 0, (beta + 1) / np.where(den > 0, den, 1), 0.0))


def _tilted(lat, z):
    """The lattice whose every chunk start is weighted by z (Pr_z(y) ∝ Pr(y)·z^m(y))."""
    lay = lat.layers
    w = [wi + np.log(z) * start
         for wi, (_, _, _, _, start, _, _, _) in zip(lay.weights, scaled_layers(lay, lat.space))]
    return Lattice(lat.tags, lat.scheme, Layers(w, lay.labels, lay.final))


@functools.lru_cache(maxsize=4)
def _law(lat):
    """[(chunk set, Pr)] of every valid sequence (Lattice.enumerate())."""
    return [(set(enc.tags_to_chunks(list(y), lat.scheme)), np.exp(lp))
            for y, lp in lat.enumerate()]


@functools.lru_cache(maxsize=4)
def _tilts(lat):
    """Per z of TILTS: (log E[z^m], chunk marginals under Pr_z); and those at z = 1."""
    logz = lat.log_partition()
    out = {}
    for z in TILTS:
        tl = _tilted(lat, z)
        out[z] = (tl.log_partition() - logz, tl.chunk_marginals())
    return out, lat.chunk_marginals()


def _oracle_tables(lat, fixed):
    """(Z, T) by enumeration (up to 5 tokens) or by the machine twin (up to 17), else
    None."""
    Z, T = np.zeros(lat.n + 1), np.zeros(lat.n + 1)
    if lat.n <= 5 and lat.scores is not None:
        f = set(fixed)
        for c, p in _law(lat):
            Z[len(c)] += p
            T[len(c)] += p * len(f & c)
        return Z, T
    if lat.n <= 17:
        joint = joint_by_composition(lat, fixed)          # [tp, m]
        Z[:joint.shape[1]] = joint.sum(axis=0)[:lat.n + 1]
        T[:joint.shape[1]] = (np.arange(joint.shape[0]) @ joint)[:lat.n + 1]
        return Z, T
    return None


def _assert_tables(lat, fixed, Z, T, atol):
    """Z, T against the oracle tables where there are, and always against the
    identities of the tilted lattices (z = 1: Σ Z = 1, Σ T = E[tp], Σ c·Z[c] = E[m])."""
    want = _oracle_tables(lat, fixed)
    if want is not None:
        np.testing.assert_allclose(Z, want[0], rtol=0, atol=atol)
        np.testing.assert_allclose(T, want[1], rtol=0, atol=atol * max(1, len(fixed)))
    tilts, cm = _tilts(lat)
    tix = {t: i for i, t in enumerate(lat.space.types)}
    in_lattice = [(tix[t], s, e) for t, s, e in fixed if t in tix]
    c = np.arange(len(Z))
    assert Z.sum() == pytest.approx(1.0, abs=1e-12)
    assert c @ Z == pytest.approx(cm.sum(), rel=1e-10, abs=1e-12)
    assert T.sum() == pytest.approx(sum(cm[f] for f in in_lattice), rel=1e-10, abs=1e-12)
    with np.errstate(divide="ignore"):
        logZ, logT = np.log(Z), np.log(T)
    for z, (log_gen, cmz) in tilts.items():
        gen = np.logaddexp.reduce(logZ + c * np.log(z))       # log Σ Z[c] z^c
        assert gen == pytest.approx(log_gen, rel=1e-9, abs=1e-9), z
        want_t = sum(cmz[f] for f in in_lattice)
        got_t = np.exp(np.logaddexp.reduce(logT + c * np.log(z)) - gen) if in_lattice else 0.0
        assert got_t == pytest.approx(want_t, rel=1e-9, abs=1e-12), z


def _with_chain(lat, weights, final):
    """What tp_count_table reads of a lattice, with other chain weights."""
    return SimpleNamespace(chain=Layers(weights, lat.chain.labels, final), space=lat.space,
                           n=lat.n, scores=lat.scores)


def _objective(lat, fixed, adj, weights, final):
    Z, T = tp_count_table(_with_chain(lat, weights, final), fixed)
    return float(adj[0] @ Z + adj[1] @ T)


def _assert_gradient(lat, fixed, adj, grads, gfin, rng, coordinates):
    """The gradient of Σ Zbar·Z + Tbar·T against central differences along two random
    directions and on ``coordinates`` random coordinates (FD_TOL relative), and gauge
    invariance: per layer the gradient sums to 0, and what flows into a state equals
    what flows out of it (to 1e-11 times the largest entry or 1)."""
    ch = lat.chain
    top = max(1.0, max(np.abs(g).max() for g in grads), np.abs(gfin).max())
    for i, g in enumerate(grads):
        out = grads[i + 1].sum(axis=1) if i + 1 < len(grads) else gfin
        np.testing.assert_allclose(g.sum(axis=0), out, rtol=0, atol=1e-11 * top, err_msg=str(i))
    assert abs(grads[0].sum()) <= 1e-11 * top

    def fd(dw, dfin):
        up = _objective(lat, fixed, adj, [w + FD_H * d for w, d in zip(ch.weights, dw)],
                        ch.final + FD_H * dfin)
        down = _objective(lat, fixed, adj, [w - FD_H * d for w, d in zip(ch.weights, dw)],
                          ch.final - FD_H * dfin)
        return (up - down) / (2 * FD_H)

    def finite(a, d):
        return np.where(np.isfinite(a), d, 0.0)
    for _ in range(2):
        dw = [finite(w, rng.normal(size=w.shape)) for w in ch.weights]
        dfin = finite(ch.final, rng.normal(size=ch.final.shape))
        want = sum(float(np.sum(g * d)) for g, d in zip(grads, dw)) + float(gfin @ dfin)
        assert fd(dw, dfin) == pytest.approx(want, rel=FD_TOL, abs=FD_TOL)
    for _ in range(coordinates):
        i = int(rng.integers(len(grads)))
        a, b = (int(rng.integers(k)) for k in grads[i].shape)
        if not np.isfinite(ch.weights[i][a, b]):
            continue
        dw = [np.zeros_like(w) for w in ch.weights]
        dw[i][a, b] = 1.0
        assert fd(dw, np.zeros_like(ch.final)) == pytest.approx(
            grads[i][a, b], rel=FD_TOL, abs=FD_TOL), (i, a, b)


def _assert_tables_and_gradients(lat, fixed, beta=1.0, atol=1e-12, coordinates=0, seed=0):
    """tp_count_table against its oracles; its gradient, taped and checkpointed (the
    same numbers to 1e-12), against finite differences and gauge invariance."""
    Z, T = tp_count_table(lat, fixed)
    _assert_tables(lat, fixed, Z, T, atol)
    adj = _adjoints(lat.n, len(fixed), beta)
    runs = []
    for forced in (False, True):                      # taped, and checkpointed
        with pytest.MonkeyPatch.context() as m:
            if forced:
                m.setattr(ex, "TAPE_BYTES", 0)
            gw, gfin, (Zg, Tg) = tp_count_table_grad(lat, fixed, *adj)
        np.testing.assert_array_equal(Zg, Z)
        np.testing.assert_array_equal(Tg, T)
        runs.append((gw, gfin))
    (gw, gfin), (cw, cfin) = runs
    top = max(1.0, max(np.abs(g).max() for g in gw), np.abs(gfin).max())
    for a, b in zip(gw, cw):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * top)
    np.testing.assert_allclose(cfin, gfin, rtol=0, atol=1e-12 * top)
    _assert_gradient(lat, fixed, adj, gw, gfin, np.random.default_rng(seed), coordinates)


@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_windowed_tables_and_gradients_against_their_oracles(scheme):
    """Lengths 1 and 5 by enumeration, 17 by the machine twin, 33, 40 and 60 (scales
    up to 300) by the tilted lattices' identities; gradients by finite differences."""
    rng = np.random.default_rng(stable_seed(("win", scheme)))
    tags = enc.scheme_tags(scheme, ("NP", "VP", "PP"))
    for n, scale in ((1, 1.0), (5, 0.3), (17, 1.0), (40, 5.0), (60, 30.0), (33, 300.0)):
        lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale), scheme=scheme)
        gold = decode_map(lat).tags
        other = [t for t in lat.tags if t != gold[0] and enc.is_valid([t], scheme)][:1]
        for fixed_tags in (gold, other + gold[1:] if other else gold):
            if not enc.is_valid(fixed_tags, scheme):
                continue
            fixed = enc.tags_to_chunks(fixed_tags, scheme)
            _assert_tables_and_gradients(lat, fixed, beta=float(rng.choice([0.5, 1.0, 2.0])),
                                         coordinates=6 if n <= 17 else 0, seed=n)
        _assert_tables_and_gradients(lat, [], seed=n)     # no fixed chunk at all


def test_windowed_tables_on_a_machine_lattice():
    """A lattice from an acceptor (several states per tag, per-layer tables)."""
    from fstchunk.grammars.models import score_lattice
    rng = np.random.default_rng(7)
    tags = enc.scheme_tags("IOBES", ("NP", "VP"))
    space_lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), 9, 2.0), scheme="IOBES")
    e, t, s, en = space_lat.scores
    lat = Lattice.from_fst(score_lattice(space_lat.space.labels, e, t, s, en).union(
        score_lattice(space_lat.space.labels, e[::-1].copy(), t, s, en)), tags, "IOBES")
    fixed = enc.tags_to_chunks(decode_map(lat).tags, "IOBES")
    _assert_tables_and_gradients(lat, fixed, atol=1e-10, coordinates=10)   # machine twin


def test_checkpointed_gradient_is_the_taped_one_bit_for_bit(monkeypatch):
    """Recomputing the layers between checkpoints repeats the same arithmetic."""
    rng = np.random.default_rng(3)
    tags = enc.scheme_tags("BILOU", ("NP", "VP"))
    lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), 50, 1.5), scheme="BILOU")
    fixed = enc.tags_to_chunks(decode_map(lat).tags, "BILOU")
    adj = _adjoints(lat.n, len(fixed), 1.0)
    steps = []
    real = ex._step
    monkeypatch.setattr(ex, "_step", lambda *a: steps.append(1) or real(*a))
    taped = tp_count_table_grad(lat, fixed, *adj)
    assert len(steps) == lat.n                        # every layer kept: one forward
    monkeypatch.setattr(ex, "TAPE_BYTES", 0)
    ck = tp_count_table_grad(lat, fixed, *adj)
    every = int(np.ceil(np.sqrt(lat.n)))              # checkpoints: all but the last
    last = (lat.n - 1) // every * every               # stretch run twice
    assert len(steps) == 2 * lat.n + last
    for a, b in zip(taped[0], ck[0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(taped[1], ck[1])


@pytest.mark.parametrize("n", [250, 600])
def test_windowed_tables_on_real_long_sentences(crf_document, n):
    """CoNLL-2000 dev joined into one document under a CRF: the windows are trimmed
    (fewer than n + 1 counts at the end); the tables meet the tilted lattices'
    identities and the gradient finite differences and gauge invariance."""
    lat, gold = crf_document(n)
    fixed = enc.tags_to_chunks(gold, lat.scheme)
    widths = []
    real = ex._step

    def step(*a):
        out = real(*a)
        widths.append(out[0].P.shape[2])
        return out
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ex, "_step", step)
        tp_count_table(lat, fixed)
    assert widths[-1] < lat.n, widths[-1]
    _assert_tables_and_gradients(lat, fixed)
