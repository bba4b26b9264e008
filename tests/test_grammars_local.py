"""fstchunk.grammars.local: the one-pass 2-local machines (validity, encoders, conversions)
against two independent constructions:

* the construction they replace, kept here as the oracle: Γ+ minus the forbidden starts,
  bigrams and ends (pynini difference, determinized and minimized), and the encoders as
  cascades of obligatory simultaneous rewrite rules (pynini.cdrewrite) composed with the
  IOBES acceptor, conversions as E_S⁻¹ ∘ E_T; compared as languages/relations over
  encoded label pairs (pynini.equivalent) and in size (both minimal);
* enumeration: every chunking of up to 5 tokens over 3 chunk types, written in each scheme
  (:func:`oracles.all_chunkings`, :func:`fstchunk.schemes.encodings.chunks_to_tags`).
"""

import functools
import itertools

import pynini
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.grammars import conversion, local, validity
from fstchunk.schemes.tagspace import TagSet, symbol_table
from oracles import accepted_strings, all_chunkings

TYPE_SETS = [("",), ("NP",), ("NP", "VP"), ("A", "B", "C")]


# ------------------------------------------------------------- the old construction
@functools.lru_cache(maxsize=None)
def old_validity(scheme, types):
    """Γ+ − (Bad₀Γ* ∪ Γ*Bad₂Γ* ∪ Γ*Bad₁), determinized and minimized."""
    ts = TagSet(scheme, types)
    lab = dict(zip(ts.tags, ts.labels))
    gamma = fsa.union_of(ts.labels)
    gamma_star = gamma.copy().closure()
    bad0 = [lab[c] for c in ts.tags if not enc.allowed(scheme, None, c)]
    bad1 = [lab[p] for p in ts.tags if not enc.allowed(scheme, p, None)]
    bad2 = [(lab[p], lab[c]) for p in ts.tags for c in ts.tags
            if not enc.allowed(scheme, p, c)]
    parts = []
    if bad0:
        parts.append(fsa.union_of(bad0) + gamma_star)
    if bad2:
        parts.append(gamma_star + pynini.union(*(fsa.string_fst([a, b]) for a, b in bad2))
                     + gamma_star)
    if bad1:
        parts.append(gamma_star + fsa.union_of(bad1))
    bad = fsa.unweighted_optimize(pynini.union(*parts)) if parts else pynini.Fst("standard")
    good = fsa.unweighted_optimize(gamma + gamma_star)
    return fsa.unweighted_optimize(pynini.difference(good, bad))


def old_rules(scheme, types):
    """The rewrite cascade IOBES -> scheme (simultaneous cdrewrite rules)."""
    table = symbol_table(types)
    lab = table.find
    every = range(1, table.num_symbols())
    sigma_star = fsa.union_of(every).closure()
    eps = fsa.string_fst([])

    def letters(mapping):
        pairs = [(lab(enc.make_tag(a, t)), lab(enc.make_tag(b, t)))
                 for t in types for a, b in mapping.items()]
        mapped = {i for i, _ in pairs}
        return fsa.union_of(pairs + [i for i in every if i not in mapped]).closure()

    def rule(src, dst, left=(), right=()):
        cascade = []
        for t in types:
            srcs = (src,) if isinstance(src, str) else src
            tau = fsa.union_of([(lab(enc.make_tag(a, t)), lab(enc.make_tag(dst, t)))
                                for a in srcs])
            ctx = [fsa.union_of([lab(enc.make_tag(p, t)) for p in c]) if c else eps
                   for c in (left, right)]
            cascade.append(pynini.cdrewrite(tau, ctx[0], ctx[1], sigma_star, direction="sim"))
        return functools.reduce(pynini.compose, cascade)

    return {"IOBES": [], "IOB2": [letters({"S": "B", "E": "I"})],
            "IOE2": [letters({"S": "E", "B": "I"})], "BILOU": [letters({"E": "L", "S": "U"})],
            "IOB1": [rule(("B", "S"), "U", left=("E", "S")),
                     letters({"B": "I", "S": "I", "E": "I", "U": "B"})],
            "IOE1": [rule(("E", "S"), "U", right=("B", "S")),
                     letters({"E": "I", "S": "I", "B": "I", "U": "E"})],
            "IOBES2": [rule("I", "B2", left=("B",)), rule("I", "B3", left=("B2",))],
            "IOBES3": [rule("I", "E2", right=("E",)), rule("I", "E3", right=("E2",))]}[scheme]


@functools.lru_cache(maxsize=None)
def old_encoder(scheme, types):
    out = functools.reduce(pynini.compose, [old_validity("IOBES", types)] +
                           old_rules(scheme, types))
    return fsa.unweighted_optimize(out)


