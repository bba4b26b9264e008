"""Hildreth's algorithm (Censor & Zenios 1997) for the dual of the segment learner's
update (:mod:`.train`): cyclic coordinate ascent on α >= 0,

    α_c ← max(0, α_c + (r_c − (Gα)_c) / G_cc),

until the largest KKT violation is below ``tol`` (or ``max_sweeps``).

Pitfall: the sweeps alone converge slowly once the support {c : α_c > 0} is found;
when two sweeps agree on it, G_SS α_S = r_S is solved directly, and that point is
taken only if it is dual feasible and passes the same KKT test.
"""

from __future__ import annotations

import numpy as np


def hildreth(G: np.ndarray, r: np.ndarray, max_sweeps: int = 1000,
             tol: float = 1e-8) -> np.ndarray:
    """α >= 0 maximising the dual of min ½‖Δ‖² s.t. a_c·Δ >= r_c (G = [a_c·a_d]):
    cyclic coordinate ascent until every KKT violation is < ``tol``; Δ = Σ α_c a_c.

    Acceleration: when a sweep leaves the support {c : α_c > 0} as the sweep before
    did, the equations G_SS α_S = r_S are solved once; if that point is dual feasible
    and meets the KKT test it is the answer (the exact solution the sweeps converge
    to), otherwise the sweeps go on."""
    G = np.asarray(G, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    C = len(r)
    alpha, Ga = np.zeros(C), np.zeros(C)
    diag = np.diag(G).tolist()
    rl = r.tolist()
    support, tried = None, None
    for _ in range(max_sweeps):
        for c in range(C):
            if diag[c] <= 0.0:
                continue
            old = alpha[c]
            new = max(0.0, old + (rl[c] - Ga[c]) / diag[c])
            if new != old:
                alpha[c] = new
                Ga += (new - old) * G[c]
        if _kkt(alpha, r - Ga) < tol:
            break
        now = np.flatnonzero(alpha > 0)
        if support is not None and np.array_equal(now, support) and (
                tried is None or not np.array_equal(now, tried)):
            tried = now
            exact = np.zeros(C)
            exact[now] = np.linalg.lstsq(G[np.ix_(now, now)], r[now], rcond=None)[0]
            if exact.min() >= 0 and _kkt(exact, r - G @ exact) < tol:
                return exact
        support = now
    return alpha


def _kkt(alpha: np.ndarray, resid: np.ndarray) -> float:
    """The largest KKT violation: |r − Gα| where α > 0, (r − Gα)⁺ where α = 0."""
    return float(np.where(alpha > 0, np.abs(resid), np.maximum(resid, 0.0)).max(initial=0.0))
