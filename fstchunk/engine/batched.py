"""Batched forward-backward of dense linear chains for training, at any score scale.

:func:`transfer` turns a batch of equal-length sentences (emissions (B, n, L),
masked log transition, start and end scores, −inf = forbidden) into transfer
operators K_i, i ≥ 1, with

    â_i = â_{i−1}·K_i,   b̂_{i−1} = K_i·b̂_i,   â_0 = start,   b̂_{n−1} = end,

â_i∘b̂_i the token marginals and Σ_{p,q} â_{i−1}(p)·K_i(p, q)·b̂_i(q) = 1 (each
operator holds ``a``, ``bt`` (B, n, L), ``start``, ``end`` (B, L), ``logz`` (B,)
and ``exact``: whether it is the gauged one).  Any two
such representations differ by a gauge K_i(p, q)·g_i(q) / g_{i−1}(p), which
leaves every normalised expectation and its gradient unchanged, so the
expectation recursions (:func:`fstchunk.engine.corpus_expectations.corpus_expectations`,
the ML gradient) are written once over :meth:`fwd`, :meth:`bwd` and :meth:`pairs`:

* :class:`Scaled` — K_i = Mt∘φ_i / c_i, one shared (L, L) matrix: BLAS products
  over the whole batch (:func:`fstchunk.engine.scaled.scaled_recursions`); taken
  whenever its range check passes (ordinary scores);
* :class:`Gauged` — K_i(p, q) = Pr(y_i = q | y_{i−1} = p), the batched twin of
  :func:`fstchunk.engine.chain.gauge` from log-space backward vectors: entries in
  [0, 1] for scores of any finite magnitude; ~10x slower, memory O(B·n·L²)
  (:attr:`fstchunk.models.batching.Gold.batches` bounds B·n·L²).

Pitfall: the scaled path needs weights whose exp does not underflow: a finite
score more than ~700 nats below its array's max would become a forbidden arc, so
such a batch goes the gauged way too.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import InputError
from .chain import logsumexp
from .scaled import scaled_recursions

#: every sentence (or token) of the batch, as the ``s`` or ``t`` of fwd/bwd/pairs
ALL = slice(None)
#: Transition probabilities below exp(−FLUSH) of their row's largest are set to 0
#: in the gauged chain: subnormal doubles make every later product many times
#: slower, and the change (< L·1e-304 per probability) is far below rounding.
FLUSH = 700.0


def transfer(em: np.ndarray, trans: np.ndarray, start: np.ndarray, end: np.ndarray,
             weights=None, lengths: np.ndarray | None = None) -> "Scaled | Gauged":
    """The transfer operators of a batch (module doc): scaled where that is exact,
    gauged otherwise.  ``weights``: :func:`scaled_weights` of the same scores,
    computed once for many batches.  ``lengths`` (B,): a ragged batch (sentence b
    is its first lengths[b] tokens; ``end`` enters at each one's own last token;
    ``a`` and ``bt`` are 0 on the padding, so marginals and :meth:`pairs` there are 0;
    :meth:`fwd` and :meth:`bwd` do not stop at a sentence's end).  Raises InputError
    for NaN or +inf scores, or if a sentence has no valid sequence of positive weight."""
    if weights is None:
        weights = scaled_weights(trans, start, end)
    if weights is not None:
        rec, ok = scaled_recursions(em, *weights[0], lengths=lengths)
        if ok:
            return Scaled(rec, *weights, lengths=lengths)
    return Gauged(em, trans, start, end, lengths=lengths)


def scaled_weights(trans: np.ndarray, start: np.ndarray, end: np.ndarray):
    """((Mt, Ms, Me), shifts): exp(x − max x) of the masked log scores and the
    maxima, or None where some finite score's exp underflows to 0 (it would
    read as a forbidden arc) or a maximum is not finite."""
    shifts = [float(np.max(x)) for x in (trans, start, end)]
    if not all(np.isfinite(shifts)):
        return None
    M = [np.exp(x - m) for x, m in zip((trans, start, end), shifts)]
    if not all(np.array_equal(w > 0, np.isfinite(x)) for w, x in zip(M, (trans, start, end))):
        return None
    return M, shifts


class Scaled:
    """K_i = Mt∘φ_i / c_i (:func:`transfer`); ``logz`` (B,) adds back the shifts."""
    exact = False

    def __init__(self, rec, M, shifts, lengths: np.ndarray | None = None):
        phi, rmax, self.a, c, c_end, self.bt = rec
        Mt, Ms, Me = M
        n = self.a.shape[1] if lengths is None else np.asarray(lengths)
        self.Mt = Mt
        self.u = phi                                    # φ_i / c_i, in place (phi is ours)
        self.u.transpose(1, 2, 0)[...] /= c.T[:, None, :]   # in its (n, L, B) layout
        self.start = Ms * self.u[:, 0]
        self.end = Me[None] / c_end[:, None]
        self.logz = (np.log(c).sum(axis=1) + np.log(c_end) + rmax.sum(axis=1)
                     + shifts[1] + shifts[2] + (n - 1) * shifts[0])

    def fwd(self, x: np.ndarray, s, t, mask=None) -> np.ndarray:
        """x·(K_t∘mask) for the rows (sentence s, token t) of x (..., L)."""
        return (x @ (self.Mt if mask is None else self.Mt * mask)) * self.u[s, t]

    def bwd(self, y: np.ndarray, s, t, mask=None) -> np.ndarray:
        """(K_t∘mask)·y for the rows (sentence s, token t) of y (..., L)."""
        return (self.u[s, t] * y) @ (self.Mt if mask is None else self.Mt * mask).T

    def kernel(self, s, t) -> np.ndarray:
        """K_t(p, q) of the rows (sentence s, token t), (..., L, L)."""
        return self.Mt * self.u[s, t][..., None, :]

    def pairs(self, x: np.ndarray, y: np.ndarray, s, t) -> np.ndarray:
        """Σ_rows x(p)·K_t(p, q)·y(q), an (L, L) array."""
        L = self.Mt.shape[0]
        return self.Mt * (x.reshape(-1, L).T @ (y * self.u[s, t]).reshape(-1, L))

    def transitions(self) -> np.ndarray:
        """The expected transition counts Σ_b Σ_{i≥1} â_{i−1}(p)·K_i(p, q)·b̂_i(q), (L, L):
        :meth:`pairs` over every token, on the token-major arrays (no copies)."""
        a, bt, u = (v.transpose(1, 2, 0) for v in (self.a, self.bt, self.u))  # (n, L, B)
        y = bt[1:] * u[1:]
        return self.Mt * np.matmul(a[:-1], y.transpose(0, 2, 1)).sum(axis=0)


class Gauged:
    """K_i(p, q) = exp(w_i(p, q) + β_i(q) − β_{i−1}(p)), w_i = trans + em_i: the
    stochastic chain of the batch (:func:`transfer`), b̂ = 1 on live states."""
    exact = True

    def __init__(self, em: np.ndarray, trans: np.ndarray, start: np.ndarray, end: np.ndarray,
                 lengths: np.ndarray | None = None):
        if (np.isnan(em).any() or em.max() == np.inf or np.isnan(trans).any()
                or np.isnan(start).any() or np.isnan(end).any()
                or max(trans.max(), start.max(), end.max()) == np.inf):
            raise InputError("scores must be finite (−inf only for a forbidden arc, or in "
                             "emissions a tag forbidden at its token)")
        B, n, L = em.shape
        last = np.full(B, n - 1) if lengths is None else np.asarray(lengths) - 1
        if lengths is not None:         # padding: no arcs (K = 0, β = −∞) past the end
            em = np.where((np.arange(n)[None, :] > last[:, None])[..., None], 0.0, em)
        beta = np.full((B, n, L), -np.inf)
        beta[last == n - 1, -1] = end
        self.K = np.zeros((B, n, L, L))
        with np.errstate(divide="ignore", invalid="ignore"):
            for i in range(n - 1, 0, -1):      # β_{i−1} = log Σ_q exp(v), K_i = softmax_q(v)
                v = trans + (em[:, i] + beta[:, i])[:, None, :]
                m = v.max(axis=-1, keepdims=True)
                m[~np.isfinite(m)] = 0.0                  # dead rows: all −inf
                v -= m
                v[v < -FLUSH] = -np.inf                   # no subnormals (slow); < 1e-304
                np.exp(v, out=v)
                total = v.sum(axis=-1, keepdims=True)
                beta[:, i - 1] = (np.log(total) + m)[..., 0]
                np.divide(v, total, out=self.K[:, i], where=total > 0)
                beta[last == i - 1, i - 1] = end
        w0 = start + em[:, 0] + beta[:, 0]
        self.logz = logsumexp(w0, axis=-1)
        if not np.all(np.isfinite(self.logz)):
            raise InputError("the lattice gives no weight to any valid sequence")
        self.start = np.exp(w0 - self.logz[:, None])
        self.end = np.broadcast_to(np.isfinite(end).astype(float), (B, L))
        self.a = np.empty((B, n, L))
        self.a[:, 0] = self.start
        for i in range(1, n):
            self.a[:, i] = np.einsum("bp,bpq->bq", self.a[:, i - 1], self.K[:, i])
        self.bt = np.isfinite(beta).astype(float)

    def fwd(self, x: np.ndarray, s, t, mask=None) -> np.ndarray:
        """x·(K_t∘mask) for the rows (sentence s, token t) of x (..., L)."""
        K = self.K[s, t]
        return (x[..., None, :] @ (K if mask is None else K * mask))[..., 0, :]

    def bwd(self, y: np.ndarray, s, t, mask=None) -> np.ndarray:
        """(K_t∘mask)·y for the rows (sentence s, token t) of y (..., L)."""
        K = self.K[s, t]
        return ((K if mask is None else K * mask) @ y[..., None])[..., 0]

    def kernel(self, s, t) -> np.ndarray:
        """K_t(p, q) of the rows (sentence s, token t), (..., L, L)."""
        return self.K[s, t]

    def pairs(self, x: np.ndarray, y: np.ndarray, s, t) -> np.ndarray:
        """Σ_rows x(p)·K_t(p, q)·y(q), an (L, L) array."""
        L = x.shape[-1]
        ky = (self.K[s, t] * y[..., None, :]).reshape(-1, L, L)
        return np.einsum("rp,rpq->pq", x.reshape(-1, L), ky)

    def transitions(self) -> np.ndarray:
        """The expected transition counts Σ_b Σ_{i≥1} â_{i−1}(p)·K_i(p, q)·b̂_i(q), (L, L)."""
        return self.pairs(self.a[:, :-1], self.bt[:, 1:], ALL, slice(1, None))
