"""The partial-match utility (SemEval-2013's partial mode): the counter P as a machine,
its count table, E[u] and the MEU decision with its certificate.  Oracles: the
evaluation module's nervaluate matching (itself checked against nervaluate), brute-force
enumeration of every valid sequence, composition of P⊠M with the lattice."""

import itertools
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fstchunk
from fstchunk import Lattice
from fstchunk.core.errors import InputError
from fstchunk.decoding.partial_match import partial_credit
from fstchunk.decoding.utilities import utility
from fstchunk.engine.counting import outside_run_marginals
from fstchunk.engine.partial import expected_partial_f, partial_count_table, partial_meu
from fstchunk.evaluation.modes import match
from fstchunk.grammars import counting
from fstchunk.grammars.partial import partial_credit_transducer
from fstchunk.schemes import encodings as enc
from oracles import match_utility_refusals, peaked_lattice, random_scores

SCHEMES = [("IOB2", 4, 1.0), ("IOBES", 4, 30.0), ("IOB1", 4, 2.0), ("IOE1", 3, 0.5)]


def lattice(seed, scheme, n, scale=1.0, types=("A", "B")):
    rng = np.random.default_rng(seed)
    tags = enc.scheme_tags(scheme, types)
    return Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale=scale),
                               scheme=scheme)


def nervaluate_f(pred, gold, beta_sq=1.0):
    """F_β of one sentence from the evaluation module's partial-mode counts, 0/0 := 1."""
    s = match(gold, pred, "partial")
    den = len(pred) + beta_sq * len(gold)
    return 1.0 if den == 0 else (1 + beta_sq) * (s.correct + 0.5 * s.partial) / den


def chunkings(n, types=("A",)):
    """Every chunking of n tokens (disjoint typed spans)."""
    spans = [(s, e) for s in range(n) for e in range(s + 1, n + 1)]
    for r in range(n + 1):
        for pick in itertools.combinations(spans, r):
            if all(a[1] <= b[0] for a, b in zip(pick, pick[1:])):
                for ts in itertools.product(types, repeat=r):
                    yield [(t, s, e) for t, (s, e) in zip(ts, pick)]


def test_the_machine_counts_nervaluate_credit_on_every_pair_of_short_chunkings():
    n = 4
    P = partial_credit_transducer(("A", "B"), bound=n)
    table = P.input_symbols()
    all_ = list(chunkings(n, ("A", "B")))
    for x, y in itertools.product(all_[::3], all_[::2]):
        state, half = P.start(), None
        pairs = counting.fixed_iobes(x, n), counting.fixed_iobes(y, n)
        for a, b in zip(*pairs):
            la = table.find(enc.make_tag(*a) if a[0] != "O" else "O")
            lb = table.find(enc.make_tag(*b) if b[0] != "O" else "O")
            arc = [c for c in P.arcs(state) if (c.ilabel, c.olabel) == (la, lb)]
            assert len(arc) == 1                  # deterministic on pairs
            state = arc[0].nextstate
        marks = [counting.decode_marker(c.ilabel) for c in P.arcs(state)
                 if c.ilabel >= counting.MARKER_BASE]
        assert len(marks) == 1
        half = marks[0][1]
        s = match(y, x, "partial")
        assert half == 2 * s.correct + s.partial, (x, y)
        assert partial_credit(x, y, n) == s.correct + 0.5 * s.partial


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 9), st.data())
def test_the_credit_is_nervaluate_partial_on_random_chunkings(n, data):
    def chunking():
        cuts = sorted(data.draw(st.sets(st.integers(0, n), max_size=n + 1)))
        out = []
        for s, e in zip(cuts, cuts[1:]):
            if data.draw(st.booleans()):
                out.append((data.draw(st.sampled_from("AB")), s, e))
        return out
    x, y = chunking(), chunking()
    s = match(y, x, "partial")
    assert partial_credit(x, y, n) == s.correct + 0.5 * s.partial
    tags = lambda c: enc.chunks_to_tags(c, n, "IOB2")        # noqa: E731
    u = utility("partial")(tags(x), tags(y), "IOB2", beta=0.5)
    assert u == pytest.approx(nervaluate_f(x, y, 0.25), abs=1e-15)


