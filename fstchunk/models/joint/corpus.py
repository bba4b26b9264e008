"""The joint model's view of a CoNLL corpus: words, POS and chunk layers.

Column 0 is the word, column 1 the POS tag, the last column the IOB2 chunk tag.
Shimizu & Haas (2006) collapse the 45 Penn POS tags to the 5 classes of Table 3
(:func:`collapse_pos`) and keep NP chunks only (:func:`np_only`); both mappings
are optional and recorded in a model's settings (``collapse_pos``, ``np_only``)
so that decoding reads a corpus the way training did.  :func:`scores` gives
Table 7's columns (POS accuracy, chunk-tag accuracy, conlleval chunk F1) of
predictions against gold layers.

Gold chunk tags are read strictly: an invalid IOB2 sequence (``I-NP`` after ``O``)
raises :class:`~fstchunk.core.errors.SchemeError` at the offending tag's own
``file:line``, naming the tag and what it follows (:func:`fstchunk.models.base.gold_tags`;
the CLI's ``--on-invalid`` repairs or skips such sentences before they get here).

Pitfalls:

* Decoding needs words and POS only: ``layered(..., gold=False)`` reads two
  columns and leaves ``chunks`` ``None``; with ``gold=None`` (the default) a
  sentence whose lines have three or more columns gets its chunk column, one with
  exactly two does not.  A line with fewer columns than needed raises
  :class:`~fstchunk.core.errors.CoNLLError` naming its file and line.
* The tags are validated before the NP-only mapping (which keeps valid sequences
  valid), so an error names the tag as it is in the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ...core.errors import CoNLLError, InputError
from ...evaluation.chunks import evaluate
from ...io.conll import Sentence
from ..base import gold_tags

# Table 3: the 45 Penn tags collapsed to 5 classes.
_COLLAPSE = [(re.compile(r"NN.*"), "NOUN"), (re.compile(r"VB.*"), "VERB"),
             (re.compile(r"JJ.*"), "JADJ"), (re.compile(r"RB.*"), "RBP")]
COLLAPSED_POS = ("NOUN", "VERB", "JADJ", "RBP", "OTHER")


def collapse_pos(tag: str) -> str:
    """Table 3: NN* → NOUN, VB* → VERB, JJ* → JADJ, RB* → RBP, else OTHER."""
    for rx, out in _COLLAPSE:
        if rx.fullmatch(tag):
            return out
    return "OTHER"


def np_only(tag: str) -> str:
    """Keep NP chunks (B-NP, I-NP); every other tag becomes O."""
    return tag if tag in ("B-NP", "I-NP") else "O"


@dataclass
class Layered:
    """A sentence's words and, after the optional mappings, its POS and chunk tags
    (``chunks`` is None when the sentence was read without gold chunks)."""
    sentence: Sentence
    pos: list[str]
    chunks: list[str] | None


def layered(sentences: Sequence[Sentence], collapse: bool = False,
            np_chunks: bool = False, gold: bool | None = None) -> list[Layered]:
    """Read word, POS (column 1) and chunk (last column, strict IOB2) tags, with the
    POS collapsing of Table 3 and the NP-only mapping applied if asked.  ``gold``:
    True needs the chunk column, False reads words and POS only, None reads the
    chunk column of a sentence that has one (three or more columns); see the module
    doc."""
    out = []
    for s in sentences:
        if len(s) == 0:
            raise CoNLLError(f"{s.where(0)}: an empty sentence")
        widths = [len(r) for r in s.rows]
        need = 3 if gold or (gold is None and widths[0] >= 3) else 2
        short = [i for i, k in enumerate(widths) if k < need]
        if short:
            what = "word, POS and chunk" if need == 3 else "word and POS"
            raise CoNLLError(f"{s.where(short[0])}: the joint model needs {what} columns "
                             f"(the line has {widths[short[0]]})")
        pos = s.column(1)
        chunks = gold_tags(s, "IOB2", "IOB2", -1) if need == 3 else None
        if collapse:
            pos = [collapse_pos(t) for t in pos]
        if np_chunks and chunks is not None:
            chunks = [np_only(t) for t in chunks]
        out.append(Layered(s, pos, chunks))
    return out


def scores(gold: Sequence[Layered], pos: Sequence[Sequence[str]],
           chunks: Sequence[Sequence[str]]) -> dict[str, float]:
    """POS accuracy, chunk-tag accuracy and conlleval chunk F1, in percent, of
    predictions against gold sentences (InputError for none, or lengths that differ)."""
    if len(pos) != len(gold) or len(chunks) != len(gold):
        raise InputError(f"scores: {len(gold)} gold sentences but {len(pos)} POS and "
                         f"{len(chunks)} chunk predictions")
    n = sum(len(g.pos) for g in gold)
    if n == 0:
        raise InputError("scores: no gold tokens to score (no sentences)")
    for g, p, c in zip(gold, pos, chunks):
        if g.chunks is None:
            raise InputError(f"{g.sentence.where(0)}: no gold chunk column to score against")
        if len(p) != len(g.pos) or len(c) != len(g.pos):
            raise InputError(f"{g.sentence.where(0)}: {len(g.pos)} tokens but {len(p)} POS "
                             f"and {len(c)} chunk predictions")
    pos_ok = sum(a == b for g, p in zip(gold, pos) for a, b in zip(g.pos, p))
    rep = evaluate([g.chunks for g in gold], chunks)
    return {"pos_accuracy": 100.0 * pos_ok / n, "np_accuracy": rep.accuracy,
            "np_f1": rep.overall.f}
