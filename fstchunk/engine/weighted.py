"""Per-type weighted F_β: chunk marginals by weighted chunk count, the expected value
and the exact MEU decision.

With integer weights w(t) ≥ 1 per chunk type (a LOC counting double: w(LOC) = 2),

    F_w(x | y) = (1+β²)·Σ_{c ∈ x ∩ y} w(c) / (K(x) + β²·M(y)),   K, M = Σ of w over x, y

(0/0 := 1).  Everything here comes from one table, Pr((t, s, e) ∈ chunks(y) and
M(y) = m) (:func:`weighted_marginals`): the counting forward-backward of
:func:`.counting.chunk_count_marginals` with a chunk of type t moving the count by
w(t), O(T·n³·w_max) memory.  With it, for a fixed x with weighted count K,

    E_y[F_w(x | y)] = (1+β²)·Σ_{c ∈ x} w(c)·Σ_m Pr(c ∈ y, M = m) / (K + β²m),

and the training direction (y* fixed, x random) is the same sum over y*'s chunks
with the roles of K and M swapped (:func:`weighted_expected_f`).  For a fixed K the
objective is a sum over chunks, so the MEU decision is the best set of
non-overlapping typed spans of total weight exactly K, for each K worth trying
(:func:`weighted_meu`): exact, with no gap.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import InputError
from .chain import flush, scaled_layers
from .meu import DEFAULT_MEMORY_BUDGET, MEUResult, refuse_over_budget, refuse_unwritable_empty


def weight_array(weights: dict[str, int], types, what: str) -> np.ndarray:
    """The weight of each of ``types`` (1 where ``weights`` leaves it out);
    InputError naming ``what`` for a weighted type not among them."""
    unknown = sorted(set(weights) - set(types))
    if unknown:
        raise InputError(f"{what}: {', '.join(map(repr, unknown))} not among the "
                         f"lattice's types {', '.join(types)}")
    return np.array([int(weights.get(t, 1)) for t in types])


def _state_weights(lattice, weights: np.ndarray) -> list[np.ndarray]:
    """Per layer, the weight of each destination state's chunk type (0 for O)."""
    tix = lattice.space.type_index
    return [np.where(tix[lab] >= 0, weights[np.maximum(tix[lab], 0)], 0)
            for lab in lattice.chain.labels]


def _shifted(M: np.ndarray, a: np.ndarray, wd: np.ndarray, opens: np.ndarray) -> np.ndarray:
    """Σ over transitions of M (S, S') applied to count vectors a (S, C), an opening
    transition into state s' moving the count by wd[s']: (S', C)."""
    C = a.shape[1]
    out = (M * ~opens).T @ a
    for v in np.unique(wd[wd > 0]):
        mv = (M * (opens & (wd == v)[None, :])).T
        out[:, v:] += mv @ a[:, :C - v]
    return out


