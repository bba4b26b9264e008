"""Loss-augmented inference on a lattice's layers: the fast twins of the loss machines.

Max-margin Markov networks (Taskar et al. 2003; Tang et al. use the per-token Hamming
loss) need the *most violating* sequence against a fixed gold y*:

    ŷ = argmax_y  score(y) + Δ(y, y*),

score(y) the lattice's log weight of y (any scale: log potentials, not
probabilities).  Both losses here are solved exactly by max-plus (Viterbi) DPs in
log space over the lattice's :class:`~.chain.Layers`:

* :func:`hamming_viterbi` — Δ_H(y, y*) = Σ_i 1{y_i ≠ y*_i} decomposes over tokens:
  Viterbi with +1 added on every arc entering a state whose tag differs from y*_i.
* :func:`f_loss_viterbi` — Δ_F(y, y*) = 1 − F_β(y | y*),
  F_β(y | y*) = (1+w)·tp / (m(y) + w·m(y*)) with 0/0 := 1 (Jansche's slides, §2),
  w = β² of the standard β (the slides' β', passed as ``beta_sq``; :mod:`fstchunk.core.fbeta`),
  is not decomposable, but against a fixed y* it depends only on (tp, m(y)).  The
  DP runs over states (lattice state, match, tp, m) — T⊠M specialised to y*
  (:func:`fstchunk.grammars.counting.specialised_pair_acceptor`), read on chunk
  boundaries exactly as the expectation semiring does
  (:func:`.expectation._terms`) — keeping for every (tp, m) the best path score
  best(tp, m); the answer is argmax_{tp,m} best(tp, m) + 1 − F_β(tp, m, m(y*)),
  followed back by back pointers.  Work O(n² · S² · (m(y*)+1)), memory
  O(n² · S · (m(y*)+1)) for the back pointers (:func:`f_loss_memory`; a
  BudgetError before the work beyond ``memory_budget``).

Pitfall: the DPs maximise over *state* paths.  That is the maximum over tag
sequences when the layers are unambiguous (one state path per tag sequence: every
lattice from score arrays); :func:`fstchunk.decoding.lossaug.decode_loss_augmented` makes a
machine lattice unambiguous (determinised) before calling these.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.errors import BudgetError, InputError
from .chain import Layers, pair_table, viterbi, viterbi_states
from .expectation import _terms


def hamming_viterbi(layers: Layers, gold: Sequence[int]) -> tuple[list[int], float]:
    """argmax_y score(y) + Σ_i 1{y_i ≠ gold_i} over the state paths of ``layers``;
    ``gold`` are tag indices (the lattice's columns).  Returns (tag indices, value)."""
    if len(gold) != len(layers.weights):
        raise InputError(f"gold has {len(gold)} tags but the lattice has "
                         f"{len(layers.weights)} tokens")
    w2 = [w + (lab != g).astype(float)[None, :]
          for w, lab, g in zip(layers.weights, layers.labels, gold)]
    return viterbi(Layers(w2, layers.labels, layers.final))


def hamming_viterbi_batch(ems: Sequence[np.ndarray], golds: Sequence[np.ndarray],
                          trans: np.ndarray, start: np.ndarray, end: np.ndarray, space,
                          cost: float = 1.0) -> tuple[list[np.ndarray], np.ndarray]:
    """:func:`hamming_viterbi` of many sentences of one dense chain at once: ``ems`` the
    (n_k, L) emission scores, ``golds`` the gold tag indices, ``trans``/``start``/``end``
    the unmasked scores, ``space`` the :class:`~fstchunk.schemes.tagspace.TagSpace` whose
    validity masks apply.  The batch is padded to the longest sentence with identity
    layers (:func:`~fstchunk.engine.chain.viterbi_states`).  Returns the best tag
    indices of each sentence and their values score(y) + cost·Δ(y, gold) (``cost`` 0:
    plain Viterbi, the perceptron's decoder)."""
    n, L = max(len(e) for e in ems), len(space)
    B = len(ems)
    aug = np.zeros((B, n, L))
    for b, (e, g) in enumerate(zip(ems, golds)):
        if len(g) != len(e):
            raise InputError(f"gold has {len(g)} tags but the sentence has {len(e)} tokens")
        aug[b, :len(e)] = e + cost
        aug[b, np.arange(len(e)), g] -= cost
    lengths = np.array([len(e) for e in ems])
    masked = np.where(space.trans_ok, trans, -np.inf)
    ident = np.where(np.eye(L, dtype=bool), 0.0, -np.inf)
    weights = [np.where(space.start_ok, start + aug[:, 0], -np.inf)[:, None, :]]
    for i in range(1, n):
        live = (i < lengths)[:, None, None]
        weights.append(np.where(live, masked[None] + aug[:, i, None, :], ident[None]))
    final = np.broadcast_to(np.where(space.end_ok, end, -np.inf), (B, L))
    states, best = viterbi_states(Layers(weights, [np.arange(L)] * n, final))
    if np.any(best == -np.inf):
        raise InputError("the lattice gives no weight to any valid sequence")
    return [states[b, :k] for b, k in enumerate(lengths)], best


def f_loss(tp: np.ndarray | int, m: np.ndarray | int, m_gold: int, beta_sq: float):
    """Δ = 1 − (1+w)·tp / (m + w·m_gold), w = ``beta_sq`` = β², 0/0 := 1 (so Δ = 0
    when both are empty)."""
    tp, m = np.asarray(tp, dtype=float), np.asarray(m, dtype=float)
    den = m + beta_sq * m_gold
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(den > 0, (beta_sq + 1) * tp / np.where(den > 0, den, 1.0), 1.0)
    return 1.0 - f


#: The memory :func:`f_loss_viterbi` may take unless told otherwise (bytes).
DEFAULT_MEMORY_BUDGET = 1 << 30


def f_loss_memory(layers: Layers, m_gold: int) -> int:
    """Bytes :func:`f_loss_viterbi` needs: its back pointers (5 bytes per entry of
    (state, match, tp, m) per layer, m <= j+1 at layer j) plus the largest temporary
    of one layer (three arrays of S_{j-1}·S_j·(m(y*)+1)·(j+2) entries)."""
    Ct, n = m_gold + 1, len(layers.weights)
    back, temp = 0, 0
    for j, w in enumerate(layers.weights):
        hi = min(j + 2, n + 1)
        back += 5 * w.shape[1] * 2 * Ct * hi
        temp = max(temp, 24 * w.shape[0] * w.shape[1] * Ct * hi)
    return back + temp


def f_loss_viterbi(layers: Layers, space, gold_chunks, beta_sq: float,
                   memory_budget: float | None = None) -> tuple[list[int], float]:
    """argmax_y score(y) + 1 − F_β(y | gold) over the state paths of ``layers``
    (see module doc; ``beta_sq`` = β²).  ``space`` is the lattice's
    :class:`~fstchunk.schemes.tagspace.TagSpace` (boundary tables ``opens``/``closes``,
    ``type_index``), ``gold_chunks`` the gold's (type, start, end).  Returns (tag
    indices, value); InputError if no path has weight; BudgetError, before the work,
    if :func:`f_loss_memory` exceeds ``memory_budget`` bytes (None:
    :data:`DEFAULT_MEMORY_BUDGET`)."""
    n = len(layers.weights)
    need = f_loss_memory(layers, len(gold_chunks))
    limit = DEFAULT_MEMORY_BUDGET if memory_budget is None else memory_budget
    if need > limit:
        raise BudgetError(f"loss-augmented F decoding of {n} tokens against a gold of "
                          f"{len(gold_chunks)} chunks would take about {need:,} bytes, over "
                          f"the memory budget of {int(limit):,}; give memory_budget= at "
                          f"least {need:,}", need, limit)
    tix, types = space.type_index, space.types
    fs = np.full(n, -2)                     # type index of a gold chunk starting at j
    fe = np.zeros(n, bool)                  # a gold chunk ends at token j
    for t, s, e in gold_chunks:
        fs[s] = types.index(t) if t in types else -3
        fe[e - 1] = True
    G = len(gold_chunks)
    Ct, Cm = G + 1, n + 1
    V = np.full((1, 2, Ct, 1), -np.inf)     # [state, match, tp, m], m < j+1 before token j
    V[0, 0, 0, 0] = 0.0
    back = []
    src = np.array([-1])
    for j, w in enumerate(layers.weights):
        dst = layers.labels[j]
        opens = pair_table(space.opens, src, dst)
        closes = pair_table(space.closes, src, dst)
        terms = _terms(opens, closes, tix[dst], fs[j], bool(j > 0 and fe[j - 1]))
        S, prev = w.shape[1], V.shape[-1]
        hi = min(j + 2, Cm)                 # m <= j + 1 after token j
        new = np.full((S, 2, Ct, hi), -np.inf)
        b_src = np.zeros((S, 2, Ct, hi), np.int32)
        b_code = np.zeros((S, 2, Ct, hi), np.int8)   # m_src + 2·d_tp + 4·shift
        for m_src, m_dst, shift, mask, inc in terms:
            parts = ((0, mask),) if inc is None else ((0, mask & ~inc), (1, inc))
            width = min(prev, hi - shift)
            x = V[:, m_src, :, :width]
            for d_tp, sel in parts:
                if not sel.any():
                    continue
                ww = np.where(sel, w, -np.inf)
                cand = x[:, None, :Ct - d_tp] + ww[:, :, None, None]
                arg = np.argmax(cand, axis=0)
                val = np.take_along_axis(cand, arg[None], axis=0)[0]
                tgt = new[:, m_dst, d_tp:, shift:shift + width]
                better = val > tgt
                tgt[better] = val[better]
                b_src[:, m_dst, d_tp:, shift:shift + width][better] = arg[better]
                b_code[:, m_dst, d_tp:, shift:shift + width][better] = \
                    m_src + 2 * d_tp + 4 * shift
        back.append((b_src, b_code))
        V = new
        src = dst
    # the end: an open match closes with the sentence (tp + 1)
    tot = V + layers.final[:, None, None, None]
    S = tot.shape[0]
    closed = np.full((S, Ct, Cm), -np.inf)
    closed[:, 1:] = tot[:, 1, :-1]
    flat = np.concatenate([tot[:, 0], closed])     # rows: (match 0, s), then (match 1, s)
    best = flat.max(axis=0)
    obj = best + f_loss(np.arange(Ct)[:, None], np.arange(Cm)[None, :], G, beta_sq)
    a, b = np.unravel_index(int(np.argmax(obj)), obj.shape)
    value = float(obj[a, b])
    if value == -np.inf:
        raise InputError("the lattice gives no weight to any valid sequence")
    match, s = divmod(int(np.argmax(flat[:, a, b])), S)
    tp, m = int(a) - match, int(b)
    states = []
    for j in range(n - 1, -1, -1):
        states.append(s)
        b_src, b_code = back[j]
        code = int(b_code[s, match, tp, m])
        s = int(b_src[s, match, tp, m])
        match, tp, m = code % 2, tp - (code // 2) % 2, m - code // 4
    if (tp, m) != (0, 0):
        raise RuntimeError("fstchunk bug: the loss-augmented back pointers do not "
                           "lead back to the start")
    states.reverse()
    return [int(layers.labels[i][q]) for i, q in enumerate(states)], value
