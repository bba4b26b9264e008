"""Issue 32: progress bars only on a terminal.  Written to a file or a pipe, every
command that shows progress writes plain lines — no carriage return — one per epoch or
pass (online learners) or per N iterations (L-BFGS), with the bar's figures; a
terminal still gets the tqdm bar (:func:`fstchunk.core.progress.is_terminal` forced)."""

import io
import os

import pytest
from tqdm import tqdm

from fstchunk.cli import main
from fstchunk.core import progress as progress_module
from fstchunk.core.progress import LineLog, is_terminal, progress
from fstchunk.io.conll import read_conll, write_conll
from fstchunk.models import load_model


def _steps(log: LineLog, n: int) -> None:
    for k in range(n):
        log.set_postfix(step=k + 1, value=0.5 * k, refresh=False)
        log.update(1)
    log.close()


@pytest.mark.parametrize("total, every, initial", [(10, 3, 0), (10, 1, 0), (10, 0, 0),
                                                   (12, 5, 4), (7, 10, 0), (9, 3, 0)])
def test_line_log_writes_a_line_every_n_and_one_at_the_end(total, every, initial):
    out = io.StringIO()
    log = progress(total, "train x", "it", initial=initial, every=every, stream=out)
    assert isinstance(log, LineLog)
    _steps(log, total - initial)
    marks = [n for n in range(initial + 1, total + 1) if every and n % every == 0]
    if not marks or marks[-1] != total:
        marks.append(total)                                # the last line, at close
    lines = out.getvalue().split("\n")
    assert lines[-1] == "" and "\r" not in out.getvalue()
    assert [int(x.split(": ")[1].split("/")[0]) for x in lines[:-1]] == marks
    for x, n in zip(lines, marks):                         # the figures of that step
        assert x.startswith(f"train x: {n}/{total} it, ")
        assert x.endswith(f", step={n - initial}, value={0.5 * (n - initial - 1):.5g}")
    assert log.lines == len(marks)


def test_nothing_to_report_writes_nothing():
    out = io.StringIO()
    with progress(5, "idle", initial=5, every=1, stream=out):
        pass
    assert out.getvalue() == ""
    with progress(5, "quiet", enabled=False, stream=out) as bar:
        bar.set_postfix(a=1)
        bar.update(3)
    assert out.getvalue() == ""


def test_a_terminal_gets_the_bar():
    out = io.StringIO()
    bar = progress(4, "t", stream=out, tty=True)
    assert isinstance(bar, tqdm)
    bar.update(4)
    bar.close()
    assert "\r" in out.getvalue()
    assert isinstance(progress(4, "t", stream=out), LineLog)       # a StringIO: no terminal


def test_is_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    closed = open(os.devnull)
    closed.close()                                   # isatty() raises ValueError
    assert is_terminal(Tty()) and not is_terminal(io.StringIO())
    assert not is_terminal(closed) and not is_terminal(object())


# ---- every command that shows progress ----------------------------------------------

@pytest.fixture(scope="module")
def data(tmp_path_factory, corpus):
    d = tmp_path_factory.mktemp("progress")
    write_conll(read_conll(corpus("conll2000", "train.txt"))[:30], d / "train.txt")
    write_conll(read_conll(corpus("conll2000", "dev.txt"))[:10], d / "dev.txt")
    return d


def _every(n: int, k: int) -> int:
    """Lines of n steps reported each k, with the last one."""
    return n // k + (n % k != 0)


COMMANDS = {
    # name: (argv after the data folder, the line's start, lines expected from the model)
    "train ml": (["train", "--train", "{d}/train.txt", "--dev", "{d}/dev.txt", "--features",
                  "tmpt1", "--l2", "0.1", "--max-iter", "8", "--dev-every", "3"],
                 "train ml: ", lambda s: _every(s["iterations"], 3)),
    "train ml, no dev": (["train", "--train", "{d}/train.txt", "--features", "tmpt1", "--l2",
                          "0.1", "--max-iter", "12", "--checkpoint-every", "4"],
                         "train ml: ", lambda s: _every(s["iterations"], 4)),
    "train perceptron": (["train", "--train", "{d}/train.txt", "--features", "tmpt1",
                          "--objective", "perceptron", "--max-iter", "3"],
                         "train perceptron: ", lambda s: s["iterations"]),
    "train max-margin": (["train", "--train", "{d}/train.txt", "--features", "tmpt1",
                          "--objective", "max-margin", "--max-iter", "2"],
                         "train max-margin: ", lambda s: s["iterations"]),
    "joint perceptron": (["joint", "train", "--train", "{d}/train.txt", "--sentences", "5",
                          "--algorithm", "perceptron", "--iterations", "3"],
                         "train perceptron: ", lambda s: 3),
    "joint crf": (["joint", "train", "--train", "{d}/train.txt", "--sentences", "2",
                   "--algorithm", "crf", "--iterations", "11"],
                  "train ml: ", lambda s: _every(s["iteration"], 10)),
    "segment train": (["segment", "train", "--train", "{d}/train.txt", "--dev",
                       "{d}/dev.txt", "--epochs", "3"],
                      "train multilabel: ", lambda s: 3),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_log_gets_lines_and_a_terminal_a_bar(name, data, capsys, monkeypatch):
    args, start, expected = COMMANDS[name]
    model = str(data / "m.npz")
    argv = [a.format(d=data) for a in args] + ["-o", model]
    capsys.readouterr()
    assert main(argv) == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "\r" not in err and err.endswith("\n")
    assert lines and all(x.startswith(start) for x in lines), err
    assert len(lines) == expected(load_model(model).settings_), err
    if name == "segment train":                     # the epoch's figures, dev F included
        assert [x.split(", ")[0] for x in lines] == [
            f"train multilabel: {k}/3 epoch" for k in (1, 2, 3)]
        assert all("updates=" in x and "dev_f=" in x for x in lines)
    # a dev F column where there is a dev set, none (not "dev_f=nan") where there is not
    assert all(("dev_f=" in x) == ("--dev" in args) for x in lines), err
    assert "nan" not in err
    monkeypatch.setattr(progress_module, "is_terminal", lambda stream: True)
    assert main(argv) == 0
    assert "\r" in capsys.readouterr().err
    assert main(argv + ["--quiet"]) == 0
    assert capsys.readouterr().err == ""
