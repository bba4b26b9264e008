import pynini
import pytest

from fstchunk import encodings as enc
from fstchunk import fsa
from fstchunk.grammars import validity
from fstchunk.tagspace import TagSet
from oracles import all_chunkings


@pytest.mark.parametrize("scheme", enc.SCHEMES)
@pytest.mark.parametrize("types", [("",), ("NP", "VP")], ids=["untyped", "typed"])
def test_acceptor_accepts_exactly_the_valid_sequences(scheme, types):
    ts = TagSet(scheme, types)
    acc = validity.validity_acceptor(scheme, types)
    got = set(fsa.accepted_strings(acc, ts.symbols, 6))
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


def test_export_far_reads_back(tmp_path):
    path = str(tmp_path / "v.far")
    keys = validity.export(path, "NP")
    assert keys == sorted(f"validity.{s}" for s in enc.SCHEMES)
    with pynini.Far(path, "r") as far:
        for key, fst in far:
            scheme = key.split(".")[1]
            assert pynini.equal(fst, validity.validity_acceptor(scheme, "NP"))
