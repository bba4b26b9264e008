"""The partial-match credit's count table: SemEval-2013's partial mode under a lattice.

For a fixed sequence with chunks C and y ~ the lattice,

    Z[c] = Pr(m(y) = c),    H[c] = E[credit(C, y) · 1{m(y) = c}],

credit = COR + ½·PAR of nervaluate's matching with the prediction the fixed side
(``fixed="hypothesis"``, decoding) or the random one (``"reference"``, training),
m counting the random side's chunks.  F_β = (1+β²)·credit / (m(x) + β²·m(y)) is
linear in credit for fixed counts, so (Z, H) give E[P], E[R] and E[F_β] exactly as
(Z, T) do for conlleval's tp (:func:`.expectation.from_count_table`).

The recursion is the partial-credit counter P (:mod:`fstchunk.grammars.partial`) on
the steps of :mod:`fstchunk.schemes.matching` (:func:`~fstchunk.schemes.matching.partial_close`,
then :func:`~fstchunk.schemes.matching.partial_open`, at each token boundary) read on
the lattice's chunk boundaries, over states (tag, claim state, count) carrying
pairs ⟨p, p·credit⟩ of the expectation semiring (as :mod:`.expectation`):
O(n·S²·6·n) time, O(S·6·n) memory.  Each layer is rescaled (both parts by the same
factor), so any length is safe.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import BudgetError, InputError
from ..schemes.matching import STATES, partial_close, partial_open
from .chain import flush, scaled_layers
from .counting import chunk_count_marginals, outside_run_marginals
from .expectation import from_count_table
from .certified import span_search
from .meu import DEFAULT_MEMORY_BUDGET, MEUResult


def _layer_terms(q_src_states, closes, opens, inside, pred_random: bool,
                 f_end: bool, f_start: bool, f_in: bool) -> list:
    """(q_src, q_dst, shift, half-credits, mask) of one layer: the random side's
    transitions split by (its chunk ended, a chunk opens, inside), each read through
    close-then-open of P with the fixed side's booleans."""
    out: dict = {}
    for r_end in (False, True):
        for r_start in (False, True):
            for r_in in (False, True):
                mask = (closes == r_end) & (opens == r_start) & (inside[None, :] == r_in)
                if not mask.any():
                    continue
                if pred_random:
                    pe, ge, ps, gs, pi, gi = r_end, f_end, r_start, f_start, r_in, f_in
                else:
                    pe, ge, ps, gs, pi, gi = f_end, r_end, f_start, r_start, f_in, r_in
                for q in q_src_states:
                    inc, q1 = partial_close(q, pe, ge)
                    q2 = partial_open(q1, ps, gs, pi, gi)
                    key = (q, q2, int(r_start), inc)
                    out[key] = out[key] | mask if key in out else mask
    return [(*k, m) for k, m in out.items()]


def _fixed_marks(n: int, fixed_chunks):
    """(starts, ends, inside) of the fixed side: ends[j] = a chunk ends at token j − 1."""
    f_start, f_end, f_in = (np.zeros(n + 1, bool) for _ in range(3))
    for _, s, e in fixed_chunks:
        f_start[s], f_end[e], f_in[s:e] = True, True, True
    return f_start, f_end, f_in


