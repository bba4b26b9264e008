import pynini
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.grammars import conversion
from fstchunk.schemes.tagspace import TagSet
from oracles import all_chunkings

TYPES = ("NP", "VP")
HYPHENATED = ("I-PER", "ORG-X")      # B-I-PER is B + I-PER (the first hyphen splits)


def relation_upto(fst, ts, n):
    """All (input, output) tag-string pairs of ``fst`` with inputs of length <= n."""
    sigma = fsa.union_of(ts.labels, fst.arc_type())
    bounded = pynini.union(*(pynini.closure(sigma, k, k) for k in range(1, n + 1)))
    restricted = (bounded @ fst).connect()
    name = ts.symbols.find
    return {(tuple(map(name, i)), tuple(map(name, o))) for i, o, _ in fsa.paths(restricted)}


@pytest.mark.parametrize("source", enc.SCHEMES)
@pytest.mark.parametrize("types, length", [(TYPES, 6), (HYPHENATED, 4)],
                         ids=["plain", "hyphenated"])
def test_conversion_machine_equals_convert(source, types, length):
    """Over ALL inputs up to ``length``: the machine's relation is exactly convert's graph."""
    ts = TagSet(source, types)
    valid = [tuple(enc.chunks_to_tags(c, n, source))
             for n in range(1, length + 1) for c in all_chunkings(n, types)]
    for target in enc.SCHEMES:
        if target == source:
            continue
        m = conversion.conversion_transducer(source, target, types)
        want = {(v, tuple(enc.convert(v, source, target))) for v in valid}
        assert relation_upto(m, ts, length) == want, (source, target)
        assert fsa.is_functional(m) is True


@pytest.mark.parametrize("scheme", enc.SCHEMES)
@pytest.mark.parametrize("types", [TYPES, HYPHENATED], ids=["plain", "hyphenated"])
def test_encoder_is_a_bijection_from_iobes(scheme, types):
    e = conversion.encoder(scheme, types)
    ts = TagSet("IOBES", types)
    rel = relation_upto(e, ts, 5)
    assert len({o for _, o in rel}) == len(rel)           # injective
    assert all(enc.convert(i, "IOBES", scheme) == list(o) for i, o in rel)
    assert fsa.is_functional(e)


def test_is_functional_detects_non_functional():
    ts = TagSet("IOB2")
    o, b = ts.label("O"), ts.label("B")
    assert fsa.is_functional(fsa.union_of([(o, o), (o, b)])) is False


def test_conversion_on_real_sentences(corpus):
    from fstchunk.io.conll import read_conll
    sents = read_conll(corpus("conll2000", "test.txt"))[:40]
    types = enc.chunk_types(t for s in sents for t in s.column(-1))
    ts = TagSet("IOB2", types)
    for target in ("IOE1", "IOBES3"):
        m = conversion.conversion_transducer("IOB2", target, types).arcsort()
        for s in sents:
            tags = s.column(-1)
            out = fsa.string_fst([ts.label(t) for t in tags], "log64") @ m
            (i, o, _), = fsa.paths(out)
            assert [ts.symbols.find(x) for x in o] == enc.convert(tags, "IOB2", target)


# ------------------------------------------------------------- property tests
@st.composite
def conversions(draw, valid: bool):
    """(source, target, types, tags), tags of length 1..5: a valid ``source`` string
    (from a random chunking) if ``valid``, else any string of ``source`` tags."""
    source, target = draw(st.lists(st.sampled_from(enc.SCHEMES), min_size=2, max_size=2,
                                   unique=True))
    types = draw(st.sampled_from([("",), ("NP", "VP")]))
    n = draw(st.integers(1, 5))
    if valid:
        tags = enc.chunks_to_tags(draw(st.sampled_from(all_chunkings(n, types))), n, source)
    else:
        tags = draw(st.lists(st.sampled_from(TagSet(source, types).tags),
                             min_size=n, max_size=n))
    return source, target, types, tags


def images(source, target, types, tags):
    """Every output of the conversion machine for input ``tags``, as tag lists."""
    ts = TagSet(source, types)
    m = conversion.conversion_transducer(source, target, types)
    out = fsa.string_fst([ts.label(t) for t in tags], "log64") @ m
    return [[ts.symbols.find(x) for x in o] for _, o, _ in fsa.paths(out.connect())]


@settings(max_examples=200, deadline=None)
@given(conversions(valid=True))
def test_conversion_maps_valid_strings_like_convert(case):
    source, target, types, tags = case
    assert images(source, target, types, tags) == [enc.convert(tags, source, target)]


@settings(max_examples=200, deadline=None)
@given(conversions(valid=False))
def test_conversion_domain_is_the_valid_strings(case):
    source, target, types, tags = case
    got = images(source, target, types, tags)
    assert got == ([enc.convert(tags, source, target)] if enc.is_valid(tags, source) else [])
