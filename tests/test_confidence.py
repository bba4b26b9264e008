"""Chunk confidences (fstchunk.decoding.confidence) against brute-force enumeration."""

import itertools

import numpy as np
import pynini
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk import Lattice
from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.decoding.confidence import (ScoredChunk, check_min_confidence, decode_chunks,
                                          keep_confident, scored_chunks, tags_of)
from fstchunk.decoding.decode import decode_map, decode_meu
from fstchunk.decoding.decoders import decoder as get_decoder
from fstchunk.core.errors import FstchunkError
from fstchunk.grammars import models
from fstchunk.schemes.tagspace import TagSet
from oracles import brute_chunk_marginals, brute_force, path_score_bound, random_scores, stable_seed

CASES = [("IOB2", ("NP", "VP"), 5), ("IOB1", ("NP", "VP"), 5), ("IOE1", ("NP", "VP"), 5),
         ("IOE2", ("",), 6), ("IOBES", ("NP", "VP"), 5), ("BILOU", ("PER", "LOC"), 5),
         ("IOBES2", ("NP",), 5), ("IOBES3", ("NP",), 5)]
EPS = np.finfo(float).eps


def _oracle(tags, scheme, types, n, scores):
    seqs, _ = brute_force(tags, scheme, types, n, *scores)
    return seqs, brute_chunk_marginals(seqs, types, n)


def _tol(scores, n):
    """The oracle's own rounding at this score scale (oracles.path_score_bound)."""
    return 1e-10 + 4 * (2 * n + 2) * EPS * path_score_bound(*scores)


@pytest.mark.parametrize("scheme,types,n", CASES)
@pytest.mark.parametrize("scale", [0.01, 1.0, 8.0, 60.0])
def test_confidences_of_map_and_meu_equal_brute_force(scheme, types, n, scale):
    rng = np.random.default_rng(stable_seed((scheme, n, scale)))
    tags = enc.scheme_tags(scheme, types)
    for length in (1, 2, n):
        scores = random_scores(rng, len(tags), length, scale)
        lat = Lattice.from_scores(tags, *scores, scheme=scheme)
        seqs, want = _oracle(tags, scheme, types, length, scores)
        for decided in (decode_map(lat).tags, decode_meu(lat, beta=0.5).tags,
                        decode_meu(lat, beta=2.0).tags, get_decoder("posterior").decode(lat).tags):
            got = scored_chunks(lat, decided)
            assert [(c.type, c.start, c.end) for c in got] == \
                enc.tags_to_chunks(decided, scheme)
            for c in got:
                assert isinstance(c, ScoredChunk) and 0.0 <= c.p <= 1.0
                assert c.p == pytest.approx(want[types.index(c.type), c.start, c.end],
                                            abs=_tol(scores, length))


@pytest.mark.parametrize("scheme,types,n", CASES[:6])
def test_every_valid_sequence_scored_equals_chunk_marginals(scheme, types, n):
    """Every valid sequence of the tag list (not only decisions), against both the
    enumeration and the dense table Lattice.chunk_marginals."""
    rng = np.random.default_rng(3)
    tags = enc.scheme_tags(scheme, types)
    scores = random_scores(rng, len(tags), n)
    lat = Lattice.from_scores(tags, *scores, scheme=scheme)
    seqs, want = _oracle(tags, scheme, types, n, scores)
    dense = lat.chunk_marginals()
    for y, chunks, _ in seqs:
        got = scored_chunks(lat, y)
        assert {(c.type, c.start, c.end) for c in got} == set(chunks)
        for c in got:
            i = lat.space.types.index(c.type)
            assert c.p == pytest.approx(want[types.index(c.type), c.start, c.end], abs=1e-12)
            assert c.p == pytest.approx(dense[i, c.start, c.end], abs=1e-12)


