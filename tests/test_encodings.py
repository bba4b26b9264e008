import itertools
import random

import pytest

import fstchunk
from fstchunk.schemes import encodings as enc
from oracles import all_chunkings

TYPED = ("NP", "VP")
UNTYPED = ("",)


def valid_set(scheme, n, types):
    return {tuple(fstchunk.chunks_to_tags(c, n, scheme)) for c in all_chunkings(n, types)}


def test_schemes_and_aliases():
    assert fstchunk.SCHEMES == ("IOB1", "IOB2", "IOE1", "IOE2", "IOBES", "BILOU",
                                "IOBES2", "IOBES3")
    assert enc.canonical_scheme("bioes") == "IOBES"
    assert enc.scheme_tags("BILOU", ["NP"]) == ("O", "B-NP", "I-NP", "L-NP", "U-NP")
    with pytest.raises(ValueError, match="unknown chunk scheme 'IOX'"):
        fstchunk.tags_to_chunks(["O"], "IOX")


# Tang et al. Table 1 (chunks of "He reckons the current account deficit will narrow
# to only # 1.8 billion in September ."), with the chunk types the CoNLL data give.
TABLE1_CHUNKS = [("NP", 0, 1), ("VP", 1, 2), ("NP", 2, 6), ("VP", 6, 8), ("PP", 8, 9),
                 ("NP", 9, 12), ("PP", 12, 13), ("NP", 13, 15)]
TABLE1 = {
    "IOBES2": "S-NP S-VP B-NP B2-NP B3-NP E-NP B-VP E-VP S-PP B-NP B2-NP E-NP S-PP B-NP E-NP O",
    "IOBES3": "S-NP S-VP B-NP E3-NP E2-NP E-NP B-VP E-VP S-PP B-NP E2-NP E-NP S-PP B-NP E-NP O",
    "IOB2": "B-NP B-VP B-NP I-NP I-NP I-NP B-VP I-VP B-PP B-NP I-NP I-NP B-PP B-NP I-NP O",
    "IOE2": "E-NP E-VP I-NP I-NP I-NP E-NP I-VP E-VP E-PP I-NP I-NP E-NP E-PP I-NP E-NP O",
    # CoNLL convention (not the table's): B/E only between chunks of one type.
    "IOB1": "I-NP I-VP I-NP I-NP I-NP I-NP I-VP I-VP I-PP I-NP I-NP I-NP I-PP I-NP I-NP O",
    "IOE1": "I-NP I-VP I-NP I-NP I-NP I-NP I-VP I-VP I-PP I-NP I-NP I-NP I-PP I-NP I-NP O",
}


@pytest.mark.parametrize("scheme", sorted(TABLE1))
def test_table1_examples(scheme):
    assert " ".join(fstchunk.chunks_to_tags(TABLE1_CHUNKS, 16, scheme)) == TABLE1[scheme]
    assert fstchunk.tags_to_chunks(TABLE1[scheme].split(), scheme) == TABLE1_CHUNKS


def test_iob1_ioe1_same_type_neighbours():
    chunks = [("NP", 0, 2), ("NP", 2, 3), ("VP", 3, 4), ("VP", 4, 6)]
    assert fstchunk.chunks_to_tags(chunks, 6, "IOB1") == \
        ["I-NP", "I-NP", "B-NP", "I-VP", "B-VP", "I-VP"]
    assert fstchunk.chunks_to_tags(chunks, 6, "IOE1") == \
        ["I-NP", "E-NP", "I-NP", "E-VP", "I-VP", "I-VP"]


def test_iobes2_iobes3_long_chunks():
    for k, b2, b3 in [(5, "B B2 B3 I E", "B I E3 E2 E"), (6, "B B2 B3 I I E", "B I I E3 E2 E")]:
        assert " ".join(fstchunk.chunks_to_tags([("", 0, k)], k, "IOBES2")) == b2
        assert " ".join(fstchunk.chunks_to_tags([("", 0, k)], k, "IOBES3")) == b3


@pytest.mark.parametrize("scheme", enc.SCHEMES)
@pytest.mark.parametrize("types", [UNTYPED, TYPED], ids=["untyped", "typed"])
def test_is_valid_equals_image_of_all_chunkings(scheme, types):
    """is_valid accepts exactly the encodings of chunkings, over ALL tag sequences."""
    tags = enc.scheme_tags(scheme, types)
    rng = random.Random(f"{scheme}{len(types)}")
    for n in range(1, 7):
        valid = valid_set(scheme, n, types)
        assert len(valid) == len(all_chunkings(n, types))   # encoding is injective
        if len(tags) ** n <= 600_000:           # every sequence
            got = {seq for seq in itertools.product(tags, repeat=n)
                   if fstchunk.is_valid(seq, scheme)}
            assert got == valid, (scheme, n)
        else:                                   # (13^6 = 4.8M): every valid one, 300k others
            assert all(fstchunk.is_valid(seq, scheme) for seq in valid)
            for _ in range(300_000):
                seq = tuple(rng.choice(tags) for _ in range(n))
                assert fstchunk.is_valid(seq, scheme) == (seq in valid), (scheme, seq)


