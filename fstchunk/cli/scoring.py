"""``fstchunk eval`` (conlleval on a CoNLL file) and ``fstchunk expected`` (E[tp], E[P],
E[R], E[F_β] of each sentence under a model or score arrays)."""

from __future__ import annotations

import argparse
import json
import sys

from .. import encodings as enc
from ..errors import FstchunkError, InputError
from ..evaluate import evaluate_file
from ..expected import expected_f
from ..grammars import budget
from ..models import load_model
from ..models.io import read_metadata
from ..scorefile import load_lattices
from .common import (HelpFormatter, add_on_invalid, columns_spec, model_layout,
                     positive_float, read_gold)
from .grammar import add_state_budget


def add_parsers(sub) -> None:
    p = sub.add_parser("eval", formatter_class=HelpFormatter,
                       help="conlleval-format report for a CoNLL file "
                            "(last two columns: gold, predicted)")
    p.add_argument("file", help="CoNLL file whose last two columns are gold and predicted tags")
    p.add_argument("--scheme", default=None,
                   help="read tags leniently in this scheme (none: exactly as conlleval.pl)")
    p.add_argument("--beta", type=positive_float, default=1.0,
                   help="β of F_β = (β+1)tp/(m(x)+β·m(y))")
    p.add_argument("--delimiter", default=None, help="column delimiter (none: white space)")
    p.add_argument("--json", action="store_true", help="print the scores as JSON")
    p.set_defaults(func=run_eval)

    p = sub.add_parser("expected", formatter_class=HelpFormatter,
                       help="expected tp, P, R and F_β of each sentence of a CoNLL file "
                            "under a saved model (--model) or score arrays (--scores)")
    p.add_argument("file", help="CoNLL file")
    p.add_argument("--model", default=None, help="a saved model (fstchunk train)")
    p.add_argument("--scores", default=None, metavar="NPZ",
                   help="score arrays, one lattice per sentence (see fstchunk.scorefile)")
    p.add_argument("--column", type=int, default=-1,
                   help="the column holding the fixed tag sequence (negative: from the right)")
    p.add_argument("--scheme", default="IOB2", help="scheme of that column's tags")
    p.add_argument("--direction", choices=("training", "decoding"), default="training",
                   help="training: the column is the gold, hypotheses ~ model; "
                        "decoding: the column is a hypothesis, references ~ model")
    p.add_argument("--beta", type=positive_float, default=1.0, help="β of F_β")
    p.add_argument("--method", choices=("fast", "fst"), default="fast",
                   help="the fast engine or composition with the machines")
    add_state_budget(p, "with --method fst: ")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.add_argument("--columns", type=columns_spec, default=None, metavar="SPEC",
                   help="where the model's word and POS columns are in FILE (e.g. word,_,pos,tag); "
                        "none: where the model was trained to read them")
    add_on_invalid(p)
    p.set_defaults(func=run_expected)


def run_eval(args: argparse.Namespace) -> int:
    rep = evaluate_file(args.file, scheme=args.scheme, beta=args.beta, delimiter=args.delimiter)
    sys.stdout.write(rep.json() + "\n" if args.json else rep.conlleval())
    return 0


def _lattices(args: argparse.Namespace, sents):
    if (args.scores is None) == (args.model is None):
        raise InputError("give exactly one of --model MODEL or --scores NPZ")
    if args.model:
        model = load_model(args.model)
        require = getattr(model, "require_probabilities", None)   # perceptron/MMVP scores
        if require is not None:
            require()
        return model.lattices(model_layout(sents, args.columns, model)), args.model
    try:
        read_metadata(args.scores)
    except FstchunkError:
        return load_lattices(args.scores), args.scores
    raise InputError(f"{args.scores} is a saved fstchunk model, not a score file: "
                     f"give it as --model {args.scores}")


def run_expected(args: argparse.Namespace) -> int:
    with budget.use_state_budget(args.state_budget):
        return _run_expected(args)


def _run_expected(args: argparse.Namespace) -> int:
    sents = read_gold(args.file, args.scheme, args.column, args.on_invalid, "expected")
    lattices, source = _lattices(args, sents)
    if len(lattices) != len(sents):
        raise InputError(f"{source} scores {len(lattices)} sentences but {args.file} "
                         f"has {len(sents)}")
    rows = []
    tot = {"tp": 0.0, "m_hyp": 0.0, "m_ref": 0.0}
    for k, (s, lat) in enumerate(zip(sents, lattices)):
        try:
            fixed = enc.convert(s.column(args.column), args.scheme, lat.scheme)
            kw = {"hypothesis": fixed} if args.direction == "decoding" else {"reference": fixed}
            r = expected_f(lat, beta=args.beta, method=args.method, **kw)
        except FstchunkError as e:
            raise type(e)(f"{s.where(0)} (sentence {k}): {e}") from None
        rows.append({"sentence": k, "line": s.lines[0], "tokens": len(s), "tp": r.tp,
                     "m_hyp": r.m_hyp, "m_ref": r.m_ref, "precision": r.precision,
                     "recall": r.recall, "f": r.f})
        for key in tot:
            tot[key] += getattr(r, key)
    mean_f = sum(r["f"] for r in rows) / len(rows)
    den = tot["m_hyp"] + args.beta * tot["m_ref"]
    corpus_f = (args.beta + 1) * tot["tp"] / den if den else 1.0
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
