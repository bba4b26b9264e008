"""fstchunk.io.gold: invalid gold sequences repaired (as conlleval reads them), skipped or refused
at the offending tag's own line."""

import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.schemes import encodings as enc
from fstchunk.io.conll import Sentence
from fstchunk.core.errors import InputError, SchemeError
from fstchunk.io.gold import check_gold, repair


def sent(tags, first_line=10, source="c.txt"):
    rows = [[f"w{i}", "NN", t] for i, t in enumerate(tags)]
    return Sentence(rows, list(range(first_line, first_line + len(tags))), source)


BAD = sent(["O", "B-PER", "I-LOC", "O"], first_line=20)      # I-LOC after B-PER: line 22
GOOD = sent(["B-LOC", "I-LOC"], first_line=30)


def test_valid_sentences_pass_unchanged():
    rep = check_gold([GOOD], "IOB2")
    assert rep.sentences[0] is GOOD and rep.warning() is None


def test_repair_reads_as_conlleval_and_warns_with_the_tag_line():
    rep = check_gold([BAD, GOOD], "IOB2", on_invalid="repair")
    assert [s.column(-1) for s in rep.sentences] == [["O", "B-PER", "B-LOC", "O"],
                                                     ["B-LOC", "I-LOC"]]
    assert rep.repaired == ["c.txt:22 ('I-LOC')"]
    assert "repaired 1 invalid tag sequence (c.txt:22" in rep.warning()
    assert BAD.column(-1)[2] == "I-LOC"           # the input sentence is not modified
    assert rep.sentences[0].lines == BAD.lines and rep.sentences[0].column(0) == BAD.column(0)


def test_skip_drops_the_sentence():
    rep = check_gold([BAD, GOOD], "IOB2", on_invalid="skip")
    assert rep.sentences == [GOOD] and rep.skipped == ["c.txt:22 ('I-LOC')"]
    assert rep.warning().startswith("skipped 1 invalid")


def test_error_names_the_offending_tags_own_line():
    with pytest.raises(SchemeError, match=r"^c\.txt:22: tag 'I-LOC' cannot stand after 'B-PER'"):
        check_gold([BAD], "IOB2", on_invalid="error")
    start = sent(["I-LOC", "O"], first_line=5)
    with pytest.raises(SchemeError, match=r"^c\.txt:5: tag 'I-LOC' cannot stand at the start"):
        check_gold([start], "IOB2", on_invalid="error")


def test_a_tag_outside_the_scheme_is_never_repaired():
    for mode in ("repair", "skip", "error"):
        with pytest.raises(SchemeError, match=r"^c\.txt:12: tag 'X-LOC' is not a IOB2 tag"):
            check_gold([sent(["O", "O", "X-LOC"])], "IOB2", on_invalid=mode)


def test_bad_mode_and_missing_column():
    with pytest.raises(InputError, match="on_invalid"):
        check_gold([GOOD], on_invalid="fix")
    with pytest.raises(InputError, match="no tag column 5"):
        check_gold([GOOD], column=5)


def test_warning_lists_the_first_three_and_counts_all():
    bad = [sent(["I-X"], first_line=k) for k in range(1, 50, 2)]
    w = check_gold(bad, "IOB2").warning()
    assert w.startswith("repaired 25 invalid tag sequences (c.txt:1 ('I-X'); c.txt:3")
    assert w.endswith("; ...)")


TAGS = st.sampled_from(["O", "B-A", "I-A", "B-B", "I-B", "E-A", "S-B", "E-B", "S-A"])


@settings(max_examples=150, deadline=None)
@given(st.lists(TAGS, min_size=1, max_size=8), st.sampled_from(["IOB1", "IOB2", "IOBES",
                                                              "IOE2", "BILOU"]))
def test_repair_is_valid_and_keeps_conllevals_chunks(tags, scheme):
    """Oracle: the repaired sequence is valid and has exactly the chunks of the lenient
    reading; a valid sequence is its own repair."""
    prefixes = set(enc.scheme_prefixes(scheme)) | {"O"}
    tags = [t for t in tags if enc.split_tag(t)[0] in prefixes] or ["O"]
    fixed = repair(tags, scheme)
    assert enc.is_valid(fixed, scheme)
    assert enc.tags_to_chunks(fixed, scheme) == enc.tags_to_chunks(tags, scheme, strict=False)
    if enc.is_valid(tags, scheme):
        assert fixed == list(tags)
    if scheme == "IOB2":      # the reading conlleval scores: repair does not move its F
        assert enc.conlleval_chunks(fixed) == enc.conlleval_chunks(tags)
