"""Expected true positives, precision, recall and F_β (Jansche slides §9, §16-19).

For a hypothesis x and reference y: tp(x, y) = shared chunks (same type and span),
m(x) = chunks of x, P = tp/m(x), R = tp/m(y), F_β = (1+β²)·tp / (m(x) + β²·m(y)),
with 0/0 := 1; ``beta`` is the standard β (:mod:`fstchunk.core.fbeta`; the slides' β' = β²,
which :func:`from_count_table` takes as ``beta_sq``).  Two directions:

* **decoding** (``hypothesis=x``): x fixed, y ~ the lattice:
  U(x) = E_y[F_β(x | y)] = (1+β²) Σ_y tp(x, y) / (m(x) + β² m(y)) · Pr(y);
* **training** (``reference=y*``): y* fixed (the gold), x ~ the lattice:
  E_x[F_β(x | y*)].

Both need only the joint law of (tp, m) where m counts the chunks of the random
side.  ``method="fst"`` gets the whole joint by composition: the pair machine T⊠M
specialised to the fixed side, (through the scheme's encoder) ∘ the normalised
lattice, markers kept and tags deleted, summed by epsilon removal.
``method="fast"`` gets Z[c] = Pr(m = c) and T[c] = E[tp · 1{m = c}] from the
expectation-semiring recursion of :mod:`fstchunk.engine.expectation`; F is linear in tp for a
fixed m, so these suffice for every expectation here.

Pitfall: the composition path grows as n³ (the pair acceptor has states (i, tp, m))
times the lattice's width; it is refused with a :class:`~fstchunk.core.errors.BudgetError`
before anything is built when its largest machine would exceed the state budget of
:mod:`fstchunk.grammars.budget` (``method="fast"`` gives the same numbers).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pynini

from ..core.errors import InputError
from ..core.blas import one_blas_thread
from ..grammars import fsa
from ..core.fbeta import to_beta_sq
from ..engine import inference
from ..engine.expectation import ExpectedF, from_count_table
from ..grammars import budget, counting
from ..grammars.conversion import encoder
from ..structures.lattice import Lattice
from ..structures.lattices import apply
from ..schemes.tagseq import tag_list


@one_blas_thread
def expected_f(lattice: Lattice, hypothesis: Sequence[str] | None = None,
               reference: Sequence[str] | None = None, beta: float = 1.0,
               method: str = "fst") -> ExpectedF:
    """Expected true positives, precision, recall and F_β of one fixed tag sequence
    against the lattice's distribution, $\\mathbb{E}_{y \\sim p}[F_\\beta(h, y)]$ for a
    hypothesis $h$ (or against a fixed reference: give exactly one).

    Args:
        lattice: the model's distribution over one sentence's valid tag sequences.
        hypothesis: the tags scored as the prediction, the lattice's ``y`` the gold.
        reference: the tags taken as gold, the lattice's ``y`` the prediction (the
            training direction).
        beta: β of $F_\\beta = (1+\\beta^2)PR/(\\beta^2 P + R)$.
        method: ``"fst"`` (by composition of machines) or ``"fast"`` (the engine;
            both agree).

    Returns:
        An :class:`ExpectedF`: ``.f``, ``.precision``, ``.recall``, ``.tp``, and
        ``.joint``, the law of (true positives, chunks).

    Raises:
        InputError: neither or both of ``hypothesis`` and ``reference``, or an
            unknown ``method``.
        SchemeError: tags invalid in the lattice's scheme, naming the position.

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> r = fstchunk.expected_f(lattice, reference=["B-PER", "I-PER", "O"])
        >>> round(r.f, 3), round(r.precision, 3), round(r.recall, 3)
        (0.512, 0.531, 0.531)
    """
    beta_sq = to_beta_sq(beta)
    if (hypothesis is None) == (reference is None):
        raise InputError("give exactly one of hypothesis= (decoding) or reference= (training)")
    direction = "decoding" if hypothesis is not None else "training"
    what = "hypothesis" if hypothesis is not None else "reference"
    fixed = list(tag_list(hypothesis if hypothesis is not None else reference, what))
    chunks = lattice.check_chunking(fixed, what)
    if method == "fst":
        joint = joint_by_composition(lattice, chunks)
        Z = joint.sum(axis=0)
        T = np.arange(joint.shape[0]) @ joint
    elif method == "fast":
        return lattice.expected_f(reference=reference, hypothesis=hypothesis, beta=beta)
    else:
        raise InputError(f"unknown method {method!r}; use 'fst' or 'fast'")
    return from_count_table(Z, T, len(chunks), beta_sq, direction, joint)


@one_blas_thread
def expected_f_all(lattices: Sequence[Lattice], fixed: Sequence[Sequence[str]],
                   beta: float = 1.0, direction: str = "training",
                   errors: str = "raise") -> list:
    """:func:`expected_f` (``method="fast"``) of many lattices at once, each against its
    fixed tag sequence: the reference (``direction="training"``, x ~ the lattice) or the
    hypothesis (``"decoding"``, y ~ the lattice); dense chains in ragged batches
    (:func:`fstchunk.engine.inference.tp_count_tables`), the others one at a time;
    ``errors="return"``: a failing sentence holds its error (:mod:`fstchunk.structures.lattices`)."""
    if direction not in ("training", "decoding"):
        raise InputError(f"direction must be 'training' or 'decoding', got {direction!r}")
    beta_sq = to_beta_sq(beta)
    lattices, fixed = list(lattices), list(fixed)
    if len(lattices) != len(fixed):
        raise InputError(f"{len(lattices)} lattices but {len(fixed)} fixed tag sequences")
    what = "reference" if direction == "training" else "hypothesis"

    def batched(batch) -> list:
        types = batch.space.types
        chunks = [lattices[i].check_chunking(fixed[i], what) for i in batch.index]
        return inference.expected_f_batch(
            inference.transfer_of(batch), batch,
            [[(types.index(t), s, e) for t, s, e in c] for c in chunks], beta_sq, direction)

    def single(i: int) -> ExpectedF:
        return lattices[i].expected_f(**{what: fixed[i]}, beta=beta)
    return apply(lattices, batched, single, errors)


def marker_extractor(lattice: Lattice, bound: int) -> pynini.Fst:
    """Transducer deleting tags (tag:ε) and keeping count markers."""
    labels = list(lattice.space.labels)
    marks = [counting.tp_marker(a) for a in range(bound + 1)] + \
            [counting.m_marker(b) for b in range(bound + 1)]
    return fsa.union_of([(lab, 0) for lab in labels] + marks, "log64").closure()


def composition_estimate(lattice: Lattice, fixed_chunks) -> dict[str, budget.Estimate]:
    """The estimated sizes of the machines :func:`joint_by_composition` builds
    (:func:`fstchunk.grammars.budget.composition`), from the lattice's layers."""
    labels = lattice.space.labels
    layer_labels = [[labels[int(t)] for t in lab] for lab in lattice.layers.labels]
    layer_arcs = [int(np.isfinite(w).sum()) for w in lattice.layers.weights]
    spans = [(start, end) for _, start, end in fixed_chunks]
    return budget.composition(lattice.n, spans, lattice.scheme, lattice.space.types,
                              layer_labels, layer_arcs)


