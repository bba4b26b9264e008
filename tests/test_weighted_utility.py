"""Per-type weighted F_β (``weighted:T=w``): the chunk marginals by weighted count,
E[u] in both directions by the engine and by composing the weighted T⊠M with the
lattice, and the exact MEU decision.  Oracle: enumeration of every valid sequence,
u computed here from chunk sets."""

import numpy as np
import pytest

from fstchunk import Lattice
from fstchunk.cli import main
from fstchunk.core.errors import BudgetError, InputError
from fstchunk.decoding.decoders import decoder
from fstchunk.decoding.utilities import utility
from fstchunk.engine.counting import chunk_count_marginals
from fstchunk.engine.weighted import weighted_marginals
from fstchunk.io.conll import Sentence, write_conll
from fstchunk.schemes import encodings as enc
from oracles import random_scores

TYPES = ("A", "B")
CASES = [("IOB2", 4, 1.0, {"A": 2}), ("IOBES", 4, 30.0, {"B": 3}),
         ("IOB1", 3, 2.0, {"A": 2, "B": 2}), ("IOE1", 3, 0.5, {"A": 1, "B": 2})]


def lattice(seed, scheme, n, scale):
    rng = np.random.default_rng(seed)
    tags = enc.scheme_tags(scheme, TYPES)
    return Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale=scale),
                               scheme=scheme)


def f_w(x, y, w, b2):
    """F_w of decision x against reference y, 1 where the denominator is 0."""
    x, y = set(x), set(y)
    wx, wy = sum(w.get(c[0], 1) for c in x), sum(w.get(c[0], 1) for c in y)
    if wx + b2 * wy == 0:
        return 1.0
    return (1 + b2) * sum(w.get(c[0], 1) for c in x & y) / (wx + b2 * wy)


@pytest.mark.parametrize("scheme,n,scale,w", CASES)
def test_marginals_by_weighted_count_equal_enumeration(scheme, n, scale, w):
    lat = lattice(1, scheme, n, scale)
    W = np.array([w.get(t, 1) for t in TYPES])
    P, pm = weighted_marginals(lat, W)
    want, wm = np.zeros_like(P), np.zeros_like(pm)
    for y, lp in lat.enumerate():
        ch = enc.tags_to_chunks(list(y), scheme)
        M = sum(w.get(t, 1) for t, _, _ in ch)
        wm[M] += np.exp(lp)
        for t, s, e in ch:
            want[TYPES.index(t), s, e, M] += np.exp(lp)
    np.testing.assert_allclose(P, want, atol=1e-12)
    np.testing.assert_allclose(pm, wm, atol=1e-12)
    P1, _ = weighted_marginals(lat, np.ones(2, int))
    np.testing.assert_allclose(P1, chunk_count_marginals(lat), atol=1e-12)


@pytest.mark.parametrize("scheme,n,scale,w", CASES)
def test_expected_value_both_ways_both_methods_and_meu_equal_enumeration(scheme, n, scale, w):
    lat = lattice(2, scheme, n, scale)
    u = utility("weighted:" + ",".join(f"{t}={v}" for t, v in w.items()))
    seqs = [(list(y), enc.tags_to_chunks(list(y), scheme), np.exp(lp))
            for y, lp in lat.enumerate()]
    for beta in (1.0, 0.5, 2.0, 0.0):
        b2 = beta * beta
        for tags, ch, _ in seqs[::9]:
            dec = sum(p * f_w(ch, c, w, b2) for _, c, p in seqs)
            tra = sum(p * f_w(c, ch, w, b2) for _, c, p in seqs)
            for method in ("fast", "fst"):
                assert u.expected(lat, hypothesis=tags, beta=beta, method=method) == \
                    pytest.approx(dec, abs=1e-10)
                assert u.expected(lat, reference=tags, beta=beta, method=method) == \
                    pytest.approx(tra, abs=1e-10)
            assert u(tags, seqs[0][0], scheme, beta=beta) == pytest.approx(
                f_w(ch, seqs[0][1], w, b2))
        d = u.decode(lat, beta=beta)
        best = max(sum(p * f_w(x, c, w, b2) for _, c, p in seqs) for _, x, _ in seqs)
        assert d.score == pytest.approx(best, abs=1e-12) and d.gap == 0.0
        assert u.expected(lat, hypothesis=d.tags, beta=beta) == pytest.approx(d.score,
                                                                              abs=1e-12)


