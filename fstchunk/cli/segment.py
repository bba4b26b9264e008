"""``fstchunk segment train|decode|eval``: the flexible segment model (McDonald et al.
2005; :mod:`fstchunk.structures.segments`) from the command line.

``train`` runs the online large-margin multilabel learner through the one training loop
(:meth:`fstchunk.models.segment.SegmentModel.fit`, :class:`fstchunk.learn.loop.Trainer`):
``train``'s loop options (``--dev`` with ``--dev-every`` and ``--select``,
``--checkpoint-every``, ``--resume``, ``--max-iter``, or ``--epochs`` as before, Ctrl-C
and SIGTERM writing OUTPUT.ckpt), a step being an epoch; a resume must match the
training file (its digest), the restrictions, the max gap, the hash bits, the predicate
set (``--predicates``), the seed, averaging and the selection (with ``--select dev`` the dev file too).  With ``--dev``
it then fits the probability calibration MEU decoding needs on the dev sentences (and
writes the model again).  ``decode`` writes the input again with its segments replaced:
JSONL lines keep their keys with ``segments`` replaced by the predicted list; a CoNLL
input gets a predicted IOB2 column, which can hold only non-overlapping contiguous
segments, so for CoNLL output the restrictions no-overlap and contiguous are always
applied (on top of ``--restrict``), and ``train`` with a CoNLL ``--dev`` measures dev
F (``--select dev``) and tunes ``--threshold dev`` for that decoding.  A calibrated model (``train --dev``) gives each
predicted segment of a JSONL output its probability ``p`` = σ(a·score + b) (Platt);
an uncalibrated one writes no ``p``, and refuses ``--min-confidence``, which drops
the segments of p below it (on CoNLL output too).  ``eval`` scores predicted
against gold segment sets.

Files are JSONL (GENIA's format: ``tokens`` and ``segments`` per line) or CoNLL (the
segments are the chunks of the last column, conlleval's reading); the format is read
off each file's content (:func:`fstchunk.io.segments.detect_format`: a first
non-blank line starting with ``{`` is JSONL), or given by ``--format``, and errors
name how it was decided.  Sentences are paired in order and must have the same tokens.  Scores: :func:`fstchunk.evaluation.segments.score_segments`.
"""

from __future__ import annotations

import argparse
import math
import sys
from itertools import tee

from ..core.errors import InputError
from ..core.outputs import atomic_write, check_output, json_text
from ..runtime.blocks import map_blocks
from ..decoding.decoders import decoder as get_decoder
from ..evaluation.segments import score_segments
from ..io.layout import head
from ..io.segments import (
    FORMATS,
    detect_format,
    iter_segments,
    paired,
    read_segments,
    write_conll_predictions,
    write_jsonl,
)
from ..learn.loop import SELECT
from ..learn.runs import file_digest
from ..models import load_model
from ..models.segment import DECODERS, SegmentModel, restriction_flags
from ..models.segment.features import DEFAULT_PREDICATES, PREDICATES
from ..structures.segments import RESTRICTIONS
from .common import (
    BETA_HELP,
    HelpFormatter,
    add_executor,
    add_training_loop,
    beta_option,
    executor_of,
    nonnegative_int,
    positive_int,
    warn,
)

#: the restrictions a CoNLL output always adds: a tag column holds only
#: non-overlapping contiguous segments
CONLL_FLAGS = {"no_overlap": True, "contiguous": True}


