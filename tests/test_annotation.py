"""Partial annotation (issue 36, part 1): the tag-column syntax, declared types, the
constraint acceptor, and the constrained log partition on the fast path (masked layers),
the machine path (lattice ∘ acceptor, shortest distance) and by brute force."""

import io

import numpy as np
import pynini
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk import Lattice
from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.io.annotation import (PartialSentence, annotation_types, check_allows,
                                    parse_cell, read_partial)
from fstchunk.io.conll import Sentence, read_conll
from fstchunk.core.errors import CoNLLError, InputError, SchemeError
from fstchunk.grammars import registry
from fstchunk.grammars.annotation import mask_acceptor
from fstchunk.schemes.tagspace import TagSet
from oracles import brute_log_partition

SCHEMES = ("IOB1", "IOB2", "IOE1", "IOE2", "IOBES", "BILOU", "IOBES2", "IOBES3")


def machine_log_partition(lat):
    """-(the total weight) of the lattice machine ∘ the acceptor, in log64, exactly
    (:func:`fstchunk.grammars.fsa.total_weight`: pynini's shortestdistance rounds to 9 digits,
    4.6e-7 at log Z ≈ 11, beyond the test's tolerance)."""
    return -fsa.total_weight(lat.unnormalised_fst())


def sentence(cells, source="t.conll"):
    return Sentence([[f"w{i}", c] for i, c in enumerate(cells)],
                    list(range(3, 3 + len(cells))), source)


def test_cells_allow_the_documented_tags_in_several_schemes():
    for scheme in ("IOB2", "IOBES", "BILOU"):
        ts = TagSet(scheme, ("LOC", "PER"))
        ps = PartialSentence(sentence(["?", "B-PER|O", "*-PER", "B-*", "*-*", "O", "O!"]),
                             [parse_cell(c, scheme) for c in
                              ("?", "B-PER|O", "*-PER", "B-*", "*-*", "O", "O!")])
        got = ps.allowed(ts)
        assert got[0] == set(ts.tags)
        assert got[1] == {"B-PER", "O"}
        assert got[2] == {t for t in ts.tags if t.endswith("-PER")}
        assert got[3] == {"B-LOC", "B-PER"}
        assert got[4] == set(ts.tags) - {"O"}
        assert got[5] == got[6] == {"O"}
        ps.declared = frozenset({"PER"})          # O: not a PER; O!: outside every chunk
        got = ps.allowed(ts)
        assert got[5] == {"O"} | {t for t in ts.tags if t.endswith("-LOC")}
        assert got[6] == {"O"}
        assert got[1] == {"B-PER", "O"} | {t for t in ts.tags if t.endswith("-LOC")}


@pytest.mark.parametrize("cell, fragment", [
    ("B-PER||O", "empty item"), ("X-PER", "not a prefix"), ("B-", "is empty"),
    ("E-PER", "not a prefix")])
def test_bad_cells_are_one_error_naming_the_place(cell, fragment):
    with pytest.raises(SchemeError, match=fragment) as e:
        parse_cell(cell, "IOB2", "f.conll:7")
    assert "f.conll:7" in str(e.value)


def test_declarations_apply_until_the_next_one_or_a_document_start(tmp_path):
    p = tmp_path / "m.conll"
    p.write_text("# annotated: PER,LOC\nJan B-PER\nzag O\n\nPiet B-PER\n\n"
                 "# annotated: ORG\nABN B-ORG\nloopt O\n\n"
                 "-DOCSTART- -X- O\n\nRome B-LOC\n\n"
                 "# annotated: *\nen O\n")
    got = read_partial(str(p), -1, "IOB2")
    assert [g.declared for g in got] == [frozenset({"PER", "LOC"}), frozenset({"PER", "LOC"}),
                                         frozenset({"ORG"}), None, None]
    assert [g.sentence.lines for g in got] == [[2, 3], [5], [8, 9], [13], [16]]
    assert annotation_types(got) == ("LOC", "ORG", "PER")
    ts = TagSet("IOB2", ("LOC", "ORG", "PER"))
    assert got[2].allowed(ts)[1] == {"O", "B-LOC", "I-LOC", "B-PER", "I-PER"}
    assert [g.full for g in got] == [False, True, False, True, True]
    # the plain reader sees the declaration as a token line: only --partial reads it
    with pytest.raises(CoNLLError, match="m.conll:2: expected 3 columns"):
        read_conll(str(p))
    with pytest.raises(InputError, match="m.conll:1: .*names no chunk type"):
        p.write_text("# annotated:\nJan B-PER\n")
        read_partial(str(p))


@pytest.mark.parametrize("scheme, cells, line", [
    ("IOB2", ["O", "I-PER"], 4), ("IOBES", ["B-*", "I-*", "O"], 5),
    ("IOBES", ["B-PER"], 3), ("BILOU", ["?", "U-LOC|O", "L-PER"], 5)])
def test_an_empty_intersection_is_one_error_naming_file_and_line(scheme, cells, line):
    ps = PartialSentence(sentence(cells), [parse_cell(c, scheme) for c in cells])
    with pytest.raises(SchemeError, match=f"t.conll:{line}: the annotation contradicts"):
        check_allows(ps, TagSet(scheme, ("LOC", "PER")))


