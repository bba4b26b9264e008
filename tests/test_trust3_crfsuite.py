"""Issue 43, items 1, 2, 8 and 15: an attribute CRF never decodes from transitions
alone without a word (a CoNLL file or space-separated CRFsuite data is refused at its
line in every output format; a sequence without a known attribute is a warning, an
input whose first sequences carry none an error); ``fstchunk calibrate`` calibrates an
attribute CRF on CRFsuite data, and the advice to do so names the command on the
command line and the Python call in Python; a CRFsuite model file given where an
fstchunk model is expected names ``fstchunk import crfsuite``."""

import os

import pytest

from fstchunk.cli import main
from fstchunk.core.errors import InputError, ModelFileError
from fstchunk.decoding.decode import decode_map
from fstchunk.io.conll import read_conll, write_conll
from fstchunk.io.crfsuite import Sequence, read_data, write_data
from fstchunk.models import load_model
from fstchunk.models.attribute_crf import AttributeCRF
from fstchunk.models.features import token_features


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _items(s):
    return [dict.fromkeys(f, 1.0) for f in token_features(s.column(0), s.column(1), "tmpt1")]


@pytest.fixture(scope="module")
def files(tmp_path_factory, corpus):
    d = tmp_path_factory.mktemp("crfsuite")
    sents = read_conll(corpus("conll2000", "train.txt"))
    train, dev = sents[:150], sents[150:190]
    write_conll(dev, d / "dev.txt")
    for name, part in (("train", train), ("dev", dev)):
        write_data(d / f"{name}.crfsuite", [Sequence(s.column(2), _items(s)) for s in part])
    (d / "dev_spaces.crfsuite").write_text(
        (d / "dev.crfsuite").read_text(encoding="utf-8").replace("\t", " "), encoding="utf-8")
    X, y = [_items(s) for s in train], [s.column(2) for s in train]
    AttributeCRF("IOB2", max_iter=20).fit(X, y).save(d / "ml.npz")
    AttributeCRF("IOB2", objective="max-margin", max_iter=10).fit(X, y).save(d / "mm.npz")
    return d


@pytest.mark.parametrize("fmt", ["jsonl", "html", "crfsuite", "conll"])
def test_a_conll_file_is_refused_by_every_output_format(files, capsys, fmt, tmp_path):
    """The CoNLL file (space-separated) an attribute CRF was handed, in every format:
    one error at its first line, no output (it used to be decoded, every line a label
    without attributes)."""
    # a CoNLL file without colons (CRFsuite's value separator stops nothing here)
    clean = tmp_path / "clean.txt"
    write_conll([s for s in read_conll(files / "dev.txt")
                 if not any(":" in c for r in s.rows for c in r)], clean)
    code, out, err = run(capsys, "decode", "--model", files / "ml.npz", "--input", clean,
                         "--format", fmt)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    if fmt == "conll":
        assert "an attribute CRF reads CRFsuite data" in err
    else:
        assert f"{clean}:1: no tab on the line" in err and "holds spaces" in err


def test_space_separated_crfsuite_data_is_refused_as_train_and_expected_refuse_it(
        files, capsys):
    for argv in (["decode", "--model", files / "ml.npz", "--format", "crfsuite", "--input"],
                 ["expected", "--model", files / "ml.npz", "--format", "crfsuite"],
                 ["train", "--format", "crfsuite", "-o", files / "x.npz", "--train"],
                 ["calibrate", "--model", files / "mm.npz", "-o", files / "x.npz",
                  "--input"]):
        code, out, err = run(capsys, *argv, files / "dev_spaces.crfsuite")
        assert code == 2 and out == "", (argv, err)
        assert f"dev_spaces.crfsuite:1:" in err, (argv, err)


def test_sequences_without_a_known_attribute(files, capsys, tmp_path):
    """The first sequences carry no attribute the model knows: refused before any work;
    a later sequence without one: a warning naming it, the others decoded as before."""
    unknown = "B-NP\tzz=1\nI-NP\tzz=2\n\n"
    alone = tmp_path / "alone.crfsuite"
    alone.write_text(unknown, encoding="utf-8")
    for argv in (["decode", "--model", files / "ml.npz", "--format", "crfsuite", "--input"],
                 ["decode", "--model", files / "ml.npz", "--format", "jsonl", "--input"],
                 ["expected", "--model", files / "ml.npz", "--format", "crfsuite"]):
        code, out, err = run(capsys, *argv, alone)
        assert code == 2 and out == "" and "carries an attribute the model knows" in err, err
    mixed = tmp_path / "mixed.crfsuite"
    mixed.write_text((files / "dev.crfsuite").read_text(encoding="utf-8") + unknown,
                     encoding="utf-8")
    code, out, err = run(capsys, "decode", "--model", files / "ml.npz", "--format",
                         "crfsuite", "--input", mixed)
    assert code == 0
    assert "warning" in err and "no item of this sequence (2 items)" in err, err
    last = len((files / "dev.crfsuite").read_text(encoding="utf-8").splitlines()) + 1
    assert f"mixed.crfsuite:{last}:" in err
    want = run(capsys, "decode", "--model", files / "ml.npz", "--format", "crfsuite",
               "--input", files / "dev.crfsuite")[1]
    assert out.startswith(want)


