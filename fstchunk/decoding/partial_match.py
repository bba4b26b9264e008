"""The partial-match utility: SemEval-2013's ``partial`` mode (nervaluate) as F_β.

Each predicted chunk, in order, takes the first gold chunk not yet taken that
overlaps it: 1 credit when that chunk has its boundaries (any type), ½ otherwise,
0 with none.  With credit = COR + ½·PAR,

    u(x, y) = (1+β²)·credit(x, y) / (m(x) + β²·m(y)),   0/0 := 1

(x the decision, y the reference; β = 1 is nervaluate's partial F1 of one sentence).
The matching is the partial-credit counter P of :mod:`fstchunk.grammars.partial`, a
machine over aligned tag pairs; its expectation under a lattice is exact, by
composing P⊠M with the lattice (``method="fst"``) or by the recursion of
:mod:`fstchunk.engine.partial` (``"fast"``), in both directions.  The MEU decision
(:func:`fstchunk.engine.partial.partial_meu`) comes with a certificate: an upper
bound that is a sum over chunks, searched by the interval DP; the gap is 0 when the
bound's best decision takes no gold chunk twice.

Pitfall: any shared token counts as overlap; nervaluate asks for 1% of the gold
chunk's tokens, which differs only for gold chunks over 100 tokens.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.errors import InputError
from ..core.fbeta import to_beta_sq
from ..engine.expectation import from_count_table
from ..engine.meu import DEFAULT_MEMORY_BUDGET
from ..engine.partial import expected_partial_f, partial_meu
from ..grammars.partial import specialised_partial_acceptor
from ..schemes.matching import partial_step, walk
from ..schemes import encodings as enc
from ..structures.decision import Decoding
from .expected import joint_by_composition
from .mapped import Utility, _one_side


def partial_credit(x: Sequence[enc.Chunk], y: Sequence[enc.Chunk], n: int) -> float:
    """COR + ½·PAR of prediction chunks ``x`` against gold chunks ``y`` (module doc),
    by running P over the aligned IOBES pairs of the two."""
    return walk(partial_step, x, y, n) / 2


class MatchUtility(Utility):
    """F_β of a SemEval-2013 matching's credit in place of tp (``partial`` here,
    ``type`` in :mod:`fstchunk.decoding.type_match`): the call on two sequences and
    the expectation's checks; a mode gives :meth:`credit` and :meth:`expected_of`."""

    def credit(self, x, y, n: int) -> float:
        """The credit of prediction chunks ``x`` against gold chunks ``y``."""
        raise NotImplementedError

    def expected_of(self, lattice, chunks, beta_sq: float, what: str, method: str) -> float:
        """E[u] with ``what`` ("hypothesis" or "reference") fixed to ``chunks``."""
        raise NotImplementedError

    def __call__(self, x, y, scheme, types=(), beta=1.0):
        if len(x) != len(y):
            raise InputError(f"the two sequences differ in length: {len(x)} and {len(y)}")
        cx, cy = enc.tags_to_chunks(list(x), scheme), enc.tags_to_chunks(list(y), scheme)
        w = to_beta_sq(beta)
        den = len(cx) + w * len(cy)                      # 0/0 := 1 (β = 0: an empty x)
        return 1.0 if den == 0 else (1 + w) * self.credit(cx, cy, len(x)) / den

    def pushed(self, lattice):
        raise InputError(f"the {self.name} utility matches overlapping chunks: it is not "
                         f"F after a map of chunkings and has no pushed lattice")

    def expected(self, lattice, hypothesis=None, reference=None, beta=1.0, method="fast"):
        what, fixed = _one_side(hypothesis, reference)
        lattice.space.require_chunks(f"the {self.name} utility")
        chunks = lattice.check_chunking(list(fixed), what)
        if method not in ("fast", "fst"):
            raise InputError(f"unknown method {method!r}; use 'fst' or 'fast'")
        return self.expected_of(lattice, chunks, to_beta_sq(beta), what, method)


class PartialMatch(MatchUtility):
    """``partial``: F_β of SemEval-2013's partial-match credit (module doc)."""

    def __init__(self):
        super().__init__("partial")

    def credit(self, x, y, n: int) -> float:
        return partial_credit(x, y, n)

    def expected_of(self, lattice, chunks, beta_sq, what, method):
        if method == "fast":
            return float(expected_partial_f(lattice, chunks, beta_sq, what))
        joint = joint_by_composition(lattice, chunks, specialised_partial_acceptor(
            chunks, lattice.n, lattice.space.types, what), 2 * lattice.n, growth=12,
            counter="the partial-credit counter P⊠M")
        Z, H = joint.sum(axis=0), np.arange(joint.shape[0]) @ joint / 2
        return float(from_count_table(Z, H, len(chunks), beta_sq, "decoding" if what ==
                                      "hypothesis" else "training").f)

    def decode(self, lattice, beta=1.0, memory_budget=None):
        """The MEU decision, each span given its most probable type (any type earns
        the same credit); ``score`` E[u], ``gap`` the certificate."""
        lattice.space.require_chunks("the partial utility")
        r = partial_meu(lattice, to_beta_sq(beta), DEFAULT_MEMORY_BUDGET
                        if memory_budget is None else memory_budget)
        cm = lattice.chunk_marginals()                  # [type, s, e]
        types = lattice.space.types
        chunks = [(types[int(np.argmax(cm[:, s, e]))], s, e) for _, s, e in r.chunks]
        tags = enc.chunks_to_tags(chunks, lattice.n, lattice.scheme)
        return Decoding(list(tags), float(r.value), float(r.gap))