def test_the_grammar_is_the_annotation_within_the_scheme():
    f = registry.build("annotation", scheme="IOB2", types=("LOC", "PER"),
                       gold=("?", "B-PER|I-PER", "O"))
    ts = TagSet("IOB2", ("LOC", "PER"))
    paths = {tuple(ts.symbols.find(a) for a in p) for p in _strings(f)}
    want = {(a, b, "O") for a in ts.tags for b in ("B-PER", "I-PER")
            if enc.is_valid([a, b, "O"], "IOB2")}
    assert paths == want
    with pytest.raises(SchemeError, match="--gold token:2"):
        registry.build("annotation", scheme="IOB2", types=("PER",), gold=("O", "I-PER"))
    for scheme in ("IOB2", "IOBES", "BILOU"):           # a type --types lacks, by name
        for cell in ("*-LOC", "B-LOC", "B-PER|I-LOC", "O|*-LOC~"):
            with pytest.raises(InputError, match="--gold token 2: chunk type 'LOC' is not "
                                                 "among the types \\(PER\\)"):
                registry.build("annotation", scheme=scheme, types=("PER",), gold=("O", cell))


def _strings(f):
    out, stack = [], [(f.start(), ())]
    zero = pynini.Weight.zero(f.weight_type())
    while stack:
        q, p = stack.pop()
        if f.final(q) != zero:
            out.append(p)
        for a in f.arcs(q):
            stack.append((a.nextstate, p + (a.ilabel,)))
    return out


@st.composite
def constrained_cases(draw):
    scheme = draw(st.sampled_from(SCHEMES))
    types = draw(st.sampled_from([("",), ("NP",), ("LOC", "PER")]))
    n = draw(st.integers(1, 4))
    ts = TagSet(scheme, types)
    L = len(ts.tags)
    allowed = np.array(draw(st.lists(st.lists(st.booleans(), min_size=L, max_size=L),
                                     min_size=n, max_size=n)))
    scale = draw(st.sampled_from([1e-3, 1.0, 30.0, 1e3]))
    seed = draw(st.integers(0, 2 ** 31))
    return scheme, types, ts, allowed, scale, seed


@settings(max_examples=120, deadline=None)
@given(constrained_cases())
def test_constrained_log_partition_fast_machine_and_brute_force_agree(case):
    scheme, types, ts, allowed, scale, seed = case
    rng = np.random.default_rng(seed)
    n, L = allowed.shape
    scores = (rng.normal(scale=scale, size=(n, L)), rng.normal(scale=scale, size=(L, L)),
              rng.normal(scale=scale, size=L), rng.normal(scale=scale, size=L))
    lat = Lattice.from_scores(ts.tags, *scores, scheme=scheme)
    want = brute_log_partition(ts.tags, scheme, types, scores, allowed)
    ps = PartialSentence(sentence(["?"] * n), [(("any", ""),)] * n)
    if want == -np.inf:                     # the annotation contradicts the scheme
        with pytest.raises(SchemeError, match="t.conll:"):
            check_allows(ps, ts, allowed)
        return
    check_allows(ps, ts, allowed)
    con = lat.constrained(allowed)
    tol = 1e-9 * max(1.0, abs(want))
    assert con.log_partition() == pytest.approx(want, abs=tol)
    assert machine_log_partition(con) == pytest.approx(want, abs=tol * 10)
    # the conditioned distribution's marginals vanish where the mask forbids
    assert np.all(con.marginals()[~allowed] == 0)


def test_a_full_mask_is_the_lattice_and_a_one_hot_mask_its_path_score():
    rng = np.random.default_rng(3)
    ts = TagSet("IOBES", ("NP", "VP"))
    y = ["B-NP", "E-NP", "S-VP", "O"]
    scores = [rng.normal(size=s) for s in ((4, len(ts)), (len(ts), len(ts)), len(ts),
                                          len(ts))]
    lat = Lattice.from_scores(ts.tags, *scores, scheme="IOBES")
    assert lat.constrained(np.ones((4, len(ts)), bool)).log_partition() == \
        pytest.approx(lat.log_partition(), abs=1e-12)
    one = np.zeros((4, len(ts)), bool)
    one[np.arange(4), ts.indices(y)] = True
    assert lat.constrained(one).log_partition() - lat.log_partition() == \
        pytest.approx(lat.log_prob(y), abs=1e-12)


def test_the_mask_acceptor_is_the_product_of_the_sets():
    ts = TagSet("IOB2", ("PER",))
    m = np.array([[True, True, False], [False, False, True]])
    f = mask_acceptor(m, ts)
    got = {tuple(ts.symbols.find(a) for a in p) for p in _strings(f)}
    assert got == {("O", "I-PER"), ("B-PER", "I-PER")}
    with pytest.raises(InputError, match="shape"):
        Lattice.from_scores(ts.tags, np.zeros((2, 3)), np.zeros((3, 3)),
                            scheme="IOB2").constrained(m[:1])


def test_read_partial_names_a_missing_tag_column(tmp_path):
    p = tmp_path / "one.conll"
    p.write_text("a\nb\n")
    with pytest.raises(InputError, match="one.conll:1: no tag column"):
        read_partial(str(p), 1)
    assert read_partial(io.BytesIO(b"a B-X\n"))[0].cells == [(("tag", "B-X"),)]