def _forward(lattice, fixed_chunks, fixed: str, tape: bool = False):
    """The recursion of :func:`partial_count_table`: (P, E, the final tables' pieces,
    and with ``tape`` every layer's (P, E, w, terms, scale) for the reverse mode)."""
    if fixed not in ("hypothesis", "reference"):
        raise InputError(f"fixed must be 'hypothesis' or 'reference', got {fixed!r}")
    pred_random = fixed == "reference"
    n, C, Q = lattice.n, lattice.n + 1, len(STATES)
    f_start, f_end, f_in = _fixed_marks(n, fixed_chunks)
    tix = lattice.space.type_index
    P = np.zeros((1, Q, C))
    P[0, 0, 0] = 1.0
    E = np.zeros_like(P)
    layers = []
    dense = lattice.scores is not None      # every layer after the first has the same tables
    cache: dict = {}
    for j, w, _, _, opens, closes, _, dst in scaled_layers(lattice.chain, lattice.space):
        live = tuple(q for q in STATES if P[:, q].any())
        key = (j == 0, bool(f_end[j]), bool(f_start[j]), bool(f_in[j]), live)
        terms = cache.get(key) if dense else None
        if terms is None:
            terms = cache[key] = _layer_terms(live, closes, opens, tix[dst] >= 0, pred_random,
                                              *key[1:4])
        P2, E2 = np.zeros((w.shape[1], Q, C)), np.zeros((w.shape[1], Q, C))
        for q, q2, shift, inc, mask in terms:
            M = (w * mask).T
            P2[:, q2, shift:] += M @ P[:, q, :C - shift]
            E2[:, q2, shift:] += M @ (E[:, q, :C - shift] + inc * P[:, q, :C - shift])
        scale = float(P2.sum())
        if not scale > 0:
            raise InputError("the lattice gives no weight to any valid sequence")
        if tape:
            layers.append((P, E, w, terms, scale))
        P, E = flush(P2 / scale), flush(E2 / scale)
    fin = np.exp(lattice.chain.final - np.max(lattice.chain.final))
    inside = tix[lattice.chain.labels[-1]] >= 0
    inc = np.zeros((len(fin), Q))          # half-credits of the last token's ends
    for q in STATES:
        for r_in in (False, True):
            pe, ge = (r_in, bool(f_end[n])) if pred_random else (bool(f_end[n]), r_in)
            inc[inside == r_in, q] = partial_close(q, pe, ge)[0]
    return P, E, fin, inc, layers


def _close(P, E, fin, inc):
    """(Z, H) normalised, and the total, from the last layer's tables."""
    Z = np.einsum("sqc,s->c", P, fin)
    H = np.einsum("sqc,s->c", E + inc[:, :, None] * P, fin)
    total = Z.sum()
    if not total > 0:
        raise InputError("the lattice gives no weight to any valid sequence")
    return Z / total, H / (2 * total), total


