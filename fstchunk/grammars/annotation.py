"""Annotation acceptors: the tag sequences a partial annotation allows.

A partial annotation of n tokens (:mod:`fstchunk.io.annotation`: ``?``, tag sets
``B-PER|I-PER|O``, wildcards ``*-PER``, declared annotated types) allows at token i a
set of tags allowed_i; its acceptor is the product A = allowed_1 ⋯ allowed_n, a chain
of n + 1 states over the tag space's shared symbol table (:mod:`fstchunk.schemes.tagspace`),
so it composes with any lattice, validity acceptor or counter without relabelling.
Training on partial annotation maximises the mass of lattice ∘ A
(:meth:`fstchunk.structures.lattice.Lattice.constrained`, whose fast path masks the chain
engine's layers instead).

``fstchunk grammar print annotation --gold '?,B-PER|I-PER,O' --types PER,LOC`` shows
:func:`annotation_machine`: A ∩ validity of ``--scheme``, trimmed — what the
annotation allows in the scheme; an empty one is refused naming the token.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pynini

from . import fsa
from ..io.annotation import PartialSentence, check_allows, item_types, parse_column
from ..io.not_chunk import chunk_conditions
from ..io.conll import Sentence
from ..core.errors import InputError
from ..schemes.tagspace import TagSet, TagSpace
from .validity import validity_acceptor


def mask_acceptor(allowed: np.ndarray, space: TagSpace, arc_type: str = "log64"
                  ) -> pynini.Fst:
    """The chain acceptor of Π_i {tags[l] : allowed[i, l]} over ``space``'s labels
    (weights one); states 0..n, final n."""
    allowed = np.asarray(allowed, dtype=bool)
    fsa.check_arc_type(arc_type)
    f = pynini.Fst(arc_type)
    states = [f.add_state() for _ in range(len(allowed) + 1)]
    f.set_start(states[0])
    one = pynini.Weight.one(f.weight_type())
    for i, row in enumerate(allowed):
        for l in np.flatnonzero(row):
            lab = space.labels[l]
            f.add_arc(states[i], pynini.Arc(lab, lab, one, states[i + 1]))
    f.set_final(states[-1])
    return fsa.attach(f, space.symbols)


def annotation_machine(cells: Sequence[str], scheme: str, types: Sequence[str],
                       arc_type: str = "log64") -> pynini.Fst:
    """A ∩ validity for annotation ``cells`` (one string per token, the tag column's
    syntax) over every tag of ``scheme`` and ``types``; SchemeError naming the token
    when the annotation allows no valid sequence."""
    if not cells:
        raise InputError("grammar 'annotation' needs an annotation: --gold '?,B-PER|I-PER,O'")
    space = TagSet(scheme, types)
    sent = Sentence([[c] for c in cells], list(range(1, len(cells) + 1)), "--gold token")
    items, spans = parse_column(cells, space.scheme, lambda i: f"--gold token {i + 1}")
    for i, its in enumerate(items):                 # a type the tag set lacks, by name
        extra = sorted(item_types(its) - set(space.types))
        if extra:
            raise InputError(f"--gold token {i + 1}: chunk type {extra[0]!r} is not among "
                             f"the types ({', '.join(space.types) or 'untyped'}): add it "
                             f"to --types")
    ps = PartialSentence(sent, items, None, spans)
    mask = check_allows(ps, space)
    ps.terms(space, mask)                     # a contradiction: one error naming the span
    acc = annotation_acceptor(mask, ps.not_chunks, space, arc_type)
    valid = validity_acceptor(space.scheme, space.types, arc_type)
    out = pynini.compose(acc, valid.arcsort("ilabel")).connect()
    return fsa.attach(out, space.symbols)


def annotation_acceptor(mask: np.ndarray, not_chunks: Sequence[tuple[int, int]],
                        space: TagSpace, arc_type: str = "log64") -> pynini.Fst:
    """The acceptor of A ∖ (C_1 ∪ … ∪ C_k): the mask's chain minus, for each span
    (t, u) marked not one chunk, the chain C_s of
    :func:`fstchunk.io.not_chunk.chunk_conditions` (on valid sequences: t..u exactly one
    chunk) — OpenFst's difference with an unweighted deterministic chain; compose
    with validity."""
    acc = mask_acceptor(mask, space, arc_type)
    for t, u in not_chunks:
        chunk = np.ones_like(np.asarray(mask, dtype=bool))
        for tok, row in chunk_conditions(space, len(chunk), t, u):
            chunk[tok] &= row
        acc = pynini.difference(acc, mask_acceptor(chunk, space, arc_type)).connect()
    return fsa.attach(acc, space.symbols)
