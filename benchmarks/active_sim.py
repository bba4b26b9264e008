"""Pieces of the active-learning simulation of ``bench_active.py`` (issue 36, part 4).

* :func:`warm_start` — the CRF of the next round, trained on from the last round's θ.
  A fitted CRF's :meth:`~fstchunk.models.crf.CRF.fit` trains on from its θ but keeps
  its feature map, so the attributes and (attribute, tag) pairs first seen in the new
  sentences would get no weight.  Here the new round's model learns its own feature
  map, tags and pairs from all the sentences annotated so far (as a fresh CRF does),
  and θ starts at the last round's weight for every (attribute, tag) pair, transition,
  start and end weight the two models share (by name), 0 for the new ones.
* :func:`round_rng` — the random stream of one round of one curve, a function of
  (seed, strategy, round) only, so that a resumed run picks what the killed one would.
* :func:`partial_cells` — partial annotation of a picked sentence (the model's confident
  decisions kept, gold revealed elsewhere; definition in its doc).
"""

from __future__ import annotations

import zlib
from typing import Sequence

import numpy as np

from fstchunk.decoding.confidence import scored_chunks
from fstchunk.decoding.decode import decode_map
from fstchunk.io.conll import Sentence
from fstchunk.models.crf import CRF
from fstchunk.schemes import encodings as enc
from fstchunk.structures.lattice import Lattice


def carried_theta(old: CRF, new: CRF) -> tuple[np.ndarray, int]:
    """``new``'s θ with ``old``'s weights wherever the (attribute, tag) pair, or the
    (tag, tag) transition / start / end tag, has the same name in both; 0 elsewhere.
    Also the number of state weights carried over."""
    Lo, Ln = old.L, new.L
    feat = np.array([old.fmap_.index.get(n, -1) for n in new.fmap_.names], dtype=np.int64)
    tag = np.array([old.tags_.index(t) if t in old.tags_ else -1 for t in new.tags_],
                   dtype=np.int64)
    theta = np.zeros_like(new.theta_)
    old_keys = old.pairs_[:, 0] * Lo + old.pairs_[:, 1]
    order = np.argsort(old_keys)
    f, t = feat[new.pairs_[:, 0]], tag[new.pairs_[:, 1]]
    ok = (f >= 0) & (t >= 0)
    keys = np.where(ok, f * Lo + t, -1)
    pos = np.clip(np.searchsorted(old_keys[order], keys), 0, max(len(order) - 1, 0))
    hit = ok & (old_keys[order][pos] == keys) if len(order) else np.zeros_like(ok)
    theta[:new.P][hit] = old.theta_[:old.P][order[pos[hit]]]
    T_old = old.theta_[old.P:old.P + Lo * Lo].reshape(Lo, Lo)
    start_old = old.theta_[old.P + Lo * Lo:old.P + Lo * Lo + Lo]
    end_old = old.theta_[old.P + Lo * Lo + Lo:]
    T_new = np.zeros((Ln, Ln))
    start_new, end_new = np.zeros(Ln), np.zeros(Ln)
    have = tag >= 0
    T_new[np.ix_(have, have)] = T_old[np.ix_(tag[have], tag[have])]
    start_new[have], end_new[have] = start_old[tag[have]], end_old[tag[have]]
    theta[new.P:] = np.concatenate([T_new.ravel(), start_new, end_new])
    return theta, int(hit.sum())


def warm_start(old: CRF | None, items: Sequence[Sentence], features: str, max_iter: int,
               partial: bool = False) -> tuple[CRF, int]:
    """A CRF (IOB2, ML, its default λ) trained ``max_iter`` L-BFGS iterations on
    ``items``, from ``old``'s θ (:func:`carried_theta`; from 0 when ``old`` is None),
    and how many state weights were carried over."""
    crf = CRF(features, "IOB2", max_iter=max_iter, partial=partial)
    data = crf._prepare(items)          # feature map, tags and pairs of these sentences
    carried = 0
    if old is not None:
        crf.theta_, carried = carried_theta(old, crf)
    return crf.fit(data), carried


def round_rng(seed: int, strategy: str, rnd: int) -> np.random.Generator:
    """The random stream of round ``rnd`` of the curve (``strategy``, ``seed``)."""
    return np.random.default_rng([seed, zlib.crc32(strategy.encode()), rnd])


def partial_cells(lattice: Lattice, gold: Sequence[str], p_min: float, kept: str = "fix"
                  ) -> tuple[list[str], int, int]:
    """Simulated chunk-level partial annotation of one sentence (IOB2): the tag cells
    to train on, the number of tokens the annotator labels, and how many kept tokens
    disagree with the gold.

    x̂ = the model's MAP tags.  A token is *confident* when it lies in a chunk c of x̂
    with Pr(c ∈ chunks(y)) ≥ ``p_min`` (the exact chunk marginal,
    :func:`fstchunk.decoding.confidence.scored_chunks`), or x̂ tags it O with the token marginal
    Pr(y_i = O) ≥ ``p_min``.  Every other token is *unsure*: the annotator labels it;
    whole chunks are the unit of annotation, so every gold chunk that touches a
    labelled token is labelled whole, and a confident chunk of x̂ that touches a
    labelled token is labelled whole too (the annotator corrects it), repeated to a
    fixed point.  Labelled tokens get their gold tag; the others, ``kept="fix"``: x̂'s
    tag (the model's confident decision as a constraint), ``kept="open"``: ``?`` (any
    tag; the marginal likelihood sums over them).  Both give a valid IOB2 annotation
    (a labelled gold chunk never begins or ends inside a kept chunk)."""
    n = len(gold)
    x = decode_map(lattice).tags
    marg = lattice.marginals()
    o = lattice.tags.index("O")
    keep = np.zeros(n, dtype=bool)
    mine = [c for c in scored_chunks(lattice, x) if c.p >= p_min]
    for c in mine:
        keep[c.start:c.end] = True
    keep |= (np.array(x) == "O") & (marg[:, o] >= p_min)
    label = ~keep
    spans = [(s, e) for _, s, e in enc.tags_to_chunks(gold, "IOB2")] + \
        [(c.start, c.end) for c in mine]
    changed = True
    while changed:
        changed = False
        for s, e in spans:
            if label[s:e].any() and not label[s:e].all():
                label[s:e] = True
                changed = True
    cells = [g if label[i] else (x[i] if kept == "fix" else "?") for i, g in enumerate(gold)]
    wrong = sum(1 for i in range(n) if not label[i] and x[i] != gold[i])
    return cells, int(label.sum()), wrong


def with_cells(s: Sentence, cells: Sequence[str]) -> Sentence:
    """``s`` with its last (tag) column replaced by ``cells``."""
    return Sentence([r[:-1] + [c] for r, c in zip(s.rows, cells)], s.lines, s.source)
