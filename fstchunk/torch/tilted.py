"""The expected-F recursion in real space: the fast path of :mod:`.expected` (issue 21).

The same expectation-semiring DP as :func:`fstchunk.torch.expected.expected_f` over
states (node k, part, match flag f, tag l), where the node axis tilts every chunk
opening by z_k (slot 0: z = 1, slot 1: z = 0, the rest the quadrature nodes of
:func:`~fstchunk.torch.expected.node_axis`) and the parts are a = Σ w and b = Σ w·tp.
Here the states are real numbers, not logs: each step is two matrix products,

    C = x @ exp(K_cont − κ),   N = (x_{f=0} + x_{f=1} + [gold ended]·a_{f=1}→b) @ exp(K_non − κ),

then gates (the gold's ends and starts) and the emission factors exp(e_u − μ_u); x is
divided by a detached maximum per (sentence, node) each step, whose logs are summed
(κ, μ_u and the maxima cancel in every ratio T_k/Z_1 that E[F] is made of, so only
their sum is kept; the gradient flows through the factors, which is exact because the
constants cancel).  No exponential or logarithm per step: autograd replays products
and gates only.

**When it is exact.**  A real state can underflow where its log-space twin would not:
a state that some path reaches, but whose value is below 1e-280 of its row's maximum.
The structural support of every state (which (f, l) a valid path of the sentence
reaches, with and without chunks) is computed alongside as 0/1 products, and
:func:`expected_f_real` returns None if any supported a-state falls below
:data:`TINY` of its row's maximum (scores of huge magnitude, or nodes that tilt
hundreds of nats): the caller then runs the log-space DP.  The b part (Σ w·tp) may
underflow: b ≤ n·a entrywise, and a b-state below 1e-280 of its row contributes
less than that to E[F].
"""

from __future__ import annotations

import numpy as np
import torch

from .checks import Batch, Gold
from .semiring import NEG

#: rows are renormalised every this many tokens (each factor is at most 1 and a row
#: at most L times its last maximum, so nothing overflows in between)
RENORM = 4
#: a supported a-state below this share of its row's maximum sends the batch to the
#: log-space DP
TINY = 1e-280


def support(crf, bt: Batch, g: Gold) -> np.ndarray:
    """(B, n, 2, L) bool: which (match flag f, tag l) some valid prefix of the sentence
    reaches at token u, chunks allowed (the structure of :func:`real_dp`, scores aside);
    padding columns repeat the last token's."""
    ok_s, ok_c, ok_n = (crf._np[k] for k in ("start", "cont", "non"))
    op = crf._np["inchunk"]
    match, last = g.match.cpu().numpy(), g.last.cpu().numpy()
    B, n, L = match.shape
    out = np.zeros((B, n, 2, L), bool)
    out[:, 0, 0] = ok_s & ~(op & match[:, 0])
    out[:, 0, 1] = ok_s & op & match[:, 0]
    c_, n_ = ok_c.astype(np.int64), ok_n.astype(np.int64)
    for u in range(1, n):
        prev = out[:, u - 1].astype(np.int64)
        sc = prev @ c_ > 0                                          # (B, 2, L)
        sn = (prev[:, 0] + prev[:, 1]) @ n_ > 0                     # (B, L)
        ev = last[:, u - 1, None]
        out[:, u, 0] = (sc[:, 0] | (ev & sc[:, 1]) | (sn & ~match[:, u]))
        out[:, u, 1] = ((~ev & sc[:, 1]) | (sn & match[:, u]))
        dead = np.asarray(bt.lengths_list) <= u
        out[dead, u] = out[dead, u - 1]
    return out


