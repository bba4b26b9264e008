"""A credit counter of one's own (fstchunk.decoding.credit_utility): F_β with the
credits of a pynini pair transducer C in place of tp.  Oracles: C built from T's step
gives conlleval's expected F and from P's step SemEval's partial F (each checked by
enumeration elsewhere), both directions; "the span alone earns half" against
enumeration with u computed here from chunk sets; the MEU reranking against the best
of all sequences when k covers them; C's refusals."""

import pickle

import numpy as np
import pynini
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstchunk import Lattice
from fstchunk.core.errors import BudgetError, InputError, SchemeError
from fstchunk.decoding.credit_utility import CreditUtility
from fstchunk.decoding.decoders import decoder
from fstchunk.decoding.utilities import utility
from fstchunk.grammars.counting import credit_transducer, tp_step
from fstchunk.schemes import encodings as enc
from fstchunk.schemes.matching import STATES, partial_step
from oracles import random_scores

TYPES = ("A", "B")


def span_half(match, x, y):
    """2 credits for a chunk right with its span and type, 1 with its span alone
    (match: 0 none open, 1 span and type so far, 2 span so far)."""
    (px, tx), (py, ty) = x, y
    if match:
        if px == py == "E":
            return (2 if match == 1 else 1), 0
        return 0, (match if px == py == "I" else 0)
    if px == py == "S":
        return (2 if tx == ty else 1), 0
    return 0, ((1 if tx == ty else 2) if px == py == "B" else 0)


def span_half_machine(types, top):
    return credit_transducer(types, top, (0, 1, 2), span_half)


def tp_machine(types, top):
    return credit_transducer(types, top, (0, 1), tp_step)


def partial_machine(types, top):
    return credit_transducer(types, top, STATES, partial_step)


def stuck(match, x, y):
    """Never leaves match state 1 once x and y differ: those pairs have no path."""
    return 0, 1 if match or x != y else 0


def stuck_machine(types, top):
    return credit_transducer(types, top, (0, 1), stuck)


def span_half_oracle(x, y, b2):
    spans = {(s, e): t for t, s, e in y}
    h = sum(1.0 if spans.get((s, e)) == t else 0.5 if (s, e) in spans else 0.0
            for t, s, e in x)
    den = len(x) + b2 * len(y)
    return 1.0 if den == 0 else (1 + b2) * h / den


def lattice(seed, scheme, n, scale):
    rng = np.random.default_rng(seed)
    tags = enc.scheme_tags(scheme, TYPES)
    return Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale=scale),
                               scheme=scheme)


CASES = [("IOB2", 3, 1.0), ("IOBES", 3, 30.0), ("IOB1", 3, 2.0), ("IOE1", 2, 0.5)]


@pytest.mark.parametrize("scheme,n,scale", CASES)
def test_the_counters_of_t_and_p_give_conlleval_and_partial(scheme, n, scale):
    lat = lattice(1, scheme, n, scale)
    mine = {"conlleval": CreditUtility("t", tp_machine),
            "partial": CreditUtility("p", partial_machine, unit=2)}
    for tags, _ in list(lat.enumerate())[::4]:
        for side in ("hypothesis", "reference"):
            for beta in (1.0, 0.5, 0.0):
                for name, u in mine.items():
                    assert u.expected(lat, beta=beta, **{side: list(tags)}) == pytest.approx(
                        utility(name).expected(lat, beta=beta, **{side: list(tags)}),
                        abs=1e-12)


@pytest.mark.parametrize("scheme,n,scale", CASES)
def test_span_half_equals_enumeration_and_its_meu_reranking(scheme, n, scale):
    lat = lattice(2, scheme, n, scale)
    u = CreditUtility("span-half", span_half_machine, unit=2, k=10 ** 4)
    seqs = [(list(y), enc.tags_to_chunks(list(y), scheme), np.exp(lp))
            for y, lp in lat.enumerate()]
    for beta in (1.0, 0.5, 0.0):
        b2 = beta * beta
        for tags, ch, _ in seqs[::5]:
            dec = sum(p * span_half_oracle(ch, c, b2) for _, c, p in seqs)
            tra = sum(p * span_half_oracle(c, ch, b2) for _, c, p in seqs)
            assert u.expected(lat, hypothesis=tags, beta=beta) == pytest.approx(dec, abs=1e-12)
            assert u.expected(lat, reference=tags, beta=beta) == pytest.approx(tra, abs=1e-12)
            for other, och, _ in seqs[::7]:
                assert u(tags, other, scheme, TYPES, beta) == pytest.approx(
                    span_half_oracle(ch, och, b2))
        d = decoder("meu", utility=u, beta=beta).decode(lat)    # k covers every sequence
        best = max(sum(p * span_half_oracle(x, c, b2) for _, c, p in seqs) for _, x, _ in seqs)
        assert d.score == pytest.approx(best, abs=1e-12) and d.gap == float("inf")
        assert u.expected(lat, hypothesis=d.tags, beta=beta) == pytest.approx(d.score)