def test_calibrate_an_attribute_crf_on_crfsuite_data(files, capsys, tmp_path):
    """The advice of an uncalibrated margin-trained attribute CRF leads somewhere: the
    command it names calibrates it, after which MEU decodes."""
    mm = files / "mm.npz"
    code, out, err = run(capsys, "decode", "--model", mm, "--format", "crfsuite", "--input",
                         files / "dev.crfsuite", "--decoder", "meu")
    assert code == 2 and out == ""
    assert f"fstchunk calibrate --model {mm} --format crfsuite --input HELDOUT" in err, err
    cal = tmp_path / "cal.npz"
    code, out, err = run(capsys, "calibrate", "--model", mm, "--input",
                         files / "dev.crfsuite", "-o", cal)
    assert code == 0, err
    assert "temperature" in out and f"wrote {cal}" in out
    model = load_model(cal)
    assert model.probabilistic and model.temperature > 0
    # the same T as the Python call
    seqs = read_data(files / "dev.crfsuite")
    again = load_model(mm)
    again.calibrate(([s.items for s in seqs], [s.labels for s in seqs]))
    assert again.temperature == pytest.approx(model.temperature, rel=1e-9)
    code, out, err = run(capsys, "decode", "--model", cal, "--format", "crfsuite", "--input",
                         files / "dev.crfsuite", "--decoder", "meu")
    assert code == 0 and out, err
    # --format crfsuite given explicitly; a CoNLL format or --data-scheme refused
    assert run(capsys, "calibrate", "--model", mm, "--format", "crfsuite", "--input",
               files / "dev.crfsuite", "-o", cal)[0] == 0
    code, _, err = run(capsys, "calibrate", "--model", mm, "--format", "conll", "--input",
                       files / "dev.txt", "-o", cal)
    assert code == 2 and "give --format crfsuite" in err
    code, _, err = run(capsys, "calibrate", "--model", mm, "--data-scheme", "IOB1",
                       "--input", files / "dev.crfsuite", "-o", cal)
    assert code == 2 and "--data-scheme is for CoNLL files" in err


def test_the_python_message_names_the_python_call(files):
    mm = load_model(files / "mm.npz")
    X = [_items(s) for s in read_conll(files / "dev.txt")[:3]]
    with pytest.raises(InputError, match=r"crf\.calibrate\(X_held_out, y_held_out\)") as e:
        mm.lattices(X)
    assert "fstchunk calibrate" not in str(e.value)
    assert [decode_map(lat).tags for lat in mm.lattices(X, require_probabilities=False)]


def test_a_crfsuite_model_file_names_the_import(files, capsys, tmp_path):
    pycrfsuite = pytest.importorskip("pycrfsuite")
    trainer = pycrfsuite.Trainer(verbose=False)
    for s in read_conll(files / "dev.txt"):
        trainer.append(pycrfsuite.ItemSequence(_items(s)), s.column(2))
    trainer.set_params({"max_iterations": 3})
    path = tmp_path / "m.crfsuite"
    trainer.train(str(path))
    with pytest.raises(ModelFileError, match="a CRFsuite model file.*fstchunk import "
                                             "crfsuite") as e:
        load_model(path)
    assert "from_crfsuite" in str(e.value)
    for argv in (["decode", "--model", path, "--input", files / "dev.txt"],
                 ["expected", files / "dev.txt", "--model", path],
                 ["select", "--model", path, "--input", files / "dev.txt", "--budget", "1",
                  "-o", tmp_path / "o.txt"],
                 ["calibrate", "--model", path, "--input", files / "dev.txt", "-o",
                  tmp_path / "o.npz"],
                 ["train", "--train", files / "dev.txt", "--init", path, "-o",
                  tmp_path / "o.npz"]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and f"{path}: a CRFsuite model file" in err, (argv, err)
        assert f"fstchunk import crfsuite {path}" in err


def test_import_of_an_fstchunk_model_says_it_needs_none(files, capsys, tmp_path):
    code, out, err = run(capsys, "import", "crfsuite", files / "ml.npz", "-o",
                         tmp_path / "x.npz")
    assert code == 2 and "an fstchunk model needs no import" in err, err
