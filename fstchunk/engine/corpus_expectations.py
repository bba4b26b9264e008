"""Corpus expectations of a batch of equal-length dense chains: each sentence's E[tp] and
E[m] against its gold chunks, and the gradients of their sums with respect to the
emission, transition, start and end scores, by the first-order expectation semiring
(Li & Eisner 2009) over the transfer operators of :func:`fstchunk.engine.batched.transfer`
(exact at any score scale).  What the corpus-MEU training objective reads
(:mod:`fstchunk.models.objectives`); the per-lattice tp/count tables are
:mod:`.expectation`'s.
"""

from __future__ import annotations

import numpy as np

from .batched import ALL, transfer


def corpus_expectations(em: np.ndarray, chunks, trans: np.ndarray, start: np.ndarray,
                        end: np.ndarray, tabs):
    """E[tp], E[m] of each sentence of a batch and the gradients of Σ E[tp] and Σ E[m]
    with respect to emissions, transitions, start and end scores: (Er (2, B),
    ∇em (2, B, n, L), ∇trans (2, L, L), ∇start (2, L), ∇end (2, L)).

    ``trans``, ``start``, ``end`` are masked log scores (−inf: forbidden),
    ``chunks`` the gold chunks as arrays (sentence, type index, start, end),
    ``tabs`` the scheme's (cont, opens, closes, type_index).

    ∇E[r] = E[r·φ] − E[r]·E[φ] by the first-order expectation semiring (Li &
    Eisner 2009), batched, over the transfer operators K_i of
    :func:`fstchunk.engine.batched.transfer` (â_i = â_{i−1}·K_i, b̂_{i−1} = K_i·b̂_i):
    scaled where that is exact, the gauged stochastic chain otherwise, so any
    finite scores give the right numbers (gauge invariance: both give the same
    normalised expectations and gradients).
    r = m(y) is arc-local (a chunk starts on an arc).  r = tp(y) is not: gold
    chunk (X, s, e) is in y iff the arc into s opens a chunk of type X, the arcs
    into s+1..e−1 continue it and the arc into e closes it (or the sentence
    ends).  Its matched forward mass μ̂ and backward mass ν̂ (by tag) give
    Pr(chunk) = Σ_t μ̂_k(t)·ν̂_k(t) for any k in [s, e−1]; the chunk's reward
    enters the forward pass on its closing arc and the backward pass on its
    opening arc, and the arcs and tokens inside its event get the straddling
    term μ̂·ν̂ directly.  Channels: 0 = tp, 1 = m.
    """
    cont, startT, endT, tix = tabs
    fb = transfer(em, trans, start, end)
    a, bt = fb.a, fb.bt
    B, n, L = a.shape
    post = a * bt
    Mc, Mst, Mend = cont[:L], startT[:L], endT[:L]     # arc masks: continues, opens, closes
    opened = np.empty((B, n, L))                      # forward mass into token k on an opening arc
    opened[:, 0] = fb.start * startT[L]
    opened[:, 1:] = fb.fwd(a[:, :-1], ALL, slice(1, None), Mst)
    sent, typ, s, e = chunks
    Nc = len(sent)
    lens = e - s
    J = int(lens.max()) if Nc else 0
    last = lens - 1
    inner = e < n
    tmask = (tix[None, :] == typ[:, None]).astype(float)
    mu, nu = np.zeros((Nc, J, L)), np.zeros((Nc, J, L))
    if Nc:
        mu[:, 0] = opened[sent, s] * tmask
        for j in range(1, J):
            act = np.flatnonzero(lens > j)
            k = s[act] + j
            mu[act, j] = fb.fwd(mu[act, j - 1], sent[act], k, Mc)
        ee = np.minimum(e, n - 1)
        nu[np.arange(Nc), last] = tmask * np.where(
            inner[:, None], fb.bwd(bt[sent, ee], sent, ee, Mend), fb.end[sent])
        for j in range(J - 2, -1, -1):
            act = np.flatnonzero(last > j)
            k = s[act] + j
            nu[act, j] = fb.bwd(nu[act, j + 1], sent[act], k + 1, Mc)
    E_tp = np.bincount(sent, weights=(mu[:, 0] * nu[:, 0]).sum(axis=1), minlength=B) \
        if Nc else np.zeros(B)
    E_m = (opened * bt).sum(axis=(1, 2))
    Er = np.stack([E_tp, E_m])                         # (2, B)

    CL, OP = np.zeros((B, n, L)), np.zeros((B, n, L))  # closings, openings of gold chunks
    if Nc:
        i = np.flatnonzero(inner)
        np.add.at(CL, (sent[i], e[i]), fb.fwd(mu[i, last[i]], sent[i], e[i], Mend))
        o = np.flatnonzero(s >= 1)
        np.add.at(OP, (sent[o], s[o] - 1), fb.bwd(nu[o, 0], sent[o], s[o], Mst))
    opening = fb.bwd(bt[:, 1:], ALL, slice(1, None), Mst)   # backward mass out of k, opening
    ar = np.zeros((2, B, n, L))
    ar[1, :, 0] = opened[:, 0]
    for k in range(1, n):
        x = fb.fwd(ar[:, :, k - 1], ALL, k)
        x[0] += CL[:, k]
        x[1] += opened[:, k]
        ar[:, :, k] = x
    br = np.zeros((2, B, n, L))
    for k in range(n - 2, -1, -1):
        x = fb.bwd(br[:, :, k + 1], ALL, k + 1)
        x[0] += OP[:, k]
        x[1] += opening[:, k]
        br[:, :, k] = x

    tok = ar * bt[None] + a[None] * br
    for j in range(J):                                 # tokens inside a gold chunk
        act = np.flatnonzero(lens > j)
        np.add.at(tok[0], (sent[act], s[act] + j), mu[act, j] * nu[act, j])
    gtok = tok - Er[:, :, None, None] * post[None]
    gT = np.zeros((2, L, L))
    A, R = a[:, :-1], bt[:, 1:]
    nxt = slice(1, None)
    for ch in (0, 1):
        gT[ch] = (fb.pairs(ar[ch, :, :-1] - A * Er[ch][:, None, None], R, ALL, nxt)
                  + fb.pairs(A, br[ch, :, 1:], ALL, nxt))
    gT[1] += Mst * fb.pairs(A, R, ALL, nxt)
    if Nc:                                             # arcs inside a gold chunk's event
        o = np.flatnonzero(s >= 1)
        gT[0] += Mst * fb.pairs(a[sent[o], s[o] - 1], nu[o, 0], sent[o], s[o])
        for j in range(1, J):
            act = np.flatnonzero(lens > j)
            k = s[act] + j
            gT[0] += Mc * fb.pairs(mu[act, j - 1], nu[act, j], sent[act], k)
        i = np.flatnonzero(inner)
        gT[0] += Mend * fb.pairs(mu[i, last[i]], bt[sent[i], e[i]], sent[i], e[i])
    return Er, gtok, gT, gtok[:, :, 0].sum(axis=1), gtok[:, :, -1].sum(axis=1)
