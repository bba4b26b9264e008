"""Enumeration of a small structure's support: the oracle of every fast path.

Every structure of fstchunk that a dynamic program sums or maximises over offers
its support listed one element at a time, for inputs small enough to list
(torch-struct's ``enumerate``): a lattice's valid tag sequences
(:meth:`fstchunk.structures.lattice.Lattice.enumerate`), a sentence's segments
(:func:`fstchunk.structures.segments.enumerate_segments`) and gold segment sets
(:func:`fstchunk.decoding.segments.enumerate_sets`), and the joint model's label-chunk
structures (:meth:`fstchunk.models.joint.Parts.enumerate`).  Any quantity
(log Z, marginals, MAP, expected F, entropy) is then a plain sum or max over
the list, independent of the recursions that compute it fast.

Pitfalls: the size is checked before anything is listed, and a support above
``limit`` (default :data:`LIMIT`) is refused with an :class:`InputError` naming
its size; path scores are summed along each path in float64, so at score scale M
a log-probability carries about n·eps·M of rounding (the DPs' own rounding is of
the same order).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core.errors import InputError
from ..engine.chain import Layers, logsumexp

#: the largest support listed by default
LIMIT = 10 ** 6


class Paths(NamedTuple):
    """The valid tag sequences of a lattice: ``tags[r]`` tag indices (n,), ``scores[r]``
    their unnormalised log weight log Σ_{state paths of that tag sequence} exp(score)."""
    tags: np.ndarray        # (P, n) int
    scores: np.ndarray      # (P,) float

    @property
    def log_partition(self) -> float:
        """log Z = log Σ_y exp(score(y))."""
        return float(logsumexp(self.scores)) if len(self.scores) else -np.inf

    @property
    def log_probs(self) -> np.ndarray:
        """log Pr(y) = score(y) − log Z, in the order of :attr:`tags`."""
        return self.scores - self.log_partition


def check_size(count: float, limit: int, what: str, noun: str = "elements") -> None:
    """Refuse a support of ``count`` elements above ``limit``, naming both."""
    if count > limit:
        raise InputError(f"enumerate: {what}: {count:.3g} {noun}, above the limit of "
                         f"{limit} (enumeration is an oracle for small inputs; raise limit= "
                         "or use the dynamic programs)")


def path_count(layers: Layers) -> float:
    """The number of complete state paths of finite weight (float: inf if huge)."""
    c = np.ones(1)
    with np.errstate(over="ignore", invalid="ignore"):
        for w in layers.weights:
            c = c @ np.isfinite(w)
        return float(c @ np.isfinite(layers.final))


def layer_paths(layers: Layers, limit: int = LIMIT, what: str = "the lattice") -> Paths:
    """Every complete path of finite weight through ``layers``, grouped by tag
    sequence: score(y) = log Σ_{paths π with tags y} exp(Σ_i w_i[π_{i−1}, π_i]
    + final[π_n]); sorted by tag indices.  States that cannot reach the end are
    pruned first, so no partial path is listed that does not complete."""
    check_size(path_count(layers), limit, what, "state paths")
    alive = [np.isfinite(layers.final)]                  # co-reachable states, backwards
    for w in layers.weights[:0:-1]:
        alive.append((np.isfinite(w) & alive[-1][None, :]).any(axis=1))
    alive = alive[::-1]
    state, score = np.zeros(1, dtype=int), np.zeros(1)
    hist = np.zeros((1, 0), dtype=int)
    for w, lab, ok in zip(layers.weights, layers.labels, alive):
        sub = np.where(ok[None, :], w[state], -np.inf)
        p, q = np.nonzero(np.isfinite(sub))
        score, state = score[p] + sub[p, q], q
        hist = np.column_stack([hist[p], np.asarray(lab)[q]])
    score = score + layers.final[state]
    keep = np.isfinite(score)
    hist, score = hist[keep], score[keep]
    if len(score) == 0:
        return Paths(hist, score)
    uniq, inv = np.unique(hist, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    top = np.full(len(uniq), -np.inf)
    np.maximum.at(top, inv, score)
    total = np.zeros(len(uniq))
    np.add.at(total, inv, np.exp(score - top[inv]))
    return Paths(uniq, top + np.log(total))
