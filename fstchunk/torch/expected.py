"""Exact expected sentence F_β against a fixed gold, differentiable (issue 21).

For y ~ the CRF and the gold chunking g fixed (the training direction of
:func:`fstchunk.expected.expected_f`, ``reference=g``):

    E_y[F_β(y | g)] = Σ_y Pr(y) · (β+1)·tp(y, g) / (m(y) + β·m(g)),   0/0 := 1

(Jansche's slides, "expected F"; β weights recall linearly).  For a fixed m(y)
F is linear in tp, so the DP needs only Z[c] = Pr(m(y) = c) and
T[c] = E[tp · 1{m(y) = c}]: a forward recursion in the **expectation semiring**
(pairs (a, b) = (Σ w, Σ w·tp), b' = b·w + a·w·[a tp is completed]) over states

    (tag l, match flag f, chunk count m)

where f = 1 iff y's chunk through the current token opened exactly where a gold
chunk of the same type opens and that gold chunk has not ended before.  Arcs:

* a continuation arc (``cont``): m unchanged; f stays 1 unless the gold chunk
  ended at the previous token (y's chunk is then longer: f = 0);
* any other arc closes y's chunk (if any): a tp is completed iff f = 1 and a
  gold chunk ends at the previous token; it opens a chunk (m + 1, f = a gold
  chunk of the tag's type starts here) or enters O (f = 0).

The end of the sentence closes the last chunk the same way.  Both a and b are
kept in log space (b >= 0), each step rescaled by a detached constant (it
cancels in T/Z), and m grows by one slot per token: O(B·n²·L²) time and, with
:func:`~fstchunk.torch.semiring.logmatmul`, O(B·n²·L) autograd memory.

Cost at B = 32, n = 50, L = 23 (float64, CPU): about 0.45 GB of autograd
memory, growing as n² (about 2 GB at n = 100); split long sentences or the
batch if that is too much.

Pitfalls: f is only ever 1 on chunk tags; a gold chunk of a type that no
tag has cannot be matched (such gold is refused by the checks); m(g) = 0
makes F = 0 whenever y has a chunk and 1 for the empty y (0/0 := 1), and so
does β = 0 (F_0 is precision) for the empty y whatever the gold.
"""

from __future__ import annotations

import torch

from .checks import Batch, Gold
from .semiring import NEG, laddexp, logmatmul, lse


def _pad_m(x: torch.Tensor, front: bool = False) -> torch.Tensor:
    """Add one NEG slot to the count axis (-2): at the end, or at the front (m+1)."""
    row = torch.full_like(x.narrow(-2, 0, 1), NEG)
    return torch.cat([row, x] if front else [x, row], -2)


def expected_f(crf, bt: Batch, g: Gold, beta: float) -> torch.Tensor:
    """E_y[F_β(y | gold)] (B,) for a :class:`~fstchunk.torch.crf.ChunkCRF` and a
    checked batch and gold (see module doc)."""
    em, tr = bt.emissions, bt.transitions
    B, n, L = em.shape
    Kcont, Knon = crf._masked("cont", tr), crf._masked("non", tr)
    inchunk = crf._mask("inchunk", em)                         # (L,)

    # token 0: from the sentence start every chunk tag opens a chunk (m = 1)
    psi = crf._masked("start", bt.start) + em[:, 0]             # (B, L)
    neg = torch.full_like(psi, NEG)
    mt = g.match[:, 0]
    a00 = psi.masked_fill(inchunk, NEG)                         # f=0, m=0 (O)
    a01 = psi.masked_fill(~inchunk | mt, NEG)                   # f=0, m=1
    a11 = psi.masked_fill(~(inchunk & mt), NEG)                 # f=1, m=1
    A = torch.stack([torch.stack([a00, a01], 1), torch.stack([neg, a11], 1)], 1)
    # X[:, 0]: log Σ w, X[:, 1]: log Σ w·tp, over (f, m, l): (B, 2, 2, M, L)
    X = torch.stack([A, torch.full_like(A, NEG)], 1)
    X = X - lse(A.detach().reshape(B, -1), -1).view(B, 1, 1, 1, 1)

    for u in range(1, n):
        e_u = em[:, u].view(B, 1, 1, L)
        ev = g.last[:, u - 1].view(B, 1, 1, 1)                  # a gold chunk ended at u-1
        # continuation arcs: f = 1 survives unless the gold chunk ended at u-1
        C = logmatmul(X, Kcont) + e_u.unsqueeze(1)              # (B, 2, 2, M, L)
        c0 = torch.where(ev, laddexp(C[:, :, 0], C[:, :, 1]), C[:, :, 0])
        c1 = C[:, :, 1].masked_fill(ev, NEG)
        # every other arc closes y's chunk: a tp is completed where f = 1 and ev
        S = laddexp(X[:, :, 0], X[:, :, 1])                     # (B, 2, M, L)
        S = torch.stack([S[:, 0], laddexp(S[:, 1], X[:, 0, 1].masked_fill(~ev[:, 0], NEG))], 1)
        N = logmatmul(S, Knon) + e_u
        # ... into O (m, f = 0) or opening a chunk (m + 1, f = a gold chunk opens here)
        moved = torch.where(inchunk, _pad_m(N, front=True), _pad_m(N))
        mu = g.match[:, u].view(B, 1, 1, L)
        f0 = laddexp(_pad_m(c0), moved.masked_fill(mu, NEG))
        f1 = laddexp(_pad_m(c1), moved.masked_fill(~mu, NEG))
        live = (u < bt.lengths).view(B, 1, 1, 1, 1)
        X = torch.where(live, torch.stack([f0, f1], 2), _pad_m(X))
        X = X - lse(X[:, 0].detach().reshape(B, -1), -1).view(B, 1, 1, 1, 1)

    endv = crf._masked("end", bt.end)
    ev = g.last.gather(1, (bt.lengths - 1).view(B, 1)).view(B, 1, 1)
    Zm = lse(laddexp(X[:, 0, 0], X[:, 0, 1]) + endv, -1)                    # (B, M)
    Tm = lse(laddexp(X[:, 1, 0], X[:, 1, 1], X[:, 0, 1].masked_fill(~ev, NEG)) + endv, -1)
    logz = lse(Zm, -1).unsqueeze(-1)
    crf._check_paths(logz.squeeze(-1), bt)
    pm, tm = torch.exp(Zm - logz), torch.exp(Tm - logz)
    m = torch.arange(Zm.shape[1], dtype=em.dtype, device=em.device)
    den = m + beta * g.count.unsqueeze(-1)
    pos = den > 0
    f = torch.where(pos, tm * (beta + 1) / torch.where(pos, den, torch.ones_like(den)), pm)
    return f.sum(-1)


