"""conlleval.pl itself as the oracle of ``fstchunk eval``.

A generated family of scored files — layouts of 2 to 5 columns, one space or tabs
(``-d '\\t'``), ``-DOCSTART-`` lines, ``-X-`` boundaries, blank lines of spaces,
trailing spaces, U+00A0 inside tokens, typed and untyped tags of several schemes,
hyphenated types, invalid sequences, no final blank line — is scored by conlleval.pl
and by ``fstchunk eval``: the reports are the same text.  Files conlleval.pl refuses
are refused by eval too, naming file:line.
"""

import os
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.evaluation.chunks import evaluate_file


def conlleval(script, path, *options):
    with open(path, "rb") as fh:
        r = subprocess.run(["perl", script, *options], stdin=fh, capture_output=True)
    return r.returncode, r.stdout.decode("utf-8"), r.stderr.decode("utf-8")


def mixed_schemes(text, sep):
    """Whether gold and predicted sentences are valid only in schemes of different
    prefix inventories (the rule of eval's refusal, from its definition: a side reads
    as the schemes in which at most 1% of its sentences are invalid; IOB1 and IOB2 are
    one inventory, IOE1 and IOE2 another)."""
    sents, cur = [], []
    for line in text.splitlines() + [""]:
        fields = [f for f in line.split(sep) if f.strip(" ")] if line.strip(" \t") else []
        if not fields or fields[0] == "-X-":
            if cur:
                sents.append(cur)
            cur = []
        elif fields[0] != "-DOCSTART-":
            cur.append(fields[-2:])
    if not sents:
        return False
    sides = [{s for s in enc.SCHEMES
              if sum(not enc.is_valid([t[k] for t in sent], s) for sent in sents)
              <= 0.01 * len(sents)} for k in (0, 1)]
    family = {"IOB1": "IOB", "IOB2": "IOB", "IOE1": "IOE", "IOE2": "IOE"}
    g, p = sides
    return bool(g and p and not g & p and not ({family.get(x, x) for x in g}
                                               & {family.get(x, x) for x in p}))


def fstchunk_eval(capsys, path, *options):
    code = main(["eval", str(path), *options])
    out, err = capsys.readouterr()
    return code, out, err


TYPED = ["O", "B-NP", "I-NP", "B-VP", "I-VP", "E-NP", "E-VP", "B-ORG-X", "I-ORG-X"]
UNTYPED = ["O", "B", "I", "E", "S"]
IOBES = ["O", "B-NP", "I-NP", "E-NP", "S-NP", "S-PP", "B-PP", "E-PP"]
WORDS = ["the", "cat", "10\u00a0000", "naïve", "-", "--", "O", "B-NP", "x-y"]


@st.composite
def scored_files(draw):
    """(text, conlleval options, eval options): a file conlleval.pl reads."""
    tags = draw(st.sampled_from([TYPED, UNTYPED, IOBES]))
    width = draw(st.integers(2, 5))
    tab = draw(st.booleans())
    sep = "\t" if tab else " "
    lines = []
    if draw(st.booleans()):
        lines.append("")                                   # a leading blank line
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["sentence", "sentence", "sentence", "docstart", "X"]))
        if kind == "docstart" and width > 2:
            lines.append(sep.join(["-DOCSTART-"] + ["-X-"] * (width - 3) + ["O", "O"]))
        elif kind == "X":
            lines.append(sep.join(["-X-"] * width))
        elif kind != "docstart":
            for _ in range(draw(st.integers(1, 8))):
                row = [draw(st.sampled_from(WORDS))] + ["NN"] * (width - 3)
                row += [draw(st.sampled_from(tags)) for _ in range(2)][-(width - 1):]
                if width == 2:
                    row = [draw(st.sampled_from(tags)), draw(st.sampled_from(tags))]
                text = sep.join(row)
                if draw(st.booleans()) and not tab:
                    text += " " * draw(st.integers(1, 3))   # trailing spaces
                lines.append(text)
        blank = draw(st.sampled_from(["", "", "  ", "\t"] if tab else ["", "", "  "]))
        lines.append(blank)
    if draw(st.booleans()):
        lines.pop()                                        # no final blank line
    text = "\n".join(lines) + ("\n" if draw(st.booleans()) else "")
    if tab:
        form = draw(st.sampled_from([["-d", "\\t"], ["-d", "\t"]]))
        return text, form, ["--delimiter", form[1]]
    return text, [], []


