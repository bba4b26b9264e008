"""The expectation-semiring count tables as they were before the windowed rewrite.

Copied verbatim from git commit 2857aae (``fstchunk/engine/expectation.py``:
``_tp_rules``, ``_terms``, ``_tp_forward``, ``tp_count_table``,
``tp_count_table_grad``) with the scaled-layer helpers of
``fstchunk/engine/chain.py`` they read, so that the package's recursion can change
while this stays the old one: every layer over all n + 1 counts, and the reverse
mode over a tape of every layer's (S, 2, n + 1) tables (O(n²·S) memory: 2.7 GB for
one 2000-token sentence of 21 tags).  The tests hold the new recursion to it
(tests/test_engine_expectation.py).
"""

from __future__ import annotations

import numpy as np

from fstchunk.core.errors import InputError

TINY = 1e-280


def flush(a: np.ndarray) -> np.ndarray:
    a[a < TINY] = 0.0
    return a


def pair_table(table: np.ndarray, lab_src: np.ndarray, lab_dst: np.ndarray) -> np.ndarray:
    rows = np.where(lab_src < 0, table.shape[0] - 1, lab_src)
    return table[rows][:, lab_dst]


def scaled_layers(layers, space):
    cont, start, end = space.cont, space.opens, space.closes
    lay = layers
    src = np.array([-1])
    for i, w in enumerate(lay.weights):
        dst = lay.labels[i]
        mx = np.max(w)
        yield (i, flush(np.exp(w - mx)), mx, pair_table(cont, src, dst), pair_table(start, src, dst),
               pair_table(end, src, dst), src, dst)
        src = dst


def _tp_rules(lattice, fixed_chunks):
    """Per layer, the linear terms of the recursion: (w, [(m_src, m_dst, shift, mask,
    inc_mask or None)]) with w the scaled layer weights (see :func:`tp_count_table`)."""
    n = lattice.n
    tix, types = lattice.space.type_index, lattice.space.types
    fs = np.full(n, -2)                     # type index of a fixed chunk starting at j
    fe = np.zeros(n + 1, bool)              # fixed chunk ends at token j
    for t, s, e in fixed_chunks:
        fs[s] = types.index(t) if t in types else -3     # -3: a type the lattice lacks
        fe[e - 1] = True
    dense = lattice.scores is not None      # every layer after the first has the same tables
    cache: dict = {}
    for j, w, mx, _, start, end, src, dst in scaled_layers(lattice.chain, lattice.space):
        fixed_ended = bool(j > 0 and fe[j - 1])
        key = (j == 0, int(fs[j]), fixed_ended)
        terms = cache.get(key) if dense else None
        if terms is None:
            terms = _terms(start, end, tix[dst], fs[j], fixed_ended)
            cache[key] = terms
        yield w, mx, terms


def _terms(start, end, dst_types, fixed_start_type, fixed_ended):
    match_start = start & (dst_types[None, :] == fixed_start_type)
    if fixed_ended:
        rules = {0: (match_start, None), 1: (match_start, end)}
    else:
        rules = {0: (match_start, None), 1: (~end, None)}
    terms = []
    for m_src, (to_one, inc) in rules.items():
        for m_dst, sel in ((1, to_one), (0, ~to_one)):
            for shift, sh in ((1, start), (0, ~start)):
                mask = sel & sh
                if mask.any():
                    terms.append((m_src, m_dst, shift, mask,
                                  None if inc is None else inc & mask))
    return terms


