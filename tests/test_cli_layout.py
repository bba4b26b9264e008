"""Issue 32, items 2, 3 and 6 at the command line: a model knows its training layout and
refuses inputs of another (or warns, when --columns says what they hold); --columns
names every column; train --init refuses explicit options that contradict the init
model.

The family: CRFs and HMMs trained on a CoNLL-2000 slice in three layouts — word/POS/tag
(wpt), word/tag (wt) and a CoNLL-2003-style four-column file (w4: word, POS, chunk and an
NER-like column built from the chunks) — each decoding each other layout."""

import json
import os

import pytest

from fstchunk.cli import main
from fstchunk.decoding.batch import decode_sentences
from fstchunk.io.conll import read_conll, write_conll
from fstchunk.models import load_model
from fstchunk.schemes.encodings import convert

V2 = os.path.join(os.path.dirname(__file__), "data", "v2")
#: per layout: its columns of the four-column file, the --columns a model is trained with
LAYOUTS = {"wpt": ((0, 1, 2), None), "wt": ((0, 2), "word,tag"),
           "w4": ((0, 1, 2, 3), "word,pos,_,tag")}
#: the tag-less variant of each layout (what decoding reads without gold)
NOTAG = {"wpt": (0, 1), "wt": (0,), "w4": (0, 1, 2)}
#: wrong pairings (model, input): the --columns that reads the input, and whether it
#: reads the model's own columns there (then the tags are those of the right layout)
WRONG = {("wpt", "wt"): ("word,pos", False), ("wpt", "w4"): ("word,pos,_,_", True),
         ("wt", "wpt"): ("word,_,_", True), ("wt", "w4"): ("word,_,_,_", True),
         ("w4", "wt"): ("word,pos", False)}


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err, *fragments):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


def ner(rows):
    """An NER-like column: NP chunks that start with a capital as ORG."""
    out, inside = [], False
    for r in rows:
        if r[2] == "B-NP" and r[0][:1].isupper():
            out.append("B-ORG")
            inside = True
        elif r[2] == "I-NP" and inside:
            out.append("I-ORG")
        else:
            out.append("O")
            inside = False
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory, corpus):
    d = tmp_path_factory.mktemp("layouts")
    src = {"train": read_conll(corpus("conll2000", "train.txt"))[:120],
           "test": read_conll(corpus("conll2000", "test.txt"))[:40]}
    out = {}
    for part, sents in src.items():
        four = [[r + [t] for r, t in zip(s.rows, ner(s.rows))] for s in sents]
        for name, (cols, _) in LAYOUTS.items():
            out[name, part] = d / f"{name}.{part}"
            write_conll([[[r[c] for c in cols] for r in rows] for rows in four],
                        out[name, part])
            if part == "test":
                out[name, "notag"] = d / f"{name}.notag"
                write_conll([[[r[c] for c in NOTAG[name]] for r in rows] for rows in four],
                            out[name, "notag"])
    out["dir"] = d
    return out


@pytest.fixture(scope="module")
def models(files):
    out = {}
    for name, (_, spec) in LAYOUTS.items():
        for kind in ("crf", "hmm"):
            path = files["dir"] / f"{name}.{kind}.npz"
            argv = ["train", "--train", files[name, "train"], "-o", path, "--quiet",
                    "--model-type", kind] + (["--columns", spec] if spec else [])
            if kind == "crf":
                argv += ["--features", "tmpt1", "--max-iter", "8"]
            assert main([str(a) for a in argv]) == 0
            out[name, kind] = path
    return out


def tags_of(text):
    return [line.split()[-1] for line in text.splitlines() if line.strip()]


def library_tags(model_path, input_path):
    """What decode wrote before the check: the model reading its own columns."""
    model = load_model(model_path)
    return [t for tags in decode_sentences(model, read_conll(input_path), "map", 1.0)
            for t in tags]


@pytest.mark.parametrize("kind", ["crf", "hmm"])
@pytest.mark.parametrize("model", list(LAYOUTS))
def test_each_model_decodes_its_layouts_and_refuses_the_others(capsys, files, models, kind,
                                                               model):
    m = models[model, kind]
    inputs = [(data, files[data, "test"]) for data in LAYOUTS] + [(model, files[model, "notag"])]
    for data, inp in inputs:
        code, out, err = run(capsys, "decode", "--model", m, "--input", inp)
        if (model, data) not in WRONG:                         # a right pairing
            assert code == 0 and err == "", err
            assert tags_of(out) == library_tags(m, inp)        # the same tags as before
            continue
        assert code == 2 and out == ""
        line = one_line(err, f"fstchunk decode: error: {inp}:1: ")
        assert ("but the model was trained on files of" in line
                or "but the model read POS tags there in training" in line)
        spec, faithful = WRONG[model, data]
        code, out, err = run(capsys, "decode", "--model", m, "--input", inp, "--columns", spec)
        assert code == 0
        one_line(err, f"fstchunk decode: warning: {inp}:1: ",
                 f"reading the columns as --columns {spec} says")
        if faithful:
            assert tags_of(out) == library_tags(m, files[model, "test"])


