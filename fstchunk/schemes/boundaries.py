"""Where chunks start and end: conlleval.pl's startOfChunk and endOfChunk between
(prefix, type) pairs, plus the IOBES family's rules (B and S always start a chunk, E
and S always end one), and :func:`read_chunks`, which reads a parsed tag sequence with
them; :func:`split_tag` and :func:`conlleval_chunks`, tags split and read exactly as
conlleval.pl does.  :mod:`fstchunk.schemes.encodings` parses tags per scheme and reads chunks here;
:mod:`fstchunk.evaluation.conlleval` counts with the same two rules.

Pitfall: conlleval.pl's quirks are kept on purpose (``E-X B-X`` continues one chunk; a
chunk no ``O`` ends ends at the input's end), so that scores equal the script's.
"""

from __future__ import annotations

from typing import Sequence

from .tagseq import OUTSIDE, tag_list

Chunk = tuple[str, int, int]

#: the IOBES family's extra prefixes read as the plain IOBES ones
_IOBES_CANON = {"B2": "I", "B3": "I", "E2": "I", "E3": "I", "L": "E", "U": "S"}


def read_chunks(parsed: list[tuple[str, str]], iobes_family: bool) -> list[Chunk]:
    """The chunks ``(type, start, end)`` of parsed (prefix, type) pairs, in order."""
    chunks: list[Chunk] = []
    start = None
    prev = (OUTSIDE, "")
    for i, cur in enumerate(parsed + [(OUTSIDE, "")]):
        if iobes_family:
            cur = (_IOBES_CANON.get(cur[0], cur[0]), cur[1])
        starts = i < len(parsed) and chunk_starts(prev, cur, iobes_family)
        if start is not None and (starts or chunk_ends(prev, cur, iobes_family)):
            chunks.append((prev[1], start, i))     # ('[' starts one before another ends)
            start = None
        if starts:
            start = i
        prev = cur
    if start is not None:                           # a prefix no O ends (conlleval.pl:
        chunks.append((parsed[start][1], start, len(parsed)))   # its input's end does)
    return chunks


def chunk_ends(prev, cur, iobes_family: bool = False) -> bool:
    """conlleval.pl's endOfChunk between (prefix, type) pairs (plus, for the IOBES family,
    S and its rules)."""
    (pt, ptype), (t, ctype) = prev, cur
    end = (pt, t) in {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"),
                      ("E", "E"), ("E", "I"), ("E", "O")}
    if pt not in (OUTSIDE, ".") and ptype != ctype:
        end = True
    if pt in ("[", "]"):
        end = True
    if iobes_family and (pt in ("E", "S") or (pt != OUTSIDE and t in ("B", "S"))):
        end = True
    return end


def chunk_starts(prev, cur, iobes_family: bool = False) -> bool:
    """conlleval.pl's startOfChunk between (prefix, type) pairs (plus, for the IOBES
    family, S and its rules)."""
    (pt, ptype), (t, ctype) = prev, cur
    start = (pt, t) in {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"),
                        ("E", "E"), ("E", "I"), ("O", "E")}
    if t not in (OUTSIDE, ".") and ptype != ctype:
        start = True
    if t in ("[", "]"):
        start = True
    if iobes_family and (t in ("B", "S") or (t != OUTSIDE and pt in ("E", "S"))):
        start = True
    return start


def split_tag(tag: str) -> tuple[str, str]:
    """``'B-NP'`` -> ``('B', 'NP')``; ``'B'`` -> ``('B', '')``; ``'O'`` -> ``('O', '')``.

    Split at the *first* hyphen, as conlleval.pl's ``/^([^-]*)-(.*)$/`` does:
    ``'B-ORG-X'`` -> ``('B', 'ORG-X')``, ``'I-I-PER'`` -> ``('I', 'I-PER')``."""
    prefix, sep, ctype = tag.partition("-")
    return prefix, ctype


def conlleval_chunks(tags: Sequence[str]) -> list[Chunk]:
    """The chunks of a tag sequence exactly as conlleval.pl's startOfChunk and
    endOfChunk read it, whatever its scheme: what :func:`fstchunk.evaluate` counts
    when no scheme is given, so its scores equal the script's.

    Any prefix is accepted (``B``, ``I``, ``E``, ``O``, ``[``, ``]``, others act
    only through type changes), including conlleval's quirk that ``E-X B-X``
    continues one chunk.  A chunk still open after the last tag ends there, as
    conlleval.pl ends it at the end of its input.  A stray ``I-X`` starts a chunk.

    Args:
        tags: one sentence's tags (a list of strings).

    Returns:
        The chunks as (type, start, end) triples, end exclusive, in order.

    Raises:
        InputError: ``tags`` is one string rather than a list of tags.

    Examples:
        >>> import fstchunk
        >>> fstchunk.conlleval_chunks(["I-PER", "I-PER", "O", "B-LOC"])
        [('PER', 0, 2), ('LOC', 3, 4)]
        >>> fstchunk.conlleval_chunks(["B-NP", "E-NP", "B-NP", "O"])    # E-X B-X: one chunk
        [('NP', 0, 3)]
    """
    return read_chunks([split_conlleval(t) for t in tag_list(tags)], iobes_family=False)


def split_conlleval(tag: str) -> tuple[str, str]:
    """(prefix, type) as conlleval.pl splits a tag, at its first hyphen; ``O`` has no
    type, and neither has a type ``0``, which Perl reads as false."""
    prefix, ctype = split_tag(tag) if tag != OUTSIDE else (OUTSIDE, "")
    return prefix, "" if ctype == "0" else ctype
