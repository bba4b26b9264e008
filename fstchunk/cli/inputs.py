"""What the ``fstchunk`` subcommands read: CoNLL inputs and gold tags, column specs,
the layout check of an input against a saved model, and the outputs that would
overwrite an input.

Inputs read with a saved model go through :func:`layout_input` first (its training
layout, :mod:`fstchunk.io.layout`): the first sentences are checked before any work,
and :func:`arranged` moves the columns to where the model reads them.
"""

from __future__ import annotations

import argparse
from itertools import chain
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from ..core import sources
from ..core.errors import InputError
from ..io.columns import Columns
from ..io.conll import Sentence, iter_conll, read_conll
from ..io.gold import GoldReport, check_gold
from ..io.layout import Arrangement, Layout, head
from ..models.base import reading_columns
from .common import Given, warn


def read_gold(path: str, scheme: str, column: int | None, on_invalid: str, command: str,
              select: Callable[[list[Sentence]], list[Sentence]] | None = None
              ) -> list[Sentence]:
    """Sentences of a CoNLL file with a gold tag column, invalid sequences handled by
    ``on_invalid`` (:func:`fstchunk.io.gold.check_gold`; a warning names the repairs);
    an empty file is an error naming it."""
    if column is None:
        raise InputError(f"{path}: --columns names no tag column, and {command} reads gold "
                         f"tags (e.g. --columns word,pos,tag)")
    sents = read_conll(path, min_columns=1)
    if select is not None:
        sents = select(sents)
    if not sents:
        raise no_sentences(path)
    report = check_gold(sents, scheme, column, on_invalid)
    if report.warning():
        warn(command, f"{path}: {report.warning()}")
    if not report.sentences:
        raise InputError(f"{path}: every sentence was skipped as invalid (--on-invalid skip)")
    return report.sentences


def iter_input(path: str, delimiter: str | None = None) -> Iterator[Sentence]:
    """Sentences to tag or score, read lazily (bounded memory on any file size)."""
    return iter_conll(path, delimiter=delimiter, min_columns=1)


def delimiter_arg(text: str) -> str:
    """argparse type: a column delimiter as conlleval.pl's ``-d`` is written: ``'\\t'``
    (backslash t) or a tab, ``' '``, or another string taken literally."""
    if text in ("\\t", "\t", "tab", "TAB"):
        return "\t"
    if text == "":
        raise argparse.ArgumentTypeError("empty; give e.g. ' ' or '\\t'")
    return text


def no_sentences(path: str) -> InputError:
    return InputError(f"{sources.name(path)}: no sentences (an empty file, or only blank and "
                      f"-DOCSTART- lines)")


def iter_gold(path: str, scheme: str, column: int, on_invalid: str, command: str
              ) -> Iterator[Sentence]:
    """:func:`read_gold`, lazily: each sentence checked as it is read; the warning
    naming the repairs comes after the last sentence."""
    report, kept = GoldReport([]), 0
    for s in iter_conll(path, min_columns=1):
        one = check_gold([s], scheme, column, on_invalid)
        report.repaired += one.repaired
        report.skipped += one.skipped
        kept += len(one.sentences)
        yield from one.sentences
    if not kept and not report.skipped:
        raise no_sentences(path)
    if report.warning():
        warn(command, f"{path}: {report.warning()}")
    if not kept:
        raise InputError(f"{path}: every sentence was skipped as invalid (--on-invalid skip)")


def read_input(path: str) -> list[Sentence]:
    """Sentences to tag or score; an empty file is an error naming it."""
    sents = read_conll(path, min_columns=1)
    if not sents:
        raise no_sentences(path)
    return sents


