"""The chain engine's probability-space twin for training: forward-backward over a
batch of sentences of a dense linear chain with one normaliser per token, as matrix
products instead of log-sum-exp (:func:`scaled_recursions`).  Exact where its range
check passes; :func:`fstchunk.engine.batched.transfer` takes it then and the gauged
chain otherwise.  A ragged batch (sentences of nearby lengths padded to the longest,
``lengths``) is the ML objective's unit (:attr:`fstchunk.models.batching.Gold.buckets`).

Pitfall: the arrays run (n, L, B) inside — each per-sentence scaling along the long
axis B — and come back as (B, n, L) views of them: copy before writing in place
(:class:`fstchunk.engine.batched.Scaled` does, on purpose, to φ).
"""

from __future__ import annotations

import functools

import numpy as np

from ..core.errors import InputError


#: The smallest unnormalised forward or backward weight of a live state that
#: :func:`scaled_recursions` accepts.  At or above it, an underflowing
#: product (below 2^-1074 each, L of them per entry) changes an entry, and through
#: it any marginal or expectation, by less than ~L²·1e-323 / 1e-290 ≈ 1e-30.
SCALED_FLOOR = 1e-290


def scaled_recursions(em: np.ndarray, Mt: np.ndarray, Ms: np.ndarray, Me: np.ndarray,
                      lengths: np.ndarray | None = None):
    """Forward-backward in probability space for a batch (B, n, L) of emission
    scores of a dense linear chain with weights Mt (L, L), Ms, Me (L,) in [0, 1]
    (exp of the transition, start and end scores minus their max; a 0 is a
    forbidden arc), one normaliser per token:

        x_0 = Ms∘φ_0,  x_i = (â_{i−1}·Mt)∘φ_i,  c_i = Σ x_i,  â_i = x_i / c_i,
        b̂_{n−1} = Me / c_end,  b̂_i = Mt·(φ_{i+1}∘b̂_{i+1}) / c_{i+1},

    φ_i = exp(em_i − rmax_i) (rmax_i: the batch's largest score; 0 on padding): the
    recursion of :func:`forward` / :func:`backward` with w_i(p, q) = trans(p, q) +
    em_i(q), as matrix products (BLAS) instead of log-sum-exp.  Returns ((φ, rmax, â, c, c_end, b̂), ok), b̂_i = β_i·C_i / Z
    (C_i = c_0⋯c_i): â·b̂ are the marginals and log Z = Σ log c + log c_end (+ the
    exp-shifts).  ``ok``: every live state (on a path of positive weight) kept x_i(q)
    and its unnormalised backward weight at or above :data:`SCALED_FLOOR` at every
    token, i.e. within about 667 nats of its token's total; else the numbers may be
    wrong and must not be used (:func:`fstchunk.engine.batched.transfer` then takes
    the exact gauged path).  φ is 0 at states no path reaches, so that their
    backward weights stay finite.  An emission of −inf forbids its tag at its token
    (a partial annotation's mask): the range check then runs over each sentence's
    own live states.

    ``lengths`` (B,): a ragged batch, sentence b its first lengths[b] tokens (the
    rest padding, any values): its end weights Me enter at its own last token, and
    â, b̂ and φ are 0 and c is 1 on the padding, so every sum over tokens (marginals,
    transition counts, log Z) runs over the sentence only.  Batching sentences of
    nearby lengths this way takes one Python step per token of the longest instead
    of one per token of every length (the ML objective's hot loop)."""
    if max(Mt.max(), Ms.max(), Me.max()) > 1 or min(Mt.min(), Ms.min(), Me.min()) < 0:
        raise InputError("scaled weights must lie in [0, 1] (exp of the scores minus their max)")
    B, n, L = em.shape
    pad = _padding(lengths, B, n)
    # (n, L, B) throughout: a step is an (L, L) by (L, B) product, and each
    # per-sentence scaling runs along the long axis B (in a (B, L) block numpy
    # would loop over rows of L); the results are (B, n, L) views
    em_t = em.transpose(1, 2, 0)
    if pad is not None:
        pad3 = pad.T[:, None, :]
        em_t = np.where(pad3, 0.0, em_t)
    reach, back = _reach((Mt > 0).tobytes(), (Ms > 0).tobytes(), (Me > 0).tobytes(), L, n)
    top = float(em_t.max())
    live = None                                 # (n, L, B) where it differs by sentence
    if float(em_t.min()) == -np.inf:            # a tag forbidden at some token
        live = _live_masked(Mt > 0, Ms > 0, Me > 0, (em_t != -np.inf).transpose(2, 0, 1),
                            lengths if pad is not None else None).transpose(1, 2, 0)
    elif pad is not None and not back.all():    # backward reach from each sentence's end
        dist = np.minimum((n - lengths)[None, :] + np.arange(n)[:, None], n - 1)
        live = reach[:, :, None] & ~pad3 & back[dist].transpose(0, 2, 1)
    # one shift for the batch (a max per token costs a reduction over L per token);
    # a token whose scores all lie ~700 nats below it underflows and fails the check
    shift = top if np.isfinite(top) else 0.0
    phi_t = np.empty((n, L, B))
    np.subtract(em_t, shift, out=phi_t)
    np.exp(phi_t, out=phi_t)
    if not reach.all():
        np.copyto(phi_t, 0.0, where=~reach[:, :, None])
    a_t, c_t, bt_t = np.empty((n, L, B)), np.empty((n, B)), np.empty((n, L, B))
    MtT = np.ascontiguousarray(Mt.T)
    x, y, ones = np.empty((L, B)), np.empty((L, B)), np.ones(L)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        np.multiply(Ms[:, None], phi_t[0], out=x)
        for i in range(n):
            if i:
                np.matmul(MtT, a_t[i - 1], out=x)        # x(q) = Σ_p â(p)·Mt(p, q)
                x *= phi_t[i]
            np.matmul(ones, x, out=c_t[i])               # Σ_q x(q)
            np.multiply(x, 1.0 / c_t[i], out=a_t[i])
        if pad is None:
            c_end = Me @ a_t[-1]
            np.divide(Me[:, None], c_end, out=bt_t[-1])
        else:
            c_end = a_t[lengths - 1, :, np.arange(B)] @ Me
            np.copyto(a_t, 0.0, where=pad3)
            np.copyto(phi_t, 0.0, where=pad3)
            c_t[pad.T] = 1.0
            ends = _ends(lengths, n)
            bt_t[-1] = 0.0
            bt_t[-1][:, ends[-1]] = Me[:, None] / c_end[ends[-1]]
        inv_c = 1.0 / c_t
        for i in range(n - 2, -1, -1):
            np.multiply(phi_t[i + 1], bt_t[i + 1], out=x)
            np.matmul(Mt, x, out=y)                      # y(p) = Σ_q Mt(p, q)·x(q)
            np.multiply(y, inv_c[i + 1], out=bt_t[i])
            if pad is not None and ends[i].size:
                bt_t[i][:, ends[i]] = Me[:, None] / c_end[ends[i]]
    ok = _in_range(a_t, bt_t, c_t, c_end, live, reach & back, pad3 if pad is not None else None)
    phi, a, bt = (v.transpose(2, 0, 1) for v in (phi_t, a_t, bt_t))
    rmax = np.full((B, n), shift) if pad is None else np.where(pad, 0.0, shift)
    c = c_t.T
    return (phi, rmax, a, c, c_end, bt), ok


