"""The partial-match credit counter P: SemEval-2013's ``partial`` mode as a machine.

SemEval-2013 Task 9.1 (Segura-Bedmar et al. 2013), as nervaluate scores it
(:mod:`fstchunk.evaluation.modes`): each predicted chunk p, in order, takes the first
gold chunk not yet taken that overlaps it; p is *correct* (COR) when that chunk has
p's boundaries (any type), *partial* (PAR) otherwise, *spurious* when there is none.
The credit is COR + ½·PAR, so with x the prediction and y the gold

    P = credit / m(x),   R = credit / m(y),   F_β = (1+β²)·credit / (m(x) + β²·m(y)).

Read left to right over aligned IOBES pairs x_i:y_i the matching is finite-state.
The only gold chunk a later prediction can still reach is the one open at the
current token, and a prediction has either taken a gold chunk or not.  So the
state is q = (gu, ps): gu says whether the open gold chunk is taken (0, 1); ps
is the open prediction's claim: 0 none, 1 a gold chunk that started with it and is
still open, 2 any other.  At each token: gold and prediction starts reset their
part; a prediction and an untaken gold chunk both inside claim each other
(:func:`partial_open`); at each end the prediction scores 2 half-credits if its
claim (ps = 1) ends with it, 1 if it holds a claim, 0 if not (:func:`partial_close`).
Credits are counted in half units, so the count stays an integer: the marker
``<tp=h>`` carries h = 2·COR + PAR.

:func:`partial_credit_transducer` is P over both tapes (``fstchunk grammar print
partial``); the expected value under a lattice composes P, specialised to the fixed
side (:func:`fstchunk.grammars.counting.specialised_pair_acceptor` with
:func:`partial_step`), with the lattice, and :mod:`fstchunk.engine.partial` runs
the same steps as a recursion.

Pitfall: nervaluate counts a gold chunk as overlapped when a prediction covers at
least 1% of its tokens; P counts any shared token.  The two agree unless a gold
chunk is longer than 100 tokens.
"""

from __future__ import annotations

from typing import Sequence

import pynini

from ..core.errors import InputError
from ..schemes import encodings as enc
from ..schemes.tagspace import normalize_types
from . import budget, counting, fsa

#: the claim states q = 3·gu + ps (module doc); 0 is the start and the only final one
STATES = tuple(range(6))


def partial_open(q: int, pred_start: bool, gold_start: bool, pred_in: bool,
                 gold_in: bool) -> int:
    """The claim state after a token's starts and its claim (module doc)."""
    gu, ps = divmod(q, 3)
    if gold_start:
        gu = 0
    if pred_start:
        ps = 0
    if pred_in and gold_in and ps == 0 and gu == 0:
        gu, ps = 1, (1 if pred_start and gold_start else 2)
    return 3 * gu + ps


def partial_close(q: int, pred_end: bool, gold_end: bool) -> tuple[int, int]:
    """(half-credits, claim state) after a token's ends (module doc)."""
    gu, ps = divmod(q, 3)
    credit = 0
    if pred_end:
        credit = 2 if ps == 1 and gold_end else 1 if ps else 0
        ps = 0
    if gold_end:
        ps, gu = (2 if ps == 1 else ps), 0
    return credit, 3 * gu + ps


def partial_step(q: int, pred: tuple[str, str], gold: tuple[str, str]) -> tuple[int, int]:
    """P's transition on one aligned token: ``pred`` and ``gold`` are IOBES
    (prefix, type); returns (half-credits, claim state)."""
    (pp, _), (pg, _) = pred, gold
    q = partial_open(q, pp in "BS", pg in "BS", pp != "O", pg != "O")
    return partial_close(q, pp in "ES", pg in "ES")


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
    top = 2 * bound
    tags = counting.iobes_tags(types)
    f = pynini.Fst(arc_type)
    one = pynini.Weight.one(fsa.weight_type(arc_type))
    state = {(h, q): f.add_state() for h in range(top + 1) for q in STATES}
    f.set_start(state[(0, 0)])
    sink = f.add_state()
    f.set_final(sink)
    for (h, q), s in state.items():
        for la, pa, ta in tags:
            for lb, pb, tb in tags:
                inc, q2 = partial_step(q, (pa, ta), (pb, tb))
                if h + inc <= top:
                    f.add_arc(s, pynini.Arc(la, lb, one, state[(h + inc, q2)]))
        if q == 0:
            f.add_arc(s, pynini.Arc(counting.tp_marker(h), counting.tp_marker(h), one, sink))
    return fsa.attach(f.connect(), counting.marker_symbols(types, top))


def specialised_partial_acceptor(fixed_chunks: Sequence[enc.Chunk], n: int, types=None,
                                 fixed: str = "hypothesis",
                                 arc_type: str = "log64") -> pynini.Fst:
    """P⊠M with one tape fixed to ``fixed_chunks`` (the prediction for ``fixed=
    "hypothesis"``, the gold for ``"reference"``): an acceptor over the other tape's
    IOBES tags followed by ``<tp=h><m=b>``, h the half-credits, b the other tape's
    chunk count."""
    return counting.specialised_pair_acceptor(fixed_chunks, n, types, arc_type,
                                              step=fixed_step(fixed), credit_bound=2 * n)
