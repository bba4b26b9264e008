"""SemEval-2013's ``type`` mode read token by token: how a predicted chunk takes a gold
chunk of its type (nervaluate 1.2's matching, :func:`fstchunk.evaluation.modes.match`).

Each predicted chunk p, in order, looks at the gold chunks not yet taken that overlap
it.  It is *correct* (COR) when one has its type, and takes the closest of those (least
|Δstart| + |Δend|, the first on ties); else it takes the first overlapping one of
another type (*incorrect*); else it is spurious.  For overlapping chunks |Δstart| +
|Δend| = |p| + |g| − 2·overlap, so the closest has the largest σ(g) = overlap(p, g) −
(tokens of g outside p).

Read left to right, the choice matters for later predictions only through the gold
chunk still open at p's end g_r (every other gold chunk p overlaps has ended).  With
σ* the best σ of p's other same-type candidates, p takes g_r iff σ(g_r) > σ*, and
σ(g_r) falls by one for each token g_r runs on after p: so at p's end the state holds
a budget r = σ(g_r) − σ* − 1, spent one per further token of g_r; g_r is p's when it
ends with r ≥ 0.  A prediction that starts and ends inside such a held g_r takes it
if p does not (its credit waits for g_r's end); any later one inside g_r gets
nothing from it.  So the state is (open gold chunk: type, tokens so far, free / taken
/ held (r, follower); open prediction: type, σ*, whether an earlier candidate of
another type exists, σ of the open gold chunk), whose counters are bounded by the
sentence's length: finite for sentences of bounded length, and small with one side
fixed (:mod:`fstchunk.engine.stepped`).

With the prediction fixed, :func:`prediction_fixed_canon` merges states no later
step tells apart: σ* only meets σ(g_r) at p's end and the budget r only the tokens
left after it, so σ* is clamped to a window of about min(tokens left in p, tokens
after p) values, and the states of a long predicted chunk grow as its length, not its
square.

Pitfall: any shared token counts as overlap; nervaluate asks for 1% of the gold
chunk's tokens, which differs only for gold chunks over 100 tokens.
"""

from __future__ import annotations

from typing import Callable

FREE, TAKEN = "free", "taken"


def type_step(state, x: tuple[str, str], y: tuple[str, str]) -> tuple[int, object]:
    """(COR credits, state') on the aligned IOBES pair x:y of (prefix, type), x the
    prediction and y the gold; the state is 0 (nothing open) or (gold, prediction)
    as in the module doc."""
    g, p = (None, None) if state == 0 else state
    (px, tx), (py, ty) = x, y
    credit = 0
    # starts, and the open gold chunk running on
    if py in ("B", "S"):
        g = [ty, 0, FREE]
    elif g is not None:
        g = list(g)
        if isinstance(g[2], tuple):                     # held: one more token after p
            r, fol = g[2]
            if r == 0:                                  # the earlier prediction lost it
                credit += fol == "same"
                g[2] = TAKEN if fol else FREE
            else:
                g[2] = (r - 1, fol)
    if px in ("B", "S"):
        before = None if g is None or py in ("B", "S") or not _open_to(g) else -g[1]
        p = [tx, None, False, before]
    elif p is not None:
        p = list(p)
    # the token itself
    if g is not None:
        g[1] += 1
        if p is not None and _open_to(g):              # a shared token: σ grows
            p[3] = (0 if p[3] is None else p[3]) + 1
    # ends: the gold chunk's first, then the prediction's
    if g is not None and py in ("E", "S"):
        if isinstance(g[2], tuple):
            pass                                        # the earlier prediction took it
        elif g[2] == FREE and p is not None and p[3] is not None:
            if g[0] == p[0]:
                p[1] = p[3] if p[1] is None else max(p[1], p[3])
            else:
                p[2] = True
        g = None
        if p is not None:
            p[3] = None
    if p is not None and px in ("E", "S"):
        same = p[1] is not None
        if g is not None and p[3] is not None:          # g runs on after p
            if isinstance(g[2], tuple):                 # held: p follows, waits for g
                g[2] = (g[2][0], "same" if g[0] == p[0] else "other")
            elif g[0] == p[0]:
                credit += 1
                if not same:
                    g[2] = TAKEN
                elif p[3] - p[1] - 1 >= 0:
                    g[2] = (p[3] - p[1] - 1, None)
            else:
                credit += same
                if not same and not p[2]:
                    g[2] = TAKEN
        else:
            credit += same
        p = None
    return credit, _pack(g, p)


def _open_to(g) -> bool:
    """Whether a later prediction may still take the open gold chunk ``g``."""
    return g[2] == FREE or (isinstance(g[2], tuple) and g[2][1] is None)


def _pack(g, p):
    """The state as a hashable value, with what no later step reads dropped."""
    if g is not None and not _open_to(g):
        g[1] = 0                                        # its length matters no more
    if g is None and p is None:
        return 0
    if p is not None and p[1] is not None:
        p[2] = False                                    # correct whatever else it meets
    if p is not None and g is not None and p[3] is not None and g[0] != p[0]:
        p[3] = 0                                        # another type: no distance read
    return (None if g is None else tuple(g), None if p is None else tuple(p))


def prediction_fixed_canon(tape: list) -> Callable[[object, int], object]:
    """For a fixed prediction read as ``tape`` (its IOBES (prefix, type) per token):
    canon(state, i) maps the :func:`type_step` state after token i to one that every
    continuation of the gold side scores the same (module doc):

    - the open gold chunk's length is read only by a later prediction of its type
      starting inside it, and its type only against the types of the open and later
      predictions: the length is dropped where the tape has no later prediction of
      its type, and the type too (None) where the open prediction is not of it;
    - with the prediction p open, ``left`` tokens of it to come and ``rest`` after
      it, no gold chunk reaches σ > U at p's end, U = max(left, σ_now + left) (σ_now
      of the open gold chunk g when g is free and of p's type), so σ* ≥ U all lose to
      every g_r: σ* := min(σ*, U);
    - with such a g, σ* ≤ L = σ_now + min(0, left − 1 − rest) all lose to g if g ends
      inside p (its σ then exceeds σ_now) and give it a budget r ≥ rest if it runs on
      past p, which no later token spends; every candidate begun after token i has
      σ ≥ 1, so without g L = −rest, and with g held by an earlier prediction (it may
      come free inside p, or not) L = min(−rest, σ_now + min(0, left − 1 − rest)):
      σ* := max(σ*, L)."""
    n = len(tape)
    end, later = [0] * n, [frozenset()] * n
    last, types = n, frozenset()
    for i in range(n - 1, -1, -1):
        later[i] = types
        if tape[i][0] in ("B", "S"):
            types = types | {tape[i][1]}
        if tape[i][0] in ("E", "S"):
            last = i
        end[i] = last

    def canon(state, i: int):
        if state == 0:
            return state
        g, p = state
        if g is not None and g[0] not in later[i]:
            g = (g[0] if p is not None and g[0] == p[0] else None, 0, g[2])
        if p is not None and p[1] is not None:
            tx, best, other, sigma = p
            left, rest = end[i] - i, n - 1 - end[i]
            top, low = left, -rest
            if g is not None and g[0] == tx and sigma is not None and _open_to(g):
                top, near = max(left, sigma + left), sigma + min(0, left - 1 - rest)
                low = near if g[2] == FREE else min(low, near)
            p = (tx, min(max(best, low), top), other, sigma)
        return (g, p)
    return canon
