"""The sentences of CoNLL files of tag columns, for the error bars and tests of
:mod:`.significance` (``eval --ci``, ``fstchunk compare``): each with where it starts
and its document (the ``-DOCSTART-`` lines before it), read as :func:`.chunks.evaluate_file`
reads a file.
"""

from __future__ import annotations

from ..core.errors import InputError
from .conlleval import Reading, iter_rows
from ..schemes import encodings as enc
from .chunks import check_chunk_tag, documented


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
