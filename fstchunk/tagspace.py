"""Tag sets and the symbol table shared by every machine of one set of chunk types.

One :class:`pynini.SymbolTable` serves all schemes over the same chunk types: it
holds ``<epsilon>`` at label 0, ``O`` at label 1, then every prefix of
:data:`~fstchunk.encodings.PREFIX_ORDER` for every type.  So ``B-NP`` has the same
label in the IOB2 acceptor, the IOB1->IOBES converter and the T machine, and
machines of different schemes compose without relabelling.

Pitfall: a :class:`TagSet` orders its tags ``O`` first, then type by type in the
scheme's prefix order; score arrays (``n x L`` emissions) use that order, which is
*not* the label order of the symbol table.  Use :meth:`TagSet.label` /
:meth:`TagSet.index` to move between them.
"""

from __future__ import annotations

import functools
from typing import Sequence

import pynini

from . import encodings as enc

EPSILON = "<epsilon>"


@functools.lru_cache(maxsize=None)
def symbol_table(types: tuple[str, ...]) -> pynini.SymbolTable:
    """The shared symbol table for chunk ``types`` (``("",)`` for untyped tags)."""
    table = pynini.SymbolTable(name="fstchunk:" + ",".join(types))
    table.add_symbol(EPSILON, 0)
    table.add_symbol(enc.OUTSIDE)
    for t in types:
        for p in enc.PREFIX_ORDER:
            table.add_symbol(enc.make_tag(p, t))
    return table


def normalize_types(types: Sequence[str] | str | None) -> tuple[str, ...]:
    """``"NP,VP"`` or ``["VP", "NP"]`` -> ``("NP", "VP")``; empty/None -> ``("",)``."""
    if types is None:
        return ("",)
    if isinstance(types, str):
        types = [t for t in types.split(",")]
    types = [t.strip() for t in types if t is not None]
    for t in types:
        if "-" in t or any(ch.isspace() for ch in t):
            raise ValueError(f"chunk type {t!r} must not contain '-' or white space")
    types = sorted(set(t for t in types if t))
    return tuple(types) if types else ("",)


class TagSet:
    """The tags of one scheme over a set of chunk types, with their labels.

    >>> ts = TagSet("IOB2", ["NP"])
    >>> ts.tags
    ('O', 'B-NP', 'I-NP')
    """

    def __init__(self, scheme: str, types: Sequence[str] | str | None = None):
        self.scheme = enc.canonical_scheme(scheme)
        self.types = normalize_types(types)
        self.tags = enc.scheme_tags(self.scheme, self.types)
        self.symbols = symbol_table(self.types)
        self._index = {t: i for i, t in enumerate(self.tags)}
        self.labels = tuple(self.symbols.find(t) for t in self.tags)

    @classmethod
    def from_tags(cls, tags: Sequence[str], scheme: str) -> "TagSet":
        """The tag set of ``scheme`` over the chunk types that ``tags`` use."""
        return cls(scheme, enc.chunk_types(tags) or ("",))

    def __len__(self) -> int:
        return len(self.tags)

    def __repr__(self) -> str:
        return f"TagSet({self.scheme!r}, {list(self.types)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, TagSet) and (self.scheme, self.types) == (other.scheme, other.types)

    def __hash__(self) -> int:
        return hash((self.scheme, self.types))

    def index(self, tag: str, where: str = "") -> int:
        """Position of ``tag`` in :attr:`tags`; ValueError naming it if unknown."""
        try:
            return self._index[tag]
        except (KeyError, TypeError):
            at = f"{where}: " if where else ""
            raise ValueError(
                f"{at}tag {tag!r} is not in the {self.scheme} tag set over types "
                f"{','.join(self.types) or '(untyped)'}") from None

    def indices(self, tags: Sequence[str]) -> list[int]:
        return [self.index(t, f"position {i}") for i, t in enumerate(tags)]

    def label(self, tag: str) -> int:
        return self.labels[self.index(tag)]
