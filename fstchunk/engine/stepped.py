"""The count table of any credit counter given by a step, under a lattice.

A credit counter reads aligned IOBES pairs x_i:y_i (x the prediction, y the gold)
with a step (state, x_i, y_i) -> (credits, state'), starting and ending in state 0
(T's :func:`fstchunk.grammars.counting.tp_step`, SemEval's partial and type modes in
:mod:`fstchunk.schemes.matching` and :mod:`fstchunk.schemes.type_match`, the
off-by-one counter of :mod:`fstchunk.schemes.near_match`).  For a fixed sequence and
y ~ the lattice (or x ~ the lattice, the gold fixed),

    Z[c] = Pr(m = c),    H[c] = E[h · 1{m = c}],

h the credits and m the random side's chunk count: F_β = (1+β²)·(h/unit) / (m(x) +
β²·m(y)) is linear in h for fixed counts, so (Z, H) give E[F_β] exactly
(:func:`.expectation.from_count_table`).

The recursion runs the step on the lattice's own tags: a token's IOBES prefix needs
whether its chunk started on it (kept as a bit beside the tag) and whether it ends
on it (read on the next layer's arc, or the sentence's end), so the step for token
i is taken on the arcs into token i + 1.  States (step state q, tag, start bit,
count) carry pairs ⟨p, p·h⟩ of the expectation semiring; only the step states
reachable against the fixed side are visited, each layer rescaled.  O(n·Q·S²·n)
time for Q reachable step states.  The composition of the specialised counter with
the lattice (:func:`fstchunk.grammars.counting.specialised_pair_acceptor`) is its
machine-built twin (tested).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import sparse

from ..core.errors import InputError
from ..grammars.counting import fixed_iobes
from .chain import flush, scaled_layers

Step = Callable[[object, tuple, tuple], tuple]
_PREFIX = {(True, True): "S", (True, False): "B", (False, True): "E", (False, False): "I"}


def _iobes_codes(inside, types_of, started, ends) -> list:
    """The IOBES (prefix, type) of a token per (start bit, tag, ...) entry."""
    return [("O", "") if not i else (_PREFIX[(bool(s), bool(e))], t)
            for i, t, s, e in zip(inside.ravel(), types_of.ravel(), started.ravel(),
                                  ends.ravel())]


class _Stepper:
    """The step against the fixed side, memoised: (q, token i, random pair) -> (h, q')."""

    def __init__(self, step: Step, fixed_chunks, n: int, fixed: str):
        if fixed not in ("hypothesis", "reference"):
            raise InputError(f"fixed must be 'hypothesis' or 'reference', got {fixed!r}")
        self.step, self.tape = step, fixed_iobes(sorted(fixed_chunks, key=lambda c: c[1]), n)
        self.pred_random, self.memo = fixed == "reference", {}

    def __call__(self, q, i: int, v: tuple) -> tuple[int, object]:
        f = self.tape[i]
        key = (q, f, v)
        if key not in self.memo:
            self.memo[key] = self.step(q, v, f) if self.pred_random else self.step(q, f, v)
        return self.memo[key]


def step_count_table(lattice, fixed_chunks, step: Step, fixed: str = "hypothesis"
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(Z, H) of the counter ``step`` (module doc): Z[c] = Pr(m = c), H[c] = E[h ·
    1{m = c}] in the step's credits.  ``fixed``: ``"hypothesis"`` (``fixed_chunks``
    are the prediction, the gold random) or ``"reference"``.  InputError where the
    step does not end in state 0 on some pair (it is not a counter)."""
    n, C = lattice.n, lattice.n + 1
    run = _Stepper(step, fixed_chunks, n, fixed)
    space = lattice.space
    tix, types = space.type_index, space.types
    live: dict = {}
    for i, w, _, _, opens, closes, src, dst in scaled_layers(lattice.chain, space):
        S2 = len(dst)
        st2 = opens.astype(int)                                  # (src, dst) start bits
        if i == 0:
            P = np.zeros((2 * S2, C))
            rows = st2[0] * S2 + np.arange(S2)
            P[rows, st2[0]] = w[0]
            live = {0: (P, np.zeros_like(P))}
            continue
        S = len(src)
        inside = np.broadcast_to((tix[src] >= 0)[None, :, None], (2, S, S2))
        tname = np.array([types[t] if t >= 0 else "" for t in tix[src]], dtype=object)
        codes = _iobes_codes(inside, np.broadcast_to(tname[None, :, None], (2, S, S2)),
                             np.broadcast_to(np.arange(2)[:, None, None], (2, S, S2)),
                             np.broadcast_to(closes[None], (2, S, S2)))
        values = sorted(set(codes))
        code = np.array([values.index(c) for c in codes]).reshape(2 * S, S2)
        W = np.concatenate([w, w])                               # rows (start bit, tag)
        parts = []                                               # (v, st', weights)
        for v in range(len(values)):
            for s2 in (0, 1):
                M = W * ((code == v) & (np.concatenate([st2, st2]) == s2))
                if M.any():
                    parts.append((values[v], s2, M.T))
        qs = list(live)
        P, E = (np.stack([live[q][k] for q in qs]) for k in (0, 1))   # (Q, 2S, C)
        moves = [[run(q, i - 1, v) for q in qs] for v, _, _ in parts]
        ids = {q2: j for j, q2 in enumerate(dict.fromkeys(q2 for m in moves for _, q2 in m))}
        P2, E2 = np.zeros((len(ids), 2 * S2, C)), np.zeros((len(ids), 2 * S2, C))
        for (_, s2, MT), m in zip(parts, moves):
            h = np.array([x for x, _ in m], dtype=float)[:, None, None]
            dst = np.array([ids[q2] for _, q2 in m])
            lo = s2 * S2
            gather = sparse.csr_matrix((np.ones(len(dst)), (dst, np.arange(len(dst)))),
                                       shape=(len(ids), len(dst)))
            for A, B in ((P2, P), (E2, E + h * P)):
                A[:, lo:lo + S2, s2:] += (gather @ (MT @ B[:, :, :C - s2]).reshape(
                    len(dst), -1)).reshape(len(ids), S2, C - s2)
        scale = float(P2.sum())
        if not scale > 0:
            raise InputError("the lattice gives no weight to any valid sequence")
        P2, E2 = flush(P2 / scale), flush(E2 / scale)
        live = {q2: (P2[j], E2[j]) for q2, j in ids.items()}
    # the last token: its chunk, if any, ends with the sentence
    fin = np.exp(lattice.chain.final - np.max(lattice.chain.final))
    last = lattice.chain.labels[-1]
    S = len(last)
    tname = np.array([types[t] if t >= 0 else "" for t in tix[last]], dtype=object)
    inside = np.broadcast_to(tix[last] >= 0, (2, S))
    codes = _iobes_codes(inside, np.broadcast_to(tname, (2, S)),
                         np.broadcast_to(np.arange(2)[:, None], (2, S)), inside)
    fin2 = np.concatenate([fin, fin])
    Z, H, lost = np.zeros(C), np.zeros(C), 0.0
    for q, (P, E) in live.items():
        for r, v in enumerate(codes):
            h, q2 = run(q, n - 1, v)
            if q2 != 0:
                lost += fin2[r] * float(P[r].sum())
                continue
            Z += fin2[r] * P[r]
            H += fin2[r] * (E[r] + h * P[r])
    total = float(Z.sum())
    if lost > 1e-12 * (total + lost):
        raise InputError(f"the credit counter does not come back to state 0 at the end "
                         f"of some pairs of sequences (mass {lost / (total + lost):.3g} "
                         f"lost): it is not a counter of whole chunkings")
    if not total > 0:
        raise InputError("the lattice gives no weight to any valid sequence")
    return Z / total, H / total
