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
* :func:`value_and_grad` — P(θ) = combine(Σ statistics) + λ‖θ‖² and its gradient
  (:meth:`fstchunk.learn.objectives.Objective.combine`: the mean per sentence, or the
  corpus F's ratio), summed here or over an executor's partitions.

Pitfall: a partitioned value equals the single-process one to rounding (~1e-12
relative), not bit for bit: the sums run in another order.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core.fbeta import to_beta_sq
from ..learn import objectives as lo
from ..runtime.scale import split
from .design import TrainingData
from .maxmargin import hinge_statistics
from . import partial
from .objectives import STATISTICS, Chain, ChainGrad
from .partial import PartialGold


#: the most attributes x tags for which the emissions and their gradient go through the
#: dense W (X·W, Xᵀ·∇E: 32 MB) rather than the pair design matrix: for a small W the
#: dense products read X once per tag column in order, 3-4x faster than A's scattered
#: rows (CoNLL-2002 Dutch with a tutorial's features: 82k attributes x 9 tags)
DENSE_ENTRIES = 2 ** 22


def dense(crf: Any) -> bool:
    """Whether ``crf``'s W is small enough for the dense products."""
    return len(crf.fmap) * crf.L <= DENSE_ENTRIES


def statistics(crf: Any, data: TrainingData, theta: np.ndarray, objective: lo.Objective,
               beta_sq: float = 1.0, loss: str = "hamming") -> tuple[np.ndarray, np.ndarray]:
    """The statistics of ``objective`` on ``data`` at θ: values (J,) and their gradients
    in θ-space (J', |θ|), sums over the sentences (``beta_sq`` = β² of F_β)."""
    bucketed = (dense(crf) and objective is lo.ML and not isinstance(data.gold, PartialGold))
    if bucketed:                            # ML's own layout (TrainingData.bucketed)
        emissions = np.asarray(crf.emissions(data.bucketed(), theta))
    elif dense(crf):
        emissions = np.asarray(crf.emissions(data.X, theta))
    else:
        emissions = (data.design(crf.pairs, crf.L).T @ theta[:crf.P]).reshape(-1, crf.L)
    chain = Chain(crf.tags, crf.scheme, emissions, *crf.unpack(theta), bucketed=bucketed)
    if isinstance(data.gold, PartialGold):          # the marginal likelihood of A(x)
        st = partial.statistics(objective, chain, data.gold, beta_sq)
    elif objective is lo.MAX_MARGIN:
        st = hinge_statistics(chain, data.gold, beta_sq, loss)
    else:
        st = STATISTICS[objective](chain, data.gold, beta_sq)
    return st.values, np.stack([chain_rule(crf, data, g, bucketed) for g in st.grads])


def chain_rule(crf: Any, data: TrainingData, g: ChainGrad, bucketed: bool = False
               ) -> np.ndarray:
    """∇θ from the gradient with respect to the score arrays: Aᵀ·vec(∇E) for the pairs
    (or (Xᵀ·∇E) at the pairs, :func:`dense`; X_bᵀ·∇E for a ``bucketed`` ∇E), then the
    transitions, start and end."""
    if dense(crf):
        XT = data.bucketed().T if bucketed else data.transposed()
        G = np.asarray(XT @ g.emissions)
        pairs = G[crf.pairs[:, 0], crf.pairs[:, 1]]
    else:
        pairs = data.design(crf.pairs, crf.L) @ g.emissions.ravel()
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
            if not isinstance(part.gold, PartialGold):
                part.bucketed()                 # ML's layout
        else:
            part.design(copy.pairs, copy.L)
    return shards


def value_and_grad(crf: Any, data: TrainingData, objective: lo.Objective, l2: float,
                   beta: float = 1.0, loss: str = "hamming", executor: Any = None
                   ) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """θ -> (P(θ), ∇P(θ)) of an objective with a value (minimised: the negated
    log-likelihood or expected F, the max-margin hinge with loss ``loss`` and a
    subgradient) plus l2·‖θ‖²; ``beta``: the standard β of F_β.  With an ``executor``
    the statistics are summed over its partitions of ``data``."""
    beta_sq = to_beta_sq(beta)
    if objective.combination is None:
        raise lo.objective_error("{} has no objective function of θ: it is trained by "
                                 "passes of its solver", objective.name)
    parts = executor.partitioned(crf, data) if executor is not None else None

    def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
        values, G = (parts.statistics(theta, objective.name, beta_sq, loss)
                     if parts is not None
                     else statistics(crf, data, theta, objective, beta_sq, loss))
        value, w = objective.combine(values, len(data.gold), beta_sq)
        return value + l2 * float(theta @ theta), w @ G + 2 * l2 * theta

    return fun