def columns_spec(text: str) -> Columns:
    """argparse type: a ``--columns`` spec (:meth:`fstchunk.io.columns.Columns.parse`)."""
    try:
        return Columns.parse(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class Checked(NamedTuple):
    """An input checked against a model's training layout (:func:`layout_input`): its
    sentences (the head already read, the rest lazily), where its word, POS (and tag)
    columns are (``source``, absolute), and the :class:`~fstchunk.io.layout.Arrangement`
    that moves them to where the model reads them (None: read as they are)."""
    sentences: Iterator[Sentence]
    source: Columns | None
    arrangement: Arrangement | None


def layout_input(sents: Iterable[Sentence], model: Any, model_path: str,
                 given: Columns | None, command: str, need_tag: bool = False,
                 fix: str | None = None) -> Checked:
    """Check an input against ``model``'s training layout before any work
    (:mod:`fstchunk.io.layout`), reading only its first sentences.

    Without ``--columns`` (``given`` None) the input must have the training width, or
    one column less (no tag column; not with ``need_tag``), and its feature columns
    must look like training's: otherwise one InputError naming file:line, the column,
    what it holds and what the model read there.  With ``--columns`` the input is read
    as they say, and a layout unlike training's is one warning.  A model file without
    a layout record (written before it) gets one warning that nothing can be checked,
    and is read as today.  ``fix`` ends an error (default: give ``--columns``, with an
    example; a command without ``--columns`` says what it needs instead)."""
    first, rest = head(sents)
    stream = chain(first, rest)
    target = reading_columns(model)
    if not first or target is None:
        return Checked(stream, None, None)
    s0 = first[0]
    width, where = len(s0.rows[0]), s0.where(0)
    layout = getattr(model, "layout_", None)
    if given is not None:
        source = given.resolve(width, where, need_tag=need_tag)
        if layout is not None:
            _warn_layout(layout, first, source, given, width, where, command, need_tag)
        else:
            warn_unrecorded(model_path, s0.source, source, command)
    elif layout is None:
        source = target.resolve(width, where, need_tag=need_tag) if need_tag else target
        warn_unrecorded(model_path, s0.source, source, command)
    else:
        source = _training_source(layout, width, where, need_tag, fix or (
            f"give --columns to say which column holds what (e.g. {layout.suggest(width)})"))
        bad = layout.mismatch(first, source)
        if bad:
            role, why = bad
            name = "POS" if role == "pos" else role
            raise InputError(f"{where}: {why}; "
                             f"{fix or f'give --columns to say where the {name} column is'}")
    if target.pos is not None and source.pos is None:
        raise InputError(f"{where}: the model reads a POS column, but --columns "
                         f"{given.spec() if given else '(none)'} names none")
    absolute = target.resolve(width, where, need_tag=False) if min(
        v for v in (target.word, target.pos) if v is not None) < 0 else target
    move = Arrangement(source, absolute)
    return Checked(stream, source, None if move.identity else move)


def warn_unrecorded(model_path: str, path: str, source: Columns, command: str) -> None:
    """The one warning for a model file without a layout record: ``path`` is read at
    ``source`` unchecked."""
    reads = f"the words from column {source.word + 1}" + (
        f" and POS tags from column {source.pos + 1}" if source.pos is not None else "")
    warn(command, f"{model_path} records no training layout (a model file written before "
                  f"fstchunk recorded it): the columns of {path} cannot be checked; reading "
                  f"{reads}")


def _training_source(layout: Layout, width: int, where: str, need_tag: bool, fix: str
                     ) -> Columns:
    """Where the training columns are in an input of ``width`` columns, or one
    InputError naming ``where`` and the training layout."""
    source = layout.source(width) if not need_tag or width == layout.width else None
    if source is None:
        have = f"{width} column{'s' if width != 1 else ''}"
        need = (f"gold tags are read in the model's training layout, {layout.width} columns "
                f"({layout.spec()})" if need_tag else
                f"the model was trained on files of {layout.describe()}")
        raise InputError(f"{where}: the line has {have}, but {need}; {fix}")
    return source


def _warn_layout(layout: Layout, first: list[Sentence], source: Columns, given: Columns,
                 width: int, where: str, command: str, need_tag: bool) -> None:
    """The one warning for an input read through ``--columns`` whose layout differs from
    the model's training layout (other columns, or values unlike training's)."""
    problems = []
    train = layout.source(width)
    same = train is not None and (train.word, train.pos) == (source.word, source.pos) and (
        not need_tag or train.tag == source.tag)
    if not same:
        problems.append(f"the model was trained on files of {layout.describe()}")
    bad = layout.mismatch(first, source)
    if bad:
        problems.append(bad[1])
    if problems:
        warn(command, f"{where}: {'; '.join(problems)}; reading the columns as --columns "
                      f"{given.spec()} says")


def warn_unread(given: Columns | None, cols: Columns, sents: list[Sentence],
                command: str) -> None:
    """The warning for training on a file of more than three columns without
    ``--columns``: the default (word first, POS second, tag last) leaves some unread."""
    if given is not None or not sents or len(sents[0].rows[0]) <= 3:
        return
    width = len(sents[0].rows[0])
    read = {c for c in (cols.word, cols.pos, cols.tag) if c is not None}
    unread = ", ".join(str(i + 1) for i in range(width) if i not in read)
    warn(command, f"{sents[0].where(0)}: the file has {width} columns and no --columns is "
                  f"given: reading the word from column {cols.word + 1}"
                  + (f", POS from column {cols.pos + 1}" if cols.pos is not None else "")
                  + f" and the tag from column {cols.tag + 1}; column(s) {unread} not read "
                  f"(say so with --columns, e.g. {cols.completed(width)})")


def arranged(sents: Iterable[Sentence], move: Arrangement | None) -> Iterator[Sentence]:
    """The sentences with their columns moved by ``move`` (as they are for None). Lazy."""
    return iter(sents) if move is None else map(move, sents)


def add_columns(p: argparse.ArgumentParser) -> None:
    p.add_argument("--columns", default=None, type=columns_spec, metavar="SPEC",
                   action=Given,
                   help="the file's columns in order, each named word, pos, tag or _ (not "
                        "read): e.g. word,pos,tag, word,tag (no POS: the POS-free variant of "
                        "the feature template) or word,pos,_,tag; none: word,pos,...,tag for "
                        "a new model (word first, POS second, tag last), the model's own "
                        "columns otherwise, checked against its training layout")
