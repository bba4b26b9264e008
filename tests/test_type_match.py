"""The type-match utility (SemEval-2013's type mode): its step counter, the step
recursion of any counter under a lattice, E[u] both ways and the certified MEU.
Oracles: the evaluation module's nervaluate matching (itself checked against
nervaluate's package), brute-force enumeration of every valid sequence, composition
of the specialised counter with the lattice, the partial and tp count tables."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstchunk import Lattice
from fstchunk.core.errors import BudgetError, InputError
from fstchunk.decoding.type_match import expected_type_f, type_credit, type_meu
from fstchunk.decoding.utilities import utility
from fstchunk.engine.counting import outside_run_marginals
from fstchunk.engine.expectation import tp_count_table
from fstchunk.engine.intervals import TypedSpans, counted_dp, ranked_sets
from fstchunk.engine.partial import partial_count_table
from fstchunk.engine.stepped import step_count_table
from fstchunk.evaluation.modes import match
from fstchunk.grammars.counting import fixed_iobes, tp_step
from fstchunk.schemes import encodings as enc
from fstchunk.schemes.matching import partial_step
from fstchunk.schemes.type_match import prediction_fixed_canon, type_step
from oracles import all_chunkings, match_utility_refusals, peaked_lattice, random_scores

TYPES = ("A", "B")
SCHEMES = [("IOB2", 4, 1.0), ("IOBES", 4, 30.0), ("IOB1", 4, 2.0), ("IOE1", 3, 0.5)]


def lattice(seed, scheme, n, scale=1.0, types=TYPES):
    rng = np.random.default_rng(seed)
    tags = enc.scheme_tags(scheme, types)
    return Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale=scale),
                               scheme=scheme)


def walk(x, y, n, canon=False):
    """(COR, final state) of the step walked over the pair; with ``canon`` each
    state merged by the prediction-fixed canonical map."""
    q, cor = 0, 0
    merge = prediction_fixed_canon(fixed_iobes(x, n)) if canon else None
    for i, (a, b) in enumerate(zip(fixed_iobes(x, n), fixed_iobes(y, n))):
        inc, q = type_step(q, a, b)
        q = merge(q, i) if canon else q
        cor += inc
    return cor, q


def type_f(pred, gold, beta_sq):
    """F_β of one sentence from nervaluate's type-mode counts, 0/0 := 1."""
    den = len(pred) + beta_sq * len(gold)
    return 1.0 if den == 0 else (1 + beta_sq) * match(gold, pred, "type").correct / den


def test_the_step_counts_nervaluate_type_matches_on_every_pair_of_short_chunkings():
    for n in range(1, 6):
        every = all_chunkings(n, TYPES)
        for x, y in itertools.product(every, every[::1 if n < 5 else 5]):
            x, y = sorted(x, key=lambda c: c[1]), sorted(y, key=lambda c: c[1])
            assert walk(x, y, n) == (match(y, x, "type").correct, 0), (x, y)
            assert walk(x, y, n, canon=True) == walk(x, y, n), (x, y)


@st.composite
def chunking(draw, n, types=("A", "B", "C"), longest=7):
    out, i = [], 0
    while i < n:
        if draw(st.booleans()):
            k = draw(st.integers(1, min(longest, n - i)))
            out.append((draw(st.sampled_from(types)), i, i + k))
            i += k
        else:
            i += 1
    return out


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), chunking(n), chunking(n))))
@settings(max_examples=300, deadline=None)
def test_the_step_counts_nervaluate_type_matches_on_random_chunkings(case):
    n, x, y = case
    assert walk(x, y, n) == (match(y, x, "type").correct, 0)
    assert type_credit(x, y, n) == match(y, x, "type").correct
    tags = [enc.chunks_to_tags(c, n, "IOB2") for c in (x, y)]
    assert utility("type")(*tags, "IOB2", beta=0.5) == pytest.approx(type_f(x, y, 0.25))


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.just(n), chunking(n, ("A", "B"), longest=30), chunking(n, ("A", "B")))))
@settings(max_examples=400, deadline=None)
def test_merged_states_count_as_the_step_does_under_long_predictions(case):
    """The canonical map merges only states every gold continuation scores alike:
    the merged walk's COR is nervaluate's, on long predicted chunks over many gold
    chunks (where the map clamps σ* and drops lengths)."""
    n, x, y = case
    assert walk(x, y, n, canon=True) == (match(y, x, "type").correct, 0)


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "IOE1"])
def test_the_merged_recursion_equals_the_unmerged_one_on_long_chunks(scheme):
    lat = lattice(3, scheme, 12, 2.0)
    for fc in ([("A", 2, 12)], [("A", 0, 9)], [("B", 0, 1), ("A", 1, 8), ("A", 9, 11)],
               [("A", 0, 5), ("B", 5, 12)]):
        Z0, H0 = step_count_table(lat, fc, type_step, "hypothesis")
        Z, H = step_count_table(lat, fc, type_step, "hypothesis", canon=prediction_fixed_canon)
        np.testing.assert_allclose(Z, Z0, atol=1e-13)
        np.testing.assert_allclose(H, H0, atol=1e-13)


