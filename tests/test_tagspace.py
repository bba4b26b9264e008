"""The tag space: its compiled tables equal the scheme's pure-function rules."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.schemes import encodings as enc
from fstchunk.core.errors import InputError, SchemeError
from fstchunk.schemes.tagspace import TagSet, TagSpace

TYPINGS = [("NP", "VP"), ("",), ("LOC",)]


@settings(max_examples=40, deadline=None)
@given(scheme=st.sampled_from(enc.SCHEMES), types=st.sampled_from(TYPINGS), data=st.data())
def test_tables_equal_the_scheme_rules(scheme, types, data):
    full = enc.scheme_tags(scheme, types)
    tags = tuple(data.draw(st.permutations(full)))        # any column order
    ts = TagSpace.of(tags, scheme)
    for i, p in enumerate(tags):
        assert ts.start_ok[i] == enc.allowed(scheme, None, p)
        assert ts.end_ok[i] == enc.allowed(scheme, p, None)
        for j, c in enumerate(tags):
            assert ts.trans_ok[i, j] == enc.allowed(scheme, p, c)
            cont = enc.continues(scheme, p, c)
            assert ts.cont[i, j] == cont
            assert ts.opens[i, j] == (c != "O" and not cont)
            assert ts.closes[i, j] == (p != "O" and not cont)
        assert ts.opens[len(tags), i] == (p != "O")         # row L: the sentence start
        want = -1 if p == "O" else ts.types.index(enc.split_tag(p)[1])
        assert ts.type_index[i] == want
        assert ts.symbols.find(ts.labels[i]) == p and ts.index(p) == i


@settings(max_examples=30, deadline=None)
@given(scheme=st.sampled_from(enc.SCHEMES), types=st.sampled_from(TYPINGS),
       n=st.integers(1, 5), data=st.data())
def test_boundary_tables_read_chunks_like_the_encodings(scheme, types, n, data):
    """Chunk starts and ends read off opens/closes on a random valid sequence are
    the chunks of :func:`fstchunk.schemes.encodings.tags_to_chunks`."""
    ts = TagSet(scheme, types)
    chunks, pos = [], 0
    while pos < n:
        if data.draw(st.booleans()):
            e = data.draw(st.integers(pos + 1, n))
            chunks.append((data.draw(st.sampled_from(types)), pos, e))
            pos = e
        else:
            pos += 1
    y = enc.chunks_to_tags(chunks, n, scheme)
    idx = [ts.index(t) for t in y]
    prev = [len(ts)] + idx[:-1]
    starts = [i for i in range(n) if ts.opens[prev[i], idx[i]]]
    ends = [i + 1 for i in range(n) if (i + 1 < n and ts.closes[idx[i], idx[i + 1]])
            or (i + 1 == n and idx[i] != ts.index("O"))]
    assert starts == [s for _, s, _ in chunks] and ends == [e for _, _, e in chunks]


def test_cached_equal_and_errors():
    a = TagSpace.of(("O", "B-NP", "I-NP"), "IOB2")
    assert TagSpace.of(("O", "B-NP", "I-NP"), "iob2") is not None
    assert a == TagSet("IOB2", ["NP"]) and hash(a) == hash(TagSet("IOB2", "NP"))
    assert TagSet.from_tags(["B-VP", "O"], "IOB2").tags == ("O", "B-VP", "I-VP")
    assert not a.start_ok.flags.writeable
    with pytest.raises(SchemeError, match="tag 'I-VP' is not among"):
        a.index("I-VP", "position 3")
    with pytest.raises(InputError, match="repeats"):
        TagSpace(("O", "O"), "IOB2")
    with pytest.raises(InputError, match="empty"):
        TagSpace((), "IOB2")
    with pytest.raises(SchemeError):
        TagSpace(("O", "E-NP"), "IOB2")
    with pytest.raises(SchemeError):
        TagSpace(("O",), "IOB9")
    assert np.all(TagSpace.of(("O",), "IOB2").type_index == -1)
