"""A string is never read as a sequence of tags (issue 43, item 1): ``evaluate`` reads a
flat list of tags as one sentence, as seqeval does, and every function that takes a
sentence's tags refuses one string instead of scoring its characters."""

from __future__ import annotations

import io

import numpy as np
import pytest

import fstchunk
from fstchunk.schemes import encodings as enc
from fstchunk.io.conll import Sentence, read_conll, write_conll
from fstchunk.core.errors import InputError
from fstchunk.decoding.expected import expected_f
from fstchunk.decoding.confidence import scored_chunks
from fstchunk.structures.lattice import Lattice
from fstchunk.decoding.lossaug import decode_loss_augmented
from fstchunk.models.scorefile import save_scores
from fstchunk.schemes.tagspace import TagSet, TagSpace


def test_a_flat_list_of_tags_is_one_sentence_as_in_seqeval():
    """seqeval's get_entities reads a flat list as one sequence (its metrics refuse it)."""
    from seqeval.metrics import f1_score
    from seqeval.metrics.sequence_labeling import get_entities
    gold, pred = ["B-PER", "I-PER", "O", "B-LOC"], ["B-LOC", "I-LOC", "O", "B-LOC"]
    flat = fstchunk.evaluate(gold, pred)
    nested = fstchunk.evaluate([gold], [pred])
    assert flat.overall.f == nested.overall.f == pytest.approx(100 * f1_score([gold], [pred]))
    correct = set(get_entities(gold)) & set(get_entities(pred))
    assert (flat.overall.correct, flat.overall.found, flat.overall.gold) == (
        len(correct), len(get_entities(pred)), len(get_entities(gold))) == (1, 2, 2)
    assert flat.sentences == 1 and flat.tokens == 4
    # the case: each tag string used to be scored as a sentence of characters
    assert fstchunk.evaluate(["B-PER", "I-PER", "O"], ["B-LOC", "I-LOC", "O"]).overall.f == 0


@pytest.mark.parametrize("gold,pred,what", [
    ("B-PER", "B-PER", r"gold is the string 'B-PER'"),
    ([["B-PER"]], "B-PER", r"pred is the string 'B-PER'"),
    ([["B-PER"], "O"], [["B-PER"], ["O"]], r"gold\[1\] is the string 'O' among sentences"),
    (["B-PER", "O"], [["B-PER", "O"]], None),          # one sentence either way
])
def test_evaluate_refuses_strings_where_sentences_belong(gold, pred, what):
    if what is None:
        assert fstchunk.evaluate(gold, pred).overall.f == 100
        return
    with pytest.raises(InputError, match=what):
        fstchunk.evaluate(gold, pred)


@pytest.mark.parametrize("call", [
    lambda: enc.tags_to_chunks("OOO", "IOB2"),
    lambda: enc.tags_to_chunks("B-PER", "IOB2", strict=False),
    lambda: enc.conlleval_chunks("B-PER"),
    lambda: enc.is_valid("BIO", "IOB2"),
    lambda: enc.validate("BIO", "IOB2"),
    lambda: enc.convert("BIO", "IOB2", "IOBES"),
    lambda: enc.chunk_types("B-X"),
    lambda: TagSpace.of("O", "IOB2"),
    lambda: TagSpace.of("O", None),
    lambda: TagSet.from_tags("B-X", "IOB2"),
    lambda: Lattice.from_scores("O", np.zeros((2, 1)), np.zeros((1, 1))),
], ids=["tags_to_chunks", "lenient", "conlleval_chunks", "is_valid", "validate", "convert",
        "chunk_types", "TagSpace", "unconstrained", "TagSet", "from_scores"])
def test_tag_functions_refuse_one_string(call):
    with pytest.raises(InputError, match="is the string"):
        call()


def _lattice() -> Lattice:
    tags = ["O", "B-X", "I-X"]
    rng = np.random.default_rng(0)
    return Lattice.from_scores(tags, rng.normal(size=(3, 3)), rng.normal(size=(3, 3)),
                               scheme="IOB2")


@pytest.mark.parametrize("call", [
    lambda lat: expected_f(lat, reference="OOO"),
    lambda lat: expected_f(lat, hypothesis="OOO", method="fast"),
    lambda lat: lat.log_prob("OOO"),
    lambda lat: scored_chunks(lat, "OOO"),
    lambda lat: decode_loss_augmented(lat, "OOO"),
], ids=["reference", "hypothesis", "log_prob", "scored_chunks", "loss_augmented"])
def test_a_lattice_refuses_a_string_of_its_length(call):
    """'OOO' has the lattice's length: read as characters it would be three O tags."""
    with pytest.raises(InputError, match="string 'OOO'|not a string"):
        call(_lattice())


def test_the_sklearn_tagger_refuses_a_string_label_sequence():
    from fstchunk.sklearn import CRF
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}]]
    crf = CRF(max_iterations=3).fit(X, [["B-X", "I-X"], ["O"]])
    tagger = crf.tagger_
    tagger.set(X[0])
    with pytest.raises(InputError, match="yseq is the string"):
        tagger.probability("OO")
    assert 0 < tagger.probability(["B-X", "I-X"]) <= 1


def test_save_scores_refuses_a_string_tag_list(tmp_path):
    with pytest.raises(InputError, match="the tag list is the string 'O'"):
        save_scores(tmp_path / "s.npz", "O", [np.zeros((2, 1))], np.zeros((1, 1)))
    assert not (tmp_path / "s.npz").exists()


@pytest.mark.parametrize("sentences,what", [
    (["He B-NP"], r"sentence 0 is the string"),
    ([["He B-NP", "ran B-VP"]], r"sentence 0, row 0: 'He B-NP' cannot be a CoNLL line"),
    ([[["He", "B-NP"], ["New York", "I-NP"]]], r"sentence 0, row 1: .*New York"),
    ([[["He", ""]]], r"sentence 0, row 0"),
    ([[["a\nb", "O"]]], r"sentence 0, row 0"),
    ([Sentence([["a", "O"]]), Sentence([["x", "B\tNP"]])], r"sentence 1, row 0"),
])
def test_write_conll_refuses_what_the_file_cannot_hold(sentences, what):
    """A row given as one string was written one character per column; a cell with a
    space or a line break reads back as other columns or lines."""
    with pytest.raises(InputError, match=what):
        write_conll(sentences, io.StringIO())
    out = io.StringIO()
    write_conll([[["He", "B-NP"], ["ran", "B-VP"]]], out)
    assert out.getvalue() == "He B-NP\nran B-VP\n\n"


def test_a_tab_delimited_file_holds_spaces_inside_a_cell():
    out = io.StringIO()
    write_conll([[["New York", "B-LOC"]]], out, "\t")
    assert read_conll(io.StringIO(out.getvalue()), delimiter="\t")[0].rows == [
        ["New York", "B-LOC"]]
    for cell in (" York", "New\tYork", "a\nb"):
        with pytest.raises(InputError, match="sentence 0, row 0"):
            write_conll([[[cell, "B-LOC"]]], io.StringIO(), "\t")
