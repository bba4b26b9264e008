"""``fstchunk grammar {list,info,print,draw,export}``: the machines, inspected and exported."""

from __future__ import annotations

import argparse
import sys

from ..schemes import encodings as enc
from ..grammars import fsa
from ..io.annotation import cell_types
from ..io.conll import iter_conll
from ..core.errors import FstchunkError, InputError, SchemeError
from ..core.fbeta import parse_weights
from ..grammars import budget, drawing, registry
from ..schemes.tagspace import TagSpace
from .common import BETA_HELP, HelpFormatter, beta_option, positive_int, split_list, warn


def add_parser(sub) -> None:
    p = sub.add_parser("grammar", formatter_class=HelpFormatter,
                       help="list, inspect, print, draw and export the machines")
    p.add_argument("action", choices=("list", "info", "print", "draw", "export"),
                   help="what to do with the grammar(s)")
    p.add_argument("names", nargs="*", help="grammar name(s), see 'fstchunk grammar list'")
    p.add_argument("-o", "--output", default=None,
                   help="output file: .far for export; .dot, .svg or .png for draw")
    p.add_argument("--scheme", default="IOB2", help=f"chunk scheme ({', '.join(enc.SCHEMES)})")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--types", default=None,
                   help="chunk types, e.g. NP,VP (none of --types/--tags/--from-data: untyped)")
    g.add_argument("--tags", default=None,
                   help="a tag list such as O,B-NP,I-NP; the chunk types are read off it, and "
                        "every tag must be a tag of --scheme")
    g.add_argument("--from-data", metavar="FILE", default=None,
                   help="read the chunk types off the last column of a CoNLL file")
    p.add_argument("--target", default="IOBES", help="target scheme of 'convert'")
    p.add_argument("--max-length", type=positive_int, default=4,
                   help="length bound for the machines that need one (T, M, TM: the count "
                        f"bound; toy: tokens), at most {registry.MAX_LENGTH:,} and as the "
                        "state budget allows")
    p.add_argument("--theta", type=float, default=0.5, help="θ of the toy bigram model")
    p.add_argument("--gold", default=None, metavar="TAGS",
                   help="the gold tag sequence of hamming-loss and f-loss, e.g. B-NP,I-NP,O; "
                        "annotation: one cell per token (?, B-PER|I-PER|O, *-PER, B-*) "
                        "(its chunk types are the tag set's unless --types/--tags/--from-data)")
    p.add_argument("--beta", type=beta_option, default=1.0, help=f"f-loss: {BETA_HELP}")
    p.add_argument("--keep", default=None, metavar="TYPES",
                   help="the chunk types type-filter keeps, e.g. PER (the per-type "
                        "utility type:PER) or PER,LOC")
    p.add_argument("--weights", default=None, metavar="TYPE=W,...",
                   help="the type weights of the weighted counter, e.g. LOC=2 (the weighted "
                        "utility weighted:LOC=2)")
    p.add_argument("--arc-type", default="log64", choices=("standard", "log", "log64"),
                   help="OpenFst arc type of the machines")
    add_state_budget(p)
    p.set_defaults(func=run)


def add_state_budget(p: argparse.ArgumentParser, applies: str = "") -> None:
    """``--state-budget N``: the largest machine the command may build (the command
    runs under :func:`fstchunk.grammars.budget.use_state_budget`)."""
    p.add_argument("--state-budget", type=positive_int, default=None, metavar="N",
                   help=f"{applies}refuse to build machines larger than N states (4 arcs "
                        f"count as one state; None: ${budget.ENV_VAR}, else "
                        f"{budget.DEFAULT_STATE_BUDGET})")


def options(args: argparse.Namespace) -> registry.Options:
    """The grammar options of the command line, the tag set checked against the scheme."""
    scheme = enc.canonical_scheme(args.scheme)
    types = split_list(args.types, "--types") if args.types else None
    tag_like = [t for t in types or () if enc.split_tag(t)[0] in enc.scheme_prefixes(scheme)]
    if tag_like:              # a type may hold hyphens (I-PER), but tags were likely meant
        warn("grammar", f"--types {','.join(tag_like)}: read as chunk types (tags "
                        f"{enc.make_tag(enc.scheme_prefixes(scheme)[0], tag_like[0])}, ...); "
                        f"for a tag list use --tags")
    if args.tags:
        tags = split_list(args.tags, "--tags")
        try:                        # tags of the scheme that express it
            types = TagSpace.of(tuple(tags), scheme).types
        except FstchunkError as e:
            raise SchemeError(f"--tags: {e}") from None
    elif args.from_data:
        seen: set[str] = set()
        for s in iter_conll(args.from_data, min_columns=1):
            for i, t in enumerate(s.column(-1)):
                try:
                    enc.tag_type(t)
                except SchemeError as e:
                    raise SchemeError(f"{s.where(i)}: {e}", i) from None
            seen.update(s.column(-1))
        if not seen:
            raise InputError(f"{args.from_data}: no sentences to read chunk types from")
        types = enc.chunk_types(seen)
    gold = tuple(split_list(args.gold, "--gold")) if args.gold else ()
    if gold and types is None:
        types = ((cell_types(gold, scheme) if "annotation" in args.names else
                  enc.chunk_types(gold)) or None)
    return registry.Options(scheme=scheme, types=types, target=args.target,
                            max_length=args.max_length, arc_type=args.arc_type,
                            theta=args.theta, gold=gold, beta=args.beta,
                            keep=tuple(split_list(args.keep, "--keep")) if args.keep else (),
                            weights=_weights(args.weights))


def _weights(text: str | None) -> tuple:
    """``--weights LOC=2,PER=3`` as ((type, weight), ...)."""
    if not text:
        return ()
    try:
        return tuple(parse_weights(text).items())
    except InputError:
        raise InputError(f"--weights {text}: give TYPE=W,... with whole weights W >= 1 "
                         f"(e.g. LOC=2,PER=3)") from None


def run(args: argparse.Namespace) -> int:
    with budget.use_state_budget(args.state_budget):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    if args.action == "list":
        width = max(map(len, registry.GRAMMARS))
        for g in registry.GRAMMARS.values():
            print(f"{g.name:<{width}}  {g.summary}  [options: {', '.join(g.reads)}]")
        return 0
    o = options(args)
    if args.action == "export":
        if not args.output:
            raise InputError("grammar export needs -o FILE.far")
        keys = registry.export_far(args.output, args.names or None, o)
        print(f"wrote {len(keys)} machines to {args.output}: {', '.join(keys)}")
        return 0
    if len(args.names) != 1:
        raise InputError(f"grammar {args.action} takes exactly one grammar name "
                         f"(see 'fstchunk grammar list')")
    name = args.names[0]
    if args.action == "draw":
        if not args.output:
            raise InputError("grammar draw needs -o FILE.{dot,svg,png}")
        drawing.check_drawing(args.output)        # before building the machine
    registry.check_budget([(name, o)], info=args.action == "info")
    fst = registry.build(name, o)
    if args.action == "info":
        print(f"grammar: {name} ({registry.far_key(name, o)})")
        print(f"tag set: {', '.join(o.types) if o.types != ('',) else '(untyped)'}")
        for k, v in fsa.properties(fst).items():
            print(f"{k}: {'unknown' if v is None else v}")
    elif args.action == "print":
        sys.stdout.write(drawing.att_text(fst))
    else:
        print(drawing.draw(fst, args.output, title=registry.far_key(name, o)))
    return 0
