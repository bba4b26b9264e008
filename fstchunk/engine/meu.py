"""Exact MEU decoding for expected F_β in near-quadratic memory, with a certificate.

For a hypothesis x with k ≥ 1 chunks (Jansche §10, §21),

    U(x) = E_y[F_β(x|y)] = (w+1) Σ_{c ∈ x} g_k(c),   g_k(c) = E[1{c ∈ y} f_k(m(y))],
    f_k(m) = 1/(k + w m),

and U(∅) = Pr(m(y) = 0), where w = β² (``beta_sq``) is the slides' weight β' of
F_β = (1+β²)·tp / (m(x) + β²·m(y)) with the standard β (:mod:`fstchunk.core.fbeta`).  The
best k-chunk hypothesis is a maximum-weight set of k non-overlapping spans under g_k
(:func:`.intervals.counted_dp`).  Instead of tabulating
Pr(c, m) for every span and count (O(n³) memory) and solving every k (O(n⁴) time):

1. **g_k from a few tilted sweeps.**  1/x = Σ_j W_j e^{−t_j x} + δ(x) on the range of
   x = k + wm that matters (Gauss–Laguerre for narrow ranges, else the trapezoid
   rule after the double-exponential substitution t = exp(v − e^{−v})), so
   g̃_k(c) = Σ_j W_j e^{−t_j k} Q_{z_j}(c) with z_j = e^{−w t_j}, Q_z the tilted span
   marginals of :mod:`.spans` — positive terms only, no cancellation.  The range
   is first taken for the counts that hold all but 1e-9 of Pr(m) and the k that a
   lower bound on U(MAP) leaves; if the certificate then exceeds 1e-13, the
   quadrature is rebuilt for the 1e-18 window.  Sentences of at most
   :data:`EXACT_MAX_N` tokens use the exact count table instead
   (:func:`.counting.chunk_count_marginals`; δ = 0).
2. **Certified weights.**  Σ_{c∈x} g_k(c) − g̃_k(c) = E[tp·δ_k(m)] and tp ≤ min(k, m), so
   every k-set's error is at most e(k) = Σ_m Pr(m) min(k, m) |δ_k(m)|, computed
   exactly from the reference count distribution Pr(m).
3. **Few k solved.**  Every k starts with the bound (w+1) E[min(k, m)/(k+wm)]; the
   MAP hypothesis enters as a certified candidate.  Solving an anchor k₀ (one
   counted DP) bounds every other k too: on the count window [m_lo, m_hi] (outside
   it Pr(m) < 1e-18 and its share is added as ``tail``), f_k ≤ ρ_k f_{k₀} with
   ρ_k = max_m (k₀+wm)/(k+wm), so the best k-set is at most
   ρ_k (w+1)(h_{k₀}(k) + e_{k₀}(k)) + tail_k, h_{k₀}(j) the DP's best j-set under
   g̃_{k₀}.  Anchors are taken at the largest remaining bound until no bound
   exceeds the best value found (on CoNLL-2000, one anchor for 94% of sentences).
4. **Pruning** in the sweep leaves out chunks of marginal below 1e-17/n and chunk
   starts almost surely closed (:mod:`.spans`); removing a chunk c from any
   hypothesis costs at most Pr(c) (F drops by ≤ (w+1)/(k−1+w) ≤ 1 when c ∈ y, by
   ≤ 1 when k = 1), and a hypothesis holds one chunk per start, so the sum over
   starts of the largest left-out marginal bounds the loss.

The certificate returned is ``pruned + max(0, max_k bound_k − Ũ) + (w+1)·e(k̂)``: how
far the answer's utility can be below the true maximum (0.0 when nothing was
approximated or pruned).  Pitfall: every quantity is a probability on the
stochastic chain (:func:`.chain.gauge`), so any score scale is safe.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import BudgetError, InputError
from ..schemes.encodings import tags_to_chunks
from .chain import viterbi
from .counting import chunk_count_marginals, count_distribution
from .expectation import from_count_table, tp_count_table
from .intervals import SpanPairs, backtrace, counted_dp
from .quadrature import exp_sum
from .spans import chunk_probs, tilted_spans

#: bytes one sentence's MEU tables may take unless the caller says otherwise
DEFAULT_MEMORY_BUDGET = 1 << 30
#: sentences up to this length use the exact count table (no quadrature, gap 0)
EXACT_MAX_N = 12
#: Pr(m) mass left outside the count window [m_lo, m_hi]
WINDOW_TAIL = 1e-18
#: Pr(m) mass left outside the count window the quadrature is first built for
CORE_TAIL = 1e-9
#: a certificate above this makes the quadrature be rebuilt for the wide window
GAP_RETRY = 1e-13


@dataclass
class MEUResult:
    """The chosen chunks (type index, start, end), their utility Ũ (exact with the
    count basis, within (w+1)·e(k) ≤ the gap otherwise), the certificate ``gap``
    (max utility − utility of the chunks ≤ gap), and work counters."""
    chunks: list
    value: float
    gap: float
    anchors: int
    nodes: int


# ------------------------------------------------------------------ the decoder
def global_bound(pm: np.ndarray, beta_sq: float, ms: np.ndarray) -> np.ndarray:
    """(w+1) Σ_{m ∈ ms} Pr(m) min(k, m) / (k + wm) for k = 0..n (k = 0: 0)."""
    n = len(pm) - 1
    k = np.arange(n + 1, dtype=float)[:, None]
    m = ms.astype(float)[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(k > 0, pm[ms][None, :] * np.minimum(k, m) / (k + beta_sq * m), 0.0)
    return (beta_sq + 1) * terms.sum(axis=1)


def refuse_unwritable_empty(space, beta_sq: float) -> None:
    """At β = 0 (F_0 = precision) every MEU decision is the empty one (0/0 := 1); one
    InputError where the tag space cannot write it (no ``O``), instead of tags the
    model does not have."""
    if beta_sq == 0 and "O" not in space.tags:
        raise InputError("MEU at β = 0 (precision) decides no chunk at all, and this tag "
                         "set has no O to write that with; give β > 0")


def refuse_over_budget(what: str, need: float, budget: float) -> None:
    """One BudgetError when a sentence's count tables (``need`` bytes) exceed the memory
    ``budget``; ``what`` names the work ("exact MEU of this 400-token sentence")."""
    if need > budget:
        text = (f"{what} needs more than the memory budget of {budget / 2**20:.0f} MiB for "
                f"its count table; raise the budget ({{}}) or decode it with map or posterior")
        raise BudgetError(text.format("memory_budget="), estimate=need, budget=budget,
                          cli=text.format("--memory-budget"))


def _err_by_k(pm: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """e(k) = Σ_m Pr(m) min(k, m) |δ(m)| for k = 0..n, by prefix sums."""
    d = pm * np.abs(delta)
    m = np.arange(len(pm), dtype=float)
    below = np.concatenate([[0.0], np.cumsum(d * m)])[:-1]        # Σ_{m<k} d m
    at_or_above = np.cumsum(d[::-1])[::-1]                        # Σ_{m≥k} d
    return below + m * at_or_above


class _Basis:
    """What the anchor search needs: the kept spans, g̃_k for them, δ_k(m), and the
    bytes the basis holds (counted against the budget with the DP table)."""

    def __init__(self, sw: SpanPairs, weights, delta, pruned: float, nodes: int,
                 nbytes: float):
        self.sw, self.weights, self.delta = sw, weights, delta
        self.pruned, self.nodes, self.nbytes = pruned, nodes, nbytes


def _count_basis(lattice, beta_sq: float, budget: float):
    """Exact basis: Pr(c, m) for every chunk and count (short sentences); also
    Pr(m) = Σ_c Pr(c, m) / m for m ≥ 1 (every chunk of y counts once per chunk)."""
    n, T = lattice.n, len(lattice.space.types)
    refuse_over_budget(f"exact MEU of this {n}-token sentence", 8.0 * T * n * (n + 1) ** 2,
                       budget)
    ms = np.arange(n + 1)
    pcm = chunk_count_marginals(lattice)
    t_i, s_i, e_i = np.nonzero(pcm.sum(axis=3) > 0)
    sw = SpanPairs(t_i, s_i, e_i, n)
    feats = pcm[t_i, s_i, e_i][sw.order]                   # (N, n+1): Pr(c, m)
    pm = np.zeros(n + 1)
    pm[1:] = feats.sum(axis=0)[1:] / ms[1:]
    pm[0] = max(0.0, 1.0 - pm[1:].sum())
    basis = _Basis(sw, lambda k: feats @ (1.0 / (k + beta_sq * ms)),
                   lambda k: np.zeros(n + 1), 0.0, 0, float(pcm.nbytes + feats.nbytes))
    return pm, basis


def _tilt_basis(lattice, beta_sq: float, a: float, b: float, budget: float) -> _Basis:
    """Quadrature basis: tilted span marginals at the nodes of :func:`exp_sum` on [a, b]."""
    n = lattice.n
    ms = np.arange(n + 1)
    t, lw = exp_sum(max(a, 1.0), max(b, a, 1.0))
    tab = tilted_spans(lattice, np.exp(-beta_sq * t), prune=1e-17 / n, budget=budget)
    sw = SpanPairs(tab.types, tab.starts, tab.ends, n)
    prob, ratio = tab.prob[sw.order], tab.ratio[sw.order]

    def delta(k):
        x = k + beta_sq * ms
        return np.exp(lw[None, :] - np.outer(x, t)).sum(axis=1) - 1.0 / x

    nbytes = float(prob.nbytes + ratio.nbytes + 4 * 8 * len(prob))
    return _Basis(sw, lambda k: prob * (ratio @ np.exp(lw - t * k)), delta, tab.pruned, len(t),
                  nbytes)


def _span_index(sw: SpanPairs) -> dict:
    """(type, start, end) -> position in the sorted span list."""
    return {c: i for i, c in enumerate(zip(sw.types.tolist(), sw.starts.tolist(),
                                            sw.ends.tolist()))}


def _lookup(sw: SpanPairs, chunks, at: dict | None = None) -> np.ndarray | None:
    """Positions of ``chunks`` in the sorted span list (None if one is not kept);
    ``at``: :func:`_span_index` of ``sw``, when it serves many lookups."""
    at = _span_index(sw) if at is None else at
    idx = [at.get(tuple(int(v) for v in c)) for c in chunks]
    return None if any(i is None for i in idx) else np.array(idx, dtype=int)


def _window(pm: np.ndarray, tail: float) -> tuple[int, int]:
    """[lo, hi] with Pr(m < lo) ≤ tail and Pr(m > hi) ≤ tail (summed from each end:
    1 − 1e-18 is 1.0 in floating point)."""
    lo = int(np.flatnonzero(np.cumsum(pm) > tail)[0])
    hi = int(np.flatnonzero(np.cumsum(pm[::-1])[::-1] > tail)[-1])
    return lo, max(lo, hi)


def map_certified(p_map, m_map, beta_sq: float):
    """Whether the MAP chunking x* is certainly the exact MEU decision, from its
    probability p* = Pr(y = y*) and its chunk count M alone (arrays or scalars):

        U(x*) ≥ p*·F(x*|x*) = p*,   U(x) ≤ p*·F(x|x*) + (1 − p*)  for every x,

    and for x ≠ x*, F(x|x*) ≤ 1 − δ_M with 1 − δ_M = max((1+w)M/(M+1+wM),
    (1+w)(M−1)/(M−1+wM)) (one chunk more, or one fewer: tp = M with m(x) > M, or
    tp ≤ M − 1), δ_0 = 1; so x* wins when p*(1 + δ_M) > 1, here with a margin of
    :data:`CERTIFY_MARGIN` for the rounding of p*.  β = 0 is never certified this way
    (its decision is the empty set, :func:`exact_meu`)."""
    p = np.asarray(p_map, dtype=float)
    M = np.asarray(m_map, dtype=float)
    w = float(beta_sq)
    with np.errstate(divide="ignore", invalid="ignore"):
        more = (1 + w) * M / (M + 1 + w * M)
        fewer = np.where(M > 1, (1 + w) * (M - 1) / (M - 1 + w * M), 0.0)
    delta = np.where(M > 0, 1.0 - np.maximum(more, fewer), 1.0)
    return (w > 0) & (p * (1.0 + delta) > 1.0 + CERTIFY_MARGIN)


#: the margin by which p*(1 + δ) must exceed 1 for :func:`map_certified`: far above the
#: rounding of p* = exp(score − log Z) (n·s·1e-16 for scores of size s), far below
#: the margins that decide real sentences
CERTIFY_MARGIN = 1e-6


def exact_meu(lattice, beta_sq: float, map_chunks: list | None = None,
              memory_budget: float | None = None, map_logprob: float | None = None,
              value: bool = True) -> MEUResult:
    """argmax_x E[F_β(x|y)] over chunk sets x of the lattice (module doc), with the
    certificate.  ``map_chunks``: (type index, s, e) of a good hypothesis (e.g. MAP)
    that seeds the search; computed here if None.  ``map_logprob``: log Pr of the MAP
    path whose chunks ``map_chunks`` are: when :func:`map_certified` holds, they are
    the answer (gap 0) without any search, and its E[F_β] is computed exactly (the
    expectation semiring) unless ``value`` is False (then ``value`` is NaN: the tags
    alone were asked for).

    The quadrature is first built for the count window that holds all but 1e-9 of
    Pr(m) (its certificate still covers every m); if the gap then exceeds
    :data:`GAP_RETRY`, it is rebuilt for the 1e-18 window."""
    if map_chunks is not None and map_logprob is not None and beta_sq > 0 and \
            bool(map_certified(np.exp(map_logprob), len(map_chunks), beta_sq)):
        chunks = [tuple(int(v) for v in c) for c in map_chunks]
        u = value_of(lattice, chunks, beta_sq) if value else float("nan")
        return MEUResult(chunks, u, 0.0, 0, 0)
    budget = DEFAULT_MEMORY_BUDGET if memory_budget is None else memory_budget
    n = lattice.n
    ms = np.arange(n + 1)
    types = lattice.space.types
    if map_chunks is None:
        idx, _ = viterbi(lattice.layers)
        tags = [lattice.tags[i] for i in idx]
        map_chunks = [(types.index(t), s, e) for t, s, e in tags_to_chunks(tags, lattice.scheme)]
    map_chunks = [tuple(int(v) for v in c) for c in map_chunks]
    if beta_sq == 0:       # F_0 = precision: the empty hypothesis has F = 0/0 := 1
        refuse_unwritable_empty(lattice.space, beta_sq)
        return MEUResult([], 1.0, 0.0, 0, 0)
    if n <= EXACT_MAX_N:
        pm, basis = _count_basis(lattice, beta_sq, budget)
        return _search(lattice, beta_sq, pm, basis, map_chunks, budget)
    pm = count_distribution(lattice)
    bound = global_bound(pm, beta_sq, ms)
    k_map = len(map_chunks)
    res = None
    for tail in (CORE_TAIL, WINDOW_TAIL):
        c_lo, c_hi = _window(pm, tail)
        # a lower bound on U(MAP) from its chunks' marginals picks the k worth solving:
        # U(x) ≥ (w+1) Σ_c (Pr(c) − Pr(m > c_hi)) / (k + w c_hi)
        lb = float(pm[0])
        if k_map:
            p_hi = float(pm[c_hi + 1:].sum())
            lb = max(lb, (beta_sq + 1) * np.maximum(chunk_probs(lattice, map_chunks) - p_hi, 0)
                     .sum() / (k_map + beta_sq * c_hi))
        alive = np.flatnonzero(bound[1:] > lb) + 1
        if len(alive) == 0:
            alive = np.array([max(k_map, 1)])
        # g_k(c) reads f_k(m) only at m ≥ 1 (c ∈ y): the range starts at m = 1 at least
        basis = _tilt_basis(lattice, beta_sq, alive[0] + beta_sq * max(c_lo, 1),
                            alive[-1] + beta_sq * max(c_hi, 1), budget)
        res = _search(lattice, beta_sq, pm, basis, map_chunks, budget)
        if res.gap <= GAP_RETRY:
            break
    return res


def value_of(lattice, chunks: list, beta_sq: float) -> float:
    """E[F_β(x|y)] of the chunk set x = ``chunks`` (type index, s, e), exactly (the
    expectation-semiring count table of :mod:`.expectation`)."""
    types = lattice.space.types
    Z, T = tp_count_table(lattice, [(types[t], s, e) for t, s, e in chunks])
    return from_count_table(Z, T, len(chunks), beta_sq, "decoding").f


def utility_bounds(lattice, beta_sq: float, hypotheses: list,
                   memory_budget: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For chunk sets x (each a list of (type index, s, e)): Ũ(x) and a bound b(x) with
    |U(x) − Ũ(x)| ≤ b(x), U(x) = E[F_β(x|y)] (``beta_sq`` = β²), from one tilted sweep for all of them:
    Ũ(x) = (1+β²) Σ_{c ∈ x} g̃_k(c), b(x) = (1+β²)·e(k) for k = |x| chunks (module doc,
    1 and 2); U(∅) = Pr(m(y) = 0) (1 when β = 0), b = 0.  Where a chunk of x was
    pruned from the sweep, Ũ is nan and b is inf (evaluate x exactly).  A reranker
    (k-best MEU) needs the exact U only for the few x whose intervals reach the best
    lower end.  Cost: the counting forward (O(n²·S²)) and one sweep at the nodes
    for k ∈ [min |x|, max |x|] (:func:`.spans.tilted_spans`, O(spans · nodes) memory;
    BudgetError beyond ``memory_budget``); O(|x|) per hypothesis."""
    budget = DEFAULT_MEMORY_BUDGET if memory_budget is None else memory_budget
    n = lattice.n
    pm = count_distribution(lattice)
    values = np.full(len(hypotheses), np.nan)
    bounds = np.full(len(hypotheses), np.inf)
    ks = sorted({len(x) for x in hypotheses if x})
    basis = None
    if ks:
        c_lo, c_hi = _window(pm, WINDOW_TAIL)
        basis = _tilt_basis(lattice, beta_sq, ks[0] + beta_sq * max(c_lo, 1),
                            ks[-1] + beta_sq * max(c_hi, 1), budget)
    by_k: dict = {}                       # k -> (g̃_k of every kept span, (1+β²)·e(k))
    index = _span_index(basis.sw) if basis is not None else {}
    for i, x in enumerate(hypotheses):
        if not x:
            values[i], bounds[i] = (1.0 if beta_sq == 0 else float(pm[0])), 0.0
            continue
        at = _lookup(basis.sw, x, index)
        if at is None:
            continue
        k = len(x)
        if k not in by_k:
            by_k[k] = (basis.weights(k),
                       (beta_sq + 1) * float(_err_by_k(pm, basis.delta(k))[min(k, n)]))
        g, err = by_k[k]
        values[i], bounds[i] = (beta_sq + 1) * float(g[at].sum()), err
    return values, bounds


