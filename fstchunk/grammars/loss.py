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
  :mod:`fstchunk.core.fbeta`), 0/0 := 1: T⊠M specialised to y*
  (:func:`.counting.specialised_pair_acceptor`: states (i, tp, match, m), paths
  ending in <tp=a><m=b>), through the scheme's encoder
  (:func:`.conversion.encoder`, IOBES -> scheme), composed with a scorer that
  deletes the markers and puts −(1 − F_β(a, b)) on the path that wrote them.

Sizes are checked against the state budget (:mod:`.budget`) before anything is
built: the Hamming machine has n+1 states and n·|tags| arcs; the F machine is the
pair acceptor ∘ the encoder (:func:`f_loss_estimate`), O(n²·m(y*)) states, and at
least :func:`f_loss_floor` whatever the gold's chunks.  The tags may be a tag space
or a :class:`SchemeTags` (every tag of a scheme, O(k) to make; what the registry uses).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import pynini

from ..core.errors import InputError, SchemeError
from ..core.fbeta import to_beta_sq
from ..schemes import encodings as enc
from ..schemes.tagspace import TagSpace, normalize_types, symbol_table
from . import budget, counting, fsa
from .conversion import encoder


@dataclass(frozen=True)
class SchemeTags:
    """Every tag of a scheme over chunk types and its label: all that the loss machines
    read of a tag space, made in O(k) by :meth:`of` (a :class:`~fstchunk.schemes.tagspace.TagSet`
    also compiles its O(k²) validity and boundary tables, minutes for 10⁴ types)."""
    scheme: str
    types: tuple[str, ...]
    tags: tuple[str, ...]
    labels: tuple[int, ...]
    symbols: pynini.SymbolTable

    @classmethod
    def of(cls, scheme: str, types=None) -> "SchemeTags":
        scheme, types = enc.canonical_scheme(scheme), normalize_types(types)
        table = symbol_table(types)
        tags = enc.scheme_tags(scheme, types)
        return cls(scheme, types, tags, tuple(table.find(t) for t in tags), table)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_label", dict(zip(self.tags, self.labels)))

    def __len__(self) -> int:
        return len(self.tags)

    def __contains__(self, tag) -> bool:
        return isinstance(tag, str) and tag in self._label

    def label(self, tag: str) -> int:
        """The label of ``tag``; SchemeError naming it if it is not a tag here."""
        try:
            return self._label[tag]
        except (KeyError, TypeError):
            raise SchemeError(f"tag {tag!r} is not a tag of {self.scheme} over "
                              f"{','.join(self.types) or '(untyped)'}") from None


def _gold_labels(gold_tags: Sequence[str], space: TagSpace | SchemeTags) -> list[int]:
    if isinstance(gold_tags, str) or len(gold_tags) < 1:
        raise InputError("the gold must be a non-empty sequence of tags")
    enc.validate(list(gold_tags), space.scheme)
    return [space.label(t) for t in gold_tags]


def hamming_estimate(n: int, n_tags: int) -> budget.Estimate:
    """The Hamming loss machine: n+1 states, n·|tags| arcs (exact)."""
    return budget.Estimate(n + 1, n * n_tags)


def hamming_loss_machine(gold_tags: Sequence[str], space: TagSpace | SchemeTags,
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


def f_loss_floor(n: int, n_types: int) -> budget.Estimate:
    """A lower bound of :func:`f_loss_estimate` whatever the gold's chunks, from its
    length alone (the chunks cost O(n) to read): the pair acceptor of a gold without
    chunks, Σ_{i<=n} (i + 1) states (more chunks only add states), and the scorer."""
    layers = (n + 1) * (n + 2) // 2
    g = budget.iobes_tags(n_types)
    a = budget.Estimate(layers + n + 2, g * (layers - (n + 1)) + (n + 1) + n + 1)
    return dataclasses.replace(a + budget.Estimate(n + 2, (n + 1) ** 2), at_least=True)


def f_loss_estimate(n: int, gold_spans: Sequence[tuple[int, int]], scheme: str,
                    types: tuple[str, ...]) -> budget.Estimate:
    """The largest machine :func:`f_loss_machine` builds: the pair acceptor A, or A ∘
    E_scheme (the bound of :func:`.budget.composition`'s ``AE``), plus the scorer's
    n+2 marker states."""
    a = budget.pair_acceptor(n, gold_spans, len(types))
    if scheme == "IOBES":
        return a + budget.Estimate(n + 2, (n + 1) ** 2)
    e_size = budget.encoder_machine(len(types))
    if not budget.fits(e_size):                 # too large to build for its shape
        return e_size + a + budget.Estimate(n + 2, (n + 1) ** 2)
    layers = budget.pair_acceptor_layers(n, gold_spans)
    e = budget.encoder_shape(scheme, types)
    marks = 2 * (n + 2)
    inner, last = e.states * sum(layers[:-1]), e.states * layers[-1]
    ae = budget.Estimate(inner + last + marks, e.arcs * sum(layers[:-1]) + 2 * (last + marks))
    return max(a, ae, key=lambda x: x.size) + budget.Estimate(n + 2, (n + 1) ** 2)


def f_loss_machine(gold_tags: Sequence[str], space: TagSpace | SchemeTags, beta: float = 1.0,
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
                         _scorer([space.symbols.find(t) for t in enc.scheme_tags(scheme, types)],
                                 n, len(chunks), beta_sq).arcsort())
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
