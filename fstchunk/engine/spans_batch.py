"""Tilted span marginals of a ragged batch: :mod:`.spans`' sweep for many sentences.

For every chunk c = (type, s, e) of every sentence b of a ragged batch and every tilt
z_r of that sentence, Q_z(c) = E[1{c ∈ chunks(y)}·z^{m(y)}] (z = 1: Pr(c)), on the
batch's transfer operators (:func:`.inference.transfer_of`): the tilted forward and
backward (rescaled per token, log scales apart), then the open chunks of all the
sentences as one list of columns, each advanced through its continue arcs one token
at a time and closed against the tilted backward (Jansche §18–19).

**Pruning with a bound**, as the per-sentence sweep: a column (the chunks opened at
token s of sentence b) is not opened when its opening mass is at most ``prune`` and
is dropped once Pr(a chunk opened at s is still open) is; a chunk of marginal at most
``prune`` is not listed.  One hypothesis holds at most one chunk per start, so the
sum over starts of the largest marginal not listed (``pruned``, per sentence) bounds
what the pruning can cost.  The work follows the live columns, not the n² spans.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .ragged import RaggedBatch


class BatchSpans(NamedTuple):
    """The listed chunks of a batch: ``sent`` (row in the batch), ``typ``, ``start``,
    ``end`` (N,), ``prob`` = Pr(c) (N,), ``Q`` (N, R) the tilted marginals at each
    sentence's own tilts, and ``pruned`` (B,) the certificate of what was left out."""
    sent: np.ndarray
    typ: np.ndarray
    start: np.ndarray
    end: np.ndarray
    prob: np.ndarray
    Q: np.ndarray
    pruned: np.ndarray


def tilted_spans(ops, batch: RaggedBatch, z: np.ndarray, prune: float,
                 rows: np.ndarray | None = None) -> BatchSpans:
    """The tilted marginals of every chunk above ``prune`` of the sentences ``rows``
    of the batch (None: all) at tilts z (len(rows), R) in (0, 1] (module doc); ``sent``
    indexes ``rows``."""
    rows = np.arange(batch.B) if rows is None else np.asarray(rows)
    sp = batch.space
    B, L, T = len(rows), batch.L, len(sp.types)
    op = sp.opens[:L].astype(float)
    stay = 1.0 - op
    cont = sp.cont[:L].astype(float)
    close_op = (sp.closes[:L] & sp.opens[:L]).astype(float)
    close_stay = (sp.closes[:L] & ~sp.opens[:L]).astype(float)
    first = sp.opens[L]
    onehot = (sp.type_index[None, :] == np.arange(T)[:, None]).astype(float)    # (T, L)
    z = np.concatenate([np.ones((B, 1)), np.asarray(z, dtype=float)], axis=1)  # r = 0: z = 1
    R = z.shape[1]
    zz = z[:, :, None]
    s_ = rows[:, None]
    last = batch.lengths[rows] - 1
    n = int(last.max()) + 1
    F, fa = _forward(ops, rows, s_, zz, first, op, stay, n)
    Bk, fb = _backward(ops, rows, s_, zz, op, stay, last, n)
    bt = ops.bt[rows]                                    # untilted backward (still-open mass)
    # the live columns: sentence (index into rows), start, state (C, R, L), log scale
    c_b = np.zeros(0, dtype=np.intp)
    c_s = np.zeros(0, dtype=np.intp)
    G = np.zeros((0, R, L))
    lg = np.zeros((0, R))
    cut = np.zeros((B, n))
    out: list = []
    for e in range(1, n + 1):
        s = e - 1
        live = np.flatnonzero(last >= s)                  # sentences that reach token s
        if s == 0:
            new = ops.a[rows[live], None, 0] * first * zz[live]
            lnew = np.zeros((len(live), R))
        else:
            new = zz[live] * ops.fwd(F[s - 1, live], s_[live], s, op)
            lnew = fa[s - 1, live]
        mass = (new[:, 0] * bt[live, s]).sum(axis=-1) * np.exp(lnew[:, 0])
        opened = mass > prune
        cut[live[~opened], s] = np.maximum(cut[live[~opened], s], mass[~opened])
        if opened.any():
            c_b = np.concatenate([c_b, live[opened]])
            c_s = np.concatenate([c_s, np.full(int(opened.sum()), s)])
            G = np.concatenate([G, new[opened]])
            lg = np.concatenate([lg, lnew[opened]])
        if len(c_b) == 0:
            continue
        # close every live column after token e - 1: each sentence's closing vector
        # (its end, or the arcs that close into token e), then the columns'
        ended = last == e - 1
        vec_b = np.empty((B, R, L))
        sc_b = np.empty((B, R))
        vec_b[ended], sc_b[ended] = Bk[e - 1, ended], fb[e - 1, ended]
        on = np.flatnonzero(last > e - 1)
        if len(on):
            y = Bk[e, on]
            vec_b[on] = (ops.bwd(y, s_[on], e, close_stay)
                         + zz[on] * ops.bwd(y, s_[on], e, close_op))
            sc_b[on] = fb[e, on]
        at_end = ended[c_b]
        vec, sc = vec_b[c_b], sc_b[c_b]
        val = np.matmul(G * vec, onehot.T)                               # (C, R, T)
        with np.errstate(over="ignore", invalid="ignore"):
            scale = np.exp(lg + sc)
        q = np.minimum(np.nan_to_num(val * scale[:, :, None]), 1.0)
        p1 = q[:, 0, :]                                                  # (C, T)
        keep = p1 > prune
        small = np.where(keep, 0.0, p1).max(axis=1)
        np.maximum.at(cut, (c_b, c_s), small)
        ci, ti = np.nonzero(keep)
        if len(ci):
            out.append((c_b[ci], ti, c_s[ci], np.full(len(ci), e), q[ci, :, ti]))
        # advance the columns of sentences that go on; drop the rest
        go = np.flatnonzero(~at_end)
        if e == n or len(go) == 0:
            c_b, c_s, G, lg = c_b[:0], c_s[:0], G[:0], lg[:0]
            continue
        c_b, c_s = c_b[go], c_s[go]
        nxt = ops.fwd(G[go], s_[c_b], e, cont)
        mx = nxt.max(axis=-1)
        ok = mx > 0
        G = np.where(ok[..., None], nxt / np.where(ok, mx, 1.0)[..., None], 0.0)
        lg = np.where(ok, lg[go] + np.log(np.where(ok, mx, 1.0)), -np.inf)
        still = (G[:, 0] * bt[c_b, e]).sum(axis=-1) * np.exp(lg[:, 0])
        drop = still <= prune
        if drop.any():
            np.maximum.at(cut, (c_b[drop], c_s[drop]), still[drop])
            keep_c = ~drop
            c_b, c_s, G, lg = c_b[keep_c], c_s[keep_c], G[keep_c], lg[keep_c]
    if out:
        sent, typ, start, end, q = (np.concatenate(x) for x in zip(*out))
    else:
        sent = typ = start = end = np.zeros(0, dtype=np.intp)
        q = np.zeros((0, R))
    return BatchSpans(sent, typ, start, end, q[:, 0], q[:, 1:], cut.sum(axis=1))


