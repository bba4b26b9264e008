"""The type-match utility: SemEval-2013's ``type`` mode (nervaluate) as F_β.

Each predicted chunk, in order, is correct when a gold chunk of its type not yet
taken overlaps it (it takes the closest one), and incorrect or spurious otherwise
(:mod:`fstchunk.schemes.type_match`).  With COR the correct predictions,

    u(x, y) = (1+β²)·COR(x, y) / (m(x) + β²·m(y)),   0/0 := 1

(x the decision, y the reference; at β = 1 nervaluate's type-mode F1 of one
sentence: its ACT is m(x) and its POS m(y), as every prediction is correct,
incorrect or spurious and each takes at most one gold chunk).  Its expectation under
a lattice is exact in both directions: by the step recursion of
:mod:`fstchunk.engine.stepped` (``method="fast"``) or by composing the counter,
specialised to the fixed side, with the lattice (``"fst"``).  The MEU decision comes
with a certificate: COR ≤ Σ_{p ∈ x} 1{p overlaps a gold chunk of p's type}, a bound
that is a sum over typed chunks (:func:`fstchunk.engine.counting.outside_run_marginals`
per type), searched by :func:`fstchunk.engine.certified.certified_meu` after the MAP
and conlleval MEU decisions (so it never returns less than either).

Pitfalls: any shared token counts as overlap (nervaluate asks for 1% of the gold
chunk's tokens, which differs only for gold chunks over 100 tokens); the counter's
states hold distances, so its recursion slows with long chunks.  With the decision
fixed, states that no later gold token tells apart are merged
(:func:`fstchunk.schemes.type_match.prediction_fixed_canon`): a chunking with a
36-token chunk in a 42-token sentence over 4 types takes about half a second (one run
on a shared machine; ten seconds unmerged).  The reference side (training) is not
merged.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.errors import InputError
from ..core.fbeta import to_beta_sq
from ..engine.certified import span_search
from ..engine.counting import outside_run_marginals
from ..engine.expectation import from_count_table
from ..engine.meu import DEFAULT_MEMORY_BUDGET, MEUResult
from ..engine.stepped import step_count_table
from ..grammars import budget
from ..grammars.counting import specialised_pair_acceptor
from ..schemes.matching import walk
from ..schemes import encodings as enc
from ..schemes.type_match import prediction_fixed_canon, type_step
from ..structures.decision import Decoding
from .expected import joint_by_composition
from .partial_match import MatchUtility

#: type-match MEU evaluates at most this many candidate decisions exactly (besides
#: the MAP and conlleval MEU decisions); each costs a step recursion, up to about a
#: second for a candidate with a 30-token chunk
MAX_CANDIDATES = 8


def type_credit(x: Sequence[enc.Chunk], y: Sequence[enc.Chunk], n: int) -> int:
    """COR of prediction chunks ``x`` against gold chunks ``y`` in SemEval's type mode
    (module doc), by running the counter's steps over the aligned IOBES pairs."""
    return walk(type_step, x, y, n)


def _gold_fixed(q, gold, pred):
    """:func:`type_step` with the gold tape first (the fixed side of a reference)."""
    return type_step(q, pred, gold)


def expected_type_f(lattice, chunks, beta_sq: float, fixed: str = "hypothesis",
                    method: str = "fast") -> float:
    """E[F_β] of the type-match credit of a fixed chunk list (module doc)."""
    if method == "fast":
        Z, H = step_count_table(lattice, chunks, type_step, fixed, canon=(
            prediction_fixed_canon if fixed == "hypothesis" else None))
    elif method == "fst":
        step = type_step if fixed == "hypothesis" else _gold_fixed
        acc = specialised_pair_acceptor(chunks, lattice.n, lattice.space.types,
                                        step=step)
        tm = budget.pair_acceptor(lattice.n, [(s, e) for _, s, e in chunks],
                                  len(lattice.space.types))
        joint = joint_by_composition(lattice, chunks, acc, lattice.n,
                                     growth=-(-acc.num_states() // max(1, tm.states)),
                                     counter="the type-match counter⊠M")
        Z, H = joint.sum(axis=0), np.arange(joint.shape[0]) @ joint
    else:
        raise InputError(f"unknown method {method!r}; use 'fst' or 'fast'")
    return float(from_count_table(Z, H, len(chunks), beta_sq, "decoding" if fixed ==
                                  "hypothesis" else "training").f)


def type_meu(lattice, beta_sq: float, memory_budget: float = DEFAULT_MEMORY_BUDGET,
             max_candidates: int = MAX_CANDIDATES) -> MEUResult:
    """The MEU decision for the type-match F_β, with a certificate (module doc); chunks
    are (type index, start, end).  BudgetError when the overlap tables exceed
    ``memory_budget`` bytes."""
    n, types = lattice.n, lattice.space.types
    overlap: dict = {}

    def bound(pm, s_i, e_i):
        for t in range(len(types)):
            overlap[t] = pm[None, :] - outside_run_marginals(lattice, t)[s_i, e_i]
        overlap["row"] = {(int(s), int(e)): j for j, (s, e) in enumerate(zip(s_i, e_i))}
        return np.concatenate([overlap[t] for t in range(len(types))])
    f_one = (1 + beta_sq) / (1 + beta_sq * np.arange(n + 1))

    def value(chunks):
        if len(chunks) == 1:           # one prediction: COR is its overlap, the bound
            t, s, e = chunks[0]
            return float(overlap[t][overlap["row"][(s, e)]] @ f_one)
        return expected_type_f(lattice, [(types[t], s, e) for t, s, e in chunks], beta_sq)
    return span_search(lattice, "type-match", beta_sq, memory_budget, bound, value,
                       max_candidates, typed=True)


class TypeMatch(MatchUtility):
    """``type``: F_β of SemEval-2013's type-match credit (module doc)."""

    def __init__(self):
        super().__init__("type")

    def credit(self, x, y, n: int) -> float:
        return type_credit(x, y, n)

    def expected_of(self, lattice, chunks, beta_sq, what, method):
        return expected_type_f(lattice, chunks, beta_sq, what, method)

    def decode(self, lattice, beta=1.0, memory_budget=None):
        """The MEU decision; ``score`` E[u], ``gap`` the certificate."""
        lattice.space.require_chunks("the type-match utility")
        r = type_meu(lattice, to_beta_sq(beta), DEFAULT_MEMORY_BUDGET
                     if memory_budget is None else memory_budget)
        types = lattice.space.types
        tags = enc.chunks_to_tags([(types[t], s, e) for t, s, e in r.chunks], lattice.n,
                                  lattice.scheme)
        return Decoding(list(tags), float(r.value), float(r.gap))
