"""The training layout of a segment model (:mod:`fstchunk.io.layout`): the words and
POS tags of its training sentences, which an input is checked against."""

from __future__ import annotations

from typing import Sequence

from ...io.columns import Columns
from ...io.conll import Sentence
from ...io.layout import Layout
from ...io.segments import SegSentence


def training_layout(sentences: Sequence[SegSentence]) -> Layout:
    """The layout of training ``sentences``: word and POS (where every sentence has
    them) vocabularies; data scheme IOB2 for CoNLL sentences (JSONL ones keep
    their record)."""
    cols = _reading(sentences)
    pos = all(s.pos is not None for s in sentences)
    return Layout.of(cols, Columns(0, 1 if pos else None, None),
                     "IOB2" if sentences and not sentences[0].record else None)


def mismatch(layout: Layout, sentences: Sequence[SegSentence]) -> str | None:
    """Why the first ``sentences`` of an input do not look like ``layout``'s word or
    POS values (:meth:`fstchunk.io.layout.Layout.mismatch`, naming where they start),
    None if they do."""
    if not sentences:
        return None
    pos = all(s.pos is not None for s in sentences)
    bad = layout.mismatch(_reading(sentences), Columns(0, 1 if pos else None, None))
    return None if bad is None else f"{sentences[0].source}: {bad[1]}"


def _reading(sentences: Sequence[SegSentence]) -> list[Sentence]:
    """What the segment model reads of each sentence as CoNLL rows: word (and POS)."""
    return [Sentence([[t] if s.pos is None else [t, p]
                      for t, p in zip(s.tokens, s.pos or s.tokens)], list(s.lines), s.source)
            for s in sentences]
