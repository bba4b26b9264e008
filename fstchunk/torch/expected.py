"""Exact expected sentence F_β against a fixed gold, differentiable (issue 21).

For y ~ the CRF and the gold chunking g fixed (the training direction of
:func:`fstchunk.decoding.expected.expected_f`, ``reference=g``):

    E_y[F_β(y | g)] = Σ_y Pr(y) · (1+w)·tp(y, g) / (m(y) + w·m(g)),   0/0 := 1

(Jansche's slides, "expected F"), w = β² of the standard β (the slides' β', passed here
as ``beta_sq``; :mod:`fstchunk.core.fbeta`).  For a fixed m(y)
F is linear in tp, so the DP needs only Z[c] = Pr(m(y) = c) and
T[c] = E[tp · 1{m(y) = c}]: a forward recursion in the **expectation semiring**
(pairs (a, b) = (Σ w, Σ w·tp), b' = b·w + a·w·[a tp is completed]) over states

    (tag l, match flag f, chunk count m)

where f = 1 iff y's chunk through the current token opened exactly where a gold
chunk of the same type opens and that gold chunk has not ended before.  Arcs:

* a continuation arc (``cont``): m unchanged; f stays 1 unless the gold chunk
  ended at the previous token (y's chunk is then longer: f = 0);
* any other arc closes y's chunk (if any): a tp is completed iff f = 1 and a
  gold chunk ends at the previous token; it opens a chunk (m + 1, f = a gold
  chunk of the tag's type starts here) or enters O (f = 0).

The end of the sentence closes the last chunk the same way.  The third coordinate is
one of two **slot axes**:

* the **count axis** (exact): slot m holds the sequences with m chunks so far, an
  opening moves a slot up, the axis grows by one slot per token (O(B·n²·L²) time);
* the **node axis**: 1/(m + w·m(g)) = Σ_j W_j e^{−t_j (m + w·m(g))} + δ, the exponential
  sum of :func:`fstchunk.engine.quadrature.exp_sum` (relative error δ ≤ :data:`NODE_TOL`), so
  that slot j tilts every opening by z_j = e^{−t_j} and E[F] = (1+w) Σ_j W_j
  e^{−t_j w m(g)} T(z_j)/Z(1) (+ Pr(m = 0) when w·m(g) = 0, the slot z = 0); K + 2
  slots throughout (O(B·n·K·L²)).  The rule covers the counts m that matter: from
  :data:`WINDOW_MIN_LENGTH` tokens on, a window from Chernoff bounds on the count's
  moment generating function (:func:`count_windows`; E[e^{sm}] from the real-space
  forward with tilted openings), whose tails' share of E[F] is bounded below
  :data:`WINDOW_ERR`, else every m in [1, n].

:func:`expected_f` runs the node axis in real space first
(:func:`fstchunk.torch.tilted.expected_f_real`: one matrix product per token over
arc-kind columns, a custom backward, :mod:`fstchunk.torch.recursion`); where a
reachable state would underflow there (scores of huge magnitude) it runs the log-space
DP below (pairs (a, b) in log space, each step rescaled by a detached constant that
cancels in T/Z; :func:`~fstchunk.torch.semiring.logmatmul`), over whichever axis
takes fewer slot-steps.  The expected corpus F's parts Σ E[tp] and Σ E[m] come from
the same real-space DP with one node (z = 1) and a fourth part Σ w·m
(:func:`fstchunk.torch.tilted.corpus_counts_real`), or from one log-space
forward-backward (:func:`corpus_counts`).

Pitfalls: f is only ever 1 on chunk tags; a gold chunk of a type that no
tag has cannot be matched (such gold is refused by the checks); m(g) = 0
makes F = 0 whenever y has a chunk and 1 for the empty y (0/0 := 1), and so
does β = 0 (F_0 is precision) for the empty y whatever the gold.
"""

from __future__ import annotations


import numpy as np
import torch

from ..engine.quadrature import exp_sum
from . import tilted as _tilted
from .checks import Batch, Gold
from .semiring import NEG, laddexp, logmatmul, lse