def test_unit_weights_are_conlleval_and_errors_are_named():
    lat = lattice(3, "IOB2", 4, 2.0)
    y = next(iter(lat.enumerate()))[0]
    assert utility("weighted:A=1").expected(lat, hypothesis=y) == pytest.approx(
        utility("conlleval").expected(lat, hypothesis=y), abs=1e-12)
    assert decoder("meu", utility="weighted:A=1").decode(lat).tags == \
        decoder("meu").decode(lat).tags
    for bad in ("weighted:A", "weighted:A=0", "weighted:A=x", "weighted:=2", "weighted:"):
        with pytest.raises(InputError, match="TYPE=WEIGHT"):
            utility(bad)
    with pytest.raises(InputError, match="'Q' not among the lattice's types A, B"):
        utility("weighted:Q=2").decode(lat)
    with pytest.raises(BudgetError, match="memory budget"):
        utility("weighted:A=2").decode(lattice(0, "IOB2", 20, 1.0), memory_budget=1000)
    with pytest.raises(InputError, match="no pushed lattice"):
        utility("weighted:A=2").pushed(lat)


def test_the_cli_decodes_for_it(tmp_path):
    sents = [Sentence([["Paris", "NNP", "B-LOC"], ["and", "CC", "O"], ["Jo", "NNP", "B-PER"]]),
             Sentence([["Jo", "NNP", "B-PER"], ["in", "IN", "O"], ["Rome", "NNP", "B-LOC"]])]
    write_conll(sents * 3, tmp_path / "train.txt")
    t = str(tmp_path / "train.txt")
    assert main(["train", "--train", t, "--max-iter", "5", "--quiet", "--features", "ner",
                 "-o", str(tmp_path / "m.npz")]) == 0
    assert main(["decode", "--model", str(tmp_path / "m.npz"), "--input", t, "--decoder",
                 "meu", "--utility", "weighted:LOC=2", "-o", str(tmp_path / "out.txt")]) == 0
    with pytest.raises(SystemExit) as e:
        main(["decode", "--model", str(tmp_path / "m.npz"), "--input", t, "--decoder",
              "meu", "--utility", "weighted:LOC=0"])
    assert e.value.code == 2


def test_decoders_with_these_utilities_pickle_and_decode_the_same():
    import pickle
    lat = lattice(5, "IOB2", 4, 1.0)
    for name in ("weighted:A=2,B=3", "partial"):
        d = decoder("meu", utility=name)
        back = pickle.loads(pickle.dumps(d))
        assert back.decode(lat).tags == d.decode(lat).tags
        u = pickle.loads(pickle.dumps(utility(name)))
        assert u.name == name


def test_the_weighted_counter_in_the_registry_counts_matched_weights(capsys):
    """``grammar print weighted --weights A=3``: T_w walked on pairs of chunkings of 3
    tokens writes Σ w(c) over the chunks both have; bad weights are one error."""
    import itertools
    from fstchunk.grammars import counting, registry
    n, w = 3, {"A": 3}
    tw = registry.grammar("weighted").build(registry.Options(types=TYPES, max_length=n,
                                                             weights=(("A", 3),)))
    table = tw.input_symbols()
    spans = [(s, e) for s in range(n) for e in range(s + 1, n + 1)]
    every = [[(t, s, e) for t, (s, e) in zip(ts, pick)]
             for r in range(n + 1) for pick in itertools.combinations(spans, r)
             if all(a[1] <= b[0] for a, b in zip(pick, pick[1:]))
             for ts in itertools.product(TYPES, repeat=r)]
    for x, y in itertools.product(every[::2], every[::3]):
        state = tw.start()
        for a, b in zip(counting.fixed_iobes(x, n), counting.fixed_iobes(y, n)):
            la, lb = (table.find(enc.make_tag(*p) if p[0] != "O" else "O") for p in (a, b))
            arc = [c for c in tw.arcs(state) if (c.ilabel, c.olabel) == (la, lb)]
            assert len(arc) == 1
            state = arc[0].nextstate
        marks = [counting.decode_marker(c.ilabel)[1] for c in tw.arcs(state)
                 if c.ilabel >= counting.MARKER_BASE]
        assert marks == [sum(w.get(c[0], 1) for c in set(x) & set(y))], (x, y)
    assert main(["grammar", "info", "weighted", "--types", "A,B", "--weights", "A=2",
                 "--max-length", "2"]) == 0
    assert "weighted.n2.w_A2" in capsys.readouterr().out
    for bad, said in [("A=x", "--weights A=x: give TYPE=W,... with whole weights W >= 1"),
                      ("C=2", "--weights names C, not among its --types A, B")]:
        assert main(["grammar", "print", "weighted", "--types", "A,B", "--weights", bad]) != 0
        assert said in capsys.readouterr().err
