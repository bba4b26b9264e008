"""Training objectives of a linear-chain model, as functions of its score arrays.

A chain model scores a sentence by emissions E (tokens x L), transitions, start
and end scores (:class:`Chain`); an objective maps these, and the gold tag
sequences (:class:`Gold`), to a value to *minimise* and its gradient with
respect to the four score arrays (:class:`ChainGrad`).  The model applies the
chain rule to its own parameters (the CRF: E = X·W, so ∇W = Xᵀ·∇E) and adds
the penalty; nothing here knows about features.

**Scale: every objective is a mean per sentence** (S = number of training
sentences), so that values stay O(1) whatever the corpus size and one λ of the
penalty λ‖θ‖² means about the same strength for every objective (issue 16):

* ``ml``: −(1/S) Σ_i log Pr(y_i | x_i), Pr over the scheme's *valid* sequences.
  Gradient (1/S)(E[φ] − φ(gold)) by forward-backward batched over sentences
  of one length (Lafferty et al. 2001): :func:`fstchunk.engine.batched.transfer`,
  scaled (BLAS products) where that is exact, the gauged chain otherwise, so
  value and gradient are right for scores of any finite magnitude (issue 17).
* ``meu``: −(1/S) Σ_i E_{x~Pr(·|x_i)}[F_β(x | y_i)] (Jansche §12, §20), in [−1, 0],
  F_β = (1+w)·tp / (m(x) + w·m(y)) with w = β² of the standard β (the slides' β',
  passed here as ``beta_sq``; :mod:`fstchunk.core.fbeta`).
  F_β is linear in tp for a fixed hypothesis count c, so
  E[F] = Σ_c (1+w)·T[c] / (c + w·m(y)) (0/0 := 1, i.e. Z[0] when there are no
  chunks at all) from the reference-count table (Z, T) of
  :func:`fstchunk.engine.expectation.tp_count_table_grad`, whose reverse mode
  gives the gradient.  An executor (:mod:`fstchunk.runtime.scale`, ``--workers``) spreads
  the sentences, as for every objective; ~15x an ML evaluation.  Per sentence of n
  tokens, L tags and W ≤ n + 1 likely chunk counts (the spread of m(x), a few
  hundred at n = 2000 on CoNLL-2000): O(n·L²·W) time, O(√n·L·W + n·L²) memory
  (checkpoints of the count tables; benchmarks/RESULTS.md, "MEU objective and k-best
  costs by length").
* ``meu-corpus``: −(1+w) Σ_i E[tp_i] / (Σ_i E[m(x_i)] + w Σ_i m(y_i)), the
  expected-count form of conlleval's corpus F_β (hypothesis count x, gold count y, as
  in ``meu``; before issue 32 the two counts were swapped, i.e. F_{1/β} for β ≠ 1):
  already one corpus-level number in [−1, 0], left as it is.  First-order expectations only
  (:func:`fstchunk.engine.expectation.corpus_expectations`, batched like ML),
  ∇E[r] = E[r·φ] − E[r]·E[φ] (Li & Eisner 2009) for r = tp, m, then the quotient
  rule.

Each objective's default λ on this scale is in the registry
(:mod:`fstchunk.learn.objectives`).  Before the
normalisation (fstchunk ≤ issue 15) ``ml`` and ``meu`` were sums over sentences,
so their old λ divided by S is the new one: the dev-tuned ML λ = 0.01 over the
8936 CoNLL-2000 training sentences is 1.1e-6 here, the dev-tuned per-sentence
MEU λ = 0.005 is 5.6e-7, and the dev-tuned ``meu-corpus`` λ (1e-6 on CoNLL-2000,
1e-5 on Dutch) is unchanged (benchmarks/RESULTS.md, "λ on dev" and "Default λ
(issue 16)" sections).  A λ of order 1, the old CLI default, flattens the model
under any of them (every token its own chunk under ``meu-corpus``).

All are checked by finite differences and against the machines in tests/test_crf.py.

Pitfalls:

* dividing by S shrinks the gradient S-fold: an absolute gradient tolerance
  (L-BFGS-B's ``gtol``, :class:`fstchunk.learn.loop.Trainer`'s ``tol``) must be
  S-fold smaller than on the old sum scale (L-BFGS is otherwise invariant to the
  scale, so the iterates are the same as before with λ/S);
* ``Chain`` holds *unmasked* scores; :meth:`Chain.masked` sets the scheme's
  invalid starts, transitions and ends to −∞ (a lattice from the raw arrays
  does that itself);
* nothing here forks: the statistics of a set of sentences are computed where they
  are asked for, and :mod:`fstchunk.runtime.scale` asks each worker for its partition's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, partial
from typing import Callable, NamedTuple

import numpy as np

from ..core.blas import one_blas_thread
from ..core.errors import InputError
from ..engine.batched import scaled_weights, transfer
from ..engine.expectation import corpus_expectations
from ..engine.utility_grad import expected_utility_grad
from ..structures.lattice import Lattice
from ..learn.objectives import (ML, MEU, MEU_CORPUS, MEU_EXACT, MEU_MACRO, MEU_PARTIAL,
                                MEU_TYPE, MEU_WEIGHTED, Objective)
from ..schemes.tagspace import TagSpace
from .batching import Gold


@dataclass(frozen=True)
class Chain:
    """Score arrays of a linear chain over ``tags`` (unmasked), all sentences' tokens
    stacked in ``emissions``: in the corpus's order, or (``bucketed``, what
    :func:`ml_statistics` reads fastest) in its gold's :attr:`Gold.buckets` layout
    (:meth:`fstchunk.models.design.TrainingData.bucketed`), where the emission
    gradient comes back in the same layout."""
    tags: tuple[str, ...]
    scheme: str
    emissions: np.ndarray       # (tokens, L), or (Gold.bucket_size, L) if bucketed
    trans: np.ndarray           # (L, L)
    start: np.ndarray           # (L,)
    end: np.ndarray             # (L,)
    bucketed: bool = False

    @cached_property
    def space(self) -> TagSpace:
        return TagSpace.of(tuple(self.tags), self.scheme)

    @cached_property
    def masked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(trans, start, end) with −∞ where the scheme forbids the tag (pair)."""
        ts = self.space
        ok_s, ok_t, ok_e = ts.start_ok, ts.trans_ok, ts.end_ok
        return (np.where(ok_t, self.trans, -np.inf), np.where(ok_s, self.start, -np.inf),
                np.where(ok_e, self.end, -np.inf))

    def lattice(self, lo: int, hi: int) -> Lattice:
        """The lattice of the sentence with token rows lo..hi−1."""
        if self.bucketed:
            raise InputError("a bucketed chain has no sentence rows (ml_statistics only)")
        return Lattice.of_chain(self.space, self.emissions[lo:hi], self.trans, self.start,
                                self.end)


