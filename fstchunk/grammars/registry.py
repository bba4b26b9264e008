"""The registry of every machine fstchunk can build, for inspection and export.

``fstchunk grammar list|info|print|draw|export`` goes through :data:`GRAMMARS`:
each entry names a builder of a grammar module (:mod:`~fstchunk.grammars.validity`,
:mod:`~fstchunk.grammars.conversion`, :mod:`~fstchunk.grammars.counting`,
:mod:`~fstchunk.grammars.models`, :mod:`~fstchunk.grammars.loss`) and the options it
reads (scheme, chunk types, target scheme, length bound, θ, arc type; the loss
machines: a gold tag sequence and the standard β of F_β, :mod:`fstchunk.core.fbeta`;
the type filter its kept types, the weighted counter its type weights).
:func:`export_far` is the one FAR exporter of the package: the grammar modules only
build machines.

Pitfalls:

* a FAR key is :func:`far_key` of the grammar and the options it reads, e.g.
  ``validity.IOB2``, ``convert.IOB2.IOE1``, ``T.n4``; options a grammar does not
  read do not appear in its key, so two calls that differ only in such an option
  write the same key.
* :func:`export_far` without names exports every grammar for one scheme and the
  conversions from it to *every* other target (``--target`` is then ignored);
  with names, ``convert`` is written for ``--target`` only.
* a FAR holds one arc type; every machine is built in ``options.arc_type``.
* a FAR is checked before any machine is built and written atomically
  (:mod:`fstchunk.core.outputs`): a missing folder, a folder given as the file, a full
  disk are an :class:`~fstchunk.core.errors.OutputError` naming the path, and leave
  nothing at the destination.  OpenFst's ``Far`` writer only prints ``ERROR:`` lines
  and carries on, so the FAR is read back after writing.  Drawing and AT&T text:
  :mod:`.drawing`.
* every machine is checked against the state budget (:mod:`.budget`) before it is
  built: :func:`build` and :func:`export_far` refuse with one
  :class:`~fstchunk.core.errors.BudgetError` naming the largest ``--max-length`` that
  fits.  ``grammar info`` also decides "functional" by composing the machine's
  inverse with it (``fsa.is_functional``), which for T, M, T⊠M is quadratic in
  their size: :func:`check_budget` with ``info=True`` counts it.  No estimate compiles
  a tag space (O(k²)): the loss machines are built over :class:`.loss.SchemeTags`.
  A grammar registered without an ``estimate`` is built unchecked.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import Callable

import pynini

from ..schemes import encodings as enc
from . import fsa
from ..core import outputs
from ..core.errors import InputError
from ..core.fbeta import check_beta
from ..schemes.tagspace import normalize_types
from ..io.annotation import parse_column
from . import annotation, budget, conversion, counting, loss, models, partial, validity


#: The largest ``max_length``: the count markers <tp=a>, <m=b> stop there.
MAX_LENGTH = counting.MAX_COUNT - 1


@dataclass(frozen=True)
class Options:
    """What a builder may read; unused fields are ignored."""
    scheme: str = "IOB2"
    types: tuple[str, ...] = ("",)
    target: str = "IOBES"
    max_length: int = 4
    arc_type: str = "log64"
    theta: float = 0.5
    gold: tuple[str, ...] = ()
    beta: float = 1.0
    keep: tuple[str, ...] = ()
    weights: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "scheme", enc.canonical_scheme(self.scheme))
        object.__setattr__(self, "target", enc.canonical_scheme(self.target))
        object.__setattr__(self, "types", normalize_types(self.types))
        fsa.check_arc_type(self.arc_type)
        if isinstance(self.max_length, bool) or not (
                isinstance(self.max_length, int) and 1 <= self.max_length <= MAX_LENGTH):
            raise InputError(f"max_length must be an integer in 1..{MAX_LENGTH:,} (the state "
                             f"budget refuses what is too large), got {self.max_length!r}")
        if isinstance(self.gold, str) or not all(isinstance(t, str) for t in self.gold):
            raise InputError(f"gold must be a sequence of tags, got {self.gold!r}")
        object.__setattr__(self, "gold", tuple(self.gold))
        if isinstance(self.keep, str) or not all(isinstance(t, str) for t in self.keep):
            raise InputError(f"keep must be a sequence of chunk types, got {self.keep!r}")
        object.__setattr__(self, "keep", tuple(self.keep))
        if any(isinstance(w, bool) or not isinstance(w, int) or w < 1
               for w in dict(self.weights).values()):
            raise InputError(f"weights must be whole numbers >= 1 by type, got {self.weights!r}")
        object.__setattr__(self, "weights", tuple(dict(self.weights).items()))
        object.__setattr__(self, "beta", check_beta(self.beta))    # the standard β


@dataclass(frozen=True)
class Grammar:
    """A named builder; ``estimate`` gives its size before it is built, ``inspect`` the
    size of what ``grammar info`` builds besides (the functional check)."""
    name: str
    summary: str
    build: Callable[[Options], pynini.Fst]
    reads: tuple[str, ...] = field(default=("scheme", "types"))
    estimate: Callable[[Options], budget.Estimate] | None = None
    inspect: Callable[[Options], budget.Estimate] | None = None


def _validity(o: Options) -> pynini.Fst:
    return validity.validity_acceptor(o.scheme, o.types, o.arc_type)


def _encoder(o: Options) -> pynini.Fst:
    return conversion.encoder(o.scheme, o.types, o.arc_type)


def _convert(o: Options) -> pynini.Fst:
    if o.scheme == o.target:
        raise InputError(f"grammar 'convert': source and target scheme are both {o.scheme} "
                         "(give another --target)")
    return conversion.conversion_transducer(o.scheme, o.target, o.types, o.arc_type)


def _eraser(o: Options) -> pynini.Fst:
    return conversion.type_eraser(o.scheme, o.types, o.arc_type)


def _filter(o: Options) -> pynini.Fst:
    return conversion.type_filter(o.scheme, o.types, o.keep, o.arc_type)


def _by_length(build: Callable) -> Callable[[Options], pynini.Fst]:
    """The builder of a counter of (types, --max-length, arc type): T, M, T⊠M, P."""
    return lambda o: build(o.types, o.max_length, o.arc_type)


def _weighted_top(o: Options) -> int:          # the largest weight times --max-length
    return max([1] + [w for _, w in o.weights]) * o.max_length


def _weighted(o: Options) -> pynini.Fst:
    return counting.weighted_tp_transducer(o.types, o.max_length, dict(o.weights), o.arc_type)


def _squared(size: Callable[[Options], budget.Estimate]):
    """(estimate, inspect): the machine; its inverse composed with it (≤ its square:
    the type eraser's U⁻¹ ∘ U pairs the typed sequences of one untyped form)."""
    return size, lambda o: budget.Estimate(size(o).states ** 2, size(o).arcs ** 2)


def _toy(o: Options) -> pynini.Fst:
    return models.toy_bigram(o.theta, o.max_length, o.arc_type)


def _loss_space(name: str, o: Options) -> loss.SchemeTags:
    """The tags a loss machine is over (O(k): no tag space compiled), the gold given
    and each of its tags one of them."""
    if not o.gold:
        raise InputError(f"grammar {name!r} is the loss against a gold tag sequence: give "
                         f"one (--gold B-NP,I-NP,O)")
    space = loss.SchemeTags.of(o.scheme, o.types)
    unknown = [t for t in o.gold if t not in space]
    if unknown:
        raise InputError(f"grammar {name!r}: gold tag {unknown[0]!r} is not a tag of "
                         f"{o.scheme} over the chunk types {', '.join(o.types)}")
    return space


def _hamming(o: Options) -> pynini.Fst:
    return loss.hamming_loss_machine(o.gold, _loss_space("hamming-loss", o), o.arc_type)


def _f_loss(o: Options) -> pynini.Fst:
    return loss.f_loss_machine(o.gold, _loss_space("f-loss", o), o.beta, o.arc_type)


def _f_loss_estimate(o: Options) -> budget.Estimate:
    _loss_space("f-loss", o)
    floor = loss.f_loss_floor(len(o.gold), _k(o))
    if not budget.fits(floor):                  # refused before reading the chunks
        return floor
    chunks = enc.tags_to_chunks(list(o.gold), o.scheme)
    return loss.f_loss_estimate(len(o.gold), [(s, e) for _, s, e in chunks], o.scheme, o.types)


def _annotation(o: Options) -> pynini.Fst:
    return annotation.annotation_machine(o.gold, o.scheme, o.types, o.arc_type)


def _k(o: Options) -> int:
    return len(o.types)


def _counter(name: str, size: Callable[[int, int], budget.Estimate]):
    """(estimate, inspect) of T, M or T⊠M: the machine; its inverse composed with it."""
    return (lambda o: size(o.max_length, _k(o)),
            lambda o: budget.counter_self_composition(name, o.max_length, _k(o)))


def _letters(size: Callable[[int], budget.Estimate]):
    """(estimate, inspect) of an encoder or conversion (the functional check ~ itself)."""
    return (lambda o: size(_k(o)), lambda o: budget.letter_self_composition(size(_k(o))))


GRAMMARS: dict[str, Grammar] = {g.name: g for g in (
    Grammar("validity", "acceptor of the valid tag sequences of --scheme "
            "(star-free: Γ+ minus forbidden starts, bigrams and ends)", _validity,
            estimate=lambda o: budget.validity_machine(_k(o))),
    Grammar("encoder", "IOBES -> --scheme, E_scheme: the same chunks in --scheme's tags",
            _encoder, ("scheme", "types"), *_letters(budget.encoder_machine)),
    Grammar("convert", "functional transducer rewriting --scheme sequences into "
            "--target (E_scheme^-1 o E_target)", _convert, ("scheme", "target", "types"),
            *_letters(budget.conversion_machine)),
    Grammar("type-eraser", "U: valid --scheme sequences -> the same chunks as untyped "
            "IOBES (B, I, E, S, O); the exact-boundary utility is U on both tapes, then TM "
            "with --types ''", _eraser, ("scheme", "types"),
            *_squared(lambda o: budget.conversion_machine(_k(o)))),
    Grammar("type-filter", "U: valid --scheme sequences -> their chunks of the types "
            "--keep only, in IOBES (the others' tokens O); the per-type utility type:T "
            "is conlleval's F on both tapes seen through it", _filter,
            ("scheme", "types", "keep"),
            *_squared(lambda o: budget.conversion_machine(_k(o)))),
    Grammar("T", "true-positive counter over IOBES pairs x:y, states (ct, match), "
            "ct <= --max-length; writes <tp=ct> at the end (Jansche §15)",
            _by_length(counting.true_positive_transducer),
            ("types", "max_length"), *_counter("T", budget.tp_transducer)),
    Grammar("M", "chunk counter: counts B/S on the second tape, writes <m=cm> (§17)",
            _by_length(counting.chunk_counter),
            ("types", "max_length"), *_counter("M", budget.chunk_counter)),
    Grammar("TM", "T⊠M, the codomain pairing of T and M, states (ct, match, cm); paths end "
            "in <tp=a><m=b> (§18)", _by_length(counting.pair_machine), ("types", "max_length"),
            *_counter("TM", budget.pair_machine)),
    Grammar("partial", "P: SemEval-2013's partial-match credit over IOBES pairs x:y (x the "
            "prediction), states (half-credits h, claim); writes <tp=h>, h = 2·COR + PAR, "
            "h <= 2·--max-length (the partial utility)",
            _by_length(partial.partial_credit_transducer), ("types", "max_length"),
            *_squared(lambda o: partial.partial_estimate(o.max_length, _k(o)))),
    Grammar("type", "SemEval-2013's type-match credit over IOBES pairs x:y (x the prediction): "
            "writes <tp=h>, h the chunks of x that a y chunk of their type overlapping them "
            "makes correct (the type utility), for sentences of up to --max-length tokens",
            _by_length(partial.type_credit_transducer), ("types", "max_length"),
            *_squared(lambda o: partial.type_estimate(o.max_length, o.types))),
    Grammar("near", "a boundary off by one token earns half: 2 credits for a chunk x has with "
            "its span and type in y, 1 for one whose type and one boundary are a y chunk's "
            "and whose other boundary is one token off; writes <tp=h>, h <= 2·--max-length",
            _by_length(partial.near_credit_transducer), ("types", "max_length"),
            lambda o: budget.near_counter(o.max_length, _k(o)),
            lambda o: budget.near_counter(o.max_length, _k(o), inverse=True)),
    Grammar("weighted", "T_w: T with a completed match counting its type's weight "
            "(--weights LOC=2: a location counts double; a type left out weighs 1), states "
            "(ct, match); writes "
            "<tp=ct>, ct <= the largest weight times --max-length (the weighted utility, "
            "with M counting each chunk's weight)", _weighted, ("types", "max_length", "weights"),
            lambda o: budget.tp_transducer(_weighted_top(o), _k(o)),
            lambda o: budget.counter_self_composition("T", _weighted_top(o), _k(o))),
    Grammar("toy", "the slides' toy bigram model b(·|·;θ) over untyped IOB2, --max-length "
            "tokens, --theta θ (§11)", _toy, ("theta", "max_length"),
            estimate=lambda o: budget.score_lattice(o.max_length, 3)),
    Grammar("hamming-loss", "Δ_H against --gold: weight −Σ_i 1{y_i ≠ gold_i} on every y "
            "(lattice ∘ it, shortest path: the most violating y of M3N training)", _hamming,
            ("scheme", "types", "gold"),
            estimate=lambda o: loss.hamming_estimate(len(o.gold),
                                                     len(_loss_space("hamming-loss", o)))),
    Grammar("f-loss", "Δ_F against --gold: weight −(1 − F_β(y | gold)) on every y of its "
            "length, from T⊠M specialised to the gold", _f_loss,
            ("scheme", "types", "gold", "beta"), estimate=_f_loss_estimate),
    Grammar("annotation", "A ∩ validity: the --scheme sequences a partial annotation "
            "allows; --gold gives one cell per token (a tag, ?, B-PER|I-PER|O, *-PER, "
            "B-*, O!; ?~ ?~: a span not one chunk)", _annotation, ("scheme", "types", "gold"),
            estimate=lambda o: _annotation_estimate(o)),
)}


def _annotation_estimate(o: Options) -> budget.Estimate:
    """Its largest intermediates together: the validity acceptor it is composed with and
    the chain of every tag at every token (the cells' bound), doubled by each span
    marked not one chunk (``~``: the difference with a chain keeps a flag)."""
    valid = budget.validity_machine(_k(o))
    chain = budget.score_lattice(len(o.gold), len(_k_tags(o)))
    spans = len(parse_column(o.gold, o.scheme, lambda i: f"--gold token {i + 1}")[1])
    grow = 2 ** min(spans, 64)
    return budget.Estimate(valid.states + grow * chain.states, valid.arcs + grow * chain.arcs)


def _k_tags(o: Options) -> tuple[str, ...]:
    return enc.scheme_tags(o.scheme, o.types)


def grammar(name: str) -> Grammar:
    """The registered grammar ``name``; :class:`InputError` naming the known ones if none."""
    if name not in GRAMMARS:
        raise InputError(f"unknown grammar {name!r}; known: {', '.join(GRAMMARS)}")
    return GRAMMARS[name]


_OPTION_NAMES = tuple(f.name for f in dataclasses.fields(Options))


def build(name: str, options: Options | None = None, **kw) -> pynini.Fst:
    """Build the registered machine ``name`` (keyword options override ``options``)."""
    g = grammar(name)
    unknown = sorted(set(kw) - set(_OPTION_NAMES))
    if unknown:
        raise InputError(f"grammar {name!r}: unknown option(s) {', '.join(unknown)}; "
                         f"options are {', '.join(_OPTION_NAMES)}")
    o = replace(options or Options(), **kw) if kw else (options or Options())
    check_budget([(name, o)])
    return g.build(o)


def size(name: str, o: Options, info: bool = False) -> budget.Estimate:
    """The estimated size of grammar ``name`` under ``o`` (plus, with ``info``, of the
    functional check of ``grammar info``); zero for a grammar without an estimate."""
    g = grammar(name)
    est = g.estimate(o) if g.estimate else budget.Estimate(0)
    if info and g.inspect:
        est = est + g.inspect(o)
    return est


def check_budget(jobs: list[tuple[str, Options]], info: bool = False) -> None:
    """Refuse (BudgetError) the machines ``jobs`` (built and kept together, as
    :func:`export_far` does) if their estimated size exceeds the state budget; the
    message names the largest ``--max-length`` that would fit."""
    def total(k: int | None = None) -> budget.Estimate:
        out = budget.Estimate(0)
        for name, o in jobs:
            if k is not None and "max_length" in grammar(name).reads:
                o = replace(o, max_length=k)
            out = out + size(name, o, info)
        return out

    est = total()
    if budget.fits(est):
        return
    names = [_shown_key(name, o) for name, o in jobs]
    what = (f"grammar {names[0]}" if len(jobs) == 1 else
            f"grammar export of {len(jobs)} machines ({', '.join(names[:3])}"
            f"{', ...' if len(names) > 3 else ''})")
    if info:
        what += " and the check of 'functional' that info runs (its inverse composed with it)"
    length = max((o.max_length for name, o in jobs if "max_length" in grammar(name).reads),
                 default=None)
    remedy = ""
    if length is not None:
        fit = budget.largest_fitting(range(1, length), total)
        remedy = f"use --max-length {fit} or less" if fit is not None else ""
    budget.check(what, est, remedy)


def _shown_key(name: str, o: Options) -> str:
    """:func:`far_key` for a message: a gold of more than 6 tags as its first 4 and length."""
    head = "gold_" + "_".join(o.gold[:4])
    return far_key(name, o) if len(o.gold) <= 6 else far_key(
        name, replace(o, gold=o.gold[:4])).replace(head, f"{head}_...({len(o.gold):,} tags)")


def far_key(name: str, o: Options) -> str:
    """The FAR key of grammar ``name`` under options ``o``: the name, then each option
    it reads (scheme, target, ``n``max_length, ``theta``θ), joined by dots."""
    g = grammar(name)
    parts = [name]
    if "scheme" in g.reads:
        parts.append(o.scheme)
    if "target" in g.reads:
        parts.append(o.target)
    if "max_length" in g.reads:
        parts.append(f"n{o.max_length}")
    if "theta" in g.reads:
        parts.append(f"theta{o.theta:g}")
    if "gold" in g.reads:
        parts.append("gold_" + "_".join(o.gold))
    if "beta" in g.reads:
        parts.append(f"beta{o.beta:g}")
    if "keep" in g.reads:
        parts.append("keep_" + "_".join(o.keep))
    if "weights" in g.reads and o.weights:
        parts.append("w_" + "_".join(f"{t}{w}" for t, w in o.weights))
    return ".".join(parts)


def export_far(path: str, names: list[str] | None, options: Options) -> list[str]:
    """Write the named machines (default: every grammar, every target scheme; the loss
    machines only when ``options.gold`` is given, the type filter when ``options.keep``
    is) to a FAR
    at ``path``; return the keys written, sorted.  ``path`` is checked before any
    machine is built; the FAR is written atomically and read back (OutputError)."""
    outputs.check_output(path, "FAR")
    jobs: list[tuple[str, Options]] = []
    every = [g for g in GRAMMARS if (options.gold or "gold" not in GRAMMARS[g].reads)
             and (options.keep or "keep" not in GRAMMARS[g].reads)]
    for name in names or every:
        if "target" in grammar(name).reads and not names:
            jobs += [(name, replace(options, target=t)) for t in enc.SCHEMES
                     if t != options.scheme]
        else:
            jobs.append((name, options))
    check_budget(jobs)                          # all of them, before building any
    written = {far_key(name, o): build(name, o) for name, o in jobs}
    return fsa.write_far(path, written, options.arc_type)
