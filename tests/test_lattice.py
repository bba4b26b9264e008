import math

import numpy as np
import pynini
import pytest

from fstchunk import Lattice
from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.grammars import models
from fstchunk.schemes.tagspace import TagSet
from oracles import brute_force, random_scores, stable_seed

CASES = [("IOB2", ("NP", "VP"), 6), ("IOB1", ("NP", "VP"), 5), ("IOE1", ("NP", "VP"), 5),
         ("IOE2", ("",), 7), ("IOBES", ("NP", "VP"), 5), ("BILOU", ("",), 6),
         ("IOBES2", ("NP", "VP"), 5), ("IOBES3", ("NP",), 6)]


@pytest.mark.parametrize("scheme,types,n", CASES)
def test_partition_and_marginals_equal_brute_force(scheme, types, n):
    rng = np.random.default_rng(stable_seed((scheme, n)))
    tags = enc.scheme_tags(scheme, types)
    for length in range(1, n + 1):
        scores = random_scores(rng, len(tags), length)
        lat = Lattice.from_scores(tags, *scores, scheme=scheme)
        seqs, logz = brute_force(tags, scheme, types, length, *scores)
        assert lat.log_partition() == pytest.approx(logz, rel=1e-12, abs=1e-12)
        marg = np.zeros((length, len(tags)))
        chunk = np.zeros((len(lat.space.types), length, length + 1))
        for y, c, p in seqs:
            for i, t in enumerate(y):
                marg[i, tags.index(t)] += p
            for t, s, e in c:
                chunk[lat.space.types.index(t), s, e] += p
        np.testing.assert_allclose(lat.marginals(), marg, atol=1e-12)
        np.testing.assert_allclose(lat.chunk_marginals(), chunk, atol=1e-12)
        y, _, p = seqs[rng.integers(len(seqs))]
        assert lat.log_prob(y) == pytest.approx(math.log(p), rel=1e-10)


@pytest.mark.parametrize("scheme,types,n", CASES[:5])
def test_normalised_machine_is_the_distribution(scheme, types, n):
    rng = np.random.default_rng(7)
    tags = enc.scheme_tags(scheme, types)
    scores = random_scores(rng, len(tags), n)
    lat = Lattice.from_scores(tags, *scores, scheme=scheme)
    seqs, logz = brute_force(tags, scheme, types, n, *scores)
    f = lat.fst
    assert f.arc_type() == "log64"
    assert fsa.total_weight(f) == pytest.approx(0.0, abs=1e-12)          # sums to one
    assert -fsa.total_weight(lat.unnormalised_fst()) == pytest.approx(logz, rel=1e-12)
    got = {tuple(map(lat.space.symbols.find, i)): math.exp(-w) for i, _, w in fsa.paths(f)}
    want = {tuple(y): p for y, _, p in seqs}
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-10)


@pytest.mark.parametrize("scheme,types", [("IOB2", ("NP", "VP")), ("IOE1", ("NP",)),
                                          ("IOBES", ("",))])
def test_from_fst_equals_from_scores(scheme, types):
    """Any weighted acceptor: here the score machine itself, with tags in a new order."""
    rng = np.random.default_rng(3)
    tags = enc.scheme_tags(scheme, types)
    scores = random_scores(rng, len(tags), 5)
    a = Lattice.from_scores(tags, *scores, scheme=scheme)
    ts = TagSet(scheme, types)
    raw = models.score_lattice([ts.label(t) for t in tags], *scores)
    shuffled = tuple(reversed(tags))
    b = Lattice.from_fst(fsa.attach(raw, ts.symbols), shuffled, scheme)
    assert b.log_partition() == pytest.approx(a.log_partition(), rel=1e-12)
    np.testing.assert_allclose(b.marginals()[:, ::-1], a.marginals(), atol=1e-12)
    np.testing.assert_allclose(b.chunk_marginals(), a.chunk_marginals(), atol=1e-12)


def test_from_fst_with_foreign_symbol_table():
    table = pynini.SymbolTable()
    table.add_symbol("<eps>", 0)
    for t in ("I", "O", "B"):
        table.add_symbol(t)
    f = pynini.Fst("log64")
    s = [f.add_state() for _ in range(3)]
    f.set_start(s[0])
    f.set_final(s[2])
    for lab in (1, 2, 3):                    # any tag at each of two positions
        f.add_arc(s[0], pynini.Arc(lab, lab, pynini.Weight("log64", 0.1 * lab), s[1]))
        f.add_arc(s[1], pynini.Arc(lab, lab, pynini.Weight("log64", 0.2 * lab), s[2]))
    f.set_input_symbols(table)
    f.set_output_symbols(table)
    lat = Lattice.from_fst(f, ["O", "B", "I"], "IOB2")
    w = {"I": 1, "O": 2, "B": 3}
    valid = [("O", "O"), ("O", "B"), ("B", "O"), ("B", "B"), ("B", "I")]
    z = sum(math.exp(-0.1 * w[a] - 0.2 * w[b]) for a, b in valid)
    assert lat.log_partition() == pytest.approx(math.log(z), rel=1e-12)


