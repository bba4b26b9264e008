"""The chain engine: the one implementation of forward, backward, marginals and
Viterbi over first-order chains.

A chain is a sequence of layers of states: :class:`Layers` holds, for each token,
the (S_i, S_{i+1}) log weights between consecutive layers, the tag of each state
and the final weights.  Lattices from score arrays have one state per tag;
lattices from machines and the joint model's chunk layer have more.

Per-sentence entry points work in log space (any score magnitude);
:func:`scaled_recursions` runs a batch of equal-length sentences of a
linear-chain model in probability space with one normaliser per token (matrix
products instead of log-sum-exp: the training objectives' hot loop, through
:func:`fstchunk.engine.batched.transfer`).

Pitfall: -inf marks a missing arc; rows or columns that are all -inf are states
with no path, and their posteriors are 0, not NaN.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..errors import InputError


@dataclass
class Layers:
    """weights[i]: (..., S_i, S_{i+1}) log weights into layer i+1 (-inf: no arc);
    labels[i]: tag index of each state of layer i+1; final: (..., S_n) log weights.

    Leading dimensions ``...`` are a batch of chains with the same state layout
    (none for one sentence): every log-space function here maps over them."""
    weights: list[np.ndarray]
    labels: list[np.ndarray]
    final: np.ndarray


def logsumexp(a: np.ndarray, axis=None) -> np.ndarray:
    """log Σ exp(a) along ``axis``, exact for any magnitude (-inf entries allowed)."""
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis) if axis is not None else out.reshape(())[()]


def forward(layers: Layers):
    """Log forward vectors (alpha[i] over the states of layer i+1) and log Z:
    α_{i+1}(q) = log Σ_p exp(α_i(p) + w_i(p, q)), log Z = log Σ_q exp(α_n(q) + final(q)).
    log Z is a float for one chain, an array over the batch otherwise."""
    alpha, a = [], np.zeros(1)
    for w in layers.weights:
        a = logsumexp(a[..., :, None] + w, axis=-2)
        alpha.append(a)
    logz = logsumexp(a + layers.final, axis=-1)
    return alpha, (float(logz) if np.ndim(logz) == 0 else logz)


def backward(layers: Layers) -> list[np.ndarray]:
    """Log backward vectors: beta[i] over the states of layer i+1."""
    b = layers.final
    beta = [b]
    for w in reversed(layers.weights[1:]):
        b = logsumexp(w + b[..., None, :], axis=-1)
        beta.append(b)
    return beta[::-1]


def gauge(layers: Layers) -> Layers:
    """The same distribution as a stochastic chain (the backward h-transform):
    w̃_i(p, q) = w_i(p, q) + β_{i+1}(q) − β_i(p), final̃ = final − β_n, so every
    live row log-sums to 0 and exp(w̃_i(p, ·)) is Pr(next state | p) — entries in
    [0, 1] at any score scale.  Path weights change by the constant log Z only, so
    normalised quantities (marginals, count tables, expectations) and their
    gradients with respect to the log weights are the same for both layers
    (gauge invariance).  Dead states (no path to the end) get −inf rows.

    Pitfall: this is what makes the probability-space recursions of
    :mod:`.counting` and :mod:`.expectation` exact for any finite scores; a
    per-layer max alone underflows when the layer's best arc is improbable.  The
    backward is re-centred at every layer (b̂ = b − max b): the plain β grows with n,
    and β_{i+1} − β_i taken from two values of size n·s carries n·s·1e-16 of
    rounding into every transition probability (4.8e-12 in E[F] at 1000 tokens).
    Raises InputError if no valid sequence has weight (log Z = −inf)."""
    n = len(layers.weights)
    weights: list = [None] * n
    with np.errstate(invalid="ignore"):
        fin_ok = np.isfinite(layers.final)
        top = np.max(np.where(fin_ok, layers.final, -np.inf), axis=-1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        b_hat = layers.final - top                          # re-centred backward of layer n
        final = np.where(fin_ok, 0.0, -np.inf)
        for i in range(n - 1, -1, -1):
            w = layers.weights[i]
            t = w + b_hat[..., None, :]
            mx = t.max(axis=-1)                             # this layer's backward:
            ok = np.isfinite(mx)                            # b = log Σ exp(t), in place
            if ok.all():
                b = np.log(np.exp(t - mx[..., None]).sum(axis=-1)) + mx
            else:
                b = logsumexp(t, axis=-1)
            live = np.isfinite(b)
            if i == 0 and not np.all(live):
                raise InputError("the lattice gives no weight to any valid sequence")
            wt = t - np.where(live, b, 0.0)[..., :, None]   # rows log-sum to 0
            weights[i] = np.where(live[..., :, None] & np.isfinite(wt), wt, -np.inf)
            m = np.max(np.where(live, b, -np.inf), axis=-1, keepdims=True)
            b_hat = b - np.where(np.isfinite(m), m, 0.0)
        final = np.where(fin_ok & np.isfinite(layers.final), final, -np.inf)
    return Layers(weights, layers.labels, final)


def restrict(layers: Layers, allowed: np.ndarray) -> Layers:
    """The chain with the paths through disallowed tags removed: allowed[i, t] says
    whether token i may take tag t (shape (n, num_tags)); every arc into a state of
    layer i+1 whose tag is not allowed at token i gets log weight −inf.  Forward on
    the result is the constrained log partition log Σ_{y ∈ A} exp(score(y)) of the
    product constraint A = Π_i allowed_i (partial annotation,
    :mod:`fstchunk.annotation`)."""
    allowed = np.asarray(allowed, dtype=bool)
    if allowed.shape[0] != len(layers.weights):
        raise InputError(f"the mask has {allowed.shape[0]} rows but the chain has "
                         f"{len(layers.weights)} tokens")
    weights = [np.where(allowed[i][lab], w, -np.inf)
               for i, (w, lab) in enumerate(zip(layers.weights, layers.labels))]
    return Layers(weights, layers.labels, layers.final)


def state_posteriors(layers: Layers) -> list[np.ndarray]:
    """Pr(the path visits each state of layer i+1), per layer.  Each layer is
    renormalised to sum to 1 (every path visits one state per layer): with scores
    of magnitude s, α + β − log Z carries a rounding error of about s·1e-16, which
    would otherwise show as marginals of 1 + 1e-12."""
    alpha, logz = forward(layers)
    beta = backward(layers)
    logz = np.asarray(logz)[..., None]
    out = []
    for a, b in zip(alpha, beta):
        p = np.exp(a + b - logz)
        out.append(p / p.sum(axis=-1, keepdims=True))
    return out


def token_marginals(layers: Layers, num_tags: int) -> np.ndarray:
    """Pr(y_i = t), shape (..., n, num_tags): state posteriors summed by tag."""
    post = state_posteriors(layers)
    out = np.zeros(post[0].shape[:-1] + (len(post), num_tags))
    for i, (p, lab) in enumerate(zip(post, layers.labels)):
        onehot = lab[:, None] == np.arange(num_tags)[None, :]
        out[..., i, :] = p @ onehot
    return out


def viterbi_states(lay: Layers) -> tuple[np.ndarray, np.ndarray]:
    """Best state path of each chain of a batch (the leading dimensions of the weights;
    none for one sentence): the forward recursion in the tropical semiring with back
    pointers.  Returns the state index in each layer, shape (..., n), and the log
    score (...), −inf where a chain has no path.  Ties go to the lowest state index.
    Sentences of different lengths share a batch by padding with identity layers
    (log weight 0 on the diagonal, −inf elsewhere), which leave every path's score as
    it is (:func:`fstchunk.models.maxmargin.hamming_oracles`)."""
    delta = np.zeros(lay.weights[0].shape[:-2] + (1,))
    back = []
    for w in lay.weights:
        cand = delta[..., :, None] + w
        bp = np.argmax(cand, axis=-2)
        delta = np.take_along_axis(cand, bp[..., None, :], axis=-2)[..., 0, :]
        back.append(bp)
    total = delta + lay.final
    last = np.argmax(total, axis=-1)
    best = np.take_along_axis(total, last[..., None], axis=-1)[..., 0]
    states = np.empty(last.shape + (len(back),), dtype=np.int64)
    states[..., -1] = last
    for i in range(len(back) - 1, 0, -1):
        states[..., i - 1] = np.take_along_axis(back[i], states[..., i:i + 1], axis=-1)[..., 0]
    return states, best


def viterbi(lay: Layers) -> tuple[list[int], float]:
    """Best state path of one chain (:func:`viterbi_states`); returns (tag indices,
    log score)."""
    states, best = viterbi_states(lay)
    if best == -np.inf:
        raise InputError("the lattice gives no weight to any valid sequence")
    return [int(lay.labels[i][s]) for i, s in enumerate(states)], float(best)


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


#: Values below this (relative to a layer's scale) are set to zero.  Pitfall:
#: subnormal doubles (< 2.2e-308) make BLAS products up to 100x slower, and
#: count bins of improbable chunk counts fall that low in long sentences.
TINY = 1e-280


def flush(a: np.ndarray) -> np.ndarray:
    """Set entries below :data:`TINY` to zero, in place."""
    a[a < TINY] = 0.0
    return a


def pair_table(table: np.ndarray, lab_src: np.ndarray, lab_dst: np.ndarray) -> np.ndarray:
    """Index a tag-pair table by the states of two layers (lab -1 = sentence start)."""
    rows = np.where(lab_src < 0, table.shape[0] - 1, lab_src)
    return table[rows][:, lab_dst]


def scaled_layers(layers: Layers, space):
    """Per layer i: (i, W_i = exp(w_i − max w_i) (linear, scaled), max w_i, and the
    ``space``'s cont / opens / closes tables indexed by the states of layers i and
    i+1, labels of the source and destination states).  The input of the counting
    and expectation-semiring recursions (:mod:`.counting`, :mod:`.expectation`)."""
    cont, start, end = space.cont, space.opens, space.closes
    lay = layers
    src = np.array([-1])
    for i, w in enumerate(lay.weights):
        dst = lay.labels[i]
        mx = np.max(w)
        yield (i, flush(np.exp(w - mx)), mx, pair_table(cont, src, dst), pair_table(start, src, dst),
               pair_table(end, src, dst), src, dst)
        src = dst
