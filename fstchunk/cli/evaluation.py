"""``fstchunk eval``: conlleval.pl's report for a CoNLL file whose last two columns are
gold and predicted tags, read as conlleval.pl reads it (:mod:`fstchunk.conlleval`).

Light by design: it imports neither numpy nor pynini, so it answers about as soon as
conlleval.pl does (benchmarks/RESULTS.md, "Front door").
"""

from __future__ import annotations

import argparse
import sys

from ..scoring import evaluate_file
from .common import BETA_HELP, HelpFormatter, beta_option, warn


def add_parsers(sub) -> None:
    p = sub.add_parser("eval", formatter_class=HelpFormatter,
                       help="conlleval-format report for a CoNLL file "
                            "(last two columns: gold, predicted)")
    p.add_argument("file", help="CoNLL file whose last two columns are gold and predicted tags")
    p.add_argument("--scheme", default=None,
                   help="read tags leniently in this scheme (none: exactly as conlleval.pl)")
    p.add_argument("--beta", type=beta_option, default=1.0, help=BETA_HELP)
    p.add_argument("--delimiter", default=None,
                   help="column delimiter, a regular expression as conlleval.pl's -d (e.g. "
                        "'\\t'; a single character is literal); none: one space, as "
                        "conlleval.pl, or tabs when the first line holds one")
    p.add_argument("--json", action="store_true", help="print the scores as JSON")
    p.set_defaults(func=run_eval)


def run_eval(args: argparse.Namespace) -> int:
    rep = evaluate_file(args.file, scheme=args.scheme, beta=args.beta, delimiter=args.delimiter,
                        warn=lambda message: warn("eval", message))
    sys.stdout.write(rep.json() + "\n" if args.json else rep.conlleval())
    return 0