class ChainGrad(NamedTuple):
    """Gradient of an objective with respect to the :class:`Chain`'s arrays."""
    emissions: np.ndarray
    trans: np.ndarray
    start: np.ndarray
    end: np.ndarray


class Statistics(NamedTuple):
    """Additive statistics of an objective over a set of sentences: sums over them of
    ``values`` (J,) and of the gradients ``grads`` of the first len(grads) of them.
    Statistics of disjoint sets add up; :meth:`fstchunk.learn.objectives.Objective.combine`
    turns a corpus's into the objective's value and the weights of its gradient (the
    data-parallel form, issue 20)."""
    values: np.ndarray
    grads: tuple[ChainGrad, ...]


def _dot(counts: np.ndarray, scores: np.ndarray) -> float:
    """Σ counts·scores over the counted entries (a −∞ score counted gives −∞)."""
    used = counts > 0
    return float(np.sum(counts[used] * scores[used]))


@one_blas_thread
def ml_statistics(chain: Chain, gold: Gold, beta_sq: float = 1.0) -> Statistics:
    """Σ_i −log Pr(y_i | x_i) and its gradient (``beta_sq`` unused).

    Forward-backward per ragged batch (:attr:`Gold.buckets`) by
    :func:`fstchunk.engine.batched.transfer`: products of (batch, L) by (L, L) with
    one normaliser per token where the scores allow it, the gauged (stochastic)
    chain otherwise; the expected transition counts Σ_i â_{i−1}(p)·K_i(p, q)·b̂_i(q)
    as one product per batch (0 on the padding, where â and b̂ are 0)."""
    mt, ms, me = chain.masked
    E = chain.emissions
    L = len(chain.tags)
    gT, gS, gEnd = np.zeros((L, L)), np.zeros(L), np.zeros(L)
    logz = 0.0
    weights = scaled_weights(mt, ms, me)
    post = np.empty((gold.bucket_size, L))             # the buckets' layout, stacked
    if chain.bucketed and E.shape != post.shape:
        raise InputError(f"a bucketed chain has {E.shape[0]} rows, its gold's buckets "
                         f"{gold.bucket_size}")
    at = 0
    for b in gold.buckets:
        B, size = len(b.sentence_ids), b.rows.size
        em = (E[at:at + size].reshape(b.n, B, L) if chain.bucketed else E[b.rows.T])
        fb = transfer(em.transpose(1, 0, 2), mt, ms, me, weights, lengths=b.lengths)
        logz += float(fb.logz.sum())
        p = post[at:at + size]
        np.multiply(fb.a.transpose(1, 0, 2), fb.bt.transpose(1, 0, 2),
                    out=p.reshape(b.n, B, L))            # marginals; 0 on the padding
        gS += p[:B].sum(axis=0)
        gEnd += p[(b.lengths - 1) * B + np.arange(B)].sum(axis=0)
        if b.n > 1:
            gT += fb.transitions()
        at += size
    flat, Ct, Cs, Ce = gold.counts                       # minus the gold path's features
    if chain.bucketed:
        gE, flat = post, gold.bucket_flat
    else:
        gE = post[gold.bucket_rows]                      # back in the corpus's row order
    gE.ravel()[flat] -= 1.0
    nll = logz - (E.ravel()[flat].sum() + _dot(Ct, mt) + _dot(Cs, ms) + _dot(Ce, me))
    gT -= Ct
    gS -= Cs
    gEnd -= Ce
    return Statistics(np.array([nll]), (ChainGrad(gE, gT, gS, gEnd),))


