"""Exact MEU for a ragged batch of dense chains, vectorised across the sentences.

The decision of :mod:`.meu` (maximum expected F_β, standard β, w = β²) for the
sentences of a :class:`~.ragged.RaggedBatch` together, on the batch's transfer
operators (:func:`.inference.transfer_of`) and dense span tables (T, n, n+1) per
sentence instead of pruned span lists:

1. Pr(m(y) = m) by a counting forward (the count moves on opening arcs);
2. the k worth solving: every k whose bound (1+w)·E[min(k, m)/(k + wm)] exceeds a
   lower bound on U(MAP) from its chunks' marginals (the MAP's own k always);
3. 1/(k + wm) as Σ_r W_r e^{−t_r(k + wm)} on the range those k and the count window
   (Pr outside < 1e-18) span (:func:`.quadrature.exp_sum`; rules of different
   sizes padded with weight-0 nodes);
4. the tilted span tables Q_z(c) = E[1{c ∈ y}·z^{m(y)}] of every span at every node
   z_r = e^{−w t_r}, in one sweep of open chunks (:func:`tilted_tables`);
5. for every such k at once, g_k = Σ_r W_r e^{−t_r k} Q_{z_r} and the best set of
   exactly k non-overlapping spans under it (the counted interval DP, batched over
   sentences and k);
6. the answer: the best k-set, or the empty hypothesis (U(∅) = Pr(m = 0), kept on
   ties), its Ũ, and the certificate ``gap``: every k's upper bound (solved k:
   (1+w)(h_k + e(k)), e(k) the quadrature's error bound from the exact Pr(m); the
   others: their bound) less the answer's lower end (1+w)(h_k̂ − e(k̂)).

Every quantity is an expectation under the normalised chain (the operators' â, b̂),
so any score scale is safe; tilted vectors and open-chunk columns are rescaled per
token with their log scales kept apart.  Memory: R·T·n·(n+1) floats per sentence
for R nodes (:func:`table_bytes`); the caller sends longer sentences, or those over
the memory budget, to the per-sentence search (:func:`.meu.exact_meu`, which prunes).
"""

from __future__ import annotations

import numpy as np

from .chain import TINY
from .meu import CORE_TAIL, GAP_RETRY, WINDOW_TAIL, MEUResult
from .quadrature import exp_sum
from .ragged import RaggedBatch

#: bytes of dense tables one call may hold at once (sentences are taken in groups)
GROUP_BYTES = 64 << 20


def table_bytes(n: int, nodes: int, types: int) -> float:
    """Bytes of one sentence's dense tables: the tilted span table and the g_k tables."""
    return 8.0 * (nodes + 2) * types * n * (n + 1)


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


