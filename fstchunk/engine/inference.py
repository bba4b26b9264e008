"""Batched inference over ragged batches of dense chains (:mod:`.ragged`).

The per-sentence recursions of :mod:`.chain` for B sentences at once, one Python
step per token of the longest:

* :func:`viterbi` — the best valid tag path of each sentence and its score, in the
  tropical semiring (exact at any score scale); a sentence past its own end keeps
  its Viterbi vector (identity back pointers), so each gets what it gets alone,
  ties included (the lowest tag index, as :func:`.chain.viterbi_states`);
* :func:`transfer_of` — the forward-backward operators of
  :func:`.batched.transfer` (scaled where its range check passes, gauged
  otherwise: exact at any score scale), from which
* :func:`marginals` — token marginals Pr(y_i = t) (B, n, L), 0 on the padding;
* :func:`chunk_probs` — Pr(c ∈ chunks(y)) of given chunks c = (sentence, type,
  start, end): the forward mass that opens c at its start, carried through its
  continue arcs, closed against the backward (Jansche §18–19), all chunks of the
  batch advanced together;
* :func:`entropy` — H(y) = −Σ_y Pr(y) log Pr(y), as the sum over arcs of the pair
  marginals times −log Pr(next tag | tag) (the chain rule; every term a probability,
  so no cancellation at large scores).

Pitfall: a sentence whose scores give no valid sequence weight raises InputError for
the whole batch (the caller re-runs its sentences one by one to give each its own
outcome: :func:`fstchunk.decoding.decoders.Decoder.decode_all`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .batched import transfer
from .expectation import ExpectedF, from_count_table
from .ragged import RaggedBatch


def viterbi(batch: RaggedBatch) -> tuple[np.ndarray, np.ndarray]:
    """(paths (B, n) tag indices, scores (B,)): the best valid path of each sentence
    and its score (module doc); −inf score where a sentence has no valid path.
    Entries of a path past its sentence's length repeat its last tag."""
    em, lens = batch.em, batch.lengths
    B, n, L = em.shape
    delta = batch.start[None, :] + em[:, 0]
    back = np.empty((B, n, L), dtype=np.intp)
    back[:, 0] = 0
    ident = np.arange(L)
    rows = np.arange(B)
    done = int(np.searchsorted(np.sort(lens), 1, side="right"))    # sentences ended
    order = np.argsort(lens, kind="stable")
    for i in range(1, n):
        cand = delta[:, :, None] + (batch.trans[None, :, :] + em[:, i, None, :])
        bp = cand.argmax(axis=1)
        new = np.take_along_axis(cand, bp[:, None, :], axis=1)[:, 0]
        while done < B and lens[order[done]] <= i:
            done += 1
        if done:                                  # sentences past their end: identity
            ended = order[:done]
            new[ended] = delta[ended]
            bp[ended] = ident
        back[:, i] = bp
        delta = new
    total = delta + batch.end[None, :]
    last = total.argmax(axis=1)
    best = total[rows, last]
    paths = np.empty((B, n), dtype=np.intp)
    paths[:, -1] = last
    for i in range(n - 1, 0, -1):
        paths[:, i - 1] = back[rows, i, paths[:, i]]
    return paths, best