def test_a_few_paths_rerank_to_at_least_map_and_the_decoder_pickles():
    lat = lattice(3, "IOB2", 4, 2.0)
    u = CreditUtility("span-half", span_half_machine, unit=2, k=2)
    d = pickle.loads(pickle.dumps(decoder("meu", utility=u))).decode(lat)
    assert d.gap == float("inf")
    assert d.score >= u.expected(lat, hypothesis=lat.map().tags) - 1e-12
    assert d.score >= u.expected(lat, hypothesis=lat.meu().tags) - 1e-12


def test_refusals():
    lat = lattice(4, "IOB2", 3, 1.0)
    with pytest.raises(InputError, match="unit must be a whole number >= 1"):
        CreditUtility("x", tp_machine, unit=0)
    with pytest.raises(InputError, match="build returned str, not a pynini.Fst"):
        CreditUtility("x", lambda types, top: "T").expected(lat, hypothesis=["O"] * 3)
    bad = CreditUtility("stuck", stuck_machine)
    with pytest.raises(InputError, match="utility stuck: its credit counter gives the pairs "
                                         "of this lattice's sequences mass"):
        bad.expected(lat, hypothesis=["B-A", "O", "O"])
    with pytest.raises(InputError, match="gives this pair 0 paths, not 1"):
        bad(["B-A", "O", "O"], ["O", "B-A", "O"], "IOB2", TYPES)
    with pytest.raises(InputError, match="unknown method 'foo'; use 'fst' or 'fast'"):
        CreditUtility("t", tp_machine).expected(lat, hypothesis=["O"] * 3, method="foo")
    with pytest.raises(InputError, match="has no pushed lattice"):
        bad.pushed(lat)
    free = Lattice.from_scores(["X", "Y"], np.zeros((2, 2)), np.zeros((2, 2)), scheme=None)
    with pytest.raises(SchemeError):
        CreditUtility("t", tp_machine).expected(free, hypothesis=["X", "Y"])
    with pytest.raises(InputError, match="differ in length"):
        CreditUtility("t", tp_machine)(["O"], ["O", "O"], "IOB2", TYPES)
    assert isinstance(CreditUtility("t", tp_machine).machine(TYPES, 2), pynini.Fst)
    from fstchunk.decoding.credit_utility import near_boundaries
    with pytest.raises(BudgetError, match="the off-by-one counter over 11 chunk type"):
        near_boundaries(tuple("ABCDEFGHIJK"), 200)          # refused before it is built


def span_half_but_c(match, x, y):
    """span_half, except that a C chunk right with its span and type earns nothing."""
    h, nxt = span_half(match, x, y)
    return (0 if h == 2 and "C" in (x[1], y[1]) else h), nxt


def test_a_step_that_is_not_the_counters_own_is_refused():
    """The recursion trusts that C is built from the step: checked on short pairs, a
    wrong step is one clear error naming a pair they disagree on, from expected and
    from MEU; composition (method "fst") reads C alone."""
    lat = lattice(4, "IOB2", 3, 1.0)
    wrong = CreditUtility("span", span_half_machine, unit=2, step=tp_step)
    with pytest.raises(InputError, match=r"utility span: its step and its credit counter C "
                                         r"disagree on the pair x = S-A, y = S-A \(IOBES\): "
                                         r"the step gives 1 credits, C gives \[2\]"):
        wrong.expected(lat, hypothesis=["B-A", "O", "O"])
    with pytest.raises(InputError, match="disagree on the pair"):
        decoder("meu", utility=wrong).decode(lat)
    assert wrong.expected(lat, hypothesis=["B-A", "O", "O"], method="fst") == pytest.approx(
        CreditUtility("span", span_half_machine, unit=2).expected(lat, hypothesis=["B-A", "O",
                                                                                   "O"]))
    stuck_step = CreditUtility("stuck", stuck_machine, step=stuck)
    with pytest.raises(InputError, match=r"the step gives no count \(it ends away from "
                                         r"rest\), C gives no path"):
        stuck_step.expected(lat, hypothesis=["B-A", "O", "O"])
    # a difference on the third type only: found by the random pairs over every type
    tags = enc.scheme_tags("IOB2", ("A", "B", "C"))
    abc = Lattice.from_scores(tags, *random_scores(np.random.default_rng(0), len(tags), 3),
                              scheme="IOB2")
    with pytest.raises(InputError, match="C"):
        CreditUtility("c", span_half_machine, unit=2, step=span_half_but_c).expected(
            abc, hypothesis=["B-C", "O", "O"])
    right = CreditUtility("span", span_half_machine, unit=2, step=span_half)
    got = right.expected(abc, hypothesis=["B-C", "O", "O"])
    assert right._checked == {("A", "B", "C")}
    assert got == pytest.approx(right.expected(abc, hypothesis=["B-C", "O", "O"], method="fst"))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.data())