def old_conversion(source, target, types):
    out = pynini.compose(old_encoder(source, types).copy().invert(), old_encoder(target, types))
    return fsa.unweighted_optimize(out)


def same_machine(new, old):
    """Equal relations (label pairs encoded, weights ignored) and equal sizes (both are
    minimal deterministic machines over label pairs)."""
    a = pynini.arcmap(fsa.bare(new), map_type="rmweight")
    b = pynini.arcmap(fsa.to_arc_type(fsa.bare(old), a.arc_type()), map_type="rmweight")
    mapper = pynini.EncodeMapper(a.arc_type(), encode_labels=True)
    a.encode(mapper)
    b.encode(mapper)
    return pynini.equivalent(a, b) and a.num_states() == b.num_states()


# ------------------------------------------------------------- against the old construction
@pytest.mark.parametrize("types", TYPE_SETS, ids=lambda t: ",".join(t) or "untyped")
@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_validity_and_encoder_equal_the_old_construction(scheme, types):
    assert same_machine(local.machine((scheme,), types), old_validity(scheme, types))
    assert same_machine(validity.validity_acceptor(scheme, types), old_validity(scheme, types))
    assert same_machine(conversion.encoder(scheme, types), old_encoder(scheme, types))


@pytest.mark.parametrize("types", TYPE_SETS, ids=lambda t: ",".join(t) or "untyped")
@pytest.mark.parametrize("source", enc.SCHEMES)
def test_every_conversion_equals_the_old_construction(source, types):
    for target in enc.SCHEMES:
        new = conversion.conversion_transducer(source, target, types)
        assert same_machine(new, old_conversion(source, target, types)), (source, target)
        assert same_machine(local.machine((source, target), types),
                            old_conversion(source, target, types))


type_names = st.text(alphabet="ABCXYZabc019_.ä", min_size=1, max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(type_names, min_size=1, max_size=3, unique=True),
       st.sampled_from(enc.SCHEMES), st.sampled_from(enc.SCHEMES))
def test_random_type_names_and_schemes(types, source, target):
    """Type names and their order only label the machine: the same as the oracle for any."""
    types = tuple(sorted(types))
    assert same_machine(validity.validity_acceptor(source, types), old_validity(source, types))
    assert same_machine(conversion.conversion_transducer(source, target, types),
                        old_conversion(source, target, types))


# ------------------------------------------------------------- against enumeration
THREE = ("NP", "PP", "VP")


@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_validity_accepts_every_chunking_written_in_the_scheme(scheme):
    """Over 3 types, lengths 1..5: the accepted strings are exactly the chunkings."""
    acc = validity.validity_acceptor(scheme, THREE)
    got = set(accepted_strings(acc, symbol_table(THREE), 5))
    want = {tuple(enc.chunks_to_tags(c, n, scheme))
            for n in range(1, 6) for c in all_chunkings(n, THREE)}
    assert got == want


def relation(fst, n):
    """The (input, output) pairs of ``fst`` on inputs of length ``n`` exactly, by name."""
    name = fst.input_symbols().find
    sigma = fsa.union_of(sorted({a.ilabel for s in fst.states() for a in fst.arcs(s)}),
                         fst.arc_type())
    out = (pynini.closure(sigma, n, n) @ fst).connect()
    return {(tuple(map(name, i)), tuple(map(name, o))) for i, o, _ in fsa.paths(out)}


@pytest.mark.parametrize("source", enc.SCHEMES)
def test_conversions_map_every_chunking(source):
    """Over 3 types, lengths 1..4, every target: the relation is convert's graph."""
    for target, n in itertools.product(enc.SCHEMES, range(1, 5)):
        m = conversion.conversion_transducer(source, target, THREE)
        want = {(tuple(x), tuple(enc.convert(x, source, target)))
                for x in (enc.chunks_to_tags(c, n, source) for c in all_chunkings(n, THREE))}
        assert relation(m, n) == want, (source, target, n)


# ------------------------------------------------------------- the prefix rules
@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_prefix_rules_are_the_tag_rules(scheme):
    """Rules read off placeholder types agree with allowed/continues on real tags."""
    r = local.rules(scheme)
    ts = TagSet(scheme, ("NP", "VP"))

    def key(t):
        return enc.split_tag(t) if t != "O" else ("O", None)

    for p, c in itertools.product(ts.tags, repeat=2):
        (pp, pt), (cp, ct) = key(p), key(c)
        same = pt is not None and pt == ct
        assert ((pp, cp, same) in r.allowed) == enc.allowed(scheme, p, c), (p, c)
        assert ((pp, cp, same) in r.cont) == enc.continues(scheme, p, c), (p, c)
    for t in ts.tags:
        assert (key(t)[0] in r.start) == enc.allowed(scheme, None, t)
        assert (key(t)[0] in r.end) == enc.allowed(scheme, t, None)
