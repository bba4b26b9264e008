"""E[u] of a fixed gold under a chain lattice and its gradient with respect to the
chain's score arrays: the per-sentence term of the MEU objectives, which the CRFs'
objectives (:mod:`fstchunk.models.objectives`) and the torch layer
(:mod:`fstchunk.torch.engine_loss`) share.

For x ~ the lattice and the gold g fixed (the training direction),

* ``conlleval``: E[F_β(x | g)], one sweep of :func:`.expectation.tp_count_table_grad`;
* ``exact``: the same sweep matching boundaries alone (``typed=False``);
* ``macro``: the mean over the lattice's types T of E[F_β] of T's chunks alone, one
  sweep per type with m counting T's chunks (``count_type``);
* ``partial``: SemEval-2013's partial match, :func:`.partial.partial_count_table_grad`;
* ``type``: SemEval-2013's type match, the step recursion of its counter
  (:func:`.stepped.step_count_table_grad` of :func:`fstchunk.schemes.type_match.type_step`);
* ``weighted:T=w,...``: the per-type weighted F_β (a chunk of type T counts w in tp and
  in both chunk counts), the conlleval sweep over weighted counts
  (:func:`.expectation.tp_count_table_grad`'s ``weights``), m(g) the gold's weighted count.

Every sweep gives (Z, T) and the adjoints of E[F_β] = Σ_c (1+β²)·T[c]/(c + β²·m(g))
(0/0 := 1) are fed back through it.  The lattice must be a dense chain
(``Lattice.of_chain``): layer i's states are the tag columns, so its gradient lands on
emission row i, the transitions (i ≥ 1) or the start scores (i = 0), and the final
weights' on the end scores.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import InputError
from ..core.fbeta import parse_weights
from .expectation import from_count_table, tp_count_table_grad
from ..schemes.type_match import type_step
from .partial import partial_count_table_grad
from .stepped import step_count_table_grad
from .weighted import weight_array

#: the utilities whose expectation has a gradient here (``weighted:T=w,...`` any weights)
UTILITIES = ("conlleval", "exact", "macro", "partial", "type", "weighted:TYPE=W,...")


def sweeps(chunks: list, utility: str, types: tuple[str, ...]) -> list:
    """The sweeps of one sentence's E[u]: (gold chunks, typed, the type m counts,
    weight of the sweep in the mean, the types' chunk weights or None) — one for
    conlleval, exact, partial, type and weighted, one per type for macro."""
    if utility.startswith("weighted:"):
        w = weight_array(parse_weights(utility[9:]), types, f"utility {utility}")
        return [(chunks, True, None, 1.0, w)]
    if utility not in UTILITIES:
        raise InputError(f"unknown utility {utility!r} for training; use one of "
                         f"{', '.join(UTILITIES)}")
    if utility == "macro":
        return [([c for c in chunks if c[0] == t], True, t, 1.0 / len(types), None)
                for t in types]
    return [(chunks, utility != "exact", None, 1.0, None)]


def expected_utility_grad(lattice, chunks: list, utility: str, beta_sq: float):
    """(E[u], d/d emissions (n, L), d/d transitions (L, L), d/d start (L,), d/d end (L,))
    of the gold ``chunks`` under the dense chain ``lattice`` (module doc)."""
    L = len(lattice.space.tags)
    gE, gT, gS, gEnd = np.zeros((lattice.n, L)), np.zeros((L, L)), np.zeros(L), np.zeros(L)
    value = 0.0
    types = lattice.space.types
    for ch, typed, count_type, weight, w in sweeps(chunks, utility, types):
        c = np.arange(lattice.n * (1 if w is None else int(w.max())) + 1, dtype=float)
        m_g = len(ch) if w is None else int(sum(w[types.index(t)] if t in types else 1
                                                for t, _, _ in ch))
        den = c + beta_sq * m_g
        # dE[F]/dZ[c] = 1 where c + w·m(g) = 0 (0/0 := 1), dE[F]/dT[c] = (1+w)/den
        adj = (np.where(den > 0, 0.0, weight),
               np.where(den > 0, weight * (beta_sq + 1) / np.where(den > 0, den, 1), 0.0))
        if utility == "partial":
            gw, gfin, (Z, T) = partial_count_table_grad(lattice, ch, *adj)
        elif utility == "type":
            gw, gfin, (Z, T) = step_count_table_grad(lattice, ch, type_step, *adj)
        else:
            gw, gfin, (Z, T) = tp_count_table_grad(lattice, ch, *adj, typed=typed,
                                                   count_type=count_type, weights=w)
        value += weight * from_count_table(Z, T, m_g, beta_sq, "training").f
        for i, gwi in enumerate(gw):
            gE[i] += gwi.sum(axis=0)
            if i == 0:
                gS += gwi[0]
            else:
                gT += gwi
        gEnd += gfin
    return value, gE, gT, gS, gEnd
