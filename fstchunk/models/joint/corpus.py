"""The joint model's view of a CoNLL corpus: words, POS and chunk layers.

Column 0 is the word, column 1 the POS tag, the last column the IOB2 chunk tag.
Shimizu & Haas (2006) collapse the 45 Penn POS tags to the 5 classes of Table 3
(:func:`collapse_pos`) and keep NP chunks only (:func:`np_only`); both mappings
are optional and recorded in a model's settings (``collapse_pos``, ``np_only``)
so that decoding reads a corpus the way training did.

Pitfall: a sentence with fewer than three columns raises
:class:`~fstchunk.errors.CoNLLError` naming its file and line, even when only
the words are needed (decoding reads the same layers as training).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ...conll import Sentence
from ...errors import CoNLLError

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
    """A sentence's words and, after the optional mappings, its POS and chunk tags."""
    sentence: Sentence
    pos: list[str]
    chunks: list[str]


def layered(sentences: Sequence[Sentence], collapse: bool = False,
            np_chunks: bool = False) -> list[Layered]:
    """Read word, POS (column 1) and chunk (last column) tags, with the POS
    collapsing of Table 3 and the NP-only mapping applied if asked."""
    out = []
    for s in sentences:
        if min(len(r) for r in s.rows) < 3:
            raise CoNLLError(f"{s.where(0)}: the joint model needs word, POS and chunk columns")
        pos = s.column(1)
        chunks = s.column(-1)
        if collapse:
            pos = [collapse_pos(t) for t in pos]
        if np_chunks:
            chunks = [np_only(t) for t in chunks]
        out.append(Layered(s, pos, chunks))
    return out
