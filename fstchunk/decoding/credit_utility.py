"""A utility from a credit counter of one's own: F_β with the true positives replaced
by the credits a pynini transducer C gives a decision x against a reference y,

    u(x, y) = (1+β²)·(h(x, y) / unit) / (m(x) + β²·m(y)),    0/0 := 1,

h the credits C writes, ``unit`` credits to a point (2: half points).  C reads aligned
IOBES pairs x_i:y_i with the symbols of
:func:`fstchunk.grammars.counting.marker_symbols` and ends every path with one
marker ``<tp=h>``: the form of T (conlleval's tp) and of P (SemEval's partial credit).
:func:`fstchunk.grammars.counting.credit_transducer` builds one from a step over
(prefix, type) pairs, in a few lines for "the span alone earns half a point, the span
and the type a whole one" (docs/howto/utilities.md); "a boundary off by one token
earns half" is shipped (:func:`near_boundaries`, the step
:func:`fstchunk.schemes.near_match.near_step`)::

    u = CreditUtility("near", near_boundaries, unit=2, step=near_step)
    u.expected(lattice, hypothesis=tags)

The expected value composes C, specialised to the fixed side (the fixed sequence's
acceptor composed with C, the other tape kept), with the chunk counter M of the
other side and the lattice (:func:`fstchunk.decoding.expected.joint_by_composition`):
the exact law of (h, m), so E[u] exactly, in either direction.  Given the ``step`` C
is built from, ``method="fast"`` runs that step as a recursion on the lattice instead
(:mod:`fstchunk.engine.stepped`: no machine built, the same numbers; the step is
checked against C on short pairs first, :meth:`CreditUtility.check_step`).  MEU reranks the k
best paths and the conlleval MEU decision by that exact E[u]: no certificate
(``gap`` inf), as ``meu-kbest``.

Pitfalls: C must give every pair of valid sequences exactly one path (a pair it
rejects or counts twice is refused, InputError naming the mass it lost); composition
costs O(n³) states per sentence and more with C's states (the state budget bounds
it: ``fstchunk.grammars.budget``); decoders travel to worker processes pickled, so
``build`` must be a module-level function, not a lambda.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pynini

from ..core.errors import InputError
from ..core.fbeta import to_beta_sq
from ..engine.certified import span_search
from ..engine.counting import chunk_count_marginals
from ..engine.expectation import from_count_table
from ..engine.meu import DEFAULT_MEMORY_BUDGET
from ..engine.stepped import step_count_table
from ..grammars import budget, counting, fsa
from ..schemes import encodings as enc
from ..schemes.matching import walk
from ..schemes.near_match import near_step
from ..structures.decision import Decoding
from ..structures.lattice import Lattice
from .decode import _shortest
from .expected import joint_by_composition
from .mapped import Utility, _one_side

#: (types, top) -> C, a credit counter over IOBES pairs writing <tp=h>, h ≤ top
Builder = Callable[[tuple, int], pynini.Fst]

#: the paths MEU reranks (with the conlleval MEU decision)
K = 20

#: how far the law of (h, m) may fall short of mass 1 before C is said to reject pairs
MASS_SLACK = 1e-9

#: a ``step`` is checked against C on every pair of chunkings of up to this many tokens
#: over C's first two types, and on CHECK_PAIRS random pairs of up to 6 tokens over all
CHECK_TOKENS, CHECK_PAIRS = 3, 400


class CreditUtility(Utility):
    """F_β with h(x, y)/unit in place of tp, h from a credit counter C (module doc).

    Args:
        name: what messages call it.
        build: (types, top) -> C over IOBES pairs of ``types`` with credits up to
            ``top``.
        unit: the credits of one point (a whole number ≥ 1).
        k: the paths MEU reranks.
        step: the step C is built from (``credit_transducer(types, top, states,
            step)``), if any: ``expected(method="fast")`` then runs it as a recursion,
            after :meth:`check_step`.  A module-level function, as ``build``.
        bound: lattice -> B[type, s, e, m] ≥ E-side credit of the chunk (t, s, e), in
            points, jointly with the reference's count m: Pr-weighted, so that
            Σ_{p ∈ x} B[p, m] ≥ E[h(x, y)/unit · 1{m(y) = m}] for every decision x (as
            :func:`near_bound`); MEU is then certified.
    """

    def __init__(self, name: str, build: Builder, unit: int = 1, k: int = K,
                 step: Callable | None = None, bound: Callable | None = None):
        if isinstance(unit, bool) or not isinstance(unit, (int, np.integer)) or unit < 1:
            raise InputError(f"utility {name}: unit must be a whole number >= 1, got {unit!r}")
        super().__init__(name)
        self.build, self.unit, self.k, self.step, self.bound = build, int(unit), k, step, bound
        self._machines: dict = {}               # the last C built, by (types, top)
        self._checked: set = set()              # type sets the step agrees with C on

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_machines": {}}      # workers build their own

    def machine(self, types: Sequence[str], n: int) -> pynini.Fst:
        """C for ``types`` and sentences of up to ``n`` tokens (credits ≤ unit·n)."""
        key = (tuple(types), self.unit * n)
        if key not in self._machines:
            c = self.build(*key)
            if not isinstance(c, pynini.Fst):
                raise InputError(f"utility {self.name}: build returned {type(c).__name__}, "
                                 f"not a pynini.Fst")
            self._machines = {key: c}
        return self._machines[key]

    def _side(self, tags: list[str], types, n: int, what: str) -> pynini.Fst:
        """C with the ``what`` tape ("hypothesis": x, the input) fixed to ``tags``
        (IOBES): an acceptor over the other tape's tags followed by ``<tp=h>``."""
        c = fsa.bare(self.machine(types, n))
        table = counting.marker_symbols(tuple(types), self.unit * n)
        fixed = pynini.Fst(c.arc_type())
        one = pynini.Weight.one(fixed.weight_type())
        states = [fixed.add_state() for _ in range(len(tags) + 2)]
        fixed.set_start(states[0])
        fixed.set_final(states[-1])
        for i, t in enumerate(tags):
            fixed.add_arc(states[i], pynini.Arc(table.find(t), table.find(t), one,
                                                states[i + 1]))
        for h in range(self.unit * n + 1):
            fixed.add_arc(states[-2], pynini.Arc(counting.tp_marker(h), counting.tp_marker(h),
                                                 one, states[-1]))
        if what == "hypothesis":
            out = pynini.compose(fixed.arcsort("olabel"), c.arcsort("ilabel")).project("output")
        else:
            out = pynini.compose(c.arcsort("olabel"), fixed.arcsort("ilabel")).project("input")
        return out.rmepsilon().connect()

    def _specialised(self, chunks, n: int, types, what: str) -> pynini.Fst:
        """C on the fixed side ⊠ M on the other: tags · <tp=h> · <m=b>."""
        side = self._side(enc.chunks_to_tags(chunks, n, "IOBES"), types, n, what)
        ms = pynini.Fst(side.arc_type())
        one = pynini.Weight.one(ms.weight_type())
        a, b = ms.add_state(), ms.add_state()
        ms.set_start(a)
        ms.set_final(b)
        for m in range(self.unit * n + 1):
            ms.add_arc(a, pynini.Arc(counting.m_marker(m), counting.m_marker(m), one, b))
        m_acc = counting.chunk_counter_acceptor(tuple(types), self.unit * n, side.arc_type())
        return pynini.intersect((side + ms).arcsort(), m_acc.arcsort()).connect()

    def _law(self, lattice: Lattice, chunks, what: str) -> np.ndarray:
        """Pr(h = a, m_random = b) under the lattice, C's side ``what`` fixed to
        ``chunks``; InputError where C loses mass (a pair it rejects)."""
        lattice.space.require_chunks(f"the {self.name} utility")
        n, types = lattice.n, lattice.space.types
        acc = self._specialised(chunks, n, types, what)
        tm = budget.pair_acceptor(n, [(s, e) for _, s, e in chunks], len(types))
        joint = joint_by_composition(lattice, chunks, acceptor=acc, top=self.unit * n,
                                     growth=-(-acc.num_states() // max(1, tm.states)),
                                     counter=f"the {self.name} counter C⊠M")
        if abs(joint.sum() - 1) > MASS_SLACK:
            raise InputError(f"utility {self.name}: its credit counter gives the pairs of "
                             f"this lattice's sequences mass {joint.sum():.12g}, not 1: it "
                             f"rejects some pairs (or counts some twice)")
        return joint

    def __call__(self, x, y, scheme, types=(), beta=1.0):
        if len(x) != len(y):
            raise InputError(f"the two sequences differ in length: {len(x)} and {len(y)}")
        types = tuple(types) or tuple(sorted({c[0] for s in (x, y)
                                             for c in enc.tags_to_chunks(list(s), scheme)}))
        cx, cy = (enc.tags_to_chunks(list(s), scheme) for s in (x, y))
        side = self._side(enc.chunks_to_tags(cx, len(x), "IOBES"), types, len(x), "hypothesis")
        table = counting.marker_symbols(types, self.unit * len(x))
        ys = pynini.accep(" ".join(enc.chunks_to_tags(cy, len(y), "IOBES")), token_type=table)
        both = pynini.compose(_with_markers(ys, side, self.unit * len(x)).arcsort("olabel"),
                              side.arcsort("ilabel"))
        hits = [labels[-1] for labels, _, _ in fsa.paths(both.connect())]
        if len(hits) != 1:
            raise InputError(f"utility {self.name}: its credit counter gives this pair "
                             f"{len(hits)} paths, not 1")
        h = counting.decode_marker(hits[0])[1] / self.unit
        den = len(cx) + to_beta_sq(beta) * len(cy)
        return 1.0 if den == 0 else (1 + to_beta_sq(beta)) * h / den

    def check_step(self, types: Sequence[str]) -> None:
        """InputError unless ``step`` gives the credits C gives (module doc: the
        recursion trusts that C is built from it), on every pair of chunkings of up to
        :data:`CHECK_TOKENS` tokens over C's first two types and :data:`CHECK_PAIRS`
        random pairs of up to 6 over all of them; once per type set."""
        types = tuple(types)
        if self.step is None or types in self._checked:
            return
        c = self.build(types, self.unit * 6)
        table, arcs = counting.marker_symbols(types, self.unit * 6), {}
        rng = np.random.default_rng(0)
        pairs = [(x, y, n) for n in range(1, CHECK_TOKENS + 1)
                 for x in _chunkings(n, types[:2]) for y in _chunkings(n, types[:2])]
        for _ in range(CHECK_PAIRS):
            n = int(rng.integers(1, 7))
            pairs.append((_random_chunking(rng, n, types), _random_chunking(rng, n, types), n))
        for x, y, n in pairs:
            tx, ty = (enc.chunks_to_tags(z, n, "IOBES") for z in (x, y))
            got = _machine_credits(c, table, arcs, tx, ty)
            try:
                want = walk(self.step, x, y, n)
            except InputError:              # not at rest at the end
                want = None
            if got != [want]:
                said = "no count (it ends away from rest)" if want is None else f"{want} credits"
                raise InputError(
                    f"utility {self.name}: its step and its credit counter C disagree on "
                    f"the pair x = {' '.join(tx)}, y = {' '.join(ty)} (IOBES): the step "
                    f"gives {said}, C gives {got or 'no path'}; give the step C "
                    f"is built from, or none (then method 'fast' composes C)")
        self._checked.add(types)

    def pushed(self, lattice):
        raise InputError(f"utility {self.name} counts credits with its own machine, not a "
                         f"map of chunk types: it has no pushed lattice")

    def expected(self, lattice, hypothesis=None, reference=None, beta=1.0, method="fast"):
        """E[u] of a fixed ``hypothesis`` (or against a fixed ``reference``): by the
        step recursion for ``method="fast"`` where the utility has a ``step``, else by
        composition (``"fst"``; also ``"fast"`` without a step)."""
        if method not in ("fst", "fast"):
            raise InputError(f"unknown method {method!r}; use 'fst' or 'fast'")
        what, fixed = _one_side(hypothesis, reference)
        lattice.check_chunking(list(fixed), what)
        chunks = enc.tags_to_chunks(list(fixed), lattice.scheme)
        b2 = to_beta_sq(beta)
        if method == "fast" and self.step is not None:
            lattice.space.require_chunks(f"the {self.name} utility")
            self.check_step(lattice.space.types)
            Z, H = step_count_table(lattice, chunks, self.step, what)
            return float(from_count_table(Z, H / self.unit, len(chunks), b2, "decoding"
                                          if what == "hypothesis" else "training").f)
        joint = self._law(lattice, chunks, what)
        h = np.arange(joint.shape[0])[:, None] / self.unit
        m = np.arange(joint.shape[1])[None, :]
        den = len(chunks) + b2 * m if what == "hypothesis" else m + b2 * len(chunks)
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(den > 0, (1 + b2) * h / np.where(den > 0, den, 1), 1.0)
        return float((joint * u).sum())

    def decode(self, lattice, beta=1.0, memory_budget=None):
        """The best of the k best paths and the conlleval MEU decision by exact E[u],
        ``gap`` inf (no certificate); with a ``bound``, those are the seeds of the
        certified search (:func:`fstchunk.engine.certified.certified_meu`, at most k
        more chunkings) and ``gap`` is its certificate."""
        lattice.space.require_chunks(f"the {self.name} utility")
        paths = _shortest(lattice, self.k)
        cands = [[lattice.space.symbols.find(x) for x in labels]
                 for labels, _, _ in fsa.paths(paths)]
        cands.append(list(lattice.meu(beta, memory_budget).tags))
        if self.bound is not None and (beta > 0 or "O" in lattice.space.tags):
            return self._certified(lattice, cands, to_beta_sq(beta), DEFAULT_MEMORY_BUDGET
                                   if memory_budget is None else memory_budget)
        best = None
        for tags in cands:
            u = self.expected(lattice, hypothesis=tags, beta=beta)
            if best is None or u > best.score:
                best = Decoding(list(tags), u, float("inf"))
        return best

    def _certified(self, lattice, cands, b2: float, memory_budget: float) -> Decoding:
        """MEU by the certified search over the bound, the candidates as seeds."""
        n, types = lattice.n, lattice.space.types

        def value(chunks):
            tags = enc.chunks_to_tags([(types[t], s, e) for t, s, e in chunks], n,
                                      lattice.scheme)
            return self.expected(lattice, hypothesis=tags, beta=float(np.sqrt(b2)))
        r = span_search(lattice, self.name, b2, memory_budget, lambda pm, s_i, e_i:
                        self.bound(lattice)[:, s_i, e_i].reshape(len(types) * len(s_i), -1),
                        value, self.k, typed=True, seeds=cands)
        tags = enc.chunks_to_tags([(types[t], s, e) for t, s, e in r.chunks], n, lattice.scheme)
        return Decoding(list(tags), float(r.value), float(r.gap))


def near_boundaries(types: tuple, top: int) -> pynini.Fst:
    """C of "a boundary off by one token earns half" (:mod:`fstchunk.schemes.near_match`):
    ``CreditUtility("near", near_boundaries, unit=2)``; BudgetError before it is built
    if it would exceed the state budget."""
    budget.check(f"the off-by-one counter over {budget.types_phrase(types)} with credits up "
                 f"to {top}", budget.near_counter((top + 1) // 2, len(types)),
                 "score shorter sentences or raise the state budget")
    return counting.credit_transducer(types, top, None, near_step)


def _chunkings(n: int, types: tuple, start: int = 0) -> list:
    """Every chunking of tokens start..n-1 over ``types``."""
    if start >= n:
        return [[]]
    out = [rest for rest in _chunkings(n, types, start + 1)]
    for e in range(start + 1, n + 1):
        for t in types:
            out += [[(t, start, e)] + rest for rest in _chunkings(n, types, e)]
    return out


def _random_chunking(rng, n: int, types: tuple) -> list:
    """A chunking of ``n`` tokens: chunks of random types and lengths, gaps between."""
    out, i = [], 0
    while i < n:
        if rng.random() < 0.6:
            e = int(rng.integers(i + 1, n + 1))
            out.append((types[int(rng.integers(len(types)))], i, e))
            i = e
        else:
            i += 1
    return out


def _machine_credits(c: pynini.Fst, table, arcs: dict, x: list, y: list) -> list:
    """The credits every path of C writes on the aligned pair of IOBES tags x:y (one
    entry per path); ``arcs`` caches C's arcs by state."""
    def out(s):
        if s not in arcs:
            arcs[s] = {}
            for a in c.arcs(s):
                arcs[s].setdefault((a.ilabel, a.olabel), []).append(a.nextstate)
        return arcs[s]
    at = {c.start(): 1}
    for a, b in zip(x, y):
        key, nxt = (table.find(a), table.find(b)), {}
        for s, k in at.items():
            for q in out(s).get(key, ()):
                nxt[q] = nxt.get(q, 0) + k
        at = nxt
    zero = pynini.Weight.zero(c.weight_type())
    return sorted(counting.decode_marker(il)[1] for s, k in at.items()
                  for (il, _), qs in out(s).items() if il >= counting.MARKER_BASE
                  for q in qs if c.final(q) != zero for _ in range(k))


def _with_markers(ys: pynini.Fst, side: pynini.Fst, top: int) -> pynini.Fst:
    """The acceptor ``ys`` followed by any one ``<tp=h>``, h ≤ ``top``."""
    marks = fsa.union_of([counting.tp_marker(h) for h in range(top + 1)], side.arc_type())
    return fsa.to_arc_type(fsa.bare(ys), side.arc_type()) + marks


def near_bound(lattice) -> np.ndarray:
    """B[t, s, e, m] = Pr((t, s, e) ∈ y, m) + ½·Σ_v Pr(v ∈ y, m) over the spans v of
    type t one boundary off [s, e), m = m(y): the off-by-one credit of a prediction
    (a point for its span, half for a neighbour's) is at most the sum of those
    indicators, so B bounds its expectation (:class:`CreditUtility`'s ``bound``)."""
    ex = chunk_count_marginals(lattice)                 # [type, s, e, m], 0 where e <= s
    out = ex.copy()
    out[:, :, 1:] += 0.5 * ex[:, :, :-1]                # [s, e - 1)
    out[:, :, :-1] += 0.5 * ex[:, :, 1:]                # [s, e + 1)
    out[:, 1:] += 0.5 * ex[:, :-1]                      # [s - 1, e)
    out[:, :-1] += 0.5 * ex[:, 1:]                      # [s + 1, e)
    return out


def near() -> CreditUtility:
    """``near``: "a boundary off by one token earns half" (:mod:`fstchunk.schemes.near_match`)
    with its step's recursion and a certified MEU (:func:`near_bound`)."""
    return CreditUtility("near", near_boundaries, unit=2, step=near_step, bound=near_bound)