@pytest.mark.parametrize("scheme,n,scale", SCHEMES)
@pytest.mark.parametrize("fixed", ["hypothesis", "reference"])
def test_count_table_and_expectation_equal_enumeration_and_composition(scheme, n, scale, fixed):
    lat = lattice(7, scheme, n, scale)
    seqs = [(list(y), np.exp(lp)) for y, lp in lat.enumerate()]
    rng = np.random.default_rng(1)
    u = utility("partial")
    for k in rng.choice(len(seqs), 4, replace=False):
        fx = seqs[k][0]
        fc = enc.tags_to_chunks(fx, scheme)
        Z, H = partial_count_table(lat, fc, fixed)
        Zb, Hb = np.zeros(n + 1), np.zeros(n + 1)
        for beta in (1.0, 0.5, 0.0):
            want = 0.0
            for y, p in seqs:
                yc = enc.tags_to_chunks(y, scheme)
                pred, gold = (fc, yc) if fixed == "hypothesis" else (yc, fc)
                want += p * nervaluate_f(pred, gold, beta ** 2)
                if beta == 1.0:
                    s = match(gold, pred, "partial")
                    Zb[len(yc)] += p
                    Hb[len(yc)] += p * (s.correct + 0.5 * s.partial)
            for method in ("fast", "fst"):
                got = u.expected(lat, beta=beta, method=method, **{fixed: fx})
                assert got == pytest.approx(want, abs=1e-10), (method, beta)
        np.testing.assert_allclose(Z, Zb, atol=1e-12)
        np.testing.assert_allclose(H, Hb, atol=1e-12)


