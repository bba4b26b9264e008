"""Issue 43, items 6, 14 and 18: ``train --model-type hmm`` refuses every option it does
not read (naming it) and reads ``--min-count``; ``--resume`` with another ``--features``,
``--min-count`` or ``--hash-bits`` names the option and both values (it blamed "this
training set's features"); the progress line shows ``dev_f=-`` until a dev F exists."""

import pytest

from fstchunk.cli import main
from fstchunk.io.conll import read_conll, write_conll
from fstchunk.learn.loop import Trainer
from fstchunk.models import load_model


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def data(tmp_path_factory, corpus):
    d = tmp_path_factory.mktemp("training")
    sents = read_conll(corpus("conll2000", "train.txt"))
    write_conll(sents[:60], d / "train.txt")
    write_conll(sents[60:80], d / "dev.txt")
    with open(corpus("genia", "train.jsonl"), encoding="utf-8") as fh:
        (d / "seg.jsonl").write_text("".join(next(fh) for _ in range(40)), encoding="utf-8")
    return d


HMM_REFUSED = [("--features", "tmpt1"), ("--l2", "0.5"), ("--objective", "meu"),
               ("--loss", "f"), ("--beta", "2"), ("--C", "1"), ("--tol", "0.1"),
               ("--init", "x.npz"), ("--dev", "{dev}"), ("--max-iter", "150"),
               ("--dev-every", "3"), ("--select", "last"), ("--checkpoint-every", "2"),
               ("--resume",), ("--workers", "2"), ("--scheduler", "local:2"),
               ("--calibrate", "{dev}"), ("--partial",)]


@pytest.mark.parametrize("option", HMM_REFUSED, ids=[o[0] for o in HMM_REFUSED])
def test_hmm_refuses_what_it_does_not_read(data, capsys, option):
    """Each option the counting HMM ignores, even at its default value: one error naming
    it, before any work."""
    argv = [a.format(dev=data / "dev.txt") for a in option]
    code, out, err = run(capsys, "train", "--model-type", "hmm", "--train",
                         data / "train.txt", "-o", data / "h.npz", *argv)
    assert code == 2 and out == "", err
    assert err.startswith(f"fstchunk train: error: {option[0]}: --model-type hmm")
    assert len(err.strip().splitlines()) == 1


def test_hmm_reads_min_count_and_quiet(data, capsys):
    code, _, err = run(capsys, "train", "--model-type", "hmm", "--train", data / "train.txt",
                       "--min-count", "3", "--quiet", "-o", data / "h.npz")
    assert code == 0, err
    assert load_model(data / "h.npz").settings_["min_count"] == 3
    assert run(capsys, "train", "--model-type", "hmm", "--train", data / "train.txt", "-o",
               data / "h.npz")[0] == 0
    assert load_model(data / "h.npz").settings_["min_count"] == 2   # the HMM's own default


def _interrupt_at(monkeypatch, step: int) -> None:
    """Ctrl-C after ``step`` training steps of the next Trainer."""
    real = Trainer.__init__

    def init(self, *args, **kwargs):
        real(self, *args, **kwargs)

        def stop(progress):
            if progress.iteration == step:
                raise KeyboardInterrupt
        self.callbacks.append(stop)
    monkeypatch.setattr(Trainer, "__init__", init)


def test_resume_names_the_option_that_differs(data, capsys, monkeypatch, tmp_path):
    out = tmp_path / "m.npz"
    base = ["train", "--train", data / "train.txt", "--features", "tmpt3", "--max-iter", "6",
            "--checkpoint-every", "1", "--quiet", "-o", out]
    with monkeypatch.context() as m:
        _interrupt_at(m, 2)
        assert run(capsys, *base)[0] == 130
    for change, said in ((["--features", "tmpt1"],
                          "template: 'tmpt3' vs 'tmpt1' (--features)"),
                         (["--min-count", "2"], "min_count: 1 vs 2 (--min-count)")):
        argv = [a for a in base if a not in ("--features", "tmpt3")] + change + ["--resume"]
        code, _, err = run(capsys, *argv)
        assert code == 2 and said in err, err
        assert "this training set's features" not in err
    assert run(capsys, *base, "--resume")[0] == 0                 # the checkpoint is intact


def test_resume_names_hash_bits(data, capsys, monkeypatch, tmp_path):
    out = tmp_path / "s.npz"
    base = ["segment", "train", "--train", data / "seg.jsonl", "--max-iter", "3",
            "--hash-bits", "12", "--quiet", "-o", out]
    with monkeypatch.context() as m:
        _interrupt_at(m, 1)
        assert run(capsys, *base)[0] == 130
    code, _, err = run(capsys, *base[:-3], "--hash-bits", "11", "--quiet", "-o", out,
                       "--resume")
    assert code == 2 and "D: 4096 vs 2048 (--hash-bits 12 vs 11)" in err, err
    assert "does not fit" not in err


def test_progress_shows_no_nan_before_the_first_dev_f(data, capsys, tmp_path):
    """An epoch line before the first dev measurement (--dev-every 2) shows dev_f=-."""
    code, out, err = run(capsys, "segment", "train", "--train", data / "seg.jsonl", "--dev",
                         data / "seg.jsonl", "--epochs", "2", "--dev-every", "2",
                         "--hash-bits", "12", "-o", tmp_path / "s.npz")
    assert code == 0, err
    lines = err.splitlines()
    assert len(lines) == 2 and "dev_f=-" in lines[0] and "nan" not in err, err
    assert "dev_f=-" not in lines[1]


@pytest.mark.parametrize("argv, said", [
    (["--beta", "2"], "--beta: --objective ml does not read β"),
    (["--objective", "perceptron", "--beta", "0.5"], "--beta: --objective perceptron"),
    (["--objective", "max-margin", "--beta", "2"],
     "--beta: --objective max-margin --loss hamming does not read β"),
    (["--loss", "hamming"], "--loss: --objective ml has no loss"),
    (["--format", "crfsuite", "--beta", "2"], "--beta: --objective ml does not read β"),
])
def test_train_refuses_the_objective_options_it_would_ignore(data, capsys, argv, said,
                                                             tmp_path):
    """The same family in the CRF: β and the loss where the objective reads neither."""
    code, out, err = run(capsys, "train", "--train", data / "train.txt", "--max-iter", "1",
                         "--quiet", "-o", tmp_path / "m.npz", *argv)
    assert code == 2 and said in err, err


def test_train_takes_beta_where_it_is_read(data, capsys, tmp_path):
    for argv in (["--objective", "meu", "--beta", "2"],
                 ["--objective", "max-margin", "--loss", "f", "--beta", "2"]):
        code, out, err = run(capsys, "train", "--train", data / "train.txt", "--max-iter",
                             "1", "--quiet", "-o", tmp_path / "m.npz", *argv)
        assert code == 0, err
