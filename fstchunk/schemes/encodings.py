"""Chunk encodings: IOB1, IOB2, IOE1, IOE2, IOBES (BIOES), BILOU, IOBES2, IOBES3.

A chunk is a triple ``(type, start, end)`` with 0-based ``start`` and exclusive
``end`` (Python slice convention); untyped chunks have type ``""``.  A tag is
``PREFIX-TYPE`` (``B-NP``) or a bare ``PREFIX`` (``B``) when untyped, and ``O``.

Scheme definitions (Tjong Kim Sang & Veenstra 1999; Tang et al., Table 1):

=======  ===========================================================
IOB1     I inside; B only on the first token of a chunk that directly
         follows a chunk *of the same type* (CoNLL convention).
IOB2     B on the first token of every chunk, I elsewhere inside.
IOE1     I inside; E only on the last token of a chunk that is directly
         followed by a chunk *of the same type* (CoNLL convention).
IOE2     E on the last token of every chunk, I elsewhere inside.
IOBES    S single-token chunk; B first, E last, I middle (alias BIOES,
         IOBES1).  BILOU is the same with L for E and U for S.
IOBES2   IOBES plus B2 on the 2nd token of a chunk of >= 3 tokens and B3
         on the 3rd token of a chunk of >= 4 tokens (Table 1's examples).
IOBES3   IOBES plus E2 on the 2nd-to-last token of a chunk of >= 3
         tokens and E3 on the 3rd-to-last of a chunk of >= 4 tokens.
=======  ===========================================================

Pitfalls this module settles:

* Tang et al.'s prose says B2 marks chunks of "more than three tokens" but their
  Table 1 puts B2 in the 3-token chunk ``only # 1.8``; we follow the table.
* Table 1's IOB1/IOE1 columns put B/E at type changes (``reckons B-VP``); the
  CoNLL data use B/E only between chunks of the same type, and so do we.
* Every scheme's validity language is strictly 2-local (a bigram constraint plus
  start and end constraints), which is what :func:`allowed` encodes.  The
  machines in :mod:`fstchunk.grammars` are built independently of it, and tests
  check they agree on every sequence up to length 6.
* ``strict=False`` reads invalid sequences the way conlleval.pl does: I-X after O
  or after another type starts a chunk, a type change ends one.  For the IOBES
  family (which conlleval.pl does not know) B and S always start a chunk and E
  and S always end one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..core.errors import InputError, SchemeError
from .boundaries import Chunk, read_chunks, split_tag
from .boundaries import conlleval_chunks, split_conlleval  # noqa: F401  (the API's names)
from .tagseq import OUTSIDE, tag_list


SCHEMES: tuple[str, ...] = (
    "IOB1", "IOB2", "IOE1", "IOE2", "IOBES", "BILOU", "IOBES2", "IOBES3")
"""The chunk schemes, by their canonical names, in the order the toolkit lists them
(Tjong Kim Sang & Veenstra 1999; Tang et al., Table 1); every ``scheme=`` and
``--scheme`` takes one, or an alias (``BIO`` is IOB2; ``BIOES``, ``IOBES1`` are IOBES).

| scheme | its tags (besides ``O``) |
|---|---|
| IOB1 | I inside; B on the first token of a chunk that follows one of its type |
| IOB2 | B on the first token of every chunk, I elsewhere inside |
| IOE1 | I inside; E on the last token of a chunk followed by one of its type |
| IOE2 | E on the last token of every chunk, I elsewhere inside |
| IOBES | S a one-token chunk; B first, E last, I in between |
| BILOU | IOBES with L for E and U for S |
| IOBES2 | IOBES plus B2, B3 on the 2nd, 3rd token of longer chunks |
| IOBES3 | IOBES plus E2, E3 on the 2nd-, 3rd-to-last token of longer chunks |

Examples:
    >>> import fstchunk
    >>> chunks = [("PER", 0, 1), ("PER", 1, 4)]      # two chunks of one type, side by side
    >>> for scheme in fstchunk.SCHEMES:
    ...     print(f"{scheme:7}", *fstchunk.chunks_to_tags(chunks, 5, scheme))
    IOB1    I-PER B-PER I-PER I-PER O
    IOB2    B-PER B-PER I-PER I-PER O
    IOE1    E-PER I-PER I-PER I-PER O
    IOE2    E-PER I-PER I-PER E-PER O
    IOBES   S-PER B-PER I-PER E-PER O
    BILOU   U-PER B-PER I-PER L-PER O
    IOBES2  S-PER B-PER B2-PER E-PER O
    IOBES3  S-PER B-PER E2-PER E-PER O
