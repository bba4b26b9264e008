"""Span marginals under count tilts: Q_z(c) = E[1{c ∈ chunks(y)} · z^{m(y)}].

One sweep over the lattice's stochastic chain (:func:`.chain.gauge`) gives, for
every chunk c = (type, s, e) and every tilt z_r in (0, 1], the chunk's marginal
with each chunk start of y weighted by z (the lattice composed with the chunk
counter M, read at z instead of by count: the generating function of m(y) on the
paths through c).  z = 1 is the plain chunk marginal Pr(c ∈ y).  Exact MEU
(:mod:`.meu`) reads 1/(k + β²m) as a sum of exponentials in m, so that
g_k(c) = E[1{c} / (k + β² m(y))] is a positive combination of tilted marginals;
corpus MEU and :meth:`fstchunk.structures.lattice.Lattice.chunk_marginals` read z = 1.

The sweep follows all open chunks together, one layer at a time (the forward
mass that opened a chunk at s, advanced by the layer's continue arcs), and
closes them against the tilted backward (Jansche §18–19 on chunk boundaries).

**Pruning with a bound.** A chunk of marginal below ``prune`` is not listed, and a
chunk start is dropped from the sweep once Pr(a chunk opened at s is still open)
falls below ``prune``; that probability bounds the marginal of *every* longer
chunk from s.  One hypothesis holds at most one chunk starting at s, so the sum
over starts of the largest marginal not listed is returned as ``pruned`` — the
certificate that callers carry into their gap.  Chunks with marginal exactly 0 are
never listed (nothing is lost).

Pitfalls: the tilted forward/backward are rescaled per layer and tilt (log scales
kept apart), since E[z^m] underflows on long sentences; open-chunk columns are
rescaled too.  Memory is O(spans · tilts): the sweep raises
:class:`fstchunk.core.errors.BudgetError` as soon as what it keeps exceeds ``budget``
bytes, naming the sentence length, never exhausting memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import BudgetError
from .tables import chain_arrays


@dataclass
class SpanTable:
    """The chunks kept by :func:`tilted_spans`, sorted by (end, start, type).

    ``logq[c]``: log Q_1(c) = log Pr(c ∈ y); ``ratio[c, r]``: Q_{z_r}(c) / Q_1(c)
    (in [0, 1]); ``pruned``: bound on the total marginal of the chunks not kept that
    any one hypothesis can hold; ``opens``: E[number of chunk starts] = E[m(y)]."""
    types: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    logq: np.ndarray
    ratio: np.ndarray
    pruned: float
    opens: float

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def prob(self) -> np.ndarray:
        return np.exp(self.logq)


def chunk_probs(lattice, chunks) -> np.ndarray:
    """Pr(c ∈ chunks(y)) for given chunks (type index, start, end): the forward state
    distribution of the stochastic chain, then each chunk's own arcs (O(n·S²))."""
    chain, ca = lattice.chain, chain_arrays(lattice)
    W = ca.W
    tix = lattice.space.type_index
    f, x = [], np.ones(1)
    for i in range(lattice.n):
        x = x @ W[i]
        f.append(x)
    out = np.zeros(len(chunks))
    for j, (t, s, e) in enumerate(chunks):
        g = (np.ones(1) if s == 0 else f[s - 1]) @ ca.Wo[s]
        g = g * (tix[chain.labels[s]] == t)
        for i in range(s + 1, e):
            g = g @ ca.Wct[i]
        out[j] = g @ ca.fin if e == lattice.n else (g @ (ca.Wnc[e] + ca.Woc[e])).sum()
    return out