@pytest.mark.parametrize("scheme,n,scale", SCHEMES)
@pytest.mark.parametrize("fixed", ["hypothesis", "reference"])
def test_expected_type_f_equals_enumeration_both_ways(scheme, n, scale, fixed):
    lat = lattice(7, scheme, n, scale)
    seqs = [(list(y), enc.tags_to_chunks(list(y), scheme), np.exp(lp))
            for y, lp in lat.enumerate()]
    u = utility("type")
    for k in np.random.default_rng(1).choice(len(seqs), 4, replace=False):
        fx, fc, _ = seqs[k]
        Z, H = step_count_table(lat, fc, type_step, fixed)
        Zb, Hb = np.zeros(n + 1), np.zeros(n + 1)
        for _, yc, p in seqs:
            pred, gold = (fc, yc) if fixed == "hypothesis" else (yc, fc)
            Zb[len(yc)] += p
            Hb[len(yc)] += p * match(gold, pred, "type").correct
        np.testing.assert_allclose(Z, Zb, atol=1e-12)
        np.testing.assert_allclose(H, Hb, atol=1e-12)
        for beta in (1.0, 0.5, 0.0):
            want = sum(p * (type_f(fc, yc, beta ** 2) if fixed == "hypothesis" else
                            type_f(yc, fc, beta ** 2)) for _, yc, p in seqs)
            for method in ("fast", "fst"):
                got = u.expected(lat, beta=beta, method=method, **{fixed: fx})
                assert got == pytest.approx(want, abs=1e-10), (method, beta)


@pytest.mark.parametrize("scheme,n,scale", SCHEMES)
def test_the_step_recursion_is_the_twin_of_the_partial_and_tp_tables(scheme, n, scale):
    """Any step counter: with P's step it gives the partial table (half-credits), with
    T's the tp table, in both directions."""
    lat = lattice(3, scheme, n, scale, types=("A", "B", "C"))
    for y, _ in list(lat.enumerate())[::7]:
        fc = enc.tags_to_chunks(list(y), scheme)
        for fixed in ("hypothesis", "reference"):
            Z, H = step_count_table(lat, fc, partial_step, fixed)
            Zp, Hp = partial_count_table(lat, fc, fixed)
            np.testing.assert_allclose(Z, Zp, atol=1e-12)
            np.testing.assert_allclose(H / 2, Hp, atol=1e-12)
        Z, H = step_count_table(lat, fc, tp_step, "hypothesis")
        Zt, Tt = tp_count_table(lat, fc)
        np.testing.assert_allclose(Z, Zt, atol=1e-12)
        np.testing.assert_allclose(H, Tt, atol=1e-12)


def test_a_step_that_does_not_come_back_to_zero_is_refused():
    lat = lattice(1, "IOB2", 3)

    def stuck(q, x, y):
        return 0, 1 if x[0] == "B" else q
    with pytest.raises(InputError, match="does not come back to state 0"):
        step_count_table(lat, [("A", 0, 2)], stuck, "hypothesis")
    with pytest.raises(InputError, match="fixed must be"):
        step_count_table(lat, [], type_step, "gold")


@pytest.mark.parametrize("scheme,n,scale", SCHEMES)
def test_typed_outside_run_marginals_equal_enumeration(scheme, n, scale):
    lat = lattice(3, scheme, n, scale)
    for of in (None, 0, 1):
        want = np.zeros((n, n + 1, n + 1))
        for y, lp in lat.enumerate():
            ch = enc.tags_to_chunks(list(y), scheme)
            inside = np.zeros(n, bool)
            for t, s, e in ch:
                if of is None or TYPES.index(t) == of:
                    inside[s:e] = True
            for s in range(n):
                for e in range(s + 1, n + 1):
                    if not inside[s:e].any():
                        want[s, e, len(ch)] += np.exp(lp)
        np.testing.assert_allclose(outside_run_marginals(lat, of), want, atol=1e-12)


