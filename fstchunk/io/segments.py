"""Segments and segmented sentences: the JSONL format of GENIA and CoNLL files.

A :class:`Segment` is a type and a sorted tuple of distinct 0-based token positions
(McDonald et al. 2005, §3.1: one label of a structured multilabel problem); it may be
non-contiguous, and a sentence's segments may overlap, nest or cross.

* JSONL (``../shared/data/genia/``): one object per line, ``{"id", "doc_id",
  "tokens": [...], "segments": [{"type": ..., "positions": [...]}, ...]}``; the reader
  keeps every key of the line (:attr:`SegSentence.record`) so that the writer can
  replace ``segments`` and leave the rest as it was.
* CoNLL: contiguous segments from a tag column in IOB2 (or ``scheme``), read as
  conlleval does — except a sentence whose tags show the IOBES family (S, U, L, or B
  and E), which conlleval.pl misreads (S-X S-X as one chunk) and which is read in its
  scheme; the writer of predictions appends a column of IOB2 tags, which
  exists only for non-overlapping contiguous segments (a prediction that needs more
  is refused, naming the sentence).

The format is read off the content, never the name (:func:`detect_format`): JSONL iff
the first non-blank line, after a UTF-8 byte-order mark and white space, starts with
``{``; CRLF line ends and blank lines are allowed in both.  Errors that a wrong format
would cause (a line that is not a JSON object or has no ``tokens``; a JSON object on a
CoNLL token line; a ragged CoNLL column) name ``file:line`` and how the format was
decided (:class:`FileFormat`), so that ``--format`` can overrule it.

Pitfalls: positions are 0-based in files and in :class:`Segment`; the segment
space's member indices (:mod:`fstchunk.structures.segments`) are 1..n with 0 and n+1 the boundaries.
Every reading error names ``file:line`` and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

from ..core import sources
from ..core.errors import CoNLLError, InputError, SchemeError
from ..core.outputs import json_text
from ..schemes import encodings as enc
from .conll import iter_conll, iter_lines

#: the values of ``--format``: read off the content, or given
FORMATS = ("auto", "jsonl", "conll")


class Segment(NamedTuple):
    """A typed set of token positions (sorted, distinct, 0-based)."""
    type: str
    positions: tuple[int, ...]

    @property
    def contiguous(self) -> bool:
        return self.positions[-1] - self.positions[0] + 1 == len(self.positions)

    def to_json(self) -> dict:
        return {"type": self.type, "positions": list(self.positions)}


def make_segment(type_: Any, positions: Any, n: int, where: str) -> Segment:
    """A checked :class:`Segment` of an ``n``-token sentence; InputError naming ``where``."""
    if not isinstance(type_, str) or not type_:
        raise InputError(f"{where}: segment type must be a non-empty string, got {type_!r}")
    if (not isinstance(positions, (list, tuple)) or not positions
            or not all(isinstance(p, int) and not isinstance(p, bool) for p in positions)):
        raise InputError(f"{where}: segment positions must be a non-empty list of integers, "
                         f"got {positions!r}")
    pos = tuple(positions)
    if list(pos) != sorted(set(pos)):
        raise InputError(f"{where}: segment positions must be increasing and distinct, "
                         f"got {list(pos)}")
    if pos[0] < 0 or pos[-1] >= n:
        raise InputError(f"{where}: segment positions {list(pos)} outside the sentence's "
                         f"{n} tokens (0..{n - 1})")
    return Segment(type_, pos)


@dataclass
class SegSentence:
    """Tokens, their gold segments (None when the input has none), optional POS tags,
    where the sentence came from and (JSONL) its record's other keys."""
    tokens: list[str]
    segments: list[Segment] | None
    source: str = "<memory>"
    pos: list[str] | None = None
    record: dict = field(default_factory=dict)
    lines: list[int] = field(default_factory=list)      # CoNLL: the token lines

    def __len__(self) -> int:
        return len(self.tokens)


class FileFormat(NamedTuple):
    """A file's format (``jsonl`` or ``conll``) and how it was decided; ``str()`` is
    the clause errors append: "read as JSONL (line 1 ... starts with '{')"."""
    name: str
    reason: str

    def __str__(self) -> str:
        return f"read as {'JSONL' if self.name == 'jsonl' else 'CoNLL'} ({self.reason})"


