"""``fstchunk segment eval``: P/R/F of predicted segment sets against gold ones.

Files are JSONL (GENIA's format: ``tokens`` and ``segments`` per line) or CoNLL (the
segments are the chunks of the last column, conlleval's reading); the format is read
off the file (a first non-blank ``{``: JSONL).  Sentences are paired in order and
must have the same tokens.  Scores: :func:`fstchunk.segments.scoring.score_segments`.
"""

from __future__ import annotations

import argparse
import json

from ..segments.data import paired, read_segments
from ..segments.scoring import score_segments
from .common import HelpFormatter, positive_float


def add_parser(sub) -> None:
    p = sub.add_parser("segment", formatter_class=HelpFormatter,
                       help="flexible segmentation (overlapping, non-contiguous segments): "
                            "eval")
    ssub = p.add_subparsers(dest="segment_command", required=True, metavar="ACTION")
    q = ssub.add_parser("eval", formatter_class=HelpFormatter,
                        help="P/R/F over exact (type, positions) matches: overall, per type, "
                             "and the gold segments that overlap another or are "
                             "non-contiguous")
    q.add_argument("gold", help="JSONL or CoNLL file with the gold segments")
    q.add_argument("pred", help="JSONL or CoNLL file with the predicted segments (same "
                                "sentences, same tokens)")
    q.add_argument("--beta", type=positive_float, default=1.0,
                   help="β of F_β = (β+1)PR/(βP+R)")
    q.add_argument("--json", action="store_true", help="print the scores as JSON")
    q.set_defaults(func=run_eval)


def run_eval(args: argparse.Namespace) -> int:
    gold, pred = read_segments(args.gold), read_segments(args.pred)
    paired(gold, pred, args.gold, args.pred)
    report = score_segments([s.segments for s in gold], [s.segments for s in pred], args.beta)
    print(json.dumps(report.to_json(), indent=2) if args.json else report.text())
    return 0
