import pynini
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.grammars import validity
from fstchunk.schemes.tagspace import TagSet
from oracles import accepted_strings, all_chunkings


@pytest.mark.parametrize("scheme", enc.SCHEMES)
@pytest.mark.parametrize("types", [("",), ("NP", "VP"), ("I-PER", "ORG-X")],
                         ids=["untyped", "typed", "hyphenated"])
def test_acceptor_accepts_exactly_the_valid_sequences(scheme, types):
    ts = TagSet(scheme, types)
    acc = validity.validity_acceptor(scheme, types)
    got = set(accepted_strings(acc, ts.symbols, 6))
    want = {tuple(enc.chunks_to_tags(c, n, scheme))
            for n in range(1, 7) for c in all_chunkings(n, types)}
    assert got == want
    assert all(enc.is_valid(s, scheme) for s in got)


@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_machine_properties(scheme):
    acc = validity.validity_acceptor(scheme, ["NP", "VP", "PP"])
    p = fsa.properties(acc)
    assert p["acceptor"] and p["deterministic"] and p["epsilon-free"] and p["unweighted"]
    assert p["functional"] and not p["acyclic"]
    assert acc.arc_type() == "log64"
    assert validity.validity_acceptor(scheme, ["NP"], "standard").arc_type() == "standard"
    # minimal: minimizing again changes nothing
    assert acc.num_states() == pynini.minimize(acc.copy()).num_states()


def test_slides_expression_equals_general_construction():
    """{O,B}Γ* − Γ*{OI}Γ* (Jansche §6) is the untyped IOB2 acceptor."""
    slides = validity.slides_iob2_acceptor()
    general = validity.validity_acceptor("IOB2", None, "standard")
    assert pynini.equivalent(slides, general)
    assert slides.num_states() == 3


def test_empty_sequence_rejected_and_symbols_shared():
    acc = validity.validity_acceptor("IOB2", ["NP"])
    assert acc.final(acc.start()) == pynini.Weight.zero("log64")
    st = acc.input_symbols()
    assert st.find(0) == "<epsilon>" and st.find("B-NP") == TagSet("IOBES", ["NP"]).label("B-NP")


def test_real_tagset_size():
    """The 11 CoNLL-2000 chunk types: still a small machine."""
    types = "ADJP ADVP CONJP INTJ LST NP PP PRT SBAR UCP VP".split()
    acc = validity.validity_acceptor("IOB2", types)
    assert acc.num_states() == 1 + 1 + len(types)      # start/O, and one "inside X" per type
    ts = TagSet("IOB2", types)
    seq = ["B-NP", "I-NP", "B-VP", "O", "B-PP", "B-NP"]
    f = fsa.string_fst([ts.label(t) for t in seq], "log64")
    assert (f @ acc).num_states() > 0
    bad = fsa.string_fst([ts.label(t) for t in ["B-NP", "I-VP"]], "log64")
    assert (bad @ acc).connect().num_states() == 0


# ------------------------------------------------------------- property tests
ALL_PREFIXES = ("B", "I", "E", "S", "L", "U", "B2", "B3", "E2", "E3")


@st.composite
def tag_strings(draw):
    """(scheme, types, tags): a random string of length 1..5, drawn from the scheme's
    own tags or from every tag of the shared symbol table (other schemes' tags too)."""
    scheme = draw(st.sampled_from(enc.SCHEMES))
    types = draw(st.sampled_from([("",), ("NP", "VP")]))
    own = draw(st.booleans())
    alphabet = (TagSet(scheme, types).tags if own else
                ("O",) + tuple(enc.make_tag(p, t) for t in types for p in ALL_PREFIXES))
    tags = draw(st.lists(st.sampled_from(alphabet), min_size=1, max_size=5))
    return scheme, types, tags


@settings(max_examples=300, deadline=None)
@given(tag_strings())
def test_acceptor_accepts_iff_is_valid(case):
    scheme, types, tags = case
    ts = TagSet(scheme, types)
    acc = validity.validity_acceptor(scheme, types)
    x = fsa.string_fst([ts.symbols.find(t) for t in tags], "log64")
    accepted = (x @ acc).connect().num_states() > 0
    assert accepted == enc.is_valid(tags, scheme)
