"""The expected-F recursion in real space: the fast path of :mod:`.expected` (issue 21).

The expectation-semiring DP of :func:`fstchunk.torch.expected.expected_f` over states
(node k, part, match flag f, tag l): the node axis tilts every chunk opening by z_k > 0
(slot 0: z = 1, the rest the quadrature nodes of
:func:`~fstchunk.torch.expected.node_axis`; Pr(m(y) = 0), the log-space DP's slot z = 0,
is the all-O path's weight in closed form, :func:`empty_prob`), and the parts are
a = Σ w, b = Σ w·tp and, for the expected corpus F, Σ w·m.  The states are real
numbers, not logs; each token is two matrix products,

    C = x @ exp(K_cont − κ),   N = (x_{f=0} + x_{f=1} + [gold ended]·a_{f=1}→b) @ exp(K_non − κ),

then the gates (where gold chunks end and start), the tilt of opening arcs and the
emission factors exp(e_u − μ_u).  Every row (sentence, node) is divided by its maximum
every :data:`RENORM` tokens; the logs of those maxima are kept (κ, μ_u and the maxima
cancel in every ratio T_k/Z_1 that E[F] is made of).  :class:`_RealDP` runs it with
no autograd graph and takes the gradient by the adjoint recursion of the same linear
maps (x̄_{u−1} = the transposed gates and products applied to x̄_u; ∂/∂e_u[l] =
Σ x̄_u ⊙ x_u; ∂/∂K = Σ_u x_{u−1}ᵀ C̄_u and S_uᵀ N̄_u), so one token costs two products
forward and four backward, with no exponential or logarithm.

**When it is exact.**  A real state can underflow where its log-space twin would not.
Summed over f, a node's a-part evolves as the plain chain with tilted openings (the
gates only split mass between f = 0 and f = 1), so for z > 0 the tags that carry
mass at token u are those a valid prefix reaches (:func:`reachable`, the same for
every sentence).  :func:`real_dp` returns None if any reachable tag's a-mass falls
below :data:`TINY` of its row's maximum or below :data:`FLOOR`, or a row's maximum
below :data:`ROW_MIN` — at every token, and at a renormalisation token before the
rescaling, where a subnormal row would otherwise be scaled back up unnoticed (scores
of huge magnitude, or nodes that tilt hundreds of nats): the caller then runs the
log-space DP, which is exact at any scale.  Below that, the split over f and the
b part may underflow harmlessly: an f = 1 entry under 1e-280 of its tag's mass, or a
b entry (b ≤ n·a entrywise), follows the same arcs as the mass it is part of and
changes E[F] by less than n·1e-280.

Pitfalls: float64 throughout (float32 states would underflow at e^-87, within the
range of a trained tagger's scores, and send most batches to the slow path);
differentiable once; the stored states cost n·B·K·P·2·L·8 bytes (45 MB at n = 200,
B = 32, K = 12, L = 24) and live, with the per-token scratch, in buffers reused
across calls (:mod:`fstchunk.torch.workspace`: fresh memory costs page faults);
the tag axis is padded to a multiple of 12 (:func:`_width`).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from . import chain as _chain
from .checks import Batch, Gold
from .semiring import NEG
from .workspace import give as _give, hooked as _hooked, lend as _lend, take as _take

#: rows are renormalised every this many tokens (each factor is at most 1 and a row
#: grows at most L-fold per token, so nothing overflows in between)
RENORM = 8
#: a row whose maximum falls below this between two renormalisations (below e^-57
#: per token over RENORM tokens) sends the batch to the log-space DP
ROW_MIN = 1e-200
#: a reachable tag whose a-mass is below this share of its row's maximum, or below
#: FLOOR (near the subnormal range, where digits are lost), sends the batch to the
#: log-space DP
TINY = 1e-280
FLOOR = 1e-290


def _width(L: int) -> int:
    """The tag axis padded up to a multiple of 12 (unless L is one, or one more than
    one): MKL's float64 products of (rows, L) @ (L, L) run about twice as fast at
    L = 12k as at nearby widths (1,536 rows, one thread, L = 23 against 24:
    benchmarks/RESULTS.md); padding tags carry no mass, so the values are unchanged."""
    return L if L % 12 in (0, 1) else L + 12 - L % 12


def reachable(crf, n: int) -> np.ndarray:
    """(n, L) bool: the tags some valid prefix reaches at token u (start constraints and
    allowed arcs only; the same for every sentence), cached per length."""
    key = ("reach", n)
    if key not in crf._cache:
        ok_s, ok_t = crf._np["start"], crf._np["trans"].astype(np.float32)
        out = np.zeros((n, len(ok_s)), bool)
        out[0] = ok_s
        for u in range(1, n):
            out[u] = out[u - 1].astype(np.float32) @ ok_t > 0
        crf._cache[key] = out
    return crf._cache[key]


def _factors(x: torch.Tensor, live: torch.Tensor) -> torch.Tensor:
    """exp(x − max) over the live entries of x, 0 elsewhere."""
    mx = torch.where(live, x, torch.full_like(x, NEG)).amax()
    return torch.where(live, torch.exp(x - mx), torch.zeros_like(x))


class _RealDP(torch.autograd.Function):
    """(Z, T, M, scale, ok) of :func:`real_dp`; the backward is the adjoint recursion of
    the same linear maps, no autograd graph of the n steps (module doc).  States are
    laid out (token, f, part, sentence, node, tag) in one preallocated tensor, so every
    per-token operation reads and writes contiguous blocks."""

    @staticmethod
    def forward(ctx, em, tr, st, en, crf, g: Gold, lengths: list[int], tau, opens: bool):
        B, n, L = em.shape
        K = tau.shape[1]
        P = 3 if opens else 2
        ok_c, ok_n = crf._mask("cont", tr), crf._mask("non", tr)
        ok_s, ok_e = crf._mask("start", st), crf._mask("end", en)
        kap = torch.where(ok_c | ok_n, tr, torch.full_like(tr, NEG)).amax()
        Ec = torch.where(ok_c, torch.exp(tr - kap), torch.zeros_like(tr))
        En = torch.where(ok_n, torch.exp(tr - kap), torch.zeros_like(tr))
        Es, Ee = _factors(st, ok_s), _factors(en, ok_e)
        op = crf._mask("inchunk", tr).double()
        bad_end = bool(((Es < TINY) & ok_s).any() or ((Ee < TINY) & ok_e).any())
        W = _width(L)                     # padding tags: no arc, no start, no end, no mass
        Ec, En = (F.pad(x, (0, W - L, 0, W - L)) for x in (Ec, En))
        Es, Ee, op = (F.pad(x, (0, W - L)) for x in (Es, Ee, op))
        zop = torch.exp(tau).view(B, K, 1) * op                     # z on opening arcs
        tilt = bool((tau != 0).any())
        gate = (1 - op) + zop if tilt else None                     # (B, K, L)
        steps = _Steps(em, g, lengths, W)
        reach = F.pad(torch.as_tensor(reachable(crf, n), device=em.device), (0, W - L))
        L = W
        reach = reach.view(n, 1, 1, L)
        # the states x_u (f, part, B, K, L) and products S_u, in a reused workspace
        size = 2 * P * B * K * L
        pooled = not _hooked()             # under saved-tensor hooks: a buffer of its own
        buf = (_take(crf, n * size * 3 // 2, em.device) if pooled else
               em.new_empty(n * size * 3 // 2))
        X = buf[:n * size].view(n, 2, P, B, K, L)
        SS = buf[n * size:n * size * 3 // 2].view(n, P, B, K, L)
        # token 0: every chunk tag opens a chunk
        psi = (Es * steps.Em[0]).view(B, 1, L)
        opened = psi * zop
        x = X[0]
        x.zero_()
        x[0, 0] = psi * (1 - op) + opened * steps.nm[0]
        x[1, 0] = opened * steps.m[0]
        if opens:
            x[0, 2] = opened * steps.nm[0]
            x[1, 2] = opened * steps.m[0]
        rho = x[:, 0].amax((0, -1))                                 # (B, K)
        flags = [rho < ROW_MIN]                                     # rows lost before rescaling
        rho = rho.clamp_min(1e-300)
        x /= rho.view(B, K, 1)
        rhos, scale, done = [rho], torch.log(rho), 0
        work = _take(crf, 2 * size, em.device)                      # per-token scratch
        C = work[:size].view(2, P, B, K, L)
        N, Ng = work[size:].view(2, P, B, K, L).unbind(0)
        moved = Ng if tilt else N                                   # N[0] stays as is
        # per-token views taken once (indexing in the loop is Python overhead)
        Xu, X0, X1, X10 = X.unbind(0), X[:, 0].unbind(0), X[:, 1].unbind(0), X[:, 1, 0].unbind(0)
        Xf, SSu, SS1 = X.view(n, -1, L).unbind(0), SS.unbind(0), SS[:, 1].unbind(0)
        SSf, Cf, Nf, (C0, C1) = SS.view(n, -1, L).unbind(0), C.view(-1, L), N.view(-1, L), C
        for u in range(1, n):
            ev, nev = steps.ev[u - 1], steps.nev[u - 1]
            torch.mm(Xf[u - 1], Ec, out=Cf)
            torch.add(X0[u - 1], X1[u - 1], out=SSu[u])
            SS1[u].addcmul_(ev, X10[u - 1])                          # a tp completes on closing
            torch.mm(SSf[u], En, out=Nf)
            if tilt:
                torch.mul(N, gate, out=Ng)
            if opens:                         # an opening adds the path's weight to Σ w·m
                moved[2].addcmul_(N[0], zop)
            torch.addcmul(C0, ev, C1, out=X0[u]).addcmul_(moved, steps.nm[u])
            torch.mul(C1, nev, out=X1[u]).addcmul_(moved, steps.m[u])
            new = Xu[u].mul_(steps.em[u])
            if not steps.all_live[u]:
                torch.where(steps.live[u], new, x, out=new)
            x, rho = new, None
            if u % RENORM == 0 or u == n - 1:
                rho = x[:, 0].amax((0, -1))
                flags.append((rho < ROW_MIN) & steps.live_at[:, u].view(B, 1))
                rho = rho.clamp_min(1e-300)
                x /= rho.view(B, K, 1)
                scale = scale + torch.log(rho)
                # check the tokens since the last renormalisation
                flags.append(_underflow(X[done:u + 1], reach[done:u + 1],
                                        steps.live_at[:, done:u + 1]))
                done = u + 1
            rhos.append(rho)
        if done < n:
            flags.append(_underflow(X[done:], reach[done:], steps.live_at[:, done:]))
        _give(crf, work)
        ok = not bool(torch.stack([f.any() for f in flags]).any())
        ok = ok and not bad_end
        evl = steps.evl                                             # (B, 1, 1)
        Z = ((x[0, 0] + x[1, 0]) * Ee).sum(-1)                      # (B, K)
        T = ((x[0, 1] + x[1, 1] + evl * x[1, 0]) * Ee).sum(-1)
        M = ((x[0, 2] + x[1, 2]) * Ee).sum(-1) if opens else torch.zeros_like(Z)
        ok = ok and bool((Z[:, 0] > 0).all())
        ctx.width = em.shape[2]
        ctx.opens, ctx.tilt, ctx.steps, ctx.rhos, ctx.crf = opens, tilt, steps, rhos, crf
        tensors = (X, SS) if ok and any(ctx.needs_input_grad[:4]) else ()
        if pooled and tensors:
            _lend(crf, buf, ctx)
        elif pooled:
            _give(crf, buf)
        ctx.save_for_backward(Ec, En, Ee, gate if tilt else Ee, zop, *tensors)
        ctx.mark_non_differentiable(scale)
        return Z, T, M, scale, torch.tensor(ok)

    @staticmethod
    @once_differentiable
    def backward(ctx, gZ, gT, gM, _gs, _go):
        Ec, En, Ee, gate, zop, xs, Ss = ctx.saved_tensors
        steps, rhos, opens, tilt = ctx.steps, ctx.rhos, ctx.opens, ctx.tilt
        x = xs[-1]
        _, P, B, K, L = x.shape
        n = len(xs)
        evl = steps.evl
        # seeds: Z = Σ (a0 + a1)·Ee, T = Σ (b0 + b1 + [end]·a1)·Ee, M = Σ (m0 + m1)·Ee
        xb = x.new_zeros((2, P, B, K, L))
        xb[:, 0] = gZ.view(B, K, 1) * Ee
        xb[:, 1] = gT.view(B, K, 1) * Ee
        xb[1, 0] += gT.view(B, K, 1) * evl * Ee
        if opens:
            xb[:, 2] = gM.view(B, K, 1) * Ee
        fin = (x[0, 0] + x[1, 0]) * gZ.view(B, K, 1) + (
            x[0, 1] + x[1, 1] + evl * x[1, 0]) * gT.view(B, K, 1)
        if opens:
            fin = fin + (x[0, 2] + x[1, 2]) * gM.view(B, K, 1)
        g_en = (fin * Ee).sum((0, 1))
        g_em = [None] * n
        g_Ec, g_En = torch.zeros_like(Ec), torch.zeros_like(En)
        EcT, EnT = Ec.T, En.T
        size = xb.numel()
        work = _take(ctx.crf, 6 * size, xb.device)        # per-token scratch
        nbs, tmp, p, back1 = (work[i * size:(i + 1) * size].view(xb.shape) for i in range(4))
        Nb, Sb, extra, _ = work[4 * size:].view(4, P, B, K, L).unbind(0)
        # per-token views and the scratch's views taken once (see the forward)
        Xu, Xf, SSf = xs.unbind(0), xs.view(n, -1, L).unbind(0), Ss.view(n, -1, L).unbind(0)
        (p0, p1), pf, Nbf, Sbf = p, p.view(-1, L), Nb.view(-1, L), Sb.view(-1, L)
        backs = [(b, b.view(-1, L), b[1, 0]) for b in (back1, xb)]
        for u in range(n - 1, 0, -1):
            live = steps.live[u]
            nb = xb if rhos[u] is None else torch.div(xb, rhos[u].view(B, K, 1), out=nbs)
            g_em[u] = torch.mul(xb, Xu[u], out=tmp).sum((0, 1, 3))  # Σ x̄_u ⊙ x_u: (B, L)
            torch.mul(nb, steps.em[u], out=p)                       # new̄ (before e_u)
            ev = steps.ev[u - 1]
            # moved̄ = p1·m + p0·(1 − m) and C̄_1 = p1·(1 − ev) + p0·ev, m and ev 0 or 1;
            # p becomes C̄ = (p0, C̄_1)
            torch.where(steps.mb[u], p1, p0, out=Nb)
            torch.where(steps.evb[u - 1], p0, p1, out=p1)
            if opens:
                torch.mul(Nb[2], zop, out=extra[0])
            if tilt:
                Nb.mul_(gate)
            if opens:
                Nb[0].add_(extra[0])
            if not steps.all_live[u]:
                g_em[u] *= steps.live_at[:, u].view(B, 1)
                p.mul_(live)
                Nb.mul_(live)
            torch.mm(Nbf, EnT, out=Sbf)                             # (P, B, K, L)
            back, backf, back10 = backs[0] if backs[0][0] is not xb else backs[1]
            torch.mm(pf, EcT, out=backf)
            back.add_(Sb)
            back10.addcmul_(ev, Sb[1])
            if not steps.all_live[u]:
                torch.where(live, back, nb, out=back)
            xb = back
            g_Ec.addmm_(Xf[u - 1].T, pf)
            g_En.addmm_(SSf[u].T, Nbf)
        g_em[0] = (xb * xs[0]).sum((0, 1, 3))
        _give(ctx.crf, work)
        L = ctx.width
        g_em = torch.stack(g_em, 1)[..., :L]                        # (B, n, L)
        g_tr = (g_Ec * Ec + g_En * En)[:L, :L]
        return g_em, g_tr, g_em[:, 0].sum(0), g_en[:L], None, None, None, None, None


def _underflow(X: torch.Tensor, reach: torch.Tensor, live: torch.Tensor) -> torch.Tensor:
    """Whether a reachable tag's a-mass (summed over f) fell below TINY of its row's
    maximum or below FLOOR, or a row's maximum below ROW_MIN, at the live tokens of a
    run of states X (t, 2, part, B, K, L) (module doc)."""
    xa = X[:, :, 0].sum(1)                                          # (t, B, K, L)
    top = xa.amax(-1, keepdim=True)
    low = (((xa < TINY * top) | (xa < FLOOR)) & reach) | (top < ROW_MIN)
    return low & live.T.reshape(*live.T.shape, 1, 1)


class _Steps:
    """Per-token views the DP reads, taken once: gold ends (ev, 1 − ev), gold starts
    (m, 1 − m), emission factors, which sentences are still live."""

    def __init__(self, em: torch.Tensor, g: Gold, lengths: list[int], width: int):
        B, n, L = em.shape
        dev = em.device
        Em = F.pad(torch.exp(em - em.amax(-1, keepdim=True)), (0, width - L))
        Em = Em.transpose(0, 1).contiguous()
        self.Em = Em                                                # (n, B, L)
        ev = g.last.double().T.contiguous()
        mt = F.pad(g.match.double(), (0, width - L)).transpose(0, 1).contiguous()
        L = width
        self.ev = ev.view(n, B, 1, 1).unbind(0)                     # (B, 1, 1) each
        self.evb = (ev > 0).view(n, B, 1, 1).unbind(0)
        self.nev = (1 - ev).view(n, B, 1, 1).unbind(0)
        self.m = mt.view(n, B, 1, L).unbind(0)                      # (B, 1, L) each
        self.mb = (mt > 0).view(n, B, 1, L).unbind(0)
        self.nm = (1 - mt).view(n, B, 1, L).unbind(0)
        self.em = Em.view(n, B, 1, L).unbind(0)                     # (B, 1, L) each
        lens = torch.as_tensor(lengths, device=dev)
        self.live_at = torch.arange(n, device=dev).view(1, n) < lens.view(B, 1)
        self.live = self.live_at.T.reshape(n, B, 1, 1).unbind(0)    # (B, 1, 1) each
        self.all_live = [u < min(lengths) for u in range(n)]
        self.evl = g.last.double().gather(1, lens.view(B, 1) - 1).view(B, 1, 1)


def real_dp(crf, bt: Batch, g: Gold, tau: torch.Tensor, opens: bool = False):
    """The real-space DP over the node axis τ (B, K) (module doc), in float64: per
    (sentence, node) Z_k = Σ_y w(y)·z_k^{m(y)}, T_k = Σ_y w(y)·z_k^{m(y)}·tp(y) and, with
    ``opens``, M_k = Σ_y w(y)·z_k^{m(y)}·m(y), each up to a factor e^{scale_k} shared by
    the three; returns (Z, T, M or None, scale) (B, K), or None if a reachable state
    underflowed.  Differentiable once (a custom backward: :class:`_RealDP`).  Every
    node must have z > 0 (τ finite): Pr(m(y) = 0) is :func:`empty_prob`."""
    if bool((tau <= NEG / 2).any()):
        raise ValueError("real_dp: every node needs z > 0 (tau > NEG/2)")
    Z, T, M, scale, ok = _RealDP.apply(bt.emissions.double(), bt.transitions.double(),
                                       bt.start.double(), bt.end.double(), crf, g,
                                       bt.lengths_list, tau.double(), opens)
    if not bool(ok):
        return None
    return Z, T, M if opens else None, scale


def expected_f_real(crf, bt: Batch, g: Gold, beta: float, tau: torch.Tensor,
                    logw: torch.Tensor) -> torch.Tensor | None:
    """E_y[F_β(y | gold)] (B,) by :func:`real_dp` over the node axis (τ, log weights
    (B, K) of :func:`~fstchunk.torch.expected.node_axis`; its slot 1, z = 0, is left out
    and Pr(m(y) = 0) taken from :func:`empty_prob`); None on an underflow."""
    keep = [0] + list(range(2, tau.shape[1]))
    tau, logw = tau[:, keep], logw[:, keep]
    out = real_dp(crf, bt, g, tau)
    if out is None:
        return None
    Z, T, _, scale = out
    rel = (scale - scale[:, :1]).detach()            # log of node k's scale over z = 1's
    f = (beta + 1) * (torch.exp(logw.double() + rel) * T).sum(-1) / Z[:, 0]
    zero = beta * g.count.double() == 0              # F = 1 for the empty y (0/0 := 1)
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