def weighted_marginals(lattice, weights: np.ndarray):
    """(Pr((t, s, e) ∈ y, M = m) as [t, s, e, m], Pr(M = m)) with ``weights`` (T,)
    integers ≥ 1 in the order of ``lattice.space.types``.

    A chunk is entered by an opening transition at s (its own weight counted there),
    continued inside, left by a closing transition at e (which may open the next
    chunk) or the sentence end; counts before it come from the weighted counting
    forward, those after from the backward, convolved.  All open starts advance
    together, one layer at a time (as :func:`.counting.chunk_count_marginals`)."""
    n, T = lattice.n, len(lattice.space.types)
    C = int(weights.max()) * n + 1
    wds = _state_weights(lattice, weights)
    layers = list(scaled_layers(lattice.chain, lattice.space))
    alphas, ascale, a, ls = [], [], np.eye(1, C), 0.0
    for (_, w, mx, _, opens, _, _, _), wd in zip(layers, wds):
        a = _shifted(w, a, wd, opens)
        z = a.sum()
        if not z > 0:
            raise InputError("the lattice gives no weight to any valid sequence")
        a, ls = flush(a / z), ls + np.log(z) + mx
        alphas.append(a)
        ascale.append(ls)
    fmax = np.max(lattice.chain.final)
    fin = np.exp(lattice.chain.final - fmax)
    pm = fin @ alphas[-1]
    logz = ascale[-1] + np.log(pm.sum()) + fmax
    pm = pm / pm.sum()
    betas, bscale = [None] * n, [0.0] * n
    b, lb = np.zeros((len(fin), C)), fmax
    b[:, 0] = fin
    betas[n - 1], bscale[n - 1] = b, lb
    for i in range(n - 1, 0, -1):                # β_{i-1}: the suffix after token i - 1
        _, w, mx, _, opens, _, _, _ = layers[i]
        b = _back(w, b, wds[i], opens)
        z = b.sum()
        b, lb = flush(b / z), lb + np.log(z) + mx
        betas[i - 1], bscale[i - 1] = b, lb
    out = np.zeros((T, n, n + 1, C))
    tix = lattice.space.type_index
    idx = np.arange(C)[None, :] - np.arange(C)[:, None]          # Toeplitz offsets m - a
    Gs, lg = None, np.zeros(0)     # Gs[r, k, c]: inside a chunk entered at start k, state r
    for e in range(1, n + 1):
        s = e - 1
        _, w, mx, _, opens, _, _, dst = layers[s]
        g = _shifted(w * opens, alphas[s - 1] if s > 0 else np.eye(1, C), wds[s], opens)
        Gs = g[:, None, :] if Gs is None else np.concatenate([Gs, g[:, None, :]], axis=1)
        lg = np.append(lg, (ascale[s - 1] if s > 0 else 0.0) + mx)
        onehot = (tix[dst][:, None] == np.arange(T)[None, :]).astype(float)     # (S, T)
        if e == n:
            val = np.tensordot(onehot * fin[:, None], Gs, axes=([0], [0]))   # (T, k, C)
            out[:, np.arange(e), e] = val * np.exp(lg + fmax - logz)[None, :, None]
            break
        _, w2, mx2, cont, opens2, closes2, _, _ = layers[e]
        Bt = np.where(idx >= 0, betas[e][:, np.clip(idx, 0, C - 1)], 0.0)   # (S', C, C)
        V = np.zeros((len(dst), C, C))
        for v in np.unique(np.concatenate([[0], wds[e]])):
            m = closes2 & (((wds[e] == v)[None, :] & opens2) if v else ~opens2)
            if m.any():
                part = np.tensordot(w2 * m, Bt, axes=([1], [0]))        # (S, C, C)
                V[:, :, v:] += part[:, :, :C - v]
        res = np.matmul(Gs, V)                                        # (S, k, C)
        out[:, np.arange(e), e] = np.tensordot(onehot, res, axes=([0], [0])) * \
            np.exp(lg + mx2 + bscale[e] - logz)[None, :, None]
        Gs = np.einsum("ab,akc->bkc", w2 * cont, Gs)                  # stay inside
        top = Gs.max(axis=(0, 2))
        top = np.where(top > 0, top, 1.0)
        Gs = flush(Gs / top[None, :, None])
        lg = lg + mx2 + np.log(top)
    return out, pm


def _back(w: np.ndarray, b: np.ndarray, wd: np.ndarray, opens: np.ndarray) -> np.ndarray:
    """One backward layer: b (S', C) over the states after it → (S, C), an opening
    transition into s' adding wd[s'] chunks' weight (the suffix count)."""
    C = b.shape[1]
    out = (w * ~opens) @ b
    for v in np.unique(wd[wd > 0]):
        out[:, v:] += (w * (opens & (wd == v)[None, :])) @ b[:, :C - v]
    return out


def _fraction(beta_sq: float, k, m):
    """(1+β²)/(k + β²m), divided through by β² when β² > 1 (no overflow for huge β)."""
    if beta_sq <= 1:
        return (1 + beta_sq) / (k + beta_sq * m)
    return (1 + 1 / beta_sq) / (k / beta_sq + m)


