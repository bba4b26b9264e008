"""The outputs of ``fstchunk decode`` besides CoNLL lines: ``--format jsonl`` and
``--format html`` (:mod:`fstchunk.decoding.display`), the tag column of a score file without
tokens, and ``--min-confidence`` on every format.

``--min-confidence P`` drops every decided chunk whose probability p =
Pr(chunk ∈ chunks(y)) is below P, then writes the remaining chunks' tags in the
output scheme (:func:`fstchunk.decoding.confidence.tags_of`): the dropped chunks' tokens
become ``O`` and a neighbour's tags are rewritten where the scheme needs it (an
IOB1 ``B-`` whose same-type predecessor was dropped becomes ``I-``; IOE1's ``E-``
likewise), so every output stays a valid sequence whose chunks are exactly the
kept ones.  The same on CoNLL, JSONL and HTML.
"""

from __future__ import annotations

from typing import IO, Iterable, Iterator

from ..decoding.batch import Decoded
from ..decoding.confidence import keep_confident, tags_of
from ..decoding.display import HtmlPage, record
from ..io.conll import DOCSTART, iter_lines, split_line
from .common import Failures


def thresholded(results: Iterator[Decoded], min_confidence: float, scheme: str
                ) -> Iterator[Decoded]:
    """``results`` with chunks below ``min_confidence`` dropped and their tags
    rewritten (module doc); as they are for 0."""
    for d in results:
        if d.tags is not None and min_confidence > 0:
            kept = keep_confident(d.chunks, min_confidence)
            if len(kept) != len(d.chunks):
                d = d._replace(chunks=kept, tags=tags_of(kept, len(d.tags), scheme))
        yield d


def _tokens(d: Decoded, word: int) -> list[str] | None:
    s = d.sentence
    return s.column(word) if getattr(s, "has_tokens", True) else None


def _line(d: Decoded) -> int | None:
    return d.sentence.lines[0] if d.sentence.lines else None


def _failed(failed: Failures, d: Decoded, outcome: str) -> None:
    failed.add(d.sentence.where(0), d.index, len(d.sentence), d.error, outcome)


def write_jsonl(results: Iterator[Decoded], out: IO[str], failed: Failures, word: int,
                model_scheme: str | None = None) -> int:
    """One JSON object per sentence (:mod:`fstchunk.decoding.display`), flushed as each is
    decoded; returns the number of sentences."""
    total = 0
    for d in results:
        total += 1
        tokens = _tokens(d, word)
        if d.error is not None:
            _failed(failed, d, "written with its error")
            out.write(record(d.index, _line(d), tokens, None, None,
                             error=Failures.reason(d.error)))
        else:
            marg = d.marginals
            out.write(record(d.index, _line(d), tokens, d.tags, d.chunks, marg,
                             d.marginal_tags, model_scheme))
        out.flush()
    return total


def write_html(results: Iterator[Decoded], out: IO[str], failed: Failures, word: int,
               title: str, subtitle: str, docstarts: Iterable[int] = ()) -> int:
    """The one page (:class:`fstchunk.decoding.display.HtmlPage`), written at the end;
    tokens of a score file without them are shown as their positions.  ``docstarts``:
    the input's ``-DOCSTART-`` line numbers, ascending (:func:`docstart_lines`), each
    starting a document before the first sentence after it."""
    page, total = HtmlPage(title, subtitle), 0
    starts = iter(docstarts)
    start = next(starts, None)
    for d in results:
        total += 1
        line = _line(d)
        begun = None
        while start is not None and line is not None and start < line:
            begun, start = start, next(starts, None)
        if begun is not None:
            page.document(begun)
        tokens = _tokens(d, word) or [f"[{i}]" for i in range(len(d.sentence))]
        if d.error is not None:
            _failed(failed, d, "shown with its error")
            page.error(d.index, tokens, Failures.reason(d.error), line)
        else:
            page.sentence(d.index, tokens, d.chunks, line)
    out.write(page.text())
    return total


def docstart_lines(path: str, delimiter: str | None = None) -> Iterator[int]:
    """The line numbers of a CoNLL file's ``-DOCSTART-`` lines, read lazily (as
    :func:`fstchunk.io.conll.iter_conll` splits them)."""
    for lineno, text in iter_lines(path):
        cols = split_line(text.rstrip("\r\n"), delimiter)
        if cols and cols[0] == DOCSTART:
            yield lineno


def write_tag_column(results: Iterator[Decoded], out: IO[str], failed: Failures,
                     undecoded: str) -> int:
    """CoNLL output for scores without tokens: the predicted tag of each token on a
    line of its own, a blank line after each sentence (``undecoded`` for a sentence
    that failed)."""
    total = 0
    for d in results:
        total += 1
        tags = d.tags
        if d.error is not None:
            _failed(failed, d, f"tagged {undecoded}")
            tags = [undecoded] * len(d.sentence)
        out.write("".join(t + "\n" for t in tags) + "\n")
        out.flush()
    return total
