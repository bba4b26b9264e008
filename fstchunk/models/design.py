"""A training set prepared for one CRF, and its pair design matrix.

A CRF's state scores are E[t, l] = Σ_f X[t, f]·W[f, l], with W nonzero only at the
(feature, tag) pairs seen in training (P of them; on CoNLL-2000 with tmpt3, P = 1.2M
of F·L = 22M entries).  Building the dense F x L matrix W from θ, and the dense
Xᵀ·∇E for the gradient, costs 2·F·L·8 bytes of fresh memory per evaluation (360 MB
there), which is what limited data-parallel speed-up: two workers fought over the
memory bus.  The pair design matrix A ((tokens·L) x P, A[(t, l_p), p] = X[t, f_p])
gives the same products with memory read in order (nnz(A) = 42M there, 12 bytes
each, built once per training set and kept instead of Xᵀ):

    vec(E) = A·θ_pairs,        ∇θ_pairs = Aᵀ·vec(∇E).

Pitfall: A is built for one CRF's pairs (cached per pairs array); sums run in
another order than X·W, so values agree with it to rounding (1e-15 relative), not
bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from ..core.errors import SchemeError
from .batching import Gold


@dataclass
class TrainingData:
    """A training set prepared for one CRF: token features X (tokens x features) and
    the gold tag indices."""
    X: sp.csr_matrix
    gold: Gold

    def __len__(self) -> int:
        """The number of sentences."""
        return len(self.gold)

    def subset(self, ids: Sequence[int]) -> "TrainingData":
        """The sentences ``ids`` (in that order) as a training set of their own."""
        off = self.gold.offsets
        rows = np.concatenate([np.arange(off[k], off[k + 1]) for k in ids]) if len(ids) \
            else np.zeros(0, dtype=int)
        return TrainingData(self.X[rows], self.gold.subset(ids))

    _designs: dict = field(default_factory=dict, repr=False, compare=False)

    def bucketed(self) -> sp.csr_matrix:
        """X_b: the rows of X in the ML objective's layout — the sentences'
        :attr:`~fstchunk.models.batching.Gold.buckets` one after the other, each
        token-major (n, B), an empty row at each padding position — so that the
        emissions come out of X_b·W in the order the batched recursion reads them and
        the gradient X_bᵀ·∇E (CSC: a scatter into the small F x L result, faster than
        a CSR Xᵀ's gather from ∇E) takes its marginals as they are; without X's
        explicit zeros (attributes of value 0: features, but no term of any
        product); built once."""
        if "bucketed" not in self._designs:
            N, F = self.X.shape
            src = np.full(self.gold.bucket_size, N)         # N: the empty row
            src[self.gold.bucket_rows] = np.arange(N)
            Xb = sp.vstack([sp.csr_matrix(self.X), sp.csr_matrix((1, F))]).tocsr()[src]
            Xb.eliminate_zeros()
            self._designs["bucketed"] = Xb
        return self._designs["bucketed"]

    def transposed(self) -> sp.csr_matrix:
        """Xᵀ as CSR, built once (the dense gradient Xᵀ·∇E, :func:`.crf_loss.dense`)."""
        if "XT" not in self._designs:
            self._designs["XT"] = sp.csr_matrix(self.X).T.tocsr()
        return self._designs["XT"]

    def design(self, pairs: np.ndarray, L: int) -> sp.csr_matrix:
        """Aᵀ of :func:`pair_design` for these pairs, built once per pairs array."""
        key = (id(pairs), len(pairs), L)
        if key not in self._designs:
            for old in [k for k in self._designs if k not in ("XT", "bucketed")]:
                del self._designs[old]
            self._designs[key] = pair_design(self.X, pairs, L)
        return self._designs[key]


@dataclass(frozen=True)
class FeatureCount:
    """The size and columns of a feature map without its dictionary
    (:meth:`CRF.scoring_copy`)."""
    size: int
    word_col: int
    pos_col: int | None

    def __len__(self) -> int:
        return self.size




def pair_design(X: sp.csr_matrix, pairs: np.ndarray, L: int) -> sp.csr_matrix:
    """Aᵀ (P x (tokens·L)) as CSR: row p holds X[t, f_p] at column t·L + l_p for each
    pair p = (f_p, l_p) (module doc), so that Aᵀ·vec(∇E) is the pairs' gradient and
    (Aᵀ)ᵀ·θ_pairs is X·W flattened.  Built row by row from the columns of X: no sort."""
    XT = sp.csr_matrix(X).T.tocsr()
    N = X.shape[0]
    f, lab = pairs[:, 0], pairs[:, 1]
    cnt = XT.indptr[f + 1] - XT.indptr[f]
    total = int(cnt.sum())
    src = np.repeat(XT.indptr[f] - np.cumsum(cnt) + cnt, cnt) + np.arange(total)
    cols = XT.indices[src].astype(np.int64) * L + np.repeat(lab, cnt)
    indptr = np.concatenate([[0], np.cumsum(cnt)])
    return sp.csr_matrix((XT.data[src], cols, indptr), shape=(len(pairs), N * L))


def training_data(fmap: Any, tags: tuple[str, ...], scheme: str,
                  sentences: Sequence[Any], gold: list[list[str]]) -> TrainingData:
    """X of the sentences under ``fmap`` (a feature map's ``transform``) and their gold
    tags (in ``scheme``) as indices; SchemeError at the line of a tag not in ``tags``."""
    ix = {t: i for i, t in enumerate(tags)}
    seqs = []
    for s, g in zip(sentences, gold):
        bad = [i for i, t in enumerate(g) if t not in ix]
        if bad:
            raise SchemeError(f"{s.where(bad[0])}: tag {g[bad[0]]!r} is not among the "
                              f"model's tags {', '.join(tags)}", bad[0])
        seqs.append(np.array([ix[t] for t in g], dtype=np.int64))
    return TrainingData(fmap.transform(sentences), Gold(seqs, tags, scheme))


def observed_pairs(X: sp.csr_matrix, gold: Sequence[np.ndarray], L: int) -> np.ndarray:
    """The (feature, tag) pairs that occur in the training data, (P, 2)."""
    y = np.concatenate(gold)
    Y = sp.csr_matrix((np.ones(len(y)), (np.arange(len(y)), y)), shape=(len(y), L))
    M = (X.T @ Y).tocoo()
    return np.stack([M.row, M.col], axis=1).astype(np.int64)