#: relative error of the exponential sum for 1/x behind the node axis
NODE_TOL = 1e-11
#: Pr(m(y) < lo) and Pr(m(y) > hi) of the count window the node rule is built for
WINDOW_TAIL = 1e-15
#: what the tails may cost E[F] at most (else the rule covers every count)
WINDOW_ERR = 1e-13
#: below this many tokens (the longest sentence of the batch) no window is computed:
#: at n ≤ 20 windows narrowed the rule by at most two nodes of 9–16 in the benchmark's
#: cases (random, tagger-like and strongly peaked scores, dense and sparse gold; the
#: table of bench_torch.py), and the window pass costs about a third of the DP there
WINDOW_MIN_LENGTH = 24
#: the tilts s of the Chernoff bounds (and their negatives)
TILTS = (0.07, 0.3, 1.2, 5.0)
#: ranges b/a are rounded up to this geometric grid, so that rules are reused
GRID = 2 ** (1 / 16)


class _Counts:
    """The exact count axis: slot m holds the sequences with m chunks so far; an
    opening arc moves a slot up by one, the axis grows by one slot per token."""

    def __init__(self, like: torch.Tensor):
        self.first = like.narrow(-2, 0, 1)                     # one slot: m = 0

    @staticmethod
    def _pad(x: torch.Tensor, front: bool) -> torch.Tensor:
        row = torch.full_like(x.narrow(-2, 0, 1), NEG)
        return torch.cat([row, x] if front else [x, row], -2)

    def open(self, x: torch.Tensor) -> torch.Tensor:
        return self._pad(x, front=True)

    def keep(self, x: torch.Tensor) -> torch.Tensor:
        return self._pad(x, front=False)

    def f(self, Zs, Ts, logz, g: Gold, beta_sq: float) -> torch.Tensor:
        pm, tm = torch.exp(Zs - logz), torch.exp(Ts - logz)
        m = torch.arange(Zs.shape[1], dtype=Zs.dtype, device=Zs.device)
        den = m + beta_sq * g.count.unsqueeze(-1)
        pos = den > 0
        return torch.where(pos, tm * (beta_sq + 1) / torch.where(pos, den, torch.ones_like(den)),
                           pm).sum(-1)


class _Nodes:
    """The tilted axis: slot k holds Σ_y w(y)·z_k^{m(y)} (an opening arc adds
    log z_k = τ_k); slot 0 is z = 1, slot 1 z = 0 (no chunk), the rest the nodes of
    1/x ≈ Σ_j W_j e^{−t_j x} on x = m + w·m(g) ∈ [1 + w·m(g), n + w·m(g)], w = β²
    (:func:`fstchunk.engine.quadrature.exp_sum`), z_j = e^{−t_j}; the axis never grows."""

    def __init__(self, like: torch.Tensor, tau: torch.Tensor, logw: torch.Tensor):
        B, L = like.shape
        self.tau, self.logw = tau, logw                         # (B, K)
        self.first = like.unsqueeze(1).expand(B, tau.shape[1], L)

    def open(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, ..., K, L) + τ_k."""
        B, K = self.tau.shape
        return x + self.tau.view(B, *([1] * (x.dim() - 3)), K, 1)

    def keep(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def f(self, Zs, Ts, logz, g: Gold, beta_sq: float) -> torch.Tensor:
        quad = torch.exp(self.logw + Ts - logz).sum(-1)
        none = torch.exp(Zs[:, 1] - logz.squeeze(-1))           # Pr(m(y) = 0)
        return torch.where(beta_sq * g.count > 0, (beta_sq + 1) * quad,
                           (beta_sq + 1) * quad + none)


def count_windows(crf, bt: Batch) -> tuple[np.ndarray, ...] | None:
    """Per sentence (lo, hi, p_lo, p_hi) as four (B,) arrays: Pr(m(y) < lo) ≤ p_lo and
    Pr(m(y) > hi) ≤ p_hi, by Chernoff's bound Pr(m ≥ k) ≤ E[e^{sm}]·e^{−sk} (s > 0; s < 0
    for the lower tail) minimised over :data:`TILTS`, E[e^{sm}] from the real-space
    forward with tilted openings (:func:`fstchunk.torch.tilted.log_mgf`); lo and hi are
    the tightest counts whose tails stay below :data:`WINDOW_TAIL` (all sentences at
    once).  None if a tilted state underflowed (scores of huge magnitude: the caller
    then takes [0, n])."""
    s = torch.tensor(TILTS + tuple(-x for x in TILTS), dtype=torch.float64,
                     device=bt.emissions.device)
    phi = _tilted.log_mgf(crf, bt, s)
    if phi is None:
        return None
    phi = phi.cpu().numpy()                                      # (J, B) log E[e^{sm}]
    sv = s.cpu().numpy()
    n = np.array(bt.lengths_list)
    k = np.arange(n.max() + 2)
    bound = np.exp(np.minimum(0.0, phi[:, :, None] - sv[:, None, None] * k))   # (J, B, k)
    ge = bound[sv > 0].min(0)                                    # Pr(m ≥ k) (B, k)
    le = bound[sv < 0].min(0)                                    # Pr(m ≤ k)
    inside = k[None, :] <= n[:, None]                            # m(y) ≤ n
    hi = np.where((ge > WINDOW_TAIL) & inside, k, 0).max(1)      # ge[:, 0] = 1
    lo = np.minimum(np.where((le <= WINDOW_TAIL) & inside, k + 1, 0).max(1), hi)
    rows = np.arange(len(n))
    p_lo = np.where(lo > 0, le[rows, np.maximum(lo - 1, 0)], 0.0)
    p_hi = np.where(hi < n, ge[rows, np.minimum(hi + 1, k[-1])], 0.0)
    return lo, hi, p_lo, p_hi


def _rules(a: np.ndarray, b: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Per range [a_i, b_i], the nodes t and log weights of
    :func:`fstchunk.engine.quadrature.exp_sum` on [a_i, a_i·r_i] ⊇ [a_i, b_i], r_i = b_i/a_i rounded
    up to a power of :data:`GRID` (a wider range only costs nodes), as (B, K) arrays
    padded with t = 0 and log weight −inf; each rule on [1, r] built once and rescaled
    (1/x = (1/a)·1/(x/a))."""
    e = np.ceil(np.log(np.maximum(b / a, 1.0)) / np.log(GRID) - 1e-9)
    unit = {x: exp_sum(1.0, float(GRID ** x) if x > 0 else 1.0, tol) for x in np.unique(e)}
    K = max(len(t) for t, _ in unit.values())
    t, lw = np.zeros((len(a), K)), np.full((len(a), K), -np.inf)
    for x, (tu, lwu) in unit.items():
        rows = e == x
        t[rows, :len(tu)] = tu[None, :] / a[rows, None]
        lw[rows, :len(tu)] = lwu[None, :] - np.log(a[rows, None])
    return t, lw