@one_blas_thread
def meu_statistics(chain: Chain, gold: Gold, beta_sq: float = 1.0,
                   utility: str = "conlleval") -> Statistics:
    """Σ_i E[u(x | y_i)] (``beta_sq`` = β²) and its gradient, sentence by sentence (an
    executor of :mod:`fstchunk.runtime.scale` spreads the sentences: its partitions).
    ``utility``: ``conlleval`` (F_β), ``exact`` (the exact-boundary F_β: a chunk right
    with its boundaries, any type), ``macro`` (the mean over the chain's types of the
    F_β of that type's chunks alone, each a sweep with m counting that type,
    :func:`~fstchunk.engine.expectation.tp_count_table`'s ``count_type``), ``partial``
    (SemEval-2013's partial match, :func:`fstchunk.engine.partial.partial_count_table_grad`)
    or ``weighted:T=w,...`` (a chunk of type T counts w, the conlleval sweep over weighted
    counts)."""
    L = len(chain.tags)
    job = (chain, gold.offsets, gold.chunks, beta_sq, utility)
    parts = [_meu_shard(job, np.arange(len(gold)))]
    gE = np.zeros_like(chain.emissions)
    gT, gS, gEnd = np.zeros((L, L)), np.zeros(L), np.zeros(L)
    value = 0.0
    for ids, rows, f, pT, pS, pEnd in parts:
        value += f
        for k, r in zip(ids, rows):
            gE[gold.offsets[k]:gold.offsets[k + 1]] = r
        gT += pT
        gS += pS
        gEnd += pEnd
    return Statistics(np.array([value]), (ChainGrad(gE, gT, gS, gEnd),))


def _meu_shard(job, ids):
    """E[u] and its gradient pieces for the sentences ``ids``; ``job`` is
    (chain, offsets, gold chunks, β², utility)."""
    chain, offsets, chunks, beta_sq, utility = job
    L = len(chain.tags)
    gT, gS, gEnd = np.zeros((L, L)), np.zeros(L), np.zeros(L)
    rows, value = [], 0.0
    for k in ids:
        lat = chain.lattice(offsets[k], offsets[k + 1])
        v, gE, gTk, gSk, gEk = expected_utility_grad(lat, chunks[k], utility, beta_sq)
        value += v
        rows.append(gE)
        gT += gTk
        gS += gSk
        gEnd += gEk
    return list(ids), rows, value, gT, gS, gEnd


