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
