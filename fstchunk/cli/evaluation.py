"""``fstchunk eval``: conlleval.pl's report for a CoNLL file whose last two columns are
gold and predicted tags, read as conlleval.pl reads it (:mod:`fstchunk.evaluation.conlleval`).

Light by design: it imports neither numpy nor pynini, so it answers about as soon as
conlleval.pl does (benchmarks/RESULTS.md, "Front door").
"""

from __future__ import annotations

import argparse
import json
import sys

from ..core.errors import InputError
from ..core.outputs import json_text
from ..evaluation.chunks import evaluate_file
from ..evaluation.modes import MODES
from ..io.crfsuite.evaluation import evaluate, read_reference
from .common import BETA_HELP, HelpFormatter, add_resampling, beta_option, warn


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
    p.add_argument("--mode", choices=("conlleval", *MODES), default="conlleval",
                   help="conlleval: exact-match chunks, conlleval.pl's report; strict, "
                        "exact, partial, type: the SemEval-2013 modes as nervaluate counts "
                        "them (correct, incorrect, partial, missed, spurious; P, R, F1 "
                        "overall, per type and macro-averaged; the type confusion table)")
    p.add_argument("--json", action="store_true",
                   help="print the scores as JSON (--mode other than conlleval: overall, "
                        "per_type and macro precision, recall and f1 as fractions)")
    add_resampling(p)
    p.add_argument("--ci", type=float, default=None, metavar="LEVEL",
                   help="also the percentile bootstrap interval of the overall F at this "
                        "level (e.g. 0.95), resampling documents where -DOCSTART- lines "
                        "mark them, else sentences (--by)")
    p.add_argument("--format", choices=("conll", "crfsuite"), default="conll",
                   help="conll: conlleval.pl's chunk report; crfsuite: FILE holds GOLD<TAB>"
                        "PREDICTED lines (crfsuite tag -r, decode --format crfsuite), "
                        "reported as crfsuite tag -qt does: per label, macro-average, item "
                        "and instance accuracy (any labels; for chunk tags, the conll format "
                        "reads the same file)")
    p.set_defaults(func=run_eval)


def run_eval(args: argparse.Namespace) -> int:
    if args.format == "crfsuite":
        return _run_crfsuite(args)
    if args.mode != "conlleval" and args.beta != 1.0:
        raise InputError(f"--beta applies to --mode conlleval; --mode {args.mode} reports F1")
    rep = evaluate_file(args.file, scheme=args.scheme, beta=args.beta, delimiter=args.delimiter,
                        warn=lambda message: warn("eval", message), mode=args.mode)
    text = rep.conlleval() if args.mode == "conlleval" else rep.text()
    if args.ci is None:
        sys.stdout.write(rep.json() + "\n" if args.json else text)
        return 0
    from .significance import interval_of        # numpy: only for --ci (eval starts light)
    ci = interval_of(args)
    if args.json:
        sys.stdout.write(json_text({**json.loads(rep.json()), "interval": ci.as_dict()},
                                   indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(text + f"{'F1' if args.mode != 'conlleval' else 'F'} "
                         f"{100 * ci.level:g}% interval: [{ci.low:.2f}, {ci.high:.2f}] "
                         f"(percentile bootstrap: {ci.samples} resamples of {ci.units} "
                         f"{ci.by}{'s' if ci.units != 1 else ''}, seed {args.seed})\n")
    return 0


def _run_crfsuite(args: argparse.Namespace) -> int:
    """CRFsuite's evaluation report (:mod:`fstchunk.io.crfsuite.evaluation`)."""
    for option, value, default in (("--scheme", args.scheme, None), ("--mode", args.mode,
                                                                      "conlleval"),
                                   ("--ci", args.ci, None),
                                   ("--delimiter", args.delimiter, None),
                                   ("--beta", args.beta, 1.0)):
        if value != default:
            raise InputError(f"{option} is for --format conll; CRFsuite's report is per "
                             f"label, F1, on tab-separated lines")
    rep = evaluate(read_reference(args.file))
    if args.json:
        labels = {y: dict(zip(("precision", "recall", "f1"), rep.prf(y) or (None,) * 3),
                          match=rep.match[y], model=rep.model[y], ref=rep.ref[y])
                  for y in rep.labels}
        p, r, f = rep.macro()
        sys.stdout.write(json_text({"labels": labels, "macro": {"precision": p, "recall": r,
                                                                 "f1": f},
                                     "items": rep.items, "items_correct": rep.items_correct,
                                     "instances": rep.instances,
                                     "instances_correct": rep.instances_correct}) + "\n")
    else:
        sys.stdout.write(rep.text())
    return 0
