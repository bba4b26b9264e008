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
reachable against the fixed side are visited (merged by the step's ``canon`` where it
has one), and of those only the ones with mass on an arc group's tags, each layer
rescaled and added by one scatter per table.  O(n·Q·S²·n)
time for Q reachable step states (BudgetError where one layer's tables would exceed
:data:`LAYER_BYTES`).  The composition of the specialised counter with
the lattice (:func:`fstchunk.grammars.counting.specialised_pair_acceptor`) is its
machine-built twin (tested).
"""

from __future__ import annotations

import weakref
from typing import Callable

import numpy as np

from ..core.errors import BudgetError, InputError
from ..schemes.matching import fixed_iobes
from .chain import flush, scaled_layers

Step = Callable[[object, tuple, tuple], tuple]
_PREFIX = {(True, True): "S", (True, False): "B", (False, True): "E", (False, False): "I"}


def _iobes_codes(inside, types_of, started, ends) -> list:
    """The IOBES (prefix, type) of a token per (start bit, tag, ...) entry."""
    return [("O", "") if not i else (_PREFIX[(bool(s), bool(e))], t)
            for i, t, s, e in zip(inside.ravel(), types_of.ravel(), started.ravel(),
                                  ends.ravel())]


class _Stepper:
    """The step against the fixed side, its states numbered (0 is state 0) and its
    moves memoised by (state number, fixed pair)."""

    def __init__(self, step: Step, fixed_chunks, n: int, fixed: str, canon=None):
        if fixed not in ("hypothesis", "reference"):
            raise InputError(f"fixed must be 'hypothesis' or 'reference', got {fixed!r}")
        self.step, self.tape = step, fixed_iobes(sorted(fixed_chunks, key=lambda c: c[1]), n)
        self.pred_random = fixed == "reference"
        self.canon = None if canon is None else canon(self.tape)
        self.states, self.number, self.rows = [0], {0: 0}, {}

    def moves(self, qs, i: int, values: list) -> tuple[np.ndarray, np.ndarray]:
        """(credits, next state numbers), each (len(values), len(qs)): the step from
        each state number of ``qs`` at token i on each random pair of ``values``."""
        f = self.tape[i]
        h, nxt = np.zeros((len(values), len(qs))), np.zeros((len(values), len(qs)), int)
        for j, q in enumerate(qs):
            row = self.rows.setdefault((q, f), {})
            for k, v in enumerate(values):
                got = row.get(v)
                if got is None:
                    s = self.states[q]
                    inc, s2 = self.step(s, v, f) if self.pred_random else self.step(s, f, v)
                    if self.canon is not None:
                        s2 = self.canon(s2, i)
                    if s2 not in self.number:
                        self.number[s2] = len(self.states)
                        self.states.append(s2)
                    got = row[v] = (inc, self.number[s2])
                h[k, j], nxt[k, j] = got
        return h, nxt


def _parts(w, opens, closes, src, tix, types) -> list:
    """One layer's arcs split by the random token's IOBES value v (read on the arc
    from its tag into the next) and the next token's start bit s2: [(v, s2, Mᵀ, rows,
    cols, mask)], M the weights of those arcs between the (start bit, tag) ``rows``
    and the tag ``cols`` they join (a few of each: the recursion skips the rest)."""
    S, S2 = w.shape
    st2 = np.concatenate([opens, opens]).astype(int)
    tname = np.array([types[t] if t >= 0 else "" for t in tix[src]], dtype=object)
    shape = (2, S, S2)
    codes = _iobes_codes(np.broadcast_to((tix[src] >= 0)[None, :, None], shape),
                         np.broadcast_to(tname[None, :, None], shape),
                         np.broadcast_to(np.arange(2)[:, None, None], shape),
                         np.broadcast_to(closes[None], shape))
    values = sorted(set(codes))
    code = np.array([values.index(c) for c in codes]).reshape(2 * S, S2)
    W = np.concatenate([w, w])                               # rows (start bit, tag)
    out = []
    for v in range(len(values)):
        for s2 in (0, 1):
            mask = (code == v) & (st2 == s2)
            if mask.any():
                rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
                sub = mask[np.ix_(rows, cols)]
                out.append((values[v], s2, (W[np.ix_(rows, cols)] * sub).T, rows, cols, sub))
    return out


#: one layer's tables (in and out) may take at most this many bytes
LAYER_BYTES = 1 << 30


_PARTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _lattice_parts(lattice) -> tuple[list, tuple]:
    """Per layer (w, opens, :func:`_parts` from layer 1 on), and the last token's
    (IOBES values, final weights): what the recursion reads of the lattice whatever
    the fixed side (cached while the lattice lives: MEU scores many candidates)."""
    got = _PARTS.get(lattice)
    if got is not None:
        return got
    space = lattice.space
    tix, types = space.type_index, space.types
    layers = [(w, opens, None if i == 0 else _parts(w, opens, closes, src, tix, types))
              for i, w, _, _, opens, closes, src, _ in scaled_layers(lattice.chain, space)]
    fin = np.exp(lattice.chain.final - np.max(lattice.chain.final))
    last = lattice.chain.labels[-1]
    S = len(last)
    tname = np.array([types[t] if t >= 0 else "" for t in tix[last]], dtype=object)
    inside = np.broadcast_to(tix[last] >= 0, (2, S))
    codes = _iobes_codes(inside, np.broadcast_to(tname, (2, S)),
                         np.broadcast_to(np.arange(2)[:, None], (2, S)), inside)
    got = _PARTS[lattice] = (layers, (codes, np.concatenate([fin, fin])))
    return got


def _forward(lattice, fixed_chunks, step: Step, fixed: str, tape: bool = False,
             canon=None):
    """The recursion (module doc): the last layer's (states, P, E) before the
    sentence's end, the end's pieces, and with ``tape`` every layer's tables."""
    n, C = lattice.n, lattice.n + 1
    run = _Stepper(step, fixed_chunks, n, fixed, canon)
    parts_of, (end_codes, fin2) = _lattice_parts(lattice)
    layers = []
    for i, (w, opens, parts) in enumerate(parts_of):
        S2 = w.shape[1]
        if i == 0:
            st0 = opens[0].astype(int)
            P = np.zeros((1, 2 * S2, C))
            P[0, st0 * S2 + np.arange(S2), st0] = w[0]
            qs, E = [0], np.zeros_like(P)
            layers.append((w, st0))
            continue
        hs, nxt = run.moves(qs, i - 1, [part[0] for part in parts])
        new, where = np.unique(nxt, return_inverse=True)
        where = where.reshape(nxt.shape)
        Q2 = len(new)
        need = 8.0 * 2 * (len(qs) * P.shape[1] + Q2 * 2 * S2) * C
        if need > LAYER_BYTES:
            raise BudgetError(f"the credit count of this {n}-token sentence needs "
                              f"{need / 2**20:.0f} MiB for one layer's tables ({Q2} "
                              f"counter states at token {i}), over {LAYER_BYTES / 2**20:.0f} "
                              f"MiB", estimate=need, budget=LAYER_BYTES)
        size = Q2 * 2 * S2 * C
        P2, E2 = np.zeros(size), np.zeros(size)
        steps, at, vp, ve, pending = [], [], [], [], 0

        def scatter():                 # one scatter-add per table for the parts so far
            if at:
                where_at = np.concatenate(at)
                np.add(P2, np.bincount(where_at, np.concatenate(vp), size), out=P2)
                np.add(E2, np.bincount(where_at, np.concatenate(ve), size), out=E2)
                at.clear(), vp.clear(), ve.clear()
        held = ((P != 0) | (E != 0)).any(axis=2)                  # (Q, 2S): any mass
        for (_, s2, MT, rows, cols, mask), hk, dst_ids in zip(parts, hs, where):
            if not tape:                # only the states with mass on the part's rows
                live = np.flatnonzero(held[:, rows].any(axis=1))
                hk, dst_ids = hk[live], dst_ids[live]
            h = hk[:, None, None]
            bp = (P if tape else P[live])[:, rows, :C - s2]
            be = (E if tape else E[live])[:, rows, :C - s2] + h * bp
            cell = (dst_ids[:, None] * (2 * S2) + s2 * S2 + cols[None, :]) * C + s2
            at.append((cell[:, :, None] + np.arange(C - s2)).ravel())
            vp.append((MT @ bp).ravel())
            ve.append((MT @ be).ravel())
            steps.append((s2, MT, rows, cols, mask, h, dst_ids))
            pending += at[-1].size
            if pending > size:         # the pending entries stay within a table's size
                scatter()
                pending = 0
        scatter()
        P2, E2 = P2.reshape(Q2, 2 * S2, C), E2.reshape(Q2, 2 * S2, C)
        scale = float(P2.sum())
        if not scale > 0:
            raise InputError("the lattice gives no weight to any valid sequence")
        if tape:
            layers.append((P, E, w, steps, scale))
        qs, P, E = list(new), flush(P2 / scale), flush(E2 / scale)
    # the last token: its chunk, if any, ends with the sentence
    h_end, nxt = run.moves(qs, n - 1, end_codes)                       # (2S, Q)
    return P, E, fin2, h_end.T, (nxt == 0).T, layers


