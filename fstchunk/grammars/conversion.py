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

from ..core.errors import InputError
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


def type_map(scheme: str, types, mapping: dict[str, str | None],
             arc_type: str = "log64") -> pynini.Fst:
    """U = C ∘ S_map: valid ``scheme`` sequences over ``types`` → the same chunks in IOBES
    with each type t renamed to ``mapping[t]`` (``""``: untyped), or dropped (``None``:
    its tokens become O); a type not in ``mapping`` keeps its name.  C is the
    conversion to IOBES, S_map the tag map X-t → X-mapping[t].  The output types are
    :func:`mapped_types`.  Functional; not one-to-one unless ``mapping`` is.

    Pitfall: two chunks of types mapped to one name stay two chunks (IOBES marks every
    boundary), and IOB1 and IOE1 mark a boundary by a type change alone, so the
    conversion to IOBES comes before the types change."""
    types = normalize_types(types)
    out = mapped_types(types, mapping)
    conv = conversion_transducer(scheme, "IOBES", types, arc_type)
    typed, mapped = symbol_table(types), symbol_table(out)
    strip = pynini.Fst(arc_type)
    q = strip.add_state()
    strip.set_start(q)
    strip.set_final(q)
    one = pynini.Weight.one(strip.weight_type())
    for tag in enc.scheme_tags("IOBES", types):
        prefix, ctype = enc.split_tag(tag)
        new = mapping.get(ctype, ctype) if tag != enc.OUTSIDE else None
        label = enc.OUTSIDE if new is None else enc.make_tag(prefix, new)
        strip.add_arc(q, pynini.Arc(typed.find(tag), mapped.find(label), one, q))
    strip.set_input_symbols(typed)
    strip.set_output_symbols(mapped)
    return pynini.compose(conv, strip.arcsort("ilabel"))


def mapped_types(types, mapping: dict[str, str | None]) -> tuple[str, ...]:
    """The chunk types after :func:`type_map` (sorted, as every type list); InputError
    for a ``mapping`` key that is not a type, an invalid new name, or untyped (``""``)
    beside typed output."""
    types = normalize_types(types)
    unknown = [t for t in mapping if t not in types]
    if unknown:
        raise InputError(f"the type map names {unknown[0]!r}, which is not among the "
                         f"types {', '.join(types)}")
    out: dict[str, None] = {}
    for t in types:
        new = mapping.get(t, t)
        if new is None:
            continue
        if not isinstance(new, str) or (new and enc.type_problem(new)):
            raise InputError(f"the type map sends {t!r} to {new!r}: a type is a non-empty "
                             f"string without white space or ',' ('' for untyped, None to "
                             f"drop it)")
        out[new] = None
    if "" in out and len(out) > 1:
        raise InputError("the type map mixes untyped ('') and typed output; map every kept "
                         "type to '' or none")
    if not out:
        raise InputError("the type map drops every type: no chunk is left to score")
    return normalize_types(tuple(out))


def type_filter(scheme: str, types, keep, arc_type: str = "log64") -> pynini.Fst:
    """U: valid ``scheme`` sequences → their chunks of the types ``keep`` only, in IOBES
    (the others' tokens O): the per-type utility's map (F of one type is conlleval's F
    on both tapes seen through it; :mod:`fstchunk.decoding.utilities`)."""
    types, keep = normalize_types(types), tuple(keep)
    unknown = [t for t in keep if t not in types]
    if unknown or not keep:
        raise InputError(f"the type filter keeps {unknown[0]!r}, which is not among the types "
                         f"{', '.join(types)}" if unknown else "the type filter keeps no type: "
                         "name the types it keeps (keep=..., --keep)")
    return type_map(scheme, types, {t: (t if t in keep else None) for t in types}, arc_type)


def type_eraser(scheme: str, types=None, arc_type: str = "log64") -> pynini.Fst:
    """U = C ∘ S: valid ``scheme`` sequences over ``types`` → the same chunks as untyped
    IOBES tags (B, I, E, S, O), C the conversion to IOBES and S the map B-X → B, I-X → I,
    E-X → E, S-X → S (:func:`type_map` sending every type to ``""``).  What the
    exact-boundary utility compares (SemEval-2013's ``exact`` mode,
    :mod:`fstchunk.decoding.exact_boundaries`): U on both tapes, then T⊠M untyped.
    Functional, not one-to-one.  Pitfall: IOB1 and IOE1 mark a boundary between two
    chunks by a type change alone, so the conversion to IOBES comes before the types go."""
    types = normalize_types(types)
    return type_map(scheme, types, {t: "" for t in types}, arc_type)
