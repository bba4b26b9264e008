"""Loss-augmented decoding: the most violating sequence of max-margin training.

:func:`decode_loss_augmented` returns

    ŷ = argmax_{valid y}  score(y) + Δ(y, y*),

score(y) the lattice's log weight of y (log Pr(y) + log Z: the model's unnormalised
score, at any scale) and y* the gold, for two losses:

* ``loss="hamming"`` — Δ_H(y, y*) = Σ_i 1{y_i ≠ y*_i}, on the tags of the lattice's
  scheme (Taskar et al. 2003, max-margin Markov networks; Tang et al.);
* ``loss="f"`` — Δ_F(y, y*) = 1 − F_β(y | y*), F_β(y | y*) = (1+β²)·tp / (m(y) +
  β²·m(y*)) with the standard β (the slides' β' = β², :mod:`fstchunk.core.fbeta`), 0/0 := 1
  (Δ = 0 when neither has a chunk; at β = 0, Δ = 1 − precision).  Not decomposable over
  tokens, but against a fixed y* a function of (tp, m(y)) only, so exact over the
  states (position, tag, match, tp, m) — T⊠M specialised to y*.

Two methods that must agree: ``method="fast"`` runs the max-plus DPs of
:mod:`fstchunk.engine.lossaug` on the lattice's layers; ``method="fst"`` composes the
lattice (tropical) with the loss machine of :mod:`fstchunk.grammars.loss` (weights
−Δ) and takes its shortest path.  Either way the returned
:class:`~fstchunk.decoding.decode.Decoding` carries the tags and score = score(tags) + Δ(tags,
y*), recomputed exactly from the tags in float64 (gap 0: both searches are exact).

Pitfalls: the machine path runs on OpenFst's tropical arcs, whose weights are
float32; its tags can differ from the fast path's only between sequences whose
values are within that rounding (near-ties).  A lattice whose layers have several
states with one tag at one position (a machine lattice) may give one sequence
several paths; it is determinised (log semiring) first so that both searches
maximise over sequences, not paths.  The F machine grows as n²·m(y*) states and is
checked against the state budget (BudgetError; ``method="fast"`` has no such limit).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pynini

from ..schemes import encodings as enc
from ..grammars import fsa
from ..core.blas import one_blas_thread
from ..structures.lattice import Decoding
from ..engine.lossaug import f_loss, f_loss_viterbi, hamming_viterbi
from ..core.errors import FstchunkError, InputError
from .expected import composition_estimate
from ..core.fbeta import check_beta, to_beta_sq
from ..grammars import budget
from ..grammars.loss import hamming_loss_machine, f_loss_machine
from ..structures.lattice import Lattice

LOSSES = ("hamming", "f")
METHODS = ("fast", "fst")


@one_blas_thread
def decode_loss_augmented(lattice: Lattice, gold: Sequence[str], loss: str = "hamming",
                          beta: float = 1.0, method: str = "fast",
                          memory_budget: float | None = None) -> Decoding:
    """The valid sequence maximising $\\mathrm{score}(y) + \\Delta(y, \\mathrm{gold})$
    (module doc), and that value: what max-margin training needs.

    Args:
        lattice: the model's scores over one sentence's valid tag sequences.
        gold: the gold tags, in the lattice's scheme.
        loss: ``"hamming"`` (tags that differ) or ``"f"`` ($1 - F_\\beta$ against the gold).
        beta: β of F_β, read by ``loss="f"`` only (finite, >= 0).
        method: ``"fast"`` (a dynamic programme) or ``"fst"`` (the shortest path of
            the lattice composed with the loss machine).
        memory_budget: the bytes the fast F programme may take (``None``: 1 GiB,
            :data:`fstchunk.engine.lossaug.DEFAULT_MEMORY_BUDGET`).

    Returns:
        A :class:`~fstchunk.decoding.decode.Decoding`: ``.tags`` and ``.score``.

    Raises:
        InputError: an unknown loss or method, a bad β, or a gold of the wrong length,
            with unknown tags or invalid in the lattice's scheme.
        BudgetError: before the work, the fast F programme beyond ``memory_budget``
            or a machine beyond the state budget (:mod:`fstchunk.grammars.budget`).

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> fstchunk.decode_loss_augmented(lattice, ["B-PER", "I-PER", "O"]).tags
        ['B-PER', 'O', 'O']
    """
    if loss not in LOSSES:
        raise InputError(f"unknown loss {loss!r}; use one of {', '.join(LOSSES)}")
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    beta = check_beta(beta)
    if memory_budget is not None and not (isinstance(memory_budget, (int, float))
                                          and memory_budget > 0):
        raise InputError(f"memory_budget must be a positive number of bytes, "
                         f"got {memory_budget!r}")
    if isinstance(gold, str):
        raise InputError("gold must be a sequence of tags, not a string")
    gold = list(gold)
    try:
        gold_idx = lattice.check_sequence(gold, "gold")
    except InputError:
        raise
    except FstchunkError as e:                      # an invalid or unknown tag
        raise InputError(f"gold: {e}") from None
    lat = _unambiguous(lattice)
    chunks = enc.tags_to_chunks(gold, lattice.scheme)
    if method == "fast":
        if loss == "hamming":
            idx, _ = hamming_viterbi(lat.layers, gold_idx)
        else:
            idx, _ = f_loss_viterbi(lat.layers, lat.space, chunks, to_beta_sq(beta),
                                    memory_budget)
        tags = [lattice.tags[i] for i in idx]
    else:
        tags = _machine_path(lat, gold, chunks, loss, beta)
    return Decoding(tags, sequence_score(lattice, tags) + loss_value(tags, gold, lattice.scheme,
                                                                     loss, beta))


def sequence_score(lattice: Lattice, tags: Sequence[str]) -> float:
    """score(tags): the lattice's log weight of ``tags`` (log Pr + log Z)."""
    return lattice.log_prob(tags) + lattice.log_partition()


