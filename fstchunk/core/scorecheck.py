"""Score arrays as the API takes them: :func:`score_array` (real, finite, of the right
shape, else one InputError naming the array) and scores that look like probabilities.

Score arrays (``Lattice.from_scores``, score files, the torch layer) are log
potentials: a probability p enters as log p.  Rows that each sum to 1 with every
entry in [0, 1] are a softmax's output passed as it is — read as log potentials they
give a nearly flat distribution (e^0.9 against e^0.1), silently — so they are warned
of (:class:`~fstchunk.core.errors.FstchunkWarning`), not refused: such scores are legal.
"""

from __future__ import annotations

import warnings

import numpy as np

from .errors import FstchunkWarning, InputError

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


def score_array(name: str, a, ndim: int) -> np.ndarray:
    """``a`` as float64 of ``ndim`` dimensions and finite entries, else one InputError
    naming ``name`` (a ragged list, strings, a complex array, a tensor numpy cannot read)."""
    try:
        arr = np.asarray(a)
        if arr.dtype.kind == "c":
            raise InputError(f"{name} holds complex numbers; scores are real log potentials")
        arr = arr.astype(np.float64, copy=False)
    except (TypeError, ValueError, RuntimeError) as e:
        if isinstance(e, InputError):
            raise
        raise InputError(f"{name} is not an array of real numbers: {e}") from None
    if arr.ndim != ndim:
        raise InputError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        where = tuple(int(x) for x in np.argwhere(bad)[0])
        raise InputError(f"{name} has a non-finite score {float(arr[where])} at index {where}")
    return arr


def chain_scores(L: int, emissions, transitions, start=None, end=None, warn: bool = True
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The score arrays of a linear chain over ``L`` tags, checked: (n, L) emissions of
    a sentence of >= 1 token, (L, L) transitions, (L,) start and end (None: 0), each by
    :func:`score_array`; emission rows that look like probabilities warned of (``warn``)."""
    emissions = score_array("emissions", emissions, 2)
    if warn and looks_like_probabilities(emissions):
        warn_probabilities("emissions", stacklevel=4)   # the caller of from_scores
    if emissions.shape[0] == 0:
        raise InputError("empty sentence: emissions has 0 rows (a sentence has >= 1 token)")
    if emissions.shape[1] != L:
        raise InputError(f"emissions has {emissions.shape[1]} columns but there are {L} tags")
    transitions = score_array("transitions", transitions, 2)
    if transitions.shape != (L, L):
        raise InputError(f"transitions has shape {transitions.shape}, expected {(L, L)}")
    start = np.zeros(L) if start is None else score_array("start", start, 1)
    end = np.zeros(L) if end is None else score_array("end", end, 1)
    for name, a in (("start", start), ("end", end)):
        if a.shape != (L,):
            raise InputError(f"{name} has shape {a.shape}, expected {(L,)}")
    return emissions, transitions, start, end

