"""Issue 16 at the command line: every option checked where it is read, inputs that are
empty or not what the command reads refused with one line naming file:line, outputs
that echo their input faithfully, help that shows every default."""

import argparse

import pytest

from fstchunk import __version__
from fstchunk.cli import build_parser, main
from fstchunk.io.conll import read_conll, write_conll
from oracles import TINY_CONLL

TRAIN = TINY_CONLL


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def train_file(tmp_path):
    p = tmp_path / "train.txt"
    p.write_text(TRAIN)
    return p


@pytest.fixture
def hmm_model(tmp_path, train_file, capsys):
    model = tmp_path / "hmm.npz"
    code, _, err = run(capsys, "train", "--train", train_file, "--model-type", "hmm",
                       "-o", model)
    assert code == 0, err
    return model


def one_error_line(err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for f in fragments:
        assert f in lines[0], (f, lines[0])


# ------------------------------------------------------------------ options
@pytest.mark.parametrize("argv,fragment", [
    (["eval", "x", "--beta", "nan"], "--beta: must be a finite number >= 0 (0, or 1e-150 to "
                                     "1e+150), got 'nan'"),
    (["eval", "x", "--beta", "inf"], "--beta: must be a finite number >= 0"),
    (["eval", "x", "--beta", "-1"], "--beta: must be a finite number >= 0 (0, or 1e-150 to "
                                    "1e+150), got '-1'"),
    (["eval", "x", "--beta", "1e-200"], "--beta: must be a finite number >= 0"),
    (["decode", "--model", "m", "--input", "x", "--beta", "-0.5"], "--beta"),
    (["train", "--train", "x", "-o", "m", "--beta", "0"], "--beta: must be a finite number > 0 "
                                                          "(1e-150 to 1e+150), got '0'"),
    (["decode", "--model", "m", "--input", "x", "--k", "0"], "--k: must be an integer >= 1"),
    (["train", "--train", "x", "-o", "m", "--beta", "nan"], "--beta"),
    (["train", "--train", "x", "-o", "m", "--l2", "-1"], "--l2: must be a finite number >= 0"),
    (["train", "--train", "x", "-o", "m", "--l2", "nan"], "--l2"),
    (["train", "--train", "x", "-o", "m", "--max-iter", "-5"], "--max-iter: must be an integer"),
    (["train", "--train", "x", "-o", "m", "--max-iter", "1.5"], "--max-iter"),
    (["train", "--train", "x", "-o", "m", "--columns", "word,color"], "unknown column name"),
    (["joint", "train", "--train", "x", "-o", "m", "--sentences", "-5"], "--sentences"),
    (["joint", "train", "--train", "x", "-o", "m", "--iterations", "0"], "--iterations"),
    (["joint", "decode", "--model", "m", "--input", "x", "--beta", "nan"], "--beta"),
    (["grammar", "info", "T", "--max-length", "0"], "--max-length"),
])
def test_bad_option_values_are_one_usage_error(capsys, argv, fragment):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


def test_grammar_tags_outside_the_scheme_are_refused(capsys):
    code, _, err = run(capsys, "grammar", "info", "validity", "--tags", "O,B-NP,X")
    assert code == 2
    one_error_line(err, "--tags", "'X'", "IOB2")
    code, _, err = run(capsys, "grammar", "info", "validity", "--tags", "O,,B-NP")
    assert code == 2 and "empty items" in err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"fstchunk {__version__}"


def _parsers(parser: argparse.ArgumentParser, name="fstchunk"):
    yield name, parser
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub, p in a.choices.items():
                yield from _parsers(p, f"{name} {sub}")


def test_every_option_has_help_and_every_help_shows_defaults():
    parsers = list(_parsers(build_parser()))
    assert {"fstchunk train", "fstchunk joint calibrate", "fstchunk decode"} <= {
        n for n, _ in parsers}
    for name, p in parsers:
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._VersionAction,
                              argparse._SubParsersAction)):
                continue
            assert a.help, f"{name} {a.dest}: no help text"
        text = p.format_help()
        if name == "fstchunk train":
            assert "(default: 150)" in text and "(default: repair)" in text
            assert "ml " in text.split("--l2")[1]       # the per-objective λ defaults


# ------------------------------------------------------------------ inputs
def test_empty_inputs_are_one_error_naming_the_file(capsys, tmp_path, hmm_model):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n-DOCSTART- -X- O\n\n")
    for argv in (["train", "--train", empty, "-o", tmp_path / "m.npz"],
                 ["train", "--train", empty, "--model-type", "hmm", "-o", tmp_path / "m.npz"],
                 ["expected", empty, "--model", hmm_model],
                 ["decode", "--model", hmm_model, "--input", empty],
                 ["eval", empty],
                 ["joint", "train", "--train", empty, "-o", tmp_path / "j.npz"]):
        code, out, err = run(capsys, *argv)
        assert code == 2, argv
        one_error_line(err, str(empty))
    assert not (tmp_path / "m.npz").exists() and not (tmp_path / "j.npz").exists()


