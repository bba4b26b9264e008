"""The gold tag sequences of a training set and the batches the objectives read.

:class:`Gold` holds each sentence's gold tag indices and builds, once each, the views
the objectives of :mod:`fstchunk.models.objectives` need: batches of one length (the
expectation recursions of corpus MEU, partial annotation), ragged batches of nearby
lengths padded to the longest (:attr:`Gold.buckets`, the ML objective's hot loop, cut
by a small dynamic programme between Python steps and padding), the gold path's
counts, and the gold chunks.

Pitfall: a ragged batch's padded rows and gold entries repeat its sentence's last;
they carry no meaning and must be masked by :attr:`Batch.valid` (the engine's
``lengths`` does that for the recursions).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

import numpy as np

from ..schemes import encodings as enc
from ..engine import ragged
from ..engine.ragged import cut_runs
from ..schemes.tagspace import TagSpace, canonical




@dataclass
class Batch:
    """Sentences of one length: their token rows (B, n) and gold tag indices (B, n).
    A ragged batch (:attr:`Gold.buckets`) pads shorter sentences to the longest,
    n: ``lengths`` (B,) holds each one's own; padded rows and gold entries repeat
    the sentence's last (they must be masked by :attr:`valid`)."""
    n: int
    rows: np.ndarray
    gold: np.ndarray
    sentence_ids: list[int]
    lengths: np.ndarray | None = None

    @cached_property
    def valid(self) -> np.ndarray:
        """(B, n) bool: the sentences' own tokens (all True for a batch of one length)."""
        if self.lengths is None:
            return np.ones(self.rows.shape, bool)
        return np.arange(self.n)[None, :] < self.lengths[:, None]



class Gold:
    """Gold tag-index sequences of a corpus and the views the objectives need
    (length batches, chunks), each computed once."""

    #: whether ML may read the sentences in its ragged-batch layout (one gold path each)
    bucketable = True

    def __init__(self, sequences: Sequence[np.ndarray], tags: Sequence[str], scheme: str):
        self.sequences = [np.asarray(g, dtype=np.int64) for g in sequences]
        self.tags, self.scheme = tuple(tags), canonical(scheme)

    def __len__(self) -> int:
        return len(self.sequences)

    def subset(self, ids: Sequence[int]) -> "Gold":
        """The sentences ``ids`` (in that order), as gold of their own."""
        return Gold([self.sequences[k] for k in ids], self.tags, self.scheme)

    @cached_property
    def offsets(self) -> np.ndarray:
        """Token offset of each sentence in the corpus's token rows (one more at the end)."""
        return np.concatenate([[0], np.cumsum([len(g) for g in self.sequences])]).astype(int)

    @cached_property
    def batches(self) -> list[Batch]:
        """Sentences grouped by length, at most :data:`fstchunk.engine.ragged.BATCH_ENTRIES` / (n·L²) per
        batch (the memory of the gauged path of the engine)."""
        by_len: dict[int, list[int]] = {}
        for k, g in enumerate(self.sequences):
            by_len.setdefault(len(g), []).append(k)
        out = []
        for n, all_ids in sorted(by_len.items()):
            size = max(1, ragged.BATCH_ENTRIES // (n * len(self.tags) ** 2))
            for lo in range(0, len(all_ids), size):
                ids = all_ids[lo:lo + size]
                rows = np.stack([np.arange(self.offsets[k], self.offsets[k] + n) for k in ids])
                out.append(Batch(n, rows, np.stack([self.sequences[k] for k in ids]), ids))
        return out

    @cached_property
    def buckets(self) -> list[Batch]:
        """Ragged batches: the sentences sorted by length and cut into runs, each
        padded to its longest n and split into batches of at most
        :data:`fstchunk.engine.ragged.BATCH_ENTRIES` / (n·L²) sentences.  The cuts minimise
        Σ_batches n·(:data:`fstchunk.engine.ragged.STEP_COST` + B) by dynamic programming over the distinct
        lengths: one Python step per token of the longest against the padding's
        arithmetic.  The ML objective's batches
        (:func:`fstchunk.engine.batched.transfer` ``lengths``)."""
        lens = np.array([len(g) for g in self.sequences], dtype=np.int64)
        out = []
        for ids in cut_runs(lens, len(self.tags)):
            own = lens[ids]
            m = int(own.max())
            pos = np.minimum(np.arange(m)[None, :], own[:, None] - 1)      # pad: the last
            rows = self.offsets[ids][:, None] + pos
            gold = np.stack([self.sequences[k][p] for k, p in zip(ids, pos)])
            out.append(Batch(m, rows, gold, [int(k) for k in ids], own))
        return out

    @cached_property
    def bucket_size(self) -> int:
        """Rows of the :attr:`buckets` stacked, padding included."""
        return sum(b.rows.size for b in self.buckets)

    @cached_property
    def bucket_rows(self) -> np.ndarray:
        """For each token row of the corpus, its row in the :attr:`buckets` stacked
        token-major ((n, B) of each batch, one after the other, padding included)."""
        out = np.empty(int(self.offsets[-1]), dtype=np.int64)
        at = 0
        for b in self.buckets:
            ok = b.valid.T.ravel()
            out[b.rows.T.ravel()[ok]] = at + np.flatnonzero(ok)
            at += b.rows.size
        return out

    @cached_property
    def counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The gold path's features, constant in θ: the flat index row·L + tag of
        every token's gold tag (tokens,) and the gold transition (L, L), start and
        end (L,) counts."""
        L = len(self.tags)
        tags = (np.concatenate(self.sequences) if self.sequences
                else np.zeros(0, dtype=np.int64))
        tags = np.arange(len(tags)) * L + tags
        pairs = [g[:-1] * L + g[1:] for g in self.sequences if len(g) > 1]
        trans = np.bincount(np.concatenate(pairs) if pairs else np.zeros(0, np.int64),
                            minlength=L * L).reshape(L, L).astype(float)
        start = np.bincount([g[0] for g in self.sequences], minlength=L).astype(float)
        end = np.bincount([g[-1] for g in self.sequences], minlength=L).astype(float)
        return tags, trans, start, end

    @cached_property
    def bucket_flat(self) -> np.ndarray:
        """:attr:`counts`' flat gold indices in the :attr:`buckets` layout."""
        flat, L = self.counts[0], len(self.tags)
        return self.bucket_rows[flat // L] * L + flat % L

    @cached_property
    def chunks(self) -> list[list[tuple[str, int, int]]]:
        """The gold chunks of each sentence (a chunk scheme's tags only)."""
        TagSpace.of(self.tags, self.scheme).require_chunks("an objective of chunks (meu, "
                                                          "meu-corpus, the F loss)")
        return [enc.tags_to_chunks([self.tags[i] for i in g], self.scheme)
                for g in self.sequences]

    @cached_property
    def corpus_batches(self):
        """(length batches with their gold chunks as arrays (sentence in batch, type
        index, start, end), the scheme's boundary tables)."""
        ts = TagSpace.of(tuple(self.tags), self.scheme)
        cont, opens, closes, tix, types = ts.cont, ts.opens, ts.closes, ts.type_index, ts.types
        out = []
        for b in self.batches:
            rows = [(bi, types.index(typ), s0, e0) for bi, k in enumerate(b.sentence_ids)
                    for typ, s0, e0 in self.chunks[k]]
            out.append((b, tuple(np.array(rows, dtype=np.int64).reshape(-1, 4).T)))
        return out, (cont, opens, closes, tix)
