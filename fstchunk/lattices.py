"""Many lattices at once: the batched engine's front door.

:func:`apply` runs a batched computation over a list of lattices: the dense chains
(score-array lattices, :meth:`fstchunk.lattice.Lattice.from_scores`, with or without a
tag mask) are grouped by model (tags, scheme and the same transition, start and end
arrays), cut into ragged batches of nearby lengths (:mod:`fstchunk.engine.ragged`)
and handed to ``batched(batch)``, which returns one result per sentence of the
batch; every other lattice (from a machine: :meth:`~fstchunk.lattice.Lattice.from_fst`,
the joint model's chunk layer) goes to ``single(i)``, ``i`` its position.  Results come back in
the lattices' order.

Errors are each sentence's own: a batch that raises a sentence-level error
(:data:`SENTENCE_ERRORS`) is run again one sentence at a time (each a batch of
one), so that with ``errors="return"`` a failing sentence holds its exception and
the others their results; ``errors="raise"`` raises the first.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .engine.ragged import RaggedBatch, ragged_batches
from .errors import FstchunkError
from .lattice import Lattice

#: errors that belong to one sentence (its scores, its budget), not to the run
SENTENCE_ERRORS = (FstchunkError, MemoryError)


def groups(lattices: Sequence[Lattice]) -> tuple[list[list[int]], list[int]]:
    """(groups of dense-chain lattices that share a model, the positions of the
    others): lattices of one model share their transition, start and end arrays
    (the same objects, or equal ones) and their tag space."""
    by_model: dict = {}
    others: list[int] = []
    for i, lat in enumerate(lattices):
        sc = lat.scores
        if sc is None:
            others.append(i)
            continue
        key = (lat.space, id(sc[1]), id(sc[2]), id(sc[3]))
        by_model.setdefault(key, []).append(i)
    # equal models given as distinct arrays (a score file's sentences) share a group
    merged: dict = {}
    for key, ids in by_model.items():
        sc = lattices[ids[0]].scores
        k2 = (key[0], sc[1].tobytes(), sc[2].tobytes(), sc[3].tobytes())
        merged.setdefault(k2, []).extend(ids)
    return [sorted(v) for v in merged.values()], others


def batches(lattices: Sequence[Lattice], ids: Sequence[int]) -> list[RaggedBatch]:
    """The ragged batches of the lattices ``ids`` (one model, :func:`groups`); each
    batch's ``index`` holds positions in ``lattices``."""
    first = lattices[ids[0]]
    space = first.space
    _, t, s, e = first.scores
    mt = np.where(space.trans_ok, t, -np.inf)
    ms = np.where(space.start_ok, s, -np.inf)
    me = np.where(space.end_ok, e, -np.inf)
    masks = [lattices[i].allowed for i in ids]
    return ragged_batches([lattices[i].scores[0] for i in ids], mt, ms, me, space, ids,
                          masks if any(m is not None for m in masks) else None)


def apply(lattices: Sequence[Lattice], batched: Callable[[RaggedBatch], Sequence[Any]],
          single: Callable[[int], Any], errors: str = "raise") -> list[Any]:
    """``batched`` over the ragged batches of the dense chains and ``single(i)`` over the
    other lattices (``i`` its position), one result per lattice in order (module doc); ``errors``:
    ``"raise"`` the first sentence error, or ``"return"`` it in the sentence's place."""
    if errors not in ("raise", "return"):
        raise ValueError(f"errors must be 'raise' or 'return', got {errors!r}")
    out: list[Any] = [None] * len(lattices)
    grouped, others = groups(lattices)
    for ids in grouped:
        for batch in batches(lattices, ids):
            try:
                got = batched(batch)
            except SENTENCE_ERRORS as e:
                if batch.B == 1:
                    got = [_failed(e, errors)]
                else:                       # one at a time: each sentence its own outcome
                    got = [_one(batched, lattices, int(i), errors) for i in batch.index]
            for i, r in zip(batch.index, got):
                out[int(i)] = r
    for i in others:
        try:
            out[i] = single(i)
        except SENTENCE_ERRORS as e:
            out[i] = _failed(e, errors)
    return out


def _one(batched, lattices, i: int, errors: str) -> Any:
    try:
        (got,) = batched(batches(lattices, [i])[0])
        return got
    except SENTENCE_ERRORS as e:
        return _failed(e, errors)


def _failed(e: BaseException, errors: str) -> BaseException:
    if errors == "raise":
        raise e
    return e.with_traceback(None)


def of_batch(batch: RaggedBatch) -> list[Lattice]:
    """The sentences of a ragged batch as lattices again (a per-sentence fallback)."""
    sp = batch.space
    out = []
    for b, n in enumerate(batch.lengths):
        em = batch.em[b, :n]
        allowed = None
        if batch.masked:
            allowed = em != -np.inf
            em = np.where(allowed, em, 0.0)
        out.append(Lattice(sp.tags, sp.scheme, scores=(em, batch.trans, batch.start, batch.end),
                           allowed=allowed))
    return out


def tag_lists(paths: np.ndarray, batch: RaggedBatch) -> list[list[str]]:
    """Each sentence's tag names from its row of tag indices ``paths`` (B, n)."""
    tags = batch.space.tags
    return [[tags[i] for i in paths[b, :n]] for b, n in enumerate(batch.lengths)]
