"""``fstchunk expected``: E[tp], E[P], E[R], E[F_β] of each sentence under a model or
score arrays; with ``--format crfsuite``, of each sequence of a CRFsuite data file
under an attribute CRF, its labels the fixed sequence; with ``--utility``, E[u] of
another utility (:mod:`fstchunk.decoding.utilities`) instead."""

from __future__ import annotations

import argparse
import sys
from itertools import chain
from typing import Any, Iterator, NamedTuple

from ..schemes import encodings as enc
from ..core.errors import FstchunkError, InputError
from ..evaluation.chunks import f_beta
from ..decoding.expected import expected_f, expected_f_all
from ..decoding.utilities import Conlleval, utility as resolve_utility
from ..grammars import budget
from ..models import load_model
from ..models.io import read_metadata
from ..core.outputs import json_text
from ..models.scorefile import load_lattices
from ..decoding.batch import SENTENCE_ERRORS, block_lattices
from ..runtime.blocks import map_blocks, sentence_error
from .common import (BETA_HELP, Failures, HelpFormatter, add_executor, add_on_invalid,
                     beta_option, chain_model, executor_of, require_probabilities)
from .choices import utility_option
from .inputs import arranged, columns_spec, iter_gold, layout_input, read_gold
from .grammar import add_state_budget
from .crfsuite_format import (SequenceModel, gold_sequences, known_attributes, refuse_kind,
                              require_kind)
from ..io.crfsuite.data import Sequence
from ..schemes.tagspace import UNCONSTRAINED, canonical
from .unlabelled import run_unlabelled


def add_parsers(sub) -> None:
    p = sub.add_parser("expected", formatter_class=HelpFormatter,
                       help="expected tp, P, R and F_β of each sentence of a CoNLL file "
                            "under a saved model (--model) or score arrays (--scores)")
    p.add_argument("file", nargs="?", default=None,
                   help="CoNLL file (--format crfsuite: CRFsuite data, its labels "
                        "the fixed tag sequence); or give --input")
    p.add_argument("--input", default=None, metavar="FILE",
                   help="text without labels (words, and POS where the model reads them): "
                        "print the expected corpus precision, recall and F_β of the model's "
                        "own output (--decoder) with the truth drawn from the model, and an "
                        "interval for F_β (--interval)")
    p.add_argument("--interval", type=float, default=None, metavar="LEVEL",
                   help="with --input: the interval's coverage, e.g. 0.9 (default 0.9)")
    p.add_argument("--decoder", choices=("map", "meu"), default="map",
                   help="with --input: the decisions whose corpus figures are expected")
    p.add_argument("--format", choices=("conll", "crfsuite"), default="conll",
                   help="of FILE: CoNLL columns, or CRFsuite's data format (an attribute "
                        "CRF's input: fstchunk import crfsuite --scheme S, train --format "
                        "crfsuite)")
    p.add_argument("--model", default=None, help="a saved model (fstchunk train)")
    p.add_argument("--scores", default=None, metavar="NPZ",
                   help="score arrays, one lattice per sentence (see fstchunk.models.scorefile)")
    p.add_argument("--column", type=int, default=-1,
                   help="the column holding the fixed tag sequence (negative: from the right)")
    p.add_argument("--scheme", default="IOB2", help="scheme of that column's tags (and of a "
                                                     "--scores file's that does not say its "
                                                     "own)")
    p.add_argument("--direction", choices=("training", "decoding"), default="training",
                   help="training: the column is the gold, hypotheses ~ model; "
                        "decoding: the column is a hypothesis, references ~ model")
    p.add_argument("--beta", type=beta_option, default=1.0, help=BETA_HELP)
    p.add_argument("--utility", type=utility_option, default="conlleval", metavar="NAME",
                   help="the utility whose expectation each row gives: conlleval (E[tp], "
                        "the chunk counts, E[P], E[R], E[F_β]) or exact, partial, type, macro, "
                        "type:T, weighted:T=w,..., near (E[u] alone; decode --utility's names)")
    p.add_argument("--method", choices=("fast", "fst"), default="fast",
                   help="the fast engine or composition with the machines")
    add_state_budget(p, "with --method fst: ")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.add_argument("--partial", action="store_true",
                   help="refused: E[F] needs one fixed tag sequence per sentence and a "
                        "partial annotation allows many (train --partial trains on it, "
                        "select ranks sentences by the model's own expected F)")
    p.add_argument("--columns", type=columns_spec, default=None, metavar="SPEC",
                   help="where the model's word and POS columns are in FILE, each column named "
                        "(e.g. word,_,pos,tag); none: where the model was trained to read "
                        "them, checked against its training layout")
    add_on_invalid(p)
    add_executor(p, "the file's sentences (with --model; blocks of about 2000 tokens, "
                    "the rows keep the input's order)")
    p.set_defaults(func=run_expected)


