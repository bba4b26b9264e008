import pytest

from fstchunk.conll import Sentence
from fstchunk.errors import InputError
from fstchunk.models.features import TEMPLATES, FeatureMap, token_features

WORDS = ["He", "reckons", "the", "deficit"]
POS = ["PRP", "VBZ", "DT", "NN"]


def test_tmpt3_features_of_a_token():
    f = token_features(WORDS, POS, "tmpt3")[1]
    assert "b" in f
    assert "W0=reckons" in f and "W-2=__BOS-1__" in f and "W+2=deficit" in f
    assert "P-1P0P+1W0=PRP|VBZ|DT|reckons" in f
    assert "W-1W0=He|reckons" in f and "P0W-1W0=VBZ|He|reckons" in f
    assert len(f) == 1 + len(TEMPLATES["tmpt3"])
    assert len(token_features(WORDS, POS, "tmpt4")[0]) == 1 + len(TEMPLATES["tmpt4"])
    assert len(TEMPLATES["tmpt1"]) == 10 + 11 and len(TEMPLATES["tmpt2"]) == 24


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
    with pytest.raises(InputError, match="f.txt:3: features read columns 0 .word. and 1"):
        fm.transform([Sentence([["x"]], [3], "f.txt")])