def tilted_tables(ops, batch: RaggedBatch, z: np.ndarray,
                  rows: np.ndarray | None = None) -> np.ndarray:
    """Q[b, r, t, s, e] = E[1{(t, s, e) ∈ chunks(y)}·z[b, r]^{m(y)}] for every span of
    the sentences ``rows`` of the batch (all: None; 0 beyond a sentence's length) and
    tilt z (len(rows), R) in (0, 1]: the tilted forward and backward, then every open
    chunk advanced through its continue arcs and closed against the tilted backward
    (module doc)."""
    rows = np.arange(batch.B) if rows is None else np.asarray(rows)
    B = len(rows)
    n, L = batch.n, batch.L
    sp = batch.space
    T = len(sp.types)
    op = sp.opens[:L].astype(float)
    stay = 1.0 - op
    cont = sp.cont[:L].astype(float)
    close_op = (sp.closes[:L] & sp.opens[:L]).astype(float)
    close_stay = (sp.closes[:L] & ~sp.opens[:L]).astype(float)
    first = sp.opens[L]
    onehot = (sp.type_index[None, :] == np.arange(T)[:, None]).astype(float)   # (T, L)
    R = z.shape[1]
    zz = z[:, :, None]                                    # (B, R, 1)
    s_ = rows[:, None]
    last = batch.lengths[rows] - 1
    n = int(last.max()) + 1
    # tilted forward F[i] (B, R, L) and its log scale fa[i] (B, R)
    F = np.zeros((n, B, R, L))
    fa = np.zeros((n, B, R))
    x = ops.a[rows, None, 0] * np.where(first, zz, 1.0)
    for i in range(n):
        if i:
            x = ops.fwd(x, s_, i, stay) + zz * ops.fwd(x, s_, i, op)
        tot = x.sum(axis=-1)
        ok = tot > 0
        x = x / np.where(ok, tot, 1.0)[..., None]
        fa[i] = (fa[i - 1] if i else 0.0) + np.log(np.where(ok, tot, 1.0))
        F[i] = x
    # tilted backward Bk[i] (B, R, L) (b̂ at each sentence's end) and its log scale
    Bk = np.zeros((n, B, R, L))
    fb = np.zeros((n, B, R))
    y = np.zeros((B, R, L))
    lb = np.zeros((B, R))
    for i in range(n - 1, -1, -1):
        if i < n - 1:
            y = ops.bwd(y, s_, i + 1, stay) + zz * ops.bwd(y, s_, i + 1, op)
            tot = y.sum(axis=-1)
            ok = tot > 0
            y = y / np.where(ok, tot, 1.0)[..., None]
            lb = lb + np.log(np.where(ok, tot, 1.0))
        end = last == i
        if end.any():
            y[end] = ops.bt[rows[end], i][:, None, :]
            lb[end] = 0.0
        Bk[i], fb[i] = y, lb
    # the sweep: column c holds the chunks opened at token c, advanced to token e - 1
    Q = np.zeros((B, R, T, n, n + 1))
    G = np.zeros((B, R, n, L))
    lg = np.full((B, R, n), -np.inf)
    for e in range(1, n + 1):
        s = e - 1                                          # open a chunk at token s
        if s == 0:
            G[:, :, 0] = ops.a[rows, None, 0] * first * zz
            lg[:, :, 0] = 0.0
        else:
            G[:, :, s] = zz * ops.fwd(F[s - 1], s_, s, op)
            lg[:, :, s] = fa[s - 1]
        cols = slice(0, e)
        g = G[:, :, cols]                                  # (B, R, e, L)
        at_end = (last == e - 1)[:, None, None, None]
        if e < n:
            close = ops.bwd(Bk[e], s_, e, close_stay) + zz * ops.bwd(Bk[e], s_, e, close_op)
            scale = fb[e]
        else:
            close, scale = np.zeros((B, R, L)), np.zeros((B, R))
        vec = np.where(at_end[..., 0], Bk[e - 1], close)                # (B, R, L)
        sc = np.where(at_end[:, :, 0, 0], fb[e - 1], scale)              # (B, R)
        val = np.matmul(g * vec[:, :, None, :], onehot.T).transpose(0, 1, 3, 2)   # (B, R, T, e)
        with np.errstate(over="ignore", invalid="ignore"):
            mult = np.exp(lg[:, :, cols] + sc[..., None])                # (B, R, e)
        live = (e - 1 <= last)[:, None, None, None]
        Q[:, :, :, cols, e] = np.where(live, np.nan_to_num(val * mult[:, :, None, :]), 0.0)
        if e < n:                                           # advance the open chunks
            nxt = ops.fwd(g, s_[:, :, None], e, cont)
            mx = nxt.max(axis=-1)
            ok = mx > 0
            G[:, :, cols] = np.where(ok[..., None], nxt / np.where(ok, mx, 1.0)[..., None], 0.0)
            lg[:, :, cols] = np.where(ok, lg[:, :, cols] + np.log(np.where(ok, mx, 1.0)),
                                      -np.inf)
    return np.minimum(Q, 1.0)


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
           map_probs: list) -> list[MEUResult]:
    """The exact MEU decision of every sentence of the batch (module doc); ``map_chunks``:
    each sentence's MAP chunks (type index, s, e), ``map_probs`` their marginals.  The
    quadrature is first built for the count window holding all but 1e-9 of Pr(m); a
    sentence whose certificate then exceeds :data:`.meu.GAP_RETRY` is decided again
    on the 1e-18 window (the per-sentence search's rule)."""
    pm = count_distributions(ops, batch)
    out = _decide(ops, batch, beta_sq, map_chunks, map_probs, pm, np.arange(batch.B),
                  CORE_TAIL)
    again = [b for b, r in enumerate(out) if r.gap > GAP_RETRY]
    if again:
        for b, r in zip(again, _decide(ops, batch, beta_sq, map_chunks, map_probs, pm,
                                       np.array(again), WINDOW_TAIL)):
            out[b] = r
    return out


