"""Max-margin Markov network training of the CRF: the structured hinge and its BCFW solver.

The objective (issue 18; Taskar et al. 2003, M3N; Tang, Wang & Wang, chunking with
M3Ns, with the per-token Hamming loss), on the CRF's θ and features (same θ layout,
same model files, MAP decoding unchanged):

    P(θ) = λ‖θ‖² + (1/N) Σ_i H_i(θ),
    H_i(θ) = max_{valid y} [Δ(y, y_i) + θ·φ(x_i, y)] − θ·φ(x_i, y_i)   (≥ 0, y = y_i)

a mean per sentence like the other objectives (:mod:`.objectives`); multiplied by
1/(2λ) it is the usual ½‖θ‖² + C Σ_i H_i with **C = 1/(2λN)** (:func:`c_to_l2`).
Δ is the Hamming loss Σ_t 1{y_t ≠ y_i,t} (``loss="hamming"``) or 1 − F_β(y | y_i)
(``loss="f"``; the functions here take β² of the standard β as ``beta_sq``, the slides'
β', :mod:`fstchunk.core.fbeta`); the max is exact loss-augmented Viterbi
(:func:`fstchunk.engine.lossaug.hamming_viterbi`, :func:`~fstchunk.engine.lossaug.f_loss_viterbi`)
on the CRF's score arrays with the scheme's validity masks.  :func:`hinge` gives
the mean hinge and a subgradient, (1/N) Σ_i φ(x_i, ŷ_i) − φ(x_i, y_i), on the score
arrays (the CRF applies its chain rule).

The solver is :mod:`.bcfw` (block-coordinate Frank–Wolfe with a duality-gap
certificate); the CLI is ``fstchunk train --objective max-margin``.

Pitfalls: Δ ≥ 0 and H_i ≥ 0 exactly (y = y_i is a candidate; negative rounding is
clipped); the F loss's oracle tracks (state, match, tp, m) and needs memory growing
with n² times the gold's chunk count (:func:`~fstchunk.engine.lossaug.f_loss_memory`).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..schemes import encodings as enc
from ..engine.lossaug import f_loss, f_loss_viterbi, hamming_viterbi, hamming_viterbi_batch
from ..core.errors import InputError
from ..structures.lattice import Lattice
from ..learn import objectives as lo
from ..schemes.tagspace import TagSpace
from .batching import Gold
from .objectives import Chain, ChainGrad, Statistics

#: the losses Δ of the hinge (``--loss``); they, the objective, its default λ (5e-5: Tang
#: et al.'s C = 1 on the 8936 CoNLL-2000 sentences) and gap tolerance (1e-3) are
#: :data:`fstchunk.learn.objectives.MAX_MARGIN`'s
LOSSES = lo.MAX_MARGIN.losses


def c_to_l2(C: float, n_sentences: int) -> float:
    """λ of P(θ) = λ‖θ‖² + (1/N) Σ H_i equivalent to ½‖θ‖² + C Σ H_i: 1/(2CN)."""
    return 1.0 / (2.0 * C * n_sentences)


def l2_to_c(l2: float, n_sentences: int) -> float:
    """C = 1/(2λN), the inverse of :func:`c_to_l2`."""
    return 1.0 / (2.0 * l2 * n_sentences)


def check_loss(loss: str, beta_sq: float) -> None:
    """InputError for a loss not in :data:`LOSSES` or a β² that is not finite and >= 0."""
    if loss not in LOSSES:
        raise InputError(f"unknown loss {loss!r}; use one of {', '.join(LOSSES)}")
    if isinstance(beta_sq, bool) or not (isinstance(beta_sq, (int, float))
                                         and 0 <= beta_sq < math.inf):
        raise InputError(f"beta_sq (β²) must be a finite number >= 0, got {beta_sq!r}")


def sequence_score(em: np.ndarray, trans: np.ndarray, start: np.ndarray, end: np.ndarray,
                   y: np.ndarray) -> float:
    """θ·φ(x, y) = start[y_1] + Σ_t em[t, y_t] + Σ_t trans[y_{t−1}, y_t] + end[y_n]."""
    return float(start[y[0]] + em[np.arange(len(y)), y].sum()
                 + trans[y[:-1], y[1:]].sum() + end[y[-1]])


def loss_of(y: np.ndarray, gold: np.ndarray, gold_chunks: Sequence, tags: Sequence[str],
            scheme: str, loss: str, beta_sq: float) -> float:
    """Δ(y, gold): Hamming count, or 1 − F_β(y | gold) (0/0 := 1)."""
    if loss == "hamming":
        return float(np.sum(y != gold))
    hyp = set(enc.tags_to_chunks([tags[t] for t in y], scheme))
    return float(f_loss(len(hyp & set(gold_chunks)), len(hyp), len(gold_chunks), beta_sq))


def most_violating(tags: Sequence[str], scheme: str, em: np.ndarray, trans: np.ndarray,
                   start: np.ndarray, end: np.ndarray, gold: np.ndarray, gold_chunks: Sequence,
                   loss: str, beta_sq: float) -> tuple[np.ndarray, float]:
    """ŷ = argmax_{valid y} Δ(y, gold) + score(y) on unmasked score arrays (the
    lattice masks them) and Δ(ŷ, gold)."""
    lat = Lattice.from_scores(tags, em, trans, start, end, scheme=scheme, warn=False)
    if loss == "hamming":
        idx, _ = hamming_viterbi(lat.layers, gold)
    else:
        idx, _ = f_loss_viterbi(lat.layers, lat.space, gold_chunks, beta_sq)
    y = np.asarray(idx, dtype=np.int64)
    return y, loss_of(y, gold, gold_chunks, lat.tags, lat.scheme, loss, beta_sq)


def hamming_oracles(tags: Sequence[str], scheme: str, ems: Sequence[np.ndarray],
                    golds: Sequence[np.ndarray], trans: np.ndarray, start: np.ndarray,
                    end: np.ndarray, cost: float = 1.0) -> list[tuple[np.ndarray, float]]:
    """:func:`most_violating` with the Hamming loss for many sentences at once (one
    padded batch, :func:`~fstchunk.engine.lossaug.hamming_viterbi_batch`): (ŷ, Δ) each;
    ``cost`` weighs the loss in the argmax (0: plain Viterbi; Δ is the count)."""
    space = TagSpace.of(tuple(tags), scheme)
    ys, _ = hamming_viterbi_batch(ems, golds, trans, start, end, space, cost)
    return [(y, float(np.sum(y != g))) for y, g in zip(ys, golds)]


def hinge_statistics(chain: Chain, gold: Gold, beta_sq: float = 1.0, loss: str = "hamming"
                     ) -> Statistics:
    """Σ_i H_i and its subgradient Σ_i φ(x_i, ŷ_i) − φ(x_i, y_i) on the score arrays
    (the additive statistics of :func:`hinge`; an executor of :mod:`fstchunk.runtime.scale`
    spreads the sentences: its partitions).  The oracles run in shards of 32 sentences
    of similar lengths."""
    check_loss(loss, beta_sq)
    L = len(chain.tags)
    gE = np.zeros_like(chain.emissions)
    gT, gS, gEnd = np.zeros((L, L)), np.zeros(L), np.zeros(L)
    total = 0.0
    chunks = gold.chunks if loss == "f" else [()] * len(gold)
    job = (chain, gold.offsets, gold.sequences, chunks, loss, beta_sq)
    order = np.argsort(np.diff(gold.offsets), kind="stable")   # similar lengths per shard
    shards = np.array_split(order, max(1, len(gold) // 32))
    found: list = [None] * len(gold)
    for ids, part in zip(shards, (_oracle_shard(job, ids) for ids in shards)):
        for k, r in zip(ids, part):
            found[k] = r
    for k, (g, (y, delta)) in enumerate(zip(gold.sequences, found)):
        lo, hi = gold.offsets[k], gold.offsets[k + 1]
        em = chain.emissions[lo:hi]
        h = delta + (sequence_score(em, chain.trans, chain.start, chain.end, y)
                     - sequence_score(em, chain.trans, chain.start, chain.end, g))
        total += max(h, 0.0)        # ≥ 0 exactly (y = gold is a candidate); rounding only
        rows = np.arange(lo, hi)
        np.add.at(gE, (rows, y), 1.0)
        np.add.at(gE, (rows, g), -1.0)
        np.add.at(gT, (y[:-1], y[1:]), 1.0)
        np.add.at(gT, (g[:-1], g[1:]), -1.0)
        np.add.at(gS, [y[0], g[0]], [1.0, -1.0])
        np.add.at(gEnd, [y[-1], g[-1]], [1.0, -1.0])
    return Statistics(np.array([total]), (ChainGrad(gE, gT, gS, gEnd),))


def hinge(chain: Chain, gold: Gold, beta_sq: float = 1.0, loss: str = "hamming"
          ) -> tuple[float, ChainGrad]:
    """(1/N) Σ_i H_i and the subgradient (1/N) Σ_i φ(x_i, ŷ_i) − φ(x_i, y_i) on the
    score arrays (see module doc; an objective of :mod:`.objectives`' form)."""
    st = hinge_statistics(chain, gold, beta_sq, loss)
    s = 1.0 / max(len(gold), 1)
    return float(st.values[0]) * s, ChainGrad(*(x * s for x in st.grads[0]))


def _oracle_shard(job, ids) -> list[tuple[np.ndarray, float]]:
    """(ŷ, Δ) of the sentences ``ids``; ``job``: (chain, offsets, gold, chunks, loss, β²)."""
    chain, offsets, sequences, chunks, loss, beta_sq = job
    if loss == "hamming":
        return hamming_oracles(chain.tags, chain.scheme, [chain.emissions[offsets[k]:offsets[
            k + 1]] for k in ids], [sequences[k] for k in ids], chain.trans, chain.start,
            chain.end)
    return [most_violating(chain.tags, chain.scheme, chain.emissions[offsets[k]:offsets[k + 1]],
                           chain.trans, chain.start, chain.end, sequences[k], chunks[k],
                           loss, beta_sq) for k in ids]