def _factors(x: torch.Tensor, live: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """exp(x − max) over the live entries of x (NEG where not live) and the detached max."""
    mx = torch.where(live, x, torch.full_like(x, NEG)).detach().amax()
    return torch.where(live, torch.exp(x - mx), torch.zeros_like(x)), mx


def real_dp(crf, bt: Batch, g: Gold, tau: torch.Tensor, opens: bool = False):
    """The real-space DP over the node axis τ (B, K) (module doc), in float64: per
    (sentence, node) Z_k = Σ_y w(y)·z_k^{m(y)}, T_k = Σ_y w(y)·z_k^{m(y)}·tp(y) and, with
    ``opens``, M_k = Σ_y w(y)·z_k^{m(y)}·m(y), each up to a factor e^{scale_k} shared by
    the three; returns (Z, T, M or None, scale) (B, K), or None if a supported state
    underflowed."""
    em, tr = bt.emissions.double(), bt.transitions.double()
    st, en = bt.start.double(), bt.end.double()
    B, n, L = em.shape
    K = tau.shape[1]
    ok_c, ok_n = crf._mask("cont", tr), crf._mask("non", tr)
    inchunk = crf._mask("inchunk", tr)
    ok_s, ok_e = crf._mask("start", st), crf._mask("end", en)
    # one scale κ for every arc (each step takes exactly one arc)
    kap = torch.where(ok_c | ok_n, tr, torch.full_like(tr, NEG)).detach().amax()
    Ec = torch.where(ok_c, torch.exp(tr - kap), torch.zeros_like(tr))
    En = torch.where(ok_n, torch.exp(tr - kap), torch.zeros_like(tr))
    Es, _ = _factors(st, ok_s)
    Ee, _ = _factors(en, ok_e)
    if bool(((Es < TINY) & ok_s).any()) or bool(((Ee < TINY) & ok_e).any()):
        return None                           # start or end scores hundreds of nats apart
    mu = em.detach().amax(-1, keepdim=True)                         # (B, n, 1)
    Em = torch.exp(em - mu).view(B, 1, 1, n, 1, L).unbind(3)   # n × (B,1,1,1,L): one stack
    op = inchunk.double()
    zop = torch.exp(tau.double()).view(B, K, 1, 1) * op             # z on opening arcs
    gate = (1 - op) + zop                                           # (B, K, 1, L)
    mt = g.match.double()
    m_all, nm_all = mt.view(B, 1, 1, n, L).unbind(3), (1 - mt).view(B, 1, 1, n, L).unbind(3)
    ev_all = g.last.double().view(B, 1, 1, n, 1).unbind(3)          # a gold chunk ended at u
    # x: (B, K, part a, b_tp[, b_m], f, L); token 0: every chunk tag opens a chunk
    psi = (Es * Em[0].view(B, L)).view(B, 1, 1, L)
    opened = psi * zop
    a0 = psi * (1 - op) + opened * nm_all[0]
    a1 = opened * m_all[0]
    parts = [torch.cat([a0, a1], 2), torch.zeros_like(torch.cat([a0, a1], 2))]
    if opens:
        parts.append(torch.cat([opened * nm_all[0], a1], 2))
    x = torch.stack(parts, 2)
    rho = x[:, :, 0].detach().amax((-2, -1)).clamp_min(1e-300)
    x = x * (1 / rho).view(B, K, 1, 1, 1)
    scale = torch.log(rho)
    states = [x[:, :, 0].detach()]
    everyone = min(bt.lengths_list)
    for u in range(1, n):
        ev = ev_all[u - 1]
        C0, C1 = (x @ Ec).unbind(3)                                 # (B, K, P, L) each
        x0, x1 = x.unbind(3)
        S = x0 + x1
        S[:, :, 1] += ev.view(B, 1, 1) * x1[:, :, 0]             # a tp completes on closing
        N = S @ En
        moved = N * gate
        if opens:                             # an opening adds the path's weight to Σ w·m
            moved[:, :, 2] += N[:, :, 0] * zop[:, :, 0]
        new1 = torch.addcmul(C1 * (1 - ev), moved, m_all[u])
        new0 = torch.addcmul(torch.addcmul(C0, ev, C1), moved, nm_all[u])
        new = torch.stack([new0, new1], 3) * Em[u]
        if u < everyone:
            x = new
        else:
            x = torch.where((u < bt.lengths).view(B, 1, 1, 1, 1), new, x)
        if u % RENORM == 0 or u == n - 1:
            rho = x[:, :, 0].detach().amax((-2, -1)).clamp_min(1e-300)
            x = x * (1 / rho).view(B, K, 1, 1, 1)
            scale = scale + torch.log(rho)
        states.append(x[:, :, 0].detach())
    # underflow check (module doc): a supported a-state below TINY of its row's max (the
    # rows were last normalised up to RENORM steps before); a node with z = 0 is
    # supported on the O tags with f = 0 alone
    with torch.no_grad():
        sup = torch.as_tensor(support(crf, bt, g)).unsqueeze(1)     # (B, 1, n, 2, L)
        xs = torch.stack(states, 2)                                 # (B, K, n, 2, L)
        low = xs < TINY * xs.amax((-2, -1), keepdim=True)
        chunky = tau > NEG / 2                                      # z > 0: chunks allowed
        only_o = (~inchunk).view(1, 1, 1, 1, L) & (torch.arange(2) == 0).view(1, 1, 1, 2, 1)
        sup = torch.where(chunky.view(B, K, 1, 1, 1), sup, sup & only_o)
        if bool((low & sup & bt.mask.view(B, 1, n, 1, 1)).any()):
            return None
    evl = g.last.gather(1, (bt.lengths - 1).view(B, 1)).double().view(B, 1, 1)
    xa0, xa1 = x[:, :, 0, 0], x[:, :, 0, 1]
    Z = ((xa0 + xa1) * Ee).sum(-1)                                  # (B, K)
    T = ((x[:, :, 1, 0] + x[:, :, 1, 1] + evl * xa1) * Ee).sum(-1)
    M = ((x[:, :, 2, 0] + x[:, :, 2, 1]) * Ee).sum(-1) if opens else None
    if bool((Z[:, 0].detach() <= 0).any()):
        return None
    return Z, T, M, scale


def expected_f_real(crf, bt: Batch, g: Gold, beta: float, tau: torch.Tensor,
                    logw: torch.Tensor) -> torch.Tensor | None:
    """E_y[F_β(y | gold)] (B,) by :func:`real_dp` over the node axis (τ, log weights
    (B, K) of :func:`~fstchunk.torch.expected.node_axis`); None on an underflow."""
    out = real_dp(crf, bt, g, tau)
    if out is None:
        return None
    Z, T, _, scale = out
    rel = (scale - scale[:, :1]).detach()            # log of node k's scale over z = 1's
    quad = (torch.exp(logw.double() + rel) * T).sum(-1) / Z[:, 0]
    none = torch.exp(rel[:, 1]) * Z[:, 1] / Z[:, 0]                 # Pr(m(y) = 0)
    f = torch.where(beta * g.count.double() > 0, (beta + 1) * quad, (beta + 1) * quad + none)
    return f.to(bt.emissions.dtype)


def corpus_counts_real(crf, bt: Batch, g: Gold):
    """(Σ_i E[tp_i], Σ_i E[m(y_i)]) by :func:`real_dp` with one node, z = 1; None on an
    underflow."""
    tau = torch.zeros((bt.mask.shape[0], 1), dtype=torch.float64)
    out = real_dp(crf, bt, g, tau, opens=True)
    if out is None:
        return None
    Z, T, M, _ = out
    dt = bt.emissions.dtype
    return (T[:, 0] / Z[:, 0]).sum().to(dt), (M[:, 0] / Z[:, 0]).sum().to(dt)
