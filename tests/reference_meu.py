"""Issue 17's reference: the exact MEU decoder as it was before the rewrite.

Copied verbatim from git commit e7dd7ee (the HEAD when issue 17's rewrite began):
``fstchunk/decoding/decode.py`` (decode_posterior, meu_weights, decode_meu, decode_meu_corpus),
``fstchunk/engine/counting.py`` (chunk count marginals: the lattice composed with the
chunk counter M, scaled per layer), ``fstchunk/engine/intervals.py`` (the span DPs),
``fstchunk/engine/expectation.py`` (tp_count_table, for Pr(m(y) = 0) and E[m(y)]) and
the scaled-layer helpers of ``fstchunk/engine/chain.py``.  The one edit: decode_meu
keeps only its ``method="exact"`` branch.  Everything is copied, not imported, so
the package's counting / intervals / expectation / chain modules can change under
issue 17 while this stays the old algorithm: the O(n^3)-per-type tables
(n, n, n+1, T) of g_k(c) = Σ_m Pr(c ∈ y, m(y) = m) / (k + β m), the best set of
exactly k chunks for every k, and the empty hypothesis.

Where it is right: moderate score scales (per-layer log weight gaps well under ~600
nats; random models up to scale ~30) and lengths whose (n, n, n+1, T) tables fit in
memory (a few hundred tokens).  At peaked scales (random models at scale 300+) its
per-layer scaling underflows: wrong decisions and false "no weight" errors — which
is what the tests of tests/test_meu_exact.py check the new decoder does not do.

Entry points: :func:`reference_decode_meu` (tags, U), :func:`reference_decode_meu_corpus`,
:func:`reference_decode_posterior`, :func:`reference_chunk_marginals`.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from fstchunk.core.errors import InputError
from fstchunk.engine.chain import Layers, viterbi
from fstchunk.schemes import encodings as enc
from fstchunk.structures.lattice import Lattice


class Decoding(NamedTuple):
    """Decoded tags and the value the decoder maximised (as decode.Decoding at e7dd7ee)."""
    tags: list[str]
    score: float


def _check_beta(beta: float) -> None:
    # fstchunk/evaluation/chunks.py @ e7dd7ee
    if not (beta >= 0 and beta < float("inf")):
        raise InputError(f"beta must be a finite number >= 0, got {beta!r}")


# ---- fstchunk/engine/chain.py @ e7dd7ee


#: Values below this (relative to a layer's scale) are set to zero.  Pitfall:
#: subnormal doubles (< 2.2e-308) make BLAS products up to 100x slower, and
#: count bins of improbable chunk counts fall that low in long sentences.
TINY = 1e-280


def flush(a: np.ndarray) -> np.ndarray:
    """Set entries below :data:`TINY` to zero, in place."""
    a[a < TINY] = 0.0
    return a


def pair_table(table: np.ndarray, lab_src: np.ndarray, lab_dst: np.ndarray) -> np.ndarray:
    """Index a tag-pair table by the states of two layers (lab -1 = sentence start)."""
    rows = np.where(lab_src < 0, table.shape[0] - 1, lab_src)
    return table[rows][:, lab_dst]


def scaled_layers(layers: Layers, space):
    """Per layer i: (i, W_i = exp(w_i − max w_i) (linear, scaled), max w_i, and the
    ``space``'s cont / opens / closes tables indexed by the states of layers i and
    i+1, labels of the source and destination states).  The input of the counting
    and expectation-semiring recursions (:mod:`.counting`, :mod:`.expectation`)."""
    cont, start, end = space.cont, space.opens, space.closes
    lay = layers
    src = np.array([-1])
    for i, w in enumerate(lay.weights):
        dst = lay.labels[i]
        mx = np.max(w)
        yield (i, flush(np.exp(w - mx)), mx, pair_table(cont, src, dst), pair_table(start, src, dst),
               pair_table(end, src, dst), src, dst)
        src = dst


# ---- fstchunk/engine/counting.py @ e7dd7ee


def chunk_marginals(lattice) -> np.ndarray:
    """Pr((type, s, e) ∈ chunks(y)), shape (len(types), n, n+1), types in
    ``lattice.space.types`` order: :func:`chunk_count_marginals` summed over m."""
    return chunk_count_marginals(lattice).sum(axis=3)


def _count_forward(lattice):
    """Scaled forward over (state, chunk starts so far): alpha[i] (S_{i+1}, C) and the
    log scale of each layer (alpha_true = alpha · exp(logscale))."""
    C = lattice.n + 1
    a = np.zeros((1, C))
    a[0, 0] = 1.0
    alphas, scales, ls = [], [], 0.0
    for _, w, mx, _, start, _, _, _ in scaled_layers(lattice.layers, lattice.space):
        nxt = (w * ~start).T @ a
        nxt[:, 1:] += (w * start).T @ a[:, :-1]
        z = nxt.sum()
        if z <= 0:
            raise InputError("the lattice gives no weight to any valid sequence")
        a = flush(nxt / z)
        ls += np.log(z) + mx
        alphas.append(a)
        scales.append(ls)
    return alphas, scales


def _count_backward(lattice):
    """Scaled backward: beta[i] (S_{i+1}, C) = weight of the suffix after token i with
    c chunk starts in tokens i+1.., and its log scale."""
    lay = lattice.layers
    C = lattice.n + 1
    layers = list(scaled_layers(lattice.layers, lattice.space))
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
    logz = ascale[-1] + np.log(np.sum(alphas[-1] * np.exp(lattice.layers.final -
                                                          np.max(lattice.layers.final))[:, None]))
    logz += np.max(lattice.layers.final)
    layers = list(scaled_layers(lattice.layers, lattice.space))
    fmax = np.max(lattice.layers.final)
    fin = np.exp(lattice.layers.final - fmax)
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


# ---- fstchunk/engine/expectation.py @ e7dd7ee


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
    for j, w, mx, _, start, end, src, dst in scaled_layers(lattice.layers, lattice.space):
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
    fin = np.exp(lattice.layers.final - np.max(lattice.layers.final))
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


# ---- fstchunk/engine/intervals.py @ e7dd7ee


def _interval_dp(wv: np.ndarray, counted: bool) -> tuple[np.ndarray, np.ndarray]:
    """wv: (K, n, n+1) best span weights per problem k.  Returns (D, arg) with
    D[k, j, i] (``counted``: j chunks; else j ∈ {0, 1} with row 1 = any number)
    and arg the start of the last chunk ending at i (-1: token i−1 is outside)."""
    K, n = wv.shape[0], wv.shape[1]
    J = K + 1 if counted else 2
    D = np.full((K, J, n + 1), -np.inf)
    D[:, 0, :] = 0.0
    if not counted:
        D[:, 1, 0] = 0.0
    arg = np.full((K, J, n + 1), -1, dtype=int)
    for i in range(1, n + 1):
        D[:, 1:, i] = D[:, 1:, i - 1]
        prev = D[:, :-1, :i] if counted else D[:, 1:, :i]
        cand = prev + wv[:, None, :i, i]                   # last chunk [s, i)
        s_best = np.argmax(cand, axis=2)
        v = np.take_along_axis(cand, s_best[..., None], axis=2)[..., 0]
        better = v > D[:, 1:, i]
        D[:, 1:, i] = np.where(better, v, D[:, 1:, i])
        arg[:, 1:, i] = np.where(better, s_best, arg[:, 1:, i])
    return D, arg


def _backtrace(arg: np.ndarray, types: np.ndarray, j: int, n: int, counted: bool) -> list:
    chunks, i = [], n
    while i > 0 and j > 0:
        s = int(arg[j, i])
        if s < 0:
            i -= 1
            continue
        chunks.append((int(types[s, i]), s, i))
        i = s
        if counted:
            j -= 1
    return chunks[::-1]


def best_chunk_sets(weights: np.ndarray, max_chunks: int) -> list[tuple[float, list]]:
    """For k = 1..max_chunks: the best total weight of exactly k non-overlapping spans.

    ``weights`` has shape (K, n, n+1, T): weights[k-1, s, e, t] is the weight of
    span [s, e) with type t when the hypothesis has k chunks.  Returns, for each
    k, (best total, [(t, s, e), ...]) — (-inf, []) if no k spans fit.
    """
    K, n = min(weights.shape[0], max_chunks), weights.shape[1]
    wt = np.argmax(weights[:K], axis=3)                  # best type per (k, span)
    D, arg = _interval_dp(np.max(weights[:K], axis=3), counted=True)
    out = []
    for k in range(1, K + 1):
        best = D[k - 1, k, n]
        if best == -np.inf:
            out.append((-np.inf, []))
        else:
            out.append((float(best), _backtrace(arg[k - 1], wt[k - 1], k, n, counted=True)))
    return out


def best_chunk_set(weights: np.ndarray) -> list[tuple[int, int, int]]:
    """max Σ w(t, s, e) over sets of non-overlapping spans, any number (maybe none).

    ``weights`` has shape (T, n, n+1); returns the chosen [(t, s, e), ...]."""
    n = weights.shape[1]
    valid = np.triu(np.ones((n, n + 1), bool), 1)
    w = np.where(valid[None], weights, -np.inf)
    wt, wv = np.argmax(w, axis=0), np.max(w, axis=0)
    D, arg = _interval_dp(wv[None], counted=False)
    return _backtrace(arg[0], wt, 1, n, counted=False)


# ---- fstchunk/decoding/decode.py @ e7dd7ee


def decode_posterior(lattice: Lattice) -> Decoding:
    """The valid sequence maximising the sum of token marginals."""
    marg = lattice.marginals()
    L = len(lattice.tags)
    post = Lattice.from_scores(lattice.tags, marg, np.zeros((L, L)), scheme=lattice.scheme)
    idx, best = viterbi(post.layers)
    return Decoding([lattice.tags[i] for i in idx], best)


# ------------------------------------------------------------------------- MEU
def meu_weights(lattice: Lattice, beta: float) -> np.ndarray:
    """g_k(c) for all k, spans and types, shape (n, n, n+1, T) ([k-1, s, e, type])."""
    n = lattice.n
    pcm = chunk_count_marginals(lattice)                     # (T, n, n+1, C)
    m = np.arange(n + 1, dtype=float)
    k = np.arange(1, n + 1, dtype=float)
    H = 1.0 / (k[None, :] + beta * m[:, None])                # (C, K)
    g = np.tensordot(pcm, H, axes=([3], [0]))                 # (T, n, n+1, K)
    g = np.moveaxis(g, (3, 0), (0, 3))                        # (K, n, n+1, T)
    valid = np.triu(np.ones((n, n + 1), bool), 1)             # e > s
    return np.where(valid[None, :, :, None], g, -np.inf)


def decode_meu(lattice: Lattice, beta: float = 1.0, method: str = "exact",
               k: int = 20) -> Decoding:
    """The hypothesis of maximum expected F_β against the lattice, and that E[F_β].

    ``method="exact"``: the polynomial algorithm of the module doc; ``"kbest"``:
    the ``k`` best paths of the lattice reranked by exact expected F.
    """
    _check_beta(beta)
    if method != "exact":           # reference copy: the k-best branch is not kept
        raise InputError(f"unknown method {method!r}; use 'exact' or 'kbest'")
    n = lattice.n
    g = meu_weights(lattice, beta)
    z0, _ = tp_count_table(lattice, [])
    best_u, best_chunks = float(z0[0]), []                    # the empty hypothesis
    types = lattice.space.types
    for total, chunks in best_chunk_sets(g, n):
        u = (beta + 1) * total
        if u > best_u + 1e-15:
            best_u = u
            best_chunks = [(types[t], s, e) for t, s, e in chunks]
    tags = enc.chunks_to_tags(best_chunks, n, lattice.scheme)
    return Decoding(tags, best_u)


# ---------------------------------------------------------------- corpus MEU
def decode_meu_corpus(lattices: Sequence[Lattice], beta: float = 1.0,
                      max_iter: int = 50) -> tuple[list[list[str]], float]:
    """Jointly decode a corpus for the expected corpus F_β (Dinkelbach, see module doc).

    Returns the tag sequences and the expected-count ratio they reach.
    """
    _check_beta(beta)
    cms = [lat.chunk_marginals() for lat in lattices]
    m_ref = sum(float(np.arange(lat.n + 1) @ tp_count_table(lat, [])[0]) for lat in lattices)
    lam = 0.0
    decided: list[list] = [[] for _ in lattices]
    ratio = _corpus_ratio(cms, decided, m_ref, beta)
    for _ in range(max_iter):
        new = [best_chunk_set((beta + 1) * cm - lam) for cm in cms]
        r = _corpus_ratio(cms, new, m_ref, beta)
        if r <= ratio + 1e-12 and _ > 0:
            break
        decided, ratio, lam = new, r, r
    out = []
    for lat, chunks in zip(lattices, decided):
        types = lat.space.types
        out.append(enc.chunks_to_tags([(types[t], s, e) for t, s, e in chunks], lat.n,
                                      lat.scheme))
    return out, ratio


def _corpus_ratio(cms, decided, m_ref: float, beta: float) -> float:
    tp = sum(cm[t, s, e] for cm, ch in zip(cms, decided) for t, s, e in ch)
    m_hyp = sum(len(ch) for ch in decided)
    den = m_hyp + beta * m_ref
    return (beta + 1) * tp / den if den > 0 else 1.0



# ---- the entry points of the tests
# The copy above reads ``beta`` as the slides' β' (F = (β'+1)·tp / (m(x) + β'·m(y))); the
# entry points take the standard β of fstchunk.core.fbeta and pass it on as β' = β².
def reference_decode_meu(lattice: Lattice, beta: float = 1.0) -> tuple[list[str], float]:
    """The old exact MEU decision and its expected F_β: (tags, U(tags)); standard β."""
    tags, u = decode_meu(lattice, beta=beta ** 2, method="exact")
    return list(tags), float(u)


def reference_decode_meu_corpus(lattices: Sequence[Lattice], beta: float = 1.0
                                ) -> tuple[list[list[str]], float]:
    """The old corpus decoder (Dinkelbach on the old chunk marginals); standard β."""
    return decode_meu_corpus(lattices, beta=beta ** 2)


def reference_decode_posterior(lattice: Lattice) -> tuple[list[str], float]:
    """The old posterior decoder: (tags, Σ token marginals)."""
    tags, score = decode_posterior(lattice)
    return list(tags), float(score)


def reference_chunk_marginals(lattice: Lattice) -> np.ndarray:
    """The old Pr((type, s, e) ∈ chunks(y)), shape (T, n, n+1)."""
    return chunk_marginals(lattice)