def _tp_forward(lattice, fixed_chunks, tape: list | None = None):
    C = lattice.n + 1
    P = np.zeros((1, 2, C))
    E = np.zeros((1, 2, C))
    P[0, 0, 0] = 1.0
    for w, _, terms in _tp_rules(lattice, fixed_chunks):
        S = w.shape[1]
        P2 = np.zeros((S, 2, C))
        E2 = np.zeros((S, 2, C))
        for m_src, m_dst, shift, mask, inc in terms:
            M = w * mask
            hi = C - shift
            P2[:, m_dst, shift:] += M.T @ P[:, m_src, :hi]
            E2[:, m_dst, shift:] += M.T @ E[:, m_src, :hi]
            if inc is not None:
                E2[:, m_dst, shift:] += (w * inc).T @ P[:, m_src, :hi]
        scale = P2.sum()
        if not scale > 0:
            raise InputError("the lattice gives no weight to any valid sequence")
        if tape is not None:
            tape.append((P, E, w, terms, scale))
        P, E = flush(P2 / scale), flush(E2 / scale)
    fin = np.exp(lattice.chain.final - np.max(lattice.chain.final))
    Z = np.einsum("smc,s->c", P, fin)
    T = np.einsum("smc,s->c", E, fin) + P[:, 1, :].T @ fin     # open matches close at n
    total = Z.sum()
    if not total > 0:
        raise InputError("the lattice gives no weight to any valid sequence")
    return Z / total, T / total, (P, E, fin, total)


def tp_count_table(lattice, fixed_chunks) -> tuple[np.ndarray, np.ndarray]:
    """(Z, T): Z[c] = Pr(m(y) = c), T[c] = E[tp · 1{m(y) = c}] against ``fixed_chunks``.

    ``fixed_chunks`` are (type, start, end) of a sequence of the lattice's length;
    y ranges over the lattice's distribution.  States (tag, match, c) carry pairs
    ⟨p, p·tp⟩ of the expectation semiring; the match logic is T's
    (:func:`fstchunk.grammars.counting.tp_step`) on chunk boundaries.
    """
    Z, T, _ = _tp_forward(lattice, fixed_chunks)
    return Z, T


def tp_count_table_grad(lattice, fixed_chunks, Zbar, Tbar):
    """Gradient of Σ_c Zbar[c]·Z[c] + Tbar[c]·T[c] (Z, T of :func:`tp_count_table`)
    with respect to the lattice's log weights: (list of (S_i, S_{i+1}) arrays, one per
    layer; array over the final states; and (Z, T) themselves).  ``Zbar`` may be a
    function (Z, T) -> (Zbar, Tbar).  Reverse mode over the same recursion; the
    per-layer scales cancel in Z and T, so they are treated as constants."""
    tape: list = []
    Zn, Tn, (P, E, fin, total) = _tp_forward(lattice, fixed_chunks, tape)
    if callable(Zbar):                   # adjoints that depend on the table itself
        Zbar, Tbar = Zbar(Zn, Tn)
    K = float(Zbar @ Zn + Tbar @ Tn)
    zb = (Zbar - K) / total
    tb = Tbar / total
    Pb = fin[:, None, None] * zb[None, None, :] + np.zeros_like(P)
    Pb[:, 1, :] += fin[:, None] * tb[None, :]
    Eb = np.broadcast_to(fin[:, None, None] * tb[None, None, :], E.shape).copy()
    finb = (np.einsum("smc,c->s", P, zb) + np.einsum("smc,c->s", E, tb) + P[:, 1, :] @ tb)
    final_grad = finb * fin
    C = lattice.n + 1
    grads = []
    for P, E, w, terms, scale in reversed(tape):
        P2b, E2b = Pb / scale, Eb / scale
        Pb = np.zeros_like(P)
        Eb = np.zeros_like(E)
        wb = np.zeros_like(w)
        for m_src, m_dst, shift, mask, inc in terms:
            hi = C - shift
            M = w * mask
            yp, ye = P2b[:, m_dst, shift:], E2b[:, m_dst, shift:]
            xp, xe = P[:, m_src, :hi], E[:, m_src, :hi]
            wb += mask * (xp @ yp.T + xe @ ye.T)
            Pb[:, m_src, :hi] += M @ yp
            Eb[:, m_src, :hi] += M @ ye
            if inc is not None:
                wb += inc * (xp @ ye.T)
                Pb[:, m_src, :hi] += (w * inc) @ ye
        grads.append(wb * w)
    return grads[::-1], final_grad, (Zn, Tn)
