"""Validity acceptors: the well-formed tag sequences of a chunk scheme.

For untyped IOB2 the language is the star-free set of the Jansche slides (§6),

    {O, B} Γ* − Γ* {O I} Γ*,

and in general, since every scheme is strictly 2-local (see
:mod:`fstchunk.encodings`), it is

    Γ+ − ( Bad₀ Γ*  ∪  Γ* Bad₂ Γ*  ∪  Γ* Bad₁ )

with Bad₀ the tags that cannot start a sentence, Bad₂ the forbidden tag bigrams
and Bad₁ the tags that cannot end one.  The machine is built with pynini's
closure, concatenation, union and difference, then determinized and minimized;
no state is listed by hand.  The empty sequence is not accepted (a sentence has
at least one token), as in the slides.

Pitfall: a difference needs an unweighted deterministic subtrahend, so the
construction runs in the standard semiring; the result is converted to the
caller's arc type (default log64, ready to compose with probability models).
"""

from __future__ import annotations

import functools

import pynini

from .. import encodings as enc
from .. import fsa
from ..tagspace import TagSet


@functools.lru_cache(maxsize=None)
def _validity_std(scheme: str, types: tuple[str, ...]) -> pynini.Fst:
    ts = TagSet(scheme, types)
    lab = dict(zip(ts.tags, ts.labels))
    gamma = fsa.union_of(ts.labels)
    gamma_star = gamma.copy().closure()
    none = pynini.Fst("standard")            # the empty language
    bad0 = [lab[c] for c in ts.tags if not enc.allowed(ts.scheme, None, c)]
    bad1 = [lab[p] for p in ts.tags if not enc.allowed(ts.scheme, p, None)]
    bad2 = [(lab[p], lab[c]) for p in ts.tags for c in ts.tags
            if not enc.allowed(ts.scheme, p, c)]
    parts = []
    if bad0:
        parts.append(fsa.union_of(bad0) + gamma_star)
    if bad2:
        bigrams = pynini.union(*(fsa.string_fst([a, b]) for a, b in bad2))
        parts.append(gamma_star + bigrams + gamma_star)
    if bad1:
        parts.append(gamma_star + fsa.union_of(bad1))
    bad = fsa.unweighted_optimize(pynini.union(*parts)) if parts else none
    good = fsa.unweighted_optimize(gamma + gamma_star)
    return fsa.attach(fsa.unweighted_optimize(pynini.difference(good, bad)), ts.symbols)


def validity_acceptor(scheme: str, types=None, arc_type: str = "log64") -> pynini.Fst:
    """Deterministic minimal acceptor of the valid ``scheme`` sequences over ``types``."""
    ts = TagSet(scheme, types)
    return fsa.attach(fsa.to_arc_type(_validity_std(ts.scheme, ts.types), arc_type),
                      ts.symbols)


def slides_iob2_acceptor() -> pynini.Fst:
    """The slides' untyped IOB2 expression, {O,B}Γ* − Γ*{OI}Γ*, verbatim (§6)."""
    ts = TagSet("IOB2")
    o, b, i = (ts.label(t) for t in ("O", "B", "I"))
    gamma_star = fsa.union_of(ts.labels).closure()
    left = fsa.union_of([o, b]) + gamma_star
    right = fsa.unweighted_optimize(gamma_star + fsa.string_fst([o, i]) + gamma_star)
    return fsa.attach(fsa.unweighted_optimize(pynini.difference(left, right)), ts.symbols)