def detect_format(path: str, given: str = "auto") -> FileFormat:
    """The format of ``path``: ``given`` unless it is ``auto``; else JSONL iff its first
    non-blank line (after a UTF-8 byte-order mark, CRLF and white space) starts with
    ``{``, otherwise CoNLL.  InputError for a file with no non-blank line or an
    unknown ``given``; CoNLLError for bytes that are not UTF-8 before that line."""
    if given not in FORMATS:
        raise InputError(f"unknown format {given!r}; use one of {', '.join(FORMATS)}")
    if given != "auto":
        return FileFormat(given, f"--format {given}")
    for k, line in iter_lines(path):
        text = line.strip()
        if text:
            first = "its first line" if k == 1 else f"line {k}, its first non-blank line,"
            if text.startswith("{"):
                return FileFormat("jsonl", f"{first} starts with '{{'; "
                                           f"--format conll to read it as CoNLL")
            return FileFormat("conll", f"{first} does not start with '{{'; "
                                       f"--format jsonl to read it as JSONL")
    raise InputError(f"{sources.name(path)}: an empty file (no non-blank line: neither JSONL "
                     f"nor CoNLL)")


def _suffix(fmt: FileFormat | None) -> str:
    return f"; {fmt}" if fmt else ""


def read_jsonl(path: str, gold: bool = True, fmt: FileFormat | None = None
               ) -> list[SegSentence]:
    """Sentences of a JSONL file; ``gold=False`` accepts lines without ``segments``."""
    return list(iter_jsonl(path, gold, fmt))


def iter_jsonl(path: str, gold: bool = True, fmt: FileFormat | None = None
               ) -> Iterator[SegSentence]:
    """:func:`read_jsonl`, lazily (InputError at the end if there was no sentence).
    A UTF-8 byte-order mark, CRLF line ends and blank lines are allowed; ``fmt`` (how
    the format was decided) is named in the errors a wrong format causes."""
    why = _suffix(fmt)
    count = 0
    for k, line in iter_lines(path):
        if not line.strip():
            continue
        where = f"{sources.name(path)}:{k}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: not a JSON object ({e.msg} at column {e.colno})"
                             f"{why}") from None
        except RecursionError:
            raise InputError(f"{where}: JSON nested too deeply{why}") from None
        if not isinstance(rec, dict):
            raise InputError(f"{where}: not a JSON object but a JSON "
                             f"{type(rec).__name__}{why}")
        toks = rec.get("tokens")
        if (not isinstance(toks, list) or not toks
                or not all(isinstance(t, str) and t for t in toks)):
            none = " (the object has no such field)" if "tokens" not in rec else ""
            raise InputError(f"{where}: field 'tokens' must be a non-empty list of "
                             f"non-empty strings{none}{why}")
        segs = None
        if "segments" in rec or gold:
            raw = rec.get("segments")
            if not isinstance(raw, list):
                raise InputError(f"{where}: field 'segments' must be a list")
            segs = []
            for j, s in enumerate(raw):
                if not isinstance(s, dict):
                    raise InputError(f"{where}: segment {j + 1} is not an object")
                segs.append(make_segment(s.get("type"), s.get("positions"), len(toks),
                                         f"{where}: segment {j + 1}"))
            if len(set(segs)) != len(segs):
                raise InputError(f"{where}: a segment is listed twice")
        pos = rec.get("pos")
        if pos is not None and (not isinstance(pos, list) or len(pos) != len(toks)):
            raise InputError(f"{where}: field 'pos' must list one tag per token")
        count += 1
        yield SegSentence(list(toks), segs, where, pos, rec, [k])
    if not count:
        raise InputError(f"{sources.name(path)}: no sentences{why}")


def write_jsonl(sentences: Iterable[SegSentence], predicted: Iterable[Iterable[Segment]],
                fh, probabilities: Iterable[dict] | None = None) -> None:
    """One line per sentence: its record with ``segments`` replaced by ``predicted``;
    with ``probabilities`` (per sentence, segment -> p or None) each segment whose p
    is known gets it as ``"p"``."""
    probs = iter(probabilities) if probabilities is not None else None
    for s, segs in zip(sentences, predicted):
        rec = dict(s.record) if s.record else {"tokens": s.tokens}
        p = next(probs) if probs is not None else {}
        rec["segments"] = [_with_p(g.to_json(), p.get(g)) for g in sorted(segs, key=_order)]
        fh.write(json_text(rec, ensure_ascii=False) + "\n")


def _with_p(obj: dict, p: float | None) -> dict:
    if p is not None:
        obj["p"] = p
    return obj


def _order(s: Segment) -> tuple:
    return (s.positions[0], -s.positions[-1], s.type, s.positions)