def test_machine_lattice_confidences_equal_score_lattice():
    """A lattice from a machine (states are not tags; tag list shuffled) gives the
    confidences of the same distribution from score arrays."""
    rng = np.random.default_rng(11)
    scheme, types = "IOBES", ("NP", "VP")
    tags = enc.scheme_tags(scheme, types)
    scores = random_scores(rng, len(tags), 6)
    a = Lattice.from_scores(tags, *scores, scheme=scheme)
    ts = TagSet(scheme, types)
    raw = models.score_lattice([ts.label(t) for t in tags], *scores)
    b = Lattice.from_fst(fsa.attach(raw, ts.symbols), list(reversed(tags)), scheme)
    for y in (decode_map(a).tags, decode_meu(a).tags):
        pa, pb = scored_chunks(a, y), scored_chunks(b, y)
        assert [c[:3] for c in pa] == [c[:3] for c in pb]
        np.testing.assert_allclose([c.p for c in pa], [c.p for c in pb], atol=1e-12)


def test_decision_outside_the_model_is_scored():
    """MEU may decide a sequence the model cannot produce (here O, absent from the tag
    list): its chunks are still scored; a chunk no path holds has p = 0."""
    tags = ["B-NP", "I-NP"]
    lat = Lattice.from_scores(tags, np.zeros((3, 2)), np.zeros((2, 2)), scheme="IOB2")
    # uniform over the 4 sequences B (B|I) (B|I): (0, 1) needs y1 = B
    assert scored_chunks(lat, ["B-NP", "O", "O"]) == [ScoredChunk("NP", 0, 1, 0.5)]
    assert scored_chunks(lat, ["O", "O", "O"]) == []
    table = pynini.SymbolTable()
    table.add_symbol("<eps>", 0)
    for t in tags:
        table.add_symbol(t)
    one = pynini.Fst("log64")                 # one path: B-NP I-NP I-NP
    s = [one.add_state() for _ in range(4)]
    one.set_start(s[0])
    one.set_final(s[3])
    for i, t in enumerate(["B-NP", "I-NP", "I-NP"]):
        lab = table.find(t)
        one.add_arc(s[i], pynini.Arc(lab, lab, pynini.Weight.one("log64"), s[i + 1]))
    one.set_input_symbols(table)
    one.set_output_symbols(table)
    lat = Lattice.from_fst(one, tags, "IOB2")
    assert scored_chunks(lat, ["B-NP", "I-NP", "I-NP"]) == [ScoredChunk("NP", 0, 3, 1.0)]
    assert scored_chunks(lat, ["B-NP", "O", "B-NP"]) == [ScoredChunk("NP", 0, 1, 0.0),
                                                         ScoredChunk("NP", 2, 3, 0.0)]


def test_refusals_name_what_and_where():
    tags = enc.scheme_tags("IOB2", ("NP",))
    lat = Lattice.from_scores(tags, np.zeros((3, 3)), np.zeros((3, 3)), scheme="IOB2")
    with pytest.raises(FstchunkError, match="2 tags but the lattice has 3 tokens"):
        scored_chunks(lat, ["O", "O"])
    with pytest.raises(FstchunkError, match="position 1: chunk type 'VP'"):
        scored_chunks(lat, ["O", "B-VP", "O"])
    with pytest.raises(FstchunkError, match="position 1"):
        scored_chunks(lat, ["O", "I-NP", "O"])         # invalid in IOB2
    for bad in (-0.1, 1.5, float("nan"), True, "0.5"):
        with pytest.raises(FstchunkError, match="min_confidence"):
            check_min_confidence(bad)


@pytest.mark.parametrize("decoder", ["map", "posterior", "meu", "meu-kbest", "meu-corpus"])
def test_decode_chunks_is_decoder_then_scored_chunks(decoder):
    rng = np.random.default_rng(5)
    tags = enc.scheme_tags("BILOU", ("A", "B"))
    scores = random_scores(rng, len(tags), 7, 2.0)
    lat = Lattice.from_scores(tags, *scores, scheme="BILOU")
    k = 5 if decoder == "meu-kbest" else None
    got = decode_chunks(lat, decoder, k=k)
    if decoder == "meu-corpus":
        from fstchunk.decoding.decode import decode_meu_corpus
        y = decode_meu_corpus([lat])[0][0]
    else:
        y = get_decoder(decoder, k=k).decode(lat).tags
    assert got == scored_chunks(lat, y)


