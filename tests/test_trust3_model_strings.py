"""Every list of strings in a model file is saved losslessly (issue 43, item 3): names
were joined by "\\n", so an attribute or word holding a line break (spaCy emits "\\n"
tokens) came back as two names — other predictions after a reload, or a file that
could not be loaded; numpy's string arrays drop a trailing NUL.  Old files (names
joined by "\\n" alone) still load: tests/data/v1, v2 and test_model_files_v1.py."""

from __future__ import annotations

import numpy as np
import pytest

from fstchunk.core.errors import InputError, ModelFileError
from fstchunk.core.stringpack import pack, unpack
from fstchunk.io.conll import Sentence
from fstchunk.models import load_model
from fstchunk.models.crf import CRF
from fstchunk.models.hmm import HMM
from fstchunk.models.io import load_model_file, save_model
from fstchunk.sklearn import CRF as SkCRF

AWKWARD = ["a\nb", "\n", "", "x\n", "\ny", "caf\u00e9", "\udcff", "a\x00", "a", "\r\n"]


@pytest.mark.parametrize("values", [[], [""], ["a"], ["a", "b"], AWKWARD, ["\n", "\n\n"]])
def test_pack_round_trips_any_list_of_strings(values):
    arrays = pack("names", values)
    assert unpack("names", arrays) == values
    assert ("names_lengths" in arrays) == any("\n" in v or not v for v in values)


def test_a_blob_without_lengths_is_split_as_before():
    old = {"names": np.frombuffer("a\nb\nc".encode(), np.uint8)}
    assert unpack("names", old) == ["a", "b", "c"]
    assert unpack("names", {"names": np.zeros(0, np.uint8)}) == []


@pytest.mark.parametrize("lengths,match", [
    (np.array([1, 1]), "do not fit"), (np.array([2]), "do not fit"),
    (np.array([-1, 3]), "byte lengths >= 0"), (np.array([[1]]), "byte lengths")])
def test_lengths_that_do_not_fit_the_blob_are_refused(lengths, match):
    with pytest.raises(InputError, match=match):
        unpack("names", {"names": np.frombuffer(b"a\nb\nc", np.uint8), "names_lengths": lengths})


def _tokens(words):
    return [{"w": w, "bias": 1.0} for w in words]


def test_an_attribute_with_a_line_break_survives_save_and_load(tmp_path):
    """'w:a\\nw:b' was read back as the two attributes 'w:a' and 'w:b', shifting every
    name after it: other predictions after the reload."""
    X = [_tokens(["a\nw:b", "x"]), _tokens(["a", "y"]), _tokens(["w:b", "x"]),
         _tokens(["\n", "y"]), _tokens(["x", "a\nw:b"])]
    y = [["B-X", "O"], ["O", "B-X"], ["B-X", "I-X"], ["O", "O"], ["O", "B-X"]]
    crf = SkCRF(max_iterations=30, c2=0.01).fit(X, y)
    path = tmp_path / "m.npz"
    crf.model_.save(path)
    back = SkCRF(model_filename=str(path))
    assert back.attributes_ == crf.attributes_
    assert back.state_features_ == crf.state_features_
    assert [list(p) for p in back.predict(X)] == [list(p) for p in crf.predict(X)]
    np.testing.assert_array_equal(back.predict_marginals(X)[0][0]["B-X"],
                                  crf.predict_marginals(X)[0][0]["B-X"])


SENTS = [Sentence([["He", "PRP", "B-NP"], ["said", "VBD", "B-VP"], ["\n", "NL", "O"]]),
         Sentence([["a\nb", "NN", "B-NP"], ["ran", "VBD", "B-VP"]]),
         Sentence([["a", "DT", "B-NP"], ["b\x00", "NN", "I-NP"], ["b", "NN", "I-NP"]])]
#: a file name read with surrogateescape: a lone surrogate, which UTF-8 cannot encode
SURROGATE = Sentence([["b", "NN", "B-NP"], ["\udcff", "NN", "I-NP"], ["ran", "VBD", "B-VP"]])


@pytest.mark.parametrize("sents", [SENTS, SENTS + [SURROGATE]], ids=["newline", "surrogate"])
def test_a_crf_on_words_with_line_breaks_saves_a_file_it_loads(tmp_path, sents):
    """fstchunk.CRF with a word holding '\\n' wrote a file it could not load (its
    feature names and its layout's word list split at the line break); a lone
    surrogate could not be written at all."""
    crf = CRF("tmpt1", max_iter=5).fit(sents, progress=False)
    path = tmp_path / "m.npz"
    crf.save(path)
    back = load_model(path)
    assert back.fmap_.names == crf.fmap_.names
    assert back.layout_.vocab["word"] == crf.layout_.vocab["word"]
    np.testing.assert_array_equal(back.theta_, crf.theta_)
    for a, b in zip(back.lattices(sents), crf.lattices(sents)):
        np.testing.assert_array_equal(a.marginals(), b.marginals())


def test_an_hmm_keeps_a_word_that_ends_in_nul(tmp_path):
    """numpy's string arrays drop a trailing NUL: 'b\\x00' came back as 'b', a repeat."""
    hmm = HMM("IOB2", min_count=1).fit(SENTS)
    path = tmp_path / "h.npz"
    hmm.save(path)
    back = load_model(path)
    assert back.vocab_ == hmm.vocab_ and "b\x00" in back.vocab_ and "a\nb" in back.vocab_
    for a, b in zip(back.lattices(SENTS), hmm.lattices(SENTS)):
        np.testing.assert_array_equal(a.marginals(), b.marginals())


def test_bad_lengths_in_a_model_file_name_the_field(tmp_path):
    crf = CRF("tmpt1", max_iter=2).fit(SENTS, progress=False)
    path = tmp_path / "m.npz"
    crf.save(path)
    meta, arrays = load_model_file(path)
    assert "feature_names_lengths" in arrays
    arrays["feature_names_lengths"] = arrays["feature_names_lengths"][::-1].copy()
    meta = {k: v for k, v in meta.items() if k not in ("format", "version", "kind", "checksum")}
    save_model(path, "crf", arrays, meta)
    with pytest.raises(ModelFileError, match=r"field 'feature_names': .*do not fit"):
        load_model(path)