def test_eval_refuses_a_gold_only_file(capsys, train_file):
    code, out, err = run(capsys, "eval", train_file)
    assert code == 2 and out == ""
    one_error_line(err, f"{train_file}:1:", "gold column", "'DT'", "not a chunk tag")


def test_eval_refuses_a_predicted_column_of_words(capsys, tmp_path):
    f = tmp_path / "p.txt"
    f.write_text("The B-NP The\ndog I-NP dog\n")
    code, _, err = run(capsys, "eval", f)
    assert code == 2
    one_error_line(err, f"{f}:1:", "predicted column", "'The'")


def test_invalid_gold_is_repaired_with_a_warning_or_refused(capsys, tmp_path):
    f = tmp_path / "t.txt"
    f.write_text(TRAIN.replace("barks VBZ B-VP", "barks VBZ I-VP"))    # line 3
    code, out, err = run(capsys, "train", "--train", f, "--model-type", "hmm",
                         "-o", tmp_path / "m.npz")
    assert code == 0
    assert f"warning: {f}: repaired 1 invalid tag sequence ({f}:3 ('I-VP'))" in err
    code, out, err = run(capsys, "train", "--train", f, "--model-type", "hmm",
                         "--on-invalid", "error", "-o", tmp_path / "m2.npz")
    assert code == 2 and not (tmp_path / "m2.npz").exists()
    one_error_line(err, f"{f}:3: tag 'I-VP' cannot stand after 'I-NP'")


def test_expected_scores_option_with_a_model_says_use_model(capsys, train_file, hmm_model):
    code, _, err = run(capsys, "expected", train_file, "--scores", hmm_model)
    assert code == 2
    one_error_line(err, "is a saved fstchunk model", f"--model {hmm_model}")
    code, out, err = run(capsys, "expected", train_file, "--model", hmm_model)
    assert code == 0 and "mean per-sentence E[F_1]" in out


# ------------------------------------------------------------------ outputs
def test_decode_keeps_tabs_docstart_and_blank_lines(capsys, tmp_path, hmm_model):
    """One delimiter throughout (the first token line's: a tab), a -DOCSTART- line
    with the tag O, blank lines kept: a file conlleval.pl reads with -d '\\t'."""
    src = ("-DOCSTART-\tX\n\nThe\tDT\ndog\tNN\n\n\n"
           "Dogs NNS\nrun VBP\n")
    f = tmp_path / "in.txt"
    f.write_text(src)
    out_file = tmp_path / "out.txt"
    code, out, err = run(capsys, "decode", "--model", hmm_model, "--input", f, "-o", out_file)
    assert code == 0, err
    lines = out_file.read_text().splitlines()
    assert lines[:3] == ["-DOCSTART-\tX\tO", "", lines[2]] and lines[2].startswith("The\tDT\t")
    assert lines[3].startswith("dog\tNN\t") and lines[4:6] == ["", ""]
    assert lines[6].startswith("Dogs\tNNS\t") and lines[6].count(" ") == 0
    assert len(lines) == len(src.splitlines())
    got = read_conll(out_file)
    assert [len(s) for s in got] == [2, 2] and all(len(r) == 3 for s in got for r in s.rows)


def test_outputs_are_checked_before_the_work(capsys, tmp_path, train_file, hmm_model):
    missing = tmp_path / "no" / "such" / "m.npz"
    for argv in (["train", "--train", train_file, "-o", missing],
                 ["train", "--train", train_file, "--model-type", "hmm", "-o", tmp_path],
                 ["decode", "--model", hmm_model, "--input", train_file, "-o", missing],
                 ["joint", "train", "--train", train_file, "-o", missing]):
        code, out, err = run(capsys, *argv)
        assert code == 2, argv
        one_error_line(err)
        assert "wrote" not in out
    assert not missing.parent.exists()


# ------------------------------------------------------------------ resume and Ctrl-C
def _interrupt_after(monkeypatch, n: int):
    """Make the n-th L-BFGS iteration end in Ctrl-C (as a user's KeyboardInterrupt)."""
    import scipy.optimize

    real = scipy.optimize.minimize

    def minimize(fun, x0, callback=None, **kw):
        seen = [0]

        def cb(xk, *a):
            callback(xk, *a)
            seen[0] += 1
            if seen[0] == n:
                raise KeyboardInterrupt
        return real(fun, x0, callback=cb, **kw)

    monkeypatch.setattr(scipy.optimize, "minimize", minimize)


