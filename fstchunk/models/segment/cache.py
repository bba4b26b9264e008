"""The step features of each sentence kept across the epochs of training (issue 37).

:func:`.features.sentence_features` hashes every predicate string and mixes every
feature id again on each visit, although a sentence's features never change while a
model trains: about a quarter of an epoch.  :class:`FeatureCache` keeps them, packed,
per sentence object: the predicate ids (for the steps ``max_gap`` forbids that a gold
segment uses), F's row pointers and column indices in their own dtype and its values
(counts of a hashed feature in a step, small non-negative integers) in the smallest
unsigned integer type that holds them; (J, I, index) are shared by the sentences of a
length (:func:`.features.step_index`).  Unpacking rebuilds F with the same entries in
the same order, so every score, update and weight is bit for bit the uncached one's.

Pitfalls: the key is the sentence object (its ``id`` and an identity check), so a
sentence read again is computed again, and the cache must not outlive the model's
fitted state (the model drops it when :meth:`~.model.SegmentModel.fit` returns);
sentences beyond the byte budget (:data:`BUDGET_MB`; 0 turns caching off) are
computed on every visit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ...io.segments import SegSentence
from .features import SentenceFeatures, step_index

#: the most megabytes of packed features a cache holds (mcp05+sp03, measured on a
#: sample: 28 KB per CoNLL-2000 sentence, 250 MB for train.txt; 65 KB per GENIA
#: sentence at max gap 12, 950 MB for its 15038 training sentences)
BUDGET_MB = 2048


@dataclass(frozen=True)
class Packed:
    """A sentence's features without what its length alone determines."""
    n: int
    ids: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    counts: np.ndarray
    D: int
    at: np.ndarray | None
    pos: bool | None

    @classmethod
    def of(cls, sf: SentenceFeatures) -> "Packed":
        """``sf`` packed; its values must be small non-negative integers (counts)."""
        data = sf.F.data
        top = int(data.max(initial=0))
        counts = data.astype(np.min_scalar_type(top))
        if not np.array_equal(counts, data):
            raise ValueError("feature values are not counts")   # a bug, not a user error
        return cls(sf.n, sf.ids, sf.F.indptr, sf.F.indices, counts, sf.F.shape[1],
                   sf.at, sf.pos)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.ids, self.indptr, self.indices, self.counts))

    def unpack(self, max_gap: int | None) -> SentenceFeatures:
        """The :class:`SentenceFeatures` it was packed from (F rebuilt as float64)."""
        J, I, index = step_index(self.n, max_gap)
        F = sp.csr_matrix((self.counts.astype(np.float64), self.indices, self.indptr),
                          shape=(len(J), self.D))
        return SentenceFeatures(self.n, self.ids, J, I, F, index, self.at, self.pos)


class FeatureCache:
    """``model.features`` of each sentence computed once and kept (within
    :data:`BUDGET_MB`); :meth:`features` answers as :meth:`SegmentModel.features
    <.model.SegmentModel.features>` does."""

    def __init__(self, model: Any, budget_mb: float | None = None):
        self.model = model
        self.budget = int((BUDGET_MB if budget_mb is None else budget_mb) * 2 ** 20)
        self.nbytes = 0
        self.hits = self.misses = 0
        self._kept: dict[int, tuple[SegSentence, Packed]] = {}

    def features(self, sentence: SegSentence, compute) -> SentenceFeatures:
        """The features of ``sentence``: kept ones unpacked, else ``compute(sentence)``
        (kept while the budget lasts)."""
        kept = self._kept.get(id(sentence))
        if kept is not None and kept[0] is sentence:
            self.hits += 1
            return kept[1].unpack(self.model.max_gap_)
        self.misses += 1
        sf = compute(sentence)
        if self.nbytes < self.budget:
            packed = Packed.of(sf)
            self._kept[id(sentence)] = (sentence, packed)
            self.nbytes += packed.nbytes
        return sf