def _in_range(a_t, bt_t, c_t, c_end, live, on, pad3) -> bool:
    """The range check of :func:`scaled_recursions` on its (n, L, B) arrays: every live
    state's x_i = â_i·c_i and unnormalised backward b̂_i·c_{i+1} at or above the floor
    (both are at least (â_i or b̂_i)·min(c, 1)).  ``live`` (n, L, B) where the live
    states differ by sentence, else ``on`` (n, L) for all; ``pad3``: the padding."""
    cmin = c_t.min()
    floor = SCALED_FLOOR / min(cmin, 1.0) if cmin > 0 else np.inf
    if not c_end.min() >= SCALED_FLOOR:         # (NaN fails too)
        return False
    if live is not None:
        return bool(np.min(a_t, where=live, initial=np.inf) >= floor
                    and np.min(bt_t, where=live, initial=np.inf) >= floor)
    n = len(on)
    part = np.flatnonzero(~on.all(axis=1))  # from token k on, every state is live:
    k = int(part[-1]) + 1 if len(part) else 0
    if pad3 is not None:                    # one flat reduction there (fast)
        np.copyto(a_t, 1.0, where=pad3)
        np.copyto(bt_t, 1.0, where=pad3)
    ok = all(np.all(v[:k].min(axis=2)[on[:k]] >= floor) for v in (a_t, bt_t)) and (
        k == n or (a_t[k:].min() >= floor and bt_t[k:].min() >= floor))
    if pad3 is not None:
        np.copyto(a_t, 0.0, where=pad3)
        np.copyto(bt_t, 0.0, where=pad3)
    return bool(ok)


