"""The ``fstchunk`` command line.

Subcommands: ``demo``, ``eval``, ``grammar {list,info,print,draw,export}``,
``expected``.  Errors in the input end the program with one line on standard
error naming what and where, and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import encodings as enc


def _add_tagset_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scheme", default="IOB2",
                   help=f"chunk scheme ({', '.join(enc.SCHEMES)}; default IOB2)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--types", default=None, help="chunk types, e.g. NP,VP (default: untyped)")
    g.add_argument("--tags", default=None,
                   help="a tag list such as O,B-NP,I-NP; the chunk types are read off it")
    g.add_argument("--from-data", metavar="FILE", default=None,
                   help="read the chunk types off the last column of a CoNLL file")
    p.add_argument("--target", default="IOBES", help="target scheme of 'convert' (default IOBES)")
    p.add_argument("--max-length", type=int, default=4,
                   help="length bound for the machines that need one (T, M, TM)")
    p.add_argument("--theta", type=float, default=0.5, help="θ of the toy bigram model")
    p.add_argument("--arc-type", default="log64", choices=("standard", "log", "log64"))


def _options(args):
    from .machines import Options
    types = args.types
    if args.tags:
        types = enc.chunk_types([t.strip() for t in args.tags.split(",") if t.strip()])
    elif args.from_data:
        from .conll import iter_conll
        seen = set()
        for s in iter_conll(args.from_data, min_columns=1):
            seen.update(s.column(-1))
        types = enc.chunk_types(seen)
    return Options(scheme=args.scheme, types=types, target=args.target,
                   max_length=args.max_length, arc_type=args.arc_type, theta=args.theta)


def cmd_grammar(args) -> int:
    from . import fsa, machines
    if args.action == "list":
        width = max(map(len, machines.GRAMMARS))
        for g in machines.GRAMMARS.values():
            print(f"{g.name:<{width}}  {g.summary}  [options: {', '.join(g.reads)}]")
        return 0
    o = _options(args)
    if args.action == "export":
        if not args.output:
            raise ValueError("grammar export needs -o FILE.far")
        keys = machines.export_far(args.output, args.names or None, o)
        print(f"wrote {len(keys)} machines to {args.output}: {', '.join(keys)}")
        return 0
    if len(args.names) != 1:
        raise ValueError(f"grammar {args.action} takes exactly one grammar name "
                         f"(see 'fstchunk grammar list')")
    name = args.names[0]
    fst = machines.build(name, o)
    if args.action == "info":
        print(f"grammar: {name} ({machines.far_key(name, o)})")
        print(f"tag set: {', '.join(o.types) if o.types != ('',) else '(untyped)'}")
        for k, v in fsa.properties(fst).items():
            print(f"{k}: {'unknown' if v is None else v}")
    elif args.action == "print":
        sys.stdout.write(machines.att_text(fst))
    elif args.action == "draw":
        if not args.output:
            raise ValueError("grammar draw needs -o FILE.{dot,svg,png}")
        print(machines.draw(fst, args.output, title=machines.far_key(name, o)))
    return 0


def cmd_eval(args) -> int:
    from .evaluate import evaluate_file
    rep = evaluate_file(args.file, scheme=args.scheme, beta=args.beta, delimiter=args.delimiter)
    sys.stdout.write(rep.json() + "\n" if args.json else rep.conlleval())
    return 0


def cmd_demo(args) -> int:
    from .demo import run
    return run(plot=args.plot)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="fstchunk", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="the slides' toy example and the encodings, on built-in data")
    p.add_argument("--plot", default=None, metavar="PNG", help="also plot E[F] against θ")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("eval", help="conlleval-format report for a CoNLL file "
                                    "(last two columns: gold, predicted)")
    p.add_argument("file")
    p.add_argument("--scheme", default=None,
                   help="read tags leniently in this scheme (default: exactly as conlleval.pl)")
    p.add_argument("--beta", type=float, default=1.0,
                   help="β of F_β = (β+1)tp/(m(x)+β·m(y)) (default 1)")
    p.add_argument("--delimiter", default=None, help="column delimiter (default: white space)")
    p.add_argument("--json", action="store_true", help="print the scores as JSON")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("grammar", help="list, inspect, print, draw and export the machines")
    p.add_argument("action", choices=("list", "info", "print", "draw", "export"))
    p.add_argument("names", nargs="*", help="grammar name(s), see 'fstchunk grammar list'")
    p.add_argument("-o", "--output", default=None, help="output file (draw, export)")
    _add_tagset_options(p)
    p.set_defaults(func=cmd_grammar)
    return ap


def main(argv=None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # argparse binds an optional-length positional before the options; names
        # given after them ("grammar export -o x.far validity") arrive here.
        if args.command != "grammar" or any(x.startswith("-") for x in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.names = list(args.names) + extra
    try:
        return args.func(args)
    except BrokenPipeError:
        return 0
    except (ValueError, RuntimeError, OSError) as e:
        print(f"fstchunk {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
