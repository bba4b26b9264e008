"""A chunk one boundary off: credit for a predicted chunk whose type and one boundary
are a gold chunk's and whose other boundary is one token off, read token by token.

A predicted chunk p = (t, s, e) earns 2 credits (one point) when the gold has it, 1
(half a point) when the gold has a chunk of type t at [s, e ± 1) or [s ± 1, e), 0
otherwise; a prediction earns its best, and gold chunks are not used up (two
predictions may take half a point from the same gold chunk).  Read over aligned IOBES
pairs (x the prediction, y the gold) this is finite-state: :func:`near_step` keeps,
for the open prediction, which gold chunks could still be one boundary off — one that
started with it (still open, or ended one token ago), one that started a token
before it, one that may start a token after it — plus a pending check for a gold
chunk that started with the prediction and may end one token after it, and the type
of a gold chunk that started on the previous token.  The counter is
:func:`fstchunk.grammars.counting.credit_transducer` of this step, and the utility
:class:`fstchunk.decoding.credit_utility.CreditUtility` with ``unit=2``
(:func:`fstchunk.decoding.credit_utility.near_boundaries`).
"""

from __future__ import annotations

#: the open prediction's candidates: a gold chunk of its type that started with it
#: (still open / ended on the previous token), started one token before it, may start
#: one token after it (its first token), started one token after it
SAME, SAME_ENDED, EARLY, LATE_NEXT, LATE = "same", "same-ended", "early", "late?", "late"


def near_step(state, x: tuple[str, str], y: tuple[str, str]) -> tuple[int, object]:
    """(credits, state') on the IOBES pair x:y of (prefix, type); the state is 0 or
    (pending, candidates, type of a gold chunk begun on the previous token)."""
    pending, cand, began = (False, frozenset(), None) if state == 0 else state
    (px, tx), (py, ty) = x, y
    credit = 1 if pending and py == "E" else 0     # started with it, one token longer
    pending, out = False, frozenset()
    if px == "S":
        if py == "S" and ty == tx:
            credit += 2
        elif py == "E" and began == tx:
            credit += 1                            # began a token before, same end
        elif py == "B" and ty == tx:
            pending = True                         # may end one token after it
    elif px == "B":
        opened = {SAME} if py == "B" and ty == tx else \
            {SAME_ENDED} if py == "S" and ty == tx else set()
        if py == "I" and began == tx:
            opened.add(EARLY)
        if py in ("O", "E", "S"):
            opened.add(LATE_NEXT)
        out = frozenset(opened)
    elif px == "E":
        if SAME in cand and py == "E":
            credit += 2
        elif SAME_ENDED in cand or (cand & {EARLY, LATE} and py == "E") or \
                (LATE_NEXT in cand and py == "S" and ty == tx):
            credit += 1
        elif SAME in cand and py == "I":
            pending = True
    elif px == "I":
        kept = set()
        if SAME in cand:
            kept.add(SAME if py == "I" else SAME_ENDED)
        if EARLY in cand and py == "I":
            kept.add(EARLY)
        if (LATE_NEXT in cand and py == "B" and ty == tx) or (LATE in cand and py == "I"):
            kept.add(LATE)
        out = frozenset(kept)
    nxt = (pending, out, ty if py == "B" else None)
    return credit, (0 if nxt == (False, frozenset(), None) else nxt)