def test_typed_ranked_sets_list_every_typed_set_once_in_decreasing_order():
    n, T = 4, 2
    rng = np.random.default_rng(5)
    s_i, e_i = np.nonzero(np.triu(np.ones((n, n + 1), bool), 1))
    sp = TypedSpans(np.repeat(np.arange(T), len(s_i)), np.tile(s_i, T), np.tile(e_i, T), n)
    tables, want = {}, []
    for k in (1, 2):
        w = rng.normal(size=len(sp))
        tables[k] = (w, counted_dp(sp, w, k), k)
        weight = {sp.span(c): w[c] for c in range(len(sp))}
        for c in all_chunkings(n, TYPES):
            if len(c) == k:
                typed = [(TYPES.index(t), s, e) for t, s, e in c]
                want.append((sum(weight[x] for x in typed), k, sorted(typed, key=lambda x: x[1])))
    got = list(ranked_sets(sp, tables))
    assert [g[0] for g in got] == sorted([g[0] for g in got], reverse=True)
    assert sorted((k, tuple(c)) for _, k, c in got) == sorted((k, tuple(c)) for _, k, c in want)
    weights = {(k, tuple(c)): v for v, k, c in want}
    for v, k, c in got:
        assert v == pytest.approx(weights[(k, tuple(c))])


@pytest.mark.parametrize("seed", range(12))
def test_meu_is_certified_against_every_chunking(seed):
    scheme, _, scale = SCHEMES[seed % 4]
    n = 5 if seed == 1 else 4
    lat = lattice(seed, scheme, n, [0.5, 3.0, 30.0][seed % 3])
    for beta_sq in (1.0, 0.25, 0.0):
        r = type_meu(lat, beta_sq)
        chunks = [(TYPES[t], s, e) for t, s, e in r.chunks]
        best = max(expected_type_f(lat, list(c), beta_sq) for c in all_chunkings(n, TYPES))
        assert expected_type_f(lat, chunks, beta_sq) == pytest.approx(r.value, abs=1e-12)
        assert r.value <= best + 1e-12 and best <= r.value + r.gap + 1e-12
        cut = type_meu(lat, beta_sq, max_candidates=1)
        assert cut.value <= best + 1e-12 and best <= cut.value + cut.gap + 1e-12


def test_decode_gives_the_decision_its_value_and_the_registry_and_refusals():
    mode = ["B-PER", "I-PER", "O", "B-LOC", "O"]
    lat = peaked_lattice(mode)
    d = utility("type").decode(lat)       # overlap is enough: cover LOC's neighbour too
    assert d.score >= utility("type").expected(lat, hypothesis=mode) and d.gap == 0.0
    assert d.score == pytest.approx(utility("type").expected(lat, hypothesis=d.tags))
    assert [c[0] for c in enc.tags_to_chunks(d.tags, "IOB2")] == ["PER", "LOC"]
    assert utility("type").name == "type" and utility("type:A").name == "type:A"
    match_utility_refusals("type", lattice(0, "IOB2", 4))


def test_the_machine_counts_nervaluate_type_matches_on_every_pair_of_short_chunkings():
    """The counter as a pynini transducer (``grammar print type``), walked on every pair
    of chunkings of 3 tokens over 2 types: deterministic on pairs, one marker <tp=COR>."""
    from fstchunk.grammars.counting import MARKER_BASE, decode_marker
    from fstchunk.grammars.partial import type_credit_transducer
    n = 3
    C = type_credit_transducer(TYPES, bound=n)
    table = C.input_symbols()
    every = all_chunkings(n, TYPES)
    for x, y in itertools.product(every, every):
        x, y = sorted(x, key=lambda c: c[1]), sorted(y, key=lambda c: c[1])
        state = C.start()
        for a, b in zip(fixed_iobes(x, n), fixed_iobes(y, n)):
            la = table.find(enc.make_tag(*a) if a[0] != "O" else "O")
            lb = table.find(enc.make_tag(*b) if b[0] != "O" else "O")
            arc = [c for c in C.arcs(state) if (c.ilabel, c.olabel) == (la, lb)]
            assert len(arc) == 1
            state = arc[0].nextstate
        marks = [decode_marker(c.ilabel) for c in C.arcs(state) if c.ilabel >= MARKER_BASE]
        assert [m[1] for m in marks] == [match(y, x, "type").correct], (x, y)


