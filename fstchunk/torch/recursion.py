"""The real-space recursion behind :mod:`fstchunk.torch.tilted`, forward and adjoint.

States live on the columns of :mod:`fstchunk.torch.arcs` (a tag and the kind of arc
that entered it), one row per (part, node) and sentence: the a part Σ w of every node
k < K, then, for the nodes k ≥ t0 whose T_k is wanted, the parts b = Σ w·tp and
f = Σ w·[y's open chunk matches a gold chunk so far] (and m = Σ w·m(y) for the expected
corpus F).  The expected sentence F takes t0 = 1: node 0 (z = 1) only normalises, so
its b and f rows are never formed.  Each token is

    Y = Mᵀ X_{u−1},
    a' = Y_a,  b' = Y_b + close_u ⊙ Y_f,  f' = keep_u ⊙ Y_f + match_u ⊙ Y_a,
    m' = Y_m + opening ⊙ Y_a,              X_u = (a', b', f', m') ⊙ G_u

(G_u = exp(e_u − μ_u), the emission factors, times the node's tilt z_k on the opening
columns, a block of the column axis; ``close``, ``keep``, ``match``: the gold as
column slices, :class:`~fstchunk.torch.arcs.GoldCols`), then every :data:`RENORM` tokens each row is divided by its node's
a-maximum.  The adjoint runs the same linear maps transposed (Ȳ = mixᵀ(X̄_u ⊙ G_u),
X̄_{u−1} = M Ȳ) and keeps X̄ and Ȳ of a stretch in rings, so that ∂log e_u =
Σ_rows X̄_u ⊙ X_u and ∂M = Σ_u X_{u−1} Ȳ_uᵀ take a few operations per stretch.

The states are laid out (column, row, sentence): the product is one (W, W) @ (W, R·B)
matrix product per token, and every column slice the mix reads is a block whose inner
dimension (rows × sentences) is contiguous.

Underflow (:mod:`fstchunk.torch.tilted`'s module doc says when the real path is
exact): once every column is reachable, an a-entry is at least its best predecessor's
value times that arc and the token's smallest factor, x_u(c) ≥ ℓ_{u−1}·max_{c'} M[c', c]·
min_{rows} G_u[c], so the exact minimum at a renormalisation token and a per-token
factor computed once bound every entry of the next stretch; only where that bound
falls below the threshold of :func:`underflow` are the stretch's rows examined.

Pitfalls: every buffer is from the workspace pool (:mod:`fstchunk.torch.workspace`);
a temporary of a few hundred kB costs fresh pages on every call.  Views of the states
are taken once per call (an index in the loop costs a dispatch per token).
"""

from __future__ import annotations

import torch

from .arcs import Arcs, gold_columns
from .checks import Gold
from .semiring import NEG
from .workspace import give, take

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


