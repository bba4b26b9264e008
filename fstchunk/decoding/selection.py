"""Choosing what to annotate next (active learning): rank a pool of sentences by how
unsure a model is of them, and pick the ``budget`` most unsure.

Strategies (:data:`STRATEGIES`), each a score per sentence, higher = picked first:

* ``expected-f``: 1 − E[F_β(x̂ | y)], y ~ the model, x̂ the model's own MEU decision
  (:class:`fstchunk.decoding.decoders.MEU`, exact, certified): the model's estimate of how
  wrong its best answer is, in the unit of the evaluation (Jansche 2005's utility);
* ``entropy``: the mean over tokens of the token marginals' entropy
  −Σ_l Pr(y_i = l) log Pr(y_i = l) (the usual uncertainty-sampling baseline, Settles
  & Craven 2008, "token entropy" averaged per token);
* ``random``: a uniform sample without replacement (``seed``).

:func:`pick` keeps the input order of the picked sentences; ties go to the earlier
sentence.  A budget above the pool's size picks the whole pool.  :func:`distinct`
finds the first copy of each token sequence (``fstchunk select`` scores and picks those
only).

``expected-f`` needs β > 0: at β = 0 (precision, 0/0 := 1) the decision without chunks
has E[F] = 1 on every sentence, so every score would be 0.
"""

from __future__ import annotations

from typing import Hashable, Iterable, Sequence

import numpy as np

from ..core.errors import InputError
from ..core.fbeta import check_beta
from ..structures.lattice import Lattice
from .confidence import marginals_all
from .decoders import MEU

STRATEGIES = ("expected-f", "entropy", "random")


def expected_f_scores(lattices: Sequence[Lattice], beta: float = 1.0) -> np.ndarray:
    """1 − E[F_β] of each lattice's MEU decision (module doc); β must be > 0."""
    try:
        check_beta(beta, positive=True)
    except InputError as e:
        raise InputError(f"{e}: expected-f ranks by E[F_β] of the MEU decision, which is 1 "
                         f"on every sentence at β = 0 (the decision without chunks), so all "
                         f"would tie") from None
    return np.array([1.0 - d.score for d in MEU(beta=beta).decode_all(lattices)])


def entropy_scores(lattices: Sequence[Lattice]) -> np.ndarray:
    """Mean token-marginal entropy (nats) of each lattice (module doc)."""
    out = []
    for p in marginals_all(lattices):
        with np.errstate(divide="ignore", invalid="ignore"):
            h = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1)
        out.append(float(h.mean()))
    return np.array(out)


def scores(lattices: Sequence[Lattice], strategy: str, beta: float = 1.0) -> np.ndarray:
    """The strategy's score of each lattice (``random`` has none: use :func:`pick`)."""
    if strategy == "expected-f":
        return expected_f_scores(lattices, beta)
    if strategy == "entropy":
        return entropy_scores(lattices)
    raise InputError(f"strategy {strategy!r} has no score; use one of "
                     f"{', '.join(s for s in STRATEGIES if s != 'random')}")


def distinct(keys: Iterable[Sequence[Hashable]]) -> list[int]:
    """The indices of the first occurrence of each key (e.g. a sentence's tokens), in
    order: a key seen before counts once."""
    seen: set = set()
    out = []
    for i, k in enumerate(keys):
        k = tuple(k)
        if k not in seen:
            seen.add(k)
            out.append(i)
    return out


def pick(values: np.ndarray | int, budget: int, seed: int | None = None) -> list[int]:
    """Indices of the ``budget`` highest ``values`` (ties: the earlier), in input
    order; ``values`` an int N: a uniform random sample of the N indices (``seed``)."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise InputError(f"budget must be an integer >= 1, got {budget!r}")
    if isinstance(values, (int, np.integer)):
        n = int(values)
        chosen = np.random.default_rng(seed).choice(n, size=min(budget, n), replace=False)
    else:
        values = np.asarray(values, dtype=float)
        if np.isnan(values).any():
            raise InputError(f"score of sentence {int(np.flatnonzero(np.isnan(values))[0])} "
                             f"is NaN")
        chosen = np.argsort(-values, kind="stable")[:budget]
    return sorted(int(i) for i in chosen)
