"""The chain engine: forward-backward over first-order chains, batched.

See :func:`scaled_forward_backward`.
"""

from __future__ import annotations

import numpy as np


def scaled_forward_backward(em: np.ndarray, Mt: np.ndarray, Ms: np.ndarray, Me: np.ndarray):
    """Forward-backward in probability space for a batch (B, n, L) of emission
    scores, one normaliser per token: returns φ = exp(em − rmax), rmax, â, c, c_end,
    b̂ with â_i = α_i / C_i, C_i = c_0⋯c_i, b̂_i = β_i·C_i / Z, so â·b̂ are the
    marginals and Z = C_{n−1}·c_end (times the exp-shifts)."""
    B, n, L = em.shape
    rmax = em.max(axis=2)
    phi = np.exp(em - rmax[..., None])
    a = np.empty((B, n, L))
    c = np.empty((B, n))
    x = Ms[None] * phi[:, 0]
    for i in range(n):
        if i:
            x = (a[:, i - 1] @ Mt) * phi[:, i]
        c[:, i] = x.sum(axis=1)
        a[:, i] = x / c[:, i:i + 1]
    c_end = a[:, -1] @ Me
    bt = np.empty((B, n, L))
    bt[:, -1] = Me[None] / c_end[:, None]
    for i in range(n - 2, -1, -1):
        bt[:, i] = ((phi[:, i + 1] * bt[:, i + 1]) @ Mt.T) / c[:, i + 1:i + 2]
    return phi, rmax, a, c, c_end, bt
