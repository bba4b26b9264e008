"""The per-sentence blocks of a CRF's training data, for the online solvers.

BCFW (:mod:`.bcfw`) and the averaged perceptron (:mod:`.perceptron`) visit one
sentence at a time and change θ by a feature difference φ(x_k, y) − φ(x_k, y'), so
both keep θ in a block-friendly layout and share these pieces:

* W (features x tags, dense, zero outside the model's (feature, tag) pairs), trans,
  start, end (``rest_mask``: which of these are parameters of the model); :meth:`ChainBlocks.theta_of` is the CRF's θ layout of them;
* per sentence k: its feature columns, X_k restricted to them and its transpose, so
  that em_k = X_k·W[cols] and the θ-image of a chain-space difference E is
  X_kᵀ·E (masked to the pairs);
* the oracles of a batch of sentences at one w (:meth:`ChainBlocks.oracles`, one
  padded Viterbi: :func:`fstchunk.models.maxmargin.hamming_oracles`).

Pitfall: W is dense (features x tags floats); the CRF's pairs are a subset, so every
image is masked, or θ would gain weights for pairs the model does not have.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np
import scipy.sparse as sp

from .maxmargin import hamming_oracles
from .batching import Gold


class ChainModel(Protocol):
    """What the solvers read of a CRF (:class:`fstchunk.models.crf.CRF`)."""
    tags: tuple[str, ...]
    scheme: str
    pairs: np.ndarray
    theta: np.ndarray


class Data(Protocol):
    """What the solvers read of a CRF's training data."""
    X: sp.csr_matrix
    gold: Gold


class ChainBlocks:
    """One CRF's training data cut into sentences (module doc)."""

    def __init__(self, model: ChainModel, data: Data):
        self.tags, self.scheme = model.tags_, model.scheme_
        self.X, self.gold = data.X, data.gold
        self.N, self.L = len(data.gold), len(model.tags_)
        self.pairs = np.asarray(model.pairs_)
        self.mask = np.zeros((data.X.shape[1], self.L))
        self.mask[self.pairs[:, 0], self.pairs[:, 1]] = 1.0
        # 1 at the entries of (trans, start, end) that are parameters (a model's ``free``
        # mask after its pairs, e.g. CRFsuite's features: no start/end), else all
        free = getattr(model, "free", None)
        self.rest_mask = (np.ones(self.L * self.L + 2 * self.L) if free is None
                          else np.asarray(free[len(self.pairs):], dtype=float))
        self.all_rest = bool(self.rest_mask.all())
        off = data.gold.offsets
        self.local = []                                   # per sentence: cols, X_k[:, cols], ᵀ
        for k in range(self.N):
            Xk = data.X[off[k]:off[k + 1]]
            cols = np.unique(Xk.indices)
            self.local.append((cols, Xk[:, cols].tocsr(), Xk[:, cols].T.tocsr()))

    def onehots(self, k: int, ys: Sequence[np.ndarray], weights: Sequence[float]):
        """Σ_j weights_j·φ(x_k, ys_j) in chain space: (E (n x L), trans, start, end), the
        last three masked to the model's parameters (``rest_mask``)."""
        n, L = len(self.gold.sequences[k]), self.L
        E, T, S, En = np.zeros((n, L)), np.zeros((L, L)), np.zeros(L), np.zeros(L)
        rows = np.arange(n)
        for y, a in zip(ys, weights):
            np.add.at(E, (rows, y), a)
            np.add.at(T, (y[:-1], y[1:]), a)
            S[y[0]] += a
            En[y[-1]] += a
        if not self.all_rest:
            L2 = L * L
            T, S, En = (T * self.rest_mask[:L2].reshape(L, L), S * self.rest_mask[L2:L2 + L],
                        En * self.rest_mask[L2 + L:])
        return E, T, S, En

    def image(self, k: int, E: np.ndarray) -> np.ndarray:
        """X_kᵀ·E masked to the pairs: the state-weight image of a chain-space E, on
        sentence k's feature columns (``self.local[k][0]``)."""
        cols, _, XkT = self.local[k]
        return np.asarray(XkT @ E) * self.mask[cols]

    def emissions(self, k: int, W: np.ndarray) -> np.ndarray:
        """em_k = X_k·W (n x L) from sentence k's columns only."""
        cols, Xk, _ = self.local[k]
        return np.asarray(Xk @ W[cols])

    def oracles(self, ids: Sequence[int], W: np.ndarray, trans: np.ndarray,
                start: np.ndarray, end: np.ndarray, cost: float = 1.0
                ) -> list[tuple[np.ndarray, float]]:
        """argmax_{valid y} θ·φ(x_k, y) + cost·Hamming(y, y_k) for the sentences ``ids``
        at one θ (cost 0: plain Viterbi), with the Hamming count of each."""
        return hamming_oracles(self.tags, self.scheme, [self.emissions(k, W) for k in ids],
                               [self.gold.sequences[k] for k in ids], trans, start, end,
                               cost)

    def theta_of(self, W: np.ndarray, trans: np.ndarray, start: np.ndarray,
                 end: np.ndarray) -> np.ndarray:
        """(W, trans, start, end) in the CRF's θ layout (state weights at the pairs)."""
        return np.concatenate([W[self.pairs[:, 0], self.pairs[:, 1]], trans.ravel(), start,
                               end])

    def rest_parts(self, rest: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(trans, start, end) of a flat ``rest`` (L² + 2L entries), as views."""
        L = self.L
        return rest[:L * L].reshape(L, L), rest[L * L:L * L + L], rest[L * L + L:]

    def theta_flat(self, W: np.ndarray, rest: np.ndarray) -> np.ndarray:
        """(W, flat rest) in the CRF's θ layout."""
        return self.theta_of(W, *self.rest_parts(rest))

    def blocks_of(self, theta: np.ndarray, fill: float = 0.0) -> list[np.ndarray]:
        """[W, rest] of a θ-layout vector (W dense, ``fill`` off the pairs): the inverse
        of :meth:`theta_flat`."""
        P = len(self.pairs)
        W = np.full(self.mask.shape, fill)
        W[self.pairs[:, 0], self.pairs[:, 1]] = theta[:P]
        return [W, theta[P:].copy()]
