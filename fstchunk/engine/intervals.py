"""Interval DPs: the best set of non-overlapping typed spans.

Both MEU decoders reduce to choosing chunks (t, s, e), non-overlapping, that
maximise a sum of span weights (Jansche §21):

* exact MEU for a hypothesis with k chunks: weights g_k(t, s, e) depend on k, and
  the answer needs exactly k spans -> :func:`best_chunk_sets` (one DP over
  (k, chunks so far, position) for every k at once);
* corpus MEU (Dinkelbach step): weights (β+1)·Pr(t, s, e) − λ, any number of spans
  -> :func:`best_chunk_set`.

Both are the one recursion :func:`_interval_dp`: D[j, i] = best weight of j chunks
within tokens [0, i) = max(D[j, i−1], max_s D[j−1, s] + w(s, i)), with the count
dimension collapsed to a single row when the number of chunks is free.

Pitfall: weights of impossible spans (e ≤ s) must be −inf, not 0; a span's best
type is chosen first (the type does not interact with the rest of the DP).
"""

from __future__ import annotations

import numpy as np


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
