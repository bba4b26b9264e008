"""The CRF's objectives over a training set as functions of θ: the loss apart from its
solvers (as scikit-learn's ``linear_model/_linear_loss.py`` is).

For θ = (state weights at the (attribute, tag) pairs, transitions, start, end) and a
prepared training set (:class:`~fstchunk.models.design.TrainingData`):

* :func:`statistics` — the objective's **additive statistics** over the sentences
  (:mod:`fstchunk.models.objectives` for ``ml``, ``meu``, ``meu-corpus``,
  :func:`fstchunk.models.maxmargin.hinge_statistics` for ``max-margin``,
  :func:`fstchunk.models.partial.statistics` for partially annotated data) and their
  gradients in θ-space by the chain rule through the pair design matrix:
  vec(E) = A·θ_pairs, ∇θ_pairs = Aᵀ·vec(∇E) (:mod:`fstchunk.models.design`);
* :func:`partitions` — the training set in runs of about equal token counts, each with
  a scoring copy of the CRF, the unit :mod:`fstchunk.runtime.scale`'s executors place on a
  worker; the statistics of the runs add up to those of the whole;
* P(θ) = combine(Σ statistics) + λ‖θ‖² and its gradient are the loss object's,
  :class:`fstchunk.learn.loss.Loss` (summed here or over an executor's partitions).

Which statistics a sentence gives depends on its gold: :data:`BY_GOLD` (full gold, or
partial annotation's marginal likelihood) — a table, not a branch in the loss.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..learn import objectives as lo
from ..learn.loss import Loss
from ..runtime.scale import split
from .design import TrainingData
from .maxmargin import hinge_statistics
from . import partial
from .batching import Gold
from .objectives import Chain, ChainGrad, Statistics, statistics_of
from .partial import PartialGold


#: the most attributes x tags for which the emissions and their gradient go through the
#: dense W (X·W, Xᵀ·∇E: 32 MB) rather than the pair design matrix: for a small W the
#: dense products read X once per tag column in order, 3-4x faster than A's scattered
#: rows (CoNLL-2002 Dutch with a tutorial's features: 82k attributes x 9 tags)
DENSE_ENTRIES = 2 ** 22


def dense(crf: Any) -> bool:
    """Whether ``crf``'s W is small enough for the dense products."""
    return len(crf.fmap_) * crf.L <= DENSE_ENTRIES


def full_statistics(objective: lo.Objective, chain: Chain, gold: Gold, beta_sq: float,
                    margin: str) -> Statistics:
    """The statistics of ``objective`` on fully annotated sentences (the max-margin hinge
    with loss ``margin`` among them)."""
    if objective is lo.MAX_MARGIN:
        return hinge_statistics(chain, gold, beta_sq, margin)
    return statistics_of(objective)(chain, gold, beta_sq)


#: the kind of gold -> its statistics (partial annotation: the marginal likelihood of A(x))
BY_GOLD: dict[type, Callable[..., Statistics]] = {Gold: full_statistics,
                                                  PartialGold: partial.statistics}


def statistics(crf: Any, data: TrainingData, theta: np.ndarray, loss: Loss
               ) -> tuple[np.ndarray, np.ndarray]:
    """The statistics of ``loss``'s objective on ``data`` at θ: values (J,) and their
    gradients in θ-space (J', |θ|), sums over the sentences."""
    objective = loss.objective
    bucketed = dense(crf) and objective is lo.ML and data.gold.bucketable
    if bucketed:                            # ML's own layout (TrainingData.bucketed)
        emissions = np.asarray(crf.emissions(data.bucketed(), theta))
    elif dense(crf):
        emissions = np.asarray(crf.emissions(data.X, theta))
    else:
        emissions = (data.design(crf.pairs_, crf.L).T @ theta[:crf.P]).reshape(-1, crf.L)
    chain = Chain(crf.tags_, crf.scheme_, emissions, *crf.unpack(theta), bucketed=bucketed)
    st = BY_GOLD[type(data.gold)](objective, chain, data.gold, loss.beta_sq, loss.margin)
    return st.values, np.stack([chain_rule(crf, data, g, bucketed) for g in st.grads])


def chain_rule(crf: Any, data: TrainingData, g: ChainGrad, bucketed: bool = False
               ) -> np.ndarray:
    """∇θ from the gradient with respect to the score arrays: Aᵀ·vec(∇E) for the pairs
    (or (Xᵀ·∇E) at the pairs, :func:`dense`; X_bᵀ·∇E for a ``bucketed`` ∇E), then the
    transitions, start and end."""
    if dense(crf):
        XT = data.bucketed().T if bucketed else data.transposed()
        G = np.asarray(XT @ g.emissions)
        pairs = G[crf.pairs_[:, 0], crf.pairs_[:, 1]]
    else:
        pairs = data.design(crf.pairs_, crf.L) @ g.emissions.ravel()
    return np.concatenate([pairs, g.trans.ravel(), g.start, g.end])


def partitions(crf: Any, data: TrainingData, parts: int) -> list[tuple[Any, TrainingData]]:
    """``data`` in ``parts`` runs of sentences of about equal token counts, each with a
    scoring copy of ``crf`` and its pair design matrix built (built once by the driver,
    so that every forked worker has it)."""
    shards = [(crf.scoring_copy(), data.subset(r))
              for r in split([len(g) for g in data.gold.sequences], parts)]
    for copy, part in shards:
        if dense(copy):
            part.transposed()
            if part.gold.bucketable:
                part.bucketed()                 # ML's layout
        else:
            part.design(copy.pairs, copy.L)
    return shards
