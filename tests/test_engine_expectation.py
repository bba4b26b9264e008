import numpy as np
import pytest

import fstchunk.engine.expectation as ex
import reference_expectation as ref
from fstchunk import Lattice, decode_map
from fstchunk.schemes import encodings as enc
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
# checkpoints instead of every layer's tables; the old one (all n + 1 counts, every
# layer kept) is tests/reference_expectation.py.

def _adjoints(n, m_fixed, beta):
    """E[F_β]'s adjoints in the training direction (as the meu objective seeds them)."""
    c = np.arange(n + 1.0)
    den = c + beta * m_fixed
    return (np.where(den > 0, 0.0, 1.0),
            np.where(den > 0, (beta + 1) / np.where(den > 0, den, 1), 0.0))


def _assert_same_tables(lat, fixed, beta=1.0, rel=1e-12):
    Z, T = tp_count_table(lat, fixed)
    Zr, Tr = ref.tp_count_table(lat, fixed)
    np.testing.assert_allclose(Z, Zr, rtol=0, atol=rel)
    np.testing.assert_allclose(T, Tr, rtol=0, atol=rel * max(1, len(fixed)))
    adj = _adjoints(lat.n, len(fixed), beta)
    want = ref.tp_count_table_grad(lat, fixed, *adj)
    for forced in (False, True):                      # taped, and checkpointed
        with pytest.MonkeyPatch.context() as m:
            if forced:
                m.setattr(ex, "TAPE_BYTES", 0)
            gw, gfin, (Zg, Tg) = tp_count_table_grad(lat, fixed, *adj)
        top = max(1.0, max(np.abs(g).max() for g in want[0]), np.abs(want[1]).max())
        for g, w in zip(gw, want[0]):
            np.testing.assert_allclose(g, w, rtol=0, atol=rel * top)
        np.testing.assert_allclose(gfin, want[1], rtol=0, atol=rel * top)
        np.testing.assert_array_equal(Zg, Z)
        np.testing.assert_array_equal(Tg, T)


@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_windowed_tables_and_gradients_equal_the_old_recursion(scheme):
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
            _assert_same_tables(lat, fixed, beta=float(rng.choice([0.5, 1.0, 2.0])))
        _assert_same_tables(lat, [])                      # no fixed chunk at all


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
    _assert_same_tables(lat, fixed)


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
    (fewer than n + 1 counts at the end), and the numbers are the old ones."""
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
    _assert_same_tables(lat, fixed, rel=1e-11)