def _widen(x: np.ndarray, width: int, fill: float) -> np.ndarray:
    """x (B, k) padded with ``fill`` to (B, width), a new array."""
    out = np.full((x.shape[0], width), fill)
    out[:, :x.shape[1]] = x
    return out


def node_axis(crf, bt: Batch, g: Gold, beta_sq: float, tol: float = NODE_TOL
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """τ (B, K) and the log weights (B, K) of :class:`_Nodes` for each sentence (padded
    with τ = 0 and weight NEG; weight NEG on slots 0 and 1).  The rule covers
    x = m + c, c = β²·m(g) (``beta_sq`` = β²), for m in the sentence's count window
    (:func:`count_windows`; m ≥ 1, as tp = 0 when m = 0); outside it the sum's error
    times the window's tail mass must stay below :data:`WINDOW_ERR`, else (and for
    batches shorter than :data:`WINDOW_MIN_LENGTH`) the rule covers every m in [1, n]."""
    windows = (count_windows(crf, bt) if max(bt.lengths_list) >= WINDOW_MIN_LENGTH
               else None)
    mg = g.count.cpu().numpy().astype(float)
    n = np.array(bt.lengths_list, dtype=float)
    c = beta_sq * mg
    t, lw = _rules(1.0 + c, n + c, tol)
    if windows is not None:
        lo, hi, p_lo, p_hi = windows
        tw, lww = _rules(np.maximum(lo, 1) + c, np.maximum(hi, 1) + c, tol)
        # outside the window: 1/x and the sum are both at most the sum at x = 1 + c
        worst = np.maximum(np.exp(lww - tw * (1 + c)[:, None]).sum(1), 1.0 / (1 + c))
        ok = (beta_sq + 1) * mg * worst * (p_lo + p_hi) <= WINDOW_ERR
        if tw.shape[1] < t.shape[1]:
            t, lw = t.copy(), lw.copy()
        else:
            t, lw = _widen(t, tw.shape[1], 0.0), _widen(lw, tw.shape[1], -np.inf)
        t[ok, :tw.shape[1]], lw[ok, :tw.shape[1]] = tw[ok], lww[ok]
        t[ok, tw.shape[1]:], lw[ok, tw.shape[1]:] = 0.0, -np.inf
    used = np.isfinite(lw) & (mg > 0)[:, None]                   # m(g) = 0: no node
    K = 2 + int(used.sum(1).max())
    tau, logw = np.zeros((len(mg), K)), np.full((len(mg), K), NEG)
    tau[:, 1] = NEG
    tau[:, 2:] = np.where(used, -t, 0.0)[:, :K - 2]
    logw[:, 2:] = np.where(used, lw - t * c[:, None], NEG)[:, :K - 2]
    dev, dt = bt.emissions.device, bt.emissions.dtype
    return torch.as_tensor(tau, dtype=dt, device=dev), torch.as_tensor(logw, dtype=dt,
                                                                        device=dev)


def expected_f(crf, bt: Batch, g: Gold, beta_sq: float, basis: str = "auto"
               ) -> torch.Tensor:
    """E_y[F_β(y | gold)] (B,) for a :class:`~fstchunk.torch.crf.ChunkCRF` and a
    checked batch and gold (see module doc; ``beta_sq`` = β²).  ``basis``: "auto" runs
    the real-space DP over the node axis (:func:`fstchunk.torch.tilted.expected_f_real`)
    and, where a state underflows there, the log-space DP over whichever axis takes fewer
    slot-steps: "counts" (exact, m grows to n) or "nodes" (the quadrature, K + 2 slots
    throughout); "real", "counts" and "nodes" force one (tests; "real" returns None
    on an underflow)."""
    em, tr = bt.emissions, bt.transitions
    B, n, L = em.shape
    if basis not in ("auto", "real", "counts", "nodes"):
        raise ValueError(f"basis must be auto, real, counts or nodes, not {basis!r}")
    tau = logw = None
    if basis != "counts":
        tau, logw = node_axis(crf, bt, g, beta_sq)
        if basis in ("auto", "real"):
            out = _tilted.expected_f_real(crf, bt, g, beta_sq, tau, logw)
            if out is not None or basis == "real":
                return out
        if basis == "auto" and tau.shape[1] * n >= n * (n + 3) / 2:
            tau = None
    Kcont, Knon = crf._masked("cont", tr), crf._masked("non", tr)
    inchunk = crf._mask("inchunk", em)                         # (L,)

    # token 0: from the sentence start every chunk tag opens a chunk
    psi = crf._masked("start", bt.start) + em[:, 0]             # (B, L)
    ax = _Counts(psi.unsqueeze(1)) if tau is None else _Nodes(psi, tau, logw)
    first = ax.first                                            # (B, S, L)
    mt = g.match[:, 0].unsqueeze(1)
    shut = first.masked_fill(inchunk, NEG)                      # f=0, in O
    a0 = laddexp(ax.keep(shut), ax.open(first.masked_fill(~inchunk | mt, NEG)))
    a1 = laddexp(ax.keep(torch.full_like(shut, NEG)),
                 ax.open(first.masked_fill(~(inchunk & mt), NEG)))
    A = torch.stack([a0, a1], 1)                                # (B, 2[f], S, L)
    # X[:, 0]: log Σ w, X[:, 1]: log Σ w·tp, over (f, slot, l): (B, 2, 2, S, L)
    X = torch.stack([A, torch.full_like(A, NEG)], 1)
    X = X - lse(A.detach().reshape(B, -1), -1).view(B, 1, 1, 1, 1)

    for u in range(1, n):
        e_u = em[:, u].view(B, 1, 1, L)
        ev = g.last[:, u - 1].view(B, 1, 1, 1)                  # a gold chunk ended at u-1
        # continuation arcs: f = 1 survives unless the gold chunk ended at u-1
        C = logmatmul(X, Kcont) + e_u.unsqueeze(1)              # (B, 2, 2, S, L)
        c0 = torch.where(ev, laddexp(C[:, :, 0], C[:, :, 1]), C[:, :, 0])
        c1 = C[:, :, 1].masked_fill(ev, NEG)
        # every other arc closes y's chunk: a tp is completed where f = 1 and ev
        Sm = laddexp(X[:, :, 0], X[:, :, 1])                    # (B, 2, S, L)
        Sm = torch.stack([Sm[:, 0], laddexp(Sm[:, 1], X[:, 0, 1].masked_fill(~ev[:, 0], NEG))],
                         1)
        N = logmatmul(Sm, Knon) + e_u
        # ... into O (f = 0) or opening a chunk (f = a gold chunk opens here)
        moved = torch.where(inchunk, ax.open(N), ax.keep(N))
        mu = g.match[:, u].view(B, 1, 1, L)
        f0 = laddexp(ax.keep(c0), moved.masked_fill(mu, NEG))
        f1 = laddexp(ax.keep(c1), moved.masked_fill(~mu, NEG))
        live = (u < bt.lengths).view(B, 1, 1, 1, 1)
        X = torch.where(live, torch.stack([f0, f1], 2), ax.keep(X))
        X = X - lse(X[:, 0].detach().reshape(B, -1), -1).view(B, 1, 1, 1, 1)

    endv = crf._masked("end", bt.end)
    ev = g.last.gather(1, (bt.lengths - 1).view(B, 1)).view(B, 1, 1)
    Zs = lse(laddexp(X[:, 0, 0], X[:, 0, 1]) + endv, -1)                    # (B, S)
    Ts = lse(laddexp(X[:, 1, 0], X[:, 1, 1], X[:, 0, 1].masked_fill(~ev, NEG)) + endv, -1)
    logz = (lse(Zs, -1) if tau is None else Zs[:, 0]).unsqueeze(-1)
    crf._check_paths(logz.squeeze(-1), bt)
    return ax.f(Zs, Ts, logz, g, beta_sq)


def corpus_counts(crf, bt: Batch, g: Gold) -> tuple[torch.Tensor, torch.Tensor]:
    """(Σ_i E[tp_i], Σ_i E[m(y_i)]) of a batch, the parts of the expected corpus F,
    from one scaled forward-backward (α̂, β̂, c of :class:`~fstchunk.torch.crf.ChunkCRF`):

    * E[m(y)] = Σ_u Pr(a chunk opens at u): the marginals of the opening arcs,
      α̂_{u-1} ⊗ K_open + e_u − c_u + β̂_u (the start's opening arcs at u = 0);
    * E[tp] = Σ over the gold chunks (t, s, e) of Pr((t, s, e) ∈ chunks(y)), all gold
      chunks of the batch side by side (:func:`span_probs`).

    O(B·n·L² + J·w·L²) for J gold chunks of width at most w, instead of the O(B·n²·L²)
    of all chunk marginals; equal to summing :meth:`ChunkCRF.chunk_marginals` (tested).
    """
    arcs = crf._chunk_arcs(bt)
    alpha, c, beta, _, Kopen, _, open0, _ = arcs
    em = bt.emissions
    n = em.shape[1]
    zero = torch.zeros((), dtype=em.dtype, device=em.device)
    m = torch.exp(lse(open0 + em[:, 0] - c[:, 0, None] + beta[:, 0], -1)).sum()
    if n > 1:
        later = lse(logmatmul(alpha[:, :-1], Kopen) + em[:, 1:] - c[:, 1:, None]
                    + beta[:, 1:], -1)                                   # (B, n-1)
        m = m + torch.where(bt.mask[:, 1:], torch.exp(later), zero).sum()
    idx = [(b, s, e, k) for b, row in enumerate(g.chunks) for k, s, e in row]
    if not idx:
        return m * 0, m
    return span_probs(bt, arcs, idx).sum(), m


def span_probs(bt: Batch, arcs: tuple, idx: list[tuple[int, int, int, int]]) -> torch.Tensor:
    """Pr((t, s, e) ∈ chunks(y_b)) (J,) for the spans ``idx`` = [(b, s, e, t), ...], from
    the forward-backward ``arcs`` of :meth:`~fstchunk.torch.crf.ChunkCRF._chunk_arcs`:
    α̂_{s−1} through an opening arc into the tags of type t (or the start's opening
    scores), continuation arcs to e−1, then a closing arc into e (or the sentence end)
    and β̂ — every span side by side, O(J·w·L²) for width at most w."""
    alpha, c, beta, Kcont, Kopen, KcloseT, open0, tbias = arcs
    em = bt.emissions
    n, L = em.shape[1], em.shape[2]
    b, s, e, k = (torch.as_tensor(x, device=em.device, dtype=torch.long) for x in zip(*idx))
    prev = (s - 1).clamp(min=0)
    G = torch.where((s == 0).unsqueeze(-1), open0.expand(len(idx), L),
                    logmatmul(alpha[b, prev], Kopen))
    G = G + em[b, s] - c[b, s].unsqueeze(-1) + tbias[k]
    width = e - s
    for d in range(1, int(width.max())):
        u = (s + d).clamp(max=n - 1)
        nxt = logmatmul(G, Kcont) + em[b, u] - c[b, u].unsqueeze(-1)
        G = torch.where((d < width).unsqueeze(-1), nxt, G)
    at_end = (e == bt.lengths[b]).unsqueeze(-1)
    after = e.clamp(max=n - 1)
    closing = logmatmul(beta[b, after] + em[b, after], KcloseT) - c[b, after].unsqueeze(-1)
    cl = torch.where(at_end, beta[b, e - 1], closing)
    return torch.exp(lse(G + cl, -1))
