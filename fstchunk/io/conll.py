"""Reading and writing CoNLL column files.

One token per line, columns separated by white space (or a chosen delimiter),
blank lines between sentences, UTF-8.  Lines whose first column is
``-DOCSTART-`` mark document starts and are skipped (they are not sentences).
Every token line of a file must have the same number of columns, as conlleval.pl
demands; a line that breaks this, or bytes that are not UTF-8, raise
:class:`CoNLLError` naming the file and line.

Columns are split at runs of ASCII spaces and tabs only — a U+00A0 (no-break
space) or any other Unicode space is part of its token, as in conlleval.pl — or,
with ``delimiter="\\t"``, at each tab (a token may then hold spaces).

Pitfalls:

* sentence boundaries are blank lines; a file that does not end in a blank line
  still ends its last sentence.
* files are read as bytes and decoded line by line (a UTF-8 byte-order mark on
  the first line is dropped), so a bad byte is reported at its own line; a binary
  stream is decoded the same way, a text stream is taken as it is.
* a token line with a single column is a word with no tags; callers that need
  tags pass ``min_columns``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from ..core import sources
from ..core.errors import CoNLLError, InputError
from ..core.outputs import atomic_write
from .datasets import DATA_ENV, default_dir


@dataclass
class Sentence:
    """One sentence: ``rows[i]`` is the list of columns of token ``i``."""
    rows: list[list[str]]
    lines: list[int] = field(default_factory=list)   # 1-based line numbers
    source: str = "<input>"

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, j: int) -> list[str]:
        """Column ``j`` (negative counts from the right), e.g. ``column(-1)``."""
        return [r[j] for r in self.rows]

    @property
    def words(self) -> list[str]:
        return self.column(0)

    def where(self, i: int) -> str:
        """``file:line`` of token ``i``."""
        line = self.lines[i] if i < len(self.lines) else "?"
        return f"{self.source}:{line}"


def source_name(path_or_file) -> str:
    """The name errors give a path or a stream (``<stream>`` if it has none;
    ``<stdin>`` for a command's ``-``, :func:`fstchunk.core.sources.name`)."""
    if hasattr(path_or_file, "read"):
        return str(getattr(path_or_file, "name", "<stream>"))
    return sources.name(path_or_file)


def _decode(raw: bytes | str, name: str, lineno: int) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CoNLLError(f"{name}:{lineno}: not valid UTF-8 ({e.reason} at byte "
                         f"{e.start} of the line)") from None


def iter_lines(path_or_file) -> Iterator[tuple[int, str]]:
    """(line number, text) pairs of a file or stream, line ends kept; bytes are
    decoded line by line so that a bad byte is reported at its own line, not at
    the start of a buffer.  :func:`iter_conll` reads through it; writers that
    must echo the input as it was (``fstchunk decode``) use it too."""
    name = source_name(path_or_file)
    if hasattr(path_or_file, "read"):
        for lineno, raw in enumerate(path_or_file, 1):
            text = _decode(raw, name, lineno)
            yield lineno, text.lstrip("\ufeff") if lineno == 1 else text
        return
    with sources.open_binary(path_or_file) as fh:     # a pipe: read once (sources)
        for lineno, raw in enumerate(fh, 1):
            text = _decode(raw, name, lineno)
            yield lineno, text.lstrip("\ufeff") if lineno == 1 else text


#: the white space that separates columns: ASCII spaces and tabs, never U+00A0
BLANKS = " \t\r\n"
_RUNS = re.compile("[ \t]+")
#: what a cell written with the default delimiter may not hold: what reading splits at
_UNWRITABLE = re.compile("[ \t\r\n]")
DOCSTART = "-DOCSTART-"


def split_line(line: str, delimiter: str | None = None) -> list[str]:
    """The columns of a line (line end already removed): at runs of spaces and tabs
    (``None``), at each tab (``"\\t"``, fields stripped of spaces), or at each
    ``delimiter``; an empty list for a blank line."""
    if delimiter is None:
        text = line.strip(BLANKS)
        return _RUNS.split(text) if text else []
    if delimiter == "\t":
        cols = [c.strip(" ") for c in line.rstrip(BLANKS).split("\t")]
    else:
        cols = line.split(delimiter)
    while cols and not cols[-1].strip(BLANKS):
        cols.pop()
    return cols


def is_separator(line: str) -> bool:
    """Whether a line separates sentences: blank, or a ``-DOCSTART-`` line."""
    text = line.strip(BLANKS)
    return not text or _RUNS.split(text, maxsplit=1)[0] == DOCSTART


def file_delimiter(line: str) -> str:
    """The delimiter to write a file in whose first token line is ``line``: a tab if
    it holds one, else one space."""
    return "\t" if "\t" in line.strip(BLANKS) else " "


def iter_conll(path_or_file, delimiter: str | None = None,
               min_columns: int = 1) -> Iterator[Sentence]:
    """Sentences of a CoNLL file, lazily (:func:`read_conll` reads them all).

    Args:
        path_or_file: a path, or a text stream.
        delimiter: what separates the columns (``None``: any run of spaces or tabs).
        min_columns: the fewest columns a line may have.

    Returns:
        An iterator of sentences.

    Raises:
        CoNLLError: a malformed line, naming the file and line, when it is reached.
        OSError: the file cannot be opened (``FileNotFoundError`` naming the path).

    Examples:
        >>> import fstchunk, io
        >>> [s.column(0) for s in fstchunk.iter_conll(io.StringIO("Jan B-PER\\n\\nIn O\\n"))]
        [['Jan'], ['In']]
    """
    name = source_name(path_or_file)
    ncols = None
    rows: list[list[str]] = []
    lines: list[int] = []
    shown = "spaces and tabs" if delimiter is None else repr(delimiter)
    for lineno, raw in iter_lines(path_or_file):
        line = raw.rstrip("\r\n")
        if not line.strip(BLANKS):
            if rows:
                yield Sentence(rows, lines, name)
            rows, lines = [], []
            continue
        cols = split_line(line, delimiter)
        if cols[0] == DOCSTART:
            if rows:
                yield Sentence(rows, lines, name)
            rows, lines = [], []
            continue
        if ncols is None:
            ncols = len(cols)
            if ncols < min_columns:
                raise CoNLLError(f"{name}:{lineno}: expected at least {min_columns} "
                                 f"columns, found {ncols}: {line!r}")
        elif len(cols) != ncols:
            raise CoNLLError(f"{name}:{lineno}: expected {ncols} columns like the "
                             f"lines before, found {len(cols)} (columns split at "
                             f"{shown}): {line!r}")
        if "" in cols:
            raise CoNLLError(f"{name}:{lineno}: an empty column (two delimiters in a "
                             f"row; columns split at {shown}): {line!r}")
        rows.append(cols)
        lines.append(lineno)
    if rows:
        yield Sentence(rows, lines, name)


def read_conll(path_or_file, delimiter: str | None = None,
               min_columns: int = 1) -> list[Sentence]:
    """All sentences of a CoNLL file: one token per line, its columns separated by
    spaces or tabs, a blank line between sentences (:func:`iter_conll` reads lazily).

    Args:
        path_or_file: a path, or a text stream.
        delimiter: what separates the columns (``None``: any run of spaces or tabs).
        min_columns: the fewest columns a line may have.

    Returns:
        The sentences; ``sentence.column(0)`` is the words, ``column(-1)`` the tags.

    Raises:
        CoNLLError: a malformed line, naming the file and line.
        OSError: the file cannot be opened (``FileNotFoundError`` naming the path).

    Examples:
        >>> import fstchunk, io
        >>> s = fstchunk.read_conll(io.StringIO("Jan B-PER\\nwoont O\\n\\nIn O\\n"))
        >>> len(s), s[0].column(0), s[0].column(-1)
        (2, ['Jan', 'woont'], ['B-PER', 'O'])
    """
    return list(iter_conll(path_or_file, delimiter, min_columns))


def write_conll(sentences: Iterable[Sentence | Sequence[Sequence[str]]], out,
                delimiter: str = " ") -> None:
    """Write sentences (or lists of rows, each a list of cells) to a path or a text
    stream, blank-line separated; a path is written atomically
    (:func:`fstchunk.core.outputs.atomic_write`).

    Args:
        sentences: what :func:`read_conll` returns, or lists of rows.
        out: a path or a text stream.
        delimiter: what separates the columns (a space or a tab).

    Raises:
        InputError: a cell the file cannot hold (empty, or holding a line break or the
            delimiter, which :func:`read_conll` would read otherwise) or a row or
            sentence given as one string, naming the sentence and row.
        OutputError: the path cannot be written.

    Examples:
        >>> import fstchunk, io
        >>> out = io.StringIO()
        >>> fstchunk.write_conll([[["Jan", "B-PER"], ["woont", "O"]]], out)
        >>> print(out.getvalue(), end="")
        Jan B-PER
        woont O
        <BLANKLINE>
    """
    if not hasattr(out, "write"):
        with atomic_write(out) as fh:
            write_conll(sentences, fh, delimiter)
        return
    bad = _UNWRITABLE if delimiter == " " else re.compile(
        "[\r\n]|" + re.escape(delimiter) + ("|^ | $" if delimiter == "\t" else ""))
    for k, sent in enumerate(sentences):
        rows = sent.rows if isinstance(sent, Sentence) else sent
        if isinstance(rows, str):
            raise InputError(f"sentence {k} is the string {rows[:40]!r}: give its rows, "
                             f"each a list of cells")
        for j, r in enumerate(rows):
            if isinstance(r, str) or not all(isinstance(c, str) and c and not bad.search(c)
                                             for c in r):
                raise InputError(f"sentence {k}, row {j}: {r!r:.80} cannot be a CoNLL line "
                                 f"(a row is a list of non-empty strings without line "
                                 f"breaks or the column delimiter {delimiter!r})")
            out.write(delimiter.join(r) + "\n")
        out.write("\n")


def data_path(*parts: str) -> str:
    """A path under the corpora: ``$FSTCHUNK_DATA`` joined with ``parts``; without it,
    ``../shared/data`` (the project's checkout) where that folder exists, else the
    folder ``fstchunk data get`` fetches into (:func:`fstchunk.io.datasets.default_dir`).
    Whether the path exists is the caller's question."""
    root = os.environ.get(DATA_ENV)
    if root is None:
        root = os.path.join("..", "shared", "data")
        if not os.path.isdir(root):
            root = str(default_dir())
    return os.path.join(root, *parts)