def _close(P, E, fin2, h_end, ok):
    """(Z, H) normalised and their total, from the last layer's tables; InputError
    where a pair does not end in state 0."""
    wgt = fin2[None, :] * ok                                         # (Q, 2S)
    Z = np.einsum("qr,qrc->c", wgt, P)
    H = np.einsum("qr,qrc->c", wgt, E + h_end[:, :, None] * P)
    lost = float(np.einsum("qr,qrc->", fin2[None, :] * ~ok, P))
    total = float(Z.sum())
    if lost > 1e-12 * (total + lost):
        raise InputError(f"the credit counter does not come back to state 0 at the end "
                         f"of some pairs of sequences (mass {lost / (total + lost):.3g} "
                         f"lost): it is not a counter of whole chunkings")
    if not total > 0:
        raise InputError("the lattice gives no weight to any valid sequence")
    return Z / total, H / total, total


def step_count_table(lattice, fixed_chunks, step: Step, fixed: str = "hypothesis",
                     canon=None) -> tuple[np.ndarray, np.ndarray]:
    """(Z, H) of the counter ``step`` (module doc): Z[c] = Pr(m = c), H[c] = E[h ·
    1{m = c}] in the step's credits.  ``fixed``: ``"hypothesis"`` (``fixed_chunks``
    are the prediction, the gold random) or ``"reference"``.  ``canon``, given the
    fixed side's IOBES tape, returns a map (state, token) -> state that merges
    states no later step tells apart (fewer states, the same numbers; as
    :func:`fstchunk.schemes.type_match.prediction_fixed_canon`).  InputError where
    the step does not end in state 0 on some pair (it is not a counter)."""
    P, E, fin2, h_end, ok, _ = _forward(lattice, fixed_chunks, step, fixed, canon=canon)
    Z, H, _ = _close(P, E, fin2, h_end, ok)
    return Z, H