class Run:
    """One forward (module doc): the states X (n, W, R, B) (with ``keep``; else only
    the last RENORM + 1 tokens, in a ring), the column emission factors (n, W, B), the
    tilt per row, the row maxima per renormalisation token, and what the backward
    reads; ``ok`` (no reachable state underflowed), ``out`` = (Z, T, M, scale), each
    (B, K), T and M 0 below t0 (M 0 without ``opens``)."""

    def __init__(self, crf, em, tr, st, en, lengths: list[int], tau, g: Gold | None,
                 opens: bool, pooled: bool, keep: bool = True, t0: int = 0):
        ar = Arcs.of(crf, em.device)
        B, n, _ = em.shape
        K, W, Cc, dev = tau.shape[1], ar.W, ar.Cc, em.device
        Kt = K - t0 if g is not None else 0
        Km = K - t0 if opens else 0
        R = K + 2 * Kt + Km
        self.rows = {"a": slice(0, K), "a1": slice(t0, K), "b": slice(K, K + Kt),
                     "f": slice(K + Kt, K + 2 * Kt), "m": slice(K + 2 * Kt, R)}
        key = ("rows", K, t0, Kt > 0, Km > 0, str(dev))           # each row's node
        if key not in crf._cache:
            crf._cache[key] = torch.cat([torch.arange(K), *[torch.arange(t0, K)] * (
                2 * (Kt > 0) + (Km > 0))]).to(dev)
        self.node = crf._cache[key]
        S = n if keep else min(n, RENORM) + 1                      # state slots
        self.ar, self.crf, self.opens, self.t0, self.K = ar, crf, opens, t0, K
        self.M = ar.matrix(tr)
        ok_s, ok_e = crf._mask("start", st), crf._mask("end", en)
        Es, Ee = _factors(st, ok_s), _factors(en, ok_e)
        self.bad_end = bool(((Es < TINY) & ok_s).any() or ((Ee < TINY) & ok_e).any())
        Esc, self.Ee = (ar.columns(Es) * ar.start).view(W, 1, 1), ar.columns(Ee).view(W, 1, 1)
        # one pooled buffer: states, column emissions, gold matches
        sizes = [S * W * R * B, n * W * B, n * (W - Cc) * B if g is not None else 0]
        self.buf = take(crf, sum(sizes), dev) if pooled else em.new_empty(sum(sizes))
        X, Em, Gm = self.buf.split(sizes)
        X = X.view(S, W, R, B)
        Em = _columns_tok(ar, em, Em.view(n, W, B))
        self.X, self.Em = X, Em
        self.emv = Em.view(n, W, 1, B).unbind(0)                  # (W, 1, B) each
        # the tilt z of each row's node, applied to the opening columns [Co, W)
        self.z = (torch.exp(tau).T[self.node].unsqueeze(0).contiguous()
                  if bool((tau != 0).any()) else None)             # (1, R, B)
        lens = torch.as_tensor(lengths, device=dev)
        self.live_at = torch.arange(n, device=dev).view(1, n) < lens.view(B, 1)
        self.all_live = [u < min(lengths) for u in range(n)]
        self.gc = gc = gold_columns(ar, g, lens, Gm) if g is not None else None
        self.rhos = self._forward(X, Esc, S, keep)
        x = X[self._last]
        r = self.rows
        Z = (x[:, r["a"]] * self.Ee).sum(0).T                      # (B, K)
        T, M = torch.zeros_like(Z), torch.zeros_like(Z)
        if gc is not None:
            T[:, t0:] = ((x[:, r["b"]] + gc.last_end * x[:, r["f"]]) * self.Ee).sum(0).T
        if opens:
            M[:, t0:] = (x[:, r["m"]] * self.Ee).sum(0).T
        self.ok = self.ok and bool((Z[:, 0] > 0).all())
        # the outputs are not kept here: the graph node holds this object, and an
        # output holds the graph node (a reference cycle the workspace would wait on)
        self.out = (Z, T, M, self.scale.T)

    def _views(self, T: torch.Tensor) -> dict:
        """Per-slot views of the row groups of T (slots, W, R, B) on the column slices
        the mix reads: a1, b, f, m on the other (kind-1) columns, f on the
        continuations."""
        r, Cc = self.rows, self.ar.Cc
        return {"a1n": T[:, Cc:, r["a1"]].unbind(0), "bn": T[:, Cc:, r["b"]].unbind(0),
                "fn": T[:, Cc:, r["f"]].unbind(0), "fc": T[:, :Cc, r["f"]].unbind(0),
                "mn": T[:, Cc:, r["m"]].unbind(0)}

    def _bounds(self, n: int) -> list[float]:
        """q_u = min over columns c of max_{c'} M[c', c]·min_{rows} G_u[c] (G_u: the
        emission factors times the tilt on the openings): in a stretch where every
        column is reachable, min x_u ≥ q_u·min x_{u−1} (module doc); computed for every
        token at once."""
        best = self.M.amax(0)                                      # (W,)
        if self.z is not None:
            best = torch.where(self.ar.opening > 0, best * self.z.min(), best)
        return (self.Em.amin(2) * best).amin(1).tolist()

    def _forward(self, X, Esc, S: int, keep: bool) -> list:
        ar, gc, z, all_live = self.ar, self.gc, self.z, self.all_live
        n, (_, W, R, B) = len(self.emv), X.shape
        Cc, a, opens, live_at = ar.Cc, self.rows["a"], self.opens, self.live_at
        reach, steady = ar.reachable(n)
        opening = ar.opening[Cc:].view(-1, 1, 1)
        Mt = self.M.T.contiguous()
        # per-slot views, taken once: each costs a dispatch (the 3-D view of a token's
        # states is made only where a renormalisation or padding needs it); the loop
        # reads locals only (it runs n times, Python overhead counts)
        Xf, X3, Xo, v = X.view(S, W, -1).unbind(0), X.unbind(0), X[:, ar.Co:].unbind(0), \
            self._views(X)
        a1n, bn, fn, fc, mn = v["a1n"], v["bn"], v["fn"], v["fc"], v["mn"]
        gold, tilt, emv, mm, mul = gc is not None, z is not None, self.emv, torch.mm, \
            torch.mul
        if gold:
            ended, match = gc.ended.unbind(0), gc.match.unbind(0)
        # the threshold of the sufficient test (:func:`underflow`): a row starts a
        # stretch at maximum 1 and its a-part grows at most W·max G per token
        gmax = max(1.0, float(z.max())) if tilt else 1.0
        floor = max(ROW_MIN, TINY * (W * gmax) ** RENORM)
        q = [min(1.0, x) for x in self._bounds(n)]
        low, flags, rhos, scale, done = 0.0, [], [None] * n, None, 0
        special = [u % RENORM == 0 or u == n - 1 or u <= steady for u in range(n)]
        i = 0
        for u in range(n):
            i = u if keep else u - done + 1                        # this token's slot
            xf = Xf[i]
            if u == 0:             # every chunk tag opens a chunk (and is tilted)
                x = X3[i]
                x.zero_()
                x[:, a] = emv[0] * Esc
                if tilt:
                    Xo[i][:, a].mul_(z[:, a])
                if gold:
                    mul(a1n[i], match[0], out=fn[i])
                if opens:
                    x[:, self.rows["m"]] = x[:, self.rows["a1"]] * ar.opening.view(W, 1, 1)
            else:
                mm(Mt, Xf[i - 1], out=xf)                         # Y = Mᵀ X_{u−1}
                if opens:
                    mn[i].addcmul_(a1n[i], opening)
                if gold:
                    e, c = ended[u], fc[i]
                    bn[i].addcmul_(fn[i], e)                      # closing: a tp
                    c.addcmul_(c, e, value=-1.0)                  # ... or the match ends
                    mul(a1n[i], match[u], out=fn[i])
                X3[i].mul_(emv[u])                                # G_u: emissions,
                if tilt:
                    Xo[i].mul_(z)                                 # ... the openings' tilt
                if not all_live[u]:         # a finished sentence keeps its states
                    x = xf.view(W, R, B)
                    torch.where(live_at[:, u].view(1, 1, B), x, Xf[i - 1].view(W, R, B),
                                out=x)
            low *= q[u]
            if not special[u]:
                continue
            x = X3[i]
            if u % RENORM == 0 or u == n - 1:
                top = x[:, a].amax(0)                                     # (K, B)
                flags.append((top < ROW_MIN) & live_at[:, u])
                top = top.clamp_min(1e-300)
                rho = rhos[u] = top[self.node]                            # (R, B)
                if u > steady and low < floor:      # the stretch's rows, exactly
                    first = done if keep else 1
                    flags.append(underflow(X[first:i + 1, :, a], reach[done:u + 1],
                                           live_at[:, done:u + 1]))
                x /= rho
                scale = torch.log(top) if scale is None else scale + torch.log(top)
                low = float(x[:, a].amin()) if u >= steady else 0.0
                done = u + 1
                if not keep and u < n - 1:
                    Xf[0].copy_(xf)                 # the next stretch's previous token
            if u <= steady:                 # not every column reachable yet
                xa = x[:, a]
                low = float(torch.where(reach[u].view(W, 1, 1), xa, float("inf")).amin())
                if low < max(ROW_MIN, TINY * float(xa.amax())):   # else no row can fail
                    flags.append(underflow(xa.unsqueeze(0), reach[u:u + 1],
                                           live_at[:, u:u + 1]))
                if u < steady:
                    low = 0.0
        self._last = i                      # the last token's slot
        self.scale = scale
        self.ok = not self.bad_end and not bool(torch.stack([f.any() for f in flags]).any())
        return rhos

    def backward(self, gZ, gT, gM):
        """Gradients (emissions (B, n, L), transitions (L, L), start (L,), end (L,)) of
        Σ gZ·Z + gT·T + gM·M (module doc: the adjoint recursion)."""
        X, M, ar, gc, r, t0 = self.X, self.M, self.ar, self.gc, self.rows, self.t0
        n, W, R, B = X.shape
        Cc, E = ar.Cc, self.Ee
        one, S = W * R * B, min(n, RENORM)
        sizes = [S * one, S * one, S * one, one, n * W * B, S * W * W]
        work = take(self.crf, sum(sizes), X.device)
        XBr, Yr, prod, x0b, g_em, gMs = work.split(sizes)
        XBr, Yr, prod = (t.view(S, W, R, B) for t in (XBr, Yr, prod))
        x0b, g_em, gMs = x0b.view(W, R, B), g_em.view(n, W, B), gMs.view(S, W, W)
        xb = XBr[(n - 2) % S] if n > 1 else x0b                 # X̄ at the last token
        xb.zero_()
        gMs.zero_()
        x = X[n - 1]
        xb[:, r["a"]] = gZ.T * E
        fin = (x[:, r["a"]] * gZ.T).sum(1)                      # (W, B)
        if gc is not None:
            gt = gT[:, t0:].T
            xb[:, r["b"]] = gt * E
            xb[:, r["f"]] = gt * gc.last_end * E
            fin = fin + ((x[:, r["b"]] + gc.last_end * x[:, r["f"]]) * gt).sum(1)
        if self.opens:
            xb[:, r["m"]] = gM[:, t0:].T * E
            fin = fin + (x[:, r["m"]] * gM[:, t0:].T).sum(1)
        g_end = (fin * E.view(W, 1)).sum(1)                     # (W,)
        opening = ar.opening[Cc:].view(-1, 1, 1)
        v = self._views(Yr)
        a1n, bn, fn, fc, mn = v["a1n"], v["bn"], v["fn"], v["fc"], v["mn"]
        Ys, Yf, XBs, Yo = Yr.unbind(0), Yr.view(S, W, -1), XBr.unbind(0), \
            Yr[:, ar.Co:].unbind(0)
        prevs = XBr.view(S, W, -1).unbind(0)
        prevs = [prevs[(j - 1) % S] for j in range(S)]          # X̄_{u−1}'s slot
        Xf, Yfs = X.view(n, W, -1), Yf.unbind(0)
        z = self.z
        gold, tilt, opens, mul, mm = gc is not None, z is not None, self.opens, \
            torch.mul, torch.mm
        if gold:
            ended, match = gc.ended.unbind(0), gc.match.unbind(0)
        emv, rhos, all_live = self.emv, self.rhos, self.all_live
        for u in range(n - 1, 0, -1):
            j = (u - 1) % S                                     # X̄_u's and Ȳ_u's slot
            xb, y = XBs[j], Ys[j]
            mul(xb, emv[u], out=y)                              # Ȳ before the mix
            if tilt:
                Yo[j].mul_(z)
            if rhos[u] is not None:                             # Ȳ of the raw states
                y.div_(rhos[u])
            if opens:
                a1n[j].addcmul_(mn[j], opening)
            if gold:
                e, c = ended[u], fc[j]
                a1n[j].addcmul_(fn[j], match[u])
                c.addcmul_(c, e, value=-1.0)
                mul(bn[j], e, out=fn[j])
            if not all_live[u]:
                live = self.live_at[:, u].view(1, 1, B)
                y.mul_(live)
            if j == 0:                      # tokens u .. u + t − 1 in slots 0 .. t − 1
                t = min(S, n - u)
                gMs[:t].baddbmm_(Xf[u - 1:u - 1 + t], Yf[:t].transpose(1, 2))
                # ∂log e_u = Σ X̄_u ⊙ X_u (the same in the stored gauge as in the raw one)
                mul(XBr[:t], X[u:u + t], out=prod[:t])
                torch.sum(prod[:t], 2, out=g_em[u:u + t])
            prev = prevs[j] if u > 1 else x0b.view(W, -1)
            mm(M, Yfs[j], out=prev)
            if not all_live[u]:
                raw = xb if rhos[u] is None else xb / rhos[u]
                torch.where(live, prev.view(W, R, B), raw, out=prev.view(W, R, B))
        torch.sum(torch.mul(x0b, X[0], out=prod[0]), 1, out=g_em[0])
        if not all(all_live):
            g_em.mul_(self.live_at.T.unsqueeze(1))
        out = (ar.tags(g_em.permute(2, 0, 1)), ar.pair_tags(gMs.sum(0) * M),
               ar.tags(g_em[0].sum(1)), ar.tags(g_end))
        give(self.crf, work)
        return out


