"""Partial annotation: what a tag column allows when annotators left things open.

With ``--partial`` (``fstchunk train``, ``fstchunk select``) and in
:func:`read_partial`, each cell of the tag column is a set of tags, not one tag:

* ``B-PER`` — that tag (under a declaration, below, an ``O`` means less);
* ``?`` — any tag;
* ``B-PER|I-PER|O`` — any of the items, each a tag or a wildcard:
  ``*-PER`` (any tag of type PER in the scheme), ``B-*`` (prefix B of any type:
  a known span of unknown type is ``B-* I-* I-*``), ``*-*`` (inside some chunk);
* ``O!`` — outside every chunk, even under a declaration;
* a trailing ``~`` (``?~ ?~``, ``B-*~ I-*~``): the tokens of a run of ``~`` cells are
  not exactly one chunk, of any type (a dictionary match the annotator rejected);
  each cell still allows what it says without the ``~``.  Two adjacent runs are one
  run.  A ``~`` inside a cell (``B-PER~|O``) is refused, not read as a type ``PER~``.  A scheme whose chunk boundaries show on one tag is needed (IOB2, IOE2, IOBES,
  BILOU, IOBES2, IOBES3: :func:`fstchunk.io.not_chunk.chunk_conditions`); IOB1 and IOE1
  are refused.

A comment line ``# annotated: PER,LOC`` (any spacing: ``#annotated:PER,LOC`` too)
before a sentence declares the chunk types
annotated in the sentences that follow (until the next declaration, ``# annotated:
*``, which declares every type again, or a ``-DOCSTART-`` line): there an ``O``
means "not a chunk of an annotated type", i.e. ``O`` or any tag of another type
(corpora merged from sources that each annotate some types).  Declaration lines are
read only by :func:`read_partial`; the plain CoNLL readers and conlleval never see
them, since only ``--partial`` reads them (elsewhere a ``#`` line is a token line).

The annotation of a sentence is the acceptor A(x) = Π_i allowed_i over the tag
alphabet (:mod:`fstchunk.grammars.annotation`); training maximises
log Σ_{y ∈ A(x) ∩ valid} p(y | x) (:mod:`fstchunk.models.partial`).  Its fast form is
a boolean mask (n, L) over a tag space's columns (:meth:`PartialSentence.mask`),
which :meth:`fstchunk.structures.lattice.Lattice.constrained` lays over a lattice's states.  A
``~`` span s removes C_s, the sequences where it is exactly one chunk: the machine is
A minus C_s's chain (:func:`fstchunk.grammars.annotation.annotation_acceptor`); the
fast form splits A ∖ ∪_s C_s into disjoint product masks
(:func:`fstchunk.io.not_chunk.exclusion_terms`: the first of C_s's conditions that
fails), whose partition functions add — positive terms, stable where
log(Z_A − Z_{A∩C}) would cancel (:meth:`PartialSentence.terms`).

Pitfalls: sets are read in the model's scheme — a file in another data scheme
converts only its fully annotated sentences (:func:`tags_or_none`); an annotation
that allows no valid sequence of the scheme is one SchemeError naming the file:line
of the token where the valid prefixes run out (:func:`check_allows`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from ..schemes import encodings as enc
from .conll import DOCSTART, BLANKS, Sentence, iter_conll, iter_lines, source_name
from ..core.errors import InputError, SchemeError
from .not_chunk import NOT_CHUNK, exclusion_terms, marked, runs
from ..schemes.tagspace import UNCONSTRAINED, TagSpace, normalize_types

ANY, WILD, STRICT_O = "?", "*", "O!"
#: the comment that declares the annotated chunk types of the sentences after it
DECLARATION = "# annotated:"
#: how it is recognised: any spacing around ``annotated`` (``#annotated:PER`` too)
_DECLARED = re.compile(r"#[ \t]*annotated[ \t]*:(.*)$")

#: one item of a cell: ("tag", tag), ("O", ""), ("O!", ""), ("any", ""),
#: ("prefix", P) for P-*, ("type", T) for *-T, ("chunk", "") for *-*
Item = tuple[str, str]


def parse_cell(cell: str, scheme: str, where: str = "") -> tuple[Item, ...]:
    """The items of one tag-column cell (module doc); SchemeError naming ``where`` for
    an empty item, an unknown prefix or a type the scheme cannot use.  Under
    :data:`~fstchunk.schemes.tagspace.UNCONSTRAINED` (labels, not chunk tags) an item is ``?``
    or a label; a wildcard or ``O!`` is refused."""
    at = f"{where}: " if where else ""
    chain = scheme == UNCONSTRAINED
    prefixes = () if chain else enc.scheme_prefixes(scheme)
    items = []
    for raw in cell.split("|"):
        if not raw:
            raise SchemeError(f"{at}annotation {cell!r} has an empty item (items are "
                              f"separated by '|')")
        if raw == ANY:
            items.append(("any", ""))
        elif chain:
            if WILD in raw or raw == STRICT_O:
                raise SchemeError(f"{at}annotation item {raw!r} needs a chunk scheme; the "
                                  f"labels are read as an unconstrained chain (only ? and "
                                  f"sets of labels)")
            items.append(("tag", raw))
        elif raw == enc.OUTSIDE:
            items.append(("O", ""))
        elif raw == STRICT_O:
            items.append(("O!", ""))
        elif NOT_CHUNK in raw:          # a mark inside: not a type named 'PER~'
            raise SchemeError(f"{at}annotation item {raw!r}: the not-one-chunk mark "
                              f"{NOT_CHUNK!r} ends a whole cell ('B-PER|O{NOT_CHUNK}', "
                              f"'?{NOT_CHUNK}'), not an item or a chunk type")
        else:
            prefix, sep, ctype = raw.partition("-")
            if prefix not in prefixes and prefix != WILD:
                raise SchemeError(f"{at}annotation item {raw!r}: {prefix!r} is not a prefix "
                                  f"of {scheme} ({', '.join(prefixes)}), nor {WILD}, and "
                                  f"{raw!r} is not O, O! or ?")
            if sep and ctype != WILD:
                problem = enc.type_problem(ctype)
                if problem:
                    raise SchemeError(f"{at}annotation item {raw!r}: chunk type {ctype!r} "
                                      f"{problem}")
            if prefix == WILD:
                items.append(("chunk", "") if ctype in (WILD, "") else ("type", ctype))
            elif ctype == WILD:
                items.append(("prefix", prefix))
            else:
                items.append(("tag", raw))
    return tuple(items)


def item_types(items: Sequence[Item]) -> set[str]:
    """The chunk types an annotation names (``type`` and exact chunk tags)."""
    out = set()
    for kind, v in items:
        if kind == "type":
            out.add(v)
        elif kind == "tag" and v != enc.OUTSIDE:
            t = enc.split_tag(v)[1]
            if t:
                out.add(t)
    return out


def allows(items: Sequence[Item], tag: str, declared: frozenset[str] | None) -> bool:
    """Whether a cell's items allow ``tag`` (``declared``: the annotated types, None
    for all)."""
    prefix, ctype = (enc.OUTSIDE, "") if tag == enc.OUTSIDE else enc.split_tag(tag)
    for kind, v in items:
        if kind == "any" or (kind == "tag" and v == tag):
            return True
        if kind in ("O", "O!") and tag == enc.OUTSIDE:
            return True
        if kind == "O" and declared is not None and tag != enc.OUTSIDE \
                and ctype not in declared:
            return True
        if tag != enc.OUTSIDE and ((kind == "prefix" and v == prefix) or kind == "chunk"
                                   or (kind == "type" and v == ctype)):
            return True
    return False


@dataclass
class PartialSentence:
    """A sentence with its partial annotation: the parsed cells of its tag column and
    the declared annotated types (None: every type)."""
    sentence: Sentence
    cells: list[tuple[Item, ...]]
    declared: frozenset[str] | None = None
    #: the spans (first, last token) marked not one chunk (``~``)
    not_chunks: tuple[tuple[int, int], ...] = ()

    def __len__(self) -> int:
        return len(self.cells)

    @property
    def types(self) -> set[str]:
        """The chunk types the annotation names or declares."""
        out = set(self.declared or ())
        for c in self.cells:
            out |= item_types(c)
        return out

    def mask(self, space: TagSpace) -> np.ndarray:
        """allowed[i, l]: whether token i may take ``space.tags[l]``, shape (n, L)."""
        return np.array([[allows(c, t, self.declared) for t in space.tags]
                         for c in self.cells], dtype=bool)

    def terms(self, space: TagSpace, mask: np.ndarray | None = None) -> list[np.ndarray]:
        """The annotation over ``space`` as disjoint product masks
        (:func:`.not_chunk.exclusion_terms`; one, the mask, without a ``~`` span)."""
        m = self.mask(space) if mask is None else mask
        return exclusion_terms(m, self.not_chunks, space, self.sentence.where)

    def allowed(self, space: TagSpace) -> list[frozenset[str]]:
        """The allowed tags of each token (the Python API's reading of the column)."""
        return [frozenset(t for t, ok in zip(space.tags, row) if ok)
                for row in self.mask(space)]

    @property
    def full(self) -> bool:
        """Whether every cell is one exact tag (an ``O`` only where every type is
        declared, no span marked ``~``): the annotation is one sequence."""
        return not self.not_chunks and all(len(c) == 1 and (c[0][0] == "tag" or c[0][0] == "O!" or
                                    (c[0][0] == "O" and self.declared is None))
                   for c in self.cells)

    def tags_or_none(self) -> list[str] | None:
        """The one tag sequence of a full annotation (:attr:`full`), else None."""
        if not self.full:
            return None
        return [enc.OUTSIDE if c[0][0] in ("O", "O!") else c[0][1] for c in self.cells]


def check_allows(ps: PartialSentence, space: TagSpace, mask: np.ndarray | None = None
                 ) -> np.ndarray:
    """The mask of ``ps`` over ``space``, checked: some valid sequence of the scheme
    passes it.  Otherwise one SchemeError naming the file:line of the first token
    at which no valid prefix survives (or the last token, when no valid prefix can
    end there), with what the token allows."""
    m = ps.mask(space) if mask is None else mask
    return check_mask(m, space, ps.sentence.where, ps.declared)


def check_mask(m: np.ndarray, space: TagSpace, where: Callable[[int], str],
               declared: frozenset[str] | None = None) -> np.ndarray:
    """:func:`check_allows` of a mask (n, L); ``where(i)`` names token i in the error
    (``file:line``, ``y[k][i]``)."""
    reach = space.start_ok & m[0]
    for i in range(len(m)):
        if i:
            reach = (reach @ space.trans_ok) & m[i]
        end = i == len(m) - 1 and not (reach & space.end_ok).any()
        if not reach.any() or end:
            shown = ", ".join(t for t, ok in zip(space.tags, m[i]) if ok) or "no tag"
            what = ("no valid sequence ends here" if reach.any() else
                    "no valid sequence reaches this token")
            raise SchemeError(f"{where(i)}: the annotation contradicts "
                              f"{space.scheme}: {what} (the token allows {shown}"
                              + (f"; declared types {','.join(sorted(declared))}"
                                 if declared is not None else "") + ")", i)
    return m


class _Declarations:
    """A line stream with the declaration lines blanked (so they separate sentences and
    keep every line number), remembering each declaration and document start."""

    def read(self):                      # a stream to iter_lines: it iterates over us
        raise NotImplementedError

    def __init__(self, path_or_file):
        self.name = source_name(path_or_file)
        self.source = path_or_file
        self.marks: list[tuple[int, frozenset[str] | None]] = []

    def __iter__(self) -> Iterator[str]:
        for lineno, text in iter_lines(self.source):
            line = text.strip(BLANKS)
            declared = _DECLARED.match(line)
            if declared:
                spec = declared.group(1).strip()
                if spec == WILD:
                    self.marks.append((lineno, None))
                else:
                    try:
                        types = normalize_types(spec)
                    except InputError as e:
                        raise InputError(f"{self.name}:{lineno}: {e}") from None
                    if types == ("",):
                        raise InputError(f"{self.name}:{lineno}: {DECLARATION} names no "
                                         f"chunk type (e.g. '{DECLARATION} PER,LOC', or "
                                         f"'{DECLARATION} *' for all)")
                    self.marks.append((lineno, frozenset(types)))
                yield "\n"
                continue
            if line.split(None, 1)[:1] == [DOCSTART]:
                self.marks.append((lineno, None))
            yield text

    def declared(self, line: int) -> frozenset[str] | None:
        found = None
        for at, types in self.marks:
            if at >= line:
                break
            found = types
        return found


def read_partial(path_or_file, column: int | None = -1, scheme: str = "IOB2"
                 ) -> list[PartialSentence]:
    """The sentences of a CoNLL file with their partial annotations (module doc) in
    tag ``column``, read in ``scheme``; errors name file:line."""
    scheme = enc.canonical_scheme(scheme)
    lines = _Declarations(path_or_file)
    out = []
    for s in iter_conll(lines, min_columns=1):
        width = len(s.rows[0])
        if column is None or not -width <= column < width:
            raise InputError(f"{s.where(0)}: no tag column {'' if column is None else column}"
                             f" (the line has {width} columns); --partial reads annotations "
                             f"from the tag column")
        cells, spans = parse_column(s.column(column), scheme, s.where)
        out.append(PartialSentence(s, cells, lines.declared(s.lines[0]), spans))
    return out


def annotation_types(sentences: Sequence[PartialSentence]) -> tuple[str, ...]:
    """The chunk types named or declared anywhere (sorted; ``("",)`` for untyped chunk
    tags such as ``B``); InputError if none is named."""
    types: set[str] = set()
    untyped = False
    for ps in sentences:
        types |= ps.types
        untyped = untyped or any(k == "tag" and v != enc.OUTSIDE and not enc.split_tag(v)[1]
                                 for c in ps.cells for k, v in c)
    if untyped and types:
        raise SchemeError(f"{sentences[0].sentence.source}: the annotation mixes untyped "
                          f"chunk tags with typed ones ({', '.join(sorted(types)[:3])})")
    if untyped:
        return ("",)
    if not types:
        src = sentences[0].sentence.source if sentences else "<no sentences>"
        raise InputError(f"{src}: the annotation names no chunk type (only ?, O and "
                         f"wildcards): declare the types ('{DECLARATION} PER,LOC') or "
                         f"annotate some chunks")
    return tuple(sorted(types))


def cell_types(cells: Sequence[str], scheme: str) -> tuple[str, ...]:
    """The chunk types that annotation ``cells`` name (``grammar --gold``'s default)."""
    out: set[str] = set()
    items, _ = parse_column(cells, enc.canonical_scheme(scheme),
                            lambda i: f"--gold token {i + 1}")
    for c in items:
        out |= item_types(c)
    return tuple(sorted(out))


def parse_column(cells: Sequence[str], scheme: str, where: Callable[[int], str]
                 ) -> tuple[list[tuple[Item, ...]], tuple[tuple[int, int], ...]]:
    """The items of a sentence's cells (:func:`parse_cell`, a trailing ``~`` taken
    off) and the spans (first, last) of the maximal runs of ``~`` cells."""
    marks = [marked(c) for c in cells]
    items = [parse_cell(c[:-1] if m else c, scheme, where(i))
             for i, (c, m) in enumerate(zip(cells, marks))]
    return items, runs(marks)