def test_the_issue_case_word_tag_file_under_a_word_pos_tag_model(capsys, files, models):
    """Issue 32, item 2: F 15.75 instead of 88.47 with exit 0, before; now one error."""
    code, _, err = run(capsys, "decode", "--model", models["wpt", "crf"], "--input",
                       files["wt", "test"])
    assert code == 2
    one_line(err, f"{files['wt', 'test']}:1: column 2 holds 'I-NP', 'B-NP', 'O', ... (chunk "
                  f"tags), but the model read POS tags there in training ('NN', 'IN', ",
             "give --columns to say where the POS column is")
    # a POS-free model trained on the word/POS/tag file (held: word,_,tag) reads words
    # only: the word/tag file decodes (two columns: its layout without the tag column)
    nopos = files["dir"] / "nopos.npz"
    code, _, err = run(capsys, "train", "--train", files["wpt", "train"], "--features",
                       "tmpt1-nopos", "--max-iter", "3", "--quiet", "-o", nopos)
    assert code == 0 and load_model(nopos).layout_.held == ("word", "_", "tag")
    for data in ("wt", "wpt"):
        code, out, err = run(capsys, "decode", "--model", nopos, "--input", files[data, "test"])
        assert code == 0 and err == "", err
        assert tags_of(out) == library_tags(nopos, files["wpt", "test"])


def test_expected_checks_the_layout_too(capsys, files, models):
    m = models["wpt", "crf"]
    code, _, err = run(capsys, "expected", files["wt", "test"], "--model", m)
    assert code == 2
    one_line(err, "fstchunk expected: error:", "(chunk tags)")
    code, want, err = run(capsys, "expected", files["wpt", "test"], "--model", m, "--json")
    assert code == 0 and err == ""
    code, _, err = run(capsys, "expected", files["w4", "test"], "--model", m, "--column", "2")
    assert code == 2
    one_line(err, "the line has 4 columns, but the model was trained on files of 3 columns "
                  "(word,pos,tag) or 2 without the tag column")
    code, got, err = run(capsys, "expected", files["w4", "test"], "--model", m, "--json",
                         "--column", "2", "--columns", "word,pos,_,_")
    assert code == 0
    one_line(err, "fstchunk expected: warning:")
    assert json.loads(got)["summary"] == json.loads(want)["summary"]


def test_calibrate_and_dev_files_need_the_training_layout(capsys, files, models):
    m, out = models["wpt", "crf"], files["dir"] / "cal.npz"
    code, _, err = run(capsys, "calibrate", "--model", m, "--input", files["wt", "test"],
                       "-o", out)
    assert code == 2 and not out.exists()
    one_line(err, f"{files['wt', 'test']}:1: the line has 2 columns, but gold tags are read "
                  f"in the model's training layout, 3 columns (word,pos,tag)")
    swapped = files["dir"] / "swapped.test"            # pos,word,tag: the training width
    write_conll([[[r[1], r[0], r[2]] for r in s.rows] for s in read_conll(files["wpt", "test"])],
                swapped)
    code, _, err = run(capsys, "calibrate", "--model", m, "--input", swapped, "-o", out)
    assert code == 2 and not out.exists()
    one_line(err, f"{swapped}:1: column 2 holds ", "(words), but the model read POS tags",
             "give calibrate a held-out file in that layout")
    code, _, err = run(capsys, "calibrate", "--model", m, "--input", files["wpt", "test"],
                       "-o", out)
    assert code == 0 and err == "" and out.exists()
    code, _, err = run(capsys, "train", "--train", files["wpt", "train"], "--dev",
                       files["wt", "test"], "--max-iter", "1", "--quiet", "-o",
                       files["dir"] / "dev.npz")
    assert code == 2
    one_line(err, "--dev and --calibrate files need the training file's columns")