@pytest.mark.parametrize("scheme,n,scale", SCHEMES)
def test_outside_run_marginals_equal_enumeration(scheme, n, scale):
    lat = lattice(3, scheme, n, scale)
    want = np.zeros((n, n + 1, n + 1))
    for y, lp in lat.enumerate():
        ch = enc.tags_to_chunks(list(y), scheme)
        inside = np.zeros(n, bool)
        for _, s, e in ch:
            inside[s:e] = True
        for s in range(n):
            for e in range(s + 1, n + 1):
                if not inside[s:e].any():
                    want[s, e, len(ch)] += np.exp(lp)
    np.testing.assert_allclose(outside_run_marginals(lat), want, atol=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_meu_is_certified_against_every_chunking(seed):
    scheme, _, scale = SCHEMES[seed % 4]
    n = 4 + seed % 2
    lat = lattice(seed, scheme, n, [0.5, 3.0, 30.0][seed % 3])
    for beta_sq in (1.0, 0.25, 0.0):
        r = partial_meu(lat, beta_sq)
        best = max(expected_partial_f(lat, c, beta_sq) for c in chunkings(n))
        assert expected_partial_f(lat, r.chunks, beta_sq) == pytest.approx(r.value, abs=1e-12)
        assert r.value <= best + 1e-12
        assert best <= r.value + r.gap + 1e-12
        assert r.gap >= 0


def test_meu_on_a_peaked_lattice_is_its_mode_with_a_small_gap_and_types_written_back():
    lat = peaked_lattice(["B-PER", "I-PER", "O", "B-LOC", "O"])
    d = utility("partial").decode(lat)
    assert d.tags == ["B-PER", "I-PER", "O", "B-LOC", "O"]
    assert 0.0 <= d.gap < 1e-3      # the bound counts rare y where two chunks overlap one
    assert d.score == pytest.approx(utility("partial").expected(lat, hypothesis=d.tags))
    one = peaked_lattice(["B-PER"])
    d = utility("partial").decode(one)        # one token: no chunk can be taken twice
    assert d.tags == ["B-PER"] and d.gap == 0.0


def test_the_decoder_registry_cli_and_errors():
    match_utility_refusals("partial", lattice(0, "IOB2", 4))
    with pytest.raises(InputError, match="partial"):
        utility("nope")


def test_grammar_print_shows_the_counter():
    out = subprocess.run([sys.executable, "-m", "fstchunk", "grammar", "info", "partial",
                          "--types", "A", "--max-length", "2"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "grammar: partial" in out.stdout
    assert "states: 31" in out.stdout


def test_top_level_names():
    assert isinstance(fstchunk.utility("partial"), fstchunk.Utility)


def test_ranked_sets_lists_every_set_once_in_decreasing_order():
    from fstchunk.engine.intervals import SpanPairs, counted_dp, ranked_sets
    n = 5
    rng = np.random.default_rng(4)
    s_i, e_i = np.nonzero(np.triu(np.ones((n, n + 1), bool), 1))
    sw = SpanPairs(np.zeros(len(s_i), int), s_i, e_i, n)
    tables, want = {}, []
    for k in (1, 2, 3):
        wpair = sw.pairs(rng.normal(size=len(s_i))[sw.order])
        tables[k] = (wpair, counted_dp(sw, wpair, k), k)
        weight = {(int(s), int(e)): w for s, e, w in zip(sw.ps, sw.pe, wpair)}
        for c in chunkings(n):
            if len(c) == k:
                want.append((sum(weight[(s, e)] for _, s, e in c), k,
                             [(s, e) for _, s, e in c]))
    got = list(ranked_sets(sw, tables))
    assert [g[0] for g in got] == sorted([g[0] for g in got], reverse=True)
    assert sorted((k, tuple(c)) for _, k, c in got) == sorted((k, tuple(c)) for _, k, c in want)
    for v, k, c in got:
        assert v == pytest.approx(next(w for w, kk, cc in want if kk == k and cc == c))
    floor = sorted(g[0] for g in got)[len(got) // 2]
    assert [g[1:] for g in ranked_sets(sw, tables, floor)] == \
        [g[1:] for g in got if g[0] > floor]


def test_a_search_cut_short_is_still_certified():
    for seed in range(6):
        lat = lattice(seed, "IOB2", 5, 1.0)
        best = max(expected_partial_f(lat, c, 1.0) for c in chunkings(5))
        r = partial_meu(lat, 1.0, max_candidates=1)
        assert r.anchors == 1
        assert r.value <= best + 1e-12 <= r.value + r.gap + 2e-12


def test_a_machine_lattice_takes_the_partial_and_weighted_utilities():
    """A lattice from a machine (here the type filter's pushforward, IOBES over one
    type) has no score arrays: the recursions run on its layers."""
    lat = utility("type:A").pushed(lattice(8, "IOB2", 4, 2.0))
    assert lat.scores is None
    seqs = [(list(y), np.exp(lp)) for y, lp in lat.enumerate()]
    for x, _ in seqs[::5]:
        xc = enc.tags_to_chunks(x, lat.scheme)
        want = sum(p * nervaluate_f(xc, enc.tags_to_chunks(y, lat.scheme)) for y, p in seqs)
        for method in ("fast", "fst"):
            assert utility("partial").expected(lat, hypothesis=x, method=method) == \
                pytest.approx(want, abs=1e-10)
    d = utility("partial").decode(lat)
    best = max(expected_partial_f(lat, enc.tags_to_chunks(x, lat.scheme), 1.0)
               for x, _ in seqs)
    assert d.score <= best + 1e-12 <= d.score + d.gap + 2e-12
    w = utility("weighted:A=2")
    assert w.expected(lat, hypothesis=seqs[1][0]) == pytest.approx(
        w.expected(lat, hypothesis=seqs[1][0], method="fst"), abs=1e-10)


@pytest.mark.parametrize("scheme,n,scale", SCHEMES[:2])
def test_strict_is_conlleval_and_scores_as_nervaluate_strict(scheme, n, scale):
    """SemEval's strict mode scores a sentence as conlleval does: `strict` is an alias."""
    lat = lattice(9, scheme, n, scale)
    seqs = [(list(y), np.exp(lp)) for y, lp in lat.enumerate()]
    for x, _ in seqs[::7]:
        xc = enc.tags_to_chunks(x, scheme)
        want = 0.0
        for y, p in seqs:
            yc = enc.tags_to_chunks(y, scheme)
            s = match(yc, xc, "strict")
            want += p * (1.0 if not xc and not yc else 2 * s.correct / (len(xc) + len(yc)))
        assert utility("strict").expected(lat, hypothesis=x) == pytest.approx(want, abs=1e-10)
    assert utility("strict").decode(lat).tags == utility("conlleval").decode(lat).tags
