"""Exact MEU for a ragged batch of dense chains, vectorised across the sentences.

The decision of :mod:`.meu` (maximum expected F_β, standard β, w = β²) for the
sentences of a :class:`~.ragged.RaggedBatch` together, on the batch's transfer
operators (:func:`.inference.transfer_of`), with every k worth solving solved exactly
instead of the per-sentence search's anchors:

1. Pr(m(y) = m) by a counting forward (the count moves on opening arcs);
2. the k worth solving: every k whose bound (1+w)·E[min(k, m)/(k + wm)] exceeds a
   lower bound on U(MAP) from its chunks' marginals (the MAP's own k always);
3. 1/(k + wm) as Σ_r W_r e^{−t_r(k + wm)} on the range those k and the count window
   (Pr outside < 1e-18) span (:func:`.quadrature.exp_sum`; rules of different
   sizes padded with weight-0 nodes);
4. the tilted marginals Q_z(c) = E[1{c ∈ y}·z^{m(y)}] of every chunk above 1e-17/n at
   every node z_r = e^{−w t_r}, in one sweep of open chunks over the batch
   (:func:`.spans_batch.tilted_spans`; what it leaves out enters the certificate);
5. for every such k at once, g_k = Σ_r W_r e^{−t_r k} Q_{z_r} and the best set of
   exactly k non-overlapping spans under it (the counted interval DP, batched over
   sentences and k);
6. the answer: the best k-set, or the empty hypothesis (U(∅) = Pr(m = 0), kept on
   ties), its Ũ, and the certificate ``gap``: every k's upper bound (solved k:
   (1+w)(h_k + e(k)), e(k) the quadrature's error bound from the exact Pr(m); the
   others: their bound) less the answer's lower end (1+w)(h_k̂ − e(k̂)), plus the
   pruned mass.

Every quantity is an expectation under the normalised chain (the operators' â, b̂),
so any score scale is safe; tilted vectors and open-chunk columns are rescaled per
token with their log scales kept apart.  Memory: at most about R·T·n² floats per
sentence for R nodes (:func:`table_bytes`); the caller sends longer sentences, or
those over the memory budget, to the per-sentence search (:func:`.meu.exact_meu`).
"""

from __future__ import annotations

import numpy as np

from .chain import TINY
from .meu import CORE_TAIL, GAP_RETRY, WINDOW_TAIL, MEUResult
from .quadrature import exp_sum
from .ragged import RaggedBatch
from .spans_batch import tilted_spans

#: bytes of tables one call may hold at once (sentences are taken in groups)
GROUP_BYTES = 64 << 20
#: chunks of marginal below PRUNE / n are not listed (:mod:`.spans_batch`), as the
#: per-sentence search does (:func:`.meu.exact_meu`)
PRUNE = 1e-17


def table_bytes(n: int, nodes: int, types: int) -> float:
    """Bytes of one sentence's tables at most: the tilted forward and backward, the
    listed chunks' tilted marginals, the g_k tables and the DP's."""
    return 8.0 * (nodes + 4) * (types + 2) * n * (n + 1)


def count_distributions(ops, batch: RaggedBatch) -> np.ndarray:
    """Pr(m(y) = m), (B, n+1): the forward over (count, state) with the count moved by
    opening arcs, closed by b̂ at each sentence's own last token; rows sum to 1."""
    B, n, L = batch.em.shape
    sp = batch.space
    op = sp.opens[:L].astype(float)
    stay = 1.0 - op
    first = sp.opens[L]
    X = np.zeros((B, n + 1, L))
    X[:, 0] = ops.a[:, 0] * ~first
    X[:, 1] = ops.a[:, 0] * first
    P = np.zeros((B, n + 1))
    last = batch.lengths - 1
    rows = np.arange(B)
    for i in range(n):
        if i:
            act = rows[last >= i]
            if len(act) == 0:
                break
            x = X[act, :i + 1]
            s = act[:, None]
            nxt = ops.fwd(x, s, i, stay)
            X[act, :i + 1] = nxt
            X[act, 1:i + 2] += ops.fwd(x, s, i, op)
            X[act] = np.where(X[act] < TINY, 0.0, X[act])
        end = rows[last == i]
        if len(end):
            P[end] = (X[end] * ops.bt[end, i][:, None, :]).sum(axis=-1)
    tot = P.sum(axis=1, keepdims=True)
    return P / np.where(tot > 0, tot, 1.0)