def _forward(ops, rows, s_, zz, first, op, stay, n):
    """The tilted forward F[i] (B, R, L), each (sentence, tilt) rescaled to sum 1, and
    its log scale fa[i] (B, R)."""
    B, R, L = len(rows), zz.shape[1], op.shape[0]
    F = np.zeros((n, B, R, L))
    fa = np.zeros((n, B, R))
    x = ops.a[rows, None, 0] * np.where(first, zz, 1.0)
    for i in range(n):
        if i:
            x = ops.fwd(x, s_, i, stay) + zz * ops.fwd(x, s_, i, op)
        tot = x.sum(axis=-1)
        ok = tot > 0
        x = x / np.where(ok, tot, 1.0)[..., None]
        fa[i] = (fa[i - 1] if i else 0.0) + np.log(np.where(ok, tot, 1.0))
        F[i] = x
    return F, fa


def _backward(ops, rows, s_, zz, op, stay, last, n):
    """The tilted backward Bk[i] (B, R, L), b̂ at each sentence's own last token, and
    its log scale fb[i] (B, R)."""
    B, R, L = len(rows), zz.shape[1], op.shape[0]
    Bk = np.zeros((n, B, R, L))
    fb = np.zeros((n, B, R))
    y = np.zeros((B, R, L))
    lb = np.zeros((B, R))
    for i in range(n - 1, -1, -1):
        if i < n - 1:
            y = ops.bwd(y, s_, i + 1, stay) + zz * ops.bwd(y, s_, i + 1, op)
            tot = y.sum(axis=-1)
            ok = tot > 0
            y = y / np.where(ok, tot, 1.0)[..., None]
            lb = lb + np.log(np.where(ok, tot, 1.0))
        end = last == i
        if end.any():
            y[end] = ops.bt[rows[end], i][:, None, :]
            lb[end] = 0.0
        Bk[i], fb[i] = y, lb
    return Bk, fb
