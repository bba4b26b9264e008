"""Validity acceptors: the well-formed tag sequences of a chunk scheme.

For untyped IOB2 the language is the star-free set of the Jansche slides (§6),

    {O, B} Γ* − Γ* {O I} Γ*,

and in general, since every scheme is strictly 2-local (see
:mod:`fstchunk.schemes.encodings`), it is

    Γ+ − ( Bad₀ Γ*  ∪  Γ* Bad₂ Γ*  ∪  Γ* Bad₁ )

with Bad₀ the tags that cannot start a sentence, Bad₂ the forbidden tag bigrams
and Bad₁ the tags that cannot end one.  The machine is that language's minimal
deterministic acceptor, built state by state from the scheme's 2-local rules
(:func:`.local.machine`: one state per class of tags with the same successors)
rather than by determinizing the difference over the whole alphabet, which took
minutes and GBs for 100 chunk types.  The empty sequence is not accepted (a
sentence has at least one token), as in the slides; :func:`slides_iob2_acceptor`
keeps the slides' expression verbatim, and the tests check the two agree.

Size: at most 4k + 2 states and k² + 12k + 2 arcs for k chunk types
(:func:`.budget.validity_machine`), checked against the state budget before building.
"""

from __future__ import annotations

import pynini

from ..schemes import encodings as enc
from ..schemes.tagspace import TagSet, normalize_types, symbol_table
from . import budget, fsa, local


def validity_acceptor(scheme: str, types=None, arc_type: str = "log64") -> pynini.Fst:
    """Deterministic minimal acceptor of the valid ``scheme`` sequences over ``types``;
    :class:`~fstchunk.core.errors.BudgetError` before building if it would not fit."""
    scheme, types = enc.canonical_scheme(scheme), normalize_types(types)
    fsa.check_arc_type(arc_type)
    budget.check(f"the {scheme} validity acceptor over {budget.types_phrase(types)}",
                 budget.validity_machine(len(types)))
    return fsa.attach(fsa.to_arc_type(local.machine((scheme,), types), arc_type),
                      symbol_table(types))


def slides_iob2_acceptor() -> pynini.Fst:
    """The slides' untyped IOB2 expression, {O,B}Γ* − Γ*{OI}Γ*, verbatim (§6)."""
    ts = TagSet("IOB2")
    o, b, i = (ts.label(t) for t in ("O", "B", "I"))
    gamma_star = fsa.union_of(ts.labels).closure()
    left = fsa.union_of([o, b]) + gamma_star
    right = fsa.unweighted_optimize(gamma_star + fsa.string_fst([o, i]) + gamma_star)
    return fsa.attach(fsa.unweighted_optimize(pynini.difference(left, right)), ts.symbols)
