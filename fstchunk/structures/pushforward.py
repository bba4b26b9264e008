"""The model's distribution seen through a map of chunkings: a lattice again.

For a functional transducer U from the lattice's tags to IOBES tags over new types
(:func:`fstchunk.grammars.conversion.type_map`: types renamed, merged, erased or
dropped), the output projection of Q ∘ U is a weighted acceptor whose paths hold

    Pr(y' ) = Σ_{y : U(y) = y'} Pr(y)

the pushforward U_*p of the lattice's distribution p.  It is a :class:`Lattice` from a
machine (several paths of Q may give one y'; every query sums them), so whatever a
lattice answers — expected F_β, exact MEU with its certificate, marginals, sampling —
it answers for U(y) (:mod:`fstchunk.decoding.utilities`).

Pitfall: U must accept every valid sequence of the lattice's scheme (type maps do:
their domain is the valid sequences); a path of Q that U rejects would vanish and the
pushed weights would no longer sum to Z.
"""

from __future__ import annotations

from typing import Sequence

import pynini

from ..grammars import fsa
from ..schemes import encodings as enc
from ..schemes.tagspace import symbol_table
from .lattice import Lattice


def pushforward(lattice: Lattice, u: pynini.Fst, types: Sequence[str]) -> Lattice:
    """U_*p as a lattice over IOBES tags of ``types`` (module doc); ``u``'s input
    symbols are the lattice's tags."""
    q = lattice.fst.copy()
    q.set_input_symbols(u.input_symbols())
    q.set_output_symbols(u.input_symbols())
    out = pynini.compose(fsa.bare(q).arcsort("olabel"), fsa.bare(u).arcsort("ilabel"))
    out.project("output").rmepsilon().connect()
    table = symbol_table(tuple(types))
    out.set_input_symbols(table)
    out.set_output_symbols(table)
    return Lattice.from_fst(out, enc.scheme_tags("IOBES", tuple(types)), "IOBES")