def _normalise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of x (R, S) scaled to sum 1 (all-zero rows stay 0); returns (x̂, log sums)."""
    s = x.sum(axis=-1)
    ok = s > 0
    x = np.where(ok[:, None], x / np.where(ok, s, 1.0)[:, None], 0.0)
    with np.errstate(divide="ignore"):
        return x, np.log(s)


def tilted_spans(lattice, z=(1.0,), prune: float = 0.0,
                 budget: float | None = None) -> SpanTable:
    """Tilted marginals of every chunk of the lattice (see the module doc).

    ``z``: tilts in (0, 1]; the ratios are returned for each (z = 1 need not be
    among them: Pr(c) is always computed).  ``prune``: drop a chunk start once the
    probability that its chunk is still open is below this (0: keep every chunk
    of positive marginal).  ``budget``: bytes the sweep and its table (with the caller's sorted copy)
    may take; BudgetError as soon as they would exceed it."""
    chain, space = lattice.chain, lattice.space
    n = lattice.n
    z = np.concatenate([[1.0], np.asarray(z, dtype=float)])
    R = len(z)
    tix = space.type_index
    nT = len(space.types)
    ca = chain_arrays(lattice)
    W, Wo, Wn, fin = ca.W, ca.Wo, ca.Wn, ca.fin       # Wo: arcs opening a chunk (times z)
    if R == 1:                                        # Pr(closing | state), per layer
        closing = [None] + [(a + b).sum(axis=1) for a, b in zip(ca.Wnc[1:], ca.Woc[1:])]

    # tilted forward: F[i] (R, S_i) after token i, log scale fa[i] (R,); tilted
    # backward: B[i] (R, S_i) = suffix weight after token i, log scale fb[i].  Untilted
    # (R = 1), the forward is the state distribution and the backward is 1: the
    # chain is stochastic, so neither needs rescaling.
    F, fa, B, fb = [], [], [None] * n, [None] * n
    x, la = np.ones((R, 1)), np.zeros(R)
    opens_expected = 0.0
    if R == 1:
        for i in range(n):
            opens_expected += float(x[0] @ Wo[i].sum(axis=1))
            x = x @ W[i]
            F.append(x)
            fa.append(la)
            B[i], fb[i] = np.ones((1, W[i].shape[1])), la
    else:
        for i in range(n):
            opens_expected += float(x[0] @ Wo[i].sum(axis=1)) * np.exp(la[0])
            x, ls = _normalise(x @ Wn[i] + z[:, None] * (x @ Wo[i]))
            la = la + ls
            F.append(x)
            fa.append(la)
        y, lb = _normalise(np.broadcast_to(fin, (R, len(fin))).copy())
        B[n - 1], fb[n - 1] = y, lb
        for i in range(n - 2, -1, -1):
            y, ls = _normalise(y @ Wn[i + 1].T + z[:, None] * (y @ Wo[i + 1].T))
            lb = lb + ls
            B[i], fb[i] = y, lb

    # what the sweep holds besides the table: the tilted forward and backward; the
    # table itself is counted three times (the lists, their concatenation, and the
    # caller's sorted copy), the open-chunk block three times (its temporaries)
    fixed = 2 * 8 * R * sum(w.shape[1] for w in W)
    _check(budget, fixed, n, "for its tilted forward-backward")
    cols_s = np.zeros(0, int)                  # start of each open chunk column
    G = np.zeros((len(chain.labels[0]), R, 0))  # (S, R, open columns), scaled per column
    lg = np.zeros((R, 0))                       # log scale of each column
    out_t, out_s, out_e, out_lq, out_ratio = [], [], [], [], []
    cut = np.zeros(n)                           # largest marginal not listed, per start
    pruned, kept_bytes, kept = 0.0, 0, 0
    onehots: dict = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for e in range(1, n + 1):
            s = e - 1                              # open a chunk at token s
            prev = np.ones((R, 1)) if s == 0 else F[s - 1]
            lprev = np.zeros(R) if s == 0 else fa[s - 1]
            g = (prev @ Wo[s]).T * z[None, :]                     # (S, R)
            G = np.concatenate([G, g[:, :, None]], axis=2)
            lg = np.concatenate([lg, lprev[:, None]], axis=1)
            cols_s = np.append(cols_s, s)
            lab = chain.labels[s]
            onehot = onehots.get(id(lab))
            if onehot is None:
                onehot = onehots[id(lab)] = \
                    (tix[lab][None, :] == np.arange(nT)[:, None]).astype(float)   # (T, S)
            if e == n:                            # every open chunk closes at the end
                V = np.broadcast_to(fin[:, None], (len(fin), R))
                lv = np.zeros(R)
            else:
                if R == 1:                          # untilted: the backward is 1
                    V = closing[e][:, None]
                else:
                    V = ca.Wnc[e] @ B[e].T + (ca.Woc[e] @ B[e].T) * z[None, :]
                lv = fb[e]
            S0, C0 = G.shape[0], G.shape[2]
            val = (onehot @ (G * V[:, :, None]).reshape(S0, -1)).reshape(nT, R, C0)
            # Pr(c) of every chunk (t, s', e); listed if at least ``prune`` (and > 0)
            p1 = val[:, 0, :] * np.exp(lg[0] + lv[0])[None, :]
            keep = (p1 > prune) if prune > 0 else (p1 > 0)
            small = np.where(keep, 0.0, p1).max(axis=0)
            np.maximum.at(cut, cols_s, small)
            if keep.any():
                t_idx, c_idx = np.nonzero(keep)
                # a probability: at most 1 (scores of magnitude s leave s·1e-16 of rounding)
                lq = np.minimum(np.log(val[t_idx, :, c_idx]) + lg[:, c_idx].T + lv[None, :], 0.0)
                out_t.append(t_idx)
                out_s.append(cols_s[c_idx])
                out_e.append(np.full(len(t_idx), e))
                out_lq.append(lq[:, 0])
                out_ratio.append(np.exp(lq[:, 1:] - lq[:, :1]))
                kept_bytes += len(t_idx) * (R + 3) * 8
                kept += len(t_idx)
                if budget is not None and 3 * kept_bytes + 3 * G.nbytes + fixed > budget:
                    _check(budget, 3 * kept_bytes + 3 * G.nbytes + fixed, n,
                           f"for its span table ({kept} chunks kept by token {e})")
            if e == n:
                break
            # advance the open chunks through the continue arcs into token e
            Sd = W[e].shape[1]
            G = (ca.Wct[e].T @ G.reshape(G.shape[0], -1)).reshape(Sd, R, -1)
            mx = G.max(axis=0)
            mx = np.where(mx > 0, mx, 1.0)
            G = G / mx[None]
            lg = lg + np.log(mx)
            # Pr(the chunk opened at s is still open after token e): backward is 1
            # on the stochastic chain, so it is the untilted column mass
            still = G[:, 0, :].sum(axis=0) * np.exp(lg[0])
            drop = still <= prune if prune > 0 else still <= 0
            if drop.any():
                np.maximum.at(cut, cols_s[drop], still[drop])
                G, lg, cols_s = G[:, :, ~drop], lg[:, ~drop], cols_s[~drop]
    # one hypothesis holds at most one chunk per start: what it can lose is bounded
    # by the largest unlisted marginal of each start (a closed-early start: the
    # probability that its chunk was still open, which bounds all its longer chunks)
    pruned = float(cut.sum())
    cat = (lambda a, dt=float: np.concatenate(a) if a else np.zeros(0, dt))   # noqa: E731
    ratio = np.concatenate(out_ratio) if out_ratio else np.zeros((0, R - 1))
    return SpanTable(cat(out_t, int), cat(out_s, int), cat(out_e, int), cat(out_lq),
                     ratio, pruned, opens_expected)


def _check(budget: float | None, need: float, n: int, what: str) -> None:
    if budget is not None and need > budget:
        text = (f"exact MEU of this {n}-token sentence needs more than the memory budget of "
                f"{budget / 2**20:.0f} MiB {what}; raise the budget ({{}}) or decode it with "
                f"map or posterior")
        raise BudgetError(text.format("memory_budget="), estimate=float(need),
                          budget=float(budget), cli=text.format("--memory-budget"))


def dense_marginals(lattice) -> np.ndarray:
    """Pr((type, s, e) ∈ chunks(y)), shape (T, n, n+1), from one untilted sweep."""
    tab = tilted_spans(lattice, z=())
    out = np.zeros((len(lattice.space.types), lattice.n, lattice.n + 1))
    out[tab.types, tab.starts, tab.ends] = tab.prob
    return out
