"""True-positive counter T, chunk counter M and their pairing T⊠M (Jansche §15-18).

All three read the canonical IOBES encoding, where a token's tag says whether it
starts (B, S) and/or ends (E, S) a chunk; any other scheme is reached by composing
with the conversion encoders of :mod:`fstchunk.grammars.conversion`.

T (§15) is a two-tape machine over pairs x_i:y_i with states (ct, match): ct counts
matching chunks so far, match says whether a chunk that starts at the same token
with the same type on both tapes is still open on both.  From match=0, B:B of one
type opens a match and S:S of one type completes one; from match=1, E:E completes
it, I:I keeps it open, anything else breaks it.  It is deterministic on pairs, so
tp(x, y) = [T](x, y).  T is infinite in principle; we build it up to a chunk bound
K (ct <= K), which is exact for sentences of up to K tokens.

M (§17) counts chunk starts (B, S) on one tape and ignores the other.

Counts are read off in one of two ways:

* ``weights="count"``: the final weight of a state is its count (in log64:
  -log ct), so [T](x, y) = tp(x, y) as in the slides (pairs with tp = 0 get
  weight zero, i.e. are absent).
* ``weights="marker"`` (default): on leaving, the machine writes a marker symbol
  ``<tp=a>`` (T) or ``<m=b>`` (M) on both tapes.  T⊠M (§18) is then the
  intersection of T followed by any ``<m=·>`` with M preceded by any ``<tp=·>``,
  computed as a composition over encoded label pairs; its paths end in
  ``<tp=a> <m=b>``, and composing with a model and projecting onto the markers
  gives the joint distribution of (tp, m) by shortest distance.

Pitfall: the two-tape T and M have |Γ|² arcs per state (2025 for the 11 CoNLL-2000
types), so the expectation code does not build them for real tag sets; it builds T
and M *specialised to a fixed tape* (:func:`specialised_pair_acceptor`), which is
what x ∘ T⊠M is, and the tests check that the two agree.  :func:`true_positive_transducer`,
:func:`chunk_counter` and :func:`pair_machine` check their size (:mod:`.budget`) before
building: a BudgetError rather than minutes of arcs for 10⁴ chunk types.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, Sequence

import pynini

from ..core.errors import InputError
from ..schemes import encodings as enc
from ..schemes.matching import fixed_iobes
from ..schemes.tagspace import normalize_types, symbol_table
from . import budget, fsa

#: Markers are numbered from here on, far above any tag label.
MARKER_BASE = 1_000_000
MAX_COUNT = 100_000


def tp_marker(a: int) -> int:
    return MARKER_BASE + a


def m_marker(b: int) -> int:
    return MARKER_BASE + MAX_COUNT + b


def decode_marker(label: int) -> tuple[str, int]:
    """Marker label -> ("tp", a) or ("m", b)."""
    if MARKER_BASE <= label < MARKER_BASE + MAX_COUNT:
        return "tp", label - MARKER_BASE
    if MARKER_BASE + MAX_COUNT <= label < MARKER_BASE + 2 * MAX_COUNT:
        return "m", label - MARKER_BASE - MAX_COUNT
    raise InputError(f"label {label} is not a count marker")


@functools.lru_cache(maxsize=None)
def marker_symbols(types: tuple[str, ...], bound: int) -> pynini.SymbolTable:
    """The tag symbol table of ``types`` plus ``<tp=a>``, ``<m=b>`` for a, b <= bound."""
    table = symbol_table(types).copy()
    for a in range(bound + 1):
        table.add_symbol(f"<tp={a}>", tp_marker(a))
    for b in range(bound + 1):
        table.add_symbol(f"<m={b}>", m_marker(b))
    return table


def check_bound(bound: int) -> int:
    if not (isinstance(bound, int) and 0 <= bound < MAX_COUNT):
        raise InputError(f"count bound must be an integer in 0..{MAX_COUNT - 1}, got {bound!r}")
    return bound


def iobes_tags(types: tuple[str, ...]):
    """(label, prefix, type) of every IOBES tag over ``types`` (O first, then type by
    type), read off the shared symbol table: no tag space is compiled."""
    table = symbol_table(types)
    return [(table.find(enc.OUTSIDE), enc.OUTSIDE, "")] + [
        (table.find(enc.make_tag(p, t)), p, t) for t in types
        for p in enc.scheme_prefixes("IOBES")]


def tp_step(match: int, a: tuple[str, str], b: tuple[str, str]) -> tuple[int, int]:
    """T's transition on the pair (a, b) of (prefix, type): returns (tp increment, match')."""
    (pa, ta), (pb, tb) = a, b
    if match:
        if pa == "E" and pb == "E":
            return 1, 0
        if pa == "I" and pb == "I":
            return 0, 1
        return 0, 0
    if ta == tb and pa == pb == "S":
        return 1, 0
    if ta == tb and pa == pb == "B":
        return 0, 1
    return 0, 0


def _final(f: pynini.Fst, state: int, count: int, weights: str, marker: int,
           sink: int | None) -> None:
    one = pynini.Weight.one(f.weight_type())
    if weights == "count":
        if count > 0:
            f.set_final(state, pynini.Weight(f.weight_type(), -math.log(count)))
    else:
        f.add_arc(state, pynini.Arc(marker, marker, one, sink))


def true_positive_transducer(types=None, bound: int = 4, arc_type: str = "log64",
                             weights: str = "marker") -> pynini.Fst:
    """T over IOBES pairs x:y, states (ct, match), ct <= ``bound``."""
    types = normalize_types(types)
    check_bound(bound)
    if weights not in ("marker", "count"):
        raise InputError(f"weights must be 'marker' or 'count', got {weights!r}")
    budget.check(f"the true-positive counter T over {budget.types_phrase(types)} with "
                 f"count bound {bound}", budget.tp_transducer(bound, len(types)),
                 "use a smaller bound (--max-length)")
    f = pair_counter(types, bound, (0, 1), tp_step, arc_type,
                     lambda f, s, ct, sink: _final(f, s, ct, weights, tp_marker(ct), sink),
                     sink=weights == "marker")
    return fsa.attach(f, marker_symbols(types, bound))


def pair_counter(types: tuple[str, ...], top: int, matches: Sequence[int], step: Callable,
                 arc_type: str, final: Callable, sink: bool = True) -> pynini.Fst:
    """A counter over IOBES pairs x:y with states (count ≤ ``top``, match state):
    ``step`` (match, x pair, y pair) -> (increment, match'); ``final(f, state, count,
    sink)`` ends the match-0 states (T's :func:`tp_step`; the partial-credit counter of
    :mod:`.partial`)."""
    tags = iobes_tags(types)
    f = pynini.Fst(arc_type)
    one = pynini.Weight.one(fsa.weight_type(arc_type))
    state = {(ct, m): f.add_state() for ct in range(top + 1) for m in matches}
    f.set_start(state[(0, 0)])
    end = f.add_state() if sink else None
    if end is not None:
        f.set_final(end)
    for (ct, m), s in state.items():
        for la, pa, ta in tags:
            for lb, pb, tb in tags:
                inc, m2 = step(m, (pa, ta), (pb, tb))
                if ct + inc <= top:
                    f.add_arc(s, pynini.Arc(la, lb, one, state[(ct + inc, m2)]))
        if m == 0:
            final(f, s, ct, end)
    return f


def reachable(types, step: Callable, on_new: Callable[[int], None] | None = None) -> list:
    """The match states ``step`` reaches from 0 over every pair of IOBES tags of
    ``types``, in the order found; ``on_new(count)`` is called as each is found (a
    budget check may raise there)."""
    pairs = [(p, t) for _, p, t in iobes_tags(normalize_types(types))]
    states, seen, k = [0], {0}, 0
    while k < len(states):
        for a in pairs:
            for b in pairs:
                nxt = step(states[k], a, b)[1]
                if nxt not in seen:
                    seen.add(nxt)
                    states.append(nxt)
                    if on_new is not None:
                        on_new(len(states))
        k += 1
    return states


def credit_transducer(types, top: int, states: Sequence | None, step: Callable,
                      arc_type: str = "log64") -> pynini.Fst:
    """A credit counter C over IOBES pairs x:y (x the decision, y the reference), the
    form of T and of the partial-credit counter P: states (credits h ≤ ``top``, match
    state of ``states``, any hashable values; None: those ``step`` reaches from 0);
    ``step`` (match, x's (prefix, type), y's (prefix, type)) -> (credits earned,
    match'); a path starts in match state 0 and ends there, writing ``<tp=h>`` (T is
    :func:`tp_step`'s counter, P :func:`fstchunk.schemes.matching.partial_step`'s)."""
    types = normalize_types(types)
    one = pynini.Weight.one(fsa.weight_type(arc_type))
    if states is None:
        states = reachable(types, step)

    def final(f, s, h, sink):
        f.add_arc(s, pynini.Arc(tp_marker(h), tp_marker(h), one, sink))
    f = pair_counter(types, top, states, step, arc_type, final)
    return fsa.attach(f.connect(), marker_symbols(types, top))


def chunk_counter(types=None, bound: int = 4, arc_type: str = "log64",
                  weights: str = "marker", tape: str = "output") -> pynini.Fst:
    """M: counts chunk starts (B, S) on ``tape`` ("output" = y, as in the slides)."""
    types = normalize_types(types)
    check_bound(bound)
    if tape not in ("input", "output"):
        raise InputError(f"tape must be 'input' or 'output', got {tape!r}")
    budget.check(f"the chunk counter M over {budget.types_phrase(types)} with count bound "
                 f"{bound}", budget.chunk_counter(bound, len(types)),
                 "use a smaller bound (--max-length)")
    tags = iobes_tags(types)
    f = pynini.Fst(arc_type)
    one = pynini.Weight.one(fsa.weight_type(arc_type))
    state = [f.add_state() for _ in range(bound + 1)]
    f.set_start(state[0])
    sink = f.add_state() if weights == "marker" else None
    if sink is not None:
        f.set_final(sink)
    for cm, s in enumerate(state):
        for la, pa, _ in tags:
            for lb, pb, _ in tags:
                counted = pb if tape == "output" else pa
                nxt = cm + (counted in ("B", "S"))
                if nxt <= bound:
                    f.add_arc(s, pynini.Arc(la, lb, one, state[nxt]))
        _final(f, s, cm, weights, m_marker(cm), sink)
    return fsa.attach(f, marker_symbols(types, bound))


def _any_marker(kind: str, bound: int, arc_type: str) -> pynini.Fst:
    mk = tp_marker if kind == "tp" else m_marker
    return fsa.union_of([mk(a) for a in range(bound + 1)], arc_type)


def pair_machine(types=None, bound: int = 4, arc_type: str = "log64",
                 tape: str = "output") -> pynini.Fst:
    """T⊠M: paths x·<tp=a><m=b> : y·<tp=a><m=b>, a = tp(x, y), b = chunks on ``tape``.

    Built from T and M as the slides say: T' = T · <m=·>, M' = <tp=·> · M, and
    T⊠M = T' ∩ M' over encoded (x, y) label pairs (an acceptor composition).
    """
    types = normalize_types(types)
    check_bound(bound)
    budget.check(f"the pair machine T⊠M over {budget.types_phrase(types)} with count bound "
                 f"{bound}", budget.pair_machine(bound, len(types)),
                 "use a smaller bound (--max-length)")
    t = true_positive_transducer(types, bound, arc_type) + _any_marker("m", bound, arc_type)
    m = chunk_counter(types, bound, arc_type, tape=tape)
    m = _prepend_markers(m, bound, arc_type)
    # Pitfall: epsilon arcs must go before encoding, or 0:0 becomes a real symbol.
    mapper = pynini.EncodeMapper(arc_type, encode_labels=True)
    te = t.rmepsilon().encode(mapper)
    me = m.rmepsilon().encode(mapper)
    both = pynini.intersect(te.arcsort(), me.arcsort()).connect()
    return fsa.attach(both.decode(mapper), marker_symbols(types, bound))


def _prepend_markers(m: pynini.Fst, bound: int, arc_type: str) -> pynini.Fst:
    """M with "any <tp=·>" inserted right before its own <m=·> marker."""
    out = m.copy()
    any_tp = [tp_marker(a) for a in range(bound + 1)]
    one = pynini.Weight.one(fsa.weight_type(arc_type))
    for s in list(out.states()):
        arcs = list(out.arcs(s))
        if not any(a.ilabel >= MARKER_BASE for a in arcs):
            continue
        mid = out.add_state()
        keep = [a for a in arcs if a.ilabel < MARKER_BASE]
        marks = [a for a in arcs if a.ilabel >= MARKER_BASE]
        out.delete_arcs(s)
        for a in keep:
            out.add_arc(s, a)
        for lab in any_tp:
            out.add_arc(s, pynini.Arc(lab, lab, one, mid))
        for a in marks:
            out.add_arc(mid, a)
    return out


def weighted_tp_step(weights: dict) -> Callable:
    """T's step with a completed match counting its type's weight (1 for a type left
    out of ``weights``): the numerator of the per-type weighted F."""
    def step(match: int, a: tuple[str, str], b: tuple[str, str]) -> tuple[int, int]:
        inc, m2 = tp_step(match, a, b)
        return inc * weights.get(a[1], 1), m2
    return step


def weighted_tp_transducer(types, bound: int, weights: dict,
                           arc_type: str = "log64") -> pynini.Fst:
    """T_w: T with a completed match counting its type's weight (:func:`weighted_tp_step`),
    credits up to the largest weight times ``bound``."""
    types = normalize_types(types)
    unknown = sorted(set(weights) - set(types))
    if unknown:
        raise InputError(f"grammar 'weighted': --weights names {', '.join(unknown)}, not among "
                         f"its --types {', '.join(types)}")
    return credit_transducer(types, max([1, *weights.values()]) * bound, (0, 1),
                             weighted_tp_step(weights), arc_type)


def specialised_pair_acceptor(fixed_chunks: Sequence[enc.Chunk], n: int, types=None,
                              arc_type: str = "log64", step: Callable = tp_step,
                              credit_bound: int | None = None,
                              weights: dict | None = None) -> pynini.Fst:
    """T⊠M with one tape fixed to the sequence with ``fixed_chunks`` (length ``n``).

    An acceptor over the *other* tape (IOBES tags) followed by <tp=a><m=b>, where a
    is tp against the fixed sequence and b the chunk count of the accepted one;
    equal to projecting the fixed sequence through :func:`pair_machine` (tested).
    Built as the intersection of T_fixed (states (i, ct, match)) and a one-tape M.
    ``step`` (match, fixed pair, other pair) -> (increment, match') replaces T's
    :func:`tp_step` (the partial-credit counter of :mod:`.partial`, or T with a
    weight per type), whose count reaches at most ``credit_bound`` (default n); a
    match state other than 0 at the end is not final.  ``weights``: M counts each
    chunk's type weight (:func:`chunk_counter_acceptor`).  BudgetError as soon as the
    walk passes the state budget.
    """
    types = normalize_types(types)
    if n < 1:
        raise InputError(f"a sentence has at least one token, got n={n!r}")
    fixed = fixed_iobes(fixed_chunks, n)
    tags = iobes_tags(types)
    bound = n if credit_bound is None else max(n, credit_bound)
    one = pynini.Weight.one(fsa.weight_type(arc_type))
    # T specialised: states (i, ct, match)
    t = pynini.Fst(arc_type)
    st: dict[tuple[int, int, int], int] = {}

    def state(key):
        if key not in st:
            st[key] = t.add_state()
        return st[key]

    t.set_start(state((0, 0, 0)))
    sink = t.add_state()
    tail = t.add_state()
    t.set_final(sink)
    agenda = [(0, 0, 0)]
    seen = {(0, 0, 0)}
    limit = budget.state_budget()
    while agenda:
        i, ct, m = agenda.pop()
        s = st[(i, ct, m)]
        if i == n:
            if m == 0:
                t.add_arc(s, pynini.Arc(tp_marker(ct), tp_marker(ct), one, tail))
            continue
        for lb, pb, tb in tags:
            inc, m2 = step(m, fixed[i], (pb, tb))
            key = (i + 1, ct + inc, m2)
            t.add_arc(s, pynini.Arc(lb, lb, one, state(key)))
            if key not in seen:
                seen.add(key)
                agenda.append(key)
                if len(seen) > limit:            # a counter with many states: refuse
                    budget.check(f"the counter specialised to a fixed {n}-token sequence",
                                 budget.Estimate(len(seen), at_least=True),
                                 "score it with method='fast'")
    for b in range(bound + 1):
        t.add_arc(tail, pynini.Arc(m_marker(b), m_marker(b), one, sink))
    # one-tape M preceded by any <tp=·>
    m = chunk_counter_acceptor(types, bound, arc_type, weights)
    out = pynini.intersect(t.connect().arcsort(), m.arcsort()).connect()
    return fsa.attach(out, marker_symbols(types, bound))


def chunk_counter_acceptor(types, bound: int, arc_type: str = "log64",
                           weights: dict | None = None) -> pynini.Fst:
    """One-tape M over IOBES tags: tags · <tp=·> · <m=count of B and S>; with
    ``weights`` ({type: integer}, 1 for a type left out) a chunk counts its type's
    weight."""
    types = normalize_types(types)
    tags = iobes_tags(types)
    f = pynini.Fst(arc_type)
    one = pynini.Weight.one(fsa.weight_type(arc_type))
    state = [f.add_state() for _ in range(bound + 1)]
    mids = [f.add_state() for _ in range(bound + 1)]
    sink = f.add_state()
    f.set_start(state[0])
    f.set_final(sink)
    for cm, s in enumerate(state):
        for la, pa, ta in tags:
            nxt = cm + (pa in ("B", "S")) * (weights or {}).get(ta, 1)
            if nxt <= bound:
                f.add_arc(s, pynini.Arc(la, la, one, state[nxt]))
        for a in range(bound + 1):
            f.add_arc(s, pynini.Arc(tp_marker(a), tp_marker(a), one, mids[cm]))
        f.add_arc(mids[cm], pynini.Arc(m_marker(cm), m_marker(cm), one, sink))
    return f
