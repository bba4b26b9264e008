"""Figure 1 of Shimizu & Haas (2006): the two-table dynamic program, and its twins.

:func:`viterbi` is the label table A[q, e, C, P] plus the chunk table B[e, C]
with back-pointers, O(n²·c²·p²); run in the log semiring with an outside pass,
:func:`inside_outside`, the same recursion gives log Z and the marginal of every
part, which the paper lacked (its stated future work) and which train the model
as a CRF.  :func:`chain_layers` writes the same model as a first-order chain over
token states (C, P, starts-a-segment), the chunk layer's :class:`Lattice` form.

Pitfalls:

* All sums are in log space (:func:`fstchunk.engine.chain.logsumexp`); −inf
  marks a forbidden part (O→O), and the outside pass turns its 0·inf into 0.
* The chunk node's features split its score into a start half and an end half;
  that is what makes the chain form exact (the end half is paid on leaving a
  segment).  Decoding itself follows Figure 1.
* An empty sentence, or one where every structure scores −inf, raises
  :class:`~fstchunk.core.errors.InputError`.
"""

from __future__ import annotations

import numpy as np

from ...core.errors import InputError
from ...engine.chain import Layers, logsumexp
from .structure import Parts, Structure


def _reduce(a: np.ndarray, axis: int, mode: str) -> np.ndarray:
    if mode == "max":
        return np.max(a, axis=axis)
    return logsumexp(a, axis=axis)


def _tables(parts: Parts, mode: str):
    """Label table A[q, e, C, P], segment scores S[q, e, C], chunk table B[e, C] and
    incoming scores G[q, C] (best/summed structure up to q, then a C segment starts),
    in the max or log semiring.  Vectorised over q: one step per end position e."""
    n, c, p = parts.shape
    if n == 0:
        raise InputError("empty sentence: a structure needs at least one token")
    neg = -np.inf
    A = np.full((n, n + 1, c, p), neg)
    S = np.full((n, n + 1, c), neg)
    B = np.full((n + 1, c), neg)
    G = np.full((n, c), neg)
    G[0] = 0.0
    for e in range(1, n + 1):
        r = e - 1                                   # the token this step adds
        A[r, e] = parts.node[r]
        if r > 0:
            cand = A[:r, r, :, :, None] + parts.trans[r][None]          # (q, C, P′, P)
            A[:r, e] = _reduce(cand, 2, mode) + parts.node[r][None]
        S[:e, e] = parts.start[:e] + _reduce(A[:e, e], 2, mode) + parts.end[r][None]
        B[e] = _reduce(G[:e] + S[:e, e], 0, mode)
        if e < n:
            G[e] = _reduce(B[e][:, None] + parts.ctrans[e], 0, mode)
    return A, S, B, G


def _finite(total: float) -> float:
    if not np.isfinite(total):
        raise InputError("no structure has a finite score")
    return total


def viterbi(parts: Parts) -> tuple[Structure, float]:
    """Figure 1: the best structure and its score (back-pointers recomputed by argmax)."""
    n = parts.shape[0]
    A, S, B, G = _tables(parts, "max")
    best = _finite(float(np.max(B[n])))
    C, e = int(np.argmax(B[n])), n
    pos = [0] * n
    segs = []
    while e > 0:
        q = int(np.argmax(G[:e, C] + S[:e, e, C]))
        segs.append((C, q, e))
        P = int(np.argmax(A[q, e, C]))
        for r in range(e - 1, q, -1):                  # the label table's back-pointers
            pos[r] = P
            P = int(np.argmax(A[q, r, C] + parts.trans[r, C, :, P]))
        pos[q] = P
        if q > 0:
            C = int(np.argmax(B[q] + parts.ctrans[q][:, C]))
        e = q
    return Structure(tuple(pos), tuple(reversed(segs))), best


def inside_outside(parts: Parts) -> tuple[float, Parts]:
    """log Z and the marginal probability of every part (the outside pass is the
    adjoint of :func:`_tables` in the log semiring: ∂ log Z / ∂ part score)."""
    n, c, p = parts.shape
    A, S, B, G = _tables(parts, "log")
    logZ = _finite(float(logsumexp(B[n], axis=0)))
    m = Parts.zeros(n, c, p)
    dB = np.zeros((n + 1, c))
    dG = np.zeros((n, c))
    dS = np.zeros((n, n + 1, c))
    dB[n] = np.exp(B[n] - logZ)
    with np.errstate(invalid="ignore"):
        for e in range(n, 0, -1):
            if e < n:                                   # G[e] = ⊕_C′ B[e, C′] + ctrans[e, C′, C]
                v = dG[e][None, :] * np.exp(B[e][:, None] + parts.ctrans[e] - G[e][None, :])
                v = np.nan_to_num(v)
                m.ctrans[e] += v
                dB[e] += v.sum(axis=1)
            w = dB[e][None, :] * np.exp(G[:e] + S[:e, e] - B[e][None, :])   # (q, C)
            w = np.nan_to_num(w)
            dG[:e] += w
            dS[:e, e] = w
        dA = np.zeros_like(A)
        for e in range(1, n + 1):                       # S[q, e] = start + ⊕_P A + end
            seg = dS[:e, e]
            m.start[:e] += seg
            m.end[e - 1] += seg.sum(axis=0)
            dA[:e, e] = np.nan_to_num(seg[:, :, None] * np.exp(A[:e, e] - S[:e, e][:, :, None]
                                                               + parts.start[:e, :, None]
                                                               + parts.end[e - 1][None, :, None]))
        for e in range(n, 0, -1):
            r = e - 1
            m.node[r] += dA[:e, e].sum(axis=0)
            if r > 0:
                u = dA[:r, e][:, :, None, :] * np.exp(
                    A[:r, r][:, :, :, None] + parts.trans[r][None]
                    + parts.node[r][None, :, None, :] - A[:r, e][:, :, None, :])
                u = np.nan_to_num(u)
                m.trans[r] += u.sum(axis=0)
                dA[:r, r] += u.sum(axis=3)
    return logZ, m


def chain_layers(parts: Parts, chunk_tag_index: np.ndarray) -> Layers:
    """The model as a first-order chain over token states (C, P, s), s = 1 if the
    token starts a segment; each state is labelled by ``chunk_tag_index[s, C]``
    (its chunk tag; any (2, c) integer labelling works).  The chunk layer's
    :class:`~fstchunk.structures.lattice.Lattice` runs on these layers."""
    n, c, p = parts.shape
    neg = -np.inf
    C_, P_, s_ = np.meshgrid(np.arange(c), np.arange(p), np.arange(2), indexing="ij")
    C_, P_, s_ = C_.ravel(), P_.ravel(), s_.ravel()
    labels = chunk_tag_index[s_, C_]
    first = np.where(s_ == 1, parts.start[0, C_] + parts.node[0, C_, P_], neg)
    weights = [first[None, :]]
    same = C_[:, None] == C_[None, :]
    for r in range(1, n):
        cont = np.where(same, parts.trans[r][C_[:, None], P_[:, None], P_[None, :]], neg)
        new = (parts.end[r - 1][C_][:, None] + parts.ctrans[r][C_[:, None], C_[None, :]]
               + parts.start[r][C_][None, :])
        w = np.where(s_[None, :] == 1, new, cont) + parts.node[r][C_, P_][None, :]
        weights.append(w)
    return Layers(weights, [labels] * n, parts.end[n - 1][C_])
