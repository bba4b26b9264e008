"""``fstchunk select``: the sentences of a pool to annotate next, by a model's
uncertainty (:mod:`fstchunk.decoding.selection`: expected F of its MEU decision, token
entropy, or at random), written as CoNLL in input order.

The pool is read in the model's training layout (checked before any work,
:func:`~fstchunk.cli.inputs.layout_input`: with or without a tag column); the picked
sentences are written as they were read (every column), atomically (``-o -``: to
standard output, the summary line then on standard error).

Sentences with identical token sequences (the word column) count once: the first copy
is scored and may be picked, the others never are (annotating a sentence twice teaches
nothing), and the summary line says how many copies were set aside.
"""

from __future__ import annotations

import argparse

import sys

from ..io.conll import write_conll
from ..models import load_model
from ..core.outputs import check_output
from ..decoding.selection import STRATEGIES, distinct, pick, scores
from .common import (BETA_HELP, HelpFormatter, chain_model, nonnegative_int, positive_int,
                     require_probabilities, training_beta_option, warn)
from .inputs import add_columns, arranged, iter_input, layout_input, no_sentences

#: sentences scored per call of the model (one feature transform each)
BLOCK = 500


def add_parser(sub) -> None:
    p = sub.add_parser("select", formatter_class=HelpFormatter,
                       help="pick the pool sentences to annotate next (active learning): "
                            "lowest expected F of the model's MEU decision, highest token "
                            "entropy, or random")
    p.add_argument("--model", required=True, help="a saved model (fstchunk train)")
    p.add_argument("--input", required=True, help="the pool: a CoNLL file in the model's "
                                                  "columns (a tag column may be there)")
    p.add_argument("--budget", type=positive_int, required=True,
                   help="how many sentences to pick (more than the pool: all of it); "
                        "sentences with the same tokens count once (the first copy)")
    p.add_argument("--strategy", choices=STRATEGIES, default="expected-f",
                   help="expected-f: lowest E[F_β] of the model's own MEU decision (its "
                        "estimate of how wrong it is); entropy: highest mean token-marginal "
                        "entropy; random: a uniform sample (--seed)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="random's seed")
    p.add_argument("--beta", type=training_beta_option, default=1.0,
                   help=f"expected-f's F_β: {BETA_HELP}; > 0: at 0 (precision) the "
                        f"decision without chunks has E[F] = 1 on every sentence, and all "
                        f"would tie")
    p.add_argument("-o", "--output", required=True,
                   help="CoNLL file of the picked sentences (-: standard output)")
    add_columns(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.output is not None:
        check_output(args.output)
    model = chain_model(load_model(args.model), args.model, "select")
    checked = layout_input(iter_input(args.input), model, args.model, args.columns, "select")
    pool = list(checked.sentences)
    if not pool:
        raise no_sentences(args.input)
    moved = list(arranged(pool, checked.arrangement))
    word = checked.arrangement.target.word if checked.arrangement else (
        checked.source.word if checked.source else 0)
    firsts = distinct(s.column(word) for s in moved)       # indices of first copies
    if args.budget >= len(firsts):
        warn("select", f"--budget {args.budget} is not below the pool's {len(firsts)} "
                       f"distinct sentences: all of them are picked")
    if args.strategy == "random":
        chosen = pick(len(firsts), args.budget, args.seed)
    else:
        require_probabilities(model, args.model)     # margins: the calibrating command
        unique = [moved[i] for i in firsts]
        values = []
        for lo in range(0, len(unique), BLOCK):
            values.extend(scores(model.lattices(unique[lo:lo + BLOCK]), args.strategy,
                                 args.beta))
        chosen = pick(values, args.budget)
    picked = [pool[firsts[i]] for i in chosen]
    copies = len(pool) - len(firsts)
    dup = (f"; {copies} repeated sentence{'s' if copies != 1 else ''} (the same tokens as "
           f"an earlier one) counted once" if copies else "")
    where = args.output if args.output is not None else "standard output"
    write_conll(picked, args.output if args.output is not None else sys.stdout)
    print(f"wrote {len(picked)} of {len(pool)} sentences to {where} ({args.strategy}{dup})",
          file=sys.stdout if args.output is not None else sys.stderr)
    return 0
