"""The registry of every machine fstchunk can build, for inspection and export.

``fstchunk grammar list|info|print|draw|export`` goes through :data:`GRAMMARS`:
each entry names a builder of a grammar module (:mod:`~fstchunk.grammars.validity`,
:mod:`~fstchunk.grammars.conversion`, :mod:`~fstchunk.grammars.counting`,
:mod:`~fstchunk.grammars.models`) and the options it reads (scheme, chunk types,
target scheme, length bound, θ, arc type).  :func:`export_far` is the one FAR
exporter of the package: the grammar modules only build machines.

Pitfalls:

* a FAR key is :func:`far_key` of the grammar and the options it reads, e.g.
  ``validity.IOB2``, ``convert.IOB2.IOE1``, ``T.n4``; options a grammar does not
  read do not appear in its key, so two calls that differ only in such an option
  write the same key.
* :func:`export_far` without names exports every grammar for one scheme and the
  conversions from it to *every* other target (``--target`` is then ignored);
  with names, ``convert`` is written for ``--target`` only.
* a FAR holds one arc type; every machine is built in ``options.arc_type``.
* :func:`draw` always writes the ``.dot`` file; SVG/PNG/PDF need Graphviz's
  ``dot`` on ``PATH`` and raise :class:`RuntimeError` (not an input error)
  without it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from dataclasses import dataclass, field, replace
from typing import Callable

import pynini

from .. import encodings as enc
from .. import fsa
from ..errors import InputError
from ..tagspace import normalize_types
from . import conversion, counting, models, validity


@dataclass(frozen=True)
class Options:
    """What a builder may read; unused fields are ignored."""
    scheme: str = "IOB2"
    types: tuple[str, ...] = ("",)
    target: str = "IOBES"
    max_length: int = 4
    arc_type: str = "log64"
    theta: float = 0.5

    def __post_init__(self) -> None:
        object.__setattr__(self, "scheme", enc.canonical_scheme(self.scheme))
        object.__setattr__(self, "target", enc.canonical_scheme(self.target))
        object.__setattr__(self, "types", normalize_types(self.types))
        fsa.check_arc_type(self.arc_type)
        if not (isinstance(self.max_length, int) and 1 <= self.max_length <= 64):
            raise InputError(f"max_length must be an integer in 1..64, got {self.max_length!r}")


@dataclass(frozen=True)
class Grammar:
    name: str
    summary: str
    build: Callable[[Options], pynini.Fst]
    reads: tuple[str, ...] = field(default=("scheme", "types"))


def _validity(o: Options) -> pynini.Fst:
    return validity.validity_acceptor(o.scheme, o.types, o.arc_type)


def _encoder(o: Options) -> pynini.Fst:
    return conversion.encoder(o.scheme, o.types, o.arc_type)


def _convert(o: Options) -> pynini.Fst:
    if o.scheme == o.target:
        raise InputError(f"grammar 'convert': source and target scheme are both {o.scheme} "
                         "(give another --target)")
    return conversion.conversion_transducer(o.scheme, o.target, o.types, o.arc_type)


def _tp(o: Options) -> pynini.Fst:
    return counting.true_positive_transducer(o.types, o.max_length, o.arc_type)


def _m(o: Options) -> pynini.Fst:
    return counting.chunk_counter(o.types, o.max_length, o.arc_type)


def _tm(o: Options) -> pynini.Fst:
    return counting.pair_machine(o.types, o.max_length, o.arc_type)


def _toy(o: Options) -> pynini.Fst:
    return models.toy_bigram(o.theta, o.max_length, o.arc_type)


GRAMMARS: dict[str, Grammar] = {g.name: g for g in (
    Grammar("validity", "acceptor of the valid tag sequences of --scheme "
            "(star-free: Γ+ minus forbidden starts, bigrams and ends)", _validity),
    Grammar("encoder", "IOBES -> --scheme: the cdrewrite cascade every conversion is "
            "built from", _encoder),
    Grammar("convert", "functional transducer rewriting --scheme sequences into "
            "--target (E_scheme^-1 o E_target)", _convert, ("scheme", "target", "types")),
    Grammar("T", "true-positive counter over IOBES pairs x:y, states (ct, match), "
            "ct <= --max-length; writes <tp=ct> at the end (Jansche §15)", _tp,
            ("types", "max_length")),
    Grammar("M", "chunk counter: counts B/S on the second tape, writes <m=cm> (§17)", _m,
            ("types", "max_length")),
    Grammar("TM", "T⊠M, the codomain pairing of T and M, states (ct, match, cm); paths end "
            "in <tp=a><m=b> (§18)", _tm, ("types", "max_length")),
    Grammar("toy", "the slides' toy bigram model b(·|·;θ) over untyped IOB2, --max-length "
            "tokens, --theta θ (§11)", _toy, ("theta", "max_length")),
)}


def register(grammar: Grammar) -> None:
    GRAMMARS[grammar.name] = grammar


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
    return g.build(o)


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
    return ".".join(parts)


def export_far(path: str, names: list[str] | None, options: Options) -> list[str]:
    """Write the named machines (default: every grammar, every target scheme) to a FAR
    at ``path``; return the keys written, sorted."""
    jobs: list[tuple[str, Options]] = []
    for name in names or list(GRAMMARS):
        if "target" in grammar(name).reads and not names:
            jobs += [(name, replace(options, target=t)) for t in enc.SCHEMES
                     if t != options.scheme]
        else:
            jobs.append((name, options))
    written = {far_key(name, o): build(name, o) for name, o in jobs}
    return fsa.write_far(path, written, options.arc_type)


def att_text(fst: pynini.Fst) -> str:
    """AT&T text with tag names (acceptors in the 3-column form)."""
    acceptor = fst.properties(pynini.ACCEPTOR, True) == pynini.ACCEPTOR
    return fst.print(acceptor=acceptor, show_weight_one=False)


def draw(fst: pynini.Fst, path: str, title: str = "") -> str:
    """Draw ``fst`` to ``path``: ``.dot`` always; ``.svg``/``.png``/``.pdf`` via Graphviz.

    Raises ``RuntimeError`` with install instructions when Graphviz ``dot`` is missing.
    """
    root, ext = os.path.splitext(path)
    ext = ext.lower().lstrip(".")
    if ext not in ("dot", "svg", "png", "pdf"):
        raise InputError(f"cannot draw to {path!r}: use a .dot, .svg, .png or .pdf file name")
    acceptor = fst.properties(pynini.ACCEPTOR, True) == pynini.ACCEPTOR
    dot_path = path if ext == "dot" else root + ".dot"
    fst.draw(dot_path, acceptor=acceptor, title=title, portrait=True, vertical=False,
             show_weight_one=False, float_format="g", precision=4)
    if ext == "dot":
        return path
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError(
            f"wrote {dot_path}, but rendering {ext.upper()} needs Graphviz's 'dot' program, "
            "which is not installed: install it (Debian/Ubuntu: apt-get install graphviz; "
            "macOS: brew install graphviz; conda: conda install graphviz) or draw to a .dot file")
    done = subprocess.run([exe, f"-T{ext}", dot_path, "-o", path], capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"wrote {dot_path}, but Graphviz's 'dot' could not render {path} "
                           f"(exit code {done.returncode}): {done.stderr.strip()}")
    return path
