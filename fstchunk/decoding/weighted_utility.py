"""Per-type weighted F_β: a chunk of type t counts w(t) times, in the true positives
and in both chunk counts (``weighted:LOC=2``: a location counts double).

    u(x, y) = (1+β²)·Σ_{c ∈ x ∩ y} w(c) / (Σ_{c ∈ x} w(c) + β²·Σ_{c ∈ y} w(c)),  0/0 := 1

with integer weights w(t) ≥ 1 (a type left out weighs 1; to drop a type, use a type
map, :class:`fstchunk.Utility`).  The machine is T⊠M with T's matches and M's chunks
counting their type's weight (:func:`fstchunk.grammars.counting.weighted_tp_step`,
``chunk_counter_acceptor(weights=)``); composed with the lattice it gives the expected
value, and the chunk marginals by weighted count (:mod:`fstchunk.engine.weighted`)
give the same value and the exact MEU decision (no gap): for a fixed weighted count
K of the decision the utility is a sum over its chunks.

Pitfall: the count tables grow with the largest weight (O(T·n³·w_max) memory): keep
weights small integers.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..core.errors import InputError
from ..core.fbeta import to_beta_sq
from ..engine.expectation import from_count_table
from ..engine.meu import DEFAULT_MEMORY_BUDGET
from ..engine.weighted import weight_array, weighted_expected_f, weighted_marginals, weighted_meu
from ..grammars.counting import specialised_pair_acceptor, weighted_tp_step
from ..schemes import encodings as enc
from ..structures.decision import Decoding
from .expected import joint_by_composition
from .mapped import Utility, _one_side


class WeightedF(Utility):
    """``weighted:T=w,...``: F_β with a chunk of type T counting w (module doc).

    Examples:
        >>> import fstchunk
        >>> u = fstchunk.utility("weighted:LOC=2")
        >>> u(["B-LOC", "O", "B-PER"], ["B-LOC", "O", "O"], "IOB2")   # 2·2/(3 + 2)
        0.8
    """

    def __init__(self, weights: Mapping[str, int]):
        bad = [t for t, w in weights.items()
               if not isinstance(w, (int, np.integer)) or isinstance(w, bool) or w < 1]
        if bad or not weights:
            raise InputError(f"weighted F needs whole weights >= 1 per type, got "
                             f"{dict(weights)!r}")
        self.weights = {str(t): int(w) for t, w in weights.items()}
        super().__init__("weighted:" + ",".join(f"{t}={w}" for t, w in self.weights.items()))

    def _w(self, t: str) -> int:
        return self.weights.get(t, 1)

    def check(self, space) -> None:
        self._array(space)

    def _array(self, space) -> np.ndarray:
        """The weight of each of the space's types (checked)."""
        space.require_chunks(f"the {self.name} utility")
        return weight_array(self.weights, space.types, f"utility {self.name}")

    def _check(self, lattice):
        return self._array(lattice.space)

    def __call__(self, x, y, scheme, types=(), beta=1.0):
        if len(x) != len(y):
            raise InputError(f"the two sequences differ in length: {len(x)} and {len(y)}")
        cx, cy = set(enc.tags_to_chunks(list(x), scheme)), set(enc.tags_to_chunks(list(y), scheme))
        w = to_beta_sq(beta)
        den = sum(self._w(c[0]) for c in cx) + w * sum(self._w(c[0]) for c in cy)
        tp = sum(self._w(c[0]) for c in cx & cy)
        return 1.0 if den == 0 else (1 + w) * tp / den          # 0/0 := 1

    def pushed(self, lattice):
        raise InputError("weighted F counts chunks by type: it is not F after a map of "
                         "chunkings and has no pushed lattice")

    def expected(self, lattice, hypothesis=None, reference=None, beta=1.0, method="fast"):
        what, fixed = _one_side(hypothesis, reference)
        weights = self._check(lattice)
        chunks = lattice.check_chunking(list(fixed), what)
        types = lattice.space.types
        b2 = to_beta_sq(beta)
        if method == "fast":
            P, pm = weighted_marginals(lattice, weights)
            return weighted_expected_f(P, pm, [(types.index(t) if t in types else -1, s, e)
                                               for t, s, e in chunks], weights, b2, what)
        if method != "fst":
            raise InputError(f"unknown method {method!r}; use 'fst' or 'fast'")
        top = int(weights.max()) * lattice.n
        acceptor = specialised_pair_acceptor(chunks, lattice.n, types,
                                             step=weighted_tp_step(self.weights),
                                             credit_bound=top, weights=self.weights)
        joint = joint_by_composition(lattice, chunks, acceptor, top,
                                     growth=int(weights.max()) ** 2,
                                     counter="the weighted T⊠M")
        Z, T = joint.sum(axis=0), np.arange(joint.shape[0]) @ joint
        fixed_count = sum(self._w(t) for t, _, _ in chunks)
        return float(from_count_table(Z, T, fixed_count, b2, "decoding" if what ==
                                      "hypothesis" else "training").f)

    def decode(self, lattice, beta=1.0, memory_budget=None):
        """The exact MEU decision (``gap`` 0.0), in the lattice's scheme."""
        weights = self._check(lattice)
        r = weighted_meu(lattice, weights, to_beta_sq(beta), DEFAULT_MEMORY_BUDGET
                         if memory_budget is None else memory_budget)
        types = lattice.space.types
        tags = enc.chunks_to_tags([(types[t], s, e) for t, s, e in r.chunks], lattice.n,
                                  lattice.scheme)
        return Decoding(list(tags), float(r.value), float(r.gap))
