"""Error bars and significance on the command line: ``eval --ci`` (:func:`interval_of`)
and ``fstchunk compare GOLD SYS_A SYS_B`` (:mod:`fstchunk.evaluation.significance`)."""

from __future__ import annotations

import argparse
import sys


from ..core.errors import InputError
from ..core.outputs import json_text
from ..evaluation.sentences import file_sentences, tag_column_sentences
from ..evaluation.modes import MODES
from ..evaluation.significance import (Interval, bootstrap_interval, check_level, group,
                                       paired_bootstrap, randomisation, unit_counts)
from .common import BETA_HELP, HelpFormatter, add_resampling, beta_option


def add_parsers(sub) -> None:
    p = sub.add_parser("compare", formatter_class=HelpFormatter,
                       help="is system A's F better than B's on the same gold? paired "
                            "bootstrap and approximate randomisation")
    p.add_argument("gold", help="CoNLL file whose last column holds the gold tags")
    p.add_argument("system_a", help="CoNLL file of system A (last column: its tags; the "
                                    "same sentences and tokens as GOLD)")
    p.add_argument("system_b", help="CoNLL file of system B, likewise")
    p.add_argument("--mode", choices=("conlleval", *MODES), default="conlleval",
                   help="the figure compared: conlleval's F_β, or a SemEval mode's F1")
    p.add_argument("--scheme", default=None,
                   help="read tags leniently in this scheme (none: as conlleval.pl)")
    p.add_argument("--beta", type=beta_option, default=1.0, help=BETA_HELP)
    p.add_argument("--delimiter", default=None, help="column delimiter, as eval's")
    add_resampling(p)
    p.add_argument("--exact", action="store_true",
                   help="randomisation over all 2^U swaps instead of --samples trials "
                        "(at most 20 units)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=run_compare)


def _units(docs: list[int], by: str) -> tuple[list[int], str]:
    """Each sentence's unit index and the unit's name."""
    if by == "document" or (by == "auto" and len(set(docs)) > 1):
        first = {d: k for k, d in enumerate(sorted(set(docs)))}
        return [first[d] for d in docs], "document"
    return list(range(len(docs))), "sentence"


def interval_of(args: argparse.Namespace) -> Interval:
    """``eval --ci``: the bootstrap interval of the file's overall F."""
    level = check_level(args.ci)
    sents = file_sentences(args.file, args.scheme, args.delimiter)
    counts, figure = unit_counts([(g, p) for g, p, _, _ in sents], args.mode, args.scheme,
                                 args.beta)
    units, by = _units([d for *_, d in sents], args.by)
    return bootstrap_interval(group(counts, units), figure, level, args.samples, args.seed, by)


def run_compare(args: argparse.Namespace) -> int:
    gold = tag_column_sentences(args.gold, args.scheme, args.delimiter)
    systems = [tag_column_sentences(f, args.scheme, args.delimiter)
               for f in (args.system_a, args.system_b)]
    for path, sys_sents in zip((args.system_a, args.system_b), systems):
        if len(sys_sents) != len(gold):
            raise InputError(f"{path}: {len(sys_sents)} sentences, {args.gold}: {len(gold)}")
        for (gw, _, gat, _), (sw, _, sat, _) in zip(gold, sys_sents):
            if gw != sw:
                raise InputError(f"{sat}: this sentence's words differ from the gold's "
                                 f"({gat}): the files must hold the same tokens")
    units, by = _units([d for *_, d in gold], args.by)
    counts = []
    for sys_sents in systems:
        c, figure = unit_counts([(g, s) for (_, g, _, _), (_, s, _, _) in zip(gold, sys_sents)],
                                args.mode, args.scheme, args.beta)
        counts.append(group(c, units))
    a, b = counts
    fa, fb = (float(figure(x.sum(0, keepdims=True))[0]) for x in (a, b))
    tests = [paired_bootstrap(a, b, figure, args.samples, args.seed),
             randomisation(a, b, figure, args.samples, args.seed, exact=args.exact)]
    name = "F1" if args.mode != "conlleval" else ("FB1" if args.beta == 1 else f"F{args.beta:g}")
    if args.json:
        sys.stdout.write(json_text({"mode": args.mode, "figure": name, "a": fa, "b": fb,
                                    "units": len(a), "by": by,
                                    "tests": [t.as_dict() for t in tests]},
                                   indent=2, sort_keys=True) + "\n")
        return 0
    lines = [f"{name} ({args.mode}): A {fa:.2f}, B {fb:.2f}, A - B {fa - fb:+.2f} "
             f"over {len(a)} {by}{'s' if len(a) != 1 else ''}"]
    for t in tests:
        err = " (exact)" if t.method.startswith("exact") else f" ± {t.p_error:.4f}"
        unit = {"paired bootstrap": "resamples", "exact randomisation": "swaps"}.get(
            t.method, "trials")
        lines.append(f"{t.method}: p = {t.p:.4f}{err} ({t.trials} {unit})")
    lines.append("paired bootstrap: one-sided, A better than B (Berg-Kirkpatrick et al. "
                 "2012); randomisation: two-sided")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0

