"""Log-semiring building blocks for the torch CRF.

``logmatmul(x, K)[..., c] = log Σ_l exp(x[..., l] + K[l, c])`` is the matrix
product of the log semiring: one step of a forward recursion.  It is a custom
autograd function that saves only ``x``, ``K`` and the result and rebuilds the
(..., L, L) tensor of terms in the backward pass, so a recursion of n steps
keeps O(n·|x|) memory for autograd instead of O(n·|x|·L) (the expected-F DP
runs it on (B, 2, m, L) state tensors).  Its backward is written in torch ops,
so it is differentiable again.

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

#: The log weight of a forbidden arc (see module doc).
NEG = -1e30


class _LogMatMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
        y = torch.logsumexp(x.unsqueeze(-1) + K, dim=-2)
        ctx.save_for_backward(x, K, y)
        return y

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        x, K, y = ctx.saved_tensors
        # w[..., l, c] = Pr(arc l -> c | state c): the softmax of logsumexp
        w = torch.exp(x.unsqueeze(-1) + K - y.unsqueeze(-2)) * g.unsqueeze(-2)
        gx = w.sum(-1) if ctx.needs_input_grad[0] else None
        gK = w.reshape(-1, *K.shape).sum(0) if ctx.needs_input_grad[1] else None
        return gx, gK


def logmatmul(x: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """log Σ_l exp(x[..., l] + K[l, c]) for x (..., L) and K (L, L)."""
    return _LogMatMul.apply(x, K)


def lse(x: torch.Tensor, dim) -> torch.Tensor:
    """torch.logsumexp (finite inputs: see module doc)."""
    return torch.logsumexp(x, dim=dim)


def laddexp(*xs: torch.Tensor) -> torch.Tensor:
    """log(exp(x1) + exp(x2) + ...) of equally shaped tensors."""
    out = xs[0]
    for x in xs[1:]:
        out = torch.logaddexp(out, x)
    return out
