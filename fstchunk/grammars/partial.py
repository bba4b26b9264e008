"""The SemEval-2013 credit counters as machines: P for the ``partial`` mode, and the
type-match counter for the ``type`` mode (:func:`type_credit_transducer`); and the
off-by-one counter of the how-to (:func:`near_credit_transducer`).

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

The type-match counter runs :func:`fstchunk.schemes.type_match.type_step`, whose
states hold distances: it is finite only for a bounded length, so its states also
count the tokens since the counter was last at rest (state 0), up to ``bound``.

Pitfall: both are deterministic on pairs, not on their input tape alone (like T), and
count any shared token as overlap (nervaluate: 1% of the gold chunk's tokens).
"""

from __future__ import annotations

import functools
from typing import Sequence

import pynini

from ..core.errors import InputError
from ..schemes import encodings as enc
from ..schemes.matching import STATES, partial_step
from ..schemes.near_match import near_step
from ..schemes.type_match import type_step
from ..schemes.tagspace import normalize_types
from . import budget, counting

#: the type-match counter's state past its length bound (never final)
BEYOND = "beyond"

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


def _bounded_type_step(bound: int):
    """:func:`type_step` with the tokens since state 0 counted, past ``bound`` BEYOND."""
    def step(state, x, y):
        if state == BEYOND:
            return 0, BEYOND
        age, q = (0, 0) if state == 0 else state
        inc, q2 = type_step(q, x, y)
        return inc, 0 if q2 == 0 else (age + 1, q2) if age < bound else BEYOND
    return step


@functools.lru_cache(maxsize=8)
def type_states(types: tuple, bound: int) -> tuple:
    """The bounded type-match step's states reachable from 0 over every IOBES pair
    (BudgetError as soon as they would exceed the state budget)."""
    what = f"the type-match counter over {budget.types_phrase(types)} with length bound {bound}"
    k = len(types)          # B-t:B-u for every t, u opens its own state, at each credit
    budget.check(what, budget.Estimate(k * k * (bound + 1), at_least=True),
                 "use a smaller bound (--max-length)")

    def on_new(count: int) -> None:
        budget.check(what, budget.Estimate(count * (bound + 1), at_least=True),
                     "use a smaller bound (--max-length)")
    return tuple(counting.reachable(types, _bounded_type_step(bound), on_new))


def type_estimate(bound: int, types) -> budget.Estimate:
    """The type-match counter's size: (credits ≤ bound) × its reachable states, every
    tag pair, and the marker sink (found by walking the step, within the budget)."""
    q, g = len(type_states(normalize_types(types), bound)), budget.iobes_tags(len(
        normalize_types(types)))
    return budget.Estimate(q * (bound + 1) + 1, q * (bound + 1) * g * g + bound + 1)


def type_credit_transducer(types=None, bound: int = 4, arc_type: str = "log64") -> pynini.Fst:
    """The type-match counter over IOBES pairs x:y (x the prediction) for sentences of
    up to ``bound`` tokens; at the end (state 0) it writes ``<tp=h>``, h = COR, the
    predicted chunks that a gold chunk of their type overlapping them makes correct."""
    types = normalize_types(types)
    counting.check_bound(bound)
    budget.check(f"the type-match counter over {budget.types_phrase(types)} with length "
                 f"bound {bound}", type_estimate(bound, types),
                 "use a smaller bound (--max-length)")
    return counting.credit_transducer(types, bound, type_states(types, bound),
                                      _bounded_type_step(bound), arc_type)


def near_credit_transducer(types=None, bound: int = 4, arc_type: str = "log64") -> pynini.Fst:
    """The off-by-one counter (:mod:`fstchunk.schemes.near_match`) with credits up to
    2·``bound`` (sentences of up to ``bound`` tokens; ``grammar print near``)."""
    return counting.credit_transducer(normalize_types(types), 2 * bound, None, near_step,
                                      arc_type)
