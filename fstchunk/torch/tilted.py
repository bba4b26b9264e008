"""The expected-F recursion in real space: the fast path of :mod:`.expected` (issue 21).

The expectation-semiring DP of :func:`fstchunk.torch.expected.expected_f` over the
states (part, node k, column c) of :mod:`fstchunk.torch.arcs` (a column is a tag and
the kind of arc that entered it).  The node axis tilts every chunk opening by z_k > 0
(slot 0: z = 1, the rest the quadrature nodes of
:func:`~fstchunk.torch.expected.node_axis`; Pr(m(y) = 0), the log-space DP's slot z = 0,
is the all-O path's weight in closed form, :func:`empty_prob`).  The parts are

    a = Σ w,   b = Σ w·tp,   f = Σ w·[y's open chunk matches a gold chunk so far]
    (and, for the expected corpus F, m = Σ w·m(y)),

real numbers, not logs.  Each token is one matrix product of every part with the
column transfer matrix M, a mix of the parts by 0/1 column masks, and the tilt and
emission factors G_u = gate_k ⊙ exp(e_u − μ_u):

    Y = X_{u−1} @ M,
    a' = Y_a,  b' = Y_b + close_u ⊙ Y_f,  f' = keep_u ⊙ Y_f + match_u ⊙ Y_a,
    m' = Y_m + opening ⊙ Y_a,              X_u = (a', b', f', m') ⊙ G_u

(``close``: the closing columns after a gold chunk ended at u − 1, so a matched chunk
closing there is a true positive; ``keep``: the continuation columns unless it ended;
``match``: the opening columns of a gold chunk's type where it starts;
:class:`~fstchunk.torch.arcs.GoldCols`).  At the end Z = Σ a·E, T = Σ (b + [gold
ended]·f)·E.  Every row (sentence, node) is divided by its a-maximum every
:data:`RENORM` tokens and the logs kept (M's shift κ, μ_u and the maxima cancel in
every ratio T_k/Z_1 that E[F] is made of).  :class:`_RealDP` has no autograd graph of
the n steps: its backward is the adjoint recursion of the same linear maps
(Ȳ = mixᵀ(X̄_u ⊙ G_u), X̄_{u−1} = Ȳ @ Mᵀ, ∂log e_u = Σ X̄_u ⊙ X_u,
∂M = Σ_u X_{u−1}ᵀ Ȳ_u as one product at the end), so a token costs one product
forward and one backward, with no exponential or logarithm.

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
differentiable once; the stored states cost n·B·P·K·W·8 bytes twice (the states and
Ȳ; 26 MB each at n = 200, B = 32, P = 3, K = 7, W = 24) and live, with G, in buffers
reused across calls (:mod:`fstchunk.torch.workspace`: fresh memory costs page
faults).
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from . import chain as _chain
from .arcs import Arcs, gold_columns, width as _width  # noqa: F401  (_width: tests)
from .checks import Batch, Gold
from .semiring import NEG
from .workspace import give as _give, hooked as _hooked, lend as _lend, take as _take

#: rows are renormalised every this many tokens (each factor is at most 1 and a row
#: grows at most W-fold per token, so nothing overflows in between)
RENORM = 8
#: a row whose maximum falls below this between two renormalisations (below e^-57
#: per token over RENORM tokens) sends the batch to the log-space DP
ROW_MIN = 1e-200
#: a reachable column whose a-mass is below this share of its row's maximum, or below
#: FLOOR (near the subnormal range, where digits are lost), sends the batch to the
#: log-space DP
TINY = 1e-280
FLOOR = 1e-290


def _factors(x: torch.Tensor, live: torch.Tensor) -> torch.Tensor:
    """exp(x − max) over the live entries of x, 0 elsewhere."""
    mx = torch.where(live, x, torch.full_like(x, NEG)).amax()
    return torch.where(live, torch.exp(x - mx), torch.zeros_like(x))


class _Run:
    """One forward of the DP (module doc): the states X (n, B, P, K, W) (with
    ``keep``; else only the last RENORM + 1 tokens, in a ring), the column emission
    factors Em (n, B, W) and the node gates (B, K, W), the row maxima ρ_u (None
    between renormalisations), and what the backward reads; ``out`` = (Z, T, M,
    scale)."""

    def __init__(self, crf, em, tr, st, en, lengths: list[int], tau, g: Gold | None,
                 opens: bool, pooled: bool, keep: bool = True):
        ar = Arcs.of(crf, em.device)
        B, n, L = em.shape
        K, W, Cc = tau.shape[1], ar.W, ar.Cc
        P = 1 + 2 * (g is not None) + opens
        S = n if keep else min(n, RENORM) + 1          # state slots
        self.ar, self.crf, self.P, self.opens = ar, crf, P, opens
        self.M = ar.matrix(tr)
        ok_s, ok_e = crf._mask("start", st), crf._mask("end", en)
        Es, Ee = _factors(st, ok_s), _factors(en, ok_e)
        self.bad_end = bool(((Es < TINY) & ok_s).any() or ((Ee < TINY) & ok_e).any())
        Esc, self.Ee = ar.columns(Es) * ar.start, ar.columns(Ee)
        # one pooled buffer: states, column emissions, gold matches, the factor G_u
        sizes = [S * B * P * K * W, n * B * W, n * B * (W - Cc) if g is not None else 0,
                 B * K * W]
        self.buf = (_take(crf, sum(sizes), em.device) if pooled else
                    em.new_empty(sum(sizes)))
        X, Em, Mt, Gu = self.buf.split(sizes)
        Gu = Gu.view(B, K, W)
        X = X.view(S, B, P, K, W)
        Em = ar.columns(em.transpose(0, 1), out=Em.view(n, B, W))
        Em.sub_(em.amax(-1).T.unsqueeze(-1)).exp_()           # exp(e − μ), (n, B, W)
        if ar.real is not None:
            Em.mul_(ar.real)
        self.X, self.Em = X, Em
        self.emv = Em.view(n, B, 1, W).unbind(0)                 # (B, 1, W) each
        self.emv4 = Em.view(n, B, 1, 1, W).unbind(0)             # (B, 1, 1, W) each
        # the tilt: (1 − o) + z·o, not 1 + (z − 1)·o (that would lose a z below 1e-16)
        self.gate = ((1 - ar.opening) + torch.exp(tau).view(B, K, 1) * ar.opening
                     if bool((tau != 0).any()) else None)
        lens = torch.as_tensor(lengths, device=em.device)
        self.live_at = torch.arange(n, device=em.device).view(1, n) < lens.view(B, 1)
        self.live = self.live_at.T.reshape(n, B, 1, 1, 1).unbind(0)
        self.all_live = [u < min(lengths) for u in range(n)]
        gc = gold_columns(ar, g, lens, Mt) if g is not None else None
        self.gc = gc
        reach, steady = ar.reachable(n)
        pad = torch.zeros(W, dtype=torch.float64, device=em.device)
        pad[ar.C:] = float("inf")
        opening = ar.opening[Cc:]
        Xu, Xf = X.unbind(0), X.view(S, -1, W).unbind(0)
        A, Bp, Fp = (X[:, :, p] for p in (0, 1, 2)) if gc is not None else (X[:, :, 0],) * 3
        An, Bn, Fn = (y[..., Cc:].unbind(0) for y in (A, Bp, Fp))
        Fc = Fp[..., :Cc].unbind(0)
        Mn = X[:, :, P - 1, :, Cc:].unbind(0)
        # per-token views taken once (indexing in the loop costs a dispatch each)
        if gc is not None:
            ended, kept, match = (t.unbind(0) for t in (gc.ended, gc.kept, gc.match))
        emv, emv4, Gv, M_ = self.emv, self.emv4, Gu.unsqueeze(1), self.M
        gate, all_live = self.gate, self.all_live
        # the underflow test's sufficient threshold (:func:`_underflow`): a row starts a
        # stretch at maximum 1 and its a-part grows at most W·max G per token
        gmax = max(1.0, float(gate.max())) if gate is not None else 1.0
        floor = max(ROW_MIN, TINY * (W * gmax) ** RENORM)
        low = torch.full((B, K, W), float("inf"), dtype=torch.float64, device=em.device)
        flags, self.rhos, scale, done = [], [], None, 0
        for u in range(n):
            i = u if keep else u - done + 1                      # this token's slot
            x = Xu[i]
            if u == 0:             # every chunk tag opens a chunk (the tilt is in G_0)
                x.zero_()
                x[:, 0] = self.factor(0, Gu)[:, 0] * Esc
                if gc is not None:
                    torch.mul(x[:, 0, :, Cc:], match[0], out=x[:, 2, :, Cc:])
                if opens:
                    torch.mul(x[:, 0], ar.opening, out=x[:, P - 1])
            else:
                torch.mm(Xf[i - 1], M_, out=Xf[i])              # Y = X_{u−1} @ M
                if opens:
                    Mn[i].addcmul_(An[i], opening)
                if gc is not None:
                    Bn[i].addcmul_(Fn[i], ended[u])             # closing: a tp
                    Fc[i].mul_(kept[u])
                    torch.mul(An[i], match[u], out=Fn[i])
                if gate is None:
                    x.mul_(emv4[u])
                else:
                    torch.mul(emv[u], gate, out=Gu)
                    x.mul_(Gv)
                if not all_live[u]:
                    torch.where(self.live[u], x, Xu[i - 1], out=x)
            rho = None
            if u % RENORM == 0 or u == n - 1:
                rho = x[:, 0].amax(-1)                                  # (B, K)
                flags.append((rho < ROW_MIN) & self.live_at[:, u].view(B, 1))
                rho = rho.clamp_min(1e-300)
                x /= rho.view(B, 1, K, 1)
                scale = torch.log(rho) if scale is None else scale + torch.log(rho)
            if u < steady:                  # not every column reachable yet: exactly
                flags.append(_underflow(x[:, 0].unsqueeze(0), reach[u:u + 1], pad,
                                        self.live_at[:, u:u + 1]))
            else:
                torch.minimum(low, x[:, 0], out=low)
            if rho is not None:
                if bool((low + pad).amin() < floor):  # the stretch's rows, exactly
                    first = done if keep else 1
                    t = max(0, steady - done)
                    flags.append(_underflow(X[first + t:i + 1, :, 0], reach[done + t:u + 1],
                                            pad, self.live_at[:, done + t:u + 1]))
                low.fill_(float("inf"))
                done = u + 1
                if not keep and u < n - 1:
                    Xu[0].copy_(x)                  # the next stretch's previous token
            self.rhos.append(rho)
        self.ok = not self.bad_end and not bool(torch.stack([f.any() for f in flags]).any())
        Z = (x[:, 0] * self.Ee).sum(-1)                                 # (B, K)
        T = M = Z * 0
        if gc is not None:
            T = ((x[:, 1] + gc.last_end * x[:, 2]) * self.Ee).sum(-1)
        if opens:
            M = (x[:, P - 1] * self.Ee).sum(-1)
        self.ok = self.ok and bool((Z[:, 0] > 0).all())
        # the outputs are not kept here: the graph node holds this object, and an
        # output holds the graph node (a reference cycle the workspace would wait on)
        self.out = (Z, T, M, scale)

    def factor(self, u: int, out: torch.Tensor) -> torch.Tensor:
        """G_u = gate ⊙ exp(e_u − μ_u) as (B, 1, K, W) (K = 1 without a tilt), written
        into ``out`` (B, K, W)."""
        if self.gate is None:
            return self.emv4[u]
        return torch.mul(self.emv[u], self.gate, out=out).unsqueeze(1)

    def backward(self, gZ, gT, gM):
        """Gradients (emissions (B, n, L), transitions (L, L), start (L,), end (L,)) of
        Σ gZ·Z + gT·T + gM·M (module doc: the adjoint recursion).  X̄_u and Ȳ_u of R
        consecutive tokens are kept in rings, so that ∂log e_u = Σ_{parts, nodes} X̄_u ⊙ X_u
        and ∂M = Σ_u X_{u−1}ᵀ Ȳ_u take a few operations per R tokens."""
        X, M, ar, P, gc = self.X, self.M, self.ar, self.P, self.gc
        n, B, _, K, W = X.shape
        Cc, E = ar.Cc, self.Ee
        one, R = B * P * K * W, min(n, RENORM)
        sizes = [R * one, R * one, R * one, one, n * B * W, B * K * W]
        work = _take(self.crf, sum(sizes), X.device)
        XBr, Yr, prod, x0b, g_em, Gu = work.split(sizes)
        XBr, Yr, prod = (t.view(R, B, P, K, W) for t in (XBr, Yr, prod))
        x0b, g_em, Gu = x0b.view(B, P, K, W), g_em.view(n, B, W), Gu.view(B, K, W)
        xb = XBr[(n - 2) % R] if n > 1 else x0b                 # X̄ at the last token
        xb.zero_()
        xb[:, 0] = gZ.view(B, K, 1) * E
        fin = X[n - 1, :, 0] * gZ.view(B, K, 1)
        if gc is not None:
            xb[:, 1] = gT.view(B, K, 1) * E
            xb[:, 2] = gT.view(B, K, 1) * gc.last_end * E
            fin = fin + (X[n - 1, :, 1] + gc.last_end * X[n - 1, :, 2]) * gT.view(B, K, 1)
        if self.opens:
            xb[:, P - 1] = gM.view(B, K, 1) * E
            fin = fin + X[n - 1, :, P - 1] * gM.view(B, K, 1)
        g_end = (fin * E).sum((0, 1))                           # (W,)
        g_M = torch.zeros_like(M)
        MT, opening = M.T, ar.opening[Cc:]
        ya, yb, yf = (Yr[:, :, p] for p in (0, 1, 2)) if gc is not None else (Yr[:, :, 0],) * 3
        yan, ybn, yfn, yfc, ymn = (t.unbind(0) for t in (
            ya[..., Cc:], yb[..., Cc:], yf[..., Cc:], yf[..., :Cc], Yr[:, :, P - 1, :, Cc:]))
        Ys, Yf, XBs, XBf = Yr.unbind(0), Yr.view(R, -1, W).unbind(0), XBr.unbind(0), \
            XBr.view(R, -1, W).unbind(0)
        Xflat, rows = X.view(-1, W), B * P * K
        if gc is not None:
            ended, kept, match = (t.unbind(0) for t in (gc.ended, gc.kept, gc.match))
        emv, emv4, Gv, gate, rhos, all_live = self.emv, self.emv4, Gu.unsqueeze(1), \
            self.gate, self.rhos, self.all_live
        for u in range(n - 1, 0, -1):
            j = (u - 1) % R                                     # X̄_u's and Ȳ_u's slot
            xb, y = XBs[j], Ys[j]
            if gate is None:                                    # Ȳ before the mix
                torch.mul(xb, emv4[u], out=y)
            else:
                torch.mul(emv[u], gate, out=Gu)
                torch.mul(xb, Gv, out=y)
            rho = rhos[u]
            if rho is not None:                                 # Ȳ of the raw states
                y.div_(rho.view(B, 1, K, 1))
            if self.opens:
                yan[j].addcmul_(ymn[j], opening)
            if gc is not None:
                yan[j].addcmul_(yfn[j], match[u])
                yfc[j].mul_(kept[u])
                torch.mul(ybn[j], ended[u], out=yfn[j])
            if not all_live[u]:
                y.mul_(self.live[u])
            if j == 0:                      # tokens u .. u + t − 1 in slots 0 .. t − 1
                t = min(R, n - u)
                g_M.addmm_(Xflat[(u - 1) * rows:(u - 1 + t) * rows].T, Yr[:t].view(-1, W))
                # ∂log e_u = Σ X̄_u ⊙ X_u (the same in the stored gauge as in the raw one)
                torch.mul(XBr[:t], X[u:u + t], out=prod[:t])
                torch.sum(prod[:t].view(t, B, P * K, W), 2, out=g_em[u:u + t])
            prev = XBf[(u - 2) % R] if u > 1 else x0b.view(-1, W)
            torch.mm(Yf[j], MT, out=prev)
            if not all_live[u]:
                raw = xb if rho is None else xb / rho.view(B, 1, K, 1)
                torch.where(self.live[u], prev.view(B, P, K, W), raw, out=prev.view(B, P, K, W))
        torch.sum(torch.mul(x0b, X[0], out=prod[0]).view(B, P * K, W), 1, out=g_em[0])
        if not all(all_live):
            g_em.mul_(self.live_at.T.unsqueeze(-1))
        g_start = g_em[0].sum(0)
        out = (ar.tags(g_em.transpose(0, 1)), ar.pair_tags(g_M * M), ar.tags(g_start),
               ar.tags(g_end))
        _give(self.crf, work)
        return out


def _underflow(Xa: torch.Tensor, reach: torch.Tensor, pad: torch.Tensor,
               live: torch.Tensor) -> torch.Tensor:
    """Whether a reachable column's a-mass fell below TINY of its row's maximum or
    below FLOOR, or a row's maximum below ROW_MIN, at the live tokens of a run of
    a-states Xa (t, B, K, W) (module doc; ``pad`` (W,) is inf on the padding columns).
    The forward runs this only where its sufficient test failed: the running minimum
    of the reachable entries over a stretch at or above max(ROW_MIN, TINY·(W·max
    G)^RENORM), the most a row can reach from maximum 1 in a stretch (so every entry is
    at least TINY times its row's maximum, and ROW_MIN > FLOOR)."""
    inf = torch.full((), float("inf"), dtype=Xa.dtype, device=Xa.device)
    top = Xa.amax(-1)                                                   # (t, B, K)
    low = torch.where(reach.view(reach.shape[0], 1, 1, -1), Xa + pad, inf).amin(-1)
    bad = (low < TINY * top) | (low < FLOOR) | (top < ROW_MIN)
    return bad & live.T.unsqueeze(-1)


class _RealDP(torch.autograd.Function):
    """(Z, T, M, scale, ok) of :func:`real_dp`; the backward is the adjoint recursion
    of :class:`_Run`, no autograd graph of the n steps."""

    @staticmethod
    def forward(ctx, em, tr, st, en, crf, g: Gold, lengths: list[int], tau, opens: bool):
        pooled = not _hooked()             # under saved-tensor hooks: a buffer of its own
        grad = any(ctx.needs_input_grad[:4])
        run = _Run(crf, em, tr, st, en, lengths, tau, g, opens, pooled, keep=grad)
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
        return g_em, g_tr, g_st, g_en, None, None, None, None, None


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


def log_mgf(crf, bt: Batch, s: torch.Tensor) -> torch.Tensor | None:
    """log E[e^{s_j·m(y)}] (J, B) for tilts s (J,): the a part alone with every opening
    weighted by e^{s_j} (no gradient); None where a reachable state underflowed (the
    caller's windows then cover every count)."""
    with torch.no_grad():
        B = bt.emissions.shape[0]
        tau = torch.cat([s.new_zeros(1), s.double()]).view(1, -1).expand(B, -1)
        run = _Run(crf, bt.emissions.double(), bt.transitions.double(), bt.start.double(),
                   bt.end.double(), bt.lengths_list, tau.contiguous(), None, False,
                   not _hooked(), keep=False)
        _give(crf, run.buf)
        Z, _, _, scale = run.out
        if not run.ok or not bool((Z > 0).all()):
            return None
        logz = torch.log(Z) + scale                             # (B, J + 1)
        return (logz[:, 1:] - logz[:, :1]).T


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