@settings(max_examples=int(os.environ.get("FSTCHUNK_FUZZ_EXAMPLES", 150)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=scored_files())
def test_eval_equals_conlleval_pl(case, conlleval_pl, tmp_path_factory, capsys):
    text, pl_options, options = case
    path = tmp_path_factory.mktemp("f") / "scored.txt"
    path.write_text(text, encoding="utf-8")
    code_pl, out_pl, err_pl = conlleval(conlleval_pl, path, *pl_options)
    code, out, err = fstchunk_eval(capsys, path, *options)
    if code_pl != 0:
        assert code == 2 and "scored.txt:" in err, (text, err_pl, err)
        return
    if "no sentences" in err:                  # only boundaries: conlleval.pl prints 0 tokens
        assert out_pl.startswith("processed 0 tokens")
        return
    if mixed_schemes(text, "\t" if options else " "):
        assert code == 2 and "--scheme" in err and out == "", (text, err)
        return
    assert code == 0, (text, err)
    assert out == out_pl, text


def test_iobes_on_both_sides_equals_conlleval_pl_with_a_warning(conlleval_pl, tmp_path,
                                                                 capsys):
    path = tmp_path / "iobes.txt"
    path.write_text("a S-NP S-NP\nb S-NP S-NP\nc B-VP B-VP\nd E-VP E-VP\ne S-VP B-VP\n"
                    "f O E-VP\n\n")
    _, out_pl, _ = conlleval(conlleval_pl, path)
    code, out, err = fstchunk_eval(capsys, path)
    assert code == 0 and out == out_pl
    assert "--scheme" in err and "warning" in err


@pytest.mark.parametrize("gold,pred,refused", [
    (["B-NP", "I-NP", "O"], ["B-NP", "E-NP", "O"], True),     # IOB2 against IOBES
    (["B-NP", "O", "B-VP"], ["S-NP", "O", "S-VP"], True),
    (["I-NP", "E-NP", "O"], ["B-NP", "I-NP", "O"], True),     # IOE2 against IOB2
    (["B-NP", "L-NP", "O"], ["B-NP", "E-NP", "O"], True),     # BILOU against IOBES
    (["B-NP", "I-NP", "O"], ["I-NP", "I-NP", "O"], False),    # IOB2 against IOB1
])
def test_mixed_schemes_are_refused_naming_scheme(tmp_path, capsys, gold, pred, refused):
    path = tmp_path / "mixed.txt"
    path.write_text("".join(f"w{i} {g} {p}\n" for i, (g, p) in enumerate(zip(gold, pred))))
    code, out, err = fstchunk_eval(capsys, path)
    if refused:
        assert code == 2 and "--scheme" in err and out == ""
        code, out, err = fstchunk_eval(capsys, path, "--scheme", "IOBES")
        if "L-NP" in gold:                         # BILOU: not tags of IOBES, named
            assert code == 2 and "mixed.txt:2" in err and "'L-NP'" in err
        else:
            assert code == 0 and "FB1: 100.00" in out
    else:
        assert code == 0


def test_docstart_lines_are_tokens_as_in_conlleval_pl(conlleval_pl, tmp_path, capsys):
    path = tmp_path / "doc.txt"
    path.write_text("-DOCSTART- -DOCSTART- O O\n\nDe Art B-MISC B-MISC\nman N O O\n\n"
                    "-DOCSTART- -DOCSTART- O O\n\nJan N B-PER B-PER\n")
    _, out_pl, _ = conlleval(conlleval_pl, path)
    code, out, _ = fstchunk_eval(capsys, path)
    assert code == 0 and out == out_pl and out.startswith("processed 5 tokens")
    assert evaluate_file(path).sentences == 2


def test_docstart_line_without_predicted_column_is_refused_with_the_fix(tmp_path, capsys,
                                                                        conlleval_pl):
    path = tmp_path / "old.txt"
    path.write_text("-DOCSTART- -DOCSTART- O\n\nDe Art B-MISC B-MISC\n")
    assert conlleval(conlleval_pl, path)[0] != 0
    code, _, err = fstchunk_eval(capsys, path)
    assert code == 2 and "old.txt:1" in err and "-DOCSTART-" in err and "decode" in err


@pytest.mark.parametrize("delimiter", ["|", ".", "a|"])
def test_delimiters_that_match_everything_or_nothing(tmp_path, capsys, delimiter):
    path = tmp_path / "d.txt"
    path.write_text("a|B-NP|B-NP\n")
    code, out, err = fstchunk_eval(capsys, path, "--delimiter", delimiter)
    if delimiter == "|":
        assert code == 0 and "FB1: 100.00" in out          # one character: literal
    elif delimiter == "a|":
        assert code == 2 and "empty string" in err
    else:
        assert code == 2                                   # '.' literal: one column


def test_crlf_is_read_without_carriage_returns(tmp_path, capsys):
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"a B-NP B-NP\r\nb I-NP I-NP\r\n\r\nc O O\r\n")
    code, out, err = fstchunk_eval(capsys, path)
    assert code == 0 and "FB1: 100.00" in out and "CRLF" in err