def kbest(batch: RaggedBatch, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(paths (B, k, n), scores (B, k)): the k best valid paths of each sentence, best
    first (list Viterbi: per token and tag the k best (previous tag, rank) extensions;
    ties in the order of (previous tag, rank)), −inf scores where a sentence has fewer
    than k valid paths.  Distinct rows are distinct tag sequences (a state is a tag)."""
    em, lens = batch.em, batch.lengths
    B, n, L = em.shape
    D = np.full((B, L, k), -np.inf)
    D[:, :, 0] = batch.start[None, :] + em[:, 0]
    back = np.zeros((B, n, L, k), dtype=np.intp)        # previous tag · k + previous rank
    keep = np.arange(L * k).reshape(L, k)                 # a sentence past its end
    rows = np.arange(B)
    for i in range(1, n):
        cand = D[:, :, None, :] + (batch.trans[None, :, :, None] + em[:, i, None, :, None])
        cand = cand.transpose(0, 2, 1, 3).reshape(B, L, L * k)     # (B, tag, prev·k + rank)
        idx = np.argsort(-cand, axis=2, kind="stable")[:, :, :k]
        new = np.take_along_axis(cand, idx, axis=2)
        ended = lens <= i
        new[ended], idx[ended] = D[ended], keep
        D, back[:, i] = new, idx
    total = (D + batch.end[None, :, None]).reshape(B, L * k)
    idx = np.argsort(-total, axis=1, kind="stable")[:, :k]
    scores = np.take_along_axis(total, idx, axis=1)
    paths = np.zeros((B, k, n), dtype=np.intp)
    tag, rank = idx // k, idx % k
    paths[:, :, n - 1] = tag
    for i in range(n - 1, 0, -1):
        prev = back[rows[:, None], i, tag, rank]
        tag, rank = prev // k, prev % k
        paths[:, :, i - 1] = tag
    return paths, scores


def transfer_of(batch: RaggedBatch):
    """The forward-backward transfer operators of the batch
    (:func:`fstchunk.engine.batched.transfer`, with the sentences' lengths)."""
    lens = None if np.all(batch.lengths == batch.n) else batch.lengths
    return transfer(batch.em, batch.trans, batch.start, batch.end, lengths=lens)


def marginals(ops, batch: RaggedBatch) -> np.ndarray:
    """Token marginals (B, n, L), each token's renormalised to sum 1 (a and b̂ carry
    the rounding of n products), 0 on the padding."""
    m = ops.a * ops.bt
    s = m.sum(axis=-1, keepdims=True)
    return np.divide(m, s, out=np.zeros_like(m), where=s > 0)


def chunk_probs(ops, batch: RaggedBatch, sent: np.ndarray, typ: np.ndarray,
                start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Pr(c ∈ chunks(y)) for chunks c = (sentence ``sent`` of the batch, type index
    ``typ`` in the space's types, tokens ``start`` .. ``end`` − 1), all advanced
    together through their continue arcs (module doc); in [0, 1]."""
    space = batch.space
    L = len(space)
    sent, typ, start, end = (np.asarray(v, dtype=np.intp) for v in (sent, typ, start, end))
    C = len(sent)
    out = np.zeros(C)
    if C == 0:
        return out
    opens, cont, closes = (t[:L].astype(float) for t in (space.opens, space.cont, space.closes))
    of_type = (space.type_index[None, :] == typ[:, None])
    x = np.empty((C, L))
    first = start == 0
    if first.any():
        x[first] = ops.a[sent[first], 0] * space.opens[L][None, :]
    rest = ~first
    if rest.any():
        x[rest] = ops.fwd(ops.a[sent[rest], start[rest] - 1], sent[rest], start[rest], opens)
    x *= of_type
    width = end - start
    for d in range(1, int(width.max())):
        act = np.flatnonzero(width > d)
        x[act] = ops.fwd(x[act], sent[act], start[act] + d, cont)
    last = end == batch.lengths[sent]
    if last.any():
        out[last] = (x[last] * ops.bt[sent[last], end[last] - 1]).sum(axis=-1)
    inner = ~last
    if inner.any():
        s_, e_ = sent[inner], end[inner]
        out[inner] = (ops.fwd(x[inner], s_, e_, closes) * ops.bt[s_, e_]).sum(axis=-1)
    return np.clip(out, 0.0, 1.0)


def entropy(ops, batch: RaggedBatch) -> np.ndarray:
    """H(y) of each sentence (B,), in nats: −Σ over the first token's marginal of
    its log, plus Σ_{i ≥ 1} Σ_{p,q} Pr(y_{i−1} = p, y_i = q) · −log Pr(y_i = q | y_{i−1} = p),
    the conditional read off the operators as K_i(p, q)·b̂_i(q) / b̂_{i−1}(p)."""
    B, n, L = batch.em.shape
    a, bt = ops.a, ops.bt
    with np.errstate(divide="ignore", invalid="ignore"):
        p0 = a[:, 0] * bt[:, 0]
        h = -np.sum(np.where(p0 > 0, p0 * np.log(p0), 0.0), axis=-1)
        for i in range(1, n):
            act = np.flatnonzero(batch.lengths > i)
            if len(act) == 0:
                break
            K = ops.kernel(act, i)                                          # (A, L, L)
            cond = K * bt[act, i][:, None, :] / bt[act, i - 1][:, :, None]
            pair = a[act, i - 1][:, :, None] * K * bt[act, i][:, None, :]
            h[act] -= np.sum(np.where(pair > 0, pair * np.log(cond), 0.0), axis=(1, 2))
    return np.maximum(h, 0.0)


class _Matching:
    """What the tp/count sweeps share: the boundary masks over the L tags, where each
    fixed chunk starts (its type, −3 for a type the space lacks) and ends, and the
    first token's split into (match flag, count) states."""

    def __init__(self, ops, batch: RaggedBatch, fixed: list, typed: bool = True):
        B, n, L = batch.em.shape
        sp = batch.space
        op, ct, cl = (t[:L] for t in (sp.opens, sp.cont, sp.closes))
        rest = ~op & ~ct
        self.op = op
        self.masks = {k: m.astype(float) for k, m in (
            ("op", op), ("ct", ct), ("rest", rest), ("opcl", op & cl), ("restcl", rest & cl))}
        self.fs = np.full((B, n + 1), -2)             # type of a fixed chunk starting at i
        self.fe = np.zeros((B, n + 1), bool)          # a fixed chunk's last token is i
        for b, chunks in enumerate(fixed):
            for t, s, e in chunks:
                self.fs[b, s] = (t if t >= 0 else -3) if typed else 0
                self.fe[b, e - 1] = True
        self.tix = sp.type_index if typed else np.zeros_like(sp.type_index)
        a0, first = ops.a[:, 0], sp.opens[L]
        m0 = first[None, :] & (self.tix[None, :] == self.fs[:, :1])
        self.start = (a0 * ~first, a0 * (first & ~m0), a0 * m0)   # (0, 0), (0, 1), (1, 1)

    def opens_match(self, act: np.ndarray, i: int) -> np.ndarray:
        """Whether a chunk of y opening at token i with each tag starts a fixed chunk of
        its type, (active rows, 1, L)."""
        return ((self.tix[None, :] == self.fs[act, i][:, None])[:, None, :]
                & self.op.any(axis=0)[None, None, :])


def _count_sweep(ops, batch: RaggedBatch, fixed: list, lead: int,
                 tilt: Callable[[np.ndarray], np.ndarray], dtype=float,
                 typed: bool = True) -> np.ndarray:
    """G (lead, B, n+1): the sweep over states (match flag, count, tag) in an algebra of
    ``lead`` components (the leading axis) in which a completed match multiplies the
    path's weight by z; ``tilt(Y)`` is (z − 1)·Y.  G[:, b, c] = E[z^tp · 1{m(y) = c}]
    in that algebra, normalised by Z; ``typed=False``: a chunk of y matches a fixed one
    with its boundaries whatever their types."""
    B, n, L = batch.em.shape
    mt = _Matching(ops, batch, fixed, typed)
    masks, fe = mt.masks, mt.fe
    P = np.zeros((lead, B, 2, n + 1, L), dtype=dtype)
    P[0, :, 0, 0], P[0, :, 0, 1], P[0, :, 1, 1] = mt.start
    if lead > 1 and dtype is complex:          # values at several z: each starts at 1
        P[1:] = P[0]
    G = np.zeros((lead, B, n + 1), dtype=dtype)
    last = batch.lengths - 1
    rows = np.arange(B)
    fwd = ops.fwd
    for i in range(n):
        if i:
            act = rows[last >= i]
            if len(act) == 0:
                break
            c = min(i + 1, n)                      # counts 0..c-1 hold mass before token i
            s = act[:, None]
            X0, X1 = P[:, act, 0, :c], P[:, act, 1, :c]
            eb = fe[act, i - 1][:, None, None]
            X1e = X1 * eb                          # a fixed chunk ended at token i-1
            X1n = X1 - X1e
            opP = fwd(X0 + X1, s, i, masks["op"]) + tilt(fwd(X1e, s, i, masks["opcl"]))
            ms = mt.opens_match(act, i)
            P[:, act] = 0.0
            P[:, act, 0, :c] = (fwd(X0 + X1e, s, i, masks["ct"]) + fwd(X0 + X1, s, i, masks["rest"])
                                + tilt(fwd(X1e, s, i, masks["restcl"])))
            P[:, act, 1, :c] = fwd(X1n, s, i, masks["ct"])
            P[:, act, 0, 1:c + 1] += opP * ~ms
            P[:, act, 1, 1:c + 1] += opP * ms
        end = rows[last == i]
        if len(end):
            bt = ops.bt[end, i][:, None, :]
            G[:, end] = ((P[:, end].sum(axis=2) * bt).sum(axis=-1)
                         + tilt((P[:, end, 1] * bt).sum(axis=-1)))
    tot = G[0].real.sum(axis=1, keepdims=True) if dtype is float else None
    if tot is None:                            # values: G(1) is not among them; Σ_c at z=1
        return G
    return G / np.where(tot > 0, tot, 1.0)


def _shift(Y: np.ndarray) -> np.ndarray:
    """ε·Y in the truncated power series R[ε]/ε^lead (ε = z − 1): the components move
    up one order, the top one falls off."""
    out = np.zeros_like(Y)
    out[1:] = Y[:-1]
    return out


def tp_count_tables(ops, batch: RaggedBatch, fixed: list, typed: bool = True
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(Z, T), each (B, n+1): Z[b, c] = Pr(m(y) = c), T[b, c] = E[tp(y, F_b)·1{m(y) = c}]
    against each sentence's fixed chunk set F_b (``fixed[b]``: (type index, s, e), a type
    index of −1 for a type the space lacks), y ~ the batch's chains: the expectation
    semiring of :func:`fstchunk.engine.expectation.tp_count_table` on the transfer
    operators, states (match flag, count, tag), the match logic on chunk boundaries
    (a chunk of y opens where a fixed chunk of its type starts; it matches when both
    close together).  Both directions of expected F read it (:mod:`fstchunk.decoding.expected`).
    It is :func:`tp_count_moments` to the first order.  ``typed=False``: tp counts the
    chunks of y with a fixed chunk's boundaries whatever its type (the exact-boundary
    utility, :mod:`fstchunk.decoding.exact_boundaries`)."""
    Z, T = _count_sweep(ops, batch, fixed, 2, _shift, typed=typed)
    return Z, T


def tp_count_moments(ops, batch: RaggedBatch, fixed: list, order: int = 2) -> np.ndarray:
    """M (order+1, B, n+1) with M[j, b, c] = E[C(tp, j)·1{m(y) = c}], the binomial
    moments of tp by count (C(tp, 0) = 1: M[0] = Pr(m = c); M[1] = T of
    :func:`tp_count_tables`; E[tp²] = Σ_c 2·M[2] + M[1]): the sweep in the truncated
    power series in ε = z − 1, where a completed match multiplies by 1 + ε."""
    return _count_sweep(ops, batch, fixed, order + 1, _shift)


def tp_count_laws(ops, batch: RaggedBatch, fixed: list) -> np.ndarray:
    """J (B, K, n+1) with J[b, t, c] = Pr(tp(y, F_b) = t, m(y) = c), K = 1 + the most
    fixed chunks of a sentence: the joint law whose moments :func:`tp_count_moments`
    gives.  The same sweep with a completed match weighted z gives the generating
    function G(z)[c] = Σ_t J[t, c]·z^t, a polynomial of degree < K in z; it is run at
    the K roots of unity at once and inverted by one discrete Fourier transform (exact
    up to rounding, every |z| = 1 so nothing grows).  Its machine twin is
    :func:`fstchunk.decoding.expected.joint_by_composition`."""
    K = 1 + max((len(f) for f in fixed), default=0)
    z = np.exp(2j * np.pi * np.arange(K) / K).reshape(K, *([1] * 3))

    def tilt(Y: np.ndarray) -> np.ndarray:
        return (z.reshape(K, *([1] * (Y.ndim - 1))) - 1) * Y
    G = _count_sweep(ops, batch, fixed, K, tilt, dtype=complex)
    J = np.fft.fft(G, axis=0).real / K            # G(ω^k) = Σ_t J_t ω^{kt}: J = DFT(G)/K
    J = np.maximum(J.transpose(1, 0, 2), 0.0)
    tot = J.sum(axis=(1, 2), keepdims=True)
    return J / np.where(tot > 0, tot, 1.0)


def expected_f_batch(ops, batch: RaggedBatch, fixed: list, beta_sq: float,
                     direction: str = "decoding") -> list[ExpectedF]:
    """E[F_β] and its parts (:func:`.expectation.from_count_table`) of each sentence's
    fixed chunk set (``fixed[b]``: (type index, s, e)) against the batch's chains, the
    hypothesis (``direction="decoding"``) or the reference (``"training"``);
    ``beta_sq`` = β²."""
    Z, T = tp_count_tables(ops, batch, fixed)
    return [from_count_table(Z[b, :n + 1], T[b, :n + 1], len(c), beta_sq, direction)
            for b, (n, c) in enumerate(zip(batch.lengths, fixed))]
