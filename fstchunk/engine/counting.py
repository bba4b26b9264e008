"""Counting recursions: chunk marginals by chunk count (the lattice ∘ M).

:func:`chunk_count_marginals` gives Pr((type, s, e) ∈ chunks(y), m(y) = m) for every
span and count, by a counting forward-backward over (state, chunk starts so far):
the lattice composed with the chunk counter M (Jansche §18), read on chunk
boundaries from the tag space's tables — O(T·n³) memory, for short sentences
(exact MEU's exact basis) and as the tests' reference; :func:`count_distribution`
gives Pr(m(y) = m) streamed.  Chunk marginals without the count dimension come
from :mod:`.spans`.

``lattice`` is any object with ``chain`` (:class:`.chain.Layers`, stochastic: :func:`.chain.gauge`), ``space``
(:class:`fstchunk.schemes.tagspace.TagSpace`) and ``n`` — a :class:`fstchunk.structures.lattice.Lattice`.

Pitfall: the count dimension makes the tables O(n²) per state; values are kept
scaled per layer (log scales carried apart), and sub-:data:`.chain.TINY` values are
flushed to zero (subnormals make BLAS 100x slower).
"""

from __future__ import annotations

import numpy as np

from ..core.errors import InputError

from .chain import flush, scaled_layers
from .tables import chain_arrays


def count_distribution(lattice) -> np.ndarray:
    """Pr(m(y) = m) for m = 0..n: the counting forward of :func:`_count_steps`,
    streamed on the window of counts that hold mass (a layer moves count c to c or
    c + 1; counts whose scaled mass fell below :data:`.chain.TINY` are trimmed off
    the ends), closed by the final weights: O(S·width) memory, O(n·S²·width) time,
    width ≤ n + 1 (a few hundred counts for a 2000-token CRF sentence)."""
    ca = chain_arrays(lattice)
    C = lattice.n + 1
    a, lo = np.ones((1, 1)), 0                # a[:, j]: count lo + j
    for wn, wo in zip(ca.Wn, ca.Wo):
        wd = a.shape[1]
        wd2 = min(wd + 1, C - lo)
        nxt = np.zeros((wn.shape[1], wd2))
        nxt[:, :wd] = wn.T @ a
        h = min(wd, wd2 - 1)
        nxt[:, 1:1 + h] += wo.T @ a[:, :h]
        z = nxt.sum()
        if not z > 0:
            raise InputError("the lattice gives no weight to any valid sequence")
        a = flush(nxt / z)
        live = np.flatnonzero(a.any(axis=0))
        if live[0] > 0 or live[-1] + 1 < wd2:
            a = a[:, live[0]:live[-1] + 1].copy()
            lo += int(live[0])
    p = np.zeros(C)
    p[lo:lo + a.shape[1]] = ca.fin @ a
    return p / p.sum()


def _count_steps(lattice):
    """The counting forward over (state, chunk starts so far) on the stochastic chain,
    one layer at a time: yields alpha (S_{i+1}, n+1), scaled to sum 1, and its log
    scale (alpha_true = alpha · exp(logscale)); columns beyond i+1 starts stay 0."""
    ca = chain_arrays(lattice)
    C = lattice.n + 1
    a = np.zeros((1, C))
    a[0, 0] = 1.0
    ls = 0.0
    for i, (wn, wo) in enumerate(zip(ca.Wn, ca.Wo)):
        hi = min(i + 2, C)
        nxt = np.zeros((wn.shape[1], C))
        nxt[:, :hi] = wn.T @ a[:, :hi]
        nxt[:, 1:hi] += wo.T @ a[:, :hi - 1]
        z = nxt.sum()
        if not z > 0:
            raise InputError("the lattice gives no weight to any valid sequence")
        a = flush(nxt / z)
        ls += np.log(z)
        yield a, ls


def _count_forward(lattice):
    """All layers of :func:`_count_steps`: (alphas, log scales)."""
    steps = list(_count_steps(lattice))
    return [a for a, _ in steps], [ls for _, ls in steps]


