"""Conversion transducers between chunk schemes.

IOBES is the canonical encoding: its tag at a token says exactly whether the token
begins and/or ends a chunk, so every scheme is a letter-to-letter image of it.
For each scheme S the *encoder* E_S : IOBES -> S is a cascade of obligatory,
simultaneous context-dependent rewrite rules (pynini.cdrewrite), composed with
the IOBES validity acceptor:

=======  ====================================================================
IOB2     S -> B, E -> I
IOE2     S -> E, B -> I
BILOU    E -> L, S -> U
IOB1     {B,S}-X -> U-X / {E,S}-X _ ; then B,S,E -> I ; then U -> B
IOE1     {E,S}-X -> U-X / _ {B,S}-X ; then E,S,B -> I ; then U -> E
IOBES2   I-X -> B2-X / B-X _ ; then I-X -> B3-X / B2-X _
IOBES3   I-X -> E2-X / _ E-X ; then I-X -> E3-X / _ E2-X
=======  ====================================================================

(``U`` serves as a temporary marker in IOB1/IOE1, so no rule needs a sentence
boundary in its context.)  E_S is a bijection between valid IOBES and valid S
sequences, hence the conversion S -> T is the functional transducer
E_S⁻¹ ∘ E_T, whose domain is exactly the valid S sequences.

Pitfall: the rules must be simultaneous (``direction="sim"``): with "ltr", the
left context is read on the rewritten side, and ``S-X S-X`` would lose the
context of its second S.
"""

from __future__ import annotations

import functools

import pynini

from .. import encodings as enc
from .. import fsa
from ..tagspace import TagSet, symbol_table

from . import validity


def _rules(scheme: str, types: tuple[str, ...], lab) -> list[pynini.Fst]:
    """The rewrite cascade of E_scheme, as a list of transducers to compose."""
    sigma_star = fsa.union_of(range(1, symbol_table(types).num_symbols())).closure()
    eps = fsa.string_fst([])

    def letters(mapping: dict[str, str]) -> pynini.Fst:
        pairs = [(lab(enc.make_tag(a, t)), lab(enc.make_tag(b, t)))
                 for t in types for a, b in mapping.items()]
        mapped = {i for i, _ in pairs}
        ident = [i for i in range(1, symbol_table(types).num_symbols()) if i not in mapped]
        return fsa.union_of(pairs + ident).closure()

    def rule(src: str | tuple, dst: str, left=(), right=()) -> pynini.Fst:
        cascade = []
        for t in types:
            srcs = (src,) if isinstance(src, str) else src
            tau = fsa.union_of([(lab(enc.make_tag(a, t)), lab(enc.make_tag(dst, t)))
                                for a in srcs])
            ctx = [fsa.union_of([lab(enc.make_tag(p, t)) for p in c]) if c else eps
                   for c in (left, right)]
            cascade.append(pynini.cdrewrite(tau, ctx[0], ctx[1], sigma_star, direction="sim"))
        return functools.reduce(pynini.compose, cascade)

    if scheme == "IOBES":
        return []
    if scheme == "IOB2":
        return [letters({"S": "B", "E": "I"})]
    if scheme == "IOE2":
        return [letters({"S": "E", "B": "I"})]
    if scheme == "BILOU":
        return [letters({"E": "L", "S": "U"})]
    if scheme == "IOB1":
        return [rule(("B", "S"), "U", left=("E", "S")),
                letters({"B": "I", "S": "I", "E": "I", "U": "B"})]
    if scheme == "IOE1":
        return [rule(("E", "S"), "U", right=("B", "S")),
                letters({"E": "I", "S": "I", "B": "I", "U": "E"})]
    if scheme == "IOBES2":
        return [rule("I", "B2", left=("B",)), rule("I", "B3", left=("B2",))]
    if scheme == "IOBES3":
        return [rule("I", "E2", right=("E",)), rule("I", "E3", right=("E2",))]
    raise AssertionError(scheme)


@functools.lru_cache(maxsize=None)
def _encoder_std(scheme: str, types: tuple[str, ...]) -> pynini.Fst:
    table = symbol_table(types)
    cascade = [validity.validity_acceptor("IOBES", types, "standard")]
    cascade += _rules(scheme, types, table.find)
    out = functools.reduce(pynini.compose, cascade)
    return fsa.attach(fsa.unweighted_optimize(out), table)


def encoder(scheme: str, types=None, arc_type: str = "log64") -> pynini.Fst:
    """E_scheme: valid IOBES sequences -> the same chunks written in ``scheme``."""
    ts = TagSet(scheme, types)
    return fsa.attach(fsa.to_arc_type(_encoder_std(ts.scheme, ts.types), arc_type), ts.symbols)


@functools.lru_cache(maxsize=None)
def _conversion_std(source: str, target: str, types: tuple[str, ...]) -> pynini.Fst:
    dec = _encoder_std(source, types).copy().invert()
    out = pynini.compose(dec, _encoder_std(target, types))
    return fsa.attach(fsa.unweighted_optimize(out), symbol_table(types))


def conversion_transducer(source: str, target: str, types=None,
                          arc_type: str = "log64") -> pynini.Fst:
    """Functional transducer rewriting valid ``source`` sequences into ``target``."""
    ts = TagSet(source, types)
    tgt = enc.canonical_scheme(target)
    return fsa.attach(fsa.to_arc_type(_conversion_std(ts.scheme, tgt, ts.types), arc_type),
                      ts.symbols)
