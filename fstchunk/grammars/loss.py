"""Loss machines for loss-augmented inference (max-margin Markov networks).

Loss-augmented inference asks for argmax_y score(y) + Δ(y, y*) against a fixed gold
y* (Taskar et al. 2003).  With the lattice's weights −score(y) (tropical), a
machine weighting every tag sequence y by −Δ(y, y*) makes the shortest path of
lattice ∘ machine the most violating sequence.  Both builders are acceptors over
the tag labels of the tag space's shared symbol table, in tropical (``standard``)
or log arcs, and both depend on the gold sequence, so they are per-sentence
machines (they are not in :mod:`.registry`, whose options hold no sequence).

* :func:`hamming_loss_machine` — Δ_H(y, y*) = Σ_i 1{y_i ≠ y*_i} (per-token Hamming
  on the tags of the lattice's scheme, as Tang et al.): states 0..n, one per
  position; from i to i+1 an arc for every tag, weight −1 unless it is y*_i.
* :func:`f_loss_machine` — Δ_F(y, y*) = 1 − F_β(y | y*), F_β(y | y*) =
  (1+β²)·tp / (m(y) + β²·m(y*)) with the standard β (the slides' β' = β²,
  :mod:`fstchunk.fbeta`), 0/0 := 1: T⊠M specialised to y*
  (:func:`.counting.specialised_pair_acceptor`: states (i, tp, match, m), paths
  ending in <tp=a><m=b>), through the scheme's encoder
  (:func:`.conversion.encoder`, IOBES -> scheme), composed with a scorer that
  deletes the markers and puts −(1 − F_β(a, b)) on the path that wrote them.

Sizes are checked against the state budget (:mod:`.budget`) before anything is
built: the Hamming machine has n+1 states and n·|tags| arcs; the F machine is the
pair acceptor ∘ the encoder (:func:`f_loss_estimate`), O(n²·m(y*)) states.
"""

from __future__ import annotations

from typing import Sequence

import pynini

from .. import encodings as enc
from .. import fsa
from ..errors import InputError
from ..fbeta import to_beta_sq
from ..tagspace import TagSet, TagSpace
from . import budget, counting
from .conversion import encoder


def _gold_labels(gold_tags: Sequence[str], space: TagSpace) -> list[int]:
    if isinstance(gold_tags, str) or len(gold_tags) < 1:
        raise InputError("the gold must be a non-empty sequence of tags")
    enc.validate(list(gold_tags), space.scheme)
    return [space.label(t) for t in gold_tags]


def hamming_estimate(n: int, n_tags: int) -> budget.Estimate:
    """The Hamming loss machine: n+1 states, n·|tags| arcs (exact)."""
    return budget.Estimate(n + 1, n * n_tags)


def hamming_loss_machine(gold_tags: Sequence[str], space: TagSpace,
                         arc_type: str = "standard") -> pynini.Fst:
    """Acceptor over ``space``'s tag labels: position i -> i+1 on every tag of the
    space, weight −1 on the tags other than ``gold_tags[i]``, 0 on it; so a sequence
    y gets weight −Δ_H(y, gold) (⊗ = + in tropical and log arcs)."""
    labels = _gold_labels(gold_tags, space)
    n = len(labels)
    budget.check(f"the Hamming loss machine of a {n}-token gold", hamming_estimate(n, len(space)))
    f = pynini.Fst(arc_type)
    wt = fsa.weight_type(arc_type)
    one, minus = pynini.Weight.one(wt), pynini.Weight(wt, -1.0)
    states = [f.add_state() for _ in range(n + 1)]
    f.set_start(states[0])
    f.set_final(states[n])
    for i, g in enumerate(labels):
        for lab in space.labels:
            f.add_arc(states[i], pynini.Arc(lab, lab, one if lab == g else minus, states[i + 1]))
    return fsa.attach(f, space.symbols)


