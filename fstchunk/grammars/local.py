"""Strictly 2-local machines built in one pass: validity acceptors, encoders, conversions.

Every scheme's validity language is strictly 2-local (:mod:`fstchunk.schemes.encodings`): a
sequence is valid iff its first tag may start one, each bigram is allowed and its last
tag may end one.  Two valid sequences x (scheme S) and y (scheme T) of one length
denote the same chunks iff at every position i their tags agree on being outside or
inside a chunk of one type, and on whether the tag continues the chunk of the tag
before (:func:`fstchunk.schemes.encodings.continues`).  So the conversion relation S -> T,
{(x, convert(x, S, T))}, is strictly 2-local as well, over letters x_i:y_i:

    start_ok(a:b) = start_S(a) ∧ start_T(b)          end_ok(a:b) = end_S(a) ∧ end_T(b)
    next_ok(a:b, c:d) = allowed_S(a, c) ∧ allowed_T(b, d)
                        ∧ continues_S(a, c) = continues_T(b, d)

with a, b both O or both of one chunk type.  :func:`machine` builds the acceptor of a
strictly 2-local language over such letters, one tape (validity) or two (the encoder
IOBES -> S, the conversion S -> T), state by state: the start and one state per class
of letters with the same *row* (may end, the letters allowed next of the same chunk
type, of another type), each arc added once, then trimmed and minimized (labels
encoded).  Equal rows have equal residual languages, so nothing but minimization is
left to OpenFst; the result is the unique minimal deterministic machine (over label
pairs) of the language, the one the earlier construction (Γ+ minus forbidden
patterns, cdrewrite cascades; kept as the oracle of tests/test_grammars_local.py)
arrived at through determinizing differences over the whole alphabet.

The rules are read at the level of prefixes (:func:`rules`): ``allowed`` and
``continues`` depend only on the two prefixes and on whether the chunk types are
equal, so the work is the arcs themselves, O(k²) for k chunk types (the IOB1/IOE1
states after a chunk of type X allow every other type's I).

Pitfall: the prefix rules are read off :func:`fstchunk.schemes.encodings.allowed` with the
placeholder types ``X``/``Y``, never off a tag space (whose tables are O(k²) calls).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Sequence

import pynini

from ..core.errors import InputError
from ..schemes import encodings as enc
from ..schemes.tagspace import normalize_types, symbol_table
from . import fsa

O = enc.OUTSIDE


@dataclass(frozen=True)
class Rules:
    """The 2-local rules of one scheme over prefixes as written (``O`` included):
    ``start``/``end`` the prefixes a sentence may start/end with; ``allowed`` and
    ``cont`` the triples (p, c, same) with c allowed after p / c continuing p's
    chunk, ``same`` whether the two chunk types are equal."""
    kinds: tuple[str, ...]
    start: frozenset
    end: frozenset
    allowed: frozenset
    cont: frozenset


def _tag(prefix: str, ctype: str) -> str:
    return O if prefix == O else enc.make_tag(prefix, ctype)


@functools.lru_cache(maxsize=None)
def rules(scheme: str) -> Rules:
    """:class:`Rules` of ``scheme``, from :func:`~fstchunk.schemes.encodings.allowed` and
    :func:`~fstchunk.schemes.encodings.continues` on placeholder tags."""
    s = enc.canonical_scheme(scheme)
    kinds = (O,) + enc.scheme_prefixes(s)
    triples = [(p, c, same) for p in kinds for c in kinds for same in (True, False)]

    def pair(p, c, same):
        return _tag(p, "X"), _tag(c, "X" if same else "Y")

    return Rules(kinds,
                 frozenset(p for p in kinds if enc.allowed(s, None, _tag(p, "X"))),
                 frozenset(p for p in kinds if enc.allowed(s, _tag(p, "X"), None)),
                 frozenset(x for x in triples if enc.allowed(s, *pair(*x))),
                 frozenset(x for x in triples if enc.continues(s, *pair(*x))))


class _Letters:
    """The letters over one or more tapes at the prefix level: a kind is a tuple of
    prefixes, all ``O`` or all chunk prefixes; a letter is a kind and a chunk type."""

    def __init__(self, schemes: Sequence[str]):
        self.rules = [rules(s) for s in schemes]
        self.outside = (O,) * len(schemes)
        self.kinds = [self.outside] + list(itertools.product(*(r.kinds[1:] for r in self.rules)))

    def start_ok(self, x) -> bool:
        return all(p in r.start for p, r in zip(x, self.rules))

    def end_ok(self, x) -> bool:
        return all(p in r.end for p, r in zip(x, self.rules))

    def next_ok(self, x, y, same: bool) -> bool:
        if not all((p, c, same) in r.allowed for p, c, r in zip(x, y, self.rules)):
            return False
        return len({(p, c, same) in r.cont for p, c, r in zip(x, y, self.rules)}) == 1


@functools.lru_cache(maxsize=None)
def machine(schemes: tuple[str, ...], types: tuple[str, ...]) -> pynini.Fst:
    """The minimal deterministic machine (standard arcs, the shared symbol table) of
    the strictly 2-local language over ``schemes``' tapes (see module doc): with one
    scheme its validity acceptor, with two (S, T) the conversion S -> T.  Cached:
    callers copy before changing it."""
    if len(schemes) not in (1, 2):
        raise InputError(f"a 2-local machine reads one or two tapes, got {len(schemes)}")
    types = normalize_types(types)
    letters = _Letters(schemes)
    table = symbol_table(types)
    typed = len(types) > 1
    kinds, outside = letters.kinds, letters.outside
    # the kinds allowed after each kind, with the same / another chunk type
    after = {(x, same): [y for y in kinds if letters.next_ok(x, y, same)]
             for x in kinds for same in (True, False)}
    row = {x: (letters.end_ok(x), tuple(after[(x, True)]),
               tuple(after[(x, False)]) if typed else ()) for x in kinds}
    by_type = {x: typed and row[x][1] != row[x][2] for x in kinds}

    def key(x, t):
        """The state of letter (x, t): its row, and its type where the row reads it."""
        return row[x], (t if by_type[x] else None)

    f = pynini.Fst("standard")
    one = pynini.Weight.one("tropical")
    state: dict = {}
    agenda: list = []

    def state_of(k, x, t) -> int:
        if k not in state:
            state[k] = f.add_state()
            if k[0][0]:
                f.set_final(state[k])
            agenda.append((k, x, t))
        return state[k]

    labels: dict = {}

    def label(x, t) -> tuple[int, int]:
        if (x, t) not in labels:
            ids = [table.find(_tag(p, t if t is not None else "")) for p in x]
            labels[(x, t)] = (ids[0], ids[-1])
        return labels[(x, t)]

    start = f.add_state()
    f.set_start(start)
    starts = [y for y in kinds if letters.start_ok(y)]

    def successors(same_kinds, other_kinds, t):
        for y in same_kinds:
            if y == outside:
                yield y, None
            elif t is not None:
                yield y, t
            else:                       # after the start or O: every type
                for u in types:
                    yield y, u
        if t is not None:
            for y in other_kinds:
                if y != outside:
                    for u in types:
                        if u != t:
                            yield y, u

    def add_arcs(src: int, pairs) -> None:
        for y, u in pairs:
            i, o = label(y, u)
            f.add_arc(src, pynini.Arc(i, o, one, state_of(key(y, u), y, u)))

    add_arcs(start, successors(starts, (), None))
    while agenda:                       # each state's arcs from one letter of its class
        k, x, t = agenda.pop()
        add_arcs(state[k], successors(after[(x, True)], after[(x, False)], t))
    return fsa.attach(fsa.unweighted_optimize(f.connect()), table)


__all__ = ["Rules", "machine", "rules"]
