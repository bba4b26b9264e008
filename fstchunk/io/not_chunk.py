"""Spans marked "not one chunk" in a partial annotation (a run of cells ending in ``~``,
:mod:`fstchunk.io.annotation`): the chunk they rule out as per-token tests, and the
annotation minus those chunks as disjoint product masks.

With C_s the valid sequences in which span s = (t, u) is exactly one chunk (of any
type), the annotation allows A ∖ ∪_s C_s.  Where a chunk boundary shows on one tag
(IOB2, IOBES, BILOU, IOBES2, IOBES3: on the token that opens or continues; IOE2: on
the token before, which closes or does not), C_s is a conjunction of tests of one
token each, c_1 ∧ … ∧ c_m (:func:`chunk_conditions`), so

    A ∖ C_s = ⊔_j (A ∩ c_1 ∩ … ∩ c_{j−1} ∩ ¬c_j),

a disjoint union of product masks; the spans' unions multiply out
(:func:`exclusion_terms`).  Z of the annotation is the sum of the terms' partition
functions: positive terms, exact where log(Z_A − Z_{A∩C}) would cancel (a model sure
of the chunk the annotator rejected).  The machine twin subtracts C_s's chain from
the annotation acceptor (:func:`fstchunk.grammars.annotation.annotation_acceptor`).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..core.errors import InputError, SchemeError
from ..schemes.tagspace import TagSpace

#: the mark after a cell of a span that is not one chunk (``?~ ?~``)
NOT_CHUNK = "~"
#: the most product masks one sentence's not-a-chunk spans may split into
MAX_TERMS = 4096


def marked(cell: object) -> bool:
    """Whether a cell ends in the not-a-chunk mark ``~`` (and holds more)."""
    return isinstance(cell, str) and len(cell) > 1 and cell.endswith(NOT_CHUNK)


def runs(flags: Sequence[bool]) -> tuple[tuple[int, int], ...]:
    """The (first, last) indices of the maximal runs of true ``flags``."""
    out, start = [], None
    for i, f in enumerate(list(flags) + [False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            out.append((start, i - 1))
            start = None
    return tuple(out)


def chunk_conditions(space: TagSpace, n: int, t: int, u: int
                     ) -> list[tuple[int, np.ndarray]]:
    """(token, allowed tags) pairs whose conjunction, on valid sequences of n tokens,
    says "tokens t..u are exactly one chunk": a chunk starts at t, every token of
    t+1..u continues it, and u+1 does not.  Where a boundary shows on one tag — on
    the token that opens or continues (IOB2, IOBES, BILOU) or on the token before,
    which closes or does not (IOE2) — each is a test of one token; SchemeError for a
    scheme whose boundaries need two tags (IOB1, IOE1)."""
    sp = space
    sp.require_chunks(f"a span marked not a chunk ({NOT_CHUNK})")
    L = len(sp.tags)
    inside = sp.type_index >= 0
    valid_in = np.vstack([sp.trans_ok, sp.start_ok[None, :]])       # (L+1, L): p -> c
    cont_any = (sp.cont & valid_in).any(axis=0)
    cont_all = np.where(valid_in, sp.cont, True).all(axis=0) & valid_in.any(axis=0)
    succ = sp.trans_ok
    close_all = ~(sp.cont[:L] & succ).any(axis=1)
    close_none = np.where(succ, sp.cont[:L], True).all(axis=1) & ~sp.end_ok & inside
    if ((cont_all | ~cont_any) | ~valid_in.any(axis=0)).all():         # start-marked
        out = [(t, inside & ~cont_any)]
        out += [(i, cont_all) for i in range(t + 1, u + 1)]
        return out + ([(u + 1, ~cont_any)] if u + 1 < n else [])
    if (close_all | close_none).all():                                  # end-marked
        out = [(t, inside)] + ([(t - 1, close_all)] if t > 0 else [])
        out += [(i - 1, close_none) for i in range(t + 1, u + 1)]
        return out + ([(u, close_all)] if u + 1 < n else [])
    raise SchemeError(f"a span marked not a chunk ({NOT_CHUNK}) needs a scheme whose chunk "
                      f"boundaries show on one tag (IOB2, IOE2, IOBES, BILOU, IOBES2, IOBES3; "
                      f"not IOB1, IOE1); "
                      f"{sp.scheme} is not one")


def feasible(m: np.ndarray, space: TagSpace) -> bool:
    """Whether some valid sequence passes mask ``m`` (n, L)."""
    reach = space.start_ok & m[0]
    for i in range(1, len(m)):
        reach = (reach @ space.trans_ok) & m[i]
    return bool((reach & space.end_ok).any())


def exclusion_terms(mask: np.ndarray, spans: Sequence[tuple[int, int]], space: TagSpace,
                    where: Callable[[int], str]) -> list[np.ndarray]:
    """A ∖ (C_1 ∪ … ∪ C_k) as a disjoint union of product masks, C_s the sequences
    where span s is exactly one chunk: with C_s = ∩_j c_j (:func:`chunk_conditions`),
    A ∖ C_s = ⊔_j (c_1 … c_{j−1} hold, c_j fails), and the spans' unions multiply
    out.  Masks no valid sequence passes are dropped; none left is one SchemeError
    naming the span's first token."""
    terms = [np.asarray(mask, dtype=bool)]
    for t, u in spans:
        try:
            conds = chunk_conditions(space, len(mask), t, u)
        except SchemeError as e:
            raise SchemeError(f"{where(t)}: {e}", t) from None
        new = []
        for m in terms:
            held = m.copy()
            for tok, row in conds:
                fail = held.copy()
                fail[tok] &= ~row
                if fail[tok].any() and feasible(fail, space):
                    new.append(fail)
                held[tok] &= row
        if not new:
            raise SchemeError(f"{where(t)}: the annotation contradicts {space.scheme}: tokens "
                              f"{t + 1}..{u + 1} are marked not one chunk ({NOT_CHUNK}), but "
                              f"the rest of the annotation makes them one", t)
        if len(new) > MAX_TERMS:
            raise InputError(f"{where(t)}: the {NOT_CHUNK} spans of this sentence split its "
                             f"annotation into more than {MAX_TERMS} product masks; mark "
                             f"fewer or shorter spans")
        terms = new
    return terms
