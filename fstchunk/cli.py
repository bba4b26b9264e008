"""The ``fstchunk`` command line.

Subcommands: ``demo``, ``eval``, ``grammar {list,info,print,draw,export}``,
``expected``, ``decode``, ``train``, ``joint {train,decode}``.  Each ``cmd_*``
parses nothing and computes little: it reads files and calls the library
(models through their protocol, :mod:`fstchunk.decode`,
:class:`fstchunk.training.Trainer`).

Errors: a :class:`~fstchunk.errors.FstchunkError` (bad input, option or model
file), an :class:`OSError` (a file that cannot be read or written) or a
:class:`RuntimeError` (an external tool or a worker process failing) ends the
program with one line ``fstchunk COMMAND: error: ...`` on standard error and
exit status 2; anything else is a bug and shows its traceback.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import encodings as enc
from . import fsa
from .conll import iter_conll, read_conll, write_conll
from .decode import DECODERS, decode_sentences
from .demo import run as run_demo
from .errors import FstchunkError, InputError
from .evaluate import evaluate_file
from .expected import expected_f
from .grammars import registry as machines
from .models import joint as J
from .models import load_model
from .models.crf import CRF
from .models.hmm import HMM
from .models.objectives import OBJECTIVES
from .parallel import single_threaded_blas
from .scorefile import load_lattices
from .training import Trainer


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


def _options(args) -> machines.Options:
    types = args.types
    if args.tags:
        types = enc.chunk_types([t.strip() for t in args.tags.split(",") if t.strip()])
    elif args.from_data:
        seen = set()
        for s in iter_conll(args.from_data, min_columns=1):
            seen.update(s.column(-1))
        types = enc.chunk_types(seen)
    return machines.Options(scheme=args.scheme, types=types, target=args.target,
                   max_length=args.max_length, arc_type=args.arc_type, theta=args.theta)


def cmd_grammar(args) -> int:
    if args.action == "list":
        width = max(map(len, machines.GRAMMARS))
        for g in machines.GRAMMARS.values():
            print(f"{g.name:<{width}}  {g.summary}  [options: {', '.join(g.reads)}]")
        return 0
    o = _options(args)
    if args.action == "export":
        if not args.output:
            raise InputError("grammar export needs -o FILE.far")
        keys = machines.export_far(args.output, args.names or None, o)
        print(f"wrote {len(keys)} machines to {args.output}: {', '.join(keys)}")
        return 0
    if len(args.names) != 1:
        raise InputError(f"grammar {args.action} takes exactly one grammar name "
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
            raise InputError("grammar draw needs -o FILE.{dot,svg,png}")
        print(machines.draw(fst, args.output, title=machines.far_key(name, o)))
    return 0


def cmd_eval(args) -> int:
    rep = evaluate_file(args.file, scheme=args.scheme, beta=args.beta, delimiter=args.delimiter)
    sys.stdout.write(rep.json() + "\n" if args.json else rep.conlleval())
    return 0


def cmd_expected(args) -> int:
    sents = read_conll(args.file)
    if (args.scores is None) == (args.model is None):
        raise InputError("give exactly one of --scores NPZ or --model MODEL")
    lattices = load_model(args.model).lattices(sents) if args.model else load_lattices(args.scores)
    if len(lattices) != len(sents):
        raise InputError(f"{args.scores} scores {len(lattices)} sentences but {args.file} "
                         f"has {len(sents)}")
    rows = []
    tot = {"tp": 0.0, "m_hyp": 0.0, "m_ref": 0.0}
    for k, (s, lat) in enumerate(zip(sents, lattices)):
        fixed = s.column(args.column)
        kw = {"hypothesis": fixed} if args.direction == "decoding" else {"reference": fixed}
        try:
            r = expected_f(lat, beta=args.beta, method=args.method, **kw)
        except FstchunkError as e:
            raise type(e)(f"{s.where(0)} (sentence {k}): {e}") from None
        rows.append({"sentence": k, "line": s.lines[0], "tokens": len(s), "tp": r.tp,
                     "m_hyp": r.m_hyp, "m_ref": r.m_ref, "precision": r.precision,
                     "recall": r.recall, "f": r.f})
        for key in tot:
            tot[key] += getattr(r, key)
    mean_f = sum(r["f"] for r in rows) / len(rows)
    corpus_f = ((args.beta + 1) * tot["tp"] / (tot["m_hyp"] + args.beta * tot["m_ref"])
                if tot["m_hyp"] + args.beta * tot["m_ref"] else 1.0)
    summary = {"sentences": len(rows), "direction": args.direction, "beta": args.beta,
               "expected_tp": tot["tp"], "expected_m_hyp": tot["m_hyp"],
               "expected_m_ref": tot["m_ref"], "mean_sentence_expected_f": mean_f,
               "corpus_f_of_expectations": corpus_f}
    if args.json:
        print(json.dumps({"summary": summary, "sentences": rows}, indent=2))
        return 0
    print(f"{'sent':>5} {'line':>7} {'n':>4} {'E[tp]':>8} {'m_hyp':>8} {'m_ref':>8} "
          f"{'E[P]':>7} {'E[R]':>7} {'E[F]':>7}")
    for r in rows:
        print(f"{r['sentence']:>5} {r['line']:>7} {r['tokens']:>4} {r['tp']:8.4f} "
              f"{r['m_hyp']:8.4f} {r['m_ref']:8.4f} {r['precision']:7.4f} {r['recall']:7.4f} "
              f"{r['f']:7.4f}")
    print(f"mean per-sentence E[F_{args.beta:g}] = {mean_f:.6f}; corpus F of expected counts "
          f"= {corpus_f:.6f} ({args.direction} direction)")
    return 0


def cmd_decode(args) -> int:
    model = load_model(args.model)
    sents = read_conll(args.input)
    preds = decode_sentences(model, sents, args.decoder, args.beta, args.k, args.output_scheme)
    rows = [[r + [t] for r, t in zip(s.rows, p)] for s, p in zip(sents, preds)]
    write_conll(rows, args.output or sys.stdout)
    return 0


def cmd_train(args) -> int:
    train = read_conll(args.train)
    if args.model_type == "hmm":
        HMM(scheme=args.scheme).fit(train).save(args.output)
        print(f"wrote {args.output}")
        return 0
    if args.init:
        crf = CRF.load(args.init)
        data = crf.training_data(train)
    else:
        crf, data = CRF.prepare(train, args.features, args.scheme, min_count=args.min_count)
    crf.settings.update(train=args.train, dev=args.dev, features=crf.fmap.template,
                        init=args.init)
    Trainer(objective=args.objective, l2=args.l2, beta=args.beta, max_iter=args.max_iter,
            dev=read_conll(args.dev) if args.dev else None, dev_every=args.dev_every,
            checkpoint=args.output + ".ckpt", checkpoint_every=args.checkpoint_every,
            resume=args.resume, output=args.output, progress=not args.quiet,
            log=print).fit(crf, data)
    print(f"wrote {args.output}")
    return 0


def cmd_joint_train(args) -> int:
    sents = read_conll(args.train)[:args.sentences]
    data = J.layered(sents, args.collapse_pos, args.np_only)
    model, encoded = J.model_for(data, args.kind, {"collapse_pos": args.collapse_pos,
                                                   "np_only": args.np_only})
    model.fit(encoded, args.algorithm, args.iterations, l2=args.l2, progress=not args.quiet)
    model.save(args.output)
    print(f"wrote {args.output}")
    return 0


def cmd_joint_decode(args) -> int:
    model = J.JointModel.load(args.model)
    sents = read_conll(args.input)
    data = J.layered(sents, model.settings.get("collapse_pos", False),
                     model.settings.get("np_only", False))
    pos, chunks = J.predict(model, data, args.decoder, args.beta)
    if args.json:
        print(json.dumps(J.scores(data, pos, chunks), indent=2))
        return 0
    rows = [[r + [p, c] for r, p, c in zip(s.rows, ps, cs)]
            for s, ps, cs in zip(sents, pos, chunks)]
    write_conll(rows, sys.stdout)
    return 0


def cmd_demo(args) -> int:
    return run_demo()


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="fstchunk", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="the slides' toy example and the encodings, on built-in data")
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

    p = sub.add_parser("expected", help="expected tp, P, R and F_β of each sentence of a CoNLL "
                                        "file under a model's score arrays (.npz)")
    p.add_argument("file", help="CoNLL file")
    p.add_argument("--scores", default=None, metavar="NPZ",
                   help="score arrays, one lattice per sentence (see fstchunk.scorefile)")
    p.add_argument("--model", default=None, help="a saved model (fstchunk train)")
    p.add_argument("--column", type=int, default=-1,
                   help="the column holding the fixed tag sequence (default: last)")
    p.add_argument("--direction", choices=("training", "decoding"), default="training",
                   help="training: the column is the gold, hypotheses ~ model (default); "
                        "decoding: the column is a hypothesis, references ~ model")
    p.add_argument("--beta", type=float, default=1.0)
    p.add_argument("--method", choices=("fast", "fst"), default="fast")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_expected)

    p = sub.add_parser("decode", help="tag a CoNLL file with a saved model; writes its columns "
                                      "plus a predicted-tag column")
    p.add_argument("--model", required=True)
    p.add_argument("--input", required=True, help="CoNLL file (word and POS columns first)")
    p.add_argument("--decoder", choices=DECODERS, default="map")
    p.add_argument("--beta", type=float, default=1.0, help="β of the MEU decoders")
    p.add_argument("--k", type=int, default=20, help="paths reranked by meu-kbest")
    p.add_argument("--output-scheme", default="IOB2", help="scheme of the predicted column")
    p.add_argument("-o", "--output", default=None, help="output file (default: stdout)")
    p.set_defaults(func=cmd_decode)

    p = sub.add_parser("train", help="train a CRF (ML or minimum-risk) or a counting HMM")
    p.add_argument("--train", required=True, help="CoNLL training file (word, POS, ..., tag)")
    p.add_argument("--dev", default=None, help="CoNLL file for the dev F in the progress bar")
    p.add_argument("--features", default="tmpt3", choices=("tmpt1", "tmpt2", "tmpt3", "tmpt4",
                                                            "ner"))
    p.add_argument("--objective", default="ml", choices=tuple(OBJECTIVES))
    p.add_argument("--beta", type=float, default=1.0, help="β of the MEU objectives")
    p.add_argument("--l2", type=float, default=1.0, help="λ of the penalty λ‖θ‖²")
    p.add_argument("--init", default=None, help="start from this saved CRF (e.g. the ML one)")
    p.add_argument("-o", "--output", required=True, help="model file to write (.npz)")
    p.add_argument("--model-type", default="crf", choices=("crf", "hmm"))
    p.add_argument("--scheme", default="IOB2", help="scheme the model tags in (data: IOB2)")
    p.add_argument("--min-count", type=int, default=1, help="drop rarer feature strings")
    p.add_argument("--max-iter", type=int, default=150, help="L-BFGS iterations")
    p.add_argument("--dev-every", type=int, default=10, help="dev F every K iterations")
    p.add_argument("--checkpoint-every", type=int, default=10,
                   help="save OUTPUT.ckpt every K iterations")
    p.add_argument("--resume", action="store_true", help="continue from OUTPUT.ckpt")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("joint", help="joint POS tagging and chunking (Shimizu & Haas 2006)")
    jsub = p.add_subparsers(dest="joint_command", required=True)
    q = jsub.add_parser("train", help="train a joint model (or a tagger/chunker for cascades)")
    q.add_argument("--train", required=True, help="CoNLL file: word, POS, ..., chunk tag")
    q.add_argument("--sentences", type=int, default=None, help="use the first N sentences")
    q.add_argument("--collapse-pos", action="store_true", help="POS collapsed by Table 3")
    q.add_argument("--np-only", action="store_true", help="keep NP chunks only (B/I/O)")
    q.add_argument("--algorithm", choices=("perceptron", "mmvp", "crf"), default="mmvp")
    q.add_argument("--iterations", type=int, default=10,
                   help="perceptron epochs, or L-BFGS iterations for crf")
    q.add_argument("--l2", type=float, default=0.5, help="λ of λ‖w‖² (crf)")
    q.add_argument("--kind", choices=("joint", "tagger", "chunker"), default="joint",
                   help="joint model (default), POS tagger or chunker of a cascade")
    q.add_argument("-o", "--output", required=True, help="model file to write (.npz)")
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    q.set_defaults(func=cmd_joint_train)
    q = jsub.add_parser("decode", help="CoNLL in; CoNLL plus predicted POS and chunk columns "
                                       "out (or --json scores against the input's gold)")
    q.add_argument("--model", required=True)
    q.add_argument("--input", required=True)
    q.add_argument("--decoder", choices=("map", "meu"), default="map",
                   help="chunk layer by Viterbi (map) or by exact MEU over the joint model")
    q.add_argument("--beta", type=float, default=1.0, help="β of the MEU decoder")
    q.add_argument("--json", action="store_true",
                   help='print {"pos_accuracy", "np_accuracy", "np_f1"} (percent)')
    q.set_defaults(func=cmd_joint_decode)

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
        with single_threaded_blas():        # small matrices: see fstchunk.parallel
            return args.func(args)
    except BrokenPipeError:
        return 0
    except (FstchunkError, OSError, RuntimeError) as e:
        print(f"fstchunk {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
