"""Decoders: MAP, posterior, and maximum expected F_β (MEU), exact and k-best.

* :func:`decode_map` — argmax_x Pr(x): Viterbi over the lattice's layers, or the
  shortest path of the lattice machine in the tropical semiring (``method="fst"``).
* :func:`decode_posterior` — the valid sequence maximising Σ_i Pr(y_i = x_i).
* :func:`decode_meu` — argmax_x U(x), U(x) = E_y[F_β(x | y)] (Jansche §10, §21).

Every ``beta`` here is the standard β, F_β = (1+β²)·tp / (m(x) + β²·m(y)) (the slides'
β' = β², :mod:`fstchunk.core.fbeta`); the engine takes β² as ``beta_sq``.

**Exact MEU in near-quadratic memory.**  For a hypothesis with exactly k >= 1 chunks,

    U(x) = (1+β²) Σ_{c ∈ chunks(x)} g_k(c),   g_k(c) = E[1{c ∈ y} / (k + β² m(y))],

so the best k-chunk hypothesis is a maximum-weight set of k non-overlapping typed
spans, and the answer is the best over k together with the empty hypothesis,
whose utility is Pr(m(y) = 0) (0/0 := 1).  :func:`fstchunk.engine.meu.exact_meu`
finds it without tabulating every (span, count) pair: g_k from a few tilted span
sweeps, few k solved thanks to bounds, negligible spans cut with a bound; the
:class:`Decoding` carries the certified ``gap`` (0.0 when nothing was pruned or
approximated, else a bound below 1e-12 on what that could have cost).  Any set
of non-overlapping chunks is a valid sequence in every scheme, so the result is
written in the lattice's scheme.  This answers the slides' open problem for
first-order lattices.

* :func:`decode_meu_corpus` — conlleval scores micro F over a corpus.  This decoder
  maximises F_β *of the expected counts* — conlleval's formula applied to Σ_i E[tp_i],
  Σ_i m(x_i) and Σ_i E[m(y_i)], a ratio of expectations, here
  (1+β²) Σ_i E[tp_i] / (Σ_i m(x_i) + β² Σ_i E[m(y_i)]) — and *not* the expected corpus
  F_β, E[ratio], which no decoder here maximises.  The ratio is maximised
  exactly by Dinkelbach's method: for λ, keep the chunks with
  (1+β²)·Pr(c) − λ > 0 under the non-overlap constraint (a per-sentence DP), set λ
  to the ratio reached, repeat until it stops rising.  Chunks of marginal below
  :data:`CORPUS_PRUNE` are not listed; they cannot be chosen once λ exceeds
  (1+β²)·CORPUS_PRUNE, which is checked (else the decision is redone unpruned).  Reading
  the ratio of expectations as E[corpus F] is an approximation (Jensen's gap, which
  shrinks as the corpus grows): under a CRF on CoNLL-2000 dev the two differ by ~1e-8
  (1844 sentences) and ~2e-7 (200 sentences), far less than the decisions differ
  (~1e-4: corpus MEU, per-sentence MEU, MAP are ordered alike by both; Monte Carlo
  over 1000 sampled corpora with a control variate, benchmarks/RESULTS.md, "Corpus
  MEU: the ratio of expectations against E[corpus F]").  With independent chunks the
  threshold is F*/(1+β²) (Lipton et al. 2014 for β = 1).
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import numpy as np
import pynini

from ..schemes import encodings as enc
from ..grammars import fsa
from ..core.blas import one_blas_thread
from ..core.errors import BudgetError, InputError
from ..core.fbeta import to_beta_sq
from ..engine.intervals import SpanPairs, best_span_set
from ..engine.meu import utility_bounds
from ..engine.spans import tilted_spans
from .expected import expected_f
from ..structures.lattice import Decoding, Lattice

__all__ = ["CORPUS_PRUNE", "CorpusTable", "Decoding", "corpus_table", "decide_corpus",
           "decode_map", "decode_meu", "decode_meu_corpus", "decode_posterior"]


# ------------------------------------------------------------------------- MAP
@one_blas_thread
def decode_map(lattice: Lattice, method: str = "viterbi") -> Decoding:
    """The most probable valid tag sequence (MAP) and its log probability:
    $\\hat y = \\operatorname{argmax}_y p(y \\mid x)$.

    Args:
        lattice: the model's distribution over one sentence's valid tag sequences.
        method: ``"viterbi"`` (:meth:`Lattice.map`) or ``"fst"`` (the shortest path of
            the lattice machine in the tropical semiring).

    Returns:
        A :class:`Decoding`: ``.tags`` and ``.score`` (log p of the tags).

    Raises:
        InputError: an unknown ``method``.

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> fstchunk.decode_map(lattice).tags
        ['B-PER', 'I-PER', 'O']
    """
    if method == "viterbi":
        return lattice.map()
    if method != "fst":
        raise InputError(f"unknown method {method!r}; use 'viterbi' or 'fst'")
    path = _shortest(lattice, 1)
    (labels, _, w), = fsa.paths(path)
    tags = [lattice.space.symbols.find(x) for x in labels]
    return Decoding(tags, lattice.log_prob(tags))


@one_blas_thread
def decode_posterior(lattice: Lattice) -> Decoding:
    """The valid tag sequence maximising the sum of token marginals
    (:meth:`Lattice.posterior`).

    Args:
        lattice: the model's distribution over one sentence's valid tag sequences.

    Returns:
        A :class:`Decoding`: ``.tags`` and ``.score`` (the sum of their marginals).

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> fstchunk.decode_posterior(lattice).tags
        ['B-PER', 'I-PER', 'O']
    """
    return lattice.posterior()


# ------------------------------------------------------------------------- MEU
@one_blas_thread
def decode_meu(lattice: Lattice, beta: float = 1.0, method: str = "exact",
               k: int = 20, memory_budget: float | None = None) -> Decoding:
    """The hypothesis of maximum expected F_β under the lattice (minimum-risk, MEU):
    $\\hat h = \\operatorname{argmax}_h \\sum_y p(y \\mid x)\\, F_\\beta(h, y)$, that expected F_β
    (exact) and the certified gap.

    Exact MEU decides among all chunkings over the lattice's chunk types, so its tags
    are valid in the lattice's scheme but may be a sequence the model cannot produce
    (:func:`expected_f` scores any). β < 1 favours precision, β > 1 recall; β = 0
    (precision) gives the empty hypothesis, whose F is 0/0 := 1.

    Args:
        lattice: the model's distribution over one sentence's valid tag sequences.
        beta: β of F_β (the standard one, as scikit-learn's).
        method: ``"exact"`` (the algorithm of the module doc, :meth:`Lattice.meu`) or
            ``"kbest"`` (the ``k`` best paths reranked by exact expected F; no
            certificate: ``gap`` is inf).
        k: the number of paths of ``"kbest"``.
        memory_budget: the bytes exact MEU may take (``None``:
            :data:`fstchunk.engine.meu.DEFAULT_MEMORY_BUDGET`).

    Returns:
        A :class:`Decoding`: ``.tags``, ``.score`` (their expected F_β) and ``.gap``.

    Raises:
        BudgetError: exact MEU would take more than ``memory_budget``, before it starts.
        InputError: an invalid ``beta``, ``method`` or ``k``.

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> best = fstchunk.decode_meu(lattice, beta=1.0)
        >>> best.tags, round(best.score, 3)
        (['B-PER', 'I-PER', 'O'], 0.512)
    """
    lattice.space.require_chunks("MEU decoding")
    to_beta_sq(beta)
    if memory_budget is not None and not memory_budget > 0:
        raise InputError(f"memory_budget must be a positive number of bytes, got {memory_budget!r}")
    if method == "kbest":
        return _meu_kbest(lattice, beta, k, memory_budget)
    if method != "exact":
        raise InputError(f"unknown method {method!r}; use 'exact' or 'kbest'")
    return lattice.meu(beta, memory_budget)


#: rounding allowed for when k-best MEU skips a hypothesis by its certified interval
#: (:func:`fstchunk.engine.meu.utility_bounds`): far above the rounding of either
#: evaluation, far below the utility differences between distinct paths
RERANK_SLACK = 1e-9


def _meu_kbest(lattice: Lattice, beta: float, k: int,
               memory_budget: float | None = None) -> Decoding:
    """The ``k`` best paths (OpenFst's n-shortest, in its order), the one of highest
    exact U = E[F_β] (the first on a tie).  The exact U (:func:`expected_f`,
    O(n·S²·width) each) is computed only for the paths whose certified interval
    Ũ ± b from one tilted sweep (:func:`fstchunk.engine.meu.utility_bounds`), widened
    by :data:`RERANK_SLACK`, reaches the best lower end: the others cannot be the
    maximum, so the choice and its score are those of evaluating every path.  When
    the sweep exceeds ``memory_budget`` every path is evaluated exactly."""
    if not (isinstance(k, int) and k >= 1):
        raise InputError(f"k must be a positive integer, got {k!r}")
    paths = _shortest(lattice, k)
    hyps = [[lattice.space.symbols.find(x) for x in labels] for labels, _, _ in fsa.paths(paths)]
    types = lattice.space.types
    sets = [[(types.index(t), s, e) for t, s, e in enc.tags_to_chunks(h, lattice.scheme)]
            for h in hyps]
    try:
        approx, bound = utility_bounds(lattice, to_beta_sq(beta), sets, memory_budget)
    except BudgetError:
        approx, bound = np.full(len(hyps), np.nan), np.full(len(hyps), np.inf)
    lower = approx - bound - RERANK_SLACK
    best_lower = float(np.max(lower[np.isfinite(lower)])) if np.isfinite(lower).any() else -np.inf
    best = None
    for tags, a, b in zip(hyps, approx, bound):
        if np.isfinite(a) and a + b + RERANK_SLACK < best_lower:     # cannot be the best
            continue
        u = expected_f(lattice, hypothesis=tags, beta=beta, method="fast").f
        if best is None or u > best.score:
            best = Decoding(tags, u, float("inf"))
    return best


def _shortest(lattice: Lattice, k: int) -> pynini.Fst:
    """The k best paths of the lattice's machine (tropical float32 arcs); InputError
    when OpenFst cannot search it (scores beyond float32's range become infinite)."""
    std = fsa.to_arc_type(fsa.bare(lattice.fst), "standard")
    try:
        return pynini.shortestpath(std, nshortest=k, unique=True) if k > 1 else \
            pynini.shortestpath(std)
    except pynini.FstOpError:
        raise InputError("OpenFst's shortest-path search failed on this lattice: its scores "
                         "exceed the float32 range of tropical arcs; use the numpy decoders "
                         "(map, meu)") from None


# ---------------------------------------------------------------- corpus MEU
#: chunks whose start is this unlikely to stay open are not listed for corpus MEU
CORPUS_PRUNE = 1e-12


class CorpusTable(NamedTuple):
    """What corpus MEU keeps of one lattice: its listed chunks (sorted), their
    marginals, E[m(y)], the largest left-out marginal, and how to write tags."""
    spans: SpanPairs
    prob: np.ndarray
    opens: float
    pruned: float
    n: int
    types: tuple
    scheme: str


@one_blas_thread
def corpus_table(lattice: Lattice, prune: float = CORPUS_PRUNE) -> CorpusTable:
    """The chunk table of one lattice (one sweep, O(n · width) memory): the part of
    corpus MEU that reads the lattice, so it can run wherever the lattice is."""
    lattice.space.require_chunks("corpus MEU decoding")
    t = tilted_spans(lattice, z=(), prune=prune)
    sp = SpanPairs(t.types, t.starts, t.ends, lattice.n)
    return CorpusTable(sp, t.prob[sp.order], float(t.opens), float(t.pruned), lattice.n,
                       tuple(lattice.space.types), lattice.scheme)


@one_blas_thread
def decode_meu_corpus(lattices: Sequence[Lattice], beta: float = 1.0,
                      max_iter: int = 50) -> tuple[list[list[str]], float]:
    """Jointly decode a corpus for F_β of its expected counts (Dinkelbach, see the
    module doc): a ratio of expectations, not the expected corpus F_β.

    Memory: the listed chunks of every sentence (O(n · width) each, not O(n²)).

    Args:
        lattices: one lattice per sentence.
        beta: β of F_β.
        max_iter: the most Dinkelbach iterations.

    Returns:
        The tag sequences, and the expected-count ratio they reach.

    Raises:
        InputError: an invalid ``beta`` or ``max_iter``.

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> tags, ratio = fstchunk.decode_meu_corpus([lattice, lattice])
        >>> tags[0], round(ratio, 3)
        (['B-PER', 'I-PER', 'O'], 0.49)
    """
    return decide_corpus(lambda prune: [corpus_table(lat, prune) for lat in lattices],
                         beta, max_iter)


@one_blas_thread
def decide_corpus(tables: Callable[[float], Sequence[CorpusTable]], beta: float = 1.0,
                  max_iter: int = 50) -> tuple[list[list[str]], float]:
    """Corpus MEU (F_β of the expected counts, a ratio of expectations, not E[corpus
    F_β]) from ``tables(prune)``, the :func:`corpus_table` of every sentence
    (built in this process or on an executor's workers); asked again unpruned when a
    pruned chunk could have been chosen."""
    beta_sq = to_beta_sq(beta)
    tabs = tables(CORPUS_PRUNE)
    decided, lam, cut = _dinkelbach(tabs, beta_sq, max_iter)
    if cut > 0 and not lam > (beta_sq + 1) * CORPUS_PRUNE:     # a pruned chunk could win
        tabs = tables(0.0)
        decided, lam, cut = _dinkelbach(tabs, beta_sq, max_iter)
    out = [enc.chunks_to_tags([(t.types[c], s, e) for c, s, e in chunks], t.n, t.scheme)
           for t, chunks in zip(tabs, decided)]
    return out, lam


def _dinkelbach(tabs: Sequence[CorpusTable], beta_sq: float, max_iter: int):
    sps = [t.spans for t in tabs]
    probs = [t.prob for t in tabs]
    m_ref = sum(t.opens for t in tabs)                        # Σ E[m(y)], exact
    cut = sum(t.pruned for t in tabs)

    def ratio(tp: float, m_hyp: int) -> float:
        den = m_hyp + beta_sq * m_ref
        return (beta_sq + 1) * tp / den if den > 0 else 1.0

    # start from the chunks of marginal > 1/2 (pairwise disjoint: two overlapping
    # chunks exclude each other, so their marginals sum to at most 1)
    decided, tp = [], 0.0
    for sp, p in zip(sps, probs):
        got, q = _positive_set(sp, p - 0.5)
        decided.append(got)
        tp += float(p[q].sum())
    lam = ratio(tp, sum(map(len, decided)))
    for _ in range(max_iter):
        new, tp = [], 0.0
        for sp, p in zip(sps, probs):
            got, q = _positive_set(sp, (beta_sq + 1) * p - lam)
            new.append(got)
            tp += float(p[q].sum())
        r = ratio(tp, sum(map(len, new)))
        if r <= lam * (1 + 1e-12):          # relative: a corpus ratio may be tiny
            break
        decided, lam = new, r
    return decided, lam, cut


def _positive_set(sp: SpanPairs, w: np.ndarray) -> tuple[list, np.ndarray]:
    """The best set of non-overlapping listed chunks under weights ``w`` (sorted order)
    and its positions in the list: every positive chunk when they are pairwise
    disjoint (then nothing else can do better), else the interval DP."""
    idx = np.flatnonzero(w > 0)
    if len(idx) == 0:
        return [], idx
    order = np.argsort(sp.starts[idx], kind="stable")
    idx = idx[order]
    if np.all(sp.starts[idx][1:] >= sp.ends[idx][:-1]):
        return [(int(sp.types[i]), int(sp.starts[i]), int(sp.ends[i])) for i in idx], idx
    got = best_span_set(sp, w)
    at = {c: i for i, c in enumerate(zip(sp.types.tolist(), sp.starts.tolist(),
                                          sp.ends.tolist()))}
    return got, np.array([at[c] for c in got], dtype=int)