def add_parser(sub) -> None:
    p = sub.add_parser("segment", formatter_class=HelpFormatter,
                       help="flexible segmentation (overlapping, non-contiguous segments): "
                            "train, decode, eval")
    ssub = p.add_subparsers(dest="segment_command", required=True, metavar="ACTION")
    format_help = ("format of the input files: auto (JSONL iff the first non-blank line "
                   "starts with '{', after a byte-order mark and white space; each file "
                   "apart), jsonl or conll")
    restrict_help = (f"comma-separated restrictions of the predicted sets: "
                     f"{', '.join(RESTRICTIONS)} (McDonald et al. §3.2.1)")
    q = ssub.add_parser("train", formatter_class=HelpFormatter,
                        help="train the segment model (online large-margin multilabel "
                             "learning, Hildreth updates)")
    q.add_argument("--train", required=True, help="JSONL or CoNLL file with gold segments")
    q.add_argument("--restrict", default=None, help=restrict_help + "; in training too, and "
                   "the model's default in decoding")
    iters = q.add_mutually_exclusive_group()
    iters.add_argument("--epochs", type=positive_int, default=argparse.SUPPRESS,
                       dest="max_iter", metavar="EPOCHS", help="the same as --max-iter")
    q.add_argument("--max-gap", default="auto",
                   help="most tokens a segment may skip between members: auto (the largest "
                        "in the training data), none (unbounded) or a number")
    q.add_argument("--threshold", type=_threshold_option, default=0.0,
                   help="the model's decision threshold: segments of the top k scoring above "
                        "it are predicted (0: the paper's), or 'dev': the value of the best "
                        "dev F on -1.0, -0.8, ..., +1.0 (McDonald et al. §4.3; needs --dev)")
    q.add_argument("--no-average", action="store_true",
                   help="keep the last weights instead of the averaged ones")
    q.add_argument("--hash-bits", type=positive_int, default=20,
                   help="feature hashing into 2**BITS buckets per type")
    q.add_argument("--seed", type=nonnegative_int, default=0, help="shuffling seed")
    q.add_argument("--predicates", choices=PREDICATES, default=DEFAULT_PREDICATES,
                   help="predicate set of the step features: mcp05 (word, shape, affixes, "
                        "POS at the two indices, the words beside), sp03 (Sha & Pereira "
                        "2003: words and POS in a ±2 window, their bigrams and trigrams) or "
                        "both")
    q.add_argument("-o", "--output", required=True, help="model file to write (.npz)")
    q.add_argument("--format", choices=FORMATS, default="auto", help=format_help)
    add_training_loop(q, select=SELECT, unit="epochs",
                      dev="JSONL or CoNLL file: dev F per epoch, and the "
                      "probability calibration of --decoder meu", max_iter=10,
                      max_iter_group=iters, max_iter_help="epochs (passes over --train) in "
                      "all, counting those before a --resume", dev_every=1, checkpoint_every=1,
                      checkpoint_extra=" (and the learner's state, OUTPUT.ckpt.hildreth.npz)",
                      resume_extra=": training file, restrictions, max gap, hash bits, seed, "
                                   "averaging, ...",
                      quiet="no progress (a bar on a terminal, else one line per epoch)")
    q.set_defaults(func=run_train)

    q = ssub.add_parser("decode", formatter_class=HelpFormatter,
                        help="predict the segments of a JSONL or CoNLL file; writes it again "
                             "with the predictions")
    q.add_argument("--model", required=True, help="a saved segment model")
    q.add_argument("--input", required=True, help="JSONL or CoNLL file")
    q.add_argument("--decoder", choices=DECODERS, default="threshold",
                   help="threshold: segments of the top k scoring > 0 (the paper); meu: "
                        "the set of maximal expected F_β under the calibrated probabilities")
    q.add_argument("--beta", type=beta_option, default=1.0,
                   help=f"--decoder meu: {BETA_HELP}")
    q.add_argument("--threshold", type=_threshold_number, default=None,
                   help="--decoder threshold: keep the segments of the top k scoring above "
                        "this (none: the model's, 0 unless train --threshold set it)")
    q.add_argument("--restrict", default=None,
                   help=restrict_help + " (none: the model's; 'none' for no restriction)")
    q.add_argument("--format", choices=FORMATS, default="auto", help=format_help)
    q.add_argument("--min-confidence", type=float, default=0.0, metavar="P",
                   help="drop the predicted segments whose calibrated probability is below "
                        "P (needs a calibrated model: segment train --dev); JSONL output "
                        "gives each segment's probability as \"p\" when the model is "
                        "calibrated")
    q.add_argument("-o", "--output", default=None, help="output file (none: standard output)")
    add_executor(q, "the input's sentences (blocks of about 2000 tokens; the output keeps "
                    "the input's order)")
    q.set_defaults(func=run_decode)

    q = ssub.add_parser("eval", formatter_class=HelpFormatter,
                        help="P/R/F over exact (type, positions) matches: overall, per type, "
                             "and the gold segments that overlap another or are "
                             "non-contiguous")
    q.add_argument("gold", help="JSONL or CoNLL file with the gold segments")
    q.add_argument("pred", help="JSONL or CoNLL file with the predicted segments (same "
                                "sentences, same tokens)")
    q.add_argument("--beta", type=beta_option, default=1.0, help=BETA_HELP)
    q.add_argument("--format", choices=FORMATS, default="auto", help=format_help)
    q.add_argument("--json", action="store_true", help="print the scores as JSON")
    q.set_defaults(func=run_eval)