def _count_backward(lattice):
    """Scaled backward: beta[i] (S_{i+1}, C) = weight of the suffix after token i with
    c chunk starts in tokens i+1.., and its log scale."""
    lay = lattice.chain
    C = lattice.n + 1
    layers = list(scaled_layers(lattice.chain, lattice.space))
    fmax = np.max(lay.final)
    b = np.zeros((len(lay.final), C))
    b[:, 0] = np.exp(lay.final - fmax)
    ls = fmax
    betas, scales = [b], [ls]
    for _, w, mx, _, start, _, _, _ in reversed(layers[1:]):
        prev = (w * ~start) @ b
        prev[:, 1:] += (w * start) @ b[:, :-1]
        z = prev.sum()
        b = flush(prev / z)
        ls += np.log(z) + mx
        betas.append(b)
        scales.append(ls)
    return betas[::-1], scales[::-1]


def chunk_count_marginals(lattice) -> np.ndarray:
    """Pr((type, s, e) ∈ chunks(y) and m(y) = m), shape (len(types), n, n+1, n+1),
    indexed [type, s, e, m], types in ``lattice.space.types`` order.

    The chunk is entered by a start transition at s, continued inside, left by an
    end transition at e (or the sentence end); chunk starts before s come from a
    counting forward pass, those from e on from a counting backward pass, and the
    two count vectors are convolved (the exit transition may itself start a chunk).
    """
    n, C = lattice.n, lattice.n + 1
    types = lattice.space.types
    tix = lattice.space.type_index
    out = np.zeros((len(types), n, n + 1, C))
    if not (tix >= 0).any():
        return out
    alphas, ascale = _count_forward(lattice)
    betas, bscale = _count_backward(lattice)
    logz = ascale[-1] + np.log(np.sum(alphas[-1] * np.exp(lattice.chain.final -
                                                          np.max(lattice.chain.final))[:, None]))
    logz += np.max(lattice.chain.final)
    layers = list(scaled_layers(lattice.chain, lattice.space))
    fmax = np.max(lattice.chain.final)
    fin = np.exp(lattice.chain.final - fmax)
    idx = np.arange(C)[None, :] - np.arange(C)[:, None]          # Toeplitz offsets m - a
    # Gs[r, s, :]: weight of paths that entered a chunk at token s and are still in it
    # at state r (the state fixes the chunk's type), by chunk count so far; lg[s]
    # its log scale.  All open starts advance together, one layer at a time.
    # Pitfall: keep this (state, start, count) layout contiguous; numpy's batched
    # matmul on transposed views falls back to a loop 50x slower than BLAS.
    Gs = None
    lg = np.zeros(0)
    for e in range(1, n + 1):
        s = e - 1                                        # open a chunk at token s
        _, w, mx, _, st, _, _, dst = layers[s]
        if s == 0:
            a_prev = np.zeros((1, C))
            a_prev[0, 0] = 1.0
        else:
            a_prev = alphas[s - 1]
        g = np.zeros((len(dst), 1, C))
        g[:, 0, 1:] = ((w * st).T @ a_prev)[:, :-1]      # the chunk itself counts
        Gs = g if Gs is None else np.concatenate([Gs, g], axis=1)       # (S, e, C)
        lg = np.append(lg, (0.0 if s == 0 else ascale[s - 1]) + mx)
        onehot = (tix[dst][:, None] == np.arange(len(types))[None, :]).astype(float)
        if e == n:
            val = np.tensordot(onehot * fin[:, None], Gs, axes=([0], [0]))   # (K, e, C)
            out[:, np.arange(e), e] = \
                val * np.exp(lg + fmax - logz)[None, :, None]
            break
        _, w2, mx2, ct, st2, en, _, _ = layers[e]
        b = betas[e]                                     # (S_e, C): starts after token e
        Bt = np.where(idx >= 0, b[:, np.clip(idx, 0, C - 1)], 0.0)   # (S_e, C, C)
        Sr, Su = w2.shape
        V = np.zeros((Sr, C, C))
        for shift, mask in ((0, en & ~st2), (1, en & st2)):
            if mask.any():
                v = ((w2 * mask) @ Bt.reshape(Su, C * C)).reshape(Sr, C, C)
                if shift:
                    V[:, :, 1:] += v[:, :, :-1]
                else:
                    V += v
        res = np.matmul(Gs, V)                           # (S, e, C): sum over a
        res = np.tensordot(onehot, res, axes=([0], [0]))  # (K, e, C): sum over r by type
        scale = np.exp(lg + mx2 + bscale[e] - logz)
        out[:, np.arange(e), e] = res * scale[None, :, None]
        Su2 = w2.shape[1]
        Gs = ((w2 * ct).T @ Gs.reshape(Sr, e * C)).reshape(Su2, e, C)   # stay inside
        mxs = Gs.max(axis=(0, 2))
        mxs = np.where(mxs > 0, mxs, 1.0)
        Gs = flush(Gs / mxs[None, :, None])
        lg = lg + mx2 + np.log(mxs)
    return out