@pytest.mark.parametrize("scheme", ["IOB1", "IOE1", "IOB2", "IOBES", "BILOU"])
def test_threshold_keeps_a_subset_written_validly(scheme):
    """keep_confident is monotone in the threshold, and the kept chunks written back
    (tags_of) are valid and give exactly those chunks — where IOB1/IOE1 neighbours of
    one type touch, dropping one changes the other's tags."""
    types = ("NP", "VP")
    rng = np.random.default_rng(9)
    tags = enc.scheme_tags(scheme, types)
    for _ in range(20):
        scores = random_scores(rng, len(tags), 8, 1.5)
        lat = Lattice.from_scores(tags, *scores, scheme=scheme)
        chunks = scored_chunks(lat, decode_meu(lat, beta=3.0).tags)
        prev = chunks
        for p in (0.0, 0.2, 0.5, 0.8, 1.0):
            kept = keep_confident(chunks, p)
            assert set(kept) <= set(prev) and all(c.p >= p for c in kept)
            y = tags_of(kept, 8, scheme)
            assert enc.is_valid(y, scheme)
            assert enc.tags_to_chunks(y, scheme) == [c[:3] for c in kept]
            prev = kept


def test_touching_iob1_neighbours_rewritten():
    chunks = [ScoredChunk("NP", 0, 2, 0.3), ScoredChunk("NP", 2, 3, 0.9)]
    assert tags_of(chunks, 3, "IOB1") == ["I-NP", "I-NP", "B-NP"]
    assert tags_of(keep_confident(chunks, 0.5), 3, "IOB1") == ["O", "O", "I-NP"]
    assert tags_of(chunks, 3, "IOE1") == ["I-NP", "E-NP", "I-NP"]
    assert tags_of(keep_confident(chunks, 0.5), 3, "IOE1") == ["O", "O", "I-NP"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CASES), st.integers(1, 4), st.floats(-3, 2),
       st.integers(0, 2**32 - 1))
def test_property_random_sequences(case, n, log_scale, seed):
    scheme, types, _ = case
    rng = np.random.default_rng(seed)
    tags = enc.scheme_tags(scheme, types)
    scores = random_scores(rng, len(tags), n, 10.0 ** log_scale)
    lat = Lattice.from_scores(tags, *scores, scheme=scheme)
    seqs, want = _oracle(tags, scheme, types, n, scores)
    y = seqs[rng.integers(len(seqs))][0]
    for c in scored_chunks(lat, y):
        assert c.p == pytest.approx(want[types.index(c.type), c.start, c.end],
                                    abs=_tol(scores, n))


def test_every_chunking_of_a_tiny_sentence():
    """All sequences of length 3 over IOB2 with one type, each chunk's p summed from
    the enumeration by hand (no oracle module)."""
    tags = ["O", "B-X", "I-X"]
    rng = np.random.default_rng(0)
    e, t = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    lat = Lattice.from_scores(tags, e, t)
    probs = {}
    for y in itertools.product(tags, repeat=3):
        if enc.is_valid(list(y), "IOB2"):
            idx = [tags.index(x) for x in y]
            probs[y] = np.exp(sum(e[i, j] for i, j in enumerate(idx))
                              + sum(t[a, b] for a, b in zip(idx, idx[1:])))
    z = sum(probs.values())
    for y in probs:
        for c in scored_chunks(lat, list(y)):
            want = sum(p for yy, p in probs.items()
                       if ("X", c.start, c.end) in enc.tags_to_chunks(list(yy), "IOB2")) / z
            assert c.p == pytest.approx(want, rel=1e-12)