def test_ctrl_c_saves_the_checkpoint_names_it_and_exits_130(capsys, tmp_path, train_file,
                                                            monkeypatch):
    model = tmp_path / "m.npz"
    _interrupt_after(monkeypatch, 3)
    code, out, err = run(capsys, "train", "--train", train_file, "--features", "tmpt1",
                         "--max-iter", "30", "--checkpoint-every", "100", "--quiet", "-o", model)
    assert code == 130 and not model.exists()
    one_error_line(err, "interrupted", f"{model}.ckpt", "--resume")
    assert (tmp_path / "m.npz.ckpt").exists()
    monkeypatch.undo()
    # resuming with other settings is refused, naming the field; the same settings resume
    code, out, err = run(capsys, "train", "--train", train_file, "--features", "tmpt1",
                         "--max-iter", "30", "--quiet", "--resume", "--objective", "meu-corpus",
                         "-o", model)
    assert code == 2
    one_error_line(err, "objective")
    other = tmp_path / "other.txt"
    other.write_text(TRAIN.replace("dog", "cow"))
    code, out, err = run(capsys, "train", "--train", other, "--features", "tmpt1",
                         "--max-iter", "30", "--quiet", "--resume", "-o", model)
    assert code == 2
    one_error_line(err, "train_sha256")
    code, out, err = run(capsys, "train", "--train", train_file, "--features", "tmpt1",
                         "--max-iter", "30", "--quiet", "--resume", "-o", model)
    assert code == 0 and model.exists(), err
    assert "resuming from" in out and not (tmp_path / "m.npz.ckpt").exists()


def test_resume_without_a_checkpoint_is_refused(capsys, tmp_path, train_file):
    model = tmp_path / "m.npz"
    code, out, err = run(capsys, "train", "--train", train_file, "--resume", "--quiet",
                         "-o", model)
    assert code == 2 and not model.exists()
    one_error_line(err, "no checkpoint", f"{model}.ckpt")


def test_ctrl_c_in_other_commands_is_one_line(capsys, monkeypatch, train_file, hmm_model):
    import fstchunk.cli.decoding as decoding

    def boom(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(decoding, "iter_decode_sentences", boom)
    code, out, err = run(capsys, "decode", "--model", hmm_model, "--input", train_file)
    assert code == 130
    one_error_line(err, "fstchunk decode: interrupted")


def test_decode_and_expected_read_another_layout_with_columns(capsys, tmp_path, train_file,
                                                              hmm_model):
    """--columns on decode/expected moves the file's word and POS to where the model reads
    them: a file with POS first and word second tags exactly like the usual layout."""
    sents = read_conll(train_file)
    swapped = tmp_path / "swapped.txt"
    write_conll([[[r[1], r[0], r[2]] for r in s.rows] for s in sents], swapped)
    code, want, err = run(capsys, "decode", "--model", hmm_model, "--input", train_file)
    assert code == 0, err
    code, got, err = run(capsys, "decode", "--model", hmm_model, "--input", swapped,
                         "--columns", "pos,word,tag")
    assert code == 0, err
    assert [line.split()[-1] for line in got.splitlines() if line.strip()] == \
        [line.split()[-1] for line in want.splitlines() if line.strip()]
    code, a, _ = run(capsys, "expected", train_file, "--model", hmm_model, "--json")
    code2, b, err = run(capsys, "expected", swapped, "--model", hmm_model, "--json",
                        "--columns", "pos,word,tag")
    assert code == code2 == 0, err
    assert a == b


@pytest.mark.parametrize("argv,victim", [
    (["train", "--train", "{t}", "-o", "{t}"], "t"),
    (["train", "--train", "{t}", "--dev", "{d}", "-o", "{d}"], "d"),
    (["train", "--train", "{t}", "--init", "{m}", "-o", "{m}"], "m"),
    (["train", "--train", "{t}", "--model-type", "hmm", "-o", "{t}"], "t"),
    (["decode", "--model", "{m}", "--input", "{t}", "-o", "{m}"], "m"),
    (["decode", "--model", "{m}", "--input", "{t}", "-o", "{t}"], "t"),
    (["decode", "--model", "{m}", "--input", "{t}", "-o", "{link}"], "t"),
    (["calibrate", "--model", "{m}", "--input", "{t}", "-o", "{t}"], "t"),
    (["joint", "train", "--train", "{t}", "-o", "{t}"], "t"),
    (["joint", "decode", "--model", "{m}", "--input", "{t}", "-o", "{t}"], "t"),
    (["segment", "train", "--train", "{t}", "-o", "{t}"], "t"),
    (["segment", "decode", "--model", "{m}", "--input", "{t}", "-o", "{m}"], "m"),
    (["grammar", "export", "validity", "--from-data", "{t}", "-o", "{t}"], "t"),
])
def test_output_over_an_input_is_refused_before_any_work(capsys, tmp_path, train_file,
                                                         hmm_model, argv, victim):
    dev = tmp_path / "dev.txt"
    dev.write_text(train_file.read_text())
    link = tmp_path / "link.txt"
    link.symlink_to(train_file)
    names = {"t": train_file, "d": dev, "m": hmm_model, "link": link}
    before = {k: p.read_bytes() for k, p in names.items() if k != "link"}
    code, out, err = run(capsys, *[a.format(**names) for a in argv])
    assert code == 2, err
    one_error_line(err, "writing it would destroy")
    assert {k: p.read_bytes() for k, p in names.items() if k != "link"} == before


def test_calibrate_may_replace_its_model(capsys, tmp_path, train_file):
    model = tmp_path / "crf.npz"
    code, _, err = run(capsys, "train", "--train", train_file, "--max-iter", "3", "--quiet",
                       "-o", model)
    assert code == 0, err
    code, out, err = run(capsys, "calibrate", "--model", model, "--input", train_file,
                         "-o", model)
    assert code == 0 and "temperature" in out, err
