"""θ of a linear-chain model with state weights at (attribute, tag) pairs: the part the
CRF over CoNLL columns (:class:`fstchunk.models.crf.CRF`) and the CRF over weighted
attributes (:class:`fstchunk.models.attribute_crf.AttributeCRF`) share.

    θ = (w at the P pairs, trans (L x L), start (L), end (L))
    E = X·W,  W[f_p, l_p] = w_p,   score(y) = start[y_1] + Σ_i E[i, y_i]
                                             + Σ_i trans[y_{i-1}, y_i] + end[y_n]

X (tokens x attributes, real values) is the feature map's transform; the objectives'
statistics go through the pair design matrix (:mod:`fstchunk.models.design`,
:mod:`fstchunk.models.crf_loss`).

Pitfall: the dense W (attributes x tags) is cached for the last θ only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..learn import objectives as lo
from ..learn.loss import Loss
from . import crf_loss
from .design import TrainingData
from .objectives import Chain


class PairChain:
    """The θ layout and score arrays of a pair-feature chain model (module doc); the
    fitted model holds ``fmap_`` (its ``len`` is the attribute count), ``tags_``,
    ``scheme_``, ``pairs_`` (P x 2), ``theta_`` and the class's ``objectives``."""

    _w_cache: tuple[int, np.ndarray] | None = None

    @property
    def L(self) -> int:
        """The number of tags."""
        return len(self.tags_)

    @property
    def P(self) -> int:
        """The number of (feature, tag) pairs with a state weight."""
        return len(self.pairs_)

    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(trans, start, end) of θ; the state weights are :meth:`emissions`'."""
        P, L = self.P, self.L
        return (theta[P:P + L * L].reshape(L, L), theta[P + L * L:P + L * L + L],
                theta[P + L * L + L:])

    def _dense_w(self, theta: np.ndarray) -> np.ndarray:
        """The state weights as a dense feature x tag matrix, cached for the last θ."""
        key = hash(theta.tobytes())
        if self._w_cache is not None and self._w_cache[0] == key:
            return self._w_cache[1]
        W = np.zeros((len(self.fmap_), self.L))
        W[self.pairs_[:, 0], self.pairs_[:, 1]] = theta[:self.P]
        self._w_cache = (key, W)
        return W

    def emissions(self, X: sp.csr_matrix, theta: np.ndarray | None = None) -> np.ndarray:
        """X·W for the token rows of X."""
        return X @ self._dense_w(self.theta_ if theta is None else theta)

    def chain(self, theta: np.ndarray, X: sp.csr_matrix) -> Chain:
        """The score arrays of the tokens of X under θ."""
        return Chain(self.tags_, self.scheme_, self.emissions(X, theta), *self.unpack(theta))

    def objective_function(self, name: str | lo.Objective, data: TrainingData, l2: float,
                           beta: float = 1.0, loss: str = "hamming", executor: Any = None):
        """θ -> (value, gradient) of objective ``name`` on ``data`` plus l2·‖θ‖²
        (:class:`fstchunk.learn.loss.Loss`)."""
        return Loss(lo.objective(name, self.objectives), l2, beta, loss).function(
            self, data, executor)

    def statistics(self, data: TrainingData, theta: np.ndarray, loss: Loss
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The additive statistics of ``loss``'s objective on ``data`` at θ
        (:func:`.crf_loss.statistics`; what a worker of :mod:`fstchunk.runtime.scale` computes)."""
        lo.objective(loss.objective, self.objectives)       # one this model trains
        return crf_loss.statistics(self, data, theta, loss)

    def partitions(self, data: TrainingData, parts: int) -> list[tuple[Any, TrainingData]]:
        """The shards of ``data`` for :mod:`fstchunk.runtime.scale` (:func:`.crf_loss.partitions`)."""
        return crf_loss.partitions(self, data, parts)