def loss_value(tags: Sequence[str], gold: Sequence[str], scheme: str, loss: str = "hamming",
               beta: float = 1.0) -> float:
    """Δ(tags, gold): Σ_i 1{tags_i ≠ gold_i}, or 1 − F_β(tags | gold) (standard β,
    0/0 := 1)."""
    if loss == "hamming":
        return float(sum(a != b for a, b in zip(tags, gold)))
    hyp = set(enc.tags_to_chunks(list(tags), scheme))
    ref = set(enc.tags_to_chunks(list(gold), scheme))
    return float(f_loss(len(hyp & ref), len(hyp), len(ref), to_beta_sq(beta)))


def _unambiguous(lattice: Lattice) -> Lattice:
    """``lattice`` if each layer has one state per tag (one path per sequence), else
    the same distribution from its determinised machine (log64, exact for acyclic)."""
    if all(len(np.unique(lab)) == len(lab) for lab in lattice.layers.labels):
        return lattice
    det = pynini.determinize(lattice.unnormalised_fst(), delta=fsa.DELTA)
    return Lattice.from_fst(det, lattice.tags, lattice.scheme)


def _machine_path(lat: Lattice, gold: list[str], chunks, loss: str, beta: float) -> list[str]:
    """Shortest path of lattice ∘ loss machine in the tropical semiring."""
    n, space = lat.n, lat.space
    if loss == "hamming":             # deterministic, one state per position: ≤ the lattice
        est = budget.Estimate(sum(len(lab) for lab in lat.layers.labels) + 1,
                              sum(int(np.isfinite(w).sum()) for w in lat.layers.weights))
    else:                             # as expected_f's composition: A ∘ E, then ∘ the lattice
        est = max((e for k, e in composition_estimate(lat, chunks).items() if k in ("AE", "R")),
                  key=lambda e: e.size)
    budget.check(f"loss-augmented decoding by composition on a lattice of {n} tokens and "
                 f"{len(lat.tags)} {lat.scheme} tags (the {loss} loss machine ∘ the lattice)",
                 est, 'use method="fast" (the same decision without a machine)')
    machine = hamming_loss_machine(gold, space) if loss == "hamming" else \
        f_loss_machine(gold, space, beta)
    lat_std = fsa.to_arc_type(fsa.bare(lat.fst), "standard")
    comp = pynini.compose(lat_std.arcsort("olabel"), fsa.bare(machine).arcsort()).connect()
    if comp.num_states() == 0:
        raise InputError("the lattice gives no weight to any valid sequence")
    try:
        path = pynini.shortestpath(comp, queue_type="top")
    except pynini.FstOpError:
        raise InputError("OpenFst's shortest-path search failed on this lattice: its scores "
                         "exceed the float32 range of tropical arcs; use method=\"fast\"") from None
    found = fsa.paths(path)
    if len(found) != 1:
        raise InputError("OpenFst's shortest-path search found no path (scores beyond the "
                         "float32 range of tropical arcs?); use method=\"fast\"")
    labels = found[0][0]
    return [space.symbols.find(x) for x in labels]
