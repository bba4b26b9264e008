"""The sentences of CoNLL files of tag columns, read as :func:`.chunks.evaluate_file`
reads a file: each token row's tags checked to be chunk tags (:func:`check_chunk_tag`,
:func:`row_tags`; a sentence ``fstchunk decode`` could not decode, tagged
:data:`UNDECODED`, is refused at its line), each sentence with where it starts and its
document (the ``-DOCSTART-`` lines before it: :func:`documented`).  What
:func:`.chunks.evaluate_file` scores and what the error bars and tests of
:mod:`.significance` (``eval --ci``, ``fstchunk compare``) resample.
"""

from __future__ import annotations

from typing import Iterator

from ..core.errors import InputError
from .conlleval import Reading, iter_rows
from ..schemes import encodings as enc

#: the tag ``fstchunk decode`` writes on every token of a sentence it could not decode
#: (the columns stay aligned); not a chunk tag, so :func:`.chunks.evaluate_file` refuses
#: it, naming its line, rather than score the sentence as one without chunks
UNDECODED = "<error>"

_PREFIXES = frozenset(p for name in enc.SCHEMES for p in enc.scheme_prefixes(name))


def check_chunk_tag(tag: str, where: str, name: str, column: int, width: int,
                    scheme: str | None,
                    reads: str = "eval reads gold and predicted tags from the last two "
                                 "columns") -> None:
    """InputError unless ``tag`` (the ``name`` column of the line at ``where``) is a
    chunk tag; ``reads`` says where the command reads its tags."""
    prefixes = _PREFIXES if scheme is None else frozenset(enc.scheme_prefixes(scheme))
    if tag == UNDECODED:
        raise InputError(
            f"{where}: the {name} column holds {UNDECODED}: fstchunk decode could "
            f"not decode this sentence (its error was reported then); decode it again "
            f"(e.g. with a larger --memory-budget) before scoring the file")
    if tag != "O" and enc.split_tag(tag)[0] not in prefixes:
        raise InputError(
            f"{where}: the {name} column (column {column} of {width}) holds {tag!r}, not a "
            f"chunk tag ({', '.join(sorted(prefixes))}-TYPE or O); {reads}")


def row_tags(row, path, scheme: str | None) -> tuple[str, str]:
    """(gold, predicted) of a token row, each checked to be a chunk tag."""
    width = len(row.fields)
    gold, pred = row.fields[-2], row.fields[-1]
    where = f"{path}:{row.line}"
    for tag, name, col in ((gold, "gold", width - 1), (pred, "predicted", width)):
        try:
            check_chunk_tag(tag, where, name, col, width, scheme)
        except InputError as e:
            if not row.docstart:
                raise
            raise InputError(f"{where}: a -DOCSTART- line whose {name} column holds "
                             f"{tag!r}: a line without the predicted column? decode the "
                             f"file again (fstchunk decode writes O there), or add ' O' "
                             f"to it") from e
    return gold, pred


def documented(rows, path, scheme: str | None
               ) -> Iterator[tuple[list[str], list[str], str, int]]:
    """(gold, predicted, where, document) of each run of token rows between boundaries,
    the tags checked to be chunk tags (of ``scheme`` when given; ``-DOCSTART-`` rows are
    tokens, as in conlleval.pl), ``document`` the number of ``-DOCSTART-`` lines before
    the sentence (0 in a file without them)."""
    gold: list[str] = []
    pred: list[str] = []
    first = None
    doc = 0
    for row in rows:
        if row.boundary:
            if gold:
                yield gold, pred, first, doc
            gold, pred, first = [], [], None
            continue
        if row.docstart:
            doc += 1
        g, p = row_tags(row, path, scheme)
        gold.append(g)
        pred.append(p)
        first = first or f"{path}:{row.line}"
    if gold:
        yield gold, pred, first, doc


def file_sentences(path, scheme: str | None = None, delimiter: str | None = None
                   ) -> list[tuple[list[str], list[str], str, int]]:
    """(gold, predicted, where, document) of every sentence of a CoNLL file whose last two
    columns are gold and predicted tags, read as :func:`evaluate_file` reads it;
    ``document`` counts the ``-DOCSTART-`` lines before the sentence."""
    scheme = enc.canonical_scheme(scheme) if scheme is not None else None
    out = list(documented(iter_rows(path, delimiter, Reading()), path, scheme))
    if not out:
        raise InputError(f"{path}: no sentences to score")
    return out


def tag_column_sentences(path, scheme: str | None = None, delimiter: str | None = None
                         ) -> list[tuple[list[str], list[str], str, int]]:
    """(words, tags, where, document) of every sentence of a CoNLL file, ``tags`` its last
    column (checked to be chunk tags, of ``scheme`` when given), ``words`` its first:
    what ``fstchunk compare`` reads of the gold file and of each system's output."""
    scheme = enc.canonical_scheme(scheme) if scheme is not None else None
    out: list[tuple[list[str], list[str], str, int]] = []
    words: list[str] = []
    tags: list[str] = []
    first, doc = None, 0
    for row in iter_rows(path, delimiter, Reading()):
        if row.boundary:
            if tags:
                out.append((words, tags, first, doc))
            words, tags, first = [], [], None
            continue
        doc += row.docstart
        where = f"{path}:{row.line}"
        check_chunk_tag(row.fields[-1], where, "last", len(row.fields), len(row.fields),
                         scheme, "compare reads the tags of each file's last column")
        words.append(row.fields[0])
        tags.append(row.fields[-1])
        first = first or where
    if tags:
        out.append((words, tags, first, doc))
    if not out:
        raise InputError(f"{path}: no sentences")
    return out
