"""Fuzz suite over the files people have (issue 32): column layouts (word/tag,
word/POS/tag, CoNLL-2003's word/POS/chunk/NER, a column not read), schemes of the tag
column, and formats (spaces, runs of spaces, tabs, CRLF, a byte-order mark,
``-DOCSTART-`` lines of three kinds, blank lines of spaces, trailing spaces, U+00A0 in
tokens, no final blank line).

For each generated file, ``train`` (an HMM, told the layout and the scheme) →
``decode`` → ``eval`` runs end to end: decode's output is in the data's scheme, its
predicted column is a valid sequence of that scheme, conlleval.pl reads it and
``fstchunk eval`` prints what conlleval.pl prints.  The same file decoded under a
wrong layout is refused with one error line, or (when ``--columns`` says so) warned
about and decoded; never a traceback.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from fstchunk.schemes import encodings as enc
from fstchunk.cli import main

WORDS = ["the", "dog", "barks", "10\u00a0000", "naïve", "x-y", "A", "cat", "ran", "."]
POS = ["DT", "NN", "VBZ", "CD", "JJ", "NNP", "."]
TYPES = ["NP", "VP", "ORG-X"]

LAYOUTS = {                       # --columns spec: which field of a token each column holds
    "word,tag": ("word", "tag"),
    "word,pos,tag": ("word", "pos", "tag"),
    "word,pos,_,tag": ("word", "pos", "chunk", "tag"),      # CoNLL-2003: NER last
    "word,_,pos,tag": ("word", "other", "pos", "tag"),
}


@st.composite
def corpora(draw):
    """(text, --columns spec, data scheme, delimiter options) of a generated corpus."""
    spec = draw(st.sampled_from(sorted(LAYOUTS)))
    scheme = draw(st.sampled_from(enc.SCHEMES))
    sep = draw(st.sampled_from([" ", "  ", "\t"]))
    crlf, bom = draw(st.booleans()), draw(st.booleans())
    doc = draw(st.sampled_from([None, "conll2002", "conll2003", "bare"]))
    blank = draw(st.sampled_from(["", "   "]))
    width = len(LAYOUTS[spec])
    lines = []
    for k in range(draw(st.integers(2, 5))):
        if doc and (k == 0 or draw(st.booleans())):
            lines.append({"conll2002": sep.join(["-DOCSTART-"] * (width - 1) + ["O"]),
                          "conll2003": sep.join(["-DOCSTART-"] + ["-X-"] * (width - 2)
                                                + ["O"]),
                          "bare": "-DOCSTART-"}[doc])
            lines.append(blank)
        n = draw(st.integers(1, 7))
        chunks, i = [], 0
        while i < n:
            length = draw(st.integers(1, 3))
            if draw(st.booleans()) and i + length <= n:
                chunks.append((draw(st.sampled_from(TYPES)), i, i + length))
                i += length
            else:
                i += 1
        tags = enc.chunks_to_tags(chunks, n, scheme)
        for j in range(n):
            field = {"word": draw(st.sampled_from(WORDS)), "pos": draw(st.sampled_from(POS)),
                     "chunk": draw(st.sampled_from(["B-NP", "I-NP", "O"])), "other": "_x",
                     "tag": tags[j]}
            text = sep.join(field[c] for c in LAYOUTS[spec])
            lines.append(text + (" " if draw(st.booleans()) and sep != "\t" else ""))
        lines.append(blank)
    if draw(st.booleans()):
        lines.pop()
    nl = "\r\n" if crlf else "\n"
    text = ("\ufeff" if bom else "") + nl.join(lines) + nl
    return text, spec, scheme, sep


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


def one_error(err):
    errors = [x for x in err.strip().splitlines() if ": error:" in x]
    assert len(errors) == 1, err


@settings(max_examples=int(os.environ.get("FSTCHUNK_FUZZ_EXAMPLES", 40)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=corpora())
def test_train_decode_eval_on_generated_files(case, tmp_path_factory, capsys, conlleval_pl):
    text, spec, scheme, sep = case
    d = tmp_path_factory.mktemp("fuzz")
    data, model, out = d / "data.txt", d / "m.npz", d / "out.txt"
    data.write_bytes(text.encode("utf-8"))
    code, _, err = run(capsys, "train", "--model-type", "hmm", "--train", data, "--columns",
                       spec, "--data-scheme", scheme, "--scheme", scheme, "-o", model)
    if code == 2 and "no chunk" in err:                  # a corpus without one chunk
        event("no chunk to train on")
        return
    assert code == 0, (text, err)
    code, _, err = run(capsys, "decode", "--model", model, "--input", data, "-o", out)
    assert code == 0, (text, err)
    rows = [line.split("\t" if sep == "\t" else " ") for line in out.read_text().splitlines()
            if line and not line.startswith("-DOCSTART-")]
    sentences, current = [], []
    for line in out.read_text().splitlines() + [""]:
        if not line.strip() or line.startswith("-DOCSTART-"):
            if current:
                sentences.append(current)
            current = []
        else:
            current.append(line.split("\t" if sep == "\t" else " ")[-1])
    assert all(enc.is_valid(s, scheme) for s in sentences), sentences
    assert all(len(r) == len(LAYOUTS[spec]) + 1 for r in rows)
    options = ["-d", "\\t"] if sep == "\t" else []
    with open(out, "rb") as fh:
        pl = subprocess.run(["perl", conlleval_pl, *options], stdin=fh, capture_output=True)
    assert pl.returncode == 0, (text, pl.stderr)
    code, got, err = run(capsys, "eval", out, *(["--delimiter", "\t"] if options else []))
    assert code == 0 and got == pl.stdout.decode("utf-8"), (text, err)
    event(f"decoded and scored ({'IOBES family' if 'warning' in err else 'read as is'})")

    # the same file under layouts it does not have: one error, or a warning and a run
    # (silent only where the other spec puts the word and POS where the file has them)
    for wrong in sorted(set(LAYOUTS) - {spec}):
        code, _, err = run(capsys, "decode", "--model", model, "--input", data,
                           "--columns", wrong)
        if code == 2:
            one_error(err)
        elif reads(wrong) != reads(spec):
            assert code == 0 and "warning" in err, (spec, wrong, err)
        else:
            assert code == 0, err


def reads(spec):
    """Where a spec puts the word and the POS column."""
    cols = LAYOUTS[spec]
    return cols.index("word"), cols.index("pos") if "pos" in cols else None


@pytest.mark.parametrize("spec", sorted(LAYOUTS))
def test_a_model_refuses_the_other_layouts_without_columns(tmp_path, capsys, spec):
    """Trained on one layout, decoding a file of another (no --columns): one error line
    naming the file and line, or a run where the other layout reads the same columns."""
    width = len(LAYOUTS[spec])
    files = {}
    for name, cols in LAYOUTS.items():
        lines = []
        for i in range(40):
            field = {"word": WORDS[i % len(WORDS)], "pos": POS[i % len(POS)],
                     "chunk": "O", "other": "_x", "tag": ["B-NP", "I-NP", "O"][i % 3]}
            lines.append(" ".join(field[c] for c in cols))
            if i % 5 == 4:
                lines.append("")
        files[name] = tmp_path / f"{name.replace(',', '-')}.txt"
        files[name].write_text("\n".join(lines) + "\n")
    model = tmp_path / "m.npz"
    code, _, err = run(capsys, "train", "--model-type", "hmm", "--train", files[spec],
                       "--columns", spec, "-o", model)
    assert code == 0, err
    for name, path in files.items():
        code, out, err = run(capsys, "decode", "--model", model, "--input", path)
        if name == spec:
            assert code == 0 and err == ""
        elif len(LAYOUTS[name]) not in (width, width - 1) or code != 0:
            assert code == 2 and out == "", (spec, name, err)
            one_error(err)
            assert path.name in err
