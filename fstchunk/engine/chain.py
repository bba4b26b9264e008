"""The chain engine: the one implementation of forward, backward, marginals and
Viterbi over first-order chains.

A chain is a sequence of layers of states: :class:`Layers` holds, for each token,
the (S_i, S_{i+1}) log weights between consecutive layers, the tag of each state
and the final weights.  Lattices from score arrays have one state per tag;
lattices from machines and the joint model's chunk layer have more.

Per-sentence entry points work in log space (any score magnitude); the training
objectives' batched twin in probability space is :mod:`fstchunk.engine.scaled`.

Pitfall: -inf marks a missing arc; rows or columns that are all -inf are states
with no path, and their posteriors are 0, not NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError


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


def entropy(chain: Layers) -> float:
    """H(y) = −Σ_y Pr(y) log Pr(y) of a stochastic chain (:func:`gauge`'s layers, rows
    log-summing to 0): Σ_i Σ_p π_{i−1}(p) · H(K_i(p, ·)) with π the forward state
    distribution (the chain rule); every term is a probability times its log.  That is
    the entropy of the state paths, H(y) only where each tag sequence has one path:
    InputError otherwise (:func:`tag_deterministic`)."""
    if not tag_deterministic(chain):
        raise InputError("entropy: this lattice has several state paths for one tag "
                         "sequence (a machine with several states per tag, e.g. the joint "
                         "model's chunk layer), so H(y) of its tags is not a chain's entropy "
                         "and is not computed; a lattice from score arrays has it")
    x, h = np.ones(1), 0.0
    for w in chain.weights:
        K = np.exp(w)
        with np.errstate(invalid="ignore"):
            rows = -np.where(K > 0, K * w, 0.0).sum(axis=-1)
        h += float(x @ rows)
        x = x @ K
    return max(h, 0.0)


def tag_deterministic(layers: Layers) -> bool:
    """Whether every tag sequence has at most one path: from the start and from every
    state, the arcs of finite weight lead to states of distinct tags."""
    for w, lab in zip(layers.weights, layers.labels):
        lab = np.asarray(lab)
        onehot = lab[:, None] == np.unique(lab)[None, :]
        if (np.isfinite(w).astype(int) @ onehot > 1).any():
            return False
    return True


def restrict(layers: Layers, allowed: np.ndarray) -> Layers:
    """The chain with the paths through disallowed tags removed: allowed[i, t] says
    whether token i may take tag t (shape (n, num_tags)); every arc into a state of
    layer i+1 whose tag is not allowed at token i gets log weight −inf.  Forward on
    the result is the constrained log partition log Σ_{y ∈ A} exp(score(y)) of the
    product constraint A = Π_i allowed_i (partial annotation,
    :mod:`fstchunk.io.annotation`)."""
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


def sample_states(chain: Layers, k: int, rng: np.random.Generator) -> np.ndarray:
    """k state paths drawn independently from the distribution of a stochastic chain
    (:func:`gauge`'s output, one sentence): y_1 ~ Pr(· | start), y_{i+1} ~ Pr(· | y_i),
    by inverse transform sampling on each row's cumulative sum.  Returns the state
    index in each layer, shape (k, n); ``labels`` map them to tags."""
    state = np.zeros(k, dtype=np.int64)
    out = np.empty((k, len(chain.weights)), dtype=np.int64)
    for i, w in enumerate(chain.weights):
        with np.errstate(under="ignore"):
            cum = np.cumsum(np.exp(w[state]), axis=-1)          # (k, S_{i+1})
        u = rng.random(k) * cum[:, -1]          # rows sum to 1 up to rounding
        state = np.minimum((cum <= u[:, None]).sum(axis=-1), cum.shape[1] - 1)
        out[:, i] = state
    return out
