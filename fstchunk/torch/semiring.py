"""Log-semiring building blocks for the torch CRF.

``logmatmul(x, K)[..., c] = log Σ_l exp(x[..., l] + K[l, c])`` is the matrix
product of the log semiring: one step of a forward recursion.  It is a custom
autograd function computed as a scaled real matrix product (BLAS, no (..., L, L)
tensor of terms), with an exact log-sum-exp fallback for the entries where the
scaled product underflows (see :class:`_LogMatMul`); it saves O(|x| + |y|) for
autograd, so a recursion of n steps keeps O(n·|x|) memory (the expected-F DP
runs it on (B, 2, m, L) state tensors).  It is differentiable once (its
backward is ``once_differentiable``: no Hessians through it).

Pitfalls settled here:

* **Forbidden arcs are NEG = -1e30, not -inf.**  ``logsumexp`` of a row that is
  all -inf is -inf and its gradient NaN (exp(-inf - -inf)), and a NaN times a
  zero upstream gradient is still NaN; with a finite NEG every term is finite,
  exp(NEG - anything sane) is exactly 0.0, so results are exact and gradients of
  forbidden entries are exactly 0 (they enter through ``torch.where``).  Scores
  must therefore stay far below 1e30 in magnitude (any realistic score does);
  a state with no path has a value near a multiple of NEG, never a NaN.
* Log space throughout: nothing exponentiates a raw score, only differences
  against a log-sum-exp (terms <= 0), so scores of any magnitude neither
  overflow nor underflow to NaN.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

#: The log weight of a forbidden arc (see module doc).
NEG = -1e30


#: Below this a scaled sum has lost precision to underflow: recompute exactly.
TINY = 1e-280


class _LogMatMul(torch.autograd.Function):
    """y[r, c] = log Σ_l exp(X[r, l] + K[l, c]) as a scaled matrix product.

    Fast path: y = mx_r + mK_c + log S_rc, S = exp(X - mx) @ exp(K - mK), with
    mx the row maxima of X and mK the column maxima of K; every factor is in
    (0, 1], so nothing overflows.  S underflows only when the row's and the
    column's maxima sit at different l far apart (scores of huge magnitude);
    those entries (S < TINY) are recomputed exactly by log-sum-exp over their
    own L terms, unless every term holds a NEG (a state with no path, found by a
    0/1 product): its value only needs to stay about NEG, and it gets
    mx + mK + NEG (and no gradient).  The backward pass uses the same split:
    ∂y_rc/∂X_rl = ∂y_rc/∂K_lc = exp(X_rl + K_lc - y_rc) = Ex_rl·EK_lc / S_rc.

    The product always runs in float64 (float32 inputs are upcast, results cast
    back): float32's exp underflows at e^-103, which would send a large share of
    ordinary entries down the slow exact path."""

    @staticmethod
    def forward(ctx, X: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
        ctx.dtype = X.dtype
        Xin, Kin = X, K
        X, K = X.double(), K.double()
        mx = X.amax(-1, keepdim=True)
        mK = K.amax(0, keepdim=True)
        Ex, EK = torch.exp(X - mx), torch.exp(K - mK)
        S = (Ex @ EK).clamp_min(TINY)
        # entries with no term free of NEG have no path: they only need to stay NEG-ish
        live = ((X > NEG / 2).float() @ (K > NEG / 2).float()) > 0
        bad = (S <= TINY) & live
        y = mx + mK + torch.where(live, torch.log(S), torch.full_like(S, NEG))
        r, c = bad.nonzero(as_tuple=True)
        if len(r):
            y[r, c] = torch.logsumexp(X[r] + K[:, c].T, -1)
        # saved: the inputs as given and y (not Ex, S: recomputed, half the memory)
        ctx.save_for_backward(Xin, Kin, y, r, c)
        return y.to(ctx.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, g: torch.Tensor):
        X, K, y, r, c = ctx.saved_tensors
        X, K, g = X.double(), K.double(), g.double()
        mx = X.amax(-1, keepdim=True)
        mK = K.amax(0, keepdim=True)
        Ex, EK = torch.exp(X - mx), torch.exp(K - mK)
        # 1/S = exp(mx + mK - y) on the fast-path entries; no gradient where no path
        Gs = torch.where(y > NEG / 2, g * torch.exp((mx + mK - y).clamp_max(700.0)),
                         torch.zeros_like(g))
        if len(r):
            Gs[r, c] = 0.0
        gX = Ex * (Gs @ EK.T)
        gK = EK * (Ex.T @ Gs)
        if len(r):
            Wb = torch.exp(X[r] + K[:, c].T - y[r, c].unsqueeze(-1)) * g[r, c].unsqueeze(-1)
            gX.index_add_(0, r, Wb)
            gK.index_add_(1, c, Wb.T)
        return gX.to(ctx.dtype), gK.to(ctx.dtype)


def logmatmul(x: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """log Σ_l exp(x[..., l] + K[l, c]) for x (..., L) and K (L, C): (..., C)."""
    lead = x.shape[:-1]
    y = _LogMatMul.apply(x.reshape(-1, x.shape[-1]), K)
    return y.reshape(*lead, K.shape[1])


def lse(x: torch.Tensor, dim) -> torch.Tensor:
    """torch.logsumexp (finite inputs: see module doc)."""
    return torch.logsumexp(x, dim=dim)


def laddexp(*xs: torch.Tensor) -> torch.Tensor:
    """log(exp(x1) + exp(x2) + ...) of equally shaped tensors."""
    out = xs[0]
    for x in xs[1:]:
        out = torch.logaddexp(out, x)
    return out