def f_loss_estimate(n: int, gold_spans: Sequence[tuple[int, int]], scheme: str,
                    types: tuple[str, ...]) -> budget.Estimate:
    """The largest machine :func:`f_loss_machine` builds: the pair acceptor A, or A ∘
    E_scheme (the bound of :func:`.budget.composition`'s ``AE``), plus the scorer's
    n+2 marker states."""
    a = budget.pair_acceptor(n, gold_spans, len(types))
    if scheme == "IOBES":
        return a + budget.Estimate(n + 2, (n + 1) ** 2)
    layers = budget.pair_acceptor_layers(n, gold_spans)
    e = budget.encoder_shape(scheme, types)
    marks = 2 * (n + 2)
    inner, last = e.states * sum(layers[:-1]), e.states * layers[-1]
    ae = budget.Estimate(inner + last + marks, e.arcs * sum(layers[:-1]) + 2 * (last + marks))
    return max(a, ae, key=lambda x: x.size) + budget.Estimate(n + 2, (n + 1) ** 2)


def f_loss_machine(gold_tags: Sequence[str], space: TagSpace, beta: float = 1.0,
                   arc_type: str = "standard") -> pynini.Fst:
    """Acceptor over the scheme's tag labels weighting each y of length n by
    −(1 − F_β(y | gold)) (see module doc); ``beta`` the standard β, finite, >= 0.
    BudgetError before building when :func:`f_loss_estimate` exceeds the state budget."""
    beta_sq = to_beta_sq(beta)
    _gold_labels(gold_tags, space)
    fsa.check_arc_type(arc_type)
    n, scheme, types = len(gold_tags), space.scheme, space.types
    chunks = enc.tags_to_chunks(list(gold_tags), scheme)
    budget.check(f"the F-loss machine of a {n}-token gold with {len(chunks)} chunks "
                 f"({scheme}, {len(types)} types)",
                 f_loss_estimate(n, [(s, e) for _, s, e in chunks], scheme, types),
                 'use method="fast" (the same decision without a machine)')
    marks = fsa.union_of([counting.tp_marker(a) for a in range(n + 1)] +
                         [counting.m_marker(b) for b in range(n + 1)], "standard").closure()
    a = fsa.bare(counting.specialised_pair_acceptor(chunks, n, types, "standard"))
    if scheme != "IOBES":
        e = fsa.bare(encoder(scheme, types, "standard")) + marks
        a = pynini.compose(a.arcsort("olabel"), e.arcsort()).project("output")
        a.rmepsilon()
    out = pynini.compose(a.arcsort("olabel"),
                         _scorer(TagSet(scheme, types).labels, n, len(chunks), beta_sq).arcsort())
    out = out.project("output").rmepsilon().connect()
    if arc_type != "standard":
        out = fsa.to_arc_type(out, arc_type)
    return fsa.attach(out, space.symbols)


def _scorer(labels: Sequence[int], n: int, m_gold: int, beta_sq: float) -> pynini.Fst:
    """Tags copied; <tp=a> <m=b> deleted with weight −(1 − F_β(a, b)), a <= m_gold,
    F_β = (1+w)·a / (b + w·m_gold), w = ``beta_sq`` = β²."""
    f = pynini.Fst("standard")
    one = pynini.Weight.one("tropical")
    s0, fin = f.add_state(), f.add_state()
    f.set_start(s0)
    f.set_final(fin)
    for lab in labels:
        f.add_arc(s0, pynini.Arc(lab, lab, one, s0))
    for a in range(min(n, m_gold) + 1):
        mid = f.add_state()
        f.add_arc(s0, pynini.Arc(counting.tp_marker(a), 0, one, mid))
        for b in range(a, n + 1):
            den = b + beta_sq * m_gold
            loss = 0.0 if den == 0 else 1.0 - (beta_sq + 1) * a / den
            f.add_arc(mid, pynini.Arc(counting.m_marker(b), 0,
                                      pynini.Weight("tropical", -loss), fin))
    return f
