"""Scores that look like probabilities.

Score arrays (``Lattice.from_scores``, score files, the torch layer) are log
potentials: a probability p enters as log p.  Rows that each sum to 1 with every
entry in [0, 1] are a softmax's output passed as it is — read as log potentials they
give a nearly flat distribution (e^0.9 against e^0.1), silently — so they are warned
of (:class:`~fstchunk.core.errors.FstchunkWarning`), not refused: such scores are legal.
"""

from __future__ import annotations

import warnings

import numpy as np

from .errors import FstchunkWarning

#: how far from 1 a row's sum may be for the row to count as probabilities
TOLERANCE = 1e-6


def looks_like_probabilities(emissions: np.ndarray, tolerance: float = TOLERANCE) -> bool:
    """Whether every row of the (n, L) array sums to 1 within ``tolerance`` and every
    entry is in [0, 1]."""
    e = np.asarray(emissions)
    if e.ndim != 2 or e.size == 0:
        return False
    return bool(e.min() >= 0.0 and e.max() <= 1.0
                and np.abs(e.sum(axis=1) - 1.0).max() <= tolerance)


def warn_probabilities(what: str, log: str = "np.log", stacklevel: int = 3) -> None:
    """The warning for ``what`` (``emissions``), advising ``log`` (``torch.log``)."""
    warnings.warn(f"{what}: every row sums to 1 and every entry is in [0, 1]: these look "
                  f"like probabilities, but scores are log potentials (a probability p "
                  f"scores log p); pass {log}(probabilities)", FstchunkWarning,
                  stacklevel=stacklevel)