def _scored(args: argparse.Namespace, ex) -> Iterator[tuple]:
    """(sentence, lattice-free row or error) in input order: under ``--model`` the
    file is read lazily and scored a block at a time (here or on ``ex``); a score file
    holds every lattice already, so its sentences are read in full and paired."""
    if (args.scores is None) == (args.model is None):
        raise InputError("give exactly one of --model MODEL or --scores NPZ")
    if args.model:
        model = chain_model(load_model(args.model), args.model, "expected")
        require_probabilities(model, args.model)     # margins: the calibrating command
        if args.format == "crfsuite":
            job, sents = _crfsuite_job(args, model)
        else:
            refuse_kind(model, args.model)
            gold = iter_gold(args.file, args.scheme, args.column, args.on_invalid, "expected")
            checked = layout_input(gold, model, args.model, args.columns, "expected")
            job = _Job(model, checked.arrangement, args.column, args.scheme, args.direction,
                       args.beta, args.method, args.state_budget, _other(args.utility))
            sents = checked.sentences
        return ((s, row) for block, rows in map_blocks(_expected_block, job, sents, ex)
                for s, row in zip(block, rows))
    if args.format == "crfsuite":
        raise InputError("--format crfsuite scores CRFsuite data under an attribute CRF "
                         "(--model), not a score file")
    try:
        read_metadata(args.scores)
    except FstchunkError:
        lattices = load_lattices(args.scores, fallback=args.scheme)
    else:
        raise InputError(f"{args.scores} is a saved fstchunk model, not a score file: "
                         f"give it as --model {args.scores}")
    sents = read_gold(args.file, args.scheme, args.column, args.on_invalid, "expected")
    if len(lattices) != len(sents):
        raise InputError(f"{args.scores} scores {len(lattices)} sentences but {args.file} "
                         f"has {len(sents)}")
    job = _Job(None, None, args.column, args.scheme, args.direction, args.beta, args.method,
               args.state_budget, _other(args.utility))
    if job.utility is not None and lattices:
        job.utility.check(lattices[0].space)
    return ((s, _row(job, s, lat)) for s, lat in zip(sents, lattices))


def _other(name: str):
    """The utility of ``--utility`` when it is not conlleval's F (None: the full table)."""
    u = resolve_utility(name)
    return None if isinstance(u, Conlleval) else u


class _Job(NamedTuple):
    model: Any
    arrangement: Any             # the input's columns moved to the model's (None: as they are)
    column: int
    scheme: str
    direction: str
    beta: float
    method: str
    state_budget: Any
    utility: Any = None          # another utility than conlleval's (its E[u] alone)


def _expected_block(job: _Job, block: list) -> list:
    """A worker's part: the row (or the error) of each sentence of ``block``; a
    sentence whose lattice cannot be built is an error of its own, a LayoutError
    (the file's columns) stops the command."""
    with budget.use_state_budget(job.state_budget):
        lats = block_lattices(job.model.lattices, list(arranged(block, job.arrangement)))
        if job.utility is not None:          # the model's types: one error for the command
            for lat in lats:
                if not isinstance(lat, BaseException):
                    job.utility.check(lat.space)
                    break
        if job.method != "fast" or job.utility is not None:
            return [lat if isinstance(lat, BaseException) else _row(job, s, lat)
                    for s, lat in zip(block, lats)]
        # the fast engine: the block's lattices in ragged batches
        out: list = list(lats)
        ok, fixed = [], []
        for j, (s, lat) in enumerate(zip(block, lats)):
            if isinstance(lat, BaseException):
                continue
            try:
                fixed.append(_fixed(job, s, lat))
                ok.append(j)
            except SENTENCE_ERRORS as e:
                out[j] = sentence_error(e)
        got = expected_f_all([lats[j] for j in ok], fixed, job.beta, job.direction,
                             errors="return")
        for j, r in zip(ok, got):
            out[j] = sentence_error(r) if isinstance(r, BaseException) else \
                _fields(block[j], r)
        return out