def _search(lattice, beta_sq: float, pm: np.ndarray, basis: _Basis, map_chunks: list,
            budget: float) -> MEUResult:
    """The anchor search of the module doc over one basis."""
    n = lattice.n
    ms = np.arange(n + 1)
    m_lo, m_hi = _window(pm, WINDOW_TAIL)
    outside = np.concatenate([ms[:m_lo], ms[m_hi + 1:]])
    tail = global_bound(pm, beta_sq, outside) if len(outside) else np.zeros(n + 1)
    bound = global_bound(pm, beta_sq, ms)
    bound[0] = -np.inf                                # the empty hypothesis is exact
    best_val, best_chunks, best_err = float(pm[0]), [], 0.0
    sw = basis.sw
    if map_chunks:                                    # MAP as a candidate, certified
        at = _lookup(sw, map_chunks)
        if at is not None:
            k = len(map_chunks)
            val = (beta_sq + 1) * float(basis.weights(k)[at].sum())
            err = (beta_sq + 1) * float(_err_by_k(pm, basis.delta(k))[k])
            if val - err > best_val:
                best_val, best_chunks, best_err = val, list(map_chunks), err
    if not (bound > best_val).any():
        return MEUResult(best_chunks, best_val, basis.pruned + best_err, 0, basis.nodes)
    weights, delta, pruned, nodes = basis.weights, basis.delta, basis.pruned, basis.nodes

    # ---- anchors
    anchored = np.zeros(n + 1, bool)
    anchored[0] = True
    anchors = 0
    kk = np.arange(n + 1, dtype=float)
    while True:
        open_b = np.where(anchored, -np.inf, bound)
        k0 = int(np.argmax(open_b))
        if not open_b[k0] > best_val:
            break
        J = int(np.flatnonzero(open_b > best_val).max())
        J = max(J, k0)
        need = 8.0 * (J + 1) * (n + 1) + basis.nbytes
        if need > budget:
            what = (f"exact MEU of this {n}-token sentence needs more than the memory "
                    f"budget of {budget / 2**20:.0f} MiB for its DP table and span table; "
                    f"raise the budget ({{}}) or decode it with map or posterior")
            raise BudgetError(what.format("memory_budget="), estimate=need, budget=budget,
                              cli=what.format("--memory-budget"))
        g = weights(k0)
        wpair = sw.pairs(g) if len(g) else np.zeros(0)
        D = counted_dp(sw, wpair, J)
        h = D[:, n]
        e = _err_by_k(pm, delta(k0))[: J + 1]
        kj = np.maximum(kk[: J + 1], 1.0)               # k = 0 (the empty set) is exact
        with np.errstate(invalid="ignore"):
            rho = np.where(kj >= k0, (k0 + beta_sq * m_hi) / (kj + beta_sq * m_hi),
                           (k0 + beta_sq * m_lo) / (kj + beta_sq * m_lo))
            cand = rho * (beta_sq + 1) * (h + e) + tail[: J + 1]
        cand = np.where(np.isfinite(h), cand, -np.inf)
        cand[k0] = (beta_sq + 1) * (h[k0] + e[k0]) if np.isfinite(h[k0]) else -np.inf
        upd = ~anchored[: J + 1]
        bound[: J + 1] = np.where(upd, np.minimum(bound[: J + 1], cand), bound[: J + 1])
        anchored[k0] = True
        anchors += 1
        if np.isfinite(h[k0]):
            val = (beta_sq + 1) * h[k0]
            if val > best_val:
                best_val, best_err = val, (beta_sq + 1) * e[k0]
                best_chunks = backtrace(sw, wpair, D, k0, g)
    top = float(np.max(bound))
    gap = pruned + max(0.0, top - best_val) + best_err
    return MEUResult(best_chunks, best_val, gap, anchors, nodes)
