"""Exact MEU decoding for F over segment sets with independent segment decisions.

A probabilistic segment model gives each candidate segment c_i of a sentence a
probability p_i of being in the gold set, the decisions independent, and no gold
segment outside the candidates.  With Z_i ~ Bernoulli(p_i), the gold count is
M = Σ_i Z_i (Poisson-binomial) and a predicted set S of size k has

    U(S) = E[F_β(S)] = E[(1+w)·Σ_{i∈S} Z_i / (k + w·M)]        (0/0 := 1: U(∅) = Pr(M = 0))

with w = β² of the standard β (F_β = (1+β²)PR/(β²P+R) as in :mod:`fstchunk.evaluation.chunks`;
the slides' β' = w, :mod:`fstchunk.core.fbeta`); at β = 0, U(∅) = 1 (k + w·M = 0 always).
For independent decisions the best set of each size k is the k most probable candidates
(Jansche 2007, "A maximum expected utility framework for binary sequence labeling";
Ye, Chai, Lee & Chieu 2012, "Optimizing F-measures: a tale of two approaches",
Theorem 3), so the MEU set is found exactly by sorting and one U per k:

    U(k) = (1+w) Σ_{i ≤ k} p_i · Σ_m Pr(M_{−i} = m) / (k + w(m + 1)),

M_{−i} the count of the other candidates.  Pr(M_{−i} = ·) is the convolution of the
Poisson-binomial distributions of the candidates before and after i (prefix and
suffix tables: no division by 1 − p_i, exact for p_i = 1), O(N²) per i, O(N³) in
all for N candidates; :func:`meu_set` takes them all (a sentence has tens).

Calibration (:func:`platt_fit`): a large-margin segment model's scores s become
probabilities p = σ(a·s + b), (a, b) by maximum likelihood of the candidates' gold
membership on held-out sentences (Platt 1999), fitted by Newton's method on the
convex logistic loss.

Pitfalls: ties in p are broken by candidate order (the top-k rule is exact for any
order within a tie: equal p give equal U); p must lie in [0, 1]; the independence
model is the assumption this decoder is exact under, not a property of the data.
"""

from __future__ import annotations

import itertools
from typing import Iterator, Sequence

import numpy as np

from ..core.errors import InputError
from ..core.fbeta import to_beta_sq
from ..structures.enumeration import LIMIT, check_size


def _check_probs(p: Sequence[float]) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if p.ndim != 1 or np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise InputError("segment probabilities must be a list of numbers in [0, 1]")
    return p


def poisson_binomial(p: np.ndarray) -> np.ndarray:
    """Pr(Σ Z_i = m) for m = 0..N, Z_i ~ Bernoulli(p_i) independent."""
    dist = np.zeros(len(p) + 1)
    dist[0] = 1.0
    for k, q in enumerate(p):
        dist[1:k + 2] = dist[1:k + 2] * (1 - q) + dist[:k + 1] * q
        dist[0] *= 1 - q
    return dist


def leave_one_out(p: np.ndarray) -> np.ndarray:
    """Row i: Pr(M_{−i} = m), m = 0..N−1, from prefix and suffix tables."""
    N = len(p)
    pre = [np.ones(1)]
    for q in p:
        d = pre[-1]
        pre.append(np.concatenate([d * (1 - q), [0.0]]) + np.concatenate([[0.0], d * q]))
    suf = [np.ones(1)]
    for q in p[::-1]:
        d = suf[-1]
        suf.append(np.concatenate([d * (1 - q), [0.0]]) + np.concatenate([[0.0], d * q]))
    out = np.zeros((N, max(N, 1)))
    for i in range(N):
        out[i] = np.convolve(pre[i], suf[N - 1 - i])
    return out