@one_blas_thread
def meu_corpus_statistics(chain: Chain, gold: Gold, beta_sq: float = 1.0) -> Statistics:
    """(Σ E[tp], Σ E[m(x)], Σ m(y)) with the gradients of the first two."""
    E = chain.emissions
    L = len(chain.tags)
    mt, ms, me = chain.masked
    batches, tabs = gold.corpus_batches
    gE = np.zeros((2,) + E.shape)
    gT, gS, gEnd = np.zeros((2, L, L)), np.zeros((2, L)), np.zeros((2, L))
    tp = m_hyp = 0.0
    m_gold = 0
    for b, ch in batches:
        Er, gtok, pT, pS, pEnd = corpus_expectations(E[b.rows], ch, mt, ms, me, tabs)
        tp += Er[0].sum()
        m_hyp += Er[1].sum()
        m_gold += len(ch[0])
        gE[:, b.rows.ravel()] = gtok.reshape(2, -1, L)
        gT += pT
        gS += pS
        gEnd += pEnd
    return Statistics(np.array([tp, m_hyp, float(m_gold)]),
                      tuple(ChainGrad(gE[j], gT[j], gS[j], gEnd[j]) for j in (0, 1)))


#: objective -> its statistics over a set of sentences (the chain models' part of the
#: registry :mod:`fstchunk.learn.objectives`; the max-margin hinge's is in :mod:`.maxmargin`)
def meu_exact_statistics(chain: Chain, gold: Gold, beta_sq: float = 1.0) -> Statistics:
    """:func:`meu_statistics` of the exact-boundary utility."""
    return meu_statistics(chain, gold, beta_sq, "exact")


def meu_macro_statistics(chain: Chain, gold: Gold, beta_sq: float = 1.0) -> Statistics:
    """:func:`meu_statistics` of the macro-averaged F_β."""
    return meu_statistics(chain, gold, beta_sq, "macro")


def meu_partial_statistics(chain: Chain, gold: Gold, beta_sq: float = 1.0) -> Statistics:
    """:func:`meu_statistics` of the partial-match F_β (SemEval-2013's partial mode)."""
    return meu_statistics(chain, gold, beta_sq, "partial")


def meu_type_statistics(chain: Chain, gold: Gold, beta_sq: float = 1.0) -> Statistics:
    """:func:`meu_statistics` of the type-match F_β (SemEval-2013's type mode)."""
    return meu_statistics(chain, gold, beta_sq, "type")


STATISTICS: dict[Objective, Callable[[Chain, Gold, float], Statistics]] = {
    ML: ml_statistics, MEU: meu_statistics, MEU_EXACT: meu_exact_statistics,
    MEU_MACRO: meu_macro_statistics, MEU_PARTIAL: meu_partial_statistics,
    MEU_TYPE: meu_type_statistics,
    MEU_CORPUS: meu_corpus_statistics}


def statistics_of(o: Objective) -> Callable[[Chain, Gold, float], Statistics]:
    """The statistics function of ``o``; ``meu-weighted:T=w,...`` is :func:`meu_statistics`
    of the utility ``weighted:T=w,...``."""
    if o.family == MEU_WEIGHTED.name:
        return partial(meu_statistics, utility="weighted:" + o.name.partition(":")[2])
    return STATISTICS[o]


def _combined(o: Objective) -> Callable[[Chain, Gold, float], tuple[float, ChainGrad]]:
    def objective(chain: Chain, gold: Gold, beta_sq: float = 1.0) -> tuple[float, ChainGrad]:
        st = statistics_of(o)(chain, gold, beta_sq)
        value, w = o.combine(st.values, len(gold), beta_sq)
        return value, ChainGrad(*(sum(wj * g[i] for wj, g in zip(w, st.grads))
                                  for i in range(4)))
    objective.__name__ = o.name.replace("-", "_")
    objective.__doc__ = f"The {o.name} objective of the module doc and its gradient."
    return objective


#: the objectives as functions f(chain, gold, β²) -> (value to minimise, gradient)
ml, meu, meu_corpus = _combined(ML), _combined(MEU), _combined(MEU_CORPUS)
meu_exact, meu_macro = _combined(MEU_EXACT), _combined(MEU_MACRO)
meu_partial, meu_type = _combined(MEU_PARTIAL), _combined(MEU_TYPE)
