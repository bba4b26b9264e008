"""Issue 32, item 5: the format of a segment file is read off its content, robust to a
UTF-8 byte-order mark, CRLF line ends, blank lines and white space before ``{``; a
misnamed file is read by its content; what cannot be read in the format decided is
refused at its file:line, naming the format and why.  And ``segment eval``'s text rows:
each row's counts give its P, R and F."""

import itertools
import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.cli import main
from fstchunk.io.conll import read_conll, write_conll
from fstchunk.core.errors import FstchunkError
from fstchunk.io.segments import FileFormat, Segment, detect_format, read_segments
from fstchunk.evaluation.segments import score_segments

# (BOM, line end, blank lines before, blank lines after, white space before each line)
VARIANTS = list(itertools.product((False, True), ("\n", "\r\n"), (0, 2), (0, 2),
                                  ("", " \t")))


def _variant(lines: list[str], bom: bool, eol: str, before: int, after: int,
             indent: str) -> bytes:
    """``lines`` written as one variant: ``before``/``after`` blank lines (one of them
    white space only), ``indent`` before each line (a blank one: in its place)."""
    blank = ["", "  \t"]
    body = [indent + line if line else indent for line in lines]
    text = eol.join([*blank[:before], *body, *blank[:after]]) + eol
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")


@pytest.fixture(scope="module")
def files(tmp_path_factory, corpus):
    """A tiny JSONL model on GENIA and a CoNLL model on CoNLL-2000, and their dev slices
    as plain files."""
    d = tmp_path_factory.mktemp("formats")
    train = open(corpus("genia", "train.jsonl"), encoding="utf-8").read().split("\n")[:80]
    dev = open(corpus("genia", "dev.jsonl"), encoding="utf-8").read().split("\n")[:12]
    (d / "train.jsonl").write_text("\n".join(train) + "\n", encoding="utf-8")
    (d / "dev.jsonl").write_text("\n".join(dev) + "\n", encoding="utf-8")
    write_conll(read_conll(corpus("conll2000", "train.txt"))[:80], d / "train.txt")
    write_conll(read_conll(corpus("conll2000", "dev.txt"))[:8], d / "dev.txt")
    for name in ("jsonl", "txt"):
        assert main(["segment", "train", "--train", str(d / f"train.{name}"), "--epochs", "2",
                     "-o", str(d / f"m.{name}.npz"), "--quiet"]) == 0
    return d


def _read_pairs(path, **kw):
    return [(s.tokens, sorted(s.segments)) for s in read_segments(str(path), **kw)]


