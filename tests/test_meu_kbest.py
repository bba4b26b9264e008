"""k-best MEU: certified intervals from one tilted sweep decide which of the k paths
need their exact utility; the answer must be that of evaluating every path.

The reference below is the decoder as it was (commit 2857aae): the k best paths of
OpenFst's n-shortest, each scored by ``expected_f(method="fast")``, the first best kept.
"""

import numpy as np
import pytest

import fstchunk.decoding.decode as dec
from fstchunk import Lattice, TagSet
from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.engine.meu import utility_bounds
from oracles import all_utilities, brute_force, random_scores, stable_seed


def reference_kbest(lattice, beta, k):
    best = None
    for labels, _, _ in fsa.paths(dec._shortest(lattice, k)):
        tags = [lattice.space.symbols.find(x) for x in labels]
        u = dec.expected_f(lattice, hypothesis=tags, beta=beta, method="fast").f
        if best is None or u > best.score:
            best = dec.Decoding(tags, u, float("inf"))
    return best


def chunk_sets(lat, seqs):
    types = lat.space.types
    return [[(types.index(t), s, e) for t, s, e in enc.tags_to_chunks(list(x), lat.scheme)]
            for x in seqs]


CASES = [(scheme, types, scale, beta)
         for scheme, types in (("IOB1", ("NP",)), ("IOB2", ("NP", "VP")),
                               ("IOE2", ("NP", "VP", "PP")), ("IOBES", ("NP", "VP")),
                               ("BILOU", ("A", "B", "C")), ("IOBES3", ("NP",)))
         for scale, beta in ((0.3, 1.0), (1.0, 0.5), (3.0, 2.0), (30.0, 1.0), (300.0, 0.0),
                             (1.0, 1e-3), (2.0, 40.0))]


@pytest.mark.parametrize("scheme,types,scale,beta", CASES)
def test_kbest_is_the_decoder_that_evaluates_every_path(scheme, types, scale, beta):
    rng = np.random.default_rng(stable_seed((scheme, types, scale, beta)))
    tags = TagSet(scheme, types).tags
    for n, k in ((1, 3), (4, 1), (9, 7), (23, 20), (41, 12)):
        lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale), scheme=scheme)
        got = dec.decode_meu(lat, beta=beta, method="kbest", k=k)
        want = reference_kbest(lat, beta, k)
        assert got.tags == want.tags and got.score == want.score and got.gap == np.inf


@pytest.mark.parametrize("n", [250, 600])
def test_kbest_on_real_long_sentences(crf_document, n):
    lat, _ = crf_document(n)
    got = dec.decode_meu(lat, method="kbest", k=20)
    want = reference_kbest(lat, 1.0, 20)
    assert got.tags == want.tags and got.score == want.score


def test_paths_outside_the_best_interval_are_not_evaluated(monkeypatch):
    """The point of the intervals: most of the k paths never reach expected_f."""
    rng = np.random.default_rng(11)
    tags = TagSet("IOB2", ("NP", "VP")).tags
    lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), 30, 1.0))
    calls = []
    real = dec.expected_f
    monkeypatch.setattr(dec, "expected_f", lambda *a, **k: calls.append(1) or real(*a, **k))
    got = dec.decode_meu(lat, method="kbest", k=20)
    assert 1 <= len(calls) < 20
    assert got == reference_kbest(lat, 1.0, 20)


def test_a_sweep_over_the_memory_budget_evaluates_every_path(monkeypatch):
    rng = np.random.default_rng(12)
    tags = TagSet("IOBES", ("NP", "VP")).tags
    lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), 20, 1.0), scheme="IOBES")
    calls = []
    real = dec.expected_f
    monkeypatch.setattr(dec, "expected_f", lambda *a, **k: calls.append(1) or real(*a, **k))
    got = dec.decode_meu(lat, method="kbest", k=6, memory_budget=64)
    assert len(calls) == 6
    assert got == reference_kbest(lat, 1.0, 6)


@pytest.mark.parametrize("scheme", ["IOB2", "IOE1", "IOBES"])
@pytest.mark.parametrize("scale", [0.5, 3.0, 100.0])
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 3.0])
def test_utility_bounds_contain_the_enumerated_utility(scheme, scale, beta):
    """|U(x) − Ũ(x)| ≤ b(x) for every valid hypothesis x, U by enumeration."""
    rng = np.random.default_rng(stable_seed((scheme, scale, beta)))
    types = ("NP", "VP")
    tags = TagSet(scheme, types).tags
    for n in (1, 3, 5):
        scores = random_scores(rng, len(tags), n, scale)
        lat = Lattice.from_scores(tags, *scores, scheme=scheme)
        seqs, _ = brute_force(tags, scheme, types, n, *scores)
        hyps = [y for y, _, _ in seqs]
        want = all_utilities(seqs, beta)
        approx, bound = utility_bounds(lat, beta ** 2, chunk_sets(lat, hyps))   # β² inside
        ok = np.isfinite(approx)
        assert ok.any()
        # + rounding: both sides are sums of exponentials of scores up to 100 apart, each
        # within ~1e-13 of the exact value (the pruning bound itself stays < 1e-11)
        assert np.all(np.abs(approx[ok] - want[ok]) <= bound[ok] + 1e-12)
        assert np.all(bound[ok] < 1e-11)
        assert np.all(~ok <= np.isinf(bound))           # no value: no bound either


def test_utility_bounds_on_a_real_long_sentence(crf_document):
    lat, gold = crf_document(400)
    hyps = [gold, dec.decode_map(lat).tags, ["O"] * lat.n]
    approx, bound = utility_bounds(lat, 1.0, chunk_sets(lat, hyps))
    for x, a, b in zip(hyps, approx, bound):
        u = dec.expected_f(lat, hypothesis=x, method="fast").f
        assert np.isinf(b) or abs(u - a) <= b + 1e-12
    assert np.isfinite(approx[1]) and bound[1] < 1e-11    # MAP's chunks are never pruned
