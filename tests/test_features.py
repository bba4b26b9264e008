import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstchunk.io.columns import Columns
from fstchunk.io.conll import Sentence
from fstchunk.core.errors import InputError
from fstchunk.models.features import (TEMPLATES, FeatureMap, feature_kinds, reads_pos,
                                      resolve_template, template_of, token_features)

WORDS = ["He", "reckons", "the", "deficit"]
POS = ["PRP", "VBZ", "DT", "NN"]


def test_tmpt3_features_of_a_token():
    f = token_features(WORDS, POS, "tmpt3")[1]
    assert "b" in f
    assert "W0=reckons" in f and "W-2=__BOS-1__" in f and "W+2=deficit" in f
    assert "P-1P0P+1W0=PRP|VBZ|DT|reckons" in f
    assert "W-1W0=He|reckons" in f and "P0W-1W0=VBZ|He|reckons" in f
    assert len(f) == len(template_of("tmpt3").lines)          # the bias is a line too
    assert len(token_features(WORDS, POS, "tmpt4")[0]) == len(template_of("tmpt4").lines)
    assert len(template_of("tmpt1").lines) == 1 + 10 + 11
    assert len(template_of("tmpt2").lines) == 1 + 24


def test_ner_features():
    f = token_features(["De", "Verwilghen", "."], ["Art", "N", "Punc"], "ner")
    assert "first" in f[0] and "first" not in f[1]
    assert "w0=verwilghen" in f[1] and "s0=Xx" in f[1] and "suf4=ghen" in f[1]
    assert "pre1=V" in f[1] and "p+1=Punc" in f[1]


def test_feature_map_fit_transform_and_arrays():
    s = [Sentence([[w, p, "O"] for w, p in zip(WORDS, POS)])]
    fm = FeatureMap.fit(s, "tmpt1")
    X = fm.transform(s)
    assert X.shape == (4, len(fm)) and X.sum(axis=1).tolist() == [[22]] * 4
    back = FeatureMap.from_arrays(fm.to_arrays(), {"template": "tmpt1"})
    assert back.names == fm.names
    unseen = fm.transform([Sentence([["Zork", "NN", "O"]])])
    assert unseen.sum() >= 1          # at least the bias
    with pytest.raises(InputError, match="unknown feature template"):
        token_features(WORDS, POS, "tmpt5")
    with pytest.raises(InputError, match="unknown feature template"):
        FeatureMap("tmpt5", [])
    with pytest.raises(InputError, match=r"f.txt:3: feature template tmpt1 reads the POS "
                                         r"from column 2, but the line has 1 column; .*"
                                         r"--columns word,tag"):
        fm.transform([Sentence([["x"]], [3], "f.txt")])


def test_every_template_has_a_pos_free_variant():
    assert set(TEMPLATES) == {f"{t}{v}" for t in ("tmpt1", "tmpt2", "tmpt3", "tmpt4", "ner")
                              for v in ("", "-nopos")}
    for t in TEMPLATES:
        assert reads_pos(t) == (not t.endswith("-nopos"))
        pos_kinds = [k for k in feature_kinds(t) if "P" in k or re.match(r"p[-+0]", k)]
        assert bool(pos_kinds) == reads_pos(t), (t, pos_kinds)


def test_pos_free_features_read_words_shapes_and_affixes_only():
    f = token_features(WORDS, None, "tmpt3-nopos")[1]
    assert "W0=reckons" in f and "S0=x" in f and "S-1=Xx" in f
    assert "S-1S0S+1W0=Xx|x|x|reckons" in f and "S0W-1W0=x|He|reckons" in f
    assert "pre3=rec" in f and "suf4=kons" in f and "suf1=s" in f
    assert not any(x.startswith("P") for x in f)
    assert len(f) == len(template_of("tmpt3-nopos").lines)
    assert len(f) == len(template_of("tmpt3").lines) + 8
    # a -nopos template never reads POS, even when given
    assert token_features(WORDS, POS, "tmpt2-nopos") == token_features(WORDS, None, "tmpt2-nopos")
    g = token_features(["De", "Verwilghen", "."], None, "ner-nopos")[1]
    assert "s-2=__PAD__-1" in g and "s+1=." in g and not any(x.startswith("p") and
                                                              not x.startswith("pre") for x in g)
    with pytest.raises(InputError, match="reads POS tags, but there is no POS column; use "
                                         "tmpt3-nopos"):
        token_features(WORDS, None, "tmpt3")
    with pytest.raises(InputError, match="no POS column; use ner-nopos"):
        FeatureMap("ner", [], 0, None)


def test_resolve_template():
    word_tag = Columns.parse("word,tag")
    assert resolve_template("tmpt3", word_tag) == "tmpt3-nopos"
    assert resolve_template("ner", word_tag) == "ner-nopos"
    assert resolve_template("tmpt3", Columns()) == "tmpt3"
    assert resolve_template("tmpt1-nopos", Columns()) == "tmpt1-nopos"
    with pytest.raises(InputError, match="unknown feature template 'tmpt9'"):
        resolve_template("tmpt9", Columns())


def test_features_never_read_the_tag_column():
    """Issue 16, item 1: on a word/tag file the features of a POS-free map are the
    same whatever the tag column holds (the gold tags cannot leak into them)."""
    gold = Sentence([["He", "B-NP"], ["reckons", "B-VP"], ["the", "B-NP"]], [1, 2, 3], "w.txt")
    blind = Sentence([[w, "O"] for w, _ in gold.rows], [1, 2, 3], "w.txt")
    fm = FeatureMap.fit([gold], "tmpt3-nopos", word_col=0, pos_col=None)
    assert (fm.transform([gold]) != fm.transform([blind])).nnz == 0
    assert not any("B-NP" in n or "B-VP" in n for n in fm.names)
    # a POS map reading the same column would see the tags: that is what Columns refuses
    leaky = FeatureMap.fit([gold], "tmpt3", word_col=0, pos_col=1)
    assert any("B-VP" in n for n in leaky.names)


@given(st.lists(st.text(min_size=1, max_size=8).filter(lambda w: not any(c.isspace() for c in w)),
                min_size=1, max_size=6), st.sampled_from(sorted(TEMPLATES)))
def test_feature_kinds_cover_every_feature(words, template):
    pos = ["NN"] * len(words) if reads_pos(template) else None
    kinds = feature_kinds(template)
    for token in token_features(words, pos, template):
        assert {f.split("=", 1)[0] for f in token} <= kinds