def _padding(lengths: np.ndarray | None, B: int, n: int) -> np.ndarray | None:
    """(B, n) bool, True on the padding of a ragged batch; None for a plain batch."""
    if lengths is None:
        return None
    lengths = np.asarray(lengths)
    if lengths.shape != (B,) or (B and (lengths.min() < 1 or lengths.max() > n)):
        raise InputError(f"lengths must be {B} sentence lengths in 1..{n}")
    if np.all(lengths == n):
        return None
    return np.arange(n)[None, :] >= lengths[:, None]


def _ends(lengths: np.ndarray, n: int) -> list[np.ndarray]:
    """Per token i, the sentences of a ragged batch whose last token is i."""
    order = np.argsort(lengths, kind="stable")
    cuts = np.searchsorted(lengths[order], np.arange(1, n + 2))
    return [order[cuts[i]:cuts[i + 1]] for i in range(n)]


def _live_masked(arc: np.ndarray, first: np.ndarray, last: np.ndarray,
                 allowed: np.ndarray, lengths: np.ndarray | None = None) -> np.ndarray:
    """(B, n, L) bool: the states on some path through the tags ``allowed`` (B, n, L)
    at each token — reached from a start and reaching an end (partial annotation's
    masked emissions, :func:`restrict`'s batched form); a ragged batch's sentences
    end at their own ``lengths``."""
    B, n, L = allowed.shape
    step = arc.astype(float)
    is_last = np.zeros((B, n), bool)
    if lengths is None:
        is_last[:, -1] = True
    else:
        is_last[np.arange(B), np.asarray(lengths) - 1] = True
        allowed = allowed & (np.arange(n)[None, :] < np.asarray(lengths)[:, None])[..., None]
    fwd = np.empty((B, n, L), bool)
    bwd = np.empty((B, n, L), bool)
    fwd[:, 0] = first & allowed[:, 0]
    for i in range(1, n):
        fwd[:, i] = ((fwd[:, i - 1] @ step) > 0) & allowed[:, i]
    bwd[:, -1] = last & allowed[:, -1]
    for i in range(n - 2, -1, -1):
        nxt = (bwd[:, i + 1] @ step.T) > 0
        bwd[:, i] = np.where(is_last[:, i, None], last, nxt) & allowed[:, i]
    return fwd & bwd


@functools.lru_cache(maxsize=256)
def _reach(arc: bytes, first: bytes, last: bytes, L: int, n: int):
    """Forward reach from ``first`` and backward reach from ``last`` (read from the
    end) through the arcs, (n, L) each; the same few patterns recur across batches."""
    step = np.frombuffer(arc, bool).reshape(L, L)
    out = []
    for r, m in ((np.frombuffer(first, bool), step), (np.frombuffer(last, bool), step.T)):
        sets = np.empty((n, L), bool)
        for i in range(n):
            sets[i] = r
            nxt = r @ m
            if np.array_equal(nxt, r):      # from here on the same set
                sets[i + 1:] = r
                break
            r = nxt
        out.append(sets)
    out[1] = out[1][::-1].copy()
    for a in out:
        a.setflags(write=False)
    return tuple(out)
