"""The ``fstchunk`` command line.

Subcommands (:data:`COMMANDS`): ``demo``, ``eval``, ``expected``, ``decode``, ``train``,
``calibrate``, ``select``, ``import crfsuite``, ``joint {train,calibrate,decode}``,
``grammar {list,info,print,draw,export}``, ``segment {train,decode,eval}``, ``compare``,
``data {get,list}``;
one module each for eval (``evaluation``), expected (``expected``), compare
(``significance``), decode (``decoding``), train and calibrate (``tagging``), joint,
grammar and segment; the shared option types in
:mod:`fstchunk.cli.common`, the inputs in :mod:`fstchunk.cli.inputs`.  A command parses
nothing and computes little: it reads files and calls the library.  Only the module
of the command that runs is imported (:func:`build_parser`).

Errors: a :class:`~fstchunk.core.errors.FstchunkError` (bad input, option, model file
or destination), an :class:`OSError` (a file that cannot be read or written) or a
:class:`RuntimeError` (an external tool or a worker process failing) ends the
program with one line ``fstchunk COMMAND: error: ...`` on standard error, exit
status 2; Ctrl-C ends it with one line (naming the checkpoint, when training),
exit status 130, and SIGTERM (``kill``, a job scheduler's time limit) the same way
with exit status 143: temporaries removed, a checkpoint written when training; so
also during start-up (imports, parsing, model loading), before the command runs
(``python -m fstchunk`` and the ``fstchunk`` script start in :mod:`fstchunk.__main__`,
which imports nothing heavy first).

Inputs: every file is read through :mod:`fstchunk.core.sources` under one
:func:`~fstchunk.core.sources.held` for the whole command, so a pipe, a FIFO, process
substitution (``<(...)``) or ``/dev/stdin`` gives exactly what the file gives, and
``-`` names standard input (one input option at most).  ``-o -`` writes to standard
output where the output is text (:data:`STDOUT_COMMANDS`); a model, a FAR or a drawing
needs a file name.
``decode`` goes on past a sentence it cannot decode (one line naming its file:line, its
lines tagged ``<error>``) and ends with exit status 1 when any did.  Anything else is a bug and shows its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys

from .. import __version__
from ..core import sources
from ..core.errors import FstchunkError, InputError, OutputError, TrainingInterrupted
from .common import INPUT_OPTIONS, HelpFormatter, refuse_overwriting_inputs, warning_lines

#: command -> (the module of .cli that defines it, its one-line help); a command's module
#: is imported only when that command runs (or for ``--help``), so ``fstchunk eval``
#: starts without the machinery of training and decoding
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("demo", "the slides' toy example and the encodings, on built-in data"),
    "eval": ("evaluation", "conlleval.pl's report for a CoNLL file (last two columns: "
                           "gold, predicted)"),
    "expected": ("expected", "expected tp, P, R and F_β of each sentence of a CoNLL file "
                            "under a saved model (--model) or score arrays (--scores)"),
    "decode": ("decoding", "tag a CoNLL file with a saved model; writes its lines plus a "
                           "predicted-tag column"),
    "train": ("tagging", "train a CRF (ML, minimum-risk or max-margin) or a counting HMM"),
    "calibrate": ("tagging", "fit a CRF's temperature on held-out sentences (maximum "
                             "likelihood), so that MEU decoding reads a max-margin model's "
                             "scores as probabilities"),
    "joint": ("joint", "joint POS tagging and chunking (Shimizu & Haas 2006)"),
    "grammar": ("grammar", "list, inspect, print, draw and export the machines"),
    "import": ("importing", "read a model of another toolkit (CRFsuite) into an fstchunk "
                            "model file"),
    "select": ("select", "pick the pool sentences to annotate next (active learning): "
                         "lowest expected F of the model's MEU decision, highest token "
                         "entropy, or random"),
    "compare": ("significance", "is system A's F better than B's on the same gold? (paired "
                                "bootstrap, approximate randomisation)"),
    "segment": ("segment", "flexible segmentation (overlapping, non-contiguous segments): "
                           "train, decode, eval"),
    "data": ("data", "fetch the public corpora the documentation uses (CoNLL-2000, "
                     "CoNLL-2002 Dutch) into a cache folder, or list them"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command (``command`` None), or of that one command in full
    and the others by name and help only (what :func:`main` runs)."""
    ap = argparse.ArgumentParser(prog="fstchunk", formatter_class=HelpFormatter,
                                 description="fstchunk: weighted finite-state machines for "
                                             "minimum-risk chunking")
    ap.add_argument("--version", action="version", version=f"fstchunk {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = {m for n, (m, _) in COMMANDS.items() if command is None or n == command}
    for name, (module, text) in COMMANDS.items():
        if name in sub.choices:
            continue                                 # added with another of its module
        if module not in wanted:
            sub.add_parser(name, help=text, add_help=False)
        elif module == "demo":
            p = sub.add_parser(name, formatter_class=HelpFormatter, help=text)
            p.set_defaults(func=_run_demo)
        else:                                        # every command of the module
            added = importlib.import_module(f".{module}", __name__)
            getattr(added, "add_parsers", getattr(added, "add_parser", None))(sub)
    return ap


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import run
    return run()


def _command(argv: list[str]) -> str | None:
    """The command named in ``argv`` (its first word that is one), if any."""
    return next((a for a in argv if a in COMMANDS), None)


#: the commands whose ``-o -`` is standard output (their output is text)
STDOUT_COMMANDS = ("decode", "select", "segment decode", "joint decode")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    terminated: list[int] = []
    previous = _on_sigterm(terminated)
    command = None
    try:
        with sources.held(stdin=True):      # every input read once (pipes, -)
            parser = build_parser(_command(argv))
            args, extra = parser.parse_known_args(argv)
            command = _full_command(parser, args, extra)
            return _run(args, command, terminated)
    except KeyboardInterrupt:               # start-up: imports, parsing
        how, code = ("terminated", 143) if terminated else ("interrupted", 130)
        name = command or _command(argv)
        print(f"fstchunk{' ' + name if name else ''}: {how}", file=sys.stderr)
        return code
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _full_command(parser: argparse.ArgumentParser, args: argparse.Namespace,
                  extra: list[str]) -> str:
    """The command's name with its action (``joint train``); ``extra`` arguments
    refused or, for grammar, taken as names."""
    if extra:
        # argparse binds an optional-length positional before the options; names
        # given after them ("grammar export -o x.far validity") arrive here.
        if args.command != "grammar" or any(x.startswith("-") for x in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.names = list(args.names) + extra
    return args.command + (f" {args.joint_command}" if args.command == "joint" else
                           f" {args.segment_command}" if args.command == "segment" else
                           f" {args.import_command}" if args.command == "import" else
                           f" {args.data_command}" if args.command == "data" else "")


def _standard_streams(args: argparse.Namespace, command: str) -> None:
    """``-o -``: standard output (None) for a text output, else one OutputError; more
    than one input given as ``-`` (standard input): one InputError."""
    if getattr(args, "output", None) == "-":
        if command not in STDOUT_COMMANDS:
            raise OutputError(f"-o -: fstchunk {command} writes a file (a model, a FAR or a "
                              f"drawing), not text; give a file name (standard output is "
                              f"for {', '.join(STDOUT_COMMANDS)})")
        args.output = None
    dashes = [n.upper() if n in ("file", "gold", "pred") or (
              n == "model" and args.command == "import") else "--" + n.replace("_", "-")
              for n in INPUT_OPTIONS if getattr(args, n, None) == sources.STDIN]
    if len(dashes) > 1:
        raise InputError(f"{' and '.join(dashes)} are all - (standard input), which can be "
                         f"read as one input only; give the others as files")


def _run(args: argparse.Namespace, command: str, terminated: list[int]) -> int:
    """The command, its errors told on one line (module doc)."""
    try:
        _standard_streams(args, command)
        refuse_overwriting_inputs(args, ("model",) if command.endswith("calibrate") else ())
        if args.command == "eval":          # no numpy there: no BLAS to limit
            return args.func(args)
        from ..runtime.parallel import single_threaded_blas
        with single_threaded_blas(), warning_lines(command):   # small matrices: see
            return args.func(args)                            # fstchunk.runtime.parallel
    except BrokenPipeError:
        return 0
    except TrainingInterrupted as e:
        how, code = ("terminated", 143) if terminated else ("interrupted", 130)
        print(f"fstchunk {command}: {how}: {e.cli_text()}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        how, code = ("terminated", 143) if terminated else ("interrupted", 130)
        print(f"fstchunk {command}: {how}", file=sys.stderr)
        return code
    except (FstchunkError, OSError, RuntimeError) as e:
        text = e.cli_text() if isinstance(e, FstchunkError) else e
        print(f"fstchunk {command}: error: {text}", file=sys.stderr)
        return 2


def _on_sigterm(terminated: list[int]):
    """Make SIGTERM end the command as Ctrl-C does (a KeyboardInterrupt, which every
    writer and the training loop clean up after), noting it in ``terminated``; the
    previous handler, or None where none could be set (not the main thread)."""
    def handler(signum, frame):
        terminated.append(signum)
        raise KeyboardInterrupt
    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:                      # not the main thread of the interpreter
        return None


if __name__ == "__main__":
    sys.exit(main())