def test_train_columns_must_name_every_column(capsys, files):
    out = files["dir"] / "x.npz"
    code, _, err = run(capsys, "train", "--train", files["w4", "train"], "--columns",
                       "word,pos,tag", "--model-type", "hmm", "-o", out)
    assert code == 2 and not out.exists()
    one_line(err, f"--columns word,pos,tag names 3 of the 4 columns of {files['w4', 'train']}"
                  f":1; name each, with _ for one not read: e.g. word,pos,_,tag")
    code, _, err = run(capsys, "decode", "--model", files["dir"] / "w4.hmm.npz", "--input",
                       files["wpt", "test"], "--columns", "word,pos")
    assert code == 2
    one_line(err, "--columns word,pos names 2 of the 3 columns")
    for kind, iters in (("hmm", []), ("crf", ["--max-iter", "1"])):  # hmm: no iterations
        code, _, err = run(capsys, "train", "--train", files["w4", "train"], "--model-type",
                           kind, *iters, "--quiet", "-o", out)
        assert code == 0
        one_line(err, "fstchunk train: warning:", "the file has 4 columns and no --columns",
                 "column(s) 3 not read", "e.g. word,pos,_,tag")
        code, _, err = run(capsys, "train", "--train", files["w4", "train"], "--model-type",
                           kind, *iters, "--quiet", "-o", out, "--columns",
                           "word=0,pos=1,tag=3")               # explicit: no warning
        assert code == 0 and err == ""


def test_joint_model_records_and_checks_its_layout(capsys, files):
    m = files["dir"] / "joint.npz"
    code, _, err = run(capsys, "joint", "train", "--train", files["w4", "train"], "--columns",
                       "word,pos,_,tag", "--iterations", "1", "--quiet", "-o", m)
    assert code == 0 and err == ""
    assert load_model(m).layout_.held == ("word", "pos", "_", "tag")
    code, _, err = run(capsys, "joint", "decode", "--model", m, "--input", files["wt", "test"])
    assert code == 2
    one_line(err, "fstchunk joint decode: error:", "the line has 2 columns")
    code, a, err = run(capsys, "joint", "decode", "--model", m, "--input", files["wpt", "test"])
    assert code == 0 and err == ""
    code, b, err = run(capsys, "joint", "decode", "--model", m, "--input", files["w4", "test"])
    assert code == 0 and err == ""
    assert [line.split()[-2:] for line in a.splitlines()] == \
        [line.split()[-2:] for line in b.splitlines()]
    code, _, err = run(capsys, "decode", "--model", m, "--input", files["wt", "test"])
    assert code == 2
    code, c, err = run(capsys, "decode", "--model", m, "--input", files["w4", "test"])
    assert code == 0 and err == ""


def test_old_model_files_decode_as_before_with_one_warning(capsys, tmp_path):
    with open(os.path.join(V2, "expected.json"), encoding="utf-8") as fh:
        ref = json.load(fh)
    inp = tmp_path / "in.txt"
    write_conll(ref["train"], inp)
    for name in ("crf", "hmm"):
        code, out, err = run(capsys, "decode", "--model", os.path.join(V2, f"{name}.npz"),
                             "--input", inp)
        assert code == 0
        one_line(err, "records no training layout", "cannot be checked",
                 "reading the words from column 1 and POS tags from column 2")
        assert tags_of(out) == [t for s in ref["expect"][f"{name}-map"] for t in s]


# ------------------------------------------------------------------ --init
@pytest.fixture(scope="module")
def init_model(files):
    path = files["dir"] / "init.npz"
    assert main([str(a) for a in ["train", "--train", files["wpt", "train"], "--features",
                                  "tmpt1", "--max-iter", "5", "--quiet", "-o", path]]) == 0
    return path


@pytest.mark.parametrize("option, value, theirs", [
    ("--scheme", "IOBES", "scheme IOB2"),
    ("--features", "ner", "feature template tmpt1"),
    ("--features", "tmpt1-nopos", "feature template tmpt1"),
    ("--columns", "word,_,tag", "columns word,pos,tag"),
    ("--min-count", "2", "min-count 1"),
])
def test_init_refuses_options_that_contradict_it(capsys, files, init_model, option, value,
                                                 theirs):
    out = files["dir"] / "conflict.npz"
    code, _, err = run(capsys, "train", "--train", files["wpt", "train"], "--init", init_model,
                       "--max-iter", "1", "--quiet", "-o", out, option, value)
    assert code == 2 and not out.exists()
    one_line(err, f"{option} {value} contradicts the --init model's {theirs}",
             f"drop {option} or give a matching one")


def test_init_refuses_hmm_and_files_of_another_layout(capsys, files, init_model):
    out = files["dir"] / "conflict.npz"
    code, _, err = run(capsys, "train", "--train", files["wpt", "train"], "--init", init_model,
                       "--model-type", "hmm", "-o", out)
    assert code == 2
    one_line(err, "--model-type hmm", "--init")
    code, _, err = run(capsys, "train", "--train", files["wt", "train"], "--init", init_model,
                       "--max-iter", "1", "--quiet", "-o", out)
    assert code == 2 and not out.exists()
    one_line(err, "the line has 2 columns", "train --init reads files in the init model's")


