"""Issue 43, item 9: Ctrl-C while a command starts — its modules importing, its
arguments parsing, its model loading — ends with one line and exit status 130, for
every command, never a KeyboardInterrupt traceback.

A Ctrl-C at a chosen import is made exact by an import hook in a fresh interpreter; a
real SIGINT shortly after start checks the same end to end."""

import os
import signal
import subprocess
import sys
import time

import pytest

from fstchunk.cli import COMMANDS, main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: a fresh interpreter: Ctrl-C when ``module`` is imported, then the command line
HOOK = """
import sys
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupt())
sys.argv = ["fstchunk", *{argv!r}]
from fstchunk.__main__ import run
sys.exit(run())
"""

#: a command line of each command (what it is given matters not: it stops first)
ARGV = {"demo": ["demo"], "eval": ["eval", "x.txt"], "expected": ["expected", "x.txt"],
        "decode": ["decode", "--model", "m.npz"], "train": ["train", "--train", "x", "-o", "m"],
        "calibrate": ["calibrate", "--model", "m", "--input", "x", "-o", "m"],
        "joint": ["joint", "decode", "--model", "m", "--input", "x"],
        "grammar": ["grammar", "list"], "import": ["import", "crfsuite", "m", "-o", "x"],
        "select": ["select", "--model", "m", "--input", "x", "--budget", "1", "-o", "y"],
        "segment": ["segment", "eval", "a", "b"], "compare": ["compare", "g", "a", "b"],
        "data": ["data", "list"]}


def _interrupted(module: str, argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", HOOK.format(module=module, argv=argv)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHONPATH": ROOT})


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_ctrl_c_while_the_command_module_imports(command):
    module, _ = COMMANDS[command]
    r = _interrupted(f"fstchunk.cli.{module}", ARGV[command])
    assert r.returncode == 130, r.stderr
    assert r.stderr == f"fstchunk {command.split()[0]}: interrupted\n", r.stderr


@pytest.mark.parametrize("module", ["fstchunk.cli", "fstchunk.cli.common", "numpy"])
def test_ctrl_c_while_the_command_line_itself_imports(module):
    r = _interrupted(module, ARGV["decode"])
    assert r.returncode == 130 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.rstrip().endswith(
        "interrupted"), r.stderr


def test_ctrl_c_while_the_model_loads(monkeypatch, capsys, tmp_path):
    import fstchunk.models.io as io

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(io, "_open", interrupted)
    (tmp_path / "x.txt").write_text("a DT B-NP\n", encoding="utf-8")
    for argv in (["decode", "--model", "m.npz", "--input", "x.txt"],
                 ["expected", "x.txt", "--model", "m.npz"],
                 ["select", "--model", "m.npz", "--input", "x.txt", "--budget", "1", "-o",
                  "y.txt"],
                 ["calibrate", "--model", "m.npz", "--input", "x.txt", "-o", "c.npz"],
                 ["segment", "decode", "--model", "m.npz", "--input", "x.txt"]):
        monkeypatch.chdir(tmp_path)
        assert main(argv) == 130
        name = " ".join(argv[:2]) if argv[0] == "segment" else argv[0]
        assert capsys.readouterr().err == f"fstchunk {name}: interrupted\n"


def _loaded(pid: int, name: str) -> bool:
    try:
        with open(f"/proc/{pid}/maps") as fh:
            return name in fh.read()
    except OSError:
        return False


def _sigint_default() -> None:
    """The child's SIGINT at its default, as under a terminal: an earlier test in the same
    worker may leave it ignored (seen in full runs), and an ignored SIGINT is
    inherited, so the child would never see the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc")
def test_a_real_sigint_during_start_up(tmp_path):
    """A real SIGINT once the command's imports have begun (numpy's library is mapped:
    the command module is loading): exit 130 with one line, no traceback."""
    train = tmp_path / "t.txt"
    train.write_text("a DT B-NP\nb NN I-NP\n\n" * 50, encoding="utf-8")
    p = subprocess.Popen([sys.executable, "-m", "fstchunk", "train", "--train", str(train),
                          "--max-iter", "100000", "--quiet", "-o", str(tmp_path / "m.npz")],
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
                         stderr=subprocess.PIPE, text=True, preexec_fn=_sigint_default)
    deadline = time.monotonic() + 60
    while not _loaded(p.pid, "_multiarray_umath") and time.monotonic() < deadline:
        time.sleep(0.001)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert p.returncode == 130 and len(err.strip().splitlines()) == 1, (p.returncode, err)
    assert err.startswith("fstchunk train: interrupted"), err


def test_an_interrupt_that_c_code_turns_into_another_error_is_still_an_interrupt(
        monkeypatch, capsys):
    """numpy's C import can turn Ctrl-C into ImportError("PyCapsule_Import could not
    import module ...") (seen under load): after a SIGINT, any error of the start-up is
    told as the interrupt; without one, the error is not hidden."""
    import types
    from fstchunk.__main__ import run

    def converted():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)                   # the handler raises here
        except KeyboardInterrupt:
            raise ImportError('PyCapsule_Import could not import module "datetime"')

    def broken():
        raise ImportError("a real import error")

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        monkeypatch.setattr(sys, "argv", ["fstchunk", "train", "--quiet"])
        monkeypatch.setitem(sys.modules, "fstchunk.cli", types.SimpleNamespace(main=converted))
        assert run() == 130
        assert capsys.readouterr().err == "fstchunk train: interrupted\n"
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        monkeypatch.setitem(sys.modules, "fstchunk.cli", types.SimpleNamespace(main=broken))
        with pytest.raises(ImportError, match="a real import error"):
            run()
    finally:
        signal.signal(signal.SIGINT, previous)
