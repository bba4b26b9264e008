"""Training a chain model on partial annotation: the marginal likelihood.

A partially annotated sentence (:mod:`fstchunk.io.annotation`) allows a set A(x) of tag
sequences, a product of per-token tag sets.  The ML objective reads it as the event
"the gold is in A(x)" (Tsuboi et al. 2008; Jansche's lattice ∘ acceptor view):

    ℓ(x) = −log Σ_{y ∈ A(x) ∩ valid} Pr(y | x) = log Z(x) − log Z_A(x),

    ∇ℓ = E_{Pr(·|x)}[φ] − E_{Pr(·|x, A)}[φ],

two forward-backwards, one on the chain and one on the chain with the forbidden tags'
emissions at −inf (:func:`fstchunk.engine.batched.transfer`, exact at any score
scale).  With A(x) = {y} it is −log Pr(y | x): ML on full annotation is the special
case (tested).  The statistics are additive over sentences like ML's, so the one
:data:`fstchunk.learn.objectives.ML` objective combines them (its mean per sentence
and λ) and :mod:`fstchunk.runtime.scale`'s executors sum them over partitions unchanged.

:class:`PartialGold` is the annotation prepared for one model's tags (the masks);
:func:`partial_training_data` reads partially annotated sentences for a feature map;
:func:`statistics` is what :func:`fstchunk.models.crf_loss.statistics` calls for such
data.  Only ``ml`` has a partial form: the others need one gold chunking
(``meu``, ``meu-corpus``, ``max-margin``, ``perceptron``) and are refused.

Pitfall: a sentence whose every cell is one tag still costs two forward-backwards
here; nothing is gained by sending it through :func:`ml_statistics` instead except
time, and mixing the two would order the sums differently from run to run.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from ..io.annotation import PartialSentence, annotation_types, check_allows, parse_column
from ..io.conll import Sentence
from ..core.blas import one_blas_thread
from ..engine.batched import ALL, scaled_weights, transfer
from ..core.errors import InputError, SchemeError
from ..learn import objectives as lo
from ..schemes.tagspace import TagSet, TagSpace
from .base import gold_tags
from .design import TrainingData
from .batching import Gold
from .objectives import Chain, ChainGrad, Statistics


class PartialGold(Gold):
    """Gold of partially annotated sentences: per sentence a mask allowed (n, L) over
    the tags; :attr:`sequences` hold each token's first allowed tag (only their
    lengths matter: the batches).  ``terms[k]``, where given (a sentence with spans
    marked not one chunk), is its annotation as disjoint product masks
    (:func:`fstchunk.io.not_chunk.exclusion_terms`), each within ``masks[k]``."""

    bucketable = False          # a mask per token, not one gold path: no ML batch layout

    def __init__(self, masks: Sequence[np.ndarray], tags: Sequence[str], scheme: str,
                 terms: Sequence[Sequence[np.ndarray] | None] | None = None):
        self.masks = [np.asarray(m, dtype=bool) for m in masks]
        for k, m in enumerate(self.masks):
            if m.ndim != 2 or m.shape[1] != len(tags) or not m.any(axis=1).all():
                raise InputError(f"sentence {k}: the mask must be (tokens, {len(tags)}) "
                                 f"with an allowed tag at every token")
        self.terms = list(terms) if terms is not None else [None] * len(self.masks)
        super().__init__([m.argmax(axis=1) for m in self.masks], tags, scheme)

    def subset(self, ids: Sequence[int]) -> "PartialGold":
        return PartialGold([self.masks[k] for k in ids], self.tags, self.scheme,
                           [self.terms[k] for k in ids])

    @cached_property
    def chunks(self):
        raise InputError("partial annotation has no single gold chunking: only --objective "
                         "ml trains on it")


@one_blas_thread
def partial_ml_statistics(chain: Chain, gold: PartialGold, beta_sq: float = 1.0
                          ) -> Statistics:
    """Σ_i (log Z(x_i) − log Z_A(x_i)) and its gradient with respect to the chain's
    arrays (module doc); ``beta_sq`` unused."""
    mt, ms, me = chain.masked
    E = chain.emissions
    L = len(chain.tags)
    gE = np.zeros_like(E)
    gT, gS, gEnd = np.zeros((L, L)), np.zeros(L), np.zeros(L)
    value = 0.0
    weights = scaled_weights(mt, ms, me)
    for b in gold.batches:
        em = E[b.rows]                                          # (B, n, L)
        allowed = np.stack([gold.masks[k] for k in b.sentence_ids])
        B, n = b.rows.shape
        full = transfer(em, mt, ms, me, weights)
        con = transfer(np.where(allowed, em, -np.inf), mt, ms, me, weights)
        post = full.a * full.bt
        a_con = con.a.copy()
        value += float(np.sum(full.logz))
        for r, k in enumerate(b.sentence_ids):
            if gold.terms[k] is None:
                value -= float(con.logz[r])
                continue
            a_con[r] = 0.0                       # its union of product masks, below
            v, p, g = _union_statistics(em[r], gold.terms[k], mt, ms, me, weights)
            value -= v
            post[r] -= p
            gT -= g
        post -= a_con * con.bt
        gE[b.rows.ravel()] = post.reshape(-1, L)
        gS += post[:, 0].sum(axis=0)
        gEnd += post[:, -1].sum(axis=0)
        if n > 1:
            gT += (full.pairs(full.a[:, :-1], full.bt[:, 1:], ALL, slice(1, None))
                   - con.pairs(a_con[:, :-1], con.bt[:, 1:], ALL, slice(1, None)))
    return Statistics(np.array([value]), (ChainGrad(gE, gT, gS, gEnd),))


def _union_statistics(em: np.ndarray, terms: Sequence[np.ndarray], mt, ms, me, weights
                      ) -> tuple[float, np.ndarray, np.ndarray]:
    """log Z_A of one sentence whose annotation A is a disjoint union of product masks
    M_j, its token marginals and its transition marginals (summed over positions):
    Z_A = Σ_j Z_j, so log Z_A = logsumexp_j log Z_j and Pr_A = Σ_j (Z_j/Z_A)·Pr_{M_j}
    — a sum of positive terms, stable where the not-a-chunk spans carry almost all
    of the mass (unlike Z_A − Z_{A ∩ C})."""
    M = np.stack(terms)                                         # (J, n, L)
    t = transfer(np.where(M, em[None], -np.inf), mt, ms, me, weights)
    logz = np.asarray(t.logz, dtype=float)
    top = logz.max()
    w = np.exp(logz - top)
    total = top + np.log(w.sum())
    w /= w.sum()
    a = t.a * w[:, None, None]
    post = (a * t.bt).sum(axis=0)
    pairs = (t.pairs(a[:, :-1], t.bt[:, 1:], ALL, slice(1, None)) if em.shape[0] > 1
             else np.zeros((em.shape[1], em.shape[1])))
    return float(total), post, pairs


def check_objective(objective: lo.Objective) -> None:
    """InputError unless ``objective`` has a partial form (ML only)."""
    if objective is not lo.ML:
        raise InputError(f"--partial trains --objective {lo.ML.name} only (the marginal "
                         f"likelihood of the annotation); --objective {objective.name} "
                         f"needs one gold chunking per sentence")


def statistics(objective: lo.Objective, chain: Chain, gold: PartialGold,
               beta_sq: float = 1.0, margin: str = "hamming") -> Statistics:
    """The statistics of ``objective`` on partial annotation: ML's marginal likelihood;
    InputError for any other objective (``margin`` is read by none of them: the
    signature of :data:`fstchunk.models.crf_loss.BY_GOLD`'s entries)."""
    check_objective(objective)
    return partial_ml_statistics(chain, gold, beta_sq)


def annotation_masks(sentences: Sequence[PartialSentence], space: TagSpace
                     ) -> list[np.ndarray]:
    """Each sentence's mask over ``space``, checked (:func:`fstchunk.io.annotation.
    check_allows`: a contradiction is one SchemeError at its file:line)."""
    return [check_allows(ps, space) for ps in sentences]


def annotation_terms(sentences: Sequence[PartialSentence], space: TagSpace,
                     masks: Sequence[np.ndarray]) -> list[list[np.ndarray] | None] | None:
    """Each sentence's disjoint product masks where it has spans marked not one chunk
    (None for the others; None when no sentence has one)."""
    if not any(ps.not_chunks for ps in sentences):
        return None
    return [ps.terms(space, m) if ps.not_chunks else None for ps, m in zip(sentences, masks)]


def allowed_pairs(X: sp.csr_matrix, masks: Sequence[np.ndarray]) -> np.ndarray:
    """The (feature, tag) pairs a CRF gets weights for on partial annotation: every
    tag the annotation allows at a token where it rules some tag out (``?`` tokens
    add none: they would give every feature every tag), (P, 2)."""
    M = np.concatenate(masks) if masks else np.zeros((0, 0), bool)
    M = M & ~M.all(axis=1, keepdims=True)
    Y = sp.csr_matrix(M.astype(float))
    P = (X.T @ Y).tocoo()
    return np.stack([P.row, P.col], axis=1).astype(np.int64)


def check_partial_set(sentences: Sequence[PartialSentence], masks: Sequence[np.ndarray],
                      space: TagSpace, what: str) -> None:
    """Refuse an annotation with nothing to learn from: no token that rules a tag out."""
    if not any((~m).any() for m in masks) and not any(ps.not_chunks for ps in sentences):
        src = sentences[0].sentence.source if sentences else "<no sentences>"
        raise InputError(f"{src}: the annotation rules out no tag anywhere (every token "
                         f"?): nothing for {what} to learn")


def partial_training_data(fmap: Any, space: TagSpace, sentences: Sequence[PartialSentence]
                          ) -> TrainingData:
    """X of the sentences under ``fmap`` and their masks over ``space`` (a
    :class:`PartialGold`)."""
    masks = annotation_masks(sentences, space)
    return TrainingData(fmap.transform([ps.sentence for ps in sentences]),
                        PartialGold(masks, space.tags, space.scheme,
                                    annotation_terms(sentences, space, masks)))


def as_partial(items: Sequence[Sentence | PartialSentence], column: int, data_scheme: str,
               scheme: str) -> list[PartialSentence]:
    """Training items as partial annotations in the model's ``scheme``: a
    :class:`~fstchunk.io.conll.Sentence`'s tag ``column`` parsed (no declarations: those
    need :func:`fstchunk.io.annotation.read_partial`), a :class:`PartialSentence` as it
    is.  In another ``data_scheme`` a fully annotated sentence is converted (one tag
    sequence); an open one is refused at its first open cell, since a set of tags is
    read in the scheme it is written in."""
    out = []
    for it in items:
        if isinstance(it, PartialSentence):
            ps = it
        else:
            cells, spans = parse_column(it.column(column), data_scheme, it.where)
            ps = PartialSentence(it, cells, None, spans)
        if data_scheme != scheme:
            tags = ps.tags_or_none()
            if tags is None:
                i = next((i for i, c in enumerate(ps.cells)
                          if len(c) != 1 or c[0][0] != "tag"),
                         ps.not_chunks[0][0] if ps.not_chunks else 0)
                raise SchemeError(f"{ps.sentence.where(i)}: an open annotation is read in the "
                                  f"model's scheme {scheme}, but the data scheme is "
                                  f"{data_scheme}; give --data-scheme {scheme} (write the "
                                  f"file's sets in {scheme}) or train with --scheme "
                                  f"{data_scheme}", i)
            fake = Sentence([[t] for t in tags], ps.sentence.lines, ps.sentence.source)
            ps = PartialSentence(ps.sentence, [(("tag", t),) for t in
                                               gold_tags(fake, data_scheme, scheme, 0)])
        out.append(ps)
    return out


def prepare(fmap: Any, items: Sequence[Sentence | PartialSentence], column: int,
            data_scheme: str, scheme: str, tags: Sequence[str] | None = None
            ) -> tuple[TrainingData, tuple[str, ...], np.ndarray]:
    """(training data, tags, allowed pairs) of partially annotated ``items`` for a CRF
    with feature map ``fmap``: the tags of ``scheme`` over the annotation's chunk types
    (or the fitted model's ``tags``, which must hold them)."""
    parts = as_partial(items, column, data_scheme, scheme)
    types = annotation_types(parts)
    if tags is None:
        space: TagSpace = TagSet(scheme, types)
    else:
        space = TagSpace.of(tuple(tags), scheme)
        extra = sorted(set(types) - set(space.types))
        if extra:
            raise SchemeError(f"{parts[0].sentence.source}: the annotation names chunk "
                              f"type(s) {', '.join(extra)} that the model does not have "
                              f"({', '.join(space.types)})")
    data = partial_training_data(fmap, space, parts)
    check_partial_set(parts, data.gold.masks, space, "a CRF")
    return data, space.tags, allowed_pairs(data.X, data.gold.masks)