# ------------------------------------------------------------------ decode's output
@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """HMMs on TINY_CONLL: word/POS/tag and word/tag (IOB2); an IOBES-data one."""
    from fstchunk.io.conll import read_conll
    from fstchunk.models.hmm import HMM
    from oracles import TINY_CONLL
    d = tmp_path_factory.mktemp("models")
    (d / "tiny.txt").write_text(TINY_CONLL)
    sents = read_conll(d / "tiny.txt")
    HMM().fit(sents).save(d / "hmm.npz")
    return d / "hmm.npz"


def decoded_family():
    """(name, input text, decode options, conlleval.pl options) of inputs people have."""
    rows = [("The", "DT", "B-NP"), ("dog", "NN", "I-NP"), ("barks", "VBZ", "B-VP"),
            ("10\u00a0000", "CD", "B-NP"), ("naïve", "JJ", "I-NP")]
    sent = [rows[:3], rows[3:]]

    def text(sep=" ", trail="", doc=None, crlf=False, bom=False, blank=""):
        lines = [] if doc is None else [doc, blank]
        for s in sent:
            lines += [sep.join(r) + trail for r in s] + [blank]
        out = ("\r\n" if crlf else "\n").join(lines) + ("\r\n" if crlf else "\n")
        return ("\ufeff" if bom else "") + out
    tab = ["-d", "\\t"]
    return [
        ("spaces", text(), [], []),
        ("trailing spaces", text(trail="  "), [], []),
        ("runs of spaces", text(sep="   "), [], []),
        ("tabs", text(sep="\t"), [], tab),
        ("tabs, --delimiter", text(sep="\t"), ["--delimiter", "\\t"], tab),
        ("CoNLL-2002 -DOCSTART-", text(doc="-DOCSTART- -DOCSTART- O"), [], []),
        ("CoNLL-2003 -DOCSTART-", text(doc="-DOCSTART- -X- O"), [], []),
        ("bare -DOCSTART-", text(doc="-DOCSTART-"), [], []),
        ("CRLF", text(crlf=True), [], []),
        ("BOM", text(bom=True), [], []),
        ("blank lines of spaces", text(blank="   "), [], []),
    ]


@pytest.mark.parametrize("name,text,options,pl_options", decoded_family(),
                         ids=[c[0] for c in decoded_family()])
def test_decode_writes_what_conlleval_pl_reads(conlleval_pl, tiny_models, tmp_path, capsys,
                                               name, text, options, pl_options):
    inp, out = tmp_path / "in.txt", tmp_path / "out.txt"
    inp.write_bytes(text.encode("utf-8"))
    code = main(["decode", "--model", str(tiny_models), "--input", str(inp), "-o", str(out),
                 *options])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    code_pl, out_pl, err_pl = conlleval(conlleval_pl, out, *pl_options)
    assert code_pl == 0 and "processed" in out_pl, (name, err_pl, out.read_text())
    code, got, err = fstchunk_eval(capsys, out, *(["--delimiter", "\t"] if pl_options else []))
    assert code == 0 and got == out_pl, (name, err)
    assert "10\u00a0000" in out.read_text()                # U+00A0 stays inside its token


def test_decode_of_conll2002_is_read_by_conlleval_pl(conlleval_pl, corpus, tmp_path, capsys):
    """Real data with -DOCSTART- lines: conlleval.pl reads decode's output, and eval
    gives the same report, token count included."""
    from fstchunk.io.conll import read_conll
    from fstchunk.models.hmm import HMM
    train = read_conll(corpus("conll2002", "ned.train"))[:3000]
    model = tmp_path / "hmm.npz"
    HMM().fit(train).save(model)
    testa = tmp_path / "testa.txt"
    with open(corpus("conll2002", "ned.testa"), encoding="utf-8") as fh:
        testa.write_text("".join(fh.readlines()[:4000]))
    out = tmp_path / "out.txt"
    assert main(["decode", "--model", str(model), "--input", str(testa), "-o", str(out)]) == 0
    capsys.readouterr()
    code_pl, out_pl, _ = conlleval(conlleval_pl, out)
    assert code_pl == 0
    code, got, _ = fstchunk_eval(capsys, out)
    assert code == 0 and got == out_pl
    docs = sum(line.startswith("-DOCSTART-") for line in testa.read_text().splitlines())
    tokens = sum(bool(line.strip()) for line in testa.read_text().splitlines())
    assert docs > 0 and got.startswith(f"processed {tokens} tokens")


