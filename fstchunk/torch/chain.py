"""The torch chain recursions: scaled forward, scaled backward, and log Z with its
gradient by forward-backward (issue 21).

For a padded batch (emissions (B, n, L) with padding zeroed, the masked transition
matrix Kt (L, L), start and end scores (L,), lengths (B,)) of the linear-chain CRF of
:mod:`fstchunk.torch.crf`:

* :func:`forward`: α̂_t = α_t − Σ_{u≤t} c_u, c_t = log Σ_l exp(α̂_{t−1} ⊗ Kt + e_t)_l, and
  log Z = Σ_{t<len} c_t + c_end (the **scaled log gauge**: α̂ ≤ 0);
* :func:`backward`: β̂_t = β_t − Σ_{u>t} c_u − c_end in the same gauge, so that
  α̂_t + β̂_t = log Pr(y_t = l) (Rabiner 1989's scaling, in log space);
* :func:`log_partition`: log Z as a custom autograd function, ∂log Z/∂e_t[l] =
  Pr(y_t = l), ∂log Z/∂Kt[i, j] = Σ_t Pr(y_{t−1} = i, y_t = j), ∂log Z/∂start = Pr(y_1),
  ∂log Z/∂end = Pr(y_len): the forward as scaled real matrix products
  (:func:`scaled_forward`) and the backward as the adjoint recursion of the same
  products, one (B, L) @ (L, L) product per token each way, no autograd graph of the
  n steps (autograd replaying every log-sum-exp was what kept the NLL behind
  pytorch-crf); an exact broadcast log-sum-exp path where a product underflows.

Pitfalls: :func:`log_partition` is differentiable once (``once_differentiable``: no
Hessian-vector products through it; take a Hessian by autograd through
:func:`forward`); the scaled products keep every factor in (0, 1] (exp(K − column
max), exp(α − row max)), and a product below 1e-280 sends the batch to the exact
path, so scores of any magnitude are safe; padding columns are carried through and
each sentence's end is selected with ``gather``/``torch.where`` (never by
multiplying by the mask).
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from .semiring import TINY, logmatmul, lse


def forward(em: torch.Tensor, Kt: torch.Tensor, start: torch.Tensor, end: torch.Tensor,
            lengths: torch.Tensor, mask: torch.Tensor):
    """Scaled forward: α̂ (B, n, L), c (B, n), c_end (B,), log Z (B,) (module doc)."""
    n = em.shape[1]
    a = start + em[:, 0]
    alphas, cs = [], []
    for u in range(n):
        if u:         # (B, L, 1) + (L, L): the small broadcast beats logmatmul here
            a = lse(alphas[-1].unsqueeze(-1) + Kt, -2) + em[:, u]
        c = lse(a, -1)
        alphas.append(a - c.unsqueeze(-1))
        cs.append(c)
    alpha, c = torch.stack(alphas, 1), torch.stack(cs, 1)
    last = (lengths - 1).view(-1, 1, 1).expand(-1, 1, alpha.shape[2])
    a_last = alpha.gather(1, last).squeeze(1)
    c_end = lse(a_last + end, -1)
    logz = torch.where(mask, c, torch.zeros_like(c)).sum(1) + c_end
    return alpha, c, c_end, logz


def backward(em: torch.Tensor, Kt: torch.Tensor, end: torch.Tensor, lengths: torch.Tensor,
             c: torch.Tensor, c_end: torch.Tensor) -> torch.Tensor:
    """Scaled backward β̂ (B, n, L) in the forward's gauge (module doc); 0 on padding."""
    n = em.shape[1]
    KtT = Kt.T
    fin = end - c_end.unsqueeze(-1)
    betas = [None] * n
    for u in range(n - 1, -1, -1):
        at_end = (lengths - 1 == u).unsqueeze(-1)
        if u < n - 1:
            rec = logmatmul(betas[u + 1] + em[:, u + 1], KtT) - c[:, u + 1, None]
            b = torch.where(at_end, fin, torch.where(
                (u < lengths - 1).unsqueeze(-1), rec, torch.zeros_like(rec)))
        else:
            b = torch.where(at_end, fin, torch.zeros_like(fin))
        betas[u] = b
    return torch.stack(betas, 1)


def scaled_forward(e: torch.Tensor, K: torch.Tensor, st: torch.Tensor, en: torch.Tensor,
                   mask: torch.Tensor):
    """The forward recursion as scaled real matrix products (:class:`_LogPartition`):
    α (B, n, L) in plain log space, the products S (B, n−1, L), log Z (B,) and whether
    no product underflowed (else the values are not to be used); K (L, L), st and en
    (L,), emissions e (B, n, L)."""
    mK = K.amax(-2, keepdim=True)
    EK = torch.exp(K - mK)
    a = st + e[:, 0]
    alphas, Ss = [a], []
    smin = None
    live = mask.all(0).tolist()
    for u in range(1, e.shape[1]):
        m = a.amax(-1, keepdim=True)
        S = (a - m).exp_() @ EK
        new = torch.log(S).add_(m).add_(mK).add_(e[:, u])
        a = new if live[u] else torch.where(mask[:, u:u + 1], new, a)
        alphas.append(a)
        Ss.append(S)
        smin = S.clone() if smin is None else torch.minimum(smin, S, out=smin)
    fast = smin is None or bool(smin.amin() > TINY)
    S = torch.stack(Ss, -2) if Ss else a.new_empty(0)
    return torch.stack(alphas, -2), S, lse(a + en, -1), fast


