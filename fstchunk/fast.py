"""The fast exact engine: dense recursions over a lattice's layers, in numpy.

* :func:`forward`, :func:`backward`, :func:`token_marginals` — forward-backward in
  log space.
* :func:`chunk_marginals` — Pr((type, s, e) ∈ chunks(y)) for every span, O(n² S²).
* :func:`tp_count_table` — for a fixed sequence with chunk set C, the vectors

      Z[c] = Pr(m(y) = c),    T[c] = E[tp(C, y) · 1{m(y) = c}],

  which give E[tp], E[P], E[R] and E[F_β] in either direction (see
  :mod:`fstchunk.expected`).  The composition path carries ct (the running tp)
  in its states, O(n³) states per sentence (Jansche §19).  F is linear in tp,
  so ct can go into the weights instead: the first-order expectation semiring of
  pairs ⟨p, p·r⟩ (Eisner 2002; Li & Eisner 2009) with ⟨a, b⟩⊗⟨c, d⟩ = ⟨ac, ad + bc⟩,
  over states (tag, match, cm), O(n² S²) work.  The recursion is T⊠M specialised
  to the fixed sequence (:func:`fstchunk.grammars.counting.tp_step`) read on
  chunk boundaries instead of IOBES tags.

Pitfall: ⟨p, p·r⟩ is kept in linear space with per-layer rescaling (both parts by
the same factor), which is exact in floating point for any length; plain
probabilities would underflow beyond a few hundred tokens.
"""

from __future__ import annotations

import functools

import numpy as np

from . import encodings as enc
from .lattice import Lattice, Layers, _logsumexp


def forward(layers: Layers) -> tuple[list[np.ndarray], float]:
    """Log forward vectors (alpha[i] over the states of layer i+1) and log Z."""
    alpha, a = [], np.zeros(1)
    for w in layers.weights:
        a = _logsumexp(a[:, None] + w, axis=0)
        alpha.append(a)
    return alpha, float(_logsumexp(a + layers.final))


def backward(layers: Layers) -> list[np.ndarray]:
    """Log backward vectors: beta[i] over the states of layer i+1."""
    b = layers.final
    beta = [b]
    for w in reversed(layers.weights[1:]):
        b = _logsumexp(w + b[None, :], axis=1)
        beta.append(b)
    return beta[::-1]


def state_posteriors(layers: Layers) -> list[np.ndarray]:
    alpha, logz = forward(layers)
    beta = backward(layers)
    return [np.exp(a + b - logz) for a, b in zip(alpha, beta)]


def token_marginals(layers: Layers, num_tags: int) -> np.ndarray:
    """Pr(y_i = t), shape (n, num_tags)."""
    post = state_posteriors(layers)
    out = np.zeros((len(post), num_tags))
    for i, (p, lab) in enumerate(zip(post, layers.labels)):
        np.add.at(out[i], lab, p)
    return out


@functools.lru_cache(maxsize=256)
def boundary_tables(tags: tuple[str, ...], scheme: str):
    """Over tag pairs (row L = sentence start): cont[p, c] (c continues p's chunk),
    start[p, c] (a chunk starts at c), end[p, c] (p's chunk ends at p), and the
    type index of each tag (-1 for O) with the type names."""
    L = len(tags)
    types = tuple(sorted({enc.split_tag(t)[1] for t in tags if t != enc.OUTSIDE}))
    tix = np.array([-1 if t == enc.OUTSIDE else types.index(enc.split_tag(t)[1]) for t in tags])
    inchunk = tix >= 0
    cont = np.zeros((L + 1, L), bool)
    for a in range(L):
        for b in range(L):
            cont[a, b] = enc.continues(scheme, tags[a], tags[b])
    start = inchunk[None, :] & ~cont
    end = np.zeros((L + 1, L), bool)
    end[:L] = inchunk[:, None] & ~cont[:L]
    return cont, start, end, tix, types


def _pair(table: np.ndarray, lab_src: np.ndarray, lab_dst: np.ndarray) -> np.ndarray:
    """Index a tag-pair table by the states of two layers (lab -1 = sentence start)."""
    rows = np.where(lab_src < 0, table.shape[0] - 1, lab_src)
    return table[rows][:, lab_dst]


def _layer_iter(lattice: Lattice):
    """(i, W_i (linear, scaled), log scale, cont, start, end, labels_src, labels_dst)."""
    cont, start, end, tix, types = boundary_tables(lattice.tags, lattice.scheme)
    lay = lattice.layers
    src = np.array([-1])
    for i, w in enumerate(lay.weights):
        dst = lay.labels[i]
        mx = np.max(w)
        yield (i, np.exp(w - mx), mx, _pair(cont, src, dst), _pair(start, src, dst),
               _pair(end, src, dst), src, dst)
        src = dst