def test_decode_in_another_scheme_then_eval_is_refused_not_misscored(corpus, tmp_path,
                                                                     capsys, conlleval_pl):
    """The issue's case on real data: decode --output-scheme IOBES against IOB2 gold
    is refused (naming --scheme), --scheme IOBES scores it as the IOB2 output scores."""
    from fstchunk.io.conll import read_conll, write_conll
    from fstchunk.models.hmm import HMM
    model = tmp_path / "hmm.npz"
    HMM().fit(read_conll(corpus("conll2000", "train.txt"))[:1000]).save(model)
    inp = tmp_path / "in.txt"
    write_conll(read_conll(corpus("conll2000", "test.txt"))[:300], inp)
    iob2, iobes = tmp_path / "iob2.txt", tmp_path / "iobes.txt"
    assert main(["decode", "--model", str(model), "--input", str(inp), "-o", str(iob2)]) == 0
    assert main(["decode", "--model", str(model), "--input", str(inp), "-o", str(iobes),
                 "--output-scheme", "IOBES"]) == 0
    capsys.readouterr()
    code, want, _ = fstchunk_eval(capsys, iob2)
    assert code == 0 and want == conlleval(conlleval_pl, iob2)[1]
    code, out, err = fstchunk_eval(capsys, iobes)
    assert code == 2 and out == "" and "--scheme" in err and "IOBES" in err
    code, out, _ = fstchunk_eval(capsys, iobes, "--scheme", "IOBES")
    assert code == 0
    overall = [line for line in out.splitlines() if line.startswith("accuracy")][0]
    f = lambda text: text.split("FB1:")[1].split()[0]           # noqa: E731
    assert f(overall) == f(want.splitlines()[1])


@pytest.mark.parametrize("kind", ["hmm", "crf"])
@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "BILOU", "IOE2", "IOB1"])
def test_decode_writes_the_scheme_of_the_training_data(tmp_path, capsys, kind, scheme):
    """A model trained with --data-scheme X writes X unless told otherwise, and eval
    scores its output as it scores the same prediction written in IOB2."""
    from fstchunk.io.conll import read_conll, write_conll
    from oracles import TINY_CONLL
    src = tmp_path / "tiny.txt"
    src.write_text(TINY_CONLL)
    sents = read_conll(src)
    for s in sents:
        tags = enc.convert(s.column(-1), "IOB2", scheme)
        s.rows = [r[:-1] + [t] for r, t in zip(s.rows, tags)]
    data, model = tmp_path / "data.txt", tmp_path / "m.npz"
    write_conll(sents, data)
    argv = ["train", "--train", str(data), "--data-scheme", scheme, "-o", str(model)]
    argv += ["--model-type", "hmm"] if kind == "hmm" else ["--max-iter", "20", "--quiet"]
    assert main(argv) == 0, capsys.readouterr().err
    out, iob2 = tmp_path / "out.txt", tmp_path / "iob2.txt"
    assert main(["decode", "--model", str(model), "--input", str(data), "-o", str(out)]) == 0
    capsys.readouterr()
    pred = [line.split()[-1] for line in out.read_text().splitlines() if line]
    gold = [line.split()[-2] for line in out.read_text().splitlines() if line]
    assert pred and all(enc.is_valid(s.column(-1), scheme) for s in read_conll(out))
    assert main(["decode", "--model", str(model), "--input", str(data), "-o", str(iob2),
                 "--output-scheme", "IOB2"]) == 0
    rows = [line.split() for line in iob2.read_text().splitlines() if line]
    assert [r[-1] for r in rows] == [t for s in read_conll(out)
                                      for t in enc.convert(s.column(-1), scheme, "IOB2")]
    assert gold == [t for s in sents for t in s.column(-1)]
    from fstchunk.evaluation.chunks import evaluate
    want = evaluate([enc.convert(s.column(-1), scheme, "IOB2") for s in sents],
                    [s.column(-1) for s in read_conll(iob2)]).overall
    code, got, _ = fstchunk_eval(capsys, out, "--scheme", scheme)
    assert code == 0 and got.startswith(f"processed {len(pred)} tokens with {want.gold} "
                                        f"phrases; found: {want.found} phrases; correct: "
                                        f"{want.correct}.")