def read_conll_segments(path: str, scheme: str = "IOB2", tag_column: int = -1,
                        pos_column: int | None = 1, gold: bool = True,
                        fmt: FileFormat | None = None) -> list[SegSentence]:
    """Sentences of a CoNLL file (word first; POS in ``pos_column`` when the lines have
    three columns or more), segments = the chunks of the tag column (contiguous,
    non-overlapping; conlleval's reading for IOB2 — a sentence of IOBES-family tags
    in its own scheme —, else ``scheme``'s lenient one); ``gold=False``: no segments
    read."""
    return list(iter_conll_segments(path, scheme, tag_column, pos_column, gold, fmt))


def iter_conll_segments(path: str, scheme: str = "IOB2", tag_column: int = -1,
                        pos_column: int | None = 1, gold: bool = True,
                        fmt: FileFormat | None = None) -> Iterator[SegSentence]:
    """:func:`read_conll_segments`, lazily (InputError at the end if there was none).
    A token line that is a JSON object is refused (a JSONL file read as CoNLL), and
    the errors a wrong format causes name ``fmt``, how the format was decided."""
    why = _suffix(fmt)
    count = 0
    sentences = iter_conll(path, min_columns=1)
    while True:
        try:
            s = next(sentences, None)
        except CoNLLError as e:
            raise CoNLLError(f"{e}{why}") from None
        if s is None:
            break
        for row, line in zip(s.rows, s.lines):
            if row[0].startswith("{") and _json_object(" ".join(row)):
                raise InputError(f"{sources.name(path)}:{line}: a JSON object on a CoNLL token "
                                 f"line{why}")
        segs = _gold_segments(s, scheme, tag_column, why) if gold else None
        pos = s.column(pos_column) if pos_column is not None and len(s.rows[0]) > 2 else None
        count += 1
        yield SegSentence(s.column(0), segs, s.where(0), pos, {}, list(s.lines))
    if not count:
        raise InputError(f"{sources.name(path)}: no sentences{why}")


#: the chunk-tag prefixes of every scheme: what a gold tag column may hold besides O
TAG_PREFIXES = frozenset(p for name in enc.SCHEMES for p in enc.scheme_prefixes(name))
#: the schemes conlleval.pl does not know (S-X S-X would be one chunk, E-X B-X continue
#: one): a sentence whose tags show one of them is read in it
IOBES_FAMILY = ("IOBES", "BILOU", "IOBES2", "IOBES3")
_CONLLEVAL_PREFIXES = frozenset({"B", "I", "E"})


def _reading_scheme(tags: Sequence[str], scheme: str) -> str | None:
    """The scheme ``tags`` are read in by default (``scheme`` IOB2): the IOBES-family
    scheme whose prefixes hold all of theirs when they show that family (a prefix
    conlleval.pl does not know, such as S, U, L, or both B and E), else None
    (conlleval.pl's reading); ``scheme`` itself when it is given otherwise."""
    if enc.canonical_scheme(scheme) != "IOB2":
        return scheme
    prefixes = {enc.split_tag(t)[0] for t in tags if t != enc.OUTSIDE}
    if prefixes <= _CONLLEVAL_PREFIXES and not {"B", "E"} <= prefixes:
        return None
    for name in IOBES_FAMILY:
        if prefixes <= set(enc.scheme_prefixes(name)):
            return name
    return None                         # mixed prefixes: the tag check names the first


def _gold_segments(s, scheme: str, tag_column: int, why: str) -> list[Segment]:
    """The chunks of ``s``'s tag column as segments (conlleval's reading for IOB2, or
    the IOBES-family scheme the sentence's tags show (:func:`_reading_scheme`); else
    ``scheme``'s lenient one).  A column that holds no chunk tags (a word-only file, a
    POS column) is refused at the first non-tag, naming its line."""
    width = len(s.rows[0])
    column = "the last column" if tag_column == -1 else f"column {tag_column}"
    if width < 2 or not -width <= tag_column < width:
        raise InputError(f"{s.where(0)}: no tag column ({column}) to read gold segments "
                         f"from: the line has {width} column{'s' * (width != 1)}{why}")
    tags = s.column(tag_column)
    for i, tag in enumerate(tags):
        if tag != enc.OUTSIDE and enc.split_tag(tag)[0] not in TAG_PREFIXES:
            raise InputError(f"{s.where(i)}: {tag!r} in the tag column ({column}) is not a "
                             f"chunk tag (O, or PREFIX-TYPE with a prefix of "
                             f"{', '.join(sorted(TAG_PREFIXES))}){why}")
    reading = _reading_scheme(tags, scheme)
    if reading is None and not {enc.split_tag(t)[0] for t in tags
                                if t != enc.OUTSIDE} <= _CONLLEVAL_PREFIXES:
        first = next(i for i, t in enumerate(tags)
                     if t != enc.OUTSIDE and enc.split_tag(t)[0] not in _CONLLEVAL_PREFIXES)
        raise InputError(f"{s.where(first)}: {tags[first]!r} in the tag column ({column}) "
                         f"mixes schemes with the sentence's other tags (no scheme has all "
                         f"of their prefixes){why}")
    try:                                # a type that cannot be one, at its own line
        for i, t in enumerate(tags):
            enc.tag_type(t, i)
        chunks = (enc.conlleval_chunks(tags) if reading is None
                  else enc.tags_to_chunks(tags, reading, strict=False))
    except SchemeError as e:
        raise SchemeError(f"{s.where(e.position or 0)}: {str(e).partition(': ')[2] or e}"
                          f"{why}", e.position) from None
    return [Segment(t, tuple(range(a, b))) for t, a, b in chunks]


