"""Many lattices at once: the batched engine's front door.

:func:`apply` runs a batched computation over a list of lattices: the dense chains
(score-array lattices, :meth:`fstchunk.structures.lattice.Lattice.from_scores`, with or without a
tag mask) are grouped by model (tags, scheme and the same transition, start and end
arrays), cut into ragged batches of nearby lengths (:mod:`fstchunk.engine.ragged`)
and handed to ``batched(batch)``, which returns one result per sentence of the
batch; every other lattice (from a machine: :meth:`~fstchunk.structures.lattice.Lattice.from_fst`,
the joint model's chunk layer) goes to ``single(i)``, ``i`` its position.  Results come back in
the lattices' order.

Errors are each sentence's own: a batch that raises a sentence-level error
(:data:`SENTENCE_ERRORS`) is run again one sentence at a time (each a batch of
one), so that with ``errors="return"`` a failing sentence holds its exception and
the others their results; ``errors="raise"`` raises the first.

Also the batch-level decisions the decoders of :mod:`fstchunk.decoding.decoders` run:
:func:`meu_decisions` (exact MEU: the MAP certificate, the batched search, the
per-sentence search for long sentences) and :func:`kbest_decisions`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core.errors import FstchunkError, InputError
from ..engine import inference, meu_batch
from ..engine.meu import MEUResult, exact_meu, map_certified, refuse_unwritable_empty
from ..engine.meu_batch import table_bytes
from ..engine.ragged import RaggedBatch, ragged_batches
from ..schemes import encodings as enc
from .lattice import Decoding, Lattice

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


# ------------------------------------------------------------ MEU over a batch
#: sentences up to this length are decided by the batched exact MEU
#: (:mod:`fstchunk.engine.meu_batch`, dense span tables); longer ones, one at a time,
#: by the pruned search (:func:`fstchunk.engine.meu.exact_meu`)
DENSE_MAX_N = 100


def meu_decisions(batch: RaggedBatch, w: float, value: bool = True,
                  memory_budget: float | None = None) -> list[Decoding]:
    """Exact MEU (w = β²) of every sentence of the batch: MAP and log Z at once; a
    sentence whose MAP chunking the certificate proves optimal
    (:func:`fstchunk.engine.meu.map_certified`) is decided; the others together on
    the batched search (:func:`fstchunk.engine.meu_batch.decide`, U(MAP) its lower
    bound), or, longer than :data:`DENSE_MAX_N` tokens or over the memory budget,
    each on the pruned per-sentence search (:func:`fstchunk.engine.meu.exact_meu`).
    ``value``: the certified decisions' E[F_β] computed exactly (else NaN)."""
    paths, best = inference.viterbi(batch)
    no_path(best)
    ops = inference.transfer_of(batch)
    sp = batch.space
    types, lens = sp.types, batch.lengths
    chunks = [[(types.index(t), s, e) for t, s, e in enc.tags_to_chunks(tags, sp.scheme)]
              for tags in tag_lists(paths, batch)]
    if w == 0:                       # F_0 = precision: the empty set, F = 0/0 := 1
        refuse_unwritable_empty(sp, w)
        return [Decoding(enc.chunks_to_tags([], int(n), sp.scheme), 1.0, 0.0) for n in lens]
    # p* = exp(best − log Z) ≤ 1; at score scales near 1e150 the two round apart by more
    # than exp's range, so the exponent is capped at its true bound 0
    ok = map_certified(np.exp(np.minimum(best - ops.logz, 0.0)), [len(c) for c in chunks], w)
    out: list = [None] * batch.B
    results: dict = {}
    lats = of_batch(batch) if not ok.all() else None
    dense = [b for b in np.flatnonzero(~ok) if lens[b] <= DENSE_MAX_N and
             (memory_budget is None or table_bytes(int(lens[b]), 40, len(types)) <= memory_budget)]
    values = np.full(batch.B, np.nan)        # E[F_β] of the certified MAP chunkings
    if value and ok.any():
        fixed = [chunks[b] if ok[b] else [] for b in range(batch.B)]
        got = inference.expected_f_batch(ops, batch, fixed, w)
        values[ok] = np.array([r.f for r in got])[ok]
    for b in np.flatnonzero(ok):
        results[b] = MEUResult(chunks[b], float(values[b]), 0.0, 0, 0)
    for b in np.flatnonzero(~ok):
        if b not in dense:
            results[b] = exact_meu(lats[b], w, chunks[b], memory_budget=memory_budget)
    if dense:
        sub = batch.take(dense)
        sub_ops = inference.transfer_of(sub)
        sub_chunks = [chunks[b] for b in dense]      # U(MAP): the search's lower bound
        lower = [r.f for r in inference.expected_f_batch(sub_ops, sub, sub_chunks, w)]
        got = meu_batch.decide(sub_ops, sub, w, sub_chunks, np.array(lower))
        results.update(zip(dense, got))
    for b, res in results.items():
        out[b] = Decoding(enc.chunks_to_tags([(types[t], s, e) for t, s, e in res.chunks],
                                             int(lens[b]), sp.scheme), res.value, res.gap)
    return out


def kbest_decisions(batch: RaggedBatch, w: float, k: int) -> list[Decoding]:
    """k-best MEU (w = β²): the k best paths of every sentence at once
    (:func:`fstchunk.engine.inference.kbest`, float64), each path's exact E[F_β] over
    the batch (its sentence repeated per path), the first best kept; no certificate."""
    paths, scores = inference.kbest(batch, k)
    no_path(scores[:, 0])
    sp, lens = batch.space, batch.lengths
    owner, hyps, fixed = [], [], []
    for b, n in enumerate(lens):
        for j in np.flatnonzero(np.isfinite(scores[b])):
            tags = [sp.tags[t] for t in paths[b, j, :n]]
            owner.append(b)
            hyps.append(tags)
            fixed.append([(sp.types.index(t), s, e)
                          for t, s, e in enc.tags_to_chunks(tags, sp.scheme)])
    rep = batch.take(owner)
    us = inference.expected_f_batch(inference.transfer_of(rep), rep, fixed, w)
    out: list = [None] * batch.B
    for b, tags, u in zip(owner, hyps, us):
        if out[b] is None or u.f > out[b].score:
            out[b] = Decoding(tags, u.f, float("inf"))
    return out


def no_path(best: np.ndarray) -> None:
    """InputError unless every sentence of a batch has a valid path (finite best)."""
    if not np.all(np.isfinite(best)):
        raise InputError("the lattice gives no weight to any valid sequence")
