"""The expectation semiring: expected tp and chunk counts, and their gradients.

* :func:`tp_count_table` — for a fixed sequence with chunk set C, the vectors

      Z[c] = Pr(m(y) = c),    T[c] = E[tp(C, y) · 1{m(y) = c}],

  which give E[tp], E[P], E[R] and E[F_β] in either direction (see
  :mod:`fstchunk.decoding.expected`).  The composition path carries ct (the running tp)
  in its states, O(n³) states per sentence (Jansche §19).  F is linear in tp,
  so ct can go into the weights instead: the first-order expectation semiring of
  pairs ⟨p, p·r⟩ (Eisner 2002; Li & Eisner 2009) with ⟨a, b⟩⊗⟨c, d⟩ = ⟨ac, ad + bc⟩,
  over states (tag, match, cm), O(n² S²) work.  The recursion is T⊠M specialised
  to the fixed sequence (:func:`fstchunk.grammars.counting.tp_step`) read on
  chunk boundaries instead of IOBES tags.

Pitfall: ⟨p, p·r⟩ is kept in linear space with per-layer rescaling (both parts by
the same factor), which is exact in floating point for any length; plain
probabilities would underflow beyond a few hundred tokens.

``lattice`` is any object with ``chain`` (the stochastic layers), ``space``, ``n`` and ``scores`` (a
:class:`fstchunk.structures.lattice.Lattice`); :func:`.corpus_expectations.corpus_expectations`
(importable from here too) works on the score arrays of a batch of equal-length sentences
instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..core.errors import InputError

from .chain import flush, scaled_layers
from .corpus_expectations import corpus_expectations  # noqa: F401  (its old import path)


@dataclass
class ExpectedF:
    """The expected scores of one fixed tag sequence against a lattice's
    distribution, what :func:`fstchunk.expected_f` and :meth:`Lattice.expected_f`
    return.  With $m$ the random chunk count and $Z_c = \\Pr(m = c)$,
    $T_c = \\mathbb{E}[tp \\cdot 1\\{m = c\\}]$, a fixed hypothesis of $m_h$ chunks has
    $\\mathbb{E}[F_\\beta] = \\sum_c (1+\\beta^2)\\, T_c / (m_h + \\beta^2 c)$
    (0/0 := 1), exact (Jansche's slides, §18–19; the expectation semiring, module doc).

    Args:
        tp: E[tp], the expected true positives.
        m_hyp: the hypothesis' chunk count (its expectation when the reference is fixed).
        m_ref: the reference's expected chunk count (its count when fixed).
        precision: E[P].
        recall: E[R].
        f: E[F_β].
        beta: β (the standard one).
        direction: ``"decoding"`` (the hypothesis fixed) or ``"training"`` (the
            reference fixed).
        count_dist: $Z_c$, the law of the random side's chunk count.
        tp_by_count: $T_c$.
        joint: Pr(tp = a, m = b) as an array [a, b] (``method="fst"`` only).

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> r = fstchunk.expected_f(lattice, hypothesis=["B-PER", "I-PER", "O"])
        >>> r.direction, round(r.tp, 3), round(r.m_ref, 3), round(r.f, 3)
        ('decoding', 0.531, 1.169, 0.512)
        >>> r.count_dist.round(3)                  # Pr(the gold has c chunks)
        array([0.03 , 0.782, 0.178, 0.01 ])
    """
    tp: float
    m_hyp: float
    m_ref: float
    precision: float
    recall: float
    f: float
    beta: float
    direction: str
    count_dist: np.ndarray
    tp_by_count: np.ndarray
    joint: np.ndarray | None = None


def from_count_table(Z: np.ndarray, T: np.ndarray, m_fixed: int, beta_sq: float,
                     direction: str, joint: np.ndarray | None = None) -> ExpectedF:
    """The expectations from Z[c] = Pr(m = c) and T[c] = E[tp · 1{m = c}]; ``beta_sq``
    is β² (the slides' β'), E[F] = Σ_c (1+β²)·T[c] / (m_hyp + β²·m_ref)."""
    c = np.arange(len(Z), dtype=float)
    tp = float(T.sum())
    ratio_random = float(Z[0] + np.sum(T[1:] / c[1:]))      # E[tp / m_random], 0/0 := 1
    ratio_fixed = tp / m_fixed if m_fixed else 1.0
    if direction == "decoding":
        m_h, m_r = float(m_fixed), c
        m_hyp, m_ref = float(m_fixed), float(c @ Z)
        precision, recall = ratio_fixed, ratio_random
    else:
        m_h, m_r = c, float(m_fixed)
        m_hyp, m_ref = float(c @ Z), float(m_fixed)
        precision, recall = ratio_random, ratio_fixed
    # (1+β²)/(m_h + β² m_r), divided through by β² when β² > 1 so that no huge β overflows
    den = m_h + beta_sq * m_r + 0 * c if beta_sq <= 1 else m_h / beta_sq + m_r + 0 * c
    num = beta_sq + 1 if beta_sq <= 1 else 1 + 1 / beta_sq
    with np.errstate(divide="ignore", invalid="ignore"):
        f_terms = np.where(den > 0, T * (num / np.where(den > 0, den, 1)), Z)
    return ExpectedF(tp, m_hyp, m_ref, precision, recall, float(f_terms.sum()),
                     float(np.sqrt(beta_sq)), direction, Z, T, joint)


def _tp_rules(lattice, fixed_chunks, typed: bool = True, count_type: str | None = None,
              weights: np.ndarray | None = None):
    """Per layer, the linear terms of the recursion: (w, [(m_src, m_dst, shift, mask,
    inc or None)]) with w the scaled layer weights (see :func:`tp_count_table`);
    ``typed=False``: a chunk matches with its boundaries, whatever the types;
    ``count_type``: m counts the chunks of that type only; ``weights``: a chunk of
    type index k counts ``weights[k]`` in m and a match of it in tp."""
    n = lattice.n
    tix, types = lattice.space.type_index, lattice.space.types
    counted = None if count_type is None else types.index(count_type)
    tag_w = None if weights is None else \
        np.where(tix >= 0, np.asarray(weights)[np.maximum(tix, 0)], 0)
    if not typed:
        tix = np.zeros_like(tix)
    fs = np.full(n, -2)                     # type index of a fixed chunk starting at j
    fe = np.zeros(n + 1)                    # weight of the fixed chunk ending at token j
    for t, s, e in fixed_chunks:
        fs[s] = 0 if not typed else types.index(t) if t in types else -3   # -3: type lacking
        fe[e - 1] = 1 if weights is None or t not in types else weights[types.index(t)]
    dense = lattice.scores is not None      # every layer after the first has the same tables
    cache: dict = {}
    for j, w, mx, _, start, end, src, dst in scaled_layers(lattice.chain, lattice.space):
        ended = float(fe[j - 1]) if j > 0 else 0.0
        key = (j == 0, int(fs[j]), ended)
        terms = cache.get(key) if dense else None
        if terms is None:
            count = start if counted is None else \
                start & (lattice.space.type_index[dst][None, :] == counted)
            terms = _terms(start, end, tix[dst], fs[j], ended > 0, count,
                           None if tag_w is None else tag_w[dst], ended)
            cache[key] = terms
        yield w, mx, terms


def _terms(start, end, dst_types, fixed_start_type, fixed_ended, count=None,
           count_weights=None, end_weight=1.0):
    """The terms of one layer (:func:`_tp_rules`; the loss-augmented DP of
    :mod:`.lossaug` reads them too); ``count``: the transitions that open a chunk m
    counts (default ``start``: every chunk; or those into one type's chunks);
    ``count_weights``: per destination tag, what such a chunk adds to m (default 1);
    ``end_weight``: what the match of the fixed chunk that ended adds to tp."""
    count = start if count is None else count
    if count_weights is None:
        shifts = ((1, count), (0, ~count))
    else:
        cw = np.broadcast_to(np.asarray(count_weights)[None, :], count.shape)
        shifts = tuple((int(v), count & (cw == v)) for v in np.unique(cw[count])) \
            + ((0, ~count),)
    match_start = start & (dst_types[None, :] == fixed_start_type)
    if fixed_ended:
        rules = {0: (match_start, None), 1: (match_start, end)}
    else:
        rules = {0: (match_start, None), 1: (~end, None)}
    terms = []
    for m_src, (to_one, inc) in rules.items():
        for m_dst, sel in ((1, to_one), (0, ~to_one)):
            for shift, sh in shifts:
                mask = sel & sh
                if mask.any():
                    terms.append((m_src, m_dst, shift, mask,
                                  None if inc is None else (inc & mask) if end_weight == 1
                                  else (inc & mask) * float(end_weight)))
    return terms


#: the reverse mode keeps every layer's tables when they take at most this many bytes
#: (bounded by n·S·4·(n + 1)·8), else checkpoints every ⌈√n⌉ layers and recomputes
#: the layers between two of them (one more forward pass)
TAPE_BYTES = 64 << 20


class _Window(NamedTuple):
    """The tables after a layer on the counts that hold mass: P, E (S, 2, width) for
    counts lo .. lo + width − 1 (every other count is 0 in both)."""
    P: np.ndarray
    E: np.ndarray
    lo: int


def _start(C: int) -> _Window:
    P = np.zeros((1, 2, 1))
    P[0, 0, 0] = 1.0
    return _Window(P, np.zeros((1, 2, 1)), 0)


def _step(x: _Window, w: np.ndarray, terms: list, C: int) -> tuple[_Window, float, int]:
    """One layer of the recursion on the count window: (the next window, the layer's
    scale, the width before trimming).  A layer moves count c to c or c + 1, so the
    output spans lo .. lo + width; after the scale and the flush it is trimmed to the
    counts where P or E is nonzero (a count c ≤ j + 1 at layer j, and far-off counts
    whose mass fell below :data:`.chain.TINY`)."""
    P, E, lo = x
    wd = P.shape[2]
    wd2 = min(wd + max(t[2] for t in terms), C - lo) if terms else wd
    S = w.shape[1]
    P2 = np.zeros((S, 2, wd2))
    E2 = np.zeros((S, 2, wd2))
    for m_src, m_dst, shift, mask, inc in terms:
        h = min(wd, wd2 - shift)
        M = w * mask
        P2[:, m_dst, shift:shift + h] += M.T @ P[:, m_src, :h]
        E2[:, m_dst, shift:shift + h] += M.T @ E[:, m_src, :h]
        if inc is not None:
            E2[:, m_dst, shift:shift + h] += (w * inc).T @ P[:, m_src, :h]
    scale = float(P2.sum())
    if not scale > 0:
        raise InputError("the lattice gives no weight to any valid sequence")
    P2, E2 = flush(P2 / scale), flush(E2 / scale)
    live = np.flatnonzero(P2.any(axis=(0, 1)) | E2.any(axis=(0, 1)))
    a, b = int(live[0]), int(live[-1]) + 1
    if a > 0 or b < wd2:
        P2, E2 = P2[:, :, a:b].copy(), E2[:, :, a:b].copy()
    return _Window(P2, E2, lo + a), scale, wd2


def _close(x: _Window, lattice, C: int, last: float = 1.0):
    """Z, T (normalised) from the last window and the final weights; (fin, total).
    ``last``: what a match still open at n adds to tp (the fixed last chunk's weight)."""
    fin = np.exp(lattice.chain.final - np.max(lattice.chain.final))
    P, E, lo = x
    Z, T = np.zeros(C), np.zeros(C)
    sl = slice(lo, lo + P.shape[2])
    Z[sl] = np.einsum("smc,s->c", P, fin)
    T[sl] = np.einsum("smc,s->c", E, fin) + last * (P[:, 1, :].T @ fin)   # open matches close
    total = Z.sum()
    if not total > 0:
        raise InputError("the lattice gives no weight to any valid sequence")
    return Z / total, T / total, fin, total


def _sizes(lattice, fixed_chunks, weights) -> tuple[int, float]:
    """(C, the tp a match open at n adds): C = n·max weight + 1 counts m can take."""
    if weights is None:
        return lattice.n + 1, 1.0
    types = lattice.space.types
    last = [weights[types.index(t)] for t, _, e in fixed_chunks
            if e == lattice.n and t in types]
    return lattice.n * int(max(weights, default=1)) + 1, float(last[0] if last else 1)


def tp_count_table(lattice, fixed_chunks, typed: bool = True, count_type: str | None = None,
                   weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(Z, T): Z[c] = Pr(m(y) = c), T[c] = E[tp · 1{m(y) = c}] against ``fixed_chunks``.

    ``fixed_chunks`` are (type, start, end) of a sequence of the lattice's length;
    y ranges over the lattice's distribution.  States (tag, match, c) carry pairs
    ⟨p, p·tp⟩ of the expectation semiring; the match logic is T's
    (:func:`fstchunk.grammars.counting.tp_step`) on chunk boundaries.  Each layer
    runs on the window of counts that hold mass (:func:`_step`): O(n·S²·width)
    time, O(S·width) memory, width ≤ n + 1 (about 300 counts at n = 2000 on a
    CoNLL-2000 CRF: the count's spread, not n).  ``typed=False``: tp counts the
    chunks of y with a fixed chunk's boundaries, whatever its type (the exact-boundary
    utility, :mod:`fstchunk.decoding.exact_boundaries`).  ``count_type``: m(y) counts
    y's chunks of that type only — with only that type's ``fixed_chunks``, the table of
    one type's F (the per-type and macro utilities, :mod:`fstchunk.decoding.utilities`).
    ``weights`` (whole numbers ≥ 1 by type index, with ``typed``): a chunk of type k
    counts ``weights[k]`` in m(y) and a match of it ``weights[k]`` in tp, so Z and T
    run over weighted counts c ≤ n·max weight — the weighted F_β's table
    (:mod:`fstchunk.decoding.weighted_utility`; m(fixed) is then its weighted count).
    """
    C, last = _sizes(lattice, fixed_chunks, weights)
    x = _start(C)
    for w, _, terms in _tp_rules(lattice, fixed_chunks, typed, count_type, weights):
        x, _, _ = _step(x, w, terms, C)
    Z, T, _, _ = _close(x, lattice, C, last)
    return Z, T


def tp_count_table_grad(lattice, fixed_chunks, Zbar, Tbar, typed: bool = True,
                        count_type: str | None = None, weights: np.ndarray | None = None):
    """Gradient of Σ_c Zbar[c]·Z[c] + Tbar[c]·T[c] (Z, T of :func:`tp_count_table`)
    with respect to the lattice's log weights: (list of (S_i, S_{i+1}) arrays, one per
    layer; array over the final states; and (Z, T) themselves).  ``Zbar`` may be a
    function (Z, T) -> (Zbar, Tbar).  Reverse mode over the same recursion; the
    per-layer scales cancel in Z and T, so they are treated as constants.

    Cost: time O(n·S²·width) (forward, reverse, and for long sentences the forward
    of all but the last stretch once more); memory O(min(n, 2⌈√n⌉)·S·width) for the
    tables — every layer's when that is at most :data:`TAPE_BYTES`, else checkpoints
    every ⌈√n⌉ layers and one stretch of layers recomputed at a time — plus the
    O(n·S²) gradient itself.
    Adjoints are carried on the forward's count windows: a count flushed to 0 in the
    forward passes no gradient back (it changes the result by < TINY).  ``typed``,
    ``count_type`` and ``weights``: as :func:`tp_count_table`'s."""
    C, last = _sizes(lattice, fixed_chunks, weights)
    rules = list(_tp_rules(lattice, fixed_chunks, typed, count_type, weights))
    n = len(rules)
    S = max([1] + [w.shape[1] for w, _, _ in rules])
    every = n if 4 * 8 * n * S * C <= TAPE_BYTES else max(1, int(np.ceil(np.sqrt(n))))
    checkpoints, stretch = {}, []
    x = _start(C)
    for j, (w, _, terms) in enumerate(rules):
        if j % every == 0:                # a checkpoint; the stretch before it is let go
            checkpoints[j], stretch = x, []
        y, scale, wd2 = _step(x, w, terms, C)
        stretch.append((x, scale, wd2, y.lo))
        x = y
    Zn, Tn, fin, total = _close(x, lattice, C, last)
    if callable(Zbar):                   # adjoints that depend on the table itself
        Zbar, Tbar = Zbar(Zn, Tn)
    K = float(Zbar @ Zn + Tbar @ Tn)
    P, E, lo = x
    sl = slice(lo, lo + P.shape[2])
    zb = (Zbar[sl] - K) / total
    tb = Tbar[sl] / total
    Pb = fin[:, None, None] * zb[None, None, :] + np.zeros_like(P)
    Pb[:, 1, :] += last * fin[:, None] * tb[None, :]
    Eb = np.broadcast_to(fin[:, None, None] * tb[None, None, :], E.shape).copy()
    final_grad = (np.einsum("smc,c->s", P, zb) + np.einsum("smc,c->s", E, tb)
                  + last * (P[:, 1, :] @ tb)) * fin
    grads: list = [None] * n
    for j0 in sorted(checkpoints, reverse=True):
        if j0 < max(checkpoints):                 # the stretch's inputs, recomputed
            stretch, x = [], checkpoints[j0]
            for j in range(j0, min(j0 + every, n)):
                w, _, terms = rules[j]
                y, scale, wd2 = _step(x, w, terms, C)
                stretch.append((x, scale, wd2, y.lo))
                x = y
        for j in range(min(j0 + every, n) - 1, j0 - 1, -1):
            (P, E, lo), scale, wd2, lo_out = stretch[j - j0]
            w, _, terms = rules[j]
            Pb, Eb, grads[j] = _reverse_step(P, E, lo, w, terms, Pb, Eb, scale, wd2, lo_out)
    return grads, final_grad, (Zn, Tn)


def _reverse_step(P, E, lo, w, terms, Pb, Eb, scale, wd2, lo_out):
    """The adjoints of a layer's inputs (on its input window) and of its weights, from
    those of its (trimmed) outputs, which start at count ``lo_out``."""
    off = lo_out - lo
    P2b = np.zeros((w.shape[1], 2, wd2))
    E2b = np.zeros((w.shape[1], 2, wd2))
    P2b[:, :, off:off + Pb.shape[2]] = Pb / scale
    E2b[:, :, off:off + Eb.shape[2]] = Eb / scale
    wd = P.shape[2]
    Pb, Eb = np.zeros_like(P), np.zeros_like(E)
    wb = np.zeros_like(w)
    for m_src, m_dst, shift, mask, inc in terms:
        h = min(wd, wd2 - shift)
        M = w * mask
        yp, ye = P2b[:, m_dst, shift:shift + h], E2b[:, m_dst, shift:shift + h]
        xp, xe = P[:, m_src, :h], E[:, m_src, :h]
        wb += mask * (xp @ yp.T + xe @ ye.T)
        Pb[:, m_src, :h] += M @ yp
        Eb[:, m_src, :h] += M @ ye
        if inc is not None:
            wb += inc * (xp @ ye.T)
            Pb[:, m_src, :h] += (w * inc) @ ye
    return Pb, Eb, wb * w
