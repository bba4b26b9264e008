"""Conversion transducers between chunk schemes.

IOBES is the canonical encoding: its tag at a token says exactly whether the token
begins and/or ends a chunk, so every scheme is a letter-to-letter image of it.
For each scheme S the *encoder* E_S : IOBES -> S maps a valid IOBES sequence to the
same chunks written in S; as rewrite rules on IOBES (what the encoder does):

=======  ====================================================================
IOB2     S -> B, E -> I
IOE2     S -> E, B -> I
BILOU    E -> L, S -> U
IOB1     B, S -> B after an E or S of the same type; else B, S, E -> I
IOE1     E, S -> E before a B or S of the same type; else E, S, B -> I
IOBES2   I -> B2 after B; I -> B3 after B2
IOBES3   I -> E2 before E; I -> E3 before E2
=======  ====================================================================

E_S is a bijection between valid IOBES and valid S sequences, and the conversion
S -> T is E_S⁻¹ ∘ E_T, whose domain is exactly the valid S sequences.  Both are
built directly as the minimal deterministic machine over label pairs of a strictly
2-local relation (:func:`.local.machine` over the tapes (IOBES, S) and (S, T): both
tapes valid, and at every token the same chunk type and the same "continues the
previous token's chunk"), in milliseconds for 100 chunk types.  The cdrewrite
cascade this replaces is the oracle of tests/test_grammars_local.py.

Sizes (:mod:`.budget`): an encoder at most 4k + 2 states and 3k² + 12k + 2 arcs, a
conversion 6k + 2 and 3k² + 17k + 2, checked against the state budget before building.
"""

from __future__ import annotations

import pynini

from ..schemes import encodings as enc
from ..schemes.tagspace import normalize_types, symbol_table
from . import budget, fsa, local


def encoder(scheme: str, types=None, arc_type: str = "log64") -> pynini.Fst:
    """E_scheme: valid IOBES sequences -> the same chunks written in ``scheme``."""
    scheme, types = enc.canonical_scheme(scheme), normalize_types(types)
    fsa.check_arc_type(arc_type)
    budget.check(f"the encoder IOBES -> {scheme} over {budget.types_phrase(types)}",
                 budget.encoder_machine(len(types)))
    tapes = ("IOBES",) if scheme == "IOBES" else ("IOBES", scheme)
    return fsa.attach(fsa.to_arc_type(local.machine(tapes, types), arc_type),
                      symbol_table(types))


def conversion_transducer(source: str, target: str, types=None,
                          arc_type: str = "log64") -> pynini.Fst:
    """Functional transducer rewriting valid ``source`` sequences into ``target``."""
    source, target = enc.canonical_scheme(source), enc.canonical_scheme(target)
    types = normalize_types(types)
    fsa.check_arc_type(arc_type)
    budget.check(f"the conversion {source} -> {target} over {budget.types_phrase(types)}",
                 budget.conversion_machine(len(types)))
    return fsa.attach(fsa.to_arc_type(local.machine((source, target), types), arc_type),
                      symbol_table(types))


def type_eraser(scheme: str, types=None, arc_type: str = "log64") -> pynini.Fst:
    """U = C ∘ S: valid ``scheme`` sequences over ``types`` → the same chunks as untyped
    IOBES tags (B, I, E, S, O), C the conversion to IOBES and S the map B-X → B, I-X → I,
    E-X → E, S-X → S.  What the exact-boundary utility compares (SemEval-2013's ``exact``
    mode, :mod:`fstchunk.decoding.exact_boundaries`): U on both tapes, then T⊠M untyped.
    Functional, not one-to-one.  Pitfall: IOB1 and IOE1 mark a boundary between two
    chunks by a type change alone, so the conversion to IOBES comes before the types go."""
    types = normalize_types(types)
    conv = conversion_transducer(scheme, "IOBES", types, arc_type)
    typed, plain = symbol_table(types), symbol_table(("",))
    strip = pynini.Fst(arc_type)
    q = strip.add_state()
    strip.set_start(q)
    strip.set_final(q)
    one = pynini.Weight.one(strip.weight_type())
    for tag in enc.scheme_tags("IOBES", types):
        prefix = enc.split_tag(tag)[0] if tag != enc.OUTSIDE else enc.OUTSIDE
        strip.add_arc(q, pynini.Arc(typed.find(tag), plain.find(prefix), one, q))
    strip.set_input_symbols(typed)
    strip.set_output_symbols(plain)
    return pynini.compose(conv, strip.arcsort("ilabel"))
