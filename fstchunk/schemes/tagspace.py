"""The tag space: one compiled object per (tags, scheme) that everything asks.

A :class:`TagSpace` holds, for a tag list in a fixed column order and a scheme:

* the **symbols**: one :class:`pynini.SymbolTable` per set of chunk types, shared
  by every scheme over those types (``<epsilon>`` = 0, ``O`` = 1, then every
  prefix of :data:`~fstchunk.schemes.encodings.PREFIX_ORDER` for every type), so ``B-NP``
  has the same label in the IOB2 acceptor, the IOB1->IOBES converter and the T
  machine, and machines of different schemes compose without relabelling;
* the **validity masks** of the scheme's 2-local rules
  (:func:`fstchunk.schemes.encodings.allowed`): ``start_ok[c]``, ``trans_ok[p, c]``,
  ``end_ok[p]``;
* the **boundary tables** over tag pairs, row ``L`` standing for the sentence
  start: ``cont[p, c]`` (c continues p's chunk), ``opens[p, c]`` (a chunk starts
  at c), ``closes[p, c]`` (p's chunk ends at p), and ``type_index[t]`` (index of
  the tag's chunk type in :attr:`types`, -1 for ``O``).

The scheme's rules are defined once, as pure functions, in
:mod:`fstchunk.schemes.encodings`; this module compiles them into arrays once per tag
space (:meth:`TagSpace.of` caches).  Lattices, the engine, the CRF and the
grammars read these arrays instead of rebuilding them.

A tag list must **express its scheme** (:func:`check_expresses`): for every chunk
type it uses, every tag the scheme defines for that type (``O`` may be absent).
``O, B-NP, I-NP`` in IOBES is refused, naming ``E-NP, S-NP``: without them the only
valid sequence is all ``O``.  Every lattice, torch CRF, score file and model file
meets a scheme here, so this is the one place that refuses such a list.

**The unconstrained chain** (:data:`UNCONSTRAINED`, ``scheme=None`` or ``"none"``,
:func:`canonical`): any distinct label strings (POS tags, ``sunny``/``rainy``), every
start, transition and end allowed, no chunk types (``types == ()``, ``type_index`` all
−1, no boundary), a symbol table of the labels themselves: an ordinary linear-chain
CRF on the same engine.  Chunk operations (expected F, MEU, chunk marginals) refuse
it (:meth:`TagSpace.require_chunks`), naming ``scheme=None``.

Pitfall: a tag space's column order (``tags``) is the order of score arrays and
marginals; it is *not* the label order of the symbol table.  Use :meth:`index`
and :meth:`label` to move between them.  :class:`TagSet` is the tag space of
*all* tags of a scheme over given types, ``O`` first, then type by type in the
scheme's prefix order.
"""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np
import pynini

from ..core.errors import InputError, SchemeError
from . import encodings as enc
from .tagseq import tag_list

EPSILON = "<epsilon>"
#: the scheme name of the unconstrained chain (module doc); ``None`` means the same
UNCONSTRAINED = "none"


def canonical(scheme: str | None) -> str:
    """:data:`UNCONSTRAINED` for None or ``"none"`` (any case), else the scheme's
    canonical name (:func:`~fstchunk.schemes.encodings.canonical_scheme`)."""
    if scheme is None or (isinstance(scheme, str) and scheme.lower() == UNCONSTRAINED):
        return UNCONSTRAINED
    return enc.canonical_scheme(scheme)


def chunked(scheme: str | None) -> bool:
    """Whether ``scheme`` is a chunk scheme (not the unconstrained chain)."""
    return canonical(scheme) != UNCONSTRAINED


@functools.lru_cache(maxsize=64)
def label_table(labels: tuple[str, ...]) -> pynini.SymbolTable:
    """The symbol table of an unconstrained chain: ``<epsilon>`` = 0, the labels 1..L."""
    table = pynini.SymbolTable(name="fstchunk:labels")
    table.add_symbol(EPSILON, 0)
    for t in labels:
        table.add_symbol(t)
    return table


def check_labels(labels: Sequence[str]) -> tuple[str, ...]:
    """``labels`` of an unconstrained chain as a tuple: not empty, no repeats, each a
    non-empty string without white space (a column of a CoNLL file)."""
    labels = tuple(tag_list(labels, "the label list"))
    if not labels:
        raise InputError("the label list is empty")
    for i, t in enumerate(labels):
        if not isinstance(t, str) or not t or t != t.strip() or any(c.isspace() for c in t):
            raise InputError(f"item {i} of the label list: {t!r} is not a non-empty string "
                             f"without white space")
    if len(set(labels)) != len(labels):
        raise InputError(f"the label list repeats a label: {labels}")
    return labels


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
    """``"NP,VP"`` or ``["VP", "NP"]`` -> ``("NP", "VP")``; empty/None -> ``("",)``.
    Hyphens are part of a type (``ORG-X``: tags ``B-ORG-X`` split at the first hyphen,
    :func:`~fstchunk.schemes.encodings.split_tag`); InputError for a type that
    :func:`~fstchunk.schemes.encodings.type_problem` refuses (white space, ',')."""
    if types is None:
        return ("",)
    if isinstance(types, str):
        types = types.split(",")
    out = set()
    for t in types:
        if t is None:
            continue
        if not isinstance(t, str):
            raise InputError(f"chunk type {t!r} is not a string")
        t = t.strip()
        problem = enc.type_problem(t) if t else None
        if problem:
            raise InputError(f"chunk type {t!r} {problem}")
        if t:
            out.add(t)
    return tuple(sorted(out)) if out else ("",)


