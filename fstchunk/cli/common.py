"""What every ``fstchunk`` subcommand shares: option types, option groups, warnings and
the report of sentences that failed (inputs: :mod:`fstchunk.cli.inputs`).

Option values are checked where argparse reads them (a non-finite β, a negative
count, a malformed column spec end in argparse's one-line usage error, exit 2),
so no command starts work on a value it would later choke on.  ``--beta`` is the
standard β of F_β = (1+β²)PR/(β²P+R) everywhere (:mod:`fstchunk.core.fbeta`), read by
:func:`beta_option` (>= 0, as the API) or, for training, :func:`training_beta_option`
(> 0).

Options added with ``action=Given`` remember that they were given (:func:`given`),
which ``train --init`` needs to tell a default from a contradiction.

Pitfall: ``HelpFormatter`` appends ``(default: X)`` to every option's help, so
help strings here never state the default themselves.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import warnings
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

from ..core.errors import FstchunkError, FstchunkWarning, InputError, OutputError
from ..core.fbeta import beta_range, check_beta
from ..io.gold import ON_INVALID


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown in every ``--help``; descriptions keep their line breaks."""


def _number(text: str, low: float, strict: bool, integer: bool) -> float | int:
    kind = "an integer" if integer else "a finite number"
    bound = f"{'>' if strict else '>='} {low:g}"
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {kind} {bound}, got {text!r}") from None
    if not math.isfinite(value) or value < low or (strict and value == low):
        raise argparse.ArgumentTypeError(f"must be {kind} {bound}, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    return _number(text, 0.0, True, False)


#: ``--beta``'s help, with what the option is for appended
BETA_HELP = "the standard β of F_β = (1+β²)PR/(β²P+R) (β > 1 favours recall, 0: precision)"


def beta_option(text: str) -> float:
    """argparse type: ``--beta``, the standard β, accepted where the API accepts it
    (:func:`fstchunk.core.fbeta.check_beta`: finite, 0 or within its range)."""
    return _beta(text, False)


def training_beta_option(text: str) -> float:
    """argparse type: ``train --beta``, > 0 as :class:`fstchunk.learn.loop.Trainer` takes it."""
    return _beta(text, True)


def _beta(text: str, positive: bool) -> float:
    try:
        return check_beta(float(text), positive)
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(f"must be {beta_range(positive)}, "
                                         f"got {text!r}") from None


def nonnegative_float(text: str) -> float:
    """argparse type: a finite number >= 0 (λ)."""
    return _number(text, 0.0, False, False)


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (iterations, sentences, k)."""
    return _number(text, 1, False, True)


def nonnegative_int(text: str) -> int:
    """argparse type: an integer >= 0 (every-K options where 0 means never)."""
    return _number(text, 0, False, True)


_SIZE_UNITS = {"": 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}


def memory_size(text: str) -> int:
    """argparse type: a number of bytes >= 1, plain (``1000000``) or with a binary
    suffix K, M, G or T (``512M``, ``1.5G``; ``KB``/``KiB`` spellings too)."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in _SIZE_UNITS else ""
    number = t[:-1] if unit else t
    bad = argparse.ArgumentTypeError(f"must be a number of bytes >= 1, plain or with a K, M "
                                     f"or G suffix (e.g. 2G), got {text!r}")
    try:
        value = int(number) if not unit else float(number)
    except ValueError:
        raise bad from None
    if not math.isfinite(value) or int(value * _SIZE_UNITS[unit]) < 1:
        raise bad
    return int(value * _SIZE_UNITS[unit])


def add_on_invalid(p: argparse.ArgumentParser) -> None:
    p.add_argument("--on-invalid", choices=ON_INVALID, default="repair",
                   help="gold tag sequences that are invalid in their scheme: repair (read "
                        "them as conlleval does, I-X after O or another type starts a chunk), "
                        "skip the sentence, or stop with an error at the tag's line")


class Given(argparse.Action):
    """``store``, noting that the option was given (:func:`given`): how a command tells
    an option left at its default (which may follow an ``--init`` model) from one the
    user gave (which must not contradict it).  ``--help`` still shows the default."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, "given_options", getattr(namespace, "given_options", set())
                | {self.dest})


class GivenTrue(argparse._StoreTrueAction):
    """``store_true``, noting that the flag was given (:func:`given`)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        super().__call__(parser, namespace, values, option_string)
        setattr(namespace, "given_options", getattr(namespace, "given_options", set())
                | {self.dest})


def given(args: argparse.Namespace, dest: str) -> bool:
    """Whether the option stored in ``dest`` was given on the command line (options
    added with ``action=Given``)."""
    return dest in getattr(args, "given_options", set())


def refuse_given(args: argparse.Namespace, dests, why: str) -> None:
    """One InputError naming the first option of ``dests`` that was given (options added
    with ``action=Given``/``GivenTrue``), and ``why`` it does not apply."""
    for dest in dests:
        if given(args, dest):
            raise InputError(f"--{dest.replace('_', '-')}: {why}")


def refuse_unread_objective_options(args: argparse.Namespace, objective: Any) -> None:
    """train's ``--beta`` and ``--loss`` given where the objective does not read them
    (``--beta``: the MEU objectives and the F loss; ``--loss``: max-margin): one
    InputError naming the option."""
    if given(args, "loss") and not objective.uses_loss:
        raise InputError(f"--loss: --objective {objective.name} has no loss Δ (max-margin "
                         f"reads it); drop --loss")
    reads_beta = objective.uses_beta and (not objective.uses_loss or args.loss == "f")
    if given(args, "beta") and not reads_beta:
        how = (f"--objective {objective.name} --loss {args.loss}" if objective.uses_loss
               else f"--objective {objective.name}")
        raise InputError(f"--beta: {how} does not read β (the meu objectives and "
                         f"max-margin's --loss f do); drop --beta")


def warn(command: str, message: str) -> None:
    print(f"fstchunk {command}: warning: {message}", file=sys.stderr)


@contextmanager
def warning_lines(command: str) -> Iterator[None]:
    """The library's :class:`~fstchunk.core.errors.FstchunkWarning` as :func:`warn` lines,
    each message once; other warnings as Python shows them."""
    shown: set[str] = set()
    with warnings.catch_warnings():
        python = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if not issubclass(category, FstchunkWarning):
                return python(message, category, filename, lineno, file, line)
            if str(message) not in shown:
                shown.add(str(message))
                warn(command, str(message))
        warnings.showwarning = show
        yield


def add_training_loop(p: argparse.ArgumentParser, *, select: Iterable[str], unit: str,
                      dev: str, max_iter: int,
                      max_iter_help: str, dev_every: int | None, dev_every_none: str = "",
                      checkpoint_every: int, checkpoint_extra: str = "",
                      resume_extra: str = "", quiet: str = "no progress bar",
                      max_iter_group: Any = None, max_iter_aliases: tuple[str, ...] = ()
                      ) -> None:
    """The options of :class:`fstchunk.learn.loop.Trainer`, declared once for ``train``,
    ``joint train`` and ``segment train``: ``--dev``, ``--max-iter``, ``--dev-every``,
    ``--select``, ``--checkpoint-every``, ``--resume``, ``--quiet``.  ``unit`` names a
    step (iterations, epochs, steps); ``select``: the trainer's choices
    (:data:`fstchunk.learn.loop.SELECT`, passed in: this module stays light for ``eval``);
    the rest is each command's default and wording."""
    p.add_argument("--dev", action=Given, default=None, help=dev)
    (max_iter_group or p).add_argument("--max-iter", *max_iter_aliases, dest="max_iter",
                                       action=Given, type=positive_int, default=max_iter,
                                       help=max_iter_help)
    p.add_argument("--dev-every", action=Given, type=nonnegative_int, default=dev_every,
                   help=f"dev figure every K {unit} (0: only at the end{dev_every_none})")
    p.add_argument("--select", action=Given, choices=tuple(select), default="last",
                   help="the model kept: the last step's, or (with --dev) the one of the best "
                        "dev figure among those measured (every --dev-every and the last; "
                        "ties: the earlier)")
    p.add_argument("--checkpoint-every", action=Given, type=nonnegative_int,
                   default=checkpoint_every,
                   help=f"save OUTPUT.ckpt every K {unit}{checkpoint_extra} (0: never; Ctrl-C "
                        f"and SIGTERM write it anyway)")
    p.add_argument("--resume", action=GivenTrue,
                   help=f"continue from OUTPUT.ckpt (refused if its settings differ"
                        f"{resume_extra})")
    p.add_argument("--quiet", action="store_true", help=quiet)


def add_resampling(p: argparse.ArgumentParser) -> None:
    """The bootstrap's and randomisation's options of ``eval --ci`` and ``compare``."""
    p.add_argument("--samples", type=positive_int, default=1000,
                   help="bootstrap resamples (and randomisation trials)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="the resampling seed")
    p.add_argument("--by", choices=("auto", "sentence", "document"), default="auto",
                   help="the unit resampled: documents (-DOCSTART- lines mark them) or "
                        "sentences; auto: documents where the file marks more than one")


def add_executor(p: argparse.ArgumentParser, work: str, auto: str | None = None) -> None:
    """``--workers N`` or ``--scheduler ADDR`` (:mod:`fstchunk.runtime.scale`); ``work`` says
    what is split; ``auto`` says when no option spreads it over every usable core."""
    par = p.add_mutually_exclusive_group()
    default = (f"none: this process, or every usable core {auto}" if auto else
               "none or 1: this process")
    par.add_argument("--workers", type=positive_int, default=None, action=Given,
                     help=f"split {work} over N local processes ({default}; 1: this "
                          f"process)")
    par.add_argument("--scheduler", default=None, action=Given,
                     help="a Dask cluster instead: tcp://HOST:PORT, or local:N to start N "
                          "worker processes here (needs fstchunk[dask])")


@contextmanager
def executor_of(args: argparse.Namespace, auto: bool = False) -> Iterator[Any]:
    """The executor of ``--workers``/``--scheduler`` (None: this process), closed after;
    with neither given and ``auto``, local processes on every usable core (if more
    than one)."""
    from ..runtime.parallel import usable_cores          # process machinery: only where work is
    from ..runtime.scale import executor                 # spread (eval starts without it)
    workers = args.workers
    if auto and workers is None and args.scheduler is None and usable_cores() > 1:
        workers = usable_cores()
    ex = executor(workers, args.scheduler)
    try:
        yield ex
    finally:
        if ex is not None:
            ex.close()


class Failures:
    """The sentences a command could not process, told on standard error: each cause
    (the error's kind and message, file:line and numbers aside) in full for its first
    :attr:`SHOWN` sentences, then only counted; :meth:`summary` sums them up by cause,
    so one systematic cause is a few lines, not one per sentence."""

    SHOWN = 3

    def __init__(self, command: str, done: str):
        self.command, self.done = command, done       # e.g. "decode", "decoded"
        self.where: list[str] = []
        self.causes: dict[str, list[str]] = {}

    @staticmethod
    def reason(error: BaseException) -> str:
        """One line saying why (out of memory, or the error's message)."""
        if isinstance(error, MemoryError):
            return f"out of memory ({error})" if str(error) else "out of memory"
        text = error.cli_text() if isinstance(error, FstchunkError) else str(error)
        return " ".join(text.split())

    @staticmethod
    def cause(error: BaseException) -> str:
        text = re.sub(r"\S+:\d+: ", "", Failures.reason(error))
        return type(error).__name__ + ": " + re.sub(r"\d+(\.\d+)?", "#", text)

    def add(self, where: str, index: int, tokens: int, error: BaseException,
            outcome: str) -> None:
        """Note sentence ``index`` (0-based, ``tokens`` long, first line ``where``)."""
        self.where.append(where)
        seen = self.causes.setdefault(self.cause(error), [])
        seen.append(where)
        if len(seen) <= self.SHOWN:
            more = (" (further sentences with this cause are counted, not shown)"
                    if len(seen) == self.SHOWN else "")
            print(f"fstchunk {self.command}: error: {where}: sentence {index + 1} "
                  f"({tokens} tokens) not {self.done}, {outcome}: {self.reason(error)}{more}",
                  file=sys.stderr, flush=True)

    def summary(self, total: int) -> str:
        """``N of TOTAL sentences not ... (where, ...)``, by cause when one repeats."""
        shown = ", ".join(self.where[:3]) + (", ..." if len(self.where) > 3 else "")
        text = f"{len(self.where)} of {total} sentences not {self.done} ({shown})"
        if len(self.causes) > 1 or len(self.where) > self.SHOWN:
            text += "; by cause: " + "; ".join(
                f"{len(w)} × {c} (first at {w[0]})" for c, w in
                sorted(self.causes.items(), key=lambda kv: -len(kv[1])))
        return text


#: what reads each model kind that a chain command (decode, expected, select, calibrate,
#: train --init) cannot read
OWN_COMMANDS = {"segment": "fstchunk segment decode (segment eval scores its output)"}


def chain_model(model: Any, path: str, command: str) -> Any:
    """``model``, if ``command`` reads tag lattices from it; one InputError naming the
    file and the command that reads it otherwise (a segment model)."""
    kind = getattr(model, "kind", None)
    if kind in OWN_COMMANDS or not callable(getattr(model, "lattices", None)):
        raise InputError(f"{path}: a {kind} model, which fstchunk {command} cannot read (it "
                         f"reads models of tag sequences: crf, hmm, attribute-crf, joint); "
                         f"use {OWN_COMMANDS.get(kind, 'the command of its kind')}")
    return model


def calibrate_command(model: Any, path: str) -> str:
    """The command that calibrates ``model`` (read from ``path``) on held-out data."""
    kind = getattr(model, "kind", None)
    if kind == "joint":
        return (f"fstchunk joint calibrate --model {path} --input HELDOUT -o {path} (or "
                f"fstchunk joint train --calibrate HELDOUT)")
    if kind == "attribute-crf":
        return (f"fstchunk calibrate --model {path} --format crfsuite --input HELDOUT -o "
                f"{path}, HELDOUT in CRFsuite's data format (or fstchunk train --format "
                f"crfsuite --calibrate HELDOUT)")
    return (f"fstchunk calibrate --model {path} --input HELDOUT -o {path} (or fstchunk train "
            f"--calibrate HELDOUT)")


def uncalibrated(error: Exception, model: Any, path: str) -> InputError:
    """The error of ``train --calibrate`` after the model was written to ``path``."""
    return InputError(f"{error}; the trained model was written to {path} without "
                      f"calibration ({calibrate_command(model, path)} fits it later)")


def require_probabilities(model: Any, path: str) -> None:
    """The model's own refusal to read margins as probabilities (an uncalibrated
    max-margin, perceptron or MMVP model), naming the command that calibrates it."""
    require = getattr(model, "require_probabilities", None)
    if require is not None:
        require(fix=calibrate_command(model, path))


def split_list(text: str, option: str) -> list[str]:
    """``"a,b"`` -> ``["a", "b"]``; empty items are an error naming the option."""
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise InputError(f"{option} {text!r}: give a comma-separated list without empty items")
    return items


#: the options that name files a command reads
INPUT_OPTIONS = ("file", "train", "dev", "input", "model", "init", "calibrate", "scores",
                 "from_data", "features", "gold", "pred")
def refuse_overwriting_inputs(args: argparse.Namespace, may_overwrite: Iterable[str] = ()
                              ) -> None:
    """OutputError, before any work, when ``-o`` names a file the command reads (the
    same file by any path, links included), unless its option is in ``may_overwrite``
    (``calibrate -o`` may replace ``--model``)."""
    out = getattr(args, "output", None)
    if not isinstance(out, str) or not os.path.exists(out):
        return
    for name in INPUT_OPTIONS:
        path = getattr(args, name, None)
        if name in may_overwrite or not isinstance(path, str) or not os.path.exists(path):
            continue
        if os.path.samefile(path, out):
            option = name.replace("_", "-") if name != "file" else "FILE"
            option = option if name == "file" else f"--{option}"
            raise OutputError(f"-o {out} is the {option} file {path}: writing it would "
                              f"destroy what the command reads; give another output path")
