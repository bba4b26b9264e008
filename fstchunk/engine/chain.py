"""The chain engine: the one implementation of forward, backward, marginals and
Viterbi over first-order chains.

A chain is a sequence of layers of states: :class:`Layers` holds, for each token,
the (S_i, S_{i+1}) log weights between consecutive layers, the tag of each state
and the final weights.  Lattices from score arrays have one state per tag;
lattices from machines and the joint model's chunk layer have more.

Per-sentence entry points work in log space (any score magnitude);
:func:`scaled_forward_backward` runs a batch of equal-length sentences of a
linear-chain model in probability space with one normaliser per token (matrix
products instead of log-sum-exp: the training objectives' hot loop).

Pitfall: -inf marks a missing arc; rows or columns that are all -inf are states
with no path, and their posteriors are 0, not NaN.
"""

from __future__ import annotations

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
    per-layer max alone underflows when the layer's best arc is improbable.
    Raises InputError if no valid sequence has weight (log Z = −inf)."""
    beta = backward(layers)
    src = [logsumexp(layers.weights[0] + beta[0][..., None, :], axis=-1)] + beta[:-1]
    if not np.all(np.isfinite(src[0])):
        raise InputError("the lattice gives no weight to any valid sequence")
    weights = []
    with np.errstate(invalid="ignore"):
        for w, b_src, b_dst in zip(layers.weights, src, beta):
            wt = w + b_dst[..., None, :] - b_src[..., :, None]
            weights.append(np.where(np.isfinite(b_src)[..., :, None] & np.isfinite(wt),
                                    wt, -np.inf))
        final = np.where(np.isfinite(layers.final) & np.isfinite(beta[-1]),
                         layers.final - beta[-1], -np.inf)
    return Layers(weights, layers.labels, final)


def state_posteriors(layers: Layers) -> list[np.ndarray]:
    """Pr(the path visits each state of layer i+1), per layer."""
    alpha, logz = forward(layers)
    beta = backward(layers)
    logz = np.asarray(logz)[..., None]
    return [np.exp(a + b - logz) for a, b in zip(alpha, beta)]


def token_marginals(layers: Layers, num_tags: int) -> np.ndarray:
    """Pr(y_i = t), shape (..., n, num_tags): state posteriors summed by tag."""
    post = state_posteriors(layers)
    out = np.zeros(post[0].shape[:-1] + (len(post), num_tags))
    for i, (p, lab) in enumerate(zip(post, layers.labels)):
        onehot = lab[:, None] == np.arange(num_tags)[None, :]
        out[..., i, :] = p @ onehot
    return out


def viterbi(lay: Layers) -> tuple[list[int], float]:
    """Best state path of one chain (the forward recursion in the tropical
    semiring, with back pointers); returns (tag indices, log score)."""
    delta = np.zeros(1)
    back = []
    for w in lay.weights:
        cand = delta[:, None] + w
        bp = np.argmax(cand, axis=0)
        delta = cand[bp, np.arange(cand.shape[1])]
        back.append(bp)
    last = int(np.argmax(delta + lay.final))
    best = float(delta[last] + lay.final[last])
    states = [last]
    for bp in reversed(back[1:]):
        states.append(int(bp[states[-1]]))
    states.reverse()
    return [int(lay.labels[i][s]) for i, s in enumerate(states)], best


def scaled_forward_backward(em: np.ndarray, Mt: np.ndarray, Ms: np.ndarray, Me: np.ndarray):
    """Forward-backward in probability space for a batch (B, n, L) of emission
    scores of a dense linear chain (Mt = exp(transitions − max), Ms, Me the start and
    end weights likewise), one normaliser per token.  The same recursion as
    :func:`forward` / :func:`backward` with w_i(p, q) = trans(p, q) + em_i(q), as
    matrix products (BLAS) instead of log-sum-exp: the training objectives' loop.
    Exact while each token's scores span less than ~700 nats (use the log-space
    functions beyond that).  Returns φ = exp(em − rmax), rmax, â, c, c_end,
    b̂ with â_i = α_i / C_i, C_i = c_0⋯c_i, b̂_i = β_i·C_i / Z, so â·b̂ are the
    marginals and Z = C_{n−1}·c_end (times the exp-shifts)."""
    B, n, L = em.shape
    rmax = em.max(axis=2)
    phi = np.exp(em - rmax[..., None])
    a = np.empty((B, n, L))
    c = np.empty((B, n))
    x = Ms[None] * phi[:, 0]
    for i in range(n):
        if i:
            x = (a[:, i - 1] @ Mt) * phi[:, i]
        c[:, i] = x.sum(axis=1)
        a[:, i] = x / c[:, i:i + 1]
    c_end = a[:, -1] @ Me
    bt = np.empty((B, n, L))
    bt[:, -1] = Me[None] / c_end[:, None]
    for i in range(n - 2, -1, -1):
        bt[:, i] = ((phi[:, i + 1] * bt[:, i + 1]) @ Mt.T) / c[:, i + 1:i + 2]
    return phi, rmax, a, c, c_end, bt


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