def _decide(ops, batch: RaggedBatch, beta_sq: float, map_chunks: list, map_probs: list,
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
    # lower bounds on U(MAP) from its chunks' marginals: Jensen, E[1{c}/(k + wm)] ≥
    # Pr(c)²/(k·Pr(c) + w·E[m]); and (Pr(c) − Pr(m > m_hi))/(k + w·m_hi)
    mean_m = pm @ np.arange(n + 1)
    p_above = np.array([pm[b, m_hi[b] + 1:].sum() for b in range(B)])
    k_map = np.array([len(map_chunks[r]) for r in rows])
    lb = pm[:, 0].copy()
    for b, r in enumerate(rows):
        if k_map[b]:
            pc = np.asarray(map_probs[r], dtype=float)
            jensen = (pc ** 2 / np.maximum(k_map[b] * pc + w * mean_m[b], 1e-300)).sum()
            window = np.maximum(pc - p_above[b], 0).sum() / (k_map[b] + w * m_hi[b])
            lb[b] = max(lb[b], (1 + w) * max(jensen, window))
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
    picked: list = [None] * B
    for group in _groups(lens, [len(t) for t, _ in rules], [len(k) for k in ks], T):
        Rg, Kg = max(1, max(len(rules[b][0]) for b in group)), max(1, max(len(ks[b]) for b in group))
        h[group, :Kg], picked_g = _solve(ops, batch, rows[group], w, t_nodes[group, :Rg],
                                         logw[group, :Rg], kk[group, :Kg],
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
        gap = max(0.0, max(ub) - (best_val - best_err))
        out.append(MEUResult(best_chunks, best_val, gap, len(ks[b]), len(rules[b][0])))
    return out


def _groups(lens, nodes, ks, T) -> list[np.ndarray]:
    """The sentences cut into groups of similar rule sizes (each group's nodes are
    padded to its largest rule) and dense tables of at most :data:`GROUP_BYTES`."""
    order = np.lexsort((np.asarray(lens), np.asarray(nodes)))
    out, cur, top = [], [], 0.0
    for b in order:
        size = table_bytes(int(lens[b]), nodes[b] + ks[b], T)
        if cur and (len(cur) + 1) * max(top, size) > GROUP_BYTES or \
                cur and nodes[b] > 1.5 * nodes[cur[0]] + 4:
            out.append(np.array(cur))
            cur, top = [], 0.0
        cur.append(b)
        top = max(top, size)
    if cur:
        out.append(np.array(cur))
    return out


def _solve(ops, batch: RaggedBatch, rows: np.ndarray, w: float, t_nodes: np.ndarray,
           logw: np.ndarray, kk: np.ndarray, solved: list) -> tuple[np.ndarray, list]:
    """For the sentences ``rows``: h[b, j] = max Σ g_k over sets of exactly k = kk[b, j]
    spans (−inf where none fits, or j ≥ solved[b]), and per sentence a function
    j -> those spans (steps 4 and 5 of the module doc)."""
    lens = batch.lengths[rows]
    Q = tilted_tables(ops, batch, np.exp(-w * t_nodes), rows)     # (B, R, T, n, n+1)
    B, _, _, n, _ = Q.shape
    K = kk.shape[1]
    coef = np.exp(logw[:, None, :] - t_nodes[:, None, :] * kk[:, :, None])   # (B, K, R)
    gbest = np.empty((B, K, n, n + 1))
    tbest = np.empty((B, K, n, n + 1), dtype=np.int64)
    flat = Q.reshape(B, Q.shape[1], -1)
    T = Q.shape[2]
    for j in range(K):                      # g_k = Σ_r W_r e^{-t_r k} Q_r, best type
        g = np.matmul(coef[:, j, None, :], flat).reshape(B, T, n, n + 1)
        gbest[:, j] = g.max(axis=1)
        tbest[:, j] = g.argmax(axis=1)
    del Q
    e_idx, s_idx = np.arange(n + 1), np.arange(n)
    absent = (e_idx[None, None, :] > lens[:, None, None]) | \
        (s_idx[None, :, None] >= e_idx[None, None, :])
    gbest = np.where(absent[:, None], -np.inf, gbest)
    D, arg = _counted_dp(gbest, int(kk.max()))
    h = np.take_along_axis(D[np.arange(B), :, :, lens], kk[:, :, None], axis=2)[..., 0]
    h = np.where(np.arange(K)[None, :] < np.array(solved)[:, None], h, -np.inf)

    def spans(b: int):
        return lambda j: _backtrace(arg[b, j], tbest[b, j], int(kk[b, j]), int(lens[b]))
    return h, [spans(b) for b in range(B)]


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
