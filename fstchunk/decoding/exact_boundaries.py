"""The exact-boundary utility: F_β where a chunk is correct when the other side has a
chunk with its boundaries, whatever the types (SemEval-2013's ``exact`` mode,
:mod:`fstchunk.evaluation.modes`), as an expectation under the model and an MEU decoder.

The machine: the lattice's distribution pushed through the type eraser U = C ∘ S
(:func:`~fstchunk.grammars.conversion.type_eraser`; ``fstchunk grammar print
type-eraser``), C the conversion of the lattice's scheme to IOBES and S the map
B-X → B, I-X → I, E-X → E, S-X → S; the output projection of Q ∘ U
is a weighted acceptor over untyped IOBES tags whose paths hold the probability of
each untyped chunking (:func:`untyped_lattice`, a :class:`Lattice` from a machine;
several typed paths per untyped sequence, summed by every query).  Conlleval's
expected F of an untyped hypothesis under it is the exact-boundary expected F
(:func:`expected_exact_f`, by composition with T⊠M or by the lattice's engine).

The fast twin runs the tp/count sweep of the typed lattice with the type test off: a
y chunk matches a fixed chunk that starts and ends with it (``typed=False`` of
:func:`fstchunk.engine.inference.tp_count_tables`).

MEU (:func:`decode_meu_exact`): the exact MEU decision of the untyped lattice (its
spans are the utility's whole concern), each span then given its most probable type
Pr((t, s, e) ∈ y) — any type earns the same utility, so the decision stays exact — and
written in the lattice's scheme.

Pitfall: IOB1 and IOE1 mark a boundary between two chunks by a type change alone, so
their tags cannot simply lose their types: the conversion to IOBES comes first.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.errors import InputError
from ..core.fbeta import to_beta_sq
from ..engine.meu import refuse_unwritable_empty
from ..engine import inference
from ..engine.expectation import ExpectedF, from_count_table
from ..grammars.conversion import type_eraser
from ..schemes import encodings as enc
from ..structures.lattice import Decoding, Lattice
from ..structures.pushforward import pushforward
from .expected import expected_f

#: the untyped IOBES tags of the erased lattice
UNTYPED = enc.scheme_tags("IOBES")


def untyped_lattice(lattice: Lattice) -> Lattice:
    """The distribution over untyped IOBES chunkings (module doc), a lattice from the
    machine Q ∘ U projected on its output (:func:`~fstchunk.structures.pushforward.pushforward`)."""
    lattice.space.require_chunks("the exact-boundary utility")
    return pushforward(lattice, type_eraser(lattice.scheme, lattice.space.types), ("",))


def _untyped_tags(tags: Sequence[str], scheme: str, n: int) -> list[str]:
    """The untyped IOBES tags of a sequence's chunks."""
    return enc.chunks_to_tags([("", s, e) for _, s, e in enc.tags_to_chunks(list(tags), scheme)],
                              n, "IOBES")


def expected_exact_f(lattice: Lattice, hypothesis: Sequence[str] | None = None,
                     reference: Sequence[str] | None = None, beta: float = 1.0,
                     method: str = "fast") -> ExpectedF:
    """E[F_β] of the exact-boundary utility: of a fixed ``hypothesis`` against y ~ the
    lattice, or of y against a fixed ``reference`` (one of the two); ``method``
    ``"fast"`` (the untyped sweep on a dense chain, else the erased lattice's engine)
    or ``"fst"`` (composition with T⊠M on the erased lattice)."""
    if (hypothesis is None) == (reference is None):
        raise InputError("give exactly one of hypothesis= (decoding) or reference= (training)")
    fixed = hypothesis if hypothesis is not None else reference
    what = "hypothesis" if hypothesis is not None else "reference"
    chunks = lattice.check_chunking(list(fixed), what)
    if method not in ("fast", "fst"):
        raise InputError(f"unknown method {method!r}; use 'fst' or 'fast'")
    if method == "fast" and lattice.scores is not None:
        batch = lattice.batch()
        Z, T = inference.tp_count_tables(inference.transfer_of(batch), batch,
                                         [[(0, s, e) for _, s, e in chunks]], typed=False)
        direction = "decoding" if hypothesis is not None else "training"
        return from_count_table(Z[0], T[0], len(chunks), to_beta_sq(beta), direction)
    plain = _untyped_tags(fixed, lattice.scheme, lattice.n)
    return expected_f(untyped_lattice(lattice), beta=beta, method=method, **{what: plain})


def decode_meu_exact(lattice: Lattice, beta: float = 1.0) -> Decoding:
    """The exact MEU decision for the exact-boundary F_β (module doc), in the lattice's
    scheme; its ``score`` is the decision's expected exact-boundary F_β and ``gap`` the
    certificate of the untyped decision."""
    refuse_unwritable_empty(lattice.space, to_beta_sq(beta))
    plain = untyped_lattice(lattice).meu(beta)
    spans = [(s, e) for _, s, e in enc.tags_to_chunks(list(plain.tags), "IOBES")]
    cm = lattice.chunk_marginals()                       # [type, s, e]
    types = lattice.space.types
    chunks = [(types[int(np.argmax(cm[:, s, e]))], s, e) for s, e in spans]
    tags = enc.chunks_to_tags(chunks, lattice.n, lattice.scheme)
    value = expected_exact_f(lattice, hypothesis=tags, beta=beta).f
    return Decoding(list(tags), float(value), plain.gap)
