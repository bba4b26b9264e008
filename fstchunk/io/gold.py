"""Gold tag columns of real corpora: checking, repairing or skipping invalid sequences.

Published corpora contain a few tag sequences that are invalid in their own
scheme (``I-LOC`` at a sentence start, ``I-PER`` right after ``B-ORG``).  Models
are strict — a lattice is a distribution over *valid* sequences, so an invalid
gold sequence has probability zero and no gradient — so every command that reads
gold tags passes the sentences through :func:`check_gold` first, with one of

* ``repair`` (the default): read the sequence the way conlleval.pl does (an
  ``I-X`` after ``O`` or after another type starts a chunk;
  :func:`fstchunk.schemes.encodings.tags_to_chunks` with ``strict=False``) and write those
  chunks back in the scheme; the sentence is kept, its tag column rewritten;
* ``skip``: leave the sentence out;
* ``error``: stop with a :class:`~fstchunk.core.errors.SchemeError` naming the offending
  tag's own ``file:line``.

A tag that is not a tag of the scheme at all (``X-FOO`` in IOB2) is never
repaired: it is an error in every mode, at its own line.  :class:`GoldReport`
counts what was done and :meth:`GoldReport.warning` names the first repaired or
skipped sentences by the line of their offending tag.

Pitfall: repair rewrites the *tag column* of a copy of the sentence; every other
column (words, POS) is untouched, and line numbers stay those of the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..core.errors import InputError, SchemeError
from ..schemes import encodings as enc
from .conll import Sentence

ON_INVALID = ("repair", "skip", "error")


@dataclass
class GoldReport:
    """The sentences to use and what :func:`check_gold` did to get them."""
    sentences: list[Sentence]
    repaired: list[str] = field(default_factory=list)   # file:line (tag) of each repair
    skipped: list[str] = field(default_factory=list)    # file:line (tag) of each skip

    def warning(self, shown: int = 3) -> str | None:
        """One line for standard error, or None when every sequence was valid."""
        parts = []
        for what, where in (("repaired", self.repaired), ("skipped", self.skipped)):
            if where:
                first = "; ".join(where[:shown]) + ("; ..." if len(where) > shown else "")
                parts.append(f"{what} {len(where)} invalid tag sequence"
                             f"{'s' if len(where) > 1 else ''} ({first})")
        return ", ".join(parts) if parts else None


def check_gold(sentences: Sequence[Sentence], scheme: str = "IOB2", column: int = -1,
               on_invalid: str = "repair") -> GoldReport:
    """Check the tag ``column`` of every sentence in ``scheme``; repair, skip or refuse
    the invalid sequences (see the module doc)."""
    if on_invalid not in ON_INVALID:
        raise InputError(f"on_invalid must be one of {', '.join(ON_INVALID)}, "
                         f"got {on_invalid!r}")
    scheme = enc.canonical_scheme(scheme)
    report = GoldReport([])
    for s in sentences:
        tags = _tag_column(s, column)
        try:
            enc.validate(tags, scheme)
        except SchemeError as e:
            if e.position is None:
                raise SchemeError(f"{s.where(0)}: {e}") from None
            where = f"{s.where(e.position)} ({tags[e.position]!r})"
            if on_invalid == "error" or not _known_tags(tags, scheme):
                raise SchemeError(f"{s.where(e.position)}: {_reason(str(e))}",
                                  e.position) from None
            if on_invalid == "skip":
                report.skipped.append(where)
                continue
            report.repaired.append(where)
            s = _with_tags(s, column, repair(tags, scheme))
        report.sentences.append(s)
    return report


def repair(tags: Sequence[str], scheme: str) -> list[str]:
    """The valid ``scheme`` sequence with the chunks conlleval.pl reads off ``tags``."""
    chunks = enc.tags_to_chunks(tags, scheme, strict=False)
    return enc.chunks_to_tags(chunks, len(tags), scheme)


def _tag_column(s: Sentence, column: int) -> list[str]:
    width = len(s.rows[0]) if s.rows else 0
    if not -width <= column < width:
        raise InputError(f"{s.where(0)}: no tag column {column} (the line has {width} "
                         f"column{'s' if width != 1 else ''})")
    return s.column(column)


def _known_tags(tags: Sequence[str], scheme: str) -> bool:
    """Whether every tag is a tag of ``scheme`` (only order can then be wrong)."""
    try:
        enc.tags_to_chunks(tags, scheme, strict=False)
        return True
    except SchemeError:
        return False


def _reason(message: str) -> str:
    """An encodings message without its leading 'position N: ' (the line replaces it)."""
    head, sep, rest = message.partition(": ")
    return rest if sep and head.startswith("position ") else message


def _with_tags(s: Sentence, column: int, tags: Sequence[str]) -> Sentence:
    rows = [list(r) for r in s.rows]
    for r, t in zip(rows, tags):
        r[column] = t
    return Sentence(rows, list(s.lines), s.source)