@pytest.mark.parametrize("extra", [[], ["--scheme", "iob2"], ["--features", "tmpt1"],
                                   ["--columns", "word,pos,tag"], ["--min-count", "1"],
                                   ["--data-scheme", "IOB2"], ["--objective", "meu"]])
def test_init_trains_with_matching_or_default_options(capsys, files, init_model, extra):
    out = files["dir"] / "ok.npz"
    code, _, err = run(capsys, "train", "--train", files["wpt", "train"], "--init", init_model,
                       "--max-iter", "1", "--quiet", "-o", out, *extra)
    assert code == 0 and err == "", err
    m = load_model(out)
    assert m.fmap_.template == "tmpt1" and m.data_scheme_ == "IOB2"


def test_init_follows_the_init_models_data_scheme_and_template(capsys, files, models):
    """Trained on IOBES data, an --init run without --data-scheme reads the file as
    IOBES (before, it read IOB2 and refused the tags); a word/tag init model's POS-free
    template is what --features tmpt1 means for it."""
    rows = read_conll(files["wpt", "train"])
    iobes = files["dir"] / "iobes.train"
    write_conll([[r[:2] + [t] for r, t in zip(s.rows, convert(s.column(2), "IOB2", "IOBES"))]
                 for s in rows], iobes)
    first = files["dir"] / "iobes.npz"
    code, _, err = run(capsys, "train", "--train", iobes, "--data-scheme", "IOBES",
                       "--features", "tmpt1", "--max-iter", "3", "--quiet", "-o", first)
    assert code == 0 and load_model(first).data_scheme_ == "IOBES"
    code, _, err = run(capsys, "train", "--train", iobes, "--init", first, "--max-iter", "1",
                       "--quiet", "-o", files["dir"] / "iobes2.npz")
    assert code == 0 and err == "", err
    assert load_model(files["dir"] / "iobes2.npz").data_scheme_ == "IOBES"
    wt = models["wt", "crf"]
    code, _, err = run(capsys, "train", "--train", files["wt", "train"], "--init", wt,
                       "--features", "tmpt1", "--max-iter", "1", "--quiet", "-o",
                       files["dir"] / "wt2.npz")
    assert code == 0 and err == "", err


# ------------------------------------------------------------------ segment model
def test_segment_model_records_and_checks_its_layout(capsys, files):
    """The segment reader takes the word first and POS second (of three columns or more):
    a file whose second column holds chunk tags is refused; the model's own layout and a
    four-column file with POS second decode."""
    m = files["dir"] / "seg.npz"
    code, _, err = run(capsys, "segment", "train", "--train", files["wpt", "train"],
                       "--epochs", "1", "--hash-bits", "10", "--quiet", "-o", m)
    assert code == 0, err
    model = load_model(m)
    assert model.layout_.held == ("word", "pos") and model.data_scheme_ == "IOB2"
    bad = files["dir"] / "wcn.test"                    # word, chunk, NER
    write_conll([[[r[0], r[2], r[3]] for r in s.rows] for s in read_conll(files["w4", "test"])],
                bad)
    code, out, err = run(capsys, "segment", "decode", "--model", m, "--input", bad)
    assert code == 2 and out == ""
    one_line(err, "fstchunk segment decode: error:", f"{bad}:1: column 2 holds ",
             "(chunk tags), but the model read POS tags there in training")
    code, a, err = run(capsys, "segment", "decode", "--model", m, "--input",
                       files["wpt", "test"])
    assert code == 0 and err == ""
    code, b, err = run(capsys, "segment", "decode", "--model", m, "--input", files["w4", "test"])
    assert code == 0 and err == ""


def test_old_segment_model_decodes_as_before_with_one_warning(capsys, tmp_path):
    with open(os.path.join(V2, "expected.json"), encoding="utf-8") as fh:
        ref = json.load(fh)
    inp = tmp_path / "in.txt"
    write_conll(ref["train"], inp)
    model = load_model(os.path.join(V2, "segment.npz"))
    assert model.layout_ is None and model.data_scheme_ is None
    code, out, err = run(capsys, "segment", "decode", "--model", os.path.join(V2, "segment.npz"),
                         "--input", inp)
    assert code == 0
    one_line(err, "records no training layout", "cannot be checked")
    assert tags_of(out) == [t for s in ref["expect"]["segment-threshold"] for t in s]
