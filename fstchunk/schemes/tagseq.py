"""Tag sequences as the API takes them: a sentence is a list (any sequence) of tag
strings, never one string, whose characters would read as tags (``"B-PER"`` as the
five tags ``B``, ``-``, ``P``, ``E``, ``R``).

:func:`tag_list` checks one sentence; :func:`tag_sentences` reads a corpus as
seqeval does: a list of sentences, or a flat list of tag strings as one sentence
(``evaluate(["B-PER", "I-PER", "O"], ...)``).
"""

from __future__ import annotations

from typing import Any, Sequence

from ..core.errors import InputError

_TEXT = (str, bytes)

#: the tag outside every chunk
OUTSIDE = "O"


def tag_list(tags: Any, what: str = "tags") -> Any:
    """``tags`` unchanged unless it is one string (or bytes): then one InputError
    naming ``what``."""
    if isinstance(tags, _TEXT):
        raise InputError(f"{what} is the string {_short(tags)}: give a list of tags, one "
                         f"per token (a one-token sentence is [{_short(tags)}])")
    return tags


def tag_sentences(value: Any, what: str) -> list[Sequence[str]]:
    """The sentences of ``value``: a list of tag sequences (each checked by
    :func:`tag_list`, naming ``what[i]``), or a flat list of tag strings, read as one
    sentence (seqeval's reading); one string is refused."""
    if isinstance(value, _TEXT):
        raise InputError(f"{what} is the string {_short(value)}: give a list of sentences, "
                         f"each a list of tags (or one sentence as a flat list of tags)")
    if not hasattr(value, "__iter__"):
        raise InputError(f"{what} must be a list of sentences of tags, got "
                         f"{type(value).__name__}")
    items = list(value)
    flat = [isinstance(x, str) for x in items]
    if items and all(flat):
        return [items]                              # one sentence of tags (seqeval)
    if any(flat):
        i = flat.index(True)
        raise InputError(f"{what}[{i}] is the string {_short(items[i])} among sentences: "
                         f"give every sentence as a list of tags")
    return [tag_list(x, f"{what}[{i}]") for i, x in enumerate(items)]


def _short(text: Any) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:37]) + "..."