def outside_run_marginals(lattice, of_type: int | None = None) -> np.ndarray:
    """Pr(no chunk of y covers a token of [s, e) and m(y) = m), shape (n, n+1, n+1),
    indexed [s, e, m] (0 where e ≤ s): the overlap marginals of the partial-match
    utility's bound (:mod:`.partial`); with ``of_type`` (a type index), no chunk of
    that type (the type-match bound, :mod:`fstchunk.decoding.type_match`).

    The run of clear tokens s .. e−1 is entered from the counting forward at s − 1
    and left into the counting backward at e − 1; chunks of other types opening
    inside the run shift its count, and the count is the forward's plus the run's
    plus the backward's (convolved).  All open runs advance together, one layer at a
    time: O(S·n⁴) time, O(S·n²) memory.
    """
    n, C = lattice.n, lattice.n + 1
    out = np.zeros((n, n + 1, C))
    alphas, ascale = _count_forward(lattice)
    betas, bscale = _count_backward(lattice)
    fmax = np.max(lattice.chain.final)
    logz = ascale[-1] + np.log(np.sum(alphas[-1] * np.exp(lattice.chain.final - fmax)[:, None]))
    logz += fmax
    layers = list(scaled_layers(lattice.chain, lattice.space))
    tix = lattice.space.type_index
    idx = np.arange(C)[None, :] - np.arange(C)[:, None]          # Toeplitz offsets m - a
    V, lg = None, np.zeros(0)          # V[s', a, c]: runs started at s = s', state a
    for e in range(1, n + 1):
        s = e - 1
        _, w, mx, _, opens, _, _, dst = layers[s]
        clear = tix[dst] < 0 if of_type is None else tix[dst] != of_type
        a_prev = alphas[s - 1] if s > 0 else np.eye(1, C)
        wo = w * clear[None, :]
        wopen = wo * opens                                   # another type's chunk opens
        wo = wo - wopen
        if V is not None:                                    # the open runs go on
            V2 = np.einsum("ab,rac->rbc", wo, V)
            if wopen.any():
                V2[:, :, 1:] += np.einsum("ab,rac->rbc", wopen, V[:, :, :-1])
            V = V2
            lg = lg + mx
        v = wo.T @ a_prev
        if wopen.any():
            v[:, 1:] += wopen.T @ a_prev[:, :-1]
        v = v[None]
        V = v if V is None else np.concatenate([V, v], axis=0)
        lg = np.append(lg, (ascale[s - 1] if s > 0 else 0.0) + mx)
        b = betas[s]                                         # suffix after token s
        Bt = np.where(idx >= 0, b[:, np.clip(idx, 0, C - 1)], 0.0)   # (S, C, C)
        res = V.reshape(len(V), -1) @ Bt.reshape(-1, C)
        out[np.arange(e), e] = res * np.exp(lg + bscale[s] - logz)[:, None]
        top = V.max(axis=(1, 2))
        top = np.where(top > 0, top, 1.0)
        V = flush(V / top[:, None, None])
        lg = lg + np.log(top)
    return out
