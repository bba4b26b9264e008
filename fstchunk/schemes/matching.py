"""How a predicted chunking's chunks take gold chunks, read token by token: SemEval-2013's
partial-match credit (nervaluate's matching) as steps over aligned boundary events.

Each predicted chunk p, in order, takes the first gold chunk not yet taken that
overlaps it; p is *correct* (COR) when that chunk has p's boundaries (any type),
*partial* (PAR) otherwise, *spurious* when there is none.  Read left to right the
matching is finite-state: the only gold chunk a later prediction can still reach is
the one open at the current token, and a prediction has either taken a gold chunk or
not.  So the state is q = 3·gu + ps: gu says whether the open gold chunk is taken
(0, 1); ps is the open prediction's claim: 0 none, 1 a gold chunk that started with
it and is still open, 2 any other.  At each token: gold and prediction starts reset
their part, and a prediction and an untaken gold chunk both inside claim each other
(:func:`partial_open`); at each end the prediction scores 2 half-credits if its claim
(ps = 1) ends with it, 1 if it holds a claim, 0 if not (:func:`partial_close`).  The
machine P (:mod:`fstchunk.grammars.partial`) and the recursion
(:mod:`fstchunk.engine.partial`) are both built from these steps.  Any counter's
steps read the same tape, :func:`fixed_iobes` of each side, and :func:`walk` runs
one over two chunkings.

Pitfall: any shared token counts as overlap; nervaluate asks for 1% of the gold
chunk's tokens, which differs only for gold chunks over 100 tokens.
"""

from __future__ import annotations

from typing import Sequence

from ..core.errors import InputError
from . import encodings as enc


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


def fixed_iobes(chunks: Sequence[enc.Chunk], n: int) -> list[tuple[str, str]]:
    """(prefix, type) of the IOBES encoding of a fixed sequence's chunks: the tape a
    counter's steps read (``("O", "")`` outside chunks)."""
    return [enc.split_tag(t) if t != "O" else ("O", "")
            for t in enc.chunks_to_tags(chunks, n, "IOBES")]


def walk(step, x: Sequence[enc.Chunk], y: Sequence[enc.Chunk], n: int) -> int:
    """The credits a counter's ``step`` gives prediction chunks ``x`` against gold
    chunks ``y`` of an ``n``-token sentence, walked over their aligned IOBES pairs;
    InputError if it does not end at rest (state 0)."""
    q, credits = 0, 0
    for a, b in zip(fixed_iobes(sorted(x, key=lambda c: c[1]), n),
                    fixed_iobes(sorted(y, key=lambda c: c[1]), n)):
        inc, q = step(q, a, b)
        credits += inc
    if q != 0:
        raise InputError(f"the counter's step ends in state {q!r}, not at rest (0)")
    return credits
