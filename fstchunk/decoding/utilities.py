"""Utilities as machines: F_β of chunkings seen through a map, their expected values
under the model and their MEU decisions.

A utility u(x, y) scores a decision x against a reference y.  Those here are
conlleval's F_β (:mod:`fstchunk.core.fbeta`) after a functional transducer U that
rewrites both tag sequences (:func:`fstchunk.grammars.conversion.type_map`: chunk
types renamed, merged, erased or dropped):

    u_U(x, y) = F_β(U(x) | U(y)),    E_y[u_U(x, y)] = E_{y' ~ U_*p}[F_β(U(x) | y')]

so the expectation and the exact MEU decision are those of the pushed lattice U_*p
(:mod:`fstchunk.structures.pushforward`): by composition with T⊠M or by the
lattice's engine, with MEU's certificate.

Shipped (:func:`utility` by name; the MEU decoder's ``utility=``, ``--utility``):

==============  ==================================================================
conlleval       U the identity: a chunk is right with its span and its type
strict          the same (SemEval-2013's strict mode scores a sentence as conlleval does)
exact           U erases the types: the span is enough (SemEval-2013's exact)
partial         SemEval-2013's partial: ½ credit for an overlap, 1 for the span
                (:mod:`fstchunk.decoding.partial_match`; not a map: a counter of its own)
type            SemEval-2013's type: a chunk of its type overlapping it is enough
                (:mod:`fstchunk.decoding.type_match`; a counter of its own)
type:T          U keeps the chunks of type T: the F of that type alone
weighted:T=w    a chunk of type T counts w times (:mod:`fstchunk.decoding.weighted_utility`)
near            a boundary off by one token earns half (a credit counter of its own,
                :func:`fstchunk.decoding.credit_utility.near`)
macro           the mean over the lattice's types of type:T (macro-averaged F)
==============  ==================================================================

A user's own is a type map, ``Utility("loc", {"GPE": "LOC"})``: GPE and LOC
scored as one type; ``{"MISC": None}``: scored without MISC; each type to a new name,
``""`` (untyped) or None (dropped).  ``fstchunk grammar print type-filter --keep T``
prints a per-type U.  Any functional transducer U of one's own:
:class:`~fstchunk.decoding.machine_utility.MachineUtility`; a credit counter of one's
own in place of tp (partial credit): :class:`~fstchunk.decoding.credit_utility.CreditUtility`.

Each sentence is scored on its own, with 0/0 := 1: a sentence where neither x nor y
has a chunk of type T has F_T = 1 (:mod:`fstchunk.decoding.expected`).  Macro-F's
expectation is the mean of the per-type expectations (linearity), exact.  Its MEU
decision is no single lattice's: each type's exact decision is taken, and where
chunks of two types overlap, the one whose removal costs less expected utility goes,
greedily; the certificate is the mean of the per-type maxima plus their certificates
(each type decided freely: an upper bound) minus the value reached.

Pitfall: the pushed lattice is a machine lattice, decoded one sentence at a time,
several times slower than conlleval's batched engine (``macro``: once per type).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.errors import InputError
from ..core.fbeta import parse_weights
from ..schemes import encodings as enc
from ..structures.decision import Decoding
from ..structures.lattice import Lattice
from .exact_boundaries import decode_meu_exact, expected_exact_f
from .expected import expected_f
from .mapped import Utility
from .partial_match import PartialMatch
from .credit_utility import near
from .type_match import TypeMatch
from .weighted_utility import WeightedF

#: the shipped utilities' names (``type:T`` for any type T)
NAMES = ("conlleval", "strict", "exact", "partial", "type", "macro", "type:TYPE",
         "weighted:TYPE=W,...", "near")


class Conlleval(Utility):
    """conlleval's F_β: U the identity (the lattice's own batched engine)."""

    def __init__(self):
        super().__init__("conlleval")

    def expected(self, lattice, hypothesis=None, reference=None, beta=1.0, method="fast"):
        return float(expected_f(lattice, hypothesis, reference, beta, method).f)

    def decode(self, lattice, beta=1.0, memory_budget=None):
        return lattice.meu(beta, memory_budget)


class ExactBoundaries(Utility):
    """The exact-boundary F_β: U erases the types
    (:mod:`fstchunk.decoding.exact_boundaries`, its dense fast path)."""

    def __init__(self):
        super().__init__("exact")

    def type_map(self, types):
        return {t: "" for t in types}

    def expected(self, lattice, hypothesis=None, reference=None, beta=1.0, method="fast"):
        return float(expected_exact_f(lattice, hypothesis, reference, beta, method).f)

    def decode(self, lattice, beta=1.0, memory_budget=None):
        return decode_meu_exact(lattice, beta)


class TypeF(Utility):
    """``type:T``: the F_β of the chunks of type ``kind`` alone (U the type filter,
    :func:`fstchunk.grammars.conversion.type_filter`)."""

    def __init__(self, kind: str):
        super().__init__(f"type:{kind}")
        self.kind = kind

    def type_map(self, types):
        if self.kind not in types:
            raise InputError(f"utility type:{self.kind}: {self.kind!r} is not among the "
                             f"lattice's types {', '.join(types)}")
        return {t: (t if t == self.kind else None) for t in types}


class MacroF(Utility):
    """Macro-averaged F_β: the mean over the lattice's types T of ``type:T`` (module
    doc: exact expectation; MEU by per-type decisions, overlaps resolved greedily,
    with a certificate)."""

    def __init__(self):
        super().__init__("macro")

    def __call__(self, x, y, scheme, types, beta=1.0):
        return float(np.mean([TypeF(t)(x, y, scheme, types, beta) for t in types]))

    def pushed(self, lattice):
        raise InputError("macro-F is a mean over types, not one map: it has no single "
                         "pushed lattice (type:T has one per type)")

    def expected(self, lattice, hypothesis=None, reference=None, beta=1.0, method="fast"):
        lattice.space.require_chunks("the macro utility")
        return float(np.mean([TypeF(t).expected(lattice, hypothesis, reference, beta, method)
                              for t in lattice.space.types]))

    def decode(self, lattice, beta=1.0, memory_budget=None):
        lattice.space.require_chunks("the macro utility")
        types = lattice.space.types
        per = {t: TypeF(t).decode(lattice, beta, memory_budget) for t in types}
        bound = float(np.mean([d.score + d.gap for d in per.values()]))
        chosen = {t: enc.tags_to_chunks(d.tags, lattice.scheme) for t, d in per.items()}
        value = {t: float(d.score) for t, d in per.items()}

        def tags_of(chunks):
            return enc.chunks_to_tags(sorted(chunks, key=lambda c: c[1]), lattice.n,
                                      lattice.scheme)
        while True:
            flat = [c for t in types for c in chosen[t]]
            clash = {c for c in flat for d in flat
                     if c != d and c[1] < d[2] and d[1] < c[2]}         # spans [s, e)
            if not clash:
                break
            costs = []
            for c in clash:                      # the utility lost by removing c
                rest = [d for d in chosen[c[0]] if d != c]
                v = TypeF(c[0]).expected(lattice, hypothesis=tags_of(rest), beta=beta)
                costs.append((value[c[0]] - v, c, rest, v))
            _, c, rest, v = min(costs, key=lambda z: (z[0], z[1]))
            chosen[c[0]], value[c[0]] = rest, v
        score = float(np.mean([value[t] for t in types]))
        tags = tags_of([c for t in types for c in chosen[t]])
        return Decoding(list(tags), score, max(0.0, bound - score))


_SHIPPED = {"conlleval": Conlleval, "strict": Conlleval, "exact": ExactBoundaries,
            "partial": PartialMatch, "type": TypeMatch, "macro": MacroF, "near": near}


def utility(spec: "str | Utility") -> Utility:
    """The utility named ``spec`` (``conlleval`` or its alias ``strict``, ``exact``,
    ``partial``, ``type`` (SemEval's modes), ``macro``, ``type:T`` (one type's F),
    ``weighted:T=w,...``, ``near``), or
    ``spec`` itself if it is a :class:`Utility`.

    Args:
        spec: a name of :data:`NAMES` or a :class:`Utility`.

    Returns:
        The :class:`Utility`.

    Raises:
        InputError: an unknown name.

    Examples:
        >>> import fstchunk
        >>> fstchunk.utility("type:PER")
        Utility('type:PER')
    """
    if isinstance(spec, Utility):
        return spec
    if isinstance(spec, str) and spec in _SHIPPED:
        return _SHIPPED[spec]()
    if isinstance(spec, str) and spec.startswith("type:") and spec[5:].strip():
        return TypeF(spec[5:].strip())
    if isinstance(spec, str) and spec.startswith("weighted:"):
        return WeightedF(parse_weights(spec[9:]))
    raise InputError(f"unknown utility {spec!r}; use one of conlleval, exact, partial, "
                     f"type, macro, type:TYPE (e.g. type:PER), weighted:TYPE=W,... (e.g. "
                     f"weighted:LOC=2), near, strict (= conlleval) or a fstchunk.Utility",
                     cli=f"--utility {spec}: unknown utility; use one of conlleval, exact, "
                         f"partial, type, macro, type:TYPE (e.g. type:PER), weighted:TYPE=W,... "
                         f"(e.g. weighted:LOC=2), near, strict (= conlleval)")


def expected_utility(lattice: Lattice, hypothesis: Sequence[str] | None = None,
                     reference: Sequence[str] | None = None, utility: "str | Utility" =
                     "conlleval", beta: float = 1.0, method: str = "fast") -> float:
    """E[u(h, y)] for a fixed hypothesis h and y ~ the lattice (or E[u(y, r)] for a fixed
    reference r), u a utility of :func:`utility`.

    Args:
        lattice: the model's distribution over one sentence's tag sequences.
        hypothesis: the decision scored (give this or ``reference``).
        reference: the tags taken as gold, the lattice's y the decision.
        utility: a name (``conlleval``, ``exact``, ``macro``, ``type:T``) or a
            :class:`Utility`.
        beta: β of F_β.
        method: ``"fast"`` (the engine) or ``"fst"`` (composition with T⊠M).

    Returns:
        The expected utility, in [0, 1].

    Raises:
        InputError: an unknown utility, a type the lattice lacks, both or neither of
            ``hypothesis`` and ``reference``, a sequence of the wrong length.
        SchemeError: an invalid sequence.

    Examples:
        >>> import numpy as np, fstchunk
        >>> tags = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
        >>> lat = fstchunk.Lattice.from_scores(tags, np.zeros((2, 5)), np.zeros((5, 5)))
        >>> round(fstchunk.expected_utility(lat, ["B-PER", "O"], utility="type:PER"), 4)
        0.2424
    """
    return _resolve(utility).expected(lattice, hypothesis, reference, beta, method)


_resolve = utility          # the function, where a parameter takes its name