def expected_f_by_size(p: Sequence[float], beta: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(order, U) with ``order`` the candidates by decreasing p (stable) and U[k] the
    expected F_β of the k most probable, k = 0..N (standard β)."""
    p, beta_sq = _check_probs(p), to_beta_sq(beta)
    order = np.argsort(-p, kind="stable")
    q = p[order]
    N = len(q)
    U = np.zeros(N + 1)
    U[0] = float(np.prod(1 - q)) if beta_sq > 0 else 1.0      # β = 0: F_0(∅) = 0/0 := 1
    if N:
        loo = leave_one_out(q)                               # (N, N): rows i, counts m
        k = np.arange(1, N + 1)[:, None]
        m = np.arange(N)[None, :]
        G = loo @ (1.0 / (k + beta_sq * (m + 1))).T         # G[i, k−1]
        U[1:] = (1 + beta_sq) * np.cumsum(q[:, None] * G, axis=0)[np.arange(N), np.arange(N)]
    return order, U


def meu_set(p: Sequence[float], beta: float = 1.0) -> tuple[list[int], float]:
    """The candidate indices of the set of maximal expected F_β (sorted) and that
    expectation; the smallest such set when several sizes tie."""
    order, U = expected_f_by_size(p, beta)
    k = int(np.argmax(U))
    return sorted(int(i) for i in order[:k]), float(U[k])


def expected_f(p: Sequence[float], chosen: Sequence[int], beta: float = 1.0) -> float:
    """E[F_β] of predicting the candidates ``chosen`` (any set; Poisson-binomial over
    the chosen and the others separately: O(N²)); standard β."""
    p, beta_sq = _check_probs(p), to_beta_sq(beta)
    inside = np.zeros(len(p), bool)
    inside[list(chosen)] = True
    k = int(inside.sum())
    a, b = poisson_binomial(p[inside]), poisson_binomial(p[~inside])
    tp = np.arange(len(a))[:, None]
    m = tp + np.arange(len(b))[None, :]
    den = k + beta_sq * m
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(den > 0, (1 + beta_sq) * tp / np.where(den > 0, den, 1.0), 1.0)
    return float(a @ f @ b)


def enumerate_sets(p: Sequence[float], limit: int = LIMIT
                   ) -> Iterator[tuple[tuple[int, ...], float]]:
    """Every gold set G ⊆ candidates of non-zero probability, with
    Pr(G) = Π_{i∈G} p_i · Π_{i∉G} (1 − p_i) (independent decisions), subsets in
    binary order: the oracle of :func:`expected_f`, :func:`expected_f_by_size` and
    :func:`meu_set` (U(S) = Σ_G Pr(G)·F_β(S | G)).  InputError above ``limit`` sets."""
    p = _check_probs(p)
    check_size(2.0 ** len(p), limit, f"the gold sets of {len(p)} candidates", "sets")
    probs = ((z, float(np.prod(np.where(z, p, 1 - p))))
             for z in itertools.product((False, True), repeat=len(p)))
    return ((tuple(i for i, b in enumerate(z) if b), pr) for z, pr in probs if pr > 0)


def platt_fit(scores: Sequence[float], labels: Sequence[bool], iters: int = 100
              ) -> tuple[float, float]:
    """(a, b) maximising Σ log σ(±(a·s + b)) over held-out candidates (Newton steps
    with step halving; a small ridge 1e-9 keeps separable data finite)."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=float)
    if s.ndim != 1 or len(s) != len(y) or len(s) == 0 or not np.all(np.isfinite(s)):
        raise InputError("calibration needs finite scores and one label per score")
    if y.min() == y.max():
        raise InputError("calibration needs held-out candidates of both kinds (correct "
                         "and incorrect segments)")
    X = np.stack([s, np.ones_like(s)], axis=1)
    w = np.zeros(2)

    def loss(w):
        z = X @ w
        return float(np.sum(np.logaddexp(0, z) - y * z) + 0.5e-9 * w @ w)

    cur = loss(w)
    for _ in range(iters):
        z = X @ w
        mu = 1 / (1 + np.exp(-z))
        g = X.T @ (mu - y) + 1e-9 * w
        H = X.T @ (X * (mu * (1 - mu))[:, None]) + 1e-9 * np.eye(2)
        step = np.linalg.solve(H, g)
        t = 1.0
        while t > 1e-10 and loss(w - t * step) > cur:
            t /= 2
        w_new = w - t * step
        new = loss(w_new)
        done = abs(cur - new) <= 1e-12 * max(1.0, abs(cur))
        w, cur = w_new, min(cur, new)
        if done:
            break
    return float(w[0]), float(w[1])


def calibrated(scores: Sequence[float], a: float, b: float) -> np.ndarray:
    """p = σ(a·s + b)."""
    z = a * np.asarray(scores, dtype=float) + b
    return 1 / (1 + np.exp(-z))
