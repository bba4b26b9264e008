"""Joint data that is invalid or degenerate (issue 16, items 4 and 6): strict IOB2
chunk columns refused at the offending tag's own line, no sentence / no chunk / bad
options refused naming the file or the option, scores of nothing refused."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstchunk.core.errors import InputError, SchemeError
from fstchunk.io.conll import Sentence
from fstchunk.models import joint as J
from fstchunk.schemes import encodings as enc

FILE = "corpus.txt"


def sent(rows, first_line=10):
    return Sentence([list(r) for r in rows], list(range(first_line, first_line + len(rows))),
                    FILE)


GOOD = [sent([("The", "DT", "B-NP"), ("cat", "NN", "I-NP"), ("sat", "VBD", "B-VP")], 1),
        sent([("Dogs", "NNS", "B-NP"), ("run", "VBP", "B-VP"), ("fast", "RB", "O")], 5)]


# ------------------------------------------------------------- invalid tags
def test_invalid_sequence_names_the_tags_own_line():
    """Before: layered() read I-NP after O silently (conlleval's reading). Now: the
    tag's own line, the tag and what it follows."""
    bad = sent([("a", "DT", "B-NP"), ("b", "NN", "O"), ("c", "NN", "I-NP")], first_line=40)
    with pytest.raises(SchemeError, match=r"^corpus.txt:42: tag 'I-NP' cannot stand after "
                                          r"'O' in IOB2") as e:
        J.layered(GOOD + [bad])
    assert e.value.position == 2
    start = sent([("a", "DT", "I-NP")], first_line=7)
    with pytest.raises(SchemeError, match=r"^corpus.txt:7: tag 'I-NP' cannot stand at the "
                                          r"start of a sentence"):
        J.layered([start], collapse=True, np_chunks=True)
    other = sent([("a", "DT", "B-VP"), ("b", "NN", "I-NP")], first_line=3)
    with pytest.raises(SchemeError, match=r"^corpus.txt:4: tag 'I-NP' cannot stand after "
                                          r"'B-VP'"):
        J.layered([other], np_chunks=True)        # checked before the NP-only mapping
    with pytest.raises(SchemeError, match=r"^corpus.txt:11: .*'X-NP' is not a IOB2 tag"):
        J.layered([sent([("a", "DT", "O"), ("b", "NN", "X-NP")])])
    # a sentence read without gold is not checked: decoding needs words and POS only
    assert J.layered([bad], gold=False)[0].chunks is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["O", "B-NP", "I-NP", "B-VP", "I-VP"]), min_size=1,
                max_size=8))
def test_layered_accepts_exactly_the_valid_sequences(tags):
    s = sent([(f"w{i}", "NN", t) for i, t in enumerate(tags)], first_line=100)
    if enc.is_valid(tags, "IOB2"):
        assert J.layered([s])[0].chunks == tags
    else:
        with pytest.raises(SchemeError) as e:
            J.layered([s])
        assert str(e.value).startswith(f"corpus.txt:{100 + e.value.position}: ")


def test_structure_is_strict_too():
    model = J.model_for(J.layered(GOOD), "joint")[0]
    with pytest.raises(SchemeError, match=r"f.txt:3: token 2: tag 'I-NP' cannot stand after "
                                          r"'O'"):
        model.structure(["DT", "NN"], ["O", "I-NP"], "f.txt:3")


# ----------------------------------------------------------- degenerate data
def test_no_training_sentences():
    for kind in J.VARIANTS:
        with pytest.raises(InputError, match="train.txt: no training sentences"):
            J.model_for([], kind, source="train.txt")
    model = J.model_for(J.layered(GOOD), "joint")[0]
    with pytest.raises(InputError, match="no training sentences"):
        model.set_params(algorithm="mmvp").fit([])


def test_no_chunk_is_refused_naming_the_file():
    """Before: a joint model was 'trained' on data without chunks and saved."""
    no_np = [sent([("Dogs", "NNS", "B-VP"), ("run", "VBP", "I-VP")])]
    with pytest.raises(InputError, match=r"corpus.txt: no chunk in 1 training sentence"):
        J.model_for(J.layered(no_np, np_chunks=True), "joint")
    all_o = [sent([("a", "DT", "O"), ("b", "NN", "O")])]
    for kind in ("joint", "chunker"):
        with pytest.raises(InputError, match="corpus.txt: no chunk"):
            J.model_for(J.layered(all_o), kind)
    one_pos = [sent([("a", "X", "B-NP"), ("b", "X", "I-NP")])]
    with pytest.raises(InputError, match="corpus.txt: every training POS tag is 'X'"):
        J.model_for(J.layered(one_pos), "tagger")
    with pytest.raises(InputError, match=r"corpus.txt:10: no chunk tag column"):
        J.model_for(J.layered([sent([("a", "DT"), ("b", "NN")])]), "joint")


@pytest.mark.parametrize("option,value", [("max_iter", 0), ("max_iter", -5),
                                          ("max_iter", 2.5), ("max_iter", True),
                                          ("l2", -1.0), ("l2", float("nan")),
                                          ("l2", float("inf")), ("l2", "0.5")])
def test_bad_training_options(option, value):
    data = J.layered(GOOD)
    model, encoded = J.model_for(data, "joint")
    kw = {"max_iter": 2, "l2": 0.1, option: value}
    with pytest.raises(InputError, match=f"^{option} must be"):
        model.set_params(algorithm="crf", **kw).fit(encoded)
    assert not model.theta_.any()                          # nothing was trained


def test_scores_of_nothing_and_of_mismatched_predictions():
    """Before: scores([], [], []) ended in ZeroDivisionError (joint decode --json)."""
    with pytest.raises(InputError, match="no gold tokens"):
        J.scores([], [], [])
    data = J.layered(GOOD)
    pos, chunks = [d.pos for d in data], [d.chunks for d in data]
    assert J.scores(data, pos, chunks)["np_f1"] == 100.0
    with pytest.raises(InputError, match="2 gold sentences but 1 POS"):
        J.scores(data, pos[:1], chunks)
    with pytest.raises(InputError, match=r"corpus.txt:5: 3 tokens but 3 POS and 2 chunk"):
        J.scores(data, pos, [chunks[0], chunks[1][:2]])
    with pytest.raises(InputError, match="no gold chunk column"):
        J.scores(J.layered([s for s in GOOD], gold=False), pos, chunks)


def test_decoding_reads_words_and_pos_only():
    data = J.layered(GOOD)
    model, encoded = J.model_for(data, "joint")
    model.set_params(algorithm="perceptron", max_iter=3).fit(encoded)
    two = [Sentence([r[:2] for r in s.rows], s.lines, s.source) for s in GOOD]
    assert J.predict(model, J.layered(two)) == J.predict(model, data)
    tagger, enc_t = J.model_for(data, "tagger")
    tagger.set_params(algorithm="perceptron", max_iter=2).fit(enc_t)
    pos, chunks = J.predict(tagger, J.layered(two))
    assert chunks == [["_"] * 3, ["_"] * 3]       # a tagger predicts no chunks
    assert np.all([len(p) == 3 for p in pos])