def corpus_counts(crf, bt: Batch, g: Gold) -> tuple[torch.Tensor, torch.Tensor]:
    """(Σ_i E[tp_i], Σ_i E[m(y_i)]) of a batch, the parts of the expected corpus F,
    from one scaled forward-backward (α̂, β̂, c of :class:`~fstchunk.torch.crf.ChunkCRF`):

    * E[m(y)] = Σ_u Pr(a chunk opens at u): the marginals of the opening arcs,
      α̂_{u-1} ⊗ K_open + e_u − c_u + β̂_u (the start's opening arcs at u = 0);
    * E[tp] = Σ over the gold chunks (t, s, e) of Pr((t, s, e) ∈ chunks(y)): per gold
      chunk, α̂_{s-1} through an opening arc into the tags of type t, continuation
      arcs to e−1, then a closing arc into e (or the sentence end), all gold
      chunks of the batch side by side.

    O(B·n·L² + J·w·L²) for J gold chunks of width at most w, instead of the O(B·n²·L²)
    of all chunk marginals; equal to summing :meth:`ChunkCRF.chunk_marginals` (tested).
    """
    alpha, c, beta, Kcont, Kopen, KcloseT, open0, tbias = crf._chunk_arcs(bt)
    em = bt.emissions
    B, n, L = em.shape
    zero = torch.zeros((), dtype=em.dtype, device=em.device)
    m = torch.exp(lse(open0 + em[:, 0] - c[:, 0, None] + beta[:, 0], -1)).sum()
    if n > 1:
        later = lse(logmatmul(alpha[:, :-1], Kopen) + em[:, 1:] - c[:, 1:, None]
                    + beta[:, 1:], -1)                                   # (B, n-1)
        m = m + torch.where(bt.mask[:, 1:], torch.exp(later), zero).sum()
    idx = [(b, s, e, k) for b, row in enumerate(g.chunks) for k, s, e in row]
    if not idx:
        return m * 0, m
    b, s, e, k = (torch.as_tensor(x, device=em.device, dtype=torch.long) for x in zip(*idx))
    prev = (s - 1).clamp(min=0)
    G = torch.where((s == 0).unsqueeze(-1), open0.expand(len(idx), L),
                    logmatmul(alpha[b, prev], Kopen))
    G = G + em[b, s] - c[b, s].unsqueeze(-1) + tbias[k]
    width = e - s
    for d in range(1, int(width.max())):
        u = (s + d).clamp(max=n - 1)
        nxt = logmatmul(G, Kcont) + em[b, u] - c[b, u].unsqueeze(-1)
        G = torch.where((d < width).unsqueeze(-1), nxt, G)
    at_end = (e == bt.lengths[b]).unsqueeze(-1)
    after = e.clamp(max=n - 1)
    closing = logmatmul(beta[b, after] + em[b, after], KcloseT) - c[b, after].unsqueeze(-1)
    cl = torch.where(at_end, beta[b, e - 1], closing)
    tp = torch.exp(lse(G + cl, -1)).sum()
    return tp, m