def tp_count_table(lattice: Lattice, fixed_chunks) -> tuple[np.ndarray, np.ndarray]:
    """(Z, T): Z[c] = Pr(m(y) = c), T[c] = E[tp · 1{m(y) = c}] against ``fixed_chunks``.

    ``fixed_chunks`` are (type, start, end) of a sequence of the lattice's length;
    y ranges over the lattice's distribution.
    """
    n = lattice.n
    _, _, _, tix, types = boundary_tables(lattice.tags, lattice.scheme)
    fs = np.full(n, -2)                     # type index of a fixed chunk starting at j
    fe = np.zeros(n + 1, bool)              # fixed chunk ends at token j
    for t, s, e in fixed_chunks:
        fs[s] = types.index(t) if t in types else -3     # -3: a type the lattice lacks
        fe[e - 1] = True
    C = n + 1
    P = np.zeros((1, 2, C))
    E = np.zeros((1, 2, C))
    P[0, 0, 0] = 1.0
    for j, w, _, cont, start, end, src, dst in _layer_iter(lattice):
        S = len(dst)
        match_start = start & (tix[dst][None, :] == fs[j])
        ended_fixed = j > 0 and fe[j - 1]
        # per source match value: (destination match, tp increment) as boolean tables
        if ended_fixed:
            rules = {0: (match_start, None), 1: (match_start, end)}
        else:
            rules = {0: (match_start, None), 1: (~end & ~start, None)}
        P2 = np.zeros((S, 2, C))
        E2 = np.zeros((S, 2, C))
        for m_src, (to_one, inc) in rules.items():
            p, e = P[:, m_src, :], E[:, m_src, :]
            if not p.any() and not e.any():
                continue
            for m_dst, sel in ((1, to_one), (0, ~to_one)):
                for shift, sh in ((1, start), (0, ~start)):
                    mask = sel & sh
                    if not mask.any():
                        continue
                    M = w * mask
                    hi = C - shift
                    P2[:, m_dst, shift:] += M.T @ p[:, :hi]
                    E2[:, m_dst, shift:] += M.T @ e[:, :hi]
                    if inc is not None:
                        Mi = M * (inc & mask)
                        E2[:, m_dst, shift:] += Mi.T @ p[:, :hi]
        scale = P2.sum()
        if scale <= 0:
            raise ValueError("the lattice gives no weight to any valid sequence")
        P, E = P2 / scale, E2 / scale
    fin = np.exp(lattice.layers.final - np.max(lattice.layers.final))
    Z = np.einsum("smc,s->c", P, fin)
    T = np.einsum("smc,s->c", E, fin) + P[:, 1, :].T @ fin     # open matches close at n
    total = Z.sum()
    if not total > 0:
        raise ValueError("the lattice gives no weight to any valid sequence")
    return Z / total, T / total


def chunk_marginals(lattice: Lattice) -> np.ndarray:
    """Pr((type, s, e) ∈ chunks(y)), shape (len(types), n, n+1) with types in
    ``lattice.tagset.types`` order."""
    n = lattice.n
    lay = lattice.layers
    types_all = lattice.tagset.types
    alpha, logz = forward(lay)
    beta = backward(lay)
    cont, start, end, tix, types = boundary_tables(lattice.tags, lattice.scheme)
    out = np.zeros((len(types_all), n, n + 1))
    if not types:
        return out
    tmap = np.array([types_all.index(t) for t in types])
    layers = list(_layer_iter(lattice))
    for s in range(n):
        _, w, mx, _, st, _, src, dst = layers[s]
        a_prev = np.zeros(1) if s == 0 else alpha[s - 1]
        # gamma[k, state]: log weight of paths that start a chunk of type k at s
        with np.errstate(divide="ignore"):
            g = _logsumexp(a_prev[:, None] + np.log(np.where(st, w, 0.0)) + mx, axis=0)
        gamma = np.full((len(types), len(dst)), -np.inf)
        for k in range(len(types)):
            sel = tix[dst] == k
            gamma[k, sel] = g[sel]
        for e in range(s + 1, n + 1):
            if e == n:
                out[tmap, s, e] = np.exp(_logsumexp(gamma + lay.final[None, :], axis=1) - logz)
                break
            _, w2, mx2, ct, _, en, _, _ = layers[e]
            with np.errstate(divide="ignore"):
                lw_end = np.log(np.where(en, w2, 0.0)) + mx2
                lw_cont = np.log(np.where(ct, w2, 0.0)) + mx2
            ends = _logsumexp(gamma[:, :, None] + lw_end[None] + beta[e][None, None, :],
                              axis=(1, 2))
            out[tmap, s, e] = np.exp(ends - logz)
            gamma = _logsumexp(gamma[:, :, None] + lw_cont[None], axis=1)
    return out


def _count_forward(lattice: Lattice):
    """Scaled forward over (state, chunk starts so far): alpha[i] (S_{i+1}, C) and the
    log scale of each layer (alpha_true = alpha · exp(logscale))."""
    n, C = lattice.n, lattice.n + 1
    a = np.zeros((1, C))
    a[0, 0] = 1.0
    alphas, scales, ls = [], [], 0.0
    for _, w, mx, _, start, _, _, _ in _layer_iter(lattice):
        nxt = (w * ~start).T @ a
        nxt[:, 1:] += (w * start).T @ a[:, :-1]
        z = nxt.sum()
        if z <= 0:
            raise ValueError("the lattice gives no weight to any valid sequence")
        a = nxt / z
        ls += np.log(z) + mx
        alphas.append(a)
        scales.append(ls)
    return alphas, scales


