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

Pitfalls: f is only ever 1 on chunk tags; a gold chunk of a type that no
tag has cannot be matched (such gold is refused by the checks); β > 0 and
m(g) = 0 make F = 0 whenever y has a chunk, and 1 only for the empty y.
"""

from __future__ import annotations

import torch

from .checks import Batch, Gold
from .semiring import NEG, laddexp, logmatmul, lse


def _neg_like(x: torch.Tensor) -> torch.Tensor:
    return torch.full_like(x, NEG)


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
    neg = _neg_like(psi)
    mt = g.match[:, 0]
    a00 = torch.where(~inchunk, psi, neg)                       # f=0, m=0 (O)
    a01 = torch.where(inchunk & ~mt, psi, neg)                  # f=0, m=1
    a11 = torch.where(inchunk & mt, psi, neg)                   # f=1, m=1
    A = torch.stack([torch.stack([a00, a01], 1), torch.stack([neg, a11], 1)], 1)
    Bt = torch.full_like(A, NEG)                                # (B, f, m, L)
    shift = lse(A.detach().reshape(B, -1), -1).view(B, 1, 1, 1)
    A = A - shift
    Bt = Bt - shift

    for u in range(1, n):
        e_u = em[:, u]
        ev = g.last[:, u - 1].view(B, 1, 1)                     # a gold chunk ended at u-1
        live = (u < bt.lengths).view(B, 1, 1, 1)
        AB = logmatmul(torch.cat([A, Bt], 1), Kcont) + e_u.view(B, 1, 1, L)
        Ac, Bc = AB[:, :2], AB[:, 2:]
        ca0 = torch.where(ev, laddexp(Ac[:, 0], Ac[:, 1]), Ac[:, 0])
        ca1 = torch.where(ev, _neg_like(Ac[:, 1]), Ac[:, 1])
        cb0 = torch.where(ev, laddexp(Bc[:, 0], Bc[:, 1]), Bc[:, 0])
        cb1 = torch.where(ev, _neg_like(Bc[:, 1]), Bc[:, 1])
        # every other arc closes y's chunk: a tp is completed where f = 1 and ev
        Sa = laddexp(A[:, 0], A[:, 1])
        Sb = laddexp(Bt[:, 0], Bt[:, 1], torch.where(ev, A[:, 1], _neg_like(A[:, 1])))
        N = logmatmul(torch.stack([Sa, Sb], 1), Knon) + e_u.view(B, 1, 1, L)
        Na, Nb = N[:, 0], N[:, 1]
        mu = g.match[:, u].view(B, 1, L)

        def step(c0, c1, N):
            out_o = _pad_m(torch.where(inchunk, _neg_like(N), N))        # into O: m
            opened = _pad_m(torch.where(inchunk, N, _neg_like(N)), front=True)   # m+1
            f0 = laddexp(_pad_m(c0), out_o, torch.where(mu, _neg_like(opened), opened))
            f1 = laddexp(_pad_m(c1), torch.where(mu, opened, _neg_like(opened)))
            return torch.stack([f0, f1], 1)

        A = torch.where(live, step(ca0, ca1, Na), _pad_m(A))
        Bt = torch.where(live, step(cb0, cb1, Nb), _pad_m(Bt))
        shift = lse(A.detach().reshape(B, -1), -1).view(B, 1, 1, 1)
        A = A - shift
        Bt = Bt - shift

    endv = crf._masked("end", bt.end)
    ev = g.last.gather(1, (bt.lengths - 1).view(B, 1)).view(B, 1, 1)
    Zm = lse(laddexp(A[:, 0], A[:, 1]) + endv, -1)                          # (B, M)
    Tm = lse(laddexp(Bt[:, 0], Bt[:, 1], torch.where(ev, A[:, 1], _neg_like(A[:, 1])))
             + endv, -1)
    logz = lse(Zm, -1).unsqueeze(-1)
    crf._check_paths(logz.squeeze(-1), bt)
    pm, tm = torch.exp(Zm - logz), torch.exp(Tm - logz)
    m = torch.arange(Zm.shape[1], dtype=em.dtype, device=em.device)
    den = m + beta * g.count.unsqueeze(-1)
    pos = den > 0
    f = torch.where(pos, tm * (beta + 1) / torch.where(pos, den, torch.ones_like(den)), pm)
    return f.sum(-1)
