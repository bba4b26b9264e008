"""A utility from a transducer of one's own: u(x, y) = F_β(U(x) | U(y)) for any
functional transducer U from the lattice's tags to IOBES tags.

:class:`~fstchunk.decoding.utilities.Utility` takes a map of chunk types; here U is
any pynini transducer the user builds for a scheme and a type list, so a utility can
also look at chunk lengths or contexts.  For instance, "only single-token entities
count": the conversion to IOBES, then S-X kept and B, I, E to O::

    def singles(scheme, types):
        conv = conversion_transducer(scheme, "IOBES", types)
        table = symbol_table(types)
        keep = pynini.Fst(conv.arc_type()); q = keep.add_state()
        keep.set_start(q); keep.set_final(q)
        for tag in scheme_tags("IOBES", types):
            out = tag if tag.startswith("S-") or tag == "O" else "O"
            keep.add_arc(q, pynini.Arc(table.find(tag), table.find(out),
                                       pynini.Weight.one(keep.weight_type()), q))
        return pynini.compose(conv, keep), types

    u = MachineUtility("singles", singles)

The builder returns (U, the output's types); U reads the lattice's tags with
:func:`fstchunk.schemes.tagspace.symbol_table` of ``types`` and writes IOBES tags of
the output's types with that function's table.  Expectations and MEU are the pushed
lattice's (:mod:`fstchunk.structures.pushforward`); the MEU decision y' is written back
as the most probable sequence x with U(x) = y' (the lattice ∘ U ∘ y', its best path).

Pitfalls: U must be functional and accept every valid sequence (a sequence it
rejects or maps twice is one InputError naming it); the builder runs once per
lattice, so cache it if it is slow; decoders travel to worker processes pickled, so a
builder used there must be a module-level function, not a lambda.
"""

from __future__ import annotations

from typing import Callable, Sequence

import pynini

from ..core.errors import InputError
from ..grammars import fsa
from ..schemes import encodings as enc
from ..schemes.tagspace import symbol_table
from ..structures.decision import Decoding
from ..structures.lattice import Lattice
from ..structures.pushforward import pushforward
from .utilities import Utility

#: (scheme, types) -> (U, the types U writes)
Builder = Callable[[str, tuple], "tuple[pynini.Fst, Sequence[str]]"]


class MachineUtility(Utility):
    """F_β after a transducer U of one's own (module doc).

    Args:
        name: what messages call it.
        build: (scheme, types) -> (U, output types).
    """

    def __init__(self, name: str, build: Builder):
        super().__init__(name)
        self.build = build

    def _machine(self, scheme: str, types: Sequence[str]) -> tuple[pynini.Fst, tuple]:
        u, out = self.build(scheme, tuple(types))
        if not isinstance(u, pynini.Fst):
            raise InputError(f"utility {self.name}: the builder returned {type(u).__name__}, "
                             f"not (a pynini.Fst, its output types)")
        return u, tuple(out)

    def image(self, tags, scheme, types) -> set:
        """U of a tag sequence, as its chunks (type, start, end)."""
        u, out = self._machine(scheme, types)
        return set(enc.tags_to_chunks(self._apply(u, list(tags), types, out), "IOBES"))

    def _apply(self, u: pynini.Fst, tags: list, types, out) -> list[str]:
        src, dst = symbol_table(tuple(types)), symbol_table(out)
        acc = pynini.accep(" ".join(tags), token_type=src)
        res = pynini.compose(fsa.to_arc_type(acc, u.arc_type()), fsa.bare(u).arcsort("ilabel")
                             if u.input_symbols() is None else u.copy().arcsort("ilabel"))
        res.project("output").rmepsilon()
        res.set_input_symbols(dst)
        res.set_output_symbols(dst)
        outs = {tuple(p.split()) for p in res.paths(output_token_type=dst).ostrings()}
        if len(outs) != 1:
            raise InputError(f"utility {self.name}: U maps {' '.join(tags)} to "
                             f"{len(outs)} sequences; it must map every valid sequence to "
                             f"exactly one")
        return list(next(iter(outs)))

    def pushed(self, lattice: Lattice) -> Lattice:
        lattice.space.require_chunks(f"the {self.name} utility")
        u, out = self._machine(lattice.scheme, lattice.space.types)
        return pushforward(lattice, u, out)

    def decode(self, lattice: Lattice, beta: float = 1.0,
               memory_budget: float | None = None) -> Decoding:
        """The pushed lattice's MEU decision y', written back as the most probable x with
        U(x) = y'; ``score`` E[u], ``gap`` the certificate."""
        u, out = self._machine(lattice.scheme, lattice.space.types)
        best = pushforward(lattice, u, out).meu(beta, memory_budget)
        target = pynini.accep(" ".join(best.tags), token_type=symbol_table(out))
        pre = pynini.compose(fsa.bare(u).arcsort("olabel"),
                             fsa.bare(fsa.to_arc_type(target, u.arc_type())))
        pre.project("input").rmepsilon()
        q = lattice.fst.copy()
        both = pynini.compose(fsa.bare(fsa.to_arc_type(q, u.arc_type())).arcsort("olabel"),
                              pre.arcsort("ilabel")).connect()
        if both.num_states() == 0:
            raise InputError(f"utility {self.name}: no sequence of the lattice maps to the "
                             f"decision {' '.join(best.tags)}")
        fsa.attach(both, symbol_table(lattice.space.types))
        x = Lattice.from_fst(fsa.to_arc_type(both, lattice.fst.arc_type()), lattice.tags,
                             lattice.scheme).map().tags
        return Decoding(list(x), float(best.score), float(best.gap))