def _columns_tok(ar: Arcs, em: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """exp(e − μ) on the columns, token-major: (n, W, B) from emissions (B, n, L), into
    ``out``; μ the maximum over the tags of each (sentence, token)."""
    torch.index_select(em.permute(1, 2, 0), 1, ar.tag, out=out)
    return out.sub_(em.amax(-1).T.unsqueeze(1)).exp_()


def underflow(Xa: torch.Tensor, reach: torch.Tensor, live: torch.Tensor) -> torch.Tensor:
    """Whether a reachable column's a-mass fell below TINY of its row's maximum or
    below FLOOR, or a row's maximum below ROW_MIN, at the live tokens of a run of
    a-states Xa (t, W, K, B) (a renormalisation token's states before the
    division).  The forward runs this for
    the tokens up to the first where every column is reachable,
    and for a stretch whose bound (module doc) fell below max(ROW_MIN, TINY·(W·max
    G)^RENORM), the most a row can reach from maximum 1 in a stretch (above it, every
    entry is at least TINY times its row's maximum, and ROW_MIN > FLOOR)."""
    inf = torch.full((), float("inf"), dtype=Xa.dtype, device=Xa.device)
    mx = Xa.amax(1)                                                     # (t, K, B)
    low = torch.where(reach.view(reach.shape[0], -1, 1, 1), Xa, inf).amin(1)
    bad = (low < TINY * mx) | (low < FLOOR) | (mx < ROW_MIN)
    return bad & live.T.unsqueeze(1)
