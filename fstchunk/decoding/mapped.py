"""The utility object: F_β of chunkings seen through a map U of chunk types.

u_U(x, y) = F_β(U(x) | U(y)) with U a functional transducer rewriting both tag
sequences (:func:`fstchunk.grammars.conversion.type_map`: chunk types renamed,
merged, erased or dropped), so E_y[u_U(x, y)] = E_{y' ~ U_*p}[F_β(U(x) | y')]: the
expectation and the exact MEU decision are those of the pushed lattice U_*p
(:mod:`fstchunk.structures.pushforward`).  :class:`Utility` is the base every
utility of :mod:`fstchunk.decoding.utilities` (the shipped ones, by name) shares:
calling it, its expectation under a lattice and its MEU decision.

Each sentence is scored on its own, with 0/0 := 1.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..core.errors import InputError
from ..core.fbeta import to_beta_sq
from ..engine.meu import refuse_unwritable_empty
from ..grammars.conversion import mapped_types, type_map
from ..schemes import encodings as enc
from ..structures.decision import Decoding
from ..structures.lattice import Lattice
from ..structures.pushforward import pushforward
from .expected import expected_f

TypeMap = Mapping[str, "str | None"]


def f_of_chunks(x: set, y: set, beta_sq: float) -> float:
    """F_β = (1+β²)·|x ∩ y| / (|x| + β²|y|), 0/0 := 1 (β² = ``beta_sq``; at β = 0 an
    empty x scores 1, as :func:`fstchunk.expected_f` counts it)."""
    den = len(x) + beta_sq * len(y)
    return 1.0 if den == 0 else (1 + beta_sq) * len(x & y) / den


class Utility:
    """F_β after a map U of chunk types (module doc): ``mapping`` gives a type its new
    name, ``""`` (untyped) or None (dropped); a type it leaves out keeps its name.
    Call it on two tag sequences for u(x, y); :meth:`expected` gives E_y[u(x, y)]
    under a lattice, :meth:`decode` the MEU decision.  Picklable (decoders travel to
    worker processes); a map that depends on the lattice's types overrides
    :meth:`type_map`.

    Args:
        name: what messages and ``settings`` call it.
        mapping: {type: new name, ``""`` or None}.

    Examples:
        >>> import fstchunk
        >>> u = fstchunk.Utility("loc", {"GPE": "LOC"})
        >>> u(["B-GPE", "O"], ["B-LOC", "O"], "IOB2", types=("GPE", "LOC"))
        1.0
    """

    def __init__(self, name: str, mapping: TypeMap | None = None):
        self.name, self.mapping = name, dict(mapping or {})

    def __repr__(self) -> str:
        return f"Utility({self.name!r})"

    def type_map(self, types: tuple[str, ...]) -> TypeMap:
        """The map for a lattice over ``types`` (the fixed ``mapping`` here)."""
        return self.mapping

    def check(self, space) -> None:
        """InputError (SchemeError for a space without chunks) where this utility
        cannot score the lattices of a tag space (``Lattice.space``): a type it names
        that the space lacks, a map that drops every type."""
        space.require_chunks(f"the {self.name} utility")
        self._map(space.types)

    def _map(self, types: Sequence[str]) -> dict[str, str | None]:
        m = dict(self.type_map(tuple(types)))
        mapped_types(types, m)                  # checked: known types, names, not all dropped
        return m

    def image(self, tags: Sequence[str], scheme: str, types: Sequence[str]) -> set:
        """U of a tag sequence, as its set of chunks (new type, start, end)."""
        m = self._map(types)
        out = set()
        for t, s, e in enc.tags_to_chunks(list(tags), scheme):
            new = m.get(t, t)
            if new is not None:
                out.add((new, s, e))
        return out

    def __call__(self, x: Sequence[str], y: Sequence[str], scheme: str,
                 types: Sequence[str], beta: float = 1.0) -> float:
        """u(x, y) = F_β(U(x) | U(y)) of two fixed tag sequences (``types``: the types
        the map is read for)."""
        return f_of_chunks(self.image(x, scheme, types), self.image(y, scheme, types),
                           to_beta_sq(beta))

    def pushed(self, lattice: Lattice) -> Lattice:
        """U_*p: the lattice's distribution seen through U (a lattice over IOBES tags)."""
        lattice.space.require_chunks(f"the {self.name} utility")
        types = lattice.space.types
        m = self._map(types)
        return pushforward(lattice, type_map(lattice.scheme, types, m), mapped_types(types, m))

    def expected(self, lattice: Lattice, hypothesis: Sequence[str] | None = None,
                 reference: Sequence[str] | None = None, beta: float = 1.0,
                 method: str = "fast") -> float:
        """E[u] of a fixed ``hypothesis`` against y ~ the lattice (or of y against a
        fixed ``reference``: one of the two), by the pushed lattice's engine
        (``"fast"``) or composition with T⊠M (``"fst"``)."""
        what, fixed = _one_side(hypothesis, reference)
        lattice.check_chunking(list(fixed), what)
        pushed = self.pushed(lattice)
        chunks = sorted(self.image(fixed, lattice.scheme, lattice.space.types),
                        key=lambda c: c[1])
        image = enc.chunks_to_tags(chunks, lattice.n, "IOBES")
        return float(expected_f(pushed, beta=beta, method=method, **{what: image}).f)

    def decode(self, lattice: Lattice, beta: float = 1.0,
               memory_budget: float | None = None) -> Decoding:
        """The MEU decision for u: the pushed lattice's exact MEU chunking, each chunk
        written back with the most probable of the types U maps to its type (any of
        them earns the same utility), in the lattice's scheme; ``score`` E[u], ``gap``
        the certificate."""
        refuse_unwritable_empty(lattice.space, to_beta_sq(beta))
        pushed = self.pushed(lattice)
        best = pushed.meu(beta, memory_budget)
        m = self._map(lattice.space.types)
        types = lattice.space.types
        cm = lattice.chunk_marginals()                  # [type, s, e]
        chunks = []
        for new, s, e in enc.tags_to_chunks(list(best.tags), "IOBES"):
            pre = [i for i, t in enumerate(types) if m.get(t, t) == new]
            chunks.append((types[max(pre, key=lambda i: cm[i, s, e])], s, e))
        tags = enc.chunks_to_tags(chunks, lattice.n, lattice.scheme)
        return Decoding(list(tags), float(best.score), float(best.gap))


def _one_side(hypothesis, reference) -> tuple[str, Sequence[str]]:
    if (hypothesis is None) == (reference is None):
        raise InputError("give exactly one of hypothesis= (decoding) or reference= (training)")
    return ("hypothesis", hypothesis) if hypothesis is not None else ("reference", reference)