def _count_backward(lattice: Lattice):
    """Scaled backward: beta[i] (S_{i+1}, C) = weight of the suffix after token i with
    c chunk starts in tokens i+1.., and its log scale."""
    lay = lattice.layers
    C = lattice.n + 1
    layers = list(_layer_iter(lattice))
    fmax = np.max(lay.final)
    b = np.zeros((len(lay.final), C))
    b[:, 0] = np.exp(lay.final - fmax)
    ls = fmax
    betas, scales = [b], [ls]
    for _, w, mx, _, start, _, _, _ in reversed(layers[1:]):
        prev = (w * ~start) @ b
        prev[:, 1:] += (w * start) @ b[:, :-1]
        z = prev.sum()
        b = prev / z
        ls += np.log(z) + mx
        betas.append(b)
        scales.append(ls)
    return betas[::-1], scales[::-1]


def chunk_count_marginals(lattice: Lattice) -> np.ndarray:
    """Pr((type, s, e) ∈ chunks(y) and m(y) = m), shape (len(types), n, n+1, n+1),
    indexed [type, s, e, m], types in ``lattice.tagset.types`` order.

    The chunk is entered by a start transition at s, continued inside, left by an
    end transition at e (or the sentence end); chunk starts before s come from a
    counting forward pass, those from e on from a counting backward pass, and the
    two count vectors are convolved (the exit transition may itself start a chunk).
    """
    n, C = lattice.n, lattice.n + 1
    types_all = lattice.tagset.types
    _, _, _, tix, types = boundary_tables(lattice.tags, lattice.scheme)
    out = np.zeros((len(types_all), n, n + 1, C))
    if not types:
        return out
    tmap = np.array([types_all.index(t) for t in types])
    K = len(types)
    alphas, ascale = _count_forward(lattice)
    betas, bscale = _count_backward(lattice)
    logz = ascale[-1] + np.log(np.sum(alphas[-1] * np.exp(lattice.layers.final -
                                                          np.max(lattice.layers.final))[:, None]))
    logz += np.max(lattice.layers.final)
    layers = list(_layer_iter(lattice))
    fmax = np.max(lattice.layers.final)
    fin = np.exp(lattice.layers.final - fmax)
    # G[s]: (K, S, C) weight of paths that entered a chunk of type k at token s and are
    # still inside it, by chunk count so far; logG[s] its scale.  All open starts
    # advance together, one layer at a time.
    G: list[np.ndarray] = []
    logG: list[float] = []
    for e in range(1, n + 1):
        s = e - 1                                        # open a chunk at token s
        _, w, mx, _, st, _, _, dst = layers[s]
        if s == 0:
            a_prev = np.zeros((1, C))
            a_prev[0, 0] = 1.0
        else:
            a_prev = alphas[s - 1]
        g = (w * st).T @ a_prev
        gamma = np.zeros((K, len(dst), C))
        for k in range(K):
            sel = tix[dst] == k
            gamma[k, sel, 1:] = g[sel, :-1]              # the chunk itself counts
        G.append(gamma)
        logG.append((0.0 if s == 0 else ascale[s - 1]) + mx)
        Gs = np.stack(G)                                 # (e, K, S, C)
        lg = np.array(logG)
        if e == n:
            val = np.einsum("nksc,s->nkc", Gs, fin)
            for s_ in range(e):
                out[tmap, s_, e] = val[s_] * np.exp(lg[s_] + fmax - logz)
            break
        _, w2, mx2, ct, st2, en, _, _ = layers[e]
        b = betas[e]                                     # (S_e, C): starts after token e
        S_e = b.shape[0]
        # Toeplitz form: Bt[u, a, m] = b[u, m - a]
        idx = np.arange(C)[None, :] - np.arange(C)[:, None]          # m - a
        Bt = np.where(idx >= 0, b[:, np.clip(idx, 0, C - 1)], 0.0)    # (S_e, C, C)
        res = np.zeros((e, K, C))
        for shift, mask in ((0, en & ~st2), (1, en & st2)):
            if not mask.any():
                continue
            x = np.matmul(Gs.transpose(0, 1, 3, 2), w2 * mask)       # (e, K, C, S_e)
            r = x.transpose(0, 1, 3, 2).reshape(e * K, S_e * C) @ Bt.reshape(S_e * C, C)
            r = r.reshape(e, K, C)
            if shift:
                res[:, :, 1:] += r[:, :, :-1]
            else:
                res += r
        scale = np.exp(lg + mx2 + bscale[e] - logz)
        out[tmap[None, :], np.arange(e)[:, None], e] = res * scale[:, None, None]
        Gs = np.matmul(Gs.transpose(0, 1, 3, 2), w2 * ct).transpose(0, 1, 3, 2)
        mxs = Gs.reshape(e, -1).max(axis=1)
        mxs = np.where(mxs > 0, mxs, 1.0)
        Gs /= mxs[:, None, None, None]
        G = list(Gs)
        logG = list(lg + mx2 + np.log(mxs))
    return out
