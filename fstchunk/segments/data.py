"""Segments and segmented sentences: the JSONL format of GENIA and CoNLL files.

A :class:`Segment` is a type and a sorted tuple of distinct 0-based token positions
(McDonald et al. 2005, §3.1: one label of a structured multilabel problem); it may be
non-contiguous, and a sentence's segments may overlap, nest or cross.

* JSONL (``../shared/data/genia/``): one object per line, ``{"id", "doc_id",
  "tokens": [...], "segments": [{"type": ..., "positions": [...]}, ...]}``; the reader
  keeps every key of the line (:attr:`SegSentence.record`) so that the writer can
  replace ``segments`` and leave the rest as it was.
* CoNLL: contiguous segments from a tag column in IOB2 (or ``scheme``), read as
  conlleval does; the writer of predictions appends a column of IOB2 tags, which
  exists only for non-overlapping contiguous segments (a prediction that needs more
  is refused, naming the sentence).

Pitfalls: positions are 0-based in files and in :class:`Segment`; the segment
space's member indices (:mod:`.space`) are 1..n with 0 and n+1 the boundaries.
Every reading error names ``file:line`` and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

from .. import encodings as enc
from ..conll import iter_conll, iter_lines
from ..errors import InputError, SchemeError


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


def read_jsonl(path: str, gold: bool = True) -> list[SegSentence]:
    """Sentences of a JSONL file; ``gold=False`` accepts lines without ``segments``."""
    return list(iter_jsonl(path, gold))


def iter_jsonl(path: str, gold: bool = True) -> Iterator[SegSentence]:
    """:func:`read_jsonl`, lazily (InputError at the end if there was no sentence)."""
    count = 0
    with open(path, encoding="utf-8") as fh:
        for k, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{k}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{where}: not a JSON object ({e.msg})") from None
            if not isinstance(rec, dict):
                raise InputError(f"{where}: not a JSON object")
            toks = rec.get("tokens")
            if (not isinstance(toks, list) or not toks
                    or not all(isinstance(t, str) and t for t in toks)):
                raise InputError(f"{where}: field 'tokens' must be a non-empty list of "
                                 f"non-empty strings")
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
        raise InputError(f"{path}: no sentences")


def write_jsonl(sentences: Iterable[SegSentence], predicted: Iterable[Iterable[Segment]],
                fh) -> None:
    """One line per sentence: its record with ``segments`` replaced by ``predicted``."""
    for s, segs in zip(sentences, predicted):
        rec = dict(s.record) if s.record else {"tokens": s.tokens}
        rec["segments"] = [g.to_json() for g in sorted(segs, key=_order)]
        fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def _order(s: Segment) -> tuple:
    return (s.positions[0], -s.positions[-1], s.type, s.positions)


def read_conll_segments(path: str, scheme: str = "IOB2", tag_column: int = -1,
                        pos_column: int | None = 1, gold: bool = True) -> list[SegSentence]:
    """Sentences of a CoNLL file (word first; POS in ``pos_column`` when the lines have
    three columns or more), segments = the chunks of the tag column (contiguous,
    non-overlapping; conlleval's reading for IOB2, else ``scheme``'s lenient one);
    ``gold=False``: no segments read."""
    return list(iter_conll_segments(path, scheme, tag_column, pos_column, gold))


def iter_conll_segments(path: str, scheme: str = "IOB2", tag_column: int = -1,
                        pos_column: int | None = 1, gold: bool = True
                        ) -> Iterator[SegSentence]:
    """:func:`read_conll_segments`, lazily (InputError at the end if there was none)."""
    count = 0
    iob2 = enc.canonical_scheme(scheme) == "IOB2"
    for s in iter_conll(path, min_columns=1):
        segs = None
        if gold:
            tags = s.column(tag_column)
            try:                        # a type that cannot be one, at its own line
                for i, t in enumerate(tags):
                    enc.tag_type(t, i)
                chunks = (enc.conlleval_chunks(tags) if iob2
                          else enc.tags_to_chunks(tags, scheme, strict=False))
            except SchemeError as e:
                raise SchemeError(f"{s.where(e.position)}: {str(e).partition(': ')[2]}",
                                  e.position) from None
            segs = [Segment(t, tuple(range(a, b))) for t, a, b in chunks]
        pos = s.column(pos_column) if pos_column is not None and len(s.rows[0]) > 2 else None
        count += 1
        yield SegSentence(s.column(0), segs, s.where(0), pos, {}, list(s.lines))
    if not count:
        raise InputError(f"{path}: no sentences")


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


def is_jsonl(path: str) -> bool:
    """Whether ``path`` is JSONL (its first non-blank character is ``{``), else CoNLL."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                return line.lstrip().startswith("{")
    raise InputError(f"{path}: an empty file")


def read_segments(path: str, gold: bool = True) -> list[SegSentence]:
    """Sentences of a JSONL or CoNLL file (CoNLL: segments from the last column)."""
    return list(iter_segments(path, gold))


def iter_segments(path: str, gold: bool = True) -> Iterator[SegSentence]:
    """:func:`read_segments`, lazily: what a streaming decoder reads."""
    return iter_jsonl(path, gold) if is_jsonl(path) else iter_conll_segments(path, gold=gold)


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
