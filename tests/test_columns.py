"""fstchunk.io.columns: naming the word, POS and tag columns of a CoNLL file."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstchunk.core.errors import FstchunkError, InputError
from fstchunk.io.columns import Columns


@pytest.mark.parametrize("spec, want", [
    ("word,pos,tag", Columns(0, 1, 2)),
    ("word,tag", Columns(0, None, 1)),
    ("word,_,pos,tag", Columns(0, 2, 3)),
    ("word,pos,_,tag", Columns(0, 1, 3)),
    (" Word , TAG ", Columns(0, None, 1)),
    ("_,word,pos", Columns(1, 2, None)),
    ("word=0,pos=1,tag=-1", Columns()),
    ("tag=-1,word=2", Columns(2, None, -1)),
])
def test_parse(spec, want):
    assert Columns.parse(spec) == want


@pytest.mark.parametrize("spec, match", [
    ("word,lemma,tag", "unknown column name 'lemma'"),
    ("pos,tag", "no word column"),
    ("word,word,tag", "word is named twice"),
    ("word,pos,tag,tag", "tag is named twice"),
    ("", "unknown column name"),
    ("word=0,pos=x", "needs an integer index"),
    ("word=0,tag=0", "word and tag are the same column"),
])
def test_parse_errors_name_the_spec(spec, match):
    with pytest.raises(InputError, match=match) as e:
        Columns.parse(spec)
    assert repr(spec) in str(e.value)


def test_constructor_checks_types():
    with pytest.raises(InputError, match="word column must be an integer"):
        Columns(word="0")
    with pytest.raises(InputError, match="pos column must be an integer or none"):
        Columns(pos=True)
    with pytest.raises(InputError, match="pos and tag are the same column"):
        Columns(0, 2, 2)


def test_default_columns_refuse_a_word_tag_file():
    """The gold-tag leak of issue 16, item 1: under the default columns a two-column
    (word, tag) file would have its tags read as POS; resolve refuses it, naming the
    line and the fix."""
    with pytest.raises(InputError, match=r"train.txt:1: the pos column would be the tag "
                                         r"column .*use --columns word,tag"):
        Columns().resolve(2, "train.txt:1")
    assert Columns.parse("word,tag").resolve(2, "train.txt:1") == Columns(0, None, 1)
    assert Columns().resolve(3, "x:1") == Columns(0, 1, 2)
    assert Columns().resolve(4, "x:1") == Columns(0, 1, 3)


def test_resolve_out_of_range_and_decoding_without_gold():
    with pytest.raises(InputError, match=r"f.txt:4: --columns word,pos,tag reads the tag "
                                         r"from column 3, but the line has 2 columns"):
        Columns.parse("word,pos,tag").resolve(2, "f.txt:4")
    with pytest.raises(InputError, match=r"reads the pos from column 2, but the line has 1 "
                                         r"column \(a file without POS tags: --columns word,tag"):
        Columns().resolve(1, "f.txt:1")
    # decoding: the tag column may be absent (out of range, or on a feature column)
    assert Columns.parse("word,pos,tag").resolve(2, "f:1", need_tag=False) == Columns(0, 1, None)
    assert Columns().resolve(2, "f:1", need_tag=False) == Columns(0, 1, None)
    assert Columns().resolve(3, "f:1", need_tag=False) == Columns(0, 1, 2)
    with pytest.raises(InputError, match="names no tag column, and gold tags are needed"):
        Columns.parse("word,pos").resolve(2, "f:1")


def test_require_names_the_reader_and_the_line():
    cols = Columns(0, 1, 2)
    cols.require(2, "f:1", "the HMM")
    with pytest.raises(InputError, match=r"f:9: the HMM reads the POS from column 2, but "
                                         r"the line has 1 column; .*--columns word,tag"):
        cols.require(1, "f:9", "the HMM")


def test_json_round_trip_and_validation():
    for cols in (Columns(), Columns(0, None, 1), Columns(3, 1, None)):
        assert Columns.from_json(cols.to_json()) == cols
    for bad in ({"word": 0, "pos": 1}, {"word": 0, "pos": 1, "tag": 2, "x": 3},
                {"word": "0", "pos": 1, "tag": 2}, {"word": 0, "pos": 0, "tag": 2},
                {"word": False, "pos": 1, "tag": 2}, [0, 1, 2], None):
        with pytest.raises(InputError):
            Columns.from_json(bad)


def test_spec_is_the_inverse_of_parse():
    assert Columns().spec() == "word=0,pos=1,tag=-1"
    assert Columns(0, None, 1).spec() == "word,tag"
    assert Columns(0, 2, 3).spec() == "word,_,pos,tag"
    assert str(Columns(0, 1, 2)) == "word,pos,tag"


indices = st.integers(-6, 6)


@st.composite
def columns(draw):
    word = draw(indices)
    pos = draw(st.none() | indices.filter(lambda v: v != word))
    tag = draw(st.none() | indices.filter(lambda v: v not in (word, pos)))
    return Columns(word, pos, tag)


@given(columns())
def test_spec_round_trips(cols):
    assert Columns.parse(cols.spec()) == cols
    assert Columns.from_json(cols.to_json()) == cols


@given(columns(), st.integers(1, 6), st.booleans())
def test_resolve_gives_distinct_columns_in_range_or_one_error(cols, ncols, need_tag):
    try:
        r = cols.resolve(ncols, "f:1", need_tag)
    except FstchunkError as e:
        assert isinstance(e, InputError) and str(e).startswith("f:1: ")
        return
    named = [v for v in (r.word, r.pos, r.tag) if v is not None]
    assert all(0 <= v < ncols for v in named) and len(set(named)) == len(named)
    assert r.tag is not None or not need_tag
    assert r.resolve(ncols, "f:1", need_tag) == r


@given(st.text(max_size=30))
def test_parse_any_text_is_columns_or_one_error(text):
    try:
        cols = Columns.parse(text)
    except InputError as e:
        assert repr(text) in str(e)
    else:
        assert isinstance(cols, Columns)
