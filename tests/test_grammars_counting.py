import math
import itertools

import pynini
import pytest

from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.grammars import counting as C
from fstchunk.schemes.tagspace import TagSet
from oracles import all_chunkings

TYPES = ("NP", "VP")


def iobes(c, n):
    return enc.chunks_to_tags(c, n, "IOBES")


def labels(ts, tags):
    return [ts.label(t) for t in tags]


@pytest.mark.parametrize("types", [TYPES, ("I-PER", "ORG-X")], ids=["plain", "hyphenated"])
def test_T_counts_true_positives(types):
    """[T](x, y) = tp(x, y) for ALL pairs of valid typed sequences up to length 3."""
    ts = TagSet("IOBES", types)
    t = C.true_positive_transducer(types, 3, weights="count")
    for n in range(1, 4):
        for cx, cy in itertools.product(all_chunkings(n, types), repeat=2):
            x = fsa.string_fst(labels(ts, iobes(cx, n)), "log64")
            y = fsa.string_fst(labels(ts, iobes(cy, n)), "log64")
            w = fsa.total_weight(x @ t @ y)
            got = 0.0 if w == math.inf else math.exp(-w)
            assert got == pytest.approx(len(set(cx) & set(cy)), abs=1e-12)


def test_T_is_deterministic_on_pairs_and_TM_paths_carry_counts():
    ts = TagSet("IOBES", TYPES)
    t = C.true_positive_transducer(TYPES, 3)
    mapper = pynini.EncodeMapper("log64", encode_labels=True)
    enc_t = t.copy().encode(mapper)
    assert enc_t.properties(pynini.I_DETERMINISTIC, True) == pynini.I_DETERMINISTIC
    tm = C.pair_machine(TYPES, 3)
    marks = fsa.union_of([C.tp_marker(a) for a in range(4)] +
                         [C.m_marker(b) for b in range(4)], "log64").closure()
    for n in (1, 2, 3):
        for cx, cy in itertools.product(all_chunkings(n, TYPES)[:25], repeat=2):
            x = fsa.string_fst(labels(ts, iobes(cx, n)), "log64") + marks
            y = fsa.string_fst(labels(ts, iobes(cy, n)), "log64") + marks
            (il, ol, w), = fsa.paths(fsa.bare(x) @ fsa.bare(tm) @ fsa.bare(y))
            assert [C.decode_marker(v) for v in il[-2:]] == \
                [("tp", len(set(cx) & set(cy))), ("m", len(cy))]


def test_M_counts_chunks_on_either_tape():
    ts = TagSet("IOBES", TYPES)
    for tape in ("input", "output"):
        m = C.chunk_counter(TYPES, 3, weights="count", tape=tape)
        for cx, cy in itertools.product(all_chunkings(2, TYPES), repeat=2):
            x = fsa.string_fst(labels(ts, iobes(cx, 2)), "log64")
            y = fsa.string_fst(labels(ts, iobes(cy, 2)), "log64")
            w = fsa.total_weight(x @ m @ y)
            got = 0.0 if w == math.inf else math.exp(-w)
            assert got == pytest.approx(len(cy if tape == "output" else cx), abs=1e-12)


def test_specialised_acceptor_equals_x_composed_with_TM():
    ts = TagSet("IOBES", TYPES)
    tm = fsa.bare(C.pair_machine(TYPES, 3))
    marks = fsa.union_of([C.tp_marker(a) for a in range(4)] +
                         [C.m_marker(b) for b in range(4)], "log64").closure()
    for cx in all_chunkings(3, TYPES):
        x = fsa.string_fst(labels(ts, iobes(cx, 3)), "log64") + marks
        direct = C.specialised_pair_acceptor(cx, 3, TYPES)
        via = (x @ tm).project("output")
        a = sorted(tuple(i) for i, _, _ in fsa.paths(direct))
        b = sorted(tuple(o) for _, o, _ in fsa.paths(via.rmepsilon()))
        assert a == b


def test_sizes_and_inspection():
    t = C.true_positive_transducer(("NP",), 3)
    assert t.num_states() == 2 * 4 + 1                   # (ct, match) plus the marker sink
    tm = C.pair_machine(("NP",), 2)
    p = fsa.properties(tm)
    assert not p["acceptor"] and p["acyclic"] is False
    text = tm.print(show_weight_one=False)
    assert "<tp=1>" in text and "B-NP" in text