def test_grammar_info_and_the_budget():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "fstchunk", "grammar", "info", "type",
                          "--types", "A", "--max-length", "2"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "grammar: type" in out.stdout and "states: 50" in out.stdout
    out = subprocess.run([sys.executable, "-m", "fstchunk", "grammar", "info", "type",
                          "--types", "A,B,C,D", "--max-length", "30", "--state-budget",
                          "100000"], capture_output=True, text=True)
    assert out.returncode != 0 and "over the state budget of 100,000" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_layer_over_its_memory_is_refused(monkeypatch):
    import fstchunk.engine.stepped as stepped
    monkeypatch.setattr(stepped, "LAYER_BYTES", 10_000)
    lat = lattice(2, "IOB2", 6)
    with pytest.raises(BudgetError, match="6-token sentence needs .* MiB for one layer"):
        utility("type").expected(lat, hypothesis=["B-A"] + ["I-A"] * 5)


def test_composition_past_the_state_budget_is_refused_during_the_walk():
    from fstchunk.grammars.budget import use_state_budget
    lat = lattice(2, "IOB2", 6)
    with use_state_budget(50), pytest.raises(BudgetError, match="over the state budget of 50"):
        utility("type").expected(lat, hypothesis=["B-A"] + ["I-A"] * 5, method="fst")


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "IOB1"])
def test_the_reverse_mode_is_the_partial_gradient_twin_and_finite_differences(scheme):
    from fstchunk.engine.partial import partial_count_table_grad
    from fstchunk.engine.stepped import step_count_table_grad
    rng = np.random.default_rng(0)
    tags = enc.scheme_tags(scheme, TYPES)
    sc = random_scores(rng, len(tags), 5, scale=1.5)
    lat = Lattice.from_scores(tags, *sc, scheme=scheme)
    fc = enc.tags_to_chunks(list(lat.sample(1, seed=3)[0]), scheme)
    Zbar, Hbar = rng.normal(size=6), rng.normal(size=6)
    for fixed in ("reference", "hypothesis"):
        g1, f1, _ = step_count_table_grad(lat, fc, partial_step, Zbar, Hbar / 2, fixed)
        g2, f2, _ = partial_count_table_grad(lat, fc, Zbar, Hbar, fixed)
        for a, b in zip(g1, g2):
            np.testing.assert_allclose(a, b, atol=1e-12)
        np.testing.assert_allclose(f1, f2, atol=1e-12)
    em, tr, st_, en = sc

    def f(e):
        Z, H = step_count_table(Lattice.from_scores(tags, e, tr, st_, en, scheme=scheme), fc,
                                type_step, "reference")
        return Zbar @ Z + Hbar @ H
    g, _, _ = step_count_table_grad(lat, fc, type_step, Zbar, Hbar, "reference")
    got = np.array([gi.sum(axis=0) for gi in g])          # d/d emission row i
    eps, num = 1e-6, np.zeros_like(em)
    for i, j in itertools.product(range(em.shape[0]), range(em.shape[1])):
        d = np.zeros_like(em)
        d[i, j] = eps
        num[i, j] = (f(em + d) - f(em - d)) / (2 * eps)
    np.testing.assert_allclose(got, num, atol=1e-7)


def test_meu_at_beta_zero_without_an_o_tag_is_refused_by_every_utility():
    """F_0's MEU decision is empty; a tag set without O cannot write it: one InputError
    from every MEU path, never O tags the model does not have."""
    import fstchunk
    tags = [t for t in enc.scheme_tags("IOB2", TYPES) if t != "O"]
    lat = Lattice.from_scores(tags, np.random.default_rng(0).normal(size=(3, len(tags))),
                              np.zeros((len(tags),) * 2))
    calls = [lambda: lat.meu(0.0), lambda: decoder_tags(lat)] + [
        (lambda u: lambda: fstchunk.utility(u).decode(lat, beta=0.0))(u)
        for u in ("exact", "macro", "type:A", "weighted:A=2", "partial", "type", "near")]
    for call in calls:
        with pytest.raises(InputError, match="β = 0 .* no O to write"):
            call()
    assert all(t in tags for t in fstchunk.utility("type").decode(lat, beta=1.0).tags)


def decoder_tags(lat):
    import fstchunk
    return fstchunk.decoder("meu", beta=0.0).tags([lat])