def test_span_half_walks_to_the_oracle_on_random_chunkings(n, data):
    def chunking():
        cuts = sorted(data.draw(st.sets(st.integers(0, n), max_size=n + 1)))
        return [(data.draw(st.sampled_from(TYPES)), s, e) for s, e in zip(cuts, cuts[1:])
                if data.draw(st.booleans())]
    x, y = chunking(), chunking()
    u = CreditUtility("span-half", span_half_machine, unit=2)
    assert u(enc.chunks_to_tags(x, n, "IOBES"), enc.chunks_to_tags(y, n, "IOBES"), "IOBES",
             TYPES, 0.5) == pytest.approx(span_half_oracle(x, y, 0.25), abs=1e-15)


def near_oracle(x, y):
    """Credits of "a boundary off by one token earns half", from the definition."""
    gold = set(y)
    h = 0
    for t, s, e in x:
        if (t, s, e) in gold:
            h += 2
        elif any(g[0] == t and ((g[1] == s and abs(g[2] - e) == 1) or
                                (g[2] == e and abs(g[1] - s) == 1)) for g in gold):
            h += 1
    return h


def test_near_step_counts_the_definition_on_every_pair_of_chunkings():
    import itertools
    from fstchunk.grammars.counting import fixed_iobes
    from fstchunk.schemes.near_match import near_step
    for n in range(1, 6):
        spans = [(s, e) for s in range(n) for e in range(s + 1, n + 1)]
        every = [[(t, s, e) for t, (s, e) in zip(ts, pick)]
                 for r in range(n + 1) for pick in itertools.combinations(spans, r)
                 if all(a[1] <= b[0] for a, b in zip(pick, pick[1:]))
                 for ts in itertools.product(TYPES, repeat=r)]
        for x, y in itertools.product(every, every[::1 if n < 5 else 7]):
            state, h = 0, 0
            for a, b in zip(fixed_iobes(x, n), fixed_iobes(y, n)):
                inc, state = near_step(state, a, b)
                h += inc
            assert (h, state) == (near_oracle(x, y), 0), (x, y)


@pytest.mark.parametrize("scheme,n,scale", [("IOB2", 3, 1.0), ("IOBES", 3, 30.0)])
def test_near_boundaries_equals_enumeration(scheme, n, scale):
    from fstchunk.decoding.credit_utility import near_boundaries
    lat = lattice(5, scheme, n, scale)
    from fstchunk.schemes.near_match import near_step
    u = CreditUtility("near", near_boundaries, unit=2, k=10 ** 4)
    fast = CreditUtility("near", near_boundaries, unit=2, k=10 ** 4, step=near_step)
    seqs = [(list(y), enc.tags_to_chunks(list(y), scheme), np.exp(lp))
            for y, lp in lat.enumerate()]

    def f(x, y, b2):
        den = len(x) + b2 * len(y)
        return 1.0 if den == 0 else (1 + b2) * near_oracle(x, y) / 2 / den
    for tags, ch, _ in seqs[::9]:
        for beta in (1.0, 0.5):
            b2 = beta * beta
            for v, how in ((u, "fast"), (fast, "fast"), (fast, "fst")):
                assert v.expected(lat, hypothesis=tags, beta=beta, method=how) == \
                    pytest.approx(sum(p * f(ch, c, b2) for _, c, p in seqs), abs=1e-12)
                assert v.expected(lat, reference=tags, beta=beta, method=how) == \
                    pytest.approx(sum(p * f(c, ch, b2) for _, c, p in seqs), abs=1e-12)
    for v in (u, fast):
        d = v.decode(lat)
        assert d.score == pytest.approx(max(sum(p * f(x, c, 1.0) for _, c, p in seqs)
                                            for _, x, _ in seqs), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_the_shipped_near_utility_has_a_certified_meu(seed):
    """``utility("near")``: the step recursion for E[u], and MEU certified by
    near_bound (a point for the span, half for each neighbour): the best of all
    chunkings lies between the score and score + gap."""
    from fstchunk.decoding.utilities import utility as shipped
    from oracles import all_chunkings
    scheme, _, scale = CASES[seed % 4]
    n = 4
    lat = lattice(seed, scheme, n, [0.5, 3.0, 30.0][seed % 3])
    u = shipped("near")
    for beta in (1.0, 0.5):
        d = u.decode(lat, beta=beta)
        assert d.score == pytest.approx(u.expected(lat, hypothesis=d.tags, beta=beta,
                                                   method="fst"), abs=1e-12)
        best = max(u.expected(lat, hypothesis=enc.chunks_to_tags(list(c), n, scheme),
                              beta=beta) for c in all_chunkings(n, TYPES)
                   if all(t in lat.space.tags for t in enc.chunks_to_tags(list(c), n, scheme)))
        assert d.score <= best + 1e-12 and best <= d.score + d.gap + 1e-12
        assert d.gap < float("inf")
    assert u.decode(lat, beta=0.0).tags == ["O"] * n