def test_hmm_transducer_composed_with_words_equals_hmm_scores():
    """Pr(w, x) as a tags->words transducer, composed with a sentence (machine path),
    against the same HMM as score arrays."""
    rng = np.random.default_rng(5)
    ts = TagSet("IOB2", ["NP"])
    tags, vocab = ts.tags, ["the", "dog", "barks"]
    log_start = np.log(rng.dirichlet(np.ones(3)))
    log_trans = np.log(rng.dirichlet(np.ones(3), size=3))
    log_emit = np.log(rng.dirichlet(np.ones(3), size=3))
    hmm, words = models.hmm_transducer(ts, tags, vocab, log_start, log_trans, log_emit)
    sent = ["the", "dog", "barks", "dog"]
    w = fsa.string_fst([words.find(x) for x in sent], "log64")
    lattice_fst = pynini.compose(hmm, w).project("input")
    a = Lattice.from_fst(lattice_fst, tags, "IOB2")
    ix = [vocab.index(x) for x in sent]
    b = Lattice.from_scores(tags, log_emit[:, ix].T, log_trans, log_start, scheme="IOB2")
    assert a.log_partition() == pytest.approx(b.log_partition(), rel=1e-12)
    np.testing.assert_allclose(a.marginals(), b.marginals(), atol=1e-12)


def test_long_sentence_log_space():
    rng = np.random.default_rng(11)
    tags = enc.scheme_tags("IOB2", ["NP", "VP", "PP"])
    scores = random_scores(rng, len(tags), 300, scale=5.0)
    lat = Lattice.from_scores(tags, *scores)
    logz = lat.log_partition()
    assert np.isfinite(logz) and abs(logz) > 700          # exp(logz) would overflow
    m = lat.marginals()
    np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-9)
    assert np.isfinite(lat.chunk_marginals()).all()


def test_bad_input_errors():
    tags = ("O", "B-NP", "I-NP")
    e, t = np.zeros((3, 3)), np.zeros((3, 3))
    with pytest.raises(ValueError, match=r"emissions has a non-finite score nan at index \(1, 2\)"):
        bad = e.copy()
        bad[1, 2] = np.nan
        Lattice.from_scores(tags, bad, t)
    with pytest.raises(ValueError, match="transitions has a non-finite score inf"):
        bad = t.copy()
        bad[0, 0] = np.inf
        Lattice.from_scores(tags, e, bad)
    with pytest.raises(ValueError, match=r"transitions has shape \(2, 2\), expected \(3, 3\)"):
        Lattice.from_scores(tags, e, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="emissions has 4 columns but there are 3 tags"):
        Lattice.from_scores(tags, np.zeros((3, 4)), t)
    with pytest.raises(ValueError, match="empty sentence"):
        Lattice.from_scores(tags, np.zeros((0, 3)), t)
    with pytest.raises(ValueError, match="tag 'E-NP' is not a IOB2 tag"):
        Lattice.from_scores(("O", "B-NP", "E-NP"), e, t)
    with pytest.raises(ValueError, match="unknown chunk scheme"):
        Lattice.from_scores(tags, e, t, scheme="IOZ")
    lat = Lattice.from_scores(tags, e, t)
    with pytest.raises(ValueError, match="position 1: tag 'I-VP'"):
        lat.log_prob(["O", "I-VP", "O"])
    with pytest.raises(ValueError, match="has 2 tags but the lattice has 3 tokens"):
        lat.log_prob(["O", "O"])
    with pytest.raises(ValueError, match="position 1: tag 'I-NP' cannot stand after 'O'"):
        lat.log_prob(["O", "I-NP", "O"])


def test_a_machine_with_a_symbol_outside_the_tags_is_refused_only_where_an_arc_uses_it():
    """Lattice.from_fst reads the machine's symbol table: a symbol that is not among the
    tags is one InputError naming it if an arc carries it, and ignored otherwise."""
    from fstchunk.core.errors import InputError
    from fstchunk.schemes.tagspace import symbol_table
    table = symbol_table(("NP", "VP"))                 # holds B-VP, I-VP, E-NP, ... too
    tags = ["O", "B-NP", "I-NP"]

    def machine(labels):
        f = pynini.Fst("log64")
        states = [f.add_state() for _ in range(len(labels) + 1)]
        f.set_start(states[0])
        f.set_final(states[-1])
        for i, t in enumerate(labels):
            f.add_arc(states[i], pynini.Arc(table.find(t), table.find(t),
                                            pynini.Weight.one("log64"), states[i + 1]))
        f.set_input_symbols(table)
        f.set_output_symbols(table)
        return f
    lat = Lattice.from_fst(machine(["B-NP", "I-NP", "O"]), tags, "IOB2")
    assert lat.map().tags == ["B-NP", "I-NP", "O"]
    with pytest.raises(InputError, match="the machine uses symbol 'B-VP', which is not among "
                                         "the tags O, B-NP, I-NP"):
        Lattice.from_fst(machine(["B-NP", "B-VP", "O"]), tags, "IOB2")
