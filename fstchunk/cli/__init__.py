"""The ``fstchunk`` command line.

Subcommands: ``demo``, ``eval``, ``expected``, ``decode``, ``train``, ``calibrate``, ``joint
{train,calibrate,decode}``, ``grammar {list,info,print,draw,export}``, ``segment eval``; one module
each for the grammar, scoring, tagging, joint and segment commands, the shared option
types in :mod:`fstchunk.cli.common`.  A command parses nothing and computes
little: it reads files and calls the library.

Errors: a :class:`~fstchunk.errors.FstchunkError` (bad input, option, model file
or destination), an :class:`OSError` (a file that cannot be read or written) or a
:class:`RuntimeError` (an external tool or a worker process failing) ends the
program with one line ``fstchunk COMMAND: error: ...`` on standard error, exit
status 2; Ctrl-C ends it with one line (naming the checkpoint, when training),
exit status 130, and SIGTERM (``kill``, a job scheduler's time limit) the same way
with exit status 143: temporaries removed, a checkpoint written when training.  ``decode`` goes on past a sentence it cannot decode (one line
naming its file:line, its lines tagged ``<error>``) and ends with exit status 1
when any did.  Anything else is a bug and shows its traceback.
"""

from __future__ import annotations

import argparse
import signal
import sys

from .. import __version__
from ..demo import run as run_demo
from ..errors import FstchunkError, TrainingInterrupted
from ..parallel import single_threaded_blas
from . import decoding, grammar, joint, scoring, segment, tagging
from .common import HelpFormatter
from .inputs import refuse_overwriting_inputs


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="fstchunk", formatter_class=HelpFormatter,
                                 description="fstchunk: weighted finite-state machines for "
                                             "minimum-risk chunking")
    ap.add_argument("--version", action="version", version=f"fstchunk {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("demo", formatter_class=HelpFormatter,
                       help="the slides' toy example and the encodings, on built-in data")
    p.set_defaults(func=lambda args: run_demo())
    scoring.add_parsers(sub)
    decoding.add_parser(sub)
    tagging.add_parsers(sub)
    joint.add_parser(sub)
    grammar.add_parser(sub)
    segment.add_parser(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # argparse binds an optional-length positional before the options; names
        # given after them ("grammar export -o x.far validity") arrive here.
        if args.command != "grammar" or any(x.startswith("-") for x in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.names = list(args.names) + extra
    command = args.command + (f" {args.joint_command}" if args.command == "joint" else
                              f" {args.segment_command}" if args.command == "segment" else "")
    terminated: list[int] = []
    previous = _on_sigterm(terminated)
    try:
        refuse_overwriting_inputs(args, ("model",) if command.endswith("calibrate") else ())
        with single_threaded_blas():        # small matrices: see fstchunk.parallel
            return args.func(args)
    except BrokenPipeError:
        return 0
    except TrainingInterrupted as e:
        how, code = ("terminated", 143) if terminated else ("interrupted", 130)
        print(f"fstchunk {command}: {how}: {e}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        how, code = ("terminated", 143) if terminated else ("interrupted", 130)
        print(f"fstchunk {command}: {how}", file=sys.stderr)
        return code
    except (FstchunkError, OSError, RuntimeError) as e:
        print(f"fstchunk {command}: error: {e}", file=sys.stderr)
        return 2
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


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