def check_tags(tags: Sequence[str], scheme: str) -> tuple[str, ...]:
    """``tags`` as a tuple: not empty, no repeats, each a tag of ``scheme`` (any
    subset: a linear chain over some labels, as a cascade's chunker has)."""
    tags = tuple(tag_list(tags, "the tag list"))
    if not tags:
        raise InputError("the tag list is empty")
    if len(set(tags)) != len(tags):
        raise InputError(f"the tag list repeats a tag: {tags}")
    for i, t in enumerate(tags):
        try:
            enc.tags_to_chunks([t], scheme, strict=False)   # raises: not a tag of the scheme
        except SchemeError as e:
            head, sep, reason = str(e).partition(": ")
            raise SchemeError(f"item {i} of the tag list: "
                              f"{reason if head == 'position 0' else e}") from None
    return tags


def tag_types(tags: Sequence[str]) -> tuple[str, ...]:
    """The chunk types ``tags`` use, sorted; ``("",)`` when untyped or all ``O``.
    SchemeError for a list that mixes untyped (``B``) and typed (``B-NP``) chunk tags."""
    tags = list(tags)
    untyped = [t for t in tags if t != enc.OUTSIDE and not enc.tag_type(t)]
    typed = [t for t in tags if t != enc.OUTSIDE and enc.tag_type(t)]
    if untyped and typed:
        raise SchemeError(f"the tags mix untyped chunk tags ({', '.join(untyped[:3])}) with "
                          f"typed ones ({', '.join(typed[:3])}): give every chunk tag a "
                          f"type, or none")
    return normalize_types(enc.chunk_types(tags))


def missing_tags(tags: Sequence[str], scheme: str) -> tuple[str, ...]:
    """The tags ``scheme`` defines for the chunk types ``tags`` use that ``tags`` lack
    (``enc.scheme_tags(scheme, [type])`` minus ``O``, type by type); ``O`` itself may
    be absent (a tagger that puts every token in a chunk)."""
    have = set(tags)
    if all(t == enc.OUTSIDE for t in have):
        return ()
    return tuple(t for t in enc.scheme_tags(scheme, tag_types(tags))
                 if t != enc.OUTSIDE and t not in have)


def check_expresses(tags: Sequence[str], scheme: str) -> None:
    """SchemeError unless ``tags`` express ``scheme``: every tag of the scheme for each
    chunk type they use is among them.  Without, say, ``E-NP`` and ``S-NP`` the only
    valid IOBES sequences over ``O, B-NP, I-NP`` are all ``O``: a lattice over such a
    list would silently decode nothing but ``O``."""
    missing = missing_tags(tags, scheme)
    if missing:
        prefixes = ", ".join(enc.scheme_prefixes(scheme))
        who = "untyped chunks need" if tag_types(tags) == ("",) else "every chunk type needs"
        raise SchemeError(f"tags {', '.join(tags)} cannot express {scheme}: missing "
                          f"{', '.join(missing)} ({who} all of {prefixes})")