def _crfsuite_job(args: argparse.Namespace, model) -> tuple:
    """The job and the gold sequences of ``--format crfsuite`` (CRFsuite data whose
    labels, in ``--scheme``, are the fixed sequence), refusing what does not apply."""
    require_kind(model, args.model)
    if args.columns is not None or args.column != -1:
        raise InputError("--columns and --column are for CoNLL files; CRFsuite data's "
                         "labels are the fixed sequence")
    if canonical(model.scheme_) == UNCONSTRAINED:
        raise InputError(f"{args.model}: an unconstrained chain (scheme none) has no chunks "
                         f"to expect; import or train it with its chunk scheme")
    job = _Job(SequenceModel(model), None, -1, args.scheme, args.direction, args.beta,
               args.method, args.state_budget, _other(args.utility))
    return job, known_attributes(gold_sequences(args.file, args.scheme, args.on_invalid,
                                                "expected"), model, args.file, "expected")


def _fixed(job: _Job, s, lat) -> list[str]:
    """The sentence's fixed tag sequence, in the lattice's scheme."""
    tags = s.labels if isinstance(s, Sequence) else s.column(job.column)
    return enc.convert(tags, job.scheme, lat.scheme)


def _fields(s, r) -> dict:
    return {"line": s.lines[0], "tokens": len(s), "tp": r.tp, "m_hyp": r.m_hyp,
            "m_ref": r.m_ref, "precision": r.precision, "recall": r.recall, "f": r.f}


def _row(job: _Job, s, lat) -> dict | BaseException:
    try:
        fixed = _fixed(job, s, lat)
        kw = {"hypothesis": fixed} if job.direction == "decoding" else {"reference": fixed}
        if job.utility is not None:
            value = job.utility.expected(lat, beta=job.beta, method=job.method, **kw)
            return {"line": s.lines[0], "tokens": len(s), "expected_utility": value}
        r = expected_f(lat, beta=job.beta, method=job.method, **kw)
    except SENTENCE_ERRORS as e:
        return sentence_error(e)
    return _fields(s, r)


def run_expected(args: argparse.Namespace) -> int:
    if args.partial:
        raise InputError("expected --partial: E[tp], E[P], E[R], E[F] are taken against one "
                         "fixed tag sequence per sentence (--column), and a partial "
                         "annotation allows many; train on it with train --partial, rank "
                         "sentences by the model's own expected F with select")
    if args.input is None:
        if args.file is None:
            raise InputError("give FILE (with the tag column to score against) or --input "
                             "FILE (text without labels: the corpus figures of the model's "
                             "own output)")
        if args.interval is not None or args.decoder != "map":
            raise InputError("--interval and --decoder go with --input FILE (text without "
                             "labels); FILE's own tag column is the fixed sequence here")
    with budget.use_state_budget(args.state_budget), executor_of(args) as ex:
        if args.input is not None:
            if args.format != "conll":
                raise InputError("--input reads CoNLL columns (--format conll)")
            if _other(args.utility) is not None:
                raise InputError(f"--input gives conlleval's corpus precision, recall and "
                                 f"F_β of the model's own output; --utility {args.utility} "
                                 f"is for the per-sentence table of a FILE with its tag "
                                 f"column")
            args.interval = 0.9 if args.interval is None else args.interval
            return run_unlabelled(args, ex)
        return _run_expected(args, ex)