def partial_count_table(lattice, fixed_chunks, fixed: str = "hypothesis"
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(Z, H): Z[c] = Pr(m = c), H[c] = E[credit · 1{m = c}] (module doc).

    ``fixed_chunks`` are (type, start, end) of a sequence of the lattice's length;
    ``fixed``: ``"hypothesis"`` (it is the prediction) or ``"reference"`` (the gold).
    """
    P, E, fin, inc, _ = _forward(lattice, fixed_chunks, fixed)
    Z, H, _ = _close(P, E, fin, inc)
    return Z, H


#: the reverse mode's tape may take at most this many bytes
TAPE_BYTES = 1 << 30


def partial_count_table_grad(lattice, fixed_chunks, Zbar, Hbar, fixed: str = "reference"):
    """Gradient of Σ_c Zbar[c]·Z[c] + Hbar[c]·H[c] ((Z, H) of :func:`partial_count_table`)
    with respect to the lattice's log weights: (one (S_i, S_{i+1}) array per layer, the
    array over the final states, (Z, H)).  Reverse mode over the recursion, every
    layer's tables kept (O(n²·S·6) floats: BudgetError beyond :data:`TAPE_BYTES`); the
    per-layer scales cancel in Z and H and are treated as constants."""
    n, S = lattice.n, max(len(lab) for lab in lattice.chain.labels)
    need = 2.0 * 8 * n * S * len(STATES) * (n + 1)
    if need > TAPE_BYTES:
        raise BudgetError(f"the partial-match gradient of this {n}-token sentence needs "
                          f"{need / 2**20:.0f} MiB of tables, over {TAPE_BYTES / 2**20:.0f} "
                          f"MiB", estimate=need, budget=TAPE_BYTES)
    P, E, fin, inc, layers = _forward(lattice, fixed_chunks, fixed, tape=True)
    Z, H, total = _close(P, E, fin, inc)
    K = float(Zbar @ Z + Hbar @ H)
    zb, hb = (Zbar - K) / total, Hbar / (2 * total)
    Pb = fin[:, None, None] * (zb[None, None, :] + inc[:, :, None] * hb[None, None, :])
    Eb = np.broadcast_to(fin[:, None, None] * hb[None, None, :], E.shape).copy()
    final_grad = np.einsum("sqc,sqc->s", P, Pb) + np.einsum("sqc,sqc->s", E, Eb)
    C = n + 1
    grads: list = [None] * len(layers)
    for j in range(len(layers) - 1, -1, -1):
        P, E, w, terms, scale = layers[j]
        Yp, Ye = Pb / scale, Eb / scale
        Pb, Eb, wb = np.zeros_like(P), np.zeros_like(E), np.zeros_like(w)
        for q, q2, shift, inc_t, mask in terms:
            yp, ye = Yp[:, q2, shift:], Ye[:, q2, shift:]
            up = yp + inc_t * ye
            xp, xe = P[:, q, :C - shift], E[:, q, :C - shift]
            M = w * mask
            Pb[:, q, :C - shift] += M @ up
            Eb[:, q, :C - shift] += M @ ye
            wb += mask * (xp @ up.T + xe @ ye.T)
        grads[j] = wb * w
    return grads, final_grad, (Z, H)


#: partial-credit MEU evaluates at most this many candidate decisions exactly
MAX_CANDIDATES = 16


def partial_meu(lattice, beta_sq: float, memory_budget: float = DEFAULT_MEMORY_BUDGET,
                max_candidates: int = MAX_CANDIDATES) -> MEUResult:
    """The MEU decision for the partial-match F_β, with a certificate.

    Credit ≤ Σ_{p ∈ x} ½(1{p overlaps a chunk of y} + 1{p is a chunk's span in y})
    (a prediction earns ½ for a partial match and 1 for an exact one, and taking
    gold chunks in turn only removes credit), so for k predicted chunks

        U(x) ≤ Σ_{p ∈ x} b_k(p),   b_k(p) = (1+β²)·E[½(o_p + e_p) / (k + β²·m(y))],

    a sum over chunks (any span; o_p and e_p from :func:`.counting.outside_run_marginals`
    and :func:`.counting.chunk_count_marginals`), searched by
    :func:`.certified.span_search` with :func:`partial_count_table` as the exact
    value, after the MAP and conlleval MEU decisions (never less than either): ``gap``
    0.0 when the search ends before ``max_candidates``. The empty decision scores Pr(m =
    0) (1 when β = 0: it is the answer then). BudgetError when the count tables exceed
    ``memory_budget`` bytes.
    """
    def bound(pm, s_i, e_i):
        exact = chunk_count_marginals(lattice)               # [type, s, e, m]
        out = exact.sum(axis=0) + pm[None, None, :] - outside_run_marginals(lattice)
        return 0.5 * out[s_i, e_i]
    r = span_search(lattice, "partial-match", beta_sq, memory_budget, bound, lambda spans:
                    expected_partial_f(lattice, [(0, s, e) for s, e in spans], beta_sq),
                    max_candidates, typed=False)
    return MEUResult([(0, s, e) for s, e in r.chunks], r.value, r.gap, r.anchors, r.nodes)


def expected_partial_f(lattice, chunks, beta_sq: float, fixed: str = "hypothesis") -> float:
    """E[F_β] of the partial-match credit of a fixed chunk list (module doc)."""
    Z, H = partial_count_table(lattice, chunks, fixed)
    return from_count_table(Z, H, len(chunks), beta_sq,
                            "decoding" if fixed == "hypothesis" else "training").f