def joint_by_composition(lattice: Lattice, fixed_chunks, acceptor=None, top: int | None = None,
                         growth: int = 1, counter: str = "T⊠M") -> np.ndarray:
    """Pr(tp = a, m_random = b) by composing T⊠M (specialised) with the lattice.

    R = A ∘ (E_scheme · markers*) ∘ (Q · markers*), A = T⊠M with one tape fixed
    (IOBES), E_scheme the IOBES -> scheme encoder, Q the normalised lattice; the
    tags are deleted and the marker strings <tp=a><m=b> summed by epsilon removal.
    ``acceptor``: another counter specialised to the fixed side in place of A (the
    partial-credit counter P⊠M of :mod:`fstchunk.grammars.partial`, a weighted T⊠M),
    whose counts reach ``top`` (default n) and whose size is ``growth`` times A's;
    ``counter`` names it in messages.  BudgetError, before anything is built, if the
    largest would exceed the budget.
    """
    n = lattice.n
    largest = max(composition_estimate(lattice, fixed_chunks).values(), key=lambda e: e.size)
    largest = budget.Estimate(growth * largest.states, growth * largest.arcs)
    budget.check(f'the expected value by composition (method="fst") on a lattice of {n} '
                 f'tokens and {len(lattice.tags)} {lattice.scheme} tags: composing '
                 f'{counter} with it',
                 largest, 'use method="fast" (the same numbers without building a machine; '
                 '`fstchunk expected --method fast`)')
    types = lattice.space.types
    top = n if top is None else top
    marks = fsa.union_of([counting.tp_marker(a) for a in range(top + 1)] +
                         [counting.m_marker(b) for b in range(top + 1)], "log64").closure()
    a = fsa.bare(counting.specialised_pair_acceptor(fixed_chunks, n, types)
                 if acceptor is None else acceptor)
    if lattice.scheme != "IOBES":
        e = fsa.bare(encoder(lattice.scheme, types)) + marks
        a = pynini.compose(a.arcsort("olabel"), e.arcsort()).project("output")
        a.rmepsilon(delta=fsa.DELTA)
    q = (fsa.bare(lattice.fst) + marks).rmepsilon(delta=fsa.DELTA)
    r = pynini.compose(a.arcsort("olabel"), q.arcsort()).connect()
    r = pynini.compose(r, marker_extractor(lattice, top)).project("output")
    r.rmepsilon(delta=fsa.DELTA)
    joint = np.zeros((top + 1, top + 1))
    for labels, _, w in fsa.paths(r):
        (k1, a_), (k2, b_) = (counting.decode_marker(x) for x in labels)
        if (k1, k2) != ("tp", "m"):            # T⊠M emits <tp> then <m> on every path
            raise RuntimeError(f"fstchunk bug: marker string {k1}, {k2} out of order")
        joint[a_, b_] += np.exp(-w)
    return joint