def _run_expected(args: argparse.Namespace, ex) -> int:
    """Rows printed as they come (JSON: the ``sentences`` list streamed, then the
    ``summary``), so memory stays bounded under ``--model`` whatever the file's size.
    A sentence that cannot be scored gets an error row and one line on standard error
    (:class:`~fstchunk.cli.common.Failures`), the others go on, and the exit status is
    1; a fault of the whole input (its layout) stops before any output.  Under another
    ``--utility`` than conlleval's, a row is E[u] alone and the summary its mean."""
    other = _other(args.utility)
    keys = ("expected_utility",) if other else ("tp", "m_hyp", "m_ref")
    tot = dict.fromkeys(keys, 0.0)
    sum_f, n, k = 0.0, 0, -1
    out = sys.stdout
    scored = _scored(args, ex)                   # refusals before any output
    first = next(scored, None)                   # (the first block: its layout checked)
    failed = Failures("expected", "scored")
    if args.json:
        out.write('{\n  "sentences": [')
    elif other:
        out.write(f"{'sent':>5} {'line':>7} {'n':>4} {'E[u]':>8}\n")
    else:
        out.write(f"{'sent':>5} {'line':>7} {'n':>4} {'E[tp]':>8} {'m_hyp':>8} {'m_ref':>8} "
                  f"{'E[P]':>7} {'E[R]':>7} {'E[F]':>7}\n")
    for k, (s, r) in enumerate(chain([first], scored) if first is not None else ()):
        if isinstance(r, BaseException):
            failed.add(s.where(0), k, len(s), r, "no expectations")
            r = {"sentence": k, "line": s.lines[0], "tokens": len(s),
                 "error": Failures.reason(r)}
            out.write((("," if k else "") + "\n    " + json_text(r)) if args.json else
                      f"{k:>5} {s.lines[0]:>7} {len(s):>4} error: {r['error']}\n")
            continue
        r = {"sentence": k, **r}
        for key in tot:
            tot[key] += r[key]
        sum_f += r["expected_utility" if other else "f"]
        n += 1
        if args.json:
            out.write(("," if k else "") + "\n    " + json_text(r))
        elif other:
            out.write(f"{r['sentence']:>5} {r['line']:>7} {r['tokens']:>4} "
                      f"{r['expected_utility']:8.4f}\n")
        else:
            out.write(f"{r['sentence']:>5} {r['line']:>7} {r['tokens']:>4} {r['tp']:8.4f} "
                      f"{r['m_hyp']:8.4f} {r['m_ref']:8.4f} {r['precision']:7.4f} "
                      f"{r['recall']:7.4f} {r['f']:7.4f}\n")
    # over the scored sentences only; none scored: no figure (null), not 0/0 := 1
    mean_f = sum_f / n if n else None
    if other:
        summary = {"sentences": n, "failed": len(failed.where), "direction": args.direction,
                   "beta": args.beta, "utility": other.name,
                   "mean_sentence_expected_utility": mean_f}
        what = f"E[u] of {other.name}"
    else:
        corpus_f = f_beta(tot["tp"], tot["m_hyp"], tot["m_ref"], args.beta) if n else None
        summary = {"sentences": n, "failed": len(failed.where), "direction": args.direction,
                   "beta": args.beta, "expected_tp": tot["tp"], "expected_m_hyp": tot["m_hyp"],
                   "expected_m_ref": tot["m_ref"], "mean_sentence_expected_f": mean_f,
                   "corpus_f_of_expectations": corpus_f}
        what = f"E[F_{args.beta:g}]"
    if args.json:
        out.write('\n  ],\n  "summary": ' + json_text(summary, indent=2).replace("\n", "\n  ")
                  + "\n}\n")
    elif not n:
        print(f"no sentence scored ({len(failed.where)} not scored): no mean {what}"
              f"{'' if other else ' and no corpus F'} ({args.direction} direction)")
    else:
        skipped = (f", {len(failed.where)} not scored (left out of "
                   f"{'it' if other else 'both figures'})" if failed.where else "")
        tail = "" if other else f"; corpus F of expected counts = {corpus_f:.6f}"
        print(f"mean per-sentence {what} = {mean_f:.6f} over {n} sentences{skipped}{tail} "
              f"({args.direction} direction{f', β = {args.beta:g}' if other else ''})")
    if failed.where:
        print(f"fstchunk expected: error: {failed.summary(k + 1)}: their rows say why",
              file=sys.stderr)
        return 1
    return 0