def _decode(capsys, model, path, *extra) -> str:
    capsys.readouterr()
    code = main(["segment", "decode", "--model", str(model), "--input", str(path), *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.mark.parametrize("kind", ["jsonl", "txt"])
def test_every_variant_reads_and_decodes_the_same(files, kind, capsys):
    base = files / f"dev.{kind}"
    lines = base.read_text(encoding="utf-8").rstrip("\n").split("\n")
    want = _read_pairs(base)
    assert any(segs for _, segs in want)
    model = files / f"m.{kind}.npz"
    ref = _decode(capsys, model, base)
    kept = [x for x in ref.splitlines() if x.strip()]
    if kind == "jsonl":
        assert any(json.loads(x)["segments"] for x in kept)        # it predicts something
    else:
        assert any(x.split()[-1] != "O" for x in kept)
    for k, (bom, eol, before, after, indent) in enumerate(VARIANTS):
        path = files / f"v{k}.{kind}"
        path.write_bytes(_variant(lines, bom, eol, before, after, indent))
        fmt = detect_format(str(path))
        assert fmt.name == ("jsonl" if kind == "jsonl" else "conll"), (k, fmt)
        assert _read_pairs(path) == want, k
        out = _decode(capsys, model, path)
        if kind == "jsonl":
            assert out == ref, k
        else:   # the input's lines again (no BOM, LF), blank lines as they were
            got = [x for x in out.splitlines() if x.strip()]
            assert [x.split() for x in got] == [x.split() for x in kept], k
            assert indent or got == kept, k     # (a tab in the line: the tag after a tab)
            assert out.count("\n") == before + len(lines) + after, k


def test_a_misnamed_file_is_read_by_its_content(files, capsys):
    for src, dst in (("dev.txt", "conll.jsonl"), ("dev.jsonl", "genia.txt")):
        data = (files / src).read_bytes()
        (files / dst).write_bytes(b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"))
        assert _read_pairs(files / dst) == _read_pairs(files / src)
    assert detect_format(str(files / "conll.jsonl")).name == "conll"
    assert detect_format(str(files / "genia.txt")).name == "jsonl"
    assert _decode(capsys, files / "m.jsonl.npz", files / "genia.txt") == \
        _decode(capsys, files / "m.jsonl.npz", files / "dev.jsonl")
    kept = _decode(capsys, files / "m.txt.npz", files / "dev.txt")
    assert _decode(capsys, files / "m.txt.npz", files / "conll.jsonl") == kept
    # --format names the format outright
    assert _read_pairs(files / "genia.txt", fmt="jsonl") == _read_pairs(files / "dev.jsonl")
    assert detect_format(str(files / "genia.txt"), "conll") == FileFormat("conll",
                                                                          "--format conll")


def _refused(capsys, argv, *needles):
    capsys.readouterr()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)


@pytest.mark.parametrize("text, line, message, decided", [
    # a CoNLL file whose first word is '{': read as JSONL, refused at its line
    ("{ ( O\nx NN O\n", 1, "not a JSON object", "read as JSONL (its first line starts with '{'"),
    # JSONL with a broken line
    ('\ufeff\r\n{"tokens": ["a"], "segments": []}\r\n{"tokens": ["b"], \r\n', 3,
     "not a JSON object", "read as JSONL (line 2, its first non-blank line, starts with '{'"),
    # a JSON object that is not a sentence
    ('  {"id": 1, "words": ["a"]}\n', 1, "field 'tokens' must be", "read as JSONL"),
    ('{"tokens": ["a"], "segments": []}\n[1, 2]\n', 2, "not a JSON object but a JSON list",
     "read as JSONL"),
    # a CoNLL file with a JSONL line inside (same column count)
    ('a B-NP\n\n{"tokens": ["a"]}\n', 3, "a JSON object on a CoNLL token line",
     "read as CoNLL (its first line does not start with '{'"),
    # a ragged CoNLL file names the format it was read in
    ("a DT B-NP\nb I-NP\n", 2, "expected 3 columns", "read as CoNLL"),
    # no gold tag column: words only, or words and POS
    ("\n\nThe\ndog\n", 3, "no tag column (the last column) to read gold segments from: "
     "the line has 1 column", "read as CoNLL (line 3, its first non-blank line, does not"),
    ("The B-NP\r\ndog mid-size\r\n", 2, "'mid-size' in the tag column (the last column) "
     "is not a chunk tag", "read as CoNLL"),
])
@pytest.mark.parametrize("command", ["decode", "eval", "train"])
def test_what_the_format_cannot_read_is_refused_naming_it(files, capsys, text, line, message,
                                                         decided, command):
    bad = files / "bad.jsonl"
    bad.write_bytes(text.encode("utf-8"))
    argv = {"decode": ["segment", "decode", "--model", str(files / "m.jsonl.npz"), "--input",
                       str(bad)],
            "eval": ["segment", "eval", str(bad), str(bad)],
            "train": ["segment", "train", "--train", str(bad), "-o", str(files / "x.npz")]
            }[command]
    if command == "decode" and "tag column" in message:
        assert main(argv) == 0          # decoding reads no gold: the file is fine for it
        return
    _refused(capsys, argv, f"fstchunk segment {command}: error: {bad}:{line}: ", message,
             decided)


def test_format_option_overrules_and_is_named(files, capsys):
    conll = files / "brace.txt"
    conll.write_text("{ ( O\nx NN B-NP\n", encoding="utf-8")
    (s,) = read_segments(str(conll), fmt="conll")
    assert s.tokens == ["{", "x"] and s.segments == [Segment("NP", (1,))]
    _decode(capsys, files / "m.txt.npz", conll, "--format", "conll")
    # JSONL forced to be read as CoNLL: refused, naming the option
    one = files / "one.jsonl"
    one.write_text((files / "dev.jsonl").read_text().split("\n")[0] + "\n")
    for f in (one, files / "dev.jsonl"):
        _refused(capsys, ["segment", "eval", str(f), str(f), "--format", "conll"],
                 f"{f}:", "read as CoNLL (--format conll)")
    _refused(capsys, ["segment", "eval", str(files / "dev.txt"), str(files / "dev.txt"),
                      "--format", "jsonl"], f"{files / 'dev.txt'}:1: not a JSON object",
             "read as JSONL (--format jsonl)")
    empty = files / "empty.txt"
    empty.write_bytes(b"\xef\xbb\xbf\r\n  \n")
    _refused(capsys, ["segment", "eval", str(empty), str(empty)], f"{empty}: an empty file")
    latin = files / "latin.jsonl"
    latin.write_bytes(b"\n\xe9t\xe9 DT O\n")
    _refused(capsys, ["segment", "eval", str(latin), str(latin)], f"{latin}:2: not valid UTF-8")


def test_an_unknown_format_is_refused():
    with pytest.raises(FstchunkError, match="unknown format 'xml'"):
        detect_format("whatever", "xml")


# ---- segment eval: each text row's counts reproduce its P, R, F ---------------------

ROW = re.compile(r"^(?P<name>.+?)\s+P\s+(?P<p>[\d.]+)\s+R\s+(?P<r>[\d.]+)\s+F\s+(?P<f>[\d.]+)"
                 r"\s+\(predicted: (?P<correct>\d+) of (?P<pred>\d+) correct; "
                 r"gold: (?P<found>\d+) of (?P<gold>\d+) found\)$")


def _check_rows(text: str, report: dict, beta: float) -> int:
    """Every row of ``text``: P, R, F recomputed from its printed counts; the counts are
    those of the JSON report.  Returns the number of rows."""
    rows = text.splitlines()[1:]
    json_rows = {"overall": report["overall"],
                 "overlapping/non-contiguous": report["overlapping_or_noncontiguous"],
                 **report["types"]}
    assert len(rows) == len(json_rows)
    for row in rows:
        m = ROW.match(row)
        assert m, row
        c = {k: int(m[k]) for k in ("correct", "pred", "found", "gold")}
        p = 100.0 * c["correct"] / c["pred"] if c["pred"] else 0.0
        r = 100.0 * c["found"] / c["gold"] if c["gold"] else 0.0
        f = (1 + beta ** 2) * p * r / (beta ** 2 * p + r) if p + r > 0 else 0.0
        assert (f"{p:6.2f}".strip(), f"{r:6.2f}".strip(), f"{f:6.2f}".strip()) == \
            (m["p"], m["r"], m["f"]), row
        j = json_rows[m["name"]]
        assert (c["correct"], c["pred"], c["found"], c["gold"]) == \
            (j["tp_predicted"], j["predicted"], j["tp"], j["gold"])
        assert (p, r, f) == (j["precision"], j["recall"], j["f"])
    return len(rows)


def _segment_sets(n: int):
    segment = st.builds(lambda t, pos: Segment(t, tuple(sorted(pos))),
                        st.sampled_from(["DNA", "protein", "RNA"]),
                        st.sets(st.integers(0, n - 1), min_size=1, max_size=3))
    return st.lists(st.sets(segment, max_size=5), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(st.data(), st.sampled_from([0.5, 1.0, 2.0]))
def test_eval_rows_reproduce_their_scores(data, beta):
    gold = data.draw(_segment_sets(6))
    pred = [data.draw(st.sets(st.one_of(st.sampled_from(sorted(g)) if g else st.nothing(),
                                        st.builds(lambda t, a: Segment(t, (a,)),
                                                  st.sampled_from(["DNA", "protein"]),
                                                  st.integers(0, 5))), max_size=6))
            for g in gold]
    rep = score_segments(gold, pred, beta)
    _check_rows(rep.text(), rep.to_json(), beta)


def test_eval_rows_of_a_models_genia_output(files, capsys):
    """GENIA dev (overlapping and non-contiguous gold) as the tiny model decodes it."""
    out = files / "pred.jsonl"
    assert main(["segment", "decode", "--model", str(files / "m.jsonl.npz"), "--input",
                 str(files / "dev.jsonl"), "-o", str(out)]) == 0
    capsys.readouterr()
    for argv_beta in ("1", "0.5"):
        assert main(["segment", "eval", str(files / "dev.jsonl"), str(out), "--beta",
                     argv_beta]) == 0
        text = capsys.readouterr().out
        assert main(["segment", "eval", str(files / "dev.jsonl"), str(out), "--beta",
                     argv_beta, "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert _check_rows(text, report, float(argv_beta)) >= 3
        assert report["overlapping_or_noncontiguous"]["gold"] > 0


def test_the_overlapping_row_counts_one_population():
    """Gold DNA(0,1) and protein(1) overlap; the prediction DNA(0,1) alone does not, and
    DNA(3,5) is non-contiguous: the row's segments are those three (hard in the gold or
    in the prediction), so the correct DNA(0,1) counts for P and R alike."""
    gold = [{Segment("DNA", (0, 1)), Segment("protein", (1,))}]
    pred = [{Segment("DNA", (0, 1)), Segment("DNA", (3, 5))}]
    rep = score_segments(gold, pred)
    assert (rep.hard.tp_pred, rep.hard.pred, rep.hard.tp, rep.hard.gold) == (1, 2, 1, 2)
    row = [x for x in rep.text().splitlines() if x.startswith("overlapping")][0]
    assert row.endswith("(predicted: 1 of 2 correct; gold: 1 of 2 found)")
    assert _check_rows(rep.text(), rep.to_json(), 1.0) == 4
