"""The partial-match credit counter P: SemEval-2013's ``partial`` mode as a machine.

With x the prediction and y the gold, nervaluate's matching
(:mod:`fstchunk.schemes.matching`, whose steps P is built from) gives
credit = COR + ½·PAR, and

    P = credit / m(x),   R = credit / m(y),   F_β = (1+β²)·credit / (m(x) + β²·m(y)).

P reads aligned IOBES pairs x_i:y_i with states (half-credits h, claim state q);
credits are counted in half units so that the count stays an integer: the marker
``<tp=h>`` carries h = 2·COR + PAR.  :func:`partial_credit_transducer` is P over both
tapes (``fstchunk grammar print partial``); the expected value under a lattice
composes P, specialised to the fixed side (:func:`specialised_partial_acceptor`),
with the lattice, and :mod:`fstchunk.engine.partial` runs the same steps as a
recursion.

Pitfall: P is deterministic on pairs, not on its input tape alone (like T), and
counts any shared token as overlap (nervaluate: 1% of the gold chunk's tokens).
"""

from __future__ import annotations

from typing import Sequence

import pynini

from ..core.errors import InputError
from ..schemes import encodings as enc
from ..schemes.matching import STATES, partial_step
from ..schemes.tagspace import normalize_types
from . import budget, counting

def fixed_step(fixed: str):
    """:func:`partial_step` with the fixed tape first: ``"hypothesis"`` (the prediction
    fixed, the gold random) or ``"reference"`` (the gold fixed)."""
    if fixed == "hypothesis":
        return partial_step
    if fixed == "reference":
        return lambda q, f, r: partial_step(q, r, f)
    raise InputError(f"fixed must be 'hypothesis' or 'reference', got {fixed!r}")


def partial_estimate(max_length: int, n_types: int) -> budget.Estimate:
    """P with at most 2K half-credits: states (h, q) and the marker sink, every tag pair."""
    k1, g = 2 * max_length + 1, budget.iobes_tags(n_types)
    return budget.Estimate(len(STATES) * k1 + 1, len(STATES) * k1 * g * g + k1)


def partial_credit_transducer(types=None, bound: int = 4,
                              arc_type: str = "log64") -> pynini.Fst:
    """P over IOBES pairs x:y (x the prediction), states (half-credits h ≤ 2·``bound``,
    claim state); at the end (claim state 0) it writes ``<tp=h>``, h = 2·COR + PAR."""
    types = normalize_types(types)
    counting.check_bound(bound)
    budget.check(f"the partial-credit counter P over {budget.types_phrase(types)} with "
                 f"length bound {bound}", partial_estimate(bound, len(types)),
                 "use a smaller bound (--max-length)")
    return counting.credit_transducer(types, 2 * bound, STATES, partial_step, arc_type)


def specialised_partial_acceptor(fixed_chunks: Sequence[enc.Chunk], n: int, types=None,
                                 fixed: str = "hypothesis",
                                 arc_type: str = "log64") -> pynini.Fst:
    """P⊠M with one tape fixed to ``fixed_chunks`` (the prediction for ``fixed=
    "hypothesis"``, the gold for ``"reference"``): an acceptor over the other tape's
    IOBES tags followed by ``<tp=h><m=b>``, h the half-credits, b the other tape's
    chunk count."""
    return counting.specialised_pair_acceptor(fixed_chunks, n, types, arc_type,
                                              step=fixed_step(fixed), credit_bound=2 * n)
