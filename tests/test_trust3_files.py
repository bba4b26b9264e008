"""Issue 43, items 12, 13, 16 and 17: what files say is read as they say it — an indented
template line is refused at file:line as CRF++ refuses it (it was skipped "as CRF++
does"), a template file with a UTF-8 byte-order mark is read, ``#annotated:`` declares
in any spacing, and ``segment eval``'s overlapping row counts one population (its P
and R the same true positives), checked against a hand count."""

import pytest

from fstchunk.cli import main
from fstchunk.core.errors import InputError
from fstchunk.evaluation.segments import score_segments
from fstchunk.io.annotation import read_partial
from fstchunk.io.conll import read_conll, write_conll
from fstchunk.io.segments import Segment
from fstchunk.models.crf import CRF
from fstchunk.models.io import load_model_file, save_model
from fstchunk.models.templates import parse_template, read_template

TEMPLATE = "# words\nU00:%x[-1,0]\nU01:%x[0,0]\nB\n"


@pytest.mark.parametrize("line", [" U02:%x[1,0]", "\tU02:%x[1,0]", "  # an indented comment",
                                  " B"])
def test_an_indented_template_line_is_refused_at_its_line(tmp_path, line):
    path = tmp_path / "t.tpl"
    path.write_text(TEMPLATE.replace("U01:%x[0,0]\n", f"U01:%x[0,0]\n{line}\n"),
                    encoding="utf-8")
    with pytest.raises(InputError, match=rf"{path}:4:1: the line starts with white space"):
        read_template(path)


def test_blank_lines_are_still_skipped_and_saved_templates_still_load(tmp_path, corpus):
    assert len(parse_template(TEMPLATE + "   \n\t\n\n").lines) == 2
    # a model trained before the refusal stored its text, indented line and all: it loads
    # with the features it was trained with (the line skipped then, and again now)
    crf = CRF(parse_template(TEMPLATE, "t.tpl"), max_iter=2).fit(
        read_conll(corpus("conll2000", "train.txt"))[:20])
    path = tmp_path / "old.npz"
    crf.save(path)
    meta, arrays = load_model_file(path)
    meta["template_source"] = TEMPLATE + " U02:%x[1,0]\n"
    layout = meta.pop("layout", None)
    save_model(path, meta.pop("kind"), arrays, {k: v for k, v in meta.items() if k not in (
        "format", "version", "checksum")})
    back = CRF.load(path)
    assert len(back.fmap_.spec.lines) == 2 and layout is not None
    assert back.fmap_.spec.source.endswith(" U02:%x[1,0]\n")


def test_a_template_file_with_a_byte_order_mark(tmp_path, capsys, corpus):
    plain, bom = tmp_path / "plain.tpl", tmp_path / "bom.tpl"
    plain.write_text(TEMPLATE, encoding="utf-8")
    bom.write_bytes(b"\xef\xbb\xbf" + TEMPLATE.encode("utf-8"))
    assert read_template(bom).lines == read_template(plain).lines
    assert parse_template("\ufeff" + TEMPLATE).lines == read_template(plain).lines
    write_conll(read_conll(corpus("conll2000", "train.txt"))[:20], tmp_path / "t.txt")
    for tpl in (plain, bom):
        assert main(["train", "--train", str(tmp_path / "t.txt"), "--features", str(tpl),
                     "--max-iter", "2", "--quiet", "-o", str(tmp_path / "m.npz")]) == 0


@pytest.mark.parametrize("declaration", ["# annotated: PER", "#annotated: PER",
                                         "#annotated:PER", "# annotated:PER",
                                         "#  annotated :  PER"])
def test_annotation_declarations_in_any_spacing(tmp_path, declaration):
    path = tmp_path / "p.txt"
    path.write_text(f"{declaration}\nJohn B-PER\nlives O\n\nin O\nParis O\n",
                    encoding="utf-8")
    sents = read_partial(str(path), -1, "IOB2")
    assert len(sents) == 2 and all(s.declared == frozenset({"PER"}) for s in sents)
    assert [len(s.sentence) for s in sents] == [2, 2]           # the line is no token


def test_the_overlapping_row_against_a_hand_count():
    """Sentence 1: gold A(0,1) and B(1,2) overlap, C(4) is plain; predicted A(0,1), C(4)
    and the non-contiguous D(5,7).  Hard in the gold or the prediction: A(0,1), B(1,2),
    D(5,7).  Restricted to those: gold {A, B}, predicted {A, D}, correct {A}: P = 1/2,
    R = 1/2.  Sentence 2: gold E(0,2) non-contiguous, predicted E(0,1): hard {E(0,2)};
    gold {E(0,2)}, predicted {}: R = 0/1.  In all: P = 1/2, R = 1/3."""
    gold = [{Segment("A", (0, 1)), Segment("B", (1, 2)), Segment("C", (4,))},
            {Segment("E", (0, 2))}]
    pred = [{Segment("A", (0, 1)), Segment("C", (4,)), Segment("D", (5, 7))},
            {Segment("E", (0, 1))}]
    r = score_segments(gold, pred)
    assert (r.hard.tp, r.hard.tp_pred, r.hard.pred, r.hard.gold) == (1, 1, 2, 3)
    assert (r.hard.precision, r.hard.recall) == pytest.approx((50.0, 100 / 3))
    assert (r.overall.tp, r.overall.pred, r.overall.gold) == (2, 4, 4)
    text = r.text()
    assert "over its segments of both sets" in text.splitlines()[0]
    assert "in the gold or in the prediction" in text.splitlines()[0]
    row = [x for x in text.splitlines() if x.startswith("overlapping")][0]
    assert row.endswith("(predicted: 1 of 2 correct; gold: 1 of 3 found)")
