"""The expected-F recursion in real space: the fast path of :mod:`.expected` (issue 21).

:func:`real_dp` runs the expectation-semiring DP of
:func:`fstchunk.torch.expected.expected_f` as real numbers over the node axis: node k
tilts every chunk opening by z_k > 0 (node 0: z = 1, the rest the quadrature nodes of
:func:`~fstchunk.torch.expected.node_axis`; Pr(m(y) = 0), the log-space DP's slot
z = 0, is the all-O path's weight in closed form, :func:`empty_prob`), and gives per
node Z_k = Σ w·z_k^m, T_k = Σ w·z_k^m·tp and, for the expected corpus F, M_k = Σ w·z_k^m·m;
E[F] is made of the ratios T_k/Z_1, in which every shift (the transition maximum, the
emission maxima, the renormalisations) cancels.  The recursion itself, one matrix
product per token over arc-kind columns, and its adjoint are in
:mod:`fstchunk.torch.recursion`; :class:`_RealDP` wraps them as an autograd function
(no graph of the n steps).  :func:`log_mgf` runs the a part alone for the count
windows' Chernoff tilts.

**When it is exact.**  A real state can underflow where its log-space twin would not.
The a part is the plain chain with tilted openings, so for z > 0 the columns that
carry mass at token u are those a valid prefix reaches (``Arcs.reachable``, the same
for every sentence).  :func:`real_dp` returns None if any reachable column's a-mass
falls below :data:`TINY` of its row's maximum or below :data:`FLOOR`, or a row's
maximum below :data:`ROW_MIN` — at every token, and at a renormalisation token before
the rescaling, where a subnormal row would otherwise be scaled back up unnoticed
(scores of huge magnitude, or nodes that tilt hundreds of nats): the caller then runs
the log-space DP, which is exact at any scale.  The other parts may underflow
harmlessly: f ≤ a and b ≤ n·a entrywise follow the same arcs as the a-mass they are
part of, so what they lose is below n·1e-280 of E[F].

Pitfalls: float64 throughout (float32 states would underflow at e^-87, within the
range of a trained tagger's scores, and send most batches to the slow path);
differentiable once; the stored states cost n·B·R·W·8 bytes (R = K + 2(K − 1) rows per
sentence for the expected sentence F: 19 MB at n = 200, B = 32, K = 6, W = 23) and live
in buffers reused across calls (:mod:`fstchunk.torch.workspace`: fresh memory costs
page faults).
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from . import chain as _chain
from .checks import Batch, Gold
from .recursion import FLOOR, RENORM, ROW_MIN, TINY, Run  # noqa: F401  (constants: tests)
from .semiring import NEG
from .workspace import give as _give, hooked as _hooked, lend as _lend

class _RealDP(torch.autograd.Function):
    """(Z, T, M, scale, ok) of :func:`real_dp`; the backward is the adjoint recursion
    of :class:`~fstchunk.torch.recursion.Run`, no autograd graph of the n steps."""

    @staticmethod
    def forward(ctx, em, tr, st, en, crf, g: Gold, lengths: list[int], tau, opens: bool,
                t0: int):
        pooled = not _hooked()             # under saved-tensor hooks: a buffer of its own
        grad = any(ctx.needs_input_grad[:4])
        run = Run(crf, em, tr, st, en, lengths, tau, g, opens, pooled, keep=grad, t0=t0)
        keep = run.ok and grad
        if pooled and keep:
            _lend(crf, run.buf, ctx)
        elif pooled:
            _give(crf, run.buf)
        Z, T, M, scale = run.out
        del run.out
        ctx.run = run if keep else None
        ctx.save_for_backward(run.buf if keep else em.new_empty(0))
        ctx.mark_non_differentiable(scale)
        return Z, T, M, scale, torch.tensor(run.ok)

    @staticmethod
    @once_differentiable
    def backward(ctx, gZ, gT, gM, _gs, _go):
        ctx.saved_tensors                  # raises if a backward already freed them
        g_em, g_tr, g_st, g_en = ctx.run.backward(gZ, gT, gM)
        return g_em, g_tr, g_st, g_en, None, None, None, None, None, None


def real_dp(crf, bt: Batch, g: Gold, tau: torch.Tensor, opens: bool = False, t0: int = 0):
    """The real-space DP over the node axis τ (B, K) (module doc), in float64: per
    (sentence, node) Z_k = Σ_y w(y)·z_k^{m(y)}, T_k = Σ_y w(y)·z_k^{m(y)}·tp(y) and, with
    ``opens``, M_k = Σ_y w(y)·z_k^{m(y)}·m(y), each up to a factor e^{scale_k} shared by
    the three (T_k and M_k only for k ≥ t0, 0 below); returns (Z, T, M or None, scale)
    (B, K), or None if a reachable state underflowed.  Differentiable once (a custom
    backward: :class:`_RealDP`).  Every node must have z > 0 (τ finite): Pr(m(y) = 0)
    is :func:`empty_prob`."""
    if bool((tau <= NEG / 2).any()):
        raise ValueError("real_dp: every node needs z > 0 (tau > NEG/2)")
    Z, T, M, scale, ok = _RealDP.apply(bt.emissions.double(), bt.transitions.double(),
                                       bt.start.double(), bt.end.double(), crf, g,
                                       bt.lengths_list, tau.double(), opens, t0)
    if not bool(ok):
        return None
    return Z, T, M if opens else None, scale


def log_mgf(crf, bt: Batch, s: torch.Tensor) -> torch.Tensor | None:
    """log E[e^{s_j·m(y)}] (J, B) for tilts s (J,): the a part alone with every opening
    weighted by e^{s_j} (no gradient); None where a reachable state underflowed (the
    caller's windows then cover every count)."""
    with torch.no_grad():
        B = bt.emissions.shape[0]
        tau = torch.cat([s.new_zeros(1), s.double()]).view(1, -1).expand(B, -1)
        run = Run(crf, bt.emissions.double(), bt.transitions.double(), bt.start.double(),
                  bt.end.double(), bt.lengths_list, tau.contiguous(), None, False,
                  not _hooked(), keep=False)
        _give(crf, run.buf)
        Z, _, _, scale = run.out
        if not run.ok or not bool((Z > 0).all()):
            return None
        logz = torch.log(Z) + scale                             # (B, J + 1)
        return (logz[:, 1:] - logz[:, :1]).T


def expected_f_real(crf, bt: Batch, g: Gold, beta_sq: float, tau: torch.Tensor,
                    logw: torch.Tensor) -> torch.Tensor | None:
    """E_y[F_β(y | gold)] (B,) by :func:`real_dp` over the node axis (τ, log weights
    (B, K) of :func:`~fstchunk.torch.expected.node_axis`; its slot 1, z = 0, is left out
    and Pr(m(y) = 0) taken from :func:`empty_prob`); ``beta_sq`` = β² of the standard β
    (:mod:`fstchunk.core.fbeta`); None on an underflow."""
    keep = [0] + list(range(2, tau.shape[1]))
    tau, logw = tau[:, keep], logw[:, keep]
    out = real_dp(crf, bt, g, tau, t0=1)          # node 0 (z = 1) only normalises
    if out is None:
        return None
    Z, T, _, scale = out
    rel = (scale - scale[:, :1]).detach()            # log of node k's scale over z = 1's
    f = (beta_sq + 1) * (torch.exp(logw.double() + rel) * T).sum(-1) / Z[:, 0]
    zero = beta_sq * g.count.double() == 0              # F = 1 for the empty y (0/0 := 1)
    if bool(zero.any()):
        f = torch.where(zero, f + empty_prob(crf, bt), f)
    return f.to(bt.emissions.dtype)


def empty_prob(crf, bt: Batch) -> torch.Tensor:
    """Pr(m(y) = 0) (B,) in float64: the one chunkless sequence, all O, has log weight
    start[O] + Σ_u e_u[O] + (n−1)·K[O, O] + end[O]; over log Z of
    :func:`fstchunk.torch.chain.log_partition` (0 where O is not a tag or cannot
    start, follow itself or end)."""
    em = bt.emissions.double()
    zero = em.new_zeros(em.shape[0])
    o = crf.tags.index("O") if "O" in crf.tags else None
    if o is None or not (crf._np["start"][o] and crf._np["end"][o]):
        return zero
    tr, st, en = (x.double() for x in (bt.transitions, bt.start, bt.end))
    loop = bool(crf._np["trans"][o, o])
    path = st[o] + torch.where(bt.mask, em[:, :, o], em.new_zeros(())).sum(1) + en[o]
    if loop:
        path = path + (bt.lengths - 1).double() * tr[o, o]
    logz = _chain.log_partition(em, crf._masked("trans", tr), crf._masked("start", st),
                                crf._masked("end", en), bt.lengths, bt.mask)
    p = torch.exp(path - logz)
    return p if loop else torch.where(bt.lengths > 1, zero, p)


def corpus_counts_real(crf, bt: Batch, g: Gold):
    """(Σ_i E[tp_i], Σ_i E[m(y_i)]) by :func:`real_dp` with one node, z = 1; None on an
    underflow."""
    tau = torch.zeros((bt.mask.shape[0], 1), dtype=torch.float64, device=bt.mask.device)
    out = real_dp(crf, bt, g, tau, opens=True)
    if out is None:
        return None
    Z, T, M, _ = out
    dt = bt.emissions.dtype
    return (T[:, 0] / Z[:, 0]).sum().to(dt), (M[:, 0] / Z[:, 0]).sum().to(dt)