def _bounds(pm: np.ndarray, w: float, lengths: np.ndarray) -> np.ndarray:
    """(1+w) E[min(k, m)/(k + wm)] for k = 0..n (k = 0 and k beyond a sentence: −inf)."""
    n1 = pm.shape[1]
    k = np.arange(n1, dtype=float)[:, None]
    m = np.arange(n1, dtype=float)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(k > 0, np.minimum(k, m) / (k + w * m), 0.0)
    out = (1 + w) * pm @ frac.T
    out[:, 0] = -np.inf
    out[np.arange(n1)[None, :] > lengths[:, None]] = -np.inf
    return out


def _window(pm: np.ndarray, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence [m_lo, m_hi]: Pr(m < m_lo) ≤ tail and Pr(m > m_hi) ≤ tail."""
    lo = np.argmax(np.cumsum(pm, axis=1) > tail, axis=1)
    rev = np.cumsum(pm[:, ::-1], axis=1)[:, ::-1] > tail
    hi = pm.shape[1] - 1 - np.argmax(rev[:, ::-1], axis=1)
    return lo, np.maximum(lo, hi)


def decide(ops, batch: RaggedBatch, beta_sq: float, map_chunks: list,
           map_values: np.ndarray) -> list[MEUResult]:
    """The exact MEU decision of every sentence of the batch (module doc); ``map_chunks``:
    each sentence's MAP chunks (type index, s, e), ``map_values`` their exact E[F_β]
    (the lower bound of step 2).  The
    quadrature is first built for the count window holding all but 1e-9 of Pr(m); a
    sentence whose certificate then exceeds :data:`.meu.GAP_RETRY` is decided again
    on the 1e-18 window (the per-sentence search's rule)."""
    pm = count_distributions(ops, batch)
    out = _decide(ops, batch, beta_sq, map_chunks, map_values, pm, np.arange(batch.B),
                  CORE_TAIL)
    again = [b for b, r in enumerate(out) if r.gap > GAP_RETRY]
    if again:
        for b, r in zip(again, _decide(ops, batch, beta_sq, map_chunks, map_values, pm,
                                       np.array(again), WINDOW_TAIL)):
            out[b] = r
    return out


def _decide(ops, batch: RaggedBatch, beta_sq: float, map_chunks: list, map_values: np.ndarray,
            pm_all: np.ndarray, rows: np.ndarray, tail: float) -> list[MEUResult]:
    """:func:`decide` for the sentences ``rows``, the quadrature on the ``tail`` window."""
    T = len(batch.space.types)
    w = float(beta_sq)
    B = len(rows)
    lens = batch.lengths[rows]
    pm = pm_all[rows]
    n = pm.shape[1] - 1
    bound = _bounds(pm, w, lens)
    m_lo, m_hi = _window(pm, tail)
    # the lower bound: U(MAP), exact, less a margin for its rounding; or U(∅)
    k_map = np.array([len(map_chunks[r]) for r in rows])
    lb = np.maximum(pm[:, 0], np.asarray(map_values, dtype=float)[rows] - 1e-9)
    alive = bound > lb[:, None]
    alive[np.arange(B), k_map] |= k_map > 0
    ks = [np.flatnonzero(a) for a in alive]
    # the quadrature of every sentence, padded to the largest rule
    rules = []
    for b in range(B):
        if len(ks[b]) == 0:
            rules.append((np.zeros(0), np.zeros(0)))
            continue
        a_ = ks[b][0] + w * max(m_lo[b], 1)
        b_ = ks[b][-1] + w * max(m_hi[b], 1)
        rules.append(exp_sum(max(a_, 1.0), max(b_, a_, 1.0)))
    R = max(1, max(len(t) for t, _ in rules))
    t_nodes = np.zeros((B, R))
    logw = np.full((B, R), -np.inf)
    for b, (t, lw) in enumerate(rules):
        t_nodes[b, :len(t)], logw[b, :len(t)] = t, lw
    K = max(1, max(len(k) for k in ks))
    kk = np.zeros((B, K), dtype=int)
    for b in range(B):
        kk[b, :len(ks[b])] = ks[b]
    err = _errors(pm, w, t_nodes, logw, kk)                # (B, K)
    h = np.full((B, K), -np.inf)
    pruned = np.zeros(B)
    picked: list = [None] * B
    for group in _groups(lens, [len(t) for t, _ in rules], [len(k) for k in ks], T):
        Rg, Kg = max(1, max(len(rules[b][0]) for b in group)), max(1, max(len(ks[b]) for b in group))
        h[group, :Kg], picked_g, pruned[group] = _solve(
            ops, batch, rows[group], w, t_nodes[group, :Rg], logw[group, :Rg], kk[group, :Kg],
            [len(ks[b]) for b in group])
        for b, p in zip(group, picked_g):
            picked[b] = p
    out = []
    for b in range(B):
        u = (1 + w) * h[b]
        best_val, best_k, best_err = float(pm[b, 0]), -1, 0.0
        for j in range(len(ks[b])):
            if np.isfinite(u[j]) and u[j] > best_val:
                best_val, best_k, best_err = float(u[j]), j, float((1 + w) * err[b, j])
        best_chunks = picked[b](best_k) if best_k >= 0 else []
        ub = [float(pm[b, 0])]
        solved = np.zeros(n + 1, bool)
        for j in range(len(ks[b])):
            solved[kk[b, j]] = True
            if np.isfinite(u[j]):
                ub.append(float(u[j] + (1 + w) * err[b, j]))
        rest = bound[b, ~solved]
        if np.isfinite(rest).any():
            ub.append(float(rest[np.isfinite(rest)].max()))
        gap = float(pruned[b]) + max(0.0, max(ub) - (best_val - best_err))
        out.append(MEUResult(best_chunks, best_val, gap, len(ks[b]), len(rules[b][0])))
    return out


def _groups(lens, nodes, ks, T) -> list[np.ndarray]:
    """The sentences cut into groups whose tables take at most :data:`GROUP_BYTES`
    (each group's rules padded to its largest), sorted by rule size."""
    order = np.lexsort((np.asarray(lens), np.asarray(nodes)))
    out, cur, top = [], [], 0.0
    for b in order:
        size = table_bytes(int(lens[b]), nodes[b] + ks[b], T)
        if cur and (len(cur) + 1) * max(top, size) > GROUP_BYTES:
            out.append(np.array(cur))
            cur, top = [], 0.0
        cur.append(b)
        top = max(top, size)
    if cur:
        out.append(np.array(cur))
    return out


def _solve(ops, batch: RaggedBatch, rows: np.ndarray, w: float, t_nodes: np.ndarray,
           logw: np.ndarray, kk: np.ndarray, solved: list) -> tuple[np.ndarray, list, np.ndarray]:
    """For the sentences ``rows``: h[b, j] = max Σ g_k over sets of exactly k = kk[b, j]
    listed spans (−inf where none fits, or j ≥ solved[b]), per sentence a function
    j -> those spans, and what the pruning of the sweep left out (steps 4 and 5 of
    the module doc)."""
    lens = batch.lengths[rows]
    B, n, K = len(rows), int(lens.max()), kk.shape[1]
    spans = tilted_spans(ops, batch, np.exp(-w * t_nodes), PRUNE / n, rows)
    # g_k of every listed chunk for every solved k: Σ_r W_r e^{-t_r k} Q_r
    coef = np.exp(logw[:, None, :] - t_nodes[:, None, :] * kk[:, :, None])   # (B, K, R)
    g = np.einsum("ckr,cr->ck", coef[spans.sent], spans.Q) if len(spans.sent) \
        else np.zeros((0, K))
    gbest = np.full((B, K, n, n + 1), -np.inf)       # unlisted chunks are absent
    tbest = np.zeros((B, K, n, n + 1), dtype=np.int64)
    for t in np.unique(spans.typ):                   # the best type of each (start, end)
        at = np.flatnonzero(spans.typ == t)
        b, st, en = spans.sent[at], spans.start[at], spans.end[at]
        cur = gbest[b, :, st, en]
        better = g[at] > cur
        gbest[b, :, st, en] = np.where(better, g[at], cur)
        tbest[b, :, st, en] = np.where(better, t, tbest[b, :, st, en])
    D, arg = _counted_dp(gbest, int(kk.max()))
    h = np.take_along_axis(D[np.arange(B), :, :, lens], kk[:, :, None], axis=2)[..., 0]
    h = np.where(np.arange(K)[None, :] < np.array(solved)[:, None], h, -np.inf)

    def chosen(b: int):
        return lambda j: _backtrace(arg[b, j], tbest[b, j], int(kk[b, j]), int(lens[b]))
    return h, [chosen(b) for b in range(B)], spans.pruned


def _counted_dp(gbest: np.ndarray, J: int) -> tuple[np.ndarray, np.ndarray]:
    """D[b, k, j, i]: the best total weight of j non-overlapping spans in tokens [0, i)
    under the weights gbest[b, k] (n, n+1) (−inf: absent), j = 0..J; ``arg``: the start
    of the span ending at i that D used (−1: none, D[.., i] = D[.., i − 1])."""
    B, K, n, _ = gbest.shape
    D = np.full((B, K, J + 1, n + 1), -np.inf)
    D[:, :, 0, :] = 0.0
    arg = np.full((B, K, J + 1, n + 1), -1, dtype=np.int64)
    for i in range(1, n + 1):
        cand = D[:, :, :-1, :i] + gbest[:, :, None, :i, i]          # (B, K, J, i)
        s = cand.argmax(axis=-1)
        v = np.take_along_axis(cand, s[..., None], axis=-1)[..., 0]
        keep = D[:, :, 1:, i - 1]
        better = v > keep
        D[:, :, 1:, i] = np.where(better, v, keep)
        arg[:, :, 1:, i] = np.where(better, s, -1)
    return D, arg


def _backtrace(arg: np.ndarray, tbest: np.ndarray, k: int, n: int) -> list:
    """The k spans (type, start, end) behind D[k, n] (``arg`` of :func:`_counted_dp`)."""
    chunks, i, j = [], n, k
    while j > 0 and i > 0:
        s = int(arg[j, i])
        if s < 0:
            i -= 1
            continue
        chunks.append((int(tbest[s, i]), s, i))
        i, j = s, j - 1
    return chunks[::-1]


def _errors(pm: np.ndarray, w: float, t_nodes: np.ndarray, logw: np.ndarray,
            kk: np.ndarray) -> np.ndarray:
    """e(k) = Σ_m Pr(m) min(k, m) |δ_k(m)|, δ_k(m) the rule's error at x = k + wm."""
    m = np.arange(pm.shape[1], dtype=float)
    x = kk[:, :, None] + w * m[None, None, :]                       # (B, K, C)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        approx = np.exp(logw[:, None, None, :] - t_nodes[:, None, None, :] * x[..., None]).sum(-1)
        delta = np.where(x > 0, approx - 1.0 / x, 0.0)
    return (pm[:, None, :] * np.minimum(kk[:, :, None], m[None, None, :]) * np.abs(delta)).sum(-1)