"""

ALIASES: dict[str, str] = {"BIOES": "IOBES", "IOBES1": "IOBES", "BIO": "IOB2"}

#: Global order of chunk prefixes; fixes the label numbering of all machines.
PREFIX_ORDER: tuple[str, ...] = ("B", "I", "E", "S", "L", "U", "B2", "B3", "E2", "E3")



@dataclass(frozen=True)
class SchemeSpec:
    """The local (bigram) definition of a scheme, in canonical prefixes.

    ``cont``: pairs (p, q) where q continues the chunk opened by p (same type).
    ``must_continue``: prefixes after which the chunk must go on.
    ``needs_prev``: prefixes that can only continue a chunk.
    ``b_after_same``: IOB1 rule (B-X only right after a token of an X chunk).
    ``e_before_same``: IOE1 rule (E-X only right before an X chunk starts).
    ``rename``: canonical prefix -> prefix as written in this scheme.
    """
    name: str
    prefixes: tuple[str, ...]
    cont: frozenset
    must_continue: frozenset = frozenset()
    needs_prev: frozenset = frozenset()
    b_after_same: bool = False
    e_before_same: bool = False
    rename: tuple = ()


def _spec(name, prefixes, cont, must=(), needs=(), **kw) -> SchemeSpec:
    return SchemeSpec(name, tuple(prefixes), frozenset(cont), frozenset(must),
                      frozenset(needs), **kw)


_IOBES_CONT = {("B", "I"), ("B", "E"), ("I", "I"), ("I", "E")}
_SPECS: dict[str, SchemeSpec] = {s.name: s for s in (
    _spec("IOB1", "BI", {("I", "I"), ("B", "I")}, b_after_same=True),
    _spec("IOB2", "BI", {("B", "I"), ("I", "I")}, needs="I"),
    _spec("IOE1", "IE", {("I", "I"), ("I", "E")}, e_before_same=True),
    _spec("IOE2", "IE", {("I", "I"), ("I", "E")}, must="I"),
    _spec("IOBES", "BIES", _IOBES_CONT, must="BI", needs="IE"),
    _spec("BILOU", "BIES", _IOBES_CONT, must="BI", needs="IE",
          rename=(("E", "L"), ("S", "U"))),
    _spec("IOBES2", ("B", "I", "E", "S", "B2", "B3"),
          {("B", "B2"), ("B", "E"), ("B2", "B3"), ("B2", "E"), ("B3", "I"),
           ("B3", "E"), ("I", "I"), ("I", "E")},
          must=("B", "B2", "B3", "I"), needs=("B2", "B3", "I", "E")),
    _spec("IOBES3", ("B", "I", "E", "S", "E2", "E3"),
          {("B", "I"), ("B", "E3"), ("B", "E2"), ("B", "E"), ("I", "I"),
           ("I", "E3"), ("E3", "E2"), ("E2", "E")},
          must=("B", "I", "E3", "E2"), needs=("I", "E3", "E2", "E")),
)}


def canonical_scheme(scheme: str) -> str:
    """Return the canonical name of ``scheme`` (case-insensitive, aliases)."""
    if not isinstance(scheme, str):
        raise SchemeError(f"scheme must be a string, got {scheme!r}")
    name = scheme.upper()
    name = ALIASES.get(name, name)
    if name not in _SPECS:
        raise SchemeError(
            f"unknown chunk scheme {scheme!r}; known: {', '.join(SCHEMES)} "
            f"(aliases: {', '.join(ALIASES)})")
    return name


def spec(scheme: str) -> SchemeSpec:
    return _SPECS[canonical_scheme(scheme)]


def scheme_prefixes(scheme: str) -> tuple[str, ...]:
    """Prefixes as written in ``scheme`` (BILOU writes L and U)."""
    s = spec(scheme)
    ren = dict(s.rename)
    return tuple(ren.get(p, p) for p in s.prefixes)


def make_tag(prefix: str, ctype: str) -> str:
    return f"{prefix}-{ctype}" if ctype else prefix


def type_problem(ctype: str) -> str | None:
    """Why ``ctype`` cannot be a chunk type, or None if it can: hyphens are fine
    (``ORG-X``); refused are the empty type of ``'B-'`` (``''`` means untyped ``'B'``),
    white space (CoNLL columns split on it) and ',' (it separates list items)."""
    if not ctype:
        return "is empty"
    if any(ch.isspace() for ch in ctype):
        return "contains white space"
    return ("contains ',' (which separates the items of --types, --tags and --gold)"
            if "," in ctype else None)


def tag_type(tag: str, pos: int = -1) -> str:
    """The chunk type of ``tag`` (``''`` for ``O`` and untyped tags), checked by
    :func:`type_problem`; SchemeError naming the tag (and ``pos`` if >= 0)."""
    at = f"position {pos}: " if pos >= 0 else ""
    if not isinstance(tag, str):
        raise SchemeError(f"{at}tag {tag!r} is not a string", pos if pos >= 0 else None)
    prefix, sep, ctype = tag.partition("-")
    problem = type_problem(ctype) if sep else None
    if problem:
        raise SchemeError(f"{at}tag {tag!r}: its chunk type {ctype!r} {problem}",
                          pos if pos >= 0 else None)
    return ctype


def scheme_tags(scheme: str, types: Sequence[str] = ("",)) -> tuple[str, ...]:
    """All tags of ``scheme`` over chunk ``types``: ``O`` first, then by type."""
    types = tuple(types) if types else ("",)
    return (OUTSIDE,) + tuple(make_tag(p, t) for t in types for p in scheme_prefixes(scheme))


def _parse(tag: str, s: SchemeSpec, pos: int) -> tuple[str, str]:
    """Tag -> (canonical prefix, type); SchemeError naming position and tag."""
    try:
        return _PARSED[s.name][tag]
    except (KeyError, TypeError):
        pass
    if not isinstance(tag, str):
        raise SchemeError(f"position {pos}: tag {tag!r} is not a string",
                          pos if pos >= 0 else None)
    if tag == OUTSIDE:
        return OUTSIDE, ""
    prefix, ctype = split_tag(tag)
    tag_type(tag, pos)
    ren = dict(s.rename)
    canon = {v: k for k, v in s.rename}.get(prefix, prefix)
    if canon not in s.prefixes or ren.get(canon, canon) != prefix:
        raise SchemeError(
            f"position {pos}: tag {tag!r} is not a {s.name} tag "
            f"(prefixes {', '.join(scheme_prefixes(s.name))} and O)", pos if pos >= 0 else None)
    if len(_PARSED[s.name]) < 100_000:
        _PARSED[s.name][tag] = (canon, ctype)
    return canon, ctype


_PARSED: dict[str, dict[str, tuple[str, str]]] = {name: {} for name in _SPECS}


def allowed(scheme: str, prev: str | None, cur: str | None) -> bool:
    """Whether tag ``cur`` may follow tag ``prev`` (``None`` = sentence boundary)."""
    s = spec(scheme)
    p = _parse(prev, s, -1) if prev is not None else None
    c = _parse(cur, s, -1) if cur is not None else None
    return _allowed(s, p, c)


@functools.lru_cache(maxsize=1 << 16)
def _allowed(s: SchemeSpec, p, c) -> bool:
    pin = p is not None and p[0] != OUTSIDE
    cin = c is not None and c[0] != OUTSIDE
    same = pin and cin and p[1] == c[1]
    cont = same and (p[0], c[0]) in s.cont
    if pin and p[0] in s.must_continue and not cont:
        return False
    if cin and c[0] in s.needs_prev and not cont:
        return False
    if s.b_after_same and cin and c[0] == "B" and not same:
        return False
    if s.e_before_same and pin and p[0] == "E" and not (same and c[0] in ("I", "E")):
        return False
    return True


def continues(scheme: str, prev: str | None, cur: str) -> bool:
    """Whether ``cur`` continues the chunk that ``prev`` is in (valid sequences).

    On a valid sequence a chunk starts at ``cur`` iff ``cur`` is not O and does
    not continue; the chunk of ``prev`` ends at ``prev`` iff ``prev`` is not O and
    ``cur`` does not continue it.  ``prev=None`` is the sentence start.
    """
    if prev is None:
        return False
    s = spec(scheme)
    p, c = _parse(prev, s, -1), _parse(cur, s, -1)
    return (p[0] != OUTSIDE and c[0] != OUTSIDE and p[1] == c[1]
            and (p[0], c[0]) in s.cont)


def _violation(tags: Sequence[str], s: SchemeSpec) -> tuple[int | None, str] | None:
    """(position, message) of the first offence, or None; unknown tags raise."""
    if len(tags) == 0:
        return None, "empty tag sequence (a sentence has at least one token)"
    parsed = [_parse(t, s, i) for i, t in enumerate(tags)]
    prev = None
    for i, c in enumerate(parsed + [None]):
        if not _allowed(s, prev, c):
            if c is None:
                return i - 1, (f"position {i - 1}: a {s.name} sequence cannot end with "
                               f"{tags[i - 1]!r}")
            after = f"after {tags[i - 1]!r}" if i else "at the start of a sentence"
            return i, f"position {i}: tag {tags[i]!r} cannot stand {after} in {s.name}"
        prev = c
    return None


def is_valid(tags: Sequence[str], scheme: str) -> bool:
    """True iff ``tags`` is a well-formed ``scheme`` sequence (unknown tags -> False).

    Examples:
        >>> fstchunk.is_valid(["I-PER", "O"], "IOB2"), fstchunk.is_valid(["I-PER", "O"], "IOB1")
        (False, True)
    """
    s = spec(scheme)
    tag_list(tags)
    try:
        return _violation(tags, s) is None
    except ValueError:
        return False


def validate(tags: Sequence[str], scheme: str) -> None:
    """Raise :class:`~fstchunk.core.errors.SchemeError` naming the first offending position
    and tag (also as ``e.position``)."""
    found = _violation(tag_list(tags), spec(scheme))
    if found:
        raise SchemeError(found[1], found[0])


def tags_to_chunks(tags: Sequence[str], scheme: str, strict: bool = True) -> list[Chunk]:
    """Chunks ``(type, start, end)`` of a tag sequence, in order (``end`` exclusive).

    Args:
        tags: one tag per token, e.g. ``B-PER``, ``I-PER``, ``O``.
        scheme: a name of :data:`SCHEMES` (``IOB2``, ``IOBES``, ...).
        strict: raise on an invalid sequence; ``False`` reads it as conlleval.pl does.

    Returns:
        The chunks, as ``(type, start, end)`` tuples.

    Raises:
        SchemeError: an unknown scheme, or (``strict``) an invalid sequence, naming the
            position and the tag.

    Examples:
        >>> fstchunk.tags_to_chunks(["B-PER", "I-PER", "O", "B-LOC"], "IOB2")
        [('PER', 0, 2), ('LOC', 3, 4)]
    """
    s = spec(scheme)
    tags = list(tag_list(tags))
    if strict:
        validate(tags, scheme)
    parsed = [_parse(t, s, i) for i, t in enumerate(tags)]
    iobes = s.name in ("IOBES", "BILOU", "IOBES2", "IOBES3")
    return read_chunks(parsed, iobes_family=iobes)


def chunks_to_tags(chunks: Iterable[Chunk], length: int, scheme: str) -> list[str]:
    """Encode non-overlapping chunks as ``length`` tags of ``scheme``.

    Examples:
        >>> fstchunk.chunks_to_tags([("PER", 0, 2), ("LOC", 3, 4)], 5, "IOBES")
        ['B-PER', 'E-PER', 'O', 'S-LOC', 'O']
    """
    s = spec(scheme)
    ren = dict(s.rename)
    out = [OUTSIDE] * length
    chunks = sorted(chunks, key=lambda c: c[1])
    ends = {(c[2], c[0]) for c in chunks}      # (end, type): a chunk of type ends at end
    starts = {(c[1], c[0]) for c in chunks}
    prev_end = 0
    for ctype, start, end in chunks:
        if not (0 <= start < end <= length) or start < prev_end:
            raise InputError(
                f"chunk {(ctype, start, end)!r} is empty, out of range for length "
                f"{length}, or overlaps the previous chunk")
        prev_end = end
        k = end - start
        pre = _chunk_prefixes(s.name, k,
                              after_same=(start, ctype) in ends,
                              before_same=(end, ctype) in starts)
        for i, p in enumerate(pre):
            out[start + i] = make_tag(ren.get(p, p), ctype)
    return out


def _chunk_prefixes(name: str, k: int, after_same: bool, before_same: bool) -> list[str]:
    """Canonical prefixes of one chunk of ``k`` tokens in scheme ``name``."""
    if name == "IOB1":
        return ["B" if after_same else "I"] + ["I"] * (k - 1)
    if name == "IOB2":
        return ["B"] + ["I"] * (k - 1)
    if name == "IOE1":
        return ["I"] * (k - 1) + ["E" if before_same else "I"]
    if name == "IOE2":
        return ["I"] * (k - 1) + ["E"]
    if k == 1:
        return ["S"]
    mid = ["I"] * (k - 2)
    if name == "IOBES2":
        mid = (["B2", "B3"] + mid[2:])[:k - 2]
    elif name == "IOBES3":
        mid = (mid[2:] + ["E3", "E2"])[-(k - 2):] if k > 2 else []
    return ["B"] + mid + ["E"]


def convert(tags: Sequence[str], source: str, target: str, strict: bool = True) -> list[str]:
    """Re-encode ``tags`` from scheme ``source`` into scheme ``target`` (same chunks;
    ``strict=False`` reads an invalid ``tags`` as conlleval.pl does).

    Examples:
        >>> fstchunk.convert(["B-PER", "I-PER", "O", "B-LOC"], "IOB2", "BILOU")
        ['B-PER', 'L-PER', 'O', 'U-LOC']
    """
    return chunks_to_tags(tags_to_chunks(tags, source, strict=strict), len(tags), target)


def chunk_types(tags: Iterable[str]) -> tuple[str, ...]:
    """Sorted chunk types used by ``tags`` (``()`` when all are untyped or O); a type
    that :func:`type_problem` refuses raises SchemeError naming its tag."""
    types = {tag_type(t) for t in tag_list(tags) if t != OUTSIDE}
    return tuple(sorted(t for t in types if t))