#: the reverse mode's tape may take at most this many bytes
TAPE_BYTES = 1 << 30


def step_count_table_grad(lattice, fixed_chunks, step: Step, Zbar, Hbar,
                          fixed: str = "reference"):
    """Gradient of Σ_c Zbar[c]·Z[c] + Hbar[c]·H[c] ((Z, H) of :func:`step_count_table`)
    with respect to the lattice's log weights: (one (S_i, S_{i+1}) array per layer,
    the array over the final states, (Z, H)).  Reverse mode over the recursion, every
    layer's tables kept (BudgetError beyond :data:`TAPE_BYTES`); the per-layer scales
    cancel in the normalised Z and H and are treated as constants."""
    P, E, fin2, h_end, ok, layers = _forward(lattice, fixed_chunks, step, fixed, tape=True)
    need = sum(2.0 * a[0].nbytes for a in layers[1:]) + 2.0 * P.nbytes
    if need > TAPE_BYTES:
        raise BudgetError(f"the gradient of this {lattice.n}-token sentence's credit count "
                          f"needs {need / 2**20:.0f} MiB of tables, over "
                          f"{TAPE_BYTES / 2**20:.0f} MiB", estimate=need, budget=TAPE_BYTES)
    Z, H, total = _close(P, E, fin2, h_end, ok)
    K = float(Zbar @ Z + Hbar @ H)
    zb, hb = (Zbar - K) / total, Hbar / total
    wgt = fin2[None, :] * ok
    Pb = wgt[:, :, None] * (zb[None, None, :] + h_end[:, :, None] * hb[None, None, :])
    Eb = wgt[:, :, None] * hb[None, None, :]
    g2 = np.einsum("qrc,qrc->r", P, Pb) + np.einsum("qrc,qrc->r", E, Eb)
    S = len(fin2) // 2
    final_grad = g2[:S] + g2[S:]
    C = lattice.n + 1
    grads: list = [None] * len(layers)
    for j in range(len(layers) - 1, 0, -1):
        P, E, w, steps, scale = layers[j]
        Yp, Ye = Pb / scale, Eb / scale
        Pb, Eb = np.zeros_like(P), np.zeros_like(E)
        S2 = w.shape[1]
        dW = np.zeros((2 * w.shape[0], S2))
        for s2, MT, rows, cols, mask, h, dst in steps:
            to = s2 * S2 + cols
            yp, ye = Yp[dst][:, to, s2:], Ye[dst][:, to, s2:]     # (Q, cols, C')
            up = yp + h * ye
            Pb[:, rows, :C - s2] += MT.T @ up
            Eb[:, rows, :C - s2] += MT.T @ ye
            xp = P[:, rows, :C - s2]
            xe = (E[:, rows] + h * P[:, rows])[:, :, :C - s2]
            dW[np.ix_(rows, cols)] += mask * (np.einsum("qbc,qsc->sb", yp, xp) +
                                              np.einsum("qbc,qsc->sb", ye, xe))
        grads[j] = (dW[:w.shape[0]] + dW[w.shape[0]:]) * w
    w, st0 = layers[0]
    S0 = w.shape[1]
    grads[0] = (Pb[0, st0 * S0 + np.arange(S0), st0] * w[0])[None, :]
    return grads, final_grad, (Z, H)