def weighted_expected_f(P: np.ndarray, pm: np.ndarray, chunks, weights: np.ndarray,
                        beta_sq: float, fixed: str = "hypothesis") -> float:
    """E[F_w] of a fixed chunk list ``chunks`` ((type index or −1, start, end); −1: a
    type the lattice lacks, weight 1) from :func:`weighted_marginals`' (P, pm): the
    decision fixed (``"hypothesis"``) or the gold (``"reference"``), module doc.  As
    everywhere, F is 1 where its denominator is 0: both sides empty, or (β = 0) an
    empty decision."""
    w_of = [int(weights[t]) if t >= 0 else 1 for t, _, _ in chunks]
    fixed_count = sum(w_of)
    if fixed_count == 0:                 # an empty decision at β = 0 scores 1 on every y
        return 1.0 if fixed == "hypothesis" and beta_sq == 0 else float(pm[0])
    m = np.arange(P.shape[3], dtype=float)
    if fixed == "hypothesis":
        frac = _fraction(beta_sq, fixed_count, m)          # K fixed, M random
        empty = 0.0
    elif fixed == "reference":                             # M fixed, K random
        frac = np.zeros_like(m)
        frac[1:] = _fraction(beta_sq, m[1:], fixed_count)  # K = 0: no chunk of x is in P
        empty = float(pm[0]) if beta_sq == 0 else 0.0     # K = 0 and β = 0: 0/0 := 1
    else:
        raise InputError(f"fixed must be 'hypothesis' or 'reference', got {fixed!r}")
    return empty + float(sum(w * (P[t, s, e] @ frac)
                             for w, (t, s, e) in zip(w_of, chunks) if t >= 0))


def weighted_meu(lattice, weights: np.ndarray, beta_sq: float,
                 memory_budget: float = DEFAULT_MEMORY_BUDGET) -> MEUResult:
    """The exact MEU decision for F_w (module doc): each K (the decision's weighted
    count) whose bound (1+β²)·E[min(K, M)/(K + β²M)] beats the best value found is
    solved by the weighted interval DP (:func:`weighted_dp`); the empty decision
    scores Pr(M = 0) (1 when β = 0: it is the answer then).  ``gap`` is 0.0 (nothing is approximated).  BudgetError when the
    table would exceed ``memory_budget`` bytes."""
    n, T = lattice.n, len(lattice.space.types)
    if beta_sq == 0:       # F_0 = precision: the empty decision has F = 0/0 := 1
        refuse_unwritable_empty(lattice.space, beta_sq)
        return MEUResult([], 1.0, 0.0, 0, 0)
    C = int(weights.max()) * n + 1
    refuse_over_budget(f"weighted-F MEU of this {n}-token sentence", 8.0 * T * n * (n + 1) * C,
                       memory_budget)
    P, pm = weighted_marginals(lattice, weights)
    m = np.arange(C, dtype=float)
    t_i, s_i, e_i = np.nonzero(P.sum(axis=3) > 0)
    feats = P[t_i, s_i, e_i] * weights[t_i][:, None]             # (spans, C)
    best, best_chunks, solved = float(pm[0]), [], 0
    cheap = [0.0] + [float(pm @ (np.minimum(k, m) * _fraction(beta_sq, k, m)))
                     for k in range(1, C)]
    for k in sorted(range(1, C), key=lambda k: -cheap[k]):
        if cheap[k] <= best:
            break
        g = feats @ _fraction(beta_sq, k, m)
        value, chunks = weighted_dp(n, t_i, s_i, e_i, weights[t_i], g, k)
        solved += 1
        if chunks is not None and value > best:
            best, best_chunks = value, chunks
    return MEUResult(best_chunks, best, 0.0, solved, len(t_i))


def weighted_dp(n: int, types, starts, ends, span_w, g, K: int):
    """(best Σ g, its spans as (type, start, end)) over sets of non-overlapping spans
    of total weight exactly K (None when no set has it): D[k, i] = best of k weight
    inside tokens [0, i) = max(D[k, i − 1], max over spans (t, s, i) of
    D[k − w, s] + g)."""
    D = np.full((K + 1, n + 1), -np.inf)
    D[0] = 0.0
    for k in range(1, K + 1):
        ok = span_w <= k
        cand = np.full(n + 1, -np.inf)
        vals = D[k - span_w[ok], starts[ok]] + g[ok]
        np.maximum.at(cand, ends[ok], vals)
        D[k] = np.maximum.accumulate(cand)
    if not np.isfinite(D[K, n]):
        return -np.inf, None
    chunks, k, i = [], K, n
    while k > 0:
        while i > 0 and D[k, i] == D[k, i - 1]:
            i -= 1
        ok = (ends == i) & (span_w <= k)
        hit = np.flatnonzero(ok)[np.flatnonzero(
            D[k - span_w[ok], starts[ok]] + g[ok] == D[k, i])[0]]
        chunks.append((int(types[hit]), int(starts[hit]), i))
        k, i = k - int(span_w[hit]), int(starts[hit])
    return float(D[K, n]), chunks[::-1]