@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_round_trips(scheme):
    for n in range(1, 7):
        for c in all_chunkings(n, TYPED):
            tags = fstchunk.chunks_to_tags(c, n, scheme)
            assert fstchunk.tags_to_chunks(tags, scheme) == list(c)
            assert fstchunk.tags_to_chunks(tags, scheme, strict=False) == list(c)


@pytest.mark.parametrize("source", enc.SCHEMES)
def test_convert_preserves_chunks(source):
    for n in range(1, 6):
        for c in all_chunkings(n, TYPED):
            tags = fstchunk.chunks_to_tags(c, n, source)
            for target in enc.SCHEMES:
                out = fstchunk.convert(tags, source, target)
                assert fstchunk.tags_to_chunks(out, target) == list(c)


@pytest.mark.parametrize("tags,scheme,pos,tag", [
    (["O", "I-NP"], "IOB2", 1, "I-NP"),
    (["B-NP", "I-VP"], "IOB2", 1, "I-VP"),
    (["O", "B-NP"], "IOB1", 1, "B-NP"),
    (["I-VP", "B-NP"], "IOB1", 1, "B-NP"),
    (["B-NP", "O"], "IOBES", 1, "O"),
    (["B", "B2", "I", "E"], "IOBES2", 2, "I"),
    (["B", "E3", "E"], "IOBES3", 2, "E"),
])
def test_invalid_sequences_name_position_and_tag(tags, scheme, pos, tag):
    assert not fstchunk.is_valid(tags, scheme)
    with pytest.raises(ValueError, match=rf"position {pos}: tag '{tag}'"):
        fstchunk.tags_to_chunks(tags, scheme)


@pytest.mark.parametrize("tags,scheme,pos", [(["I-NP"], "IOE2", 0), (["E-NP"], "IOE1", 0),
                                             (["B"], "IOBES", 0)])
def test_invalid_endings(tags, scheme, pos):
    with pytest.raises(ValueError, match=rf"position {pos}: a {scheme} sequence cannot end"):
        fstchunk.tags_to_chunks(tags, scheme)


def test_bad_input():
    with pytest.raises(ValueError, match="empty tag sequence"):
        fstchunk.tags_to_chunks([], "IOB2")
    with pytest.raises(ValueError, match="position 1: tag 'X-NP' is not a IOB2 tag"):
        fstchunk.tags_to_chunks(["O", "X-NP"], "IOB2")
    with pytest.raises(ValueError, match="position 0: tag 'S-NP' is not a IOB2 tag"):
        fstchunk.tags_to_chunks(["S-NP"], "IOB2", strict=False)
    with pytest.raises(ValueError, match="overlaps"):
        fstchunk.chunks_to_tags([("NP", 0, 2), ("NP", 1, 3)], 3, "IOB2")
    with pytest.raises(ValueError, match="out of range"):
        fstchunk.chunks_to_tags([("NP", 2, 4)], 3, "IOB2")


def test_lenient_reading_is_conlleval():
    """I-X after O or after another type starts a chunk; a type change ends one."""
    tags = ["I-NP", "I-NP", "I-VP", "O", "I-NP", "B-NP", "B-VP", "I-NP"]
    assert fstchunk.tags_to_chunks(tags, "IOB2", strict=False) == [
        ("NP", 0, 2), ("VP", 2, 3), ("NP", 4, 5), ("NP", 5, 6), ("VP", 6, 7), ("NP", 7, 8)]
    # conlleval.pl quirk: E-X B-X continues one chunk; the IOBES reading splits it
    assert fstchunk.conlleval_chunks(["B-NP", "E-NP", "B-NP", "E-NP"]) == [("NP", 0, 4)]
    assert fstchunk.tags_to_chunks(["B-NP", "E-NP", "B-NP", "E-NP"], "IOBES",
                                   strict=False) == [("NP", 0, 2), ("NP", 2, 4)]


def test_lenient_equals_strict_on_valid_random_long():
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 30)
        c = rng.choice(all_chunkings(min(n, 6), TYPED))
        for scheme in enc.SCHEMES:
            tags = fstchunk.chunks_to_tags(c, n, scheme)
            assert fstchunk.tags_to_chunks(tags, scheme, strict=False) == list(c)


def test_conll2000_train_matches_seqeval_and_survives_conversion(corpus):
    from seqeval.metrics.sequence_labeling import get_entities
    from fstchunk.io.conll import read_conll
    sents = read_conll(corpus("conll2000", "train.txt"))
    assert len(sents) == 8936
    for s in sents:
        tags = s.column(-1)
        chunks = fstchunk.tags_to_chunks(tags, "IOB2")
        assert chunks == [(t, b, e + 1) for t, b, e in get_entities(tags)]
        for scheme in enc.SCHEMES:
            other = fstchunk.convert(tags, "IOB2", scheme)
            assert fstchunk.is_valid(other, scheme)
            assert fstchunk.convert(other, scheme, "IOB2") == tags