class TagSpace:
    """The tags of a scheme in a fixed column order, compiled (see module doc).

    >>> ts = TagSpace.of(("O", "B-NP", "I-NP"), "IOB2")
    >>> ts.trans_ok[0, 2]            # O -> I-NP
    False
    """

    def __init__(self, tags: Sequence[str], scheme: str | None):
        self.scheme = canonical(scheme)
        if self.scheme == UNCONSTRAINED:
            self.tags = check_labels(tags)
            self.types: tuple[str, ...] = ()
            self.symbols = label_table(self.tags)
        else:
            self.tags = check_tags(tags, self.scheme)
            check_expresses(self.tags, self.scheme)
            self.types = tag_types(self.tags)
            self.symbols = symbol_table(self.types)
        self._index = {t: i for i, t in enumerate(self.tags)}
        self.labels = tuple(self.symbols.find(t) for t in self.tags)
        self._compile()

    @property
    def chunked(self) -> bool:
        """Whether the tags are a chunk scheme's (not the unconstrained chain)."""
        return self.scheme != UNCONSTRAINED

    def require_chunks(self, what: str) -> None:
        """SchemeError naming ``what`` unless :attr:`chunked`: chunks, expected F and MEU
        have no meaning over the labels of an unconstrained chain."""
        if not self.chunked:
            raise SchemeError(f"{what} needs chunk tags of a scheme (IOB2, IOBES, ...); "
                              f"this is an unconstrained chain over the labels "
                              f"{', '.join(self.tags[:8])}{' ...' if len(self.tags) > 8 else ''}"
                              f" (scheme=None): use MAP or posterior decoding and token "
                              f"marginals, or give the chunk scheme of chunk tags")

    @classmethod
    def of(cls, tags: tuple[str, ...], scheme: str | None) -> "TagSpace":
        """The (cached) tag space of ``tags`` in ``scheme`` (None: unconstrained)."""
        return _space(tuple(tag_list(tags, "the tag list")), canonical(scheme))

    def _compile(self) -> None:
        tags, s, L = self.tags, self.scheme, len(self.tags)
        if s == UNCONSTRAINED:
            self.start_ok, self.end_ok = np.ones(L, bool), np.ones(L, bool)
            self.trans_ok = np.ones((L, L), bool)
            self.type_index = np.full(L, -1)
            self.cont = np.zeros((L + 1, L), bool)
            self.opens = np.zeros((L + 1, L), bool)
            self.closes = np.zeros((L + 1, L), bool)
            for a in (self.start_ok, self.trans_ok, self.end_ok, self.type_index, self.cont,
                      self.opens, self.closes):
                a.setflags(write=False)
            return
        self.start_ok = np.array([enc.allowed(s, None, t) for t in tags])
        self.trans_ok = np.array([[enc.allowed(s, p, c) for c in tags] for p in tags])
        self.end_ok = np.array([enc.allowed(s, t, None) for t in tags])
        self.type_index = np.array([-1 if t == enc.OUTSIDE else
                                    self.types.index(enc.split_tag(t)[1]) for t in tags])
        inchunk = self.type_index >= 0
        cont = np.zeros((L + 1, L), bool)
        for a in range(L):
            for b in range(L):
                cont[a, b] = enc.continues(s, tags[a], tags[b])
        self.cont = cont
        self.opens = inchunk[None, :] & ~cont
        closes = np.zeros((L + 1, L), bool)
        closes[:L] = inchunk[:, None] & ~cont[:L]
        self.closes = closes
        for a in (self.start_ok, self.trans_ok, self.end_ok, self.type_index, self.cont,
                  self.opens, self.closes):
            a.setflags(write=False)

    def __len__(self) -> int:
        return len(self.tags)

    def __repr__(self) -> str:
        return f"TagSpace({list(self.tags)!r}, {self.scheme!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, TagSpace) and (self.tags, self.scheme) == (other.tags,
                                                                           other.scheme)

    def __hash__(self) -> int:
        return hash((self.tags, self.scheme))

    def index(self, tag: str, where: str = "") -> int:
        """Column of ``tag`` in :attr:`tags`; SchemeError naming it if unknown."""
        try:
            return self._index[tag]
        except (KeyError, TypeError):
            at = f"{where}: " if where else ""
            raise SchemeError(
                f"{at}tag {tag!r} is not among the tags {', '.join(self.tags)} "
                f"({self.scheme} over types {','.join(self.types) or '(untyped)'})") from None

    def indices(self, tags: Sequence[str]) -> list[int]:
        return [self.index(t, f"position {i}") for i, t in enumerate(tags)]

    def label(self, tag: str) -> int:
        """The tag's label in the shared symbol table."""
        return self.labels[self.index(tag)]


@functools.lru_cache(maxsize=512)
def _space(tags: tuple[str, ...], scheme: str) -> TagSpace:
    return TagSpace(tags, scheme)


class TagSet(TagSpace):
    """Every tag of ``scheme`` over chunk ``types``, in the scheme's order, with the
    scheme's validity as arrays (which tag may start, follow, end): the tag space a
    model over those types predicts in.  :meth:`from_tags` reads the types off data.

    Args:
        scheme: a name of :data:`fstchunk.SCHEMES` (or an alias: ``BIO``, ``BIOES``).
        types: the chunk types, sorted (one string is one type; ``None``: untyped
            chunks, tags ``B``, ``I``, ...).

    Raises:
        SchemeError: an unknown scheme, naming the known ones.
        InputError: a type that cannot be used (white space, ``,``).

    Examples:
        >>> import fstchunk
        >>> fstchunk.TagSet("IOB2", ["NP"]).tags
        ('O', 'B-NP', 'I-NP')
        >>> fstchunk.TagSet("BIOES", ["PER", "LOC"]).tags
        ('O', 'B-LOC', 'I-LOC', 'E-LOC', 'S-LOC', 'B-PER', 'I-PER', 'E-PER', 'S-PER')
        >>> fstchunk.TagSet.from_tags(["B-NP", "O", "B-VP"], "IOB2")
        TagSet('IOB2', ['NP', 'VP'])
    """

    def __init__(self, scheme: str, types: Sequence[str] | str | None = None):
        scheme = enc.canonical_scheme(scheme)
        super().__init__(enc.scheme_tags(scheme, normalize_types(types)), scheme)

    @classmethod
    def from_tags(cls, tags, scheme: str) -> "TagSet":
        """The tag set of ``scheme`` over the chunk types that ``tags`` use."""
        return cls(scheme, tag_types(tag_list(tags)))

    def __repr__(self) -> str:
        return f"TagSet({self.scheme!r}, {list(self.types)!r})"