def run_eval(args: argparse.Namespace) -> int:
    gold = read_segments(args.gold, fmt=args.format)
    pred = read_segments(args.pred, fmt=args.format)
    paired(gold, pred, args.gold, args.pred)
    report = score_segments([s.segments for s in gold], [s.segments for s in pred], args.beta)
    print(json_text(report.to_json(), indent=2) if args.json else report.text())
    return 0


def _max_gap(text: str) -> int | None | str:
    if text in ("auto", "none"):
        return None if text == "none" else "auto"
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise InputError(f"--max-gap must be auto, none or an integer >= 0, got {text!r}")
    return value


def _threshold_number(text: str) -> float:
    """argparse type: a finite number (a decision threshold on segment scores)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _threshold_option(text: str) -> float | str:
    """argparse type: ``train --threshold``, a finite number or ``dev``."""
    if text == "dev":
        return text
    try:
        return _threshold_number(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be a finite number or 'dev', got "
                                         f"{text!r}") from None


def run_train(args: argparse.Namespace) -> int:
    check_output(args.output)
    if args.threshold == "dev" and not args.dev:
        raise InputError("--threshold dev chooses the threshold on the dev sentences: give "
                         "--dev FILE (or a number)")
    flags = restriction_flags(args.restrict) if args.restrict else None
    model = SegmentModel(D=2 ** args.hash_bits, max_gap=_max_gap(args.max_gap),
                         restrictions=flags, average=not args.no_average, seed=args.seed,
                         predicates=args.predicates, max_iter=args.max_iter,
                         threshold=0.0 if args.threshold == "dev" else args.threshold)
    sents = read_segments(args.train, fmt=args.format)
    dev = read_segments(args.dev, fmt=args.format) if args.dev else None
    identity = {"train_sha256": file_digest(args.train)}
    if args.select == "dev" and args.dev:         # the best so far was measured on it
        identity["dev_sha256"] = file_digest(args.dev)
    dev_flags = None                    # dev F of the decoding files like --dev get
    if dev is not None and detect_format(args.dev, args.format).name == "conll":
        dev_flags = {**restriction_flags(flags), **CONLL_FLAGS}
    model.fit(sents, dev=dev, dev_every=args.dev_every,
              select=args.select, checkpoint=args.output + ".ckpt",
              checkpoint_every=args.checkpoint_every, resume=args.resume,
              output=args.output, progress=not args.quiet, log=print, identity=identity,
              record={"train": args.train, "dev": args.dev}, dev_restrictions=dev_flags)
    if args.select == "dev":
        print(f"kept epoch {model.settings_['selected_epoch']} of "
              f"{model.settings_['iteration']} (best dev F)")
    if dev is not None:                           # the trainer wrote the model; again with it
        a, b = model.calibrate(dev, source=args.dev)
        print(f"calibration on {args.dev}: p = σ({a:.4g}·score + {b:.4g})")
        if args.threshold == "dev":           # for the decoding of files like --dev
            t = model.tune_threshold(dev, source=args.dev, restrictions=dev_flags)
            tuned = model.settings_["threshold_tuned_on"]
            edge = " (at the edge of the grid)" if tuned["at_edge"] else ""
            print(f"threshold on {args.dev}: {t:+.1f}{edge}, dev P {tuned['precision']:.2f} "
                  f"R {tuned['recall']:.2f} F {tuned['f']:.2f}")
        model.save(args.output)
    print(f"wrote {args.output}")
    return 0


def run_decode(args: argparse.Namespace) -> int:
    if args.output:
        check_output(args.output)
    model = load_model(args.model)
    if not isinstance(model, SegmentModel):
        raise InputError(f"{args.model}: a {model.kind} model, not a segment model "
                         f"(fstchunk segment train)")
    fmt = detect_format(args.input, args.format)
    jsonl = fmt.name == "jsonl"
    flags = dict(model.restrictions_ if args.restrict is None
                 else restriction_flags(args.restrict))
    if not jsonl:                     # a tag column holds non-overlapping contiguous chunks
        flags.update(CONLL_FLAGS)
    dec = get_decoder(args.decoder, beta=args.beta, threshold=args.threshold,
                      structure="segments", as_options=True)
    model.decode([], restrictions=flags, decoder=dec)                      # refusals first
    if not (0.0 <= args.min_confidence <= 1.0):
        raise InputError(f"--min-confidence must be a probability in [0, 1], got "
                         f"{args.min_confidence}")
    if args.min_confidence > 0 and not model.calibrated:
        raise InputError(f"--min-confidence needs segment probabilities, and {args.model} "
                         "has no calibration (fstchunk segment train --dev FILE fits it)")
    _check_layout(model, args.model, args.input, fmt)
    job = (model, flags, dec, args.min_confidence)

    def write(fh, ex) -> None:
        # (sentence, segments) in input order, a block at a time; tee in lockstep
        # holds one pair, so nothing but the blocks in flight is kept
        pairs = ((s, segs) for block, out in map_blocks(
            _decode_block, job, iter_segments(args.input, gold=False, fmt=fmt), ex)
            for s, segs in zip(block, out))
        a, b = tee(pairs)
        sents, pred = (s for s, _ in a), (segs for _, segs in b)
        if jsonl:
            c, d = tee(pred)
            write_jsonl(sents, ([g for g, _ in row] for row in c), fh,
                        (dict(row) for row in d))
        else:
            write_conll_predictions(args.input, sents, ([g for g, _ in row] for row in pred),
                                    fh)

    with executor_of(args) as ex:
        if args.output:
            with atomic_write(args.output) as fh:
                write(fh, ex)
        else:
            write(sys.stdout, ex)
    return 0


def _check_layout(model: SegmentModel, model_path: str, path: str, fmt) -> None:
    """The input's first sentences (read in ``fmt``, as decoding reads them) against the
    model's training layout: one error if
    their words or POS tags do not look like training's (:mod:`fstchunk.io.layout`), one
    warning for a model file without the record."""
    if model.layout_ is None:
        warn("segment decode", f"{model_path} records no training layout (a model file "
                               f"written before fstchunk recorded it): the columns of {path} "
                               f"cannot be checked")
        return
    first, _ = head(iter_segments(path, gold=False, fmt=fmt))
    bad = model.layout_mismatch(first)
    if bad:
        raise InputError(f"{bad}; the segment reader takes the word from the first column "
                         f"of a CoNLL file and POS tags from the second (of three or more)")


def _decode_block(job: tuple, block: list) -> list:
    """A worker's part: the predicted (segment, p) of each sentence of ``block``, those
    of p below the threshold dropped."""
    model, flags, decoder, least = job
    rows = model.decode_scored(block, restrictions=flags, decoder=decoder)
    return [[(g, p) for g, p in row if least <= 0 or p >= least] for row in rows]