class _LogPartition(torch.autograd.Function):
    """log Z (B,) and its gradient; the recursion as scaled real matrix products.

    Fast path (float64 whatever the input dtype): with EK = exp(Kt − mK), mK the column
    maxima of Kt, and m_{t−1} the row maxima of a_{t−1},

        S_t = exp(a_{t−1} − m_{t−1}) @ EK,   a_t = log S_t + m_{t−1} + mK + e_t,

    and the adjoint ā_{t−1} = Ex_{t−1} ⊙ ((ā_t / S_t) @ EKᵀ), Ex = exp(a − m), so that
    ∂log Z/∂Kt = EK ⊙ Σ_t Ex_{t−1}ᵀ (ā_t / S_t): one (B, L) @ (L, L) product per step
    each way and no (B, L, L) tensor.  Every factor is in (0, 1]; S_t underflows only
    when the best arc into a tag is hundreds of nats below its column's best arc (scores
    of huge magnitude): then the whole batch is recomputed by the exact path, a
    broadcast log-sum-exp forward and per-step softmax weights backward."""

    @staticmethod
    def forward(ctx, em, Kt, start, end, lengths, mask):
        ctx.dtype = em.dtype
        e, K, st, en = (x.double() for x in (em, Kt, start, end))
        alpha, S, logz, fast = scaled_forward(e, K, st, en, mask)
        if not fast:                          # exact: broadcast log-sum-exp per step
            a, alphas = st + e[:, 0], [st + e[:, 0]]
            for u in range(1, e.shape[1]):
                a = torch.where(mask[:, u:u + 1], lse(a.unsqueeze(-1) + K, -2) + e[:, u], a)
                alphas.append(a)
            logz, alpha = lse(a + en, -1), torch.stack(alphas, 1)
        ctx.fast = fast
        ctx.save_for_backward(e, K, en, mask, alpha, logz, S if fast else torch.empty(0))
        return logz.to(ctx.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, g: torch.Tensor):
        e, K, en, mask, alpha, logz, S = ctx.saved_tensors
        g = g.double()
        n = e.shape[1]
        adj = torch.exp(alpha[:, -1] + en - logz.unsqueeze(-1)) * g.unsqueeze(-1)   # ā_n
        g_end = adj.sum(0)
        adjs = [adj]
        g_K = torch.zeros_like(K)
        if n > 1 and ctx.fast:
            mK = K.amax(0)
            EK = torch.exp(K - mK)
            Ex = torch.exp(alpha[:, :-1] - alpha[:, :-1].amax(-1, keepdim=True))
            rs = []
            live = mask.all(0).tolist()
            for u in range(n - 1, 0, -1):
                r = adj / S[:, u - 1]
                back = (r @ EK.T).mul_(Ex[:, u - 1])
                if not live[u]:
                    r = torch.where(mask[:, u:u + 1], r, torch.zeros_like(r))
                    back = torch.where(mask[:, u:u + 1], back, adj)
                adj = back
                adjs.append(adj)
                rs.append(r)
            R = torch.stack(rs[::-1], 1)                                 # (B, n-1, L)
            g_K = EK * (Ex.reshape(-1, K.shape[0]).T @ R.reshape(-1, K.shape[0]))
        elif n > 1:
            for u in range(n - 1, 0, -1):
                W = torch.exp(alpha[:, u - 1].unsqueeze(-1) + K
                              - (alpha[:, u] - e[:, u]).unsqueeze(-2))
                P = W * adj.unsqueeze(-2)
                live = mask[:, u:u + 1]
                g_K = g_K + torch.where(live.unsqueeze(-1), P, torch.zeros_like(P)).sum(0)
                adj = torch.where(live, P.sum(-1), adj)
                adjs.append(adj)
        A = torch.stack(adjs[::-1], 1)                                  # ā_t (B, n, L)
        g_em = torch.where(mask.unsqueeze(-1), A, torch.zeros_like(A))
        out = (g_em, g_K, A[:, 0].sum(0), g_end)
        return (*(x.to(ctx.dtype) for x in out), None, None)


def log_partition(em: torch.Tensor, Kt: torch.Tensor, start: torch.Tensor, end: torch.Tensor,
                  lengths: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log Z (B,), differentiable once by forward-backward (module doc)."""
    return _LogPartition.apply(em, Kt, start, end, lengths, mask)
