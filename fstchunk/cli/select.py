"""``fstchunk select``: the sentences of a pool to annotate next, by a model's
uncertainty (:mod:`fstchunk.selection`: expected F of its MEU decision, token
entropy, or at random), written as CoNLL in input order.

The pool is read in the model's training layout (checked before any work,
:func:`~fstchunk.cli.inputs.layout_input`: with or without a tag column); the picked
sentences are written as they were read (every column), atomically.
"""

from __future__ import annotations

import argparse

from ..conll import write_conll
from ..errors import InputError
from ..models import load_model
from ..outputs import check_output
from ..selection import STRATEGIES, pick, scores
from .common import BETA_HELP, HelpFormatter, beta_option, nonnegative_int, positive_int, warn
from .inputs import add_columns, arranged, iter_input, layout_input

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
                   help="how many sentences to pick (more than the pool: all of it)")
    p.add_argument("--strategy", choices=STRATEGIES, default="expected-f",
                   help="expected-f: lowest E[F_β] of the model's own MEU decision (its "
                        "estimate of how wrong it is); entropy: highest mean token-marginal "
                        "entropy; random: a uniform sample (--seed)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="random's seed")
    p.add_argument("--beta", type=beta_option, default=1.0,
                   help=f"expected-f's F_β: {BETA_HELP}")
    p.add_argument("-o", "--output", required=True, help="CoNLL file of the picked sentences")
    add_columns(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_output(args.output)
    model = load_model(args.model)
    checked = layout_input(iter_input(args.input), model, args.model, args.columns, "select")
    pool = list(checked.sentences)
    if not pool:
        raise InputError(f"{args.input}: no sentences (an empty file, or only blank and "
                         f"-DOCSTART- lines)")
    if args.budget >= len(pool):
        warn("select", f"--budget {args.budget} is not below the pool's {len(pool)} "
                       f"sentences: all of them are picked")
    if args.strategy == "random":
        chosen = pick(len(pool), args.budget, args.seed)
    else:
        moved = list(arranged(pool, checked.arrangement))
        values = []
        for lo in range(0, len(moved), BLOCK):
            values.extend(scores(model.lattices(moved[lo:lo + BLOCK]), args.strategy,
                                 args.beta))
        chosen = pick(values, args.budget)
    write_conll([pool[i] for i in chosen], args.output)
    print(f"wrote {len(chosen)} of {len(pool)} sentences to {args.output} "
          f"({args.strategy})")
    return 0