def _json_object(text: str) -> bool:
    """Whether ``text`` parses as a non-empty JSON object (``{}`` may be a word)."""
    try:
        value = json.loads(text)
        return isinstance(value, dict) and bool(value)
    except (json.JSONDecodeError, RecursionError):
        return False


def segments_to_tags(segments: Iterable[Segment], n: int, where: str) -> list[str]:
    """IOB2 tags of non-overlapping contiguous segments; InputError otherwise."""
    tags = ["O"] * n
    for s in sorted(segments, key=_order):
        if not s.contiguous:
            raise InputError(f"{where}: segment {s.type} {list(s.positions)} is not contiguous: "
                             f"a CoNLL tag column cannot hold it (write JSONL)")
        if any(tags[p] != "O" for p in s.positions):
            raise InputError(f"{where}: segment {s.type} {list(s.positions)} overlaps another: "
                             f"a CoNLL tag column cannot hold it (write JSONL)")
        tags[s.positions[0]] = f"B-{s.type}"
        for p in s.positions[1:]:
            tags[p] = f"I-{s.type}"
    return tags


def iter_types(sentences: Iterable[SegSentence]) -> Iterator[str]:
    """The segment types in order of first appearance."""
    seen: dict[str, None] = {}
    for s in sentences:
        for g in s.segments or ():
            seen.setdefault(g.type, None)
    return iter(seen)


def read_segments(path: str, gold: bool = True, fmt: str | FileFormat = "auto"
                  ) -> list[SegSentence]:
    """Sentences of a JSONL or CoNLL file (CoNLL: segments from the last column);
    ``fmt``: one of :data:`FORMATS` (auto: :func:`detect_format`) or a decided one; a
    pipe is read once (:mod:`fstchunk.core.sources`)."""
    with sources.held():
        return list(iter_segments(path, gold, fmt))


def iter_segments(path: str, gold: bool = True, fmt: str | FileFormat = "auto"
                  ) -> Iterator[SegSentence]:
    """:func:`read_segments`, lazily: what a streaming decoder reads."""
    if not isinstance(fmt, FileFormat):
        fmt = detect_format(path, fmt)
    return (iter_jsonl(path, gold, fmt) if fmt.name == "jsonl"
            else iter_conll_segments(path, gold=gold, fmt=fmt))


def paired(gold: Sequence[SegSentence], pred: Sequence[SegSentence], gold_path: str,
           pred_path: str) -> None:
    """InputError naming the first sentence where ``pred`` is not ``gold``'s tokens."""
    if len(gold) != len(pred):
        raise InputError(f"{gold_path} has {len(gold)} sentences, {pred_path} {len(pred)}")
    for g, p in zip(gold, pred):
        if g.tokens != p.tokens:
            raise InputError(f"{p.source}: its tokens differ from those of {g.source}")


def write_conll_predictions(path: str, sentences: Iterable[SegSentence],
                            predicted: Iterable[Iterable[Segment]], fh) -> None:
    """Every line of the CoNLL file ``path`` again, each token line with the predicted
    IOB2 tag appended (the line's own delimiter: a tab if it has one, else a space).
    Streams: ``sentences`` and ``predicted`` are read in step with the file's lines."""
    lines = iter_lines(path)
    for s, segs in zip(sentences, predicted):
        tag_of = dict(zip(s.lines, segments_to_tags(segs, len(s), s.source)))
        for lineno, raw in lines:
            text = raw.rstrip("\r\n")
            if lineno in tag_of:
                text += ("\t" if "\t" in text else " ") + tag_of[lineno]
            fh.write(text + "\n")
            if lineno == s.lines[-1]:
                break
    for _, raw in lines:
        fh.write(raw.rstrip("\r\n") + "\n")
