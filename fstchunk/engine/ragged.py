"""Ragged batches of dense linear chains: the unit of the batched engine.

A *dense chain* has one state per tag: for a sentence of n tokens over L tags,

    score(y) = start[y_1] + Σ_i em[i, y_i] + Σ_i trans[y_{i−1}, y_i] + end[y_n],

with −inf on the arcs a scheme forbids and, for a tag mask (partial annotation,
:meth:`fstchunk.structures.lattice.Lattice.constrained`), on the emissions of forbidden tags.
Every score-array lattice (:meth:`fstchunk.structures.lattice.Lattice.from_scores`, a CRF's, an
HMM's, a network's) is one.  A :class:`RaggedBatch` holds B of them that share
their tags, scheme and (trans, start, end), sorted by length and padded to the
longest: em (B, n, L), ``lengths`` (B,).  One Python step per token of the longest
then serves every sentence of the batch (:mod:`.inference`, :mod:`.meu_batch`).

:func:`cut_runs` chooses the batches: sentences sorted by length, cut where the
padding would cost more arithmetic than a Python step saves (a dynamic programme
over the distinct lengths); the training objectives' ragged batches
(:attr:`fstchunk.models.batching.Gold.buckets`) are cut by the same function.

Pitfall: the padding of ``em`` is 0, not −inf, and carries no meaning: every
recursion stops each sentence at its own length (``lengths``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: The most B·n·L² entries of one batch: the gauged forward-backward
#: (:class:`fstchunk.engine.batched.Gauged`, taken for peaked scores) holds that
#: many transfer weights (64 MB); the scaled path does not care.
BATCH_ENTRIES = 2 ** 23

#: The cost of one Python-level token step of a batched recursion, in units of one
#: padded sentence's arithmetic at that step (L² multiply-adds): the trade-off of
#: :func:`cut_runs` between fewer, longer steps and padding.
STEP_COST = 16


def cut_runs(lengths: np.ndarray, num_tags: int, cap_entries: int | None = None,
             step_cost: int | None = None) -> list[np.ndarray]:
    """The sentences (indices into ``lengths``) of each ragged batch: sorted by length
    (stably), cut into runs that minimise Σ_batches n·(``step_cost`` + B) — one Python
    step per token of the longest against the padding's arithmetic — by dynamic
    programming over the distinct lengths, each run split into batches of at most
    ``cap_entries`` / (n·L²) sentences (None: :data:`BATCH_ENTRIES`, :data:`STEP_COST`)."""
    cap_entries = BATCH_ENTRIES if cap_entries is None else cap_entries
    step_cost = STEP_COST if step_cost is None else step_cost
    lens = np.asarray(lengths, dtype=np.int64)
    if len(lens) == 0:
        return []
    order = np.argsort(lens, kind="stable")
    cap = max(1, cap_entries // num_tags ** 2)                     # B·n per batch
    d, counts = np.unique(lens, return_counts=True)
    before = np.concatenate([[0], np.cumsum(counts)])              # sentences below d[i]
    best, cut = np.zeros(len(d) + 1), np.zeros(len(d), dtype=np.int64)
    for j, n in enumerate(d):                                      # run d[i..j], any i ≤ j
        B = before[j + 1] - before[:j + 1]
        parts = -(-B * int(n) // cap)
        cost = best[:j + 1] + int(n) * (parts * step_cost + B)
        cut[j] = int(np.argmin(cost))
        best[j + 1] = cost[cut[j]]
    runs, j = [], len(d)
    while j:
        runs.append((before[cut[j - 1]], before[j]))
        j = cut[j - 1]
    out = []
    for lo, hi in reversed(runs):
        n = int(lens[order[hi - 1]])
        size = max(1, cap // n)
        for s in range(lo, hi, size):
            out.append(order[s:min(hi, s + size)])
    return out


@dataclass
class RaggedBatch:
    """B dense chains of one tag space padded to the longest (module doc).

    ``em`` (B, n, L): emission scores, −inf where a tag mask forbids a tag, 0 on the
    padding; ``lengths`` (B,); ``trans`` (L, L), ``start``, ``end`` (L,): the log
    scores with −inf where the scheme forbids (masked); ``space``: the
    :class:`fstchunk.schemes.tagspace.TagSpace`; ``index``: each sentence's position in the
    caller's list."""
    em: np.ndarray
    lengths: np.ndarray
    trans: np.ndarray
    start: np.ndarray
    end: np.ndarray
    space: object
    index: np.ndarray
    masked: bool = False

    @property
    def B(self) -> int:
        return self.em.shape[0]

    @property
    def n(self) -> int:
        return self.em.shape[1]

    @property
    def L(self) -> int:
        return self.em.shape[2]

    def take(self, rows: Sequence[int]) -> "RaggedBatch":
        """The sentences ``rows`` of this batch as a batch of their own (padded to their
        own longest)."""
        rows = np.asarray(rows, dtype=np.intp)
        lens = self.lengths[rows]
        return RaggedBatch(self.em[rows, :int(lens.max())], lens, self.trans, self.start,
                           self.end, self.space, self.index[rows], self.masked)

    @property
    def valid(self) -> np.ndarray:
        """(B, n) bool: each sentence's own tokens."""
        return np.arange(self.n)[None, :] < self.lengths[:, None]


def pad(rows: Sequence[np.ndarray], n: int, L: int) -> np.ndarray:
    """(len(rows), n, L): each (n_b, L) array in front, zeros after."""
    out = np.zeros((len(rows), n, L))
    for b, r in enumerate(rows):
        out[b, :len(r)] = r
    return out


def ragged_batches(ems: Sequence[np.ndarray], trans: np.ndarray, start: np.ndarray,
                   end: np.ndarray, space, index: Sequence[int] | None = None,
                   masks: Sequence[np.ndarray | None] | None = None) -> list[RaggedBatch]:
    """The :class:`RaggedBatch` es of sentences with emissions ``ems`` (each (n_b, L))
    under one dense chain model (``trans``, ``start``, ``end`` masked: −inf where the
    scheme forbids), cut by :func:`cut_runs`; ``masks``: per sentence None or an
    (n_b, L) bool array of the tags allowed at each token (the rest get −inf)."""
    index = np.arange(len(ems)) if index is None else np.asarray(index)
    L = len(space)
    out = []
    for ids in cut_runs(np.array([len(e) for e in ems]), L):
        lens = np.array([len(ems[i]) for i in ids], dtype=np.int64)
        em = pad([ems[i] for i in ids], int(lens.max()), L)
        masked = False
        if masks is not None:
            for b, i in enumerate(ids):
                if masks[i] is not None:
                    em[b, :lens[b]][~masks[i]] = -np.inf
                    masked = True
        out.append(RaggedBatch(em, lens, trans, start, end, space, index[ids], masked))
    return out
