"""``fstchunk train`` (a CRF by ML, minimum risk or max margin, or a counting HMM),
``fstchunk calibrate`` (a CRF's temperature on held-out sentences: a max-margin CRF
needs it before any decoder but MAP reads its scores as probabilities) and ``fstchunk
decode`` (tag a CoNLL file with a saved model).

Both check their destination (``-o``) before any work, and write it atomically
(:mod:`fstchunk.outputs`).  ``decode`` echoes every input line as it was —
delimiter, ``-DOCSTART-`` and blank lines included — and appends the predicted
tag with the line's own delimiter (a tab if the line has one, else a space).

``decode`` streams: each sentence is written (and standard output flushed) as soon
as it is decoded, in input order, into the temporary of ``-o`` or to standard
output.  A sentence that cannot be decoded (an
:class:`~fstchunk.errors.FstchunkError` such as a
:class:`~fstchunk.errors.BudgetError`, or a :class:`MemoryError`) gets one error
line naming its ``file:line`` and length; its lines are echoed with the tag
:data:`~fstchunk.evaluate.UNDECODED` (``<error>``, which ``fstchunk eval`` refuses),
decoding goes on, the file is still completed, and the command ends with a
one-line summary and exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from itertools import chain
from typing import IO, Iterator

from ..columns import Columns
from ..conll import Sentence, is_separator, iter_lines
from ..batch import Decoded, iter_decode_sentences
from ..decode import DECODERS
from ..errors import BudgetError, InputError
from ..evaluate import UNDECODED
from ..models import load_model
from ..models.crf import CRF
from ..models.features import TEMPLATES, resolve_template
from ..models import maxmargin as mm
from ..models.perceptron import PERCEPTRON
from ..models.hmm import HMM
from ..models.objectives import DEFAULT_L2, OBJECTIVES
from ..outputs import atomic_write, check_output
from ..training import Trainer, file_digest
from .common import (HelpFormatter, add_executor, add_on_invalid, columns_spec, executor_of,
                     iter_input, memory_size, model_layout, no_sentences, nonnegative_float,
                     nonnegative_int, positive_float, positive_int, read_gold, warn)


def add_columns(p: argparse.ArgumentParser) -> None:
    p.add_argument("--columns", default=None, type=columns_spec, metavar="SPEC",
                   help="the file's columns in order, named word, pos, tag or _ (ignored): "
                        "e.g. word,pos,tag or word,tag (no POS: the POS-free variant of the "
                        "feature template); none: word,pos,...,tag for a new model (word "
                        "first, POS second, tag last), the model's own columns otherwise")


def add_parsers(sub) -> None:
    p = sub.add_parser("decode", formatter_class=HelpFormatter,
                       help="tag a CoNLL file with a saved model; writes its lines plus a "
                            "predicted-tag column")
    p.add_argument("--model", required=True, help="a saved model (fstchunk train)")
    p.add_argument("--input", required=True,
                   help="CoNLL file with the columns the model reads (its --columns)")
    p.add_argument("--decoder", choices=DECODERS, default="map",
                   help="map (Viterbi), posterior, meu (exact MEU for F_β), meu-kbest "
                        "(the --k best paths of the lattice machine reranked by E[F_β]: one "
                        "tilted sweep bounds them all, and only those it cannot rule out "
                        "are scored exactly, O(n·L²·W) each for n tokens, L tags and W ≤ "
                        "n + 1 likely chunk counts), meu-corpus (one joint decision "
                        "maximising F_β of the corpus's expected counts: a ratio of "
                        "expectations, not the expected corpus F)")
    p.add_argument("--beta", type=positive_float, default=1.0, help="β of the MEU decoders")
    p.add_argument("--k", type=positive_int, default=20, help="paths reranked by meu-kbest")
    p.add_argument("--output-scheme", default="IOB2", help="scheme of the predicted column")
    p.add_argument("--memory-budget", type=memory_size, default=None, metavar="SIZE",
                   help="memory one sentence may take in the meu and meu-kbest decoders, in "
                        "bytes or with a K, M or G suffix (e.g. 2G); a sentence estimated "
                        f"above it is not decoded (tagged {UNDECODED}; meu-kbest scores "
                        "every path exactly instead of bounding them); none: the library "
                        "default")
    p.add_argument("-o", "--output", default=None,
                   help="output file, written atomically (none: standard output, flushed "
                        "after each sentence)")
    add_columns(p)
    add_executor(p, "the input's sentences (blocks of about 2000 tokens; the output keeps "
                    "the input's order)")
    p.set_defaults(func=run_decode)

    l2 = ", ".join([*(f"{k} {v:g}" for k, v in DEFAULT_L2.items()),
                    f"{mm.MAX_MARGIN} {mm.DEFAULT_L2:g}", f"{PERCEPTRON}: none"])
    p = sub.add_parser("train", formatter_class=HelpFormatter,
                       help="train a CRF (ML, minimum-risk or max-margin) or a counting HMM")
    p.add_argument("--train", required=True, help="CoNLL training file")
    p.add_argument("--dev", default=None,
                   help="CoNLL file (same columns) for the dev F in the progress bar")
    add_columns(p)
    p.add_argument("--features", default="tmpt3", choices=tuple(TEMPLATES),
                   help="feature template (Tang et al. tmpt1-4, ner; -nopos: no POS column)")
    p.add_argument("--objective", default="ml",
                   choices=(*OBJECTIVES, mm.MAX_MARGIN, PERCEPTRON),
                   help="ml (log-likelihood), meu (expected sentence F_β; per sentence "
                        "O(n·L²·W) time and O(√n·L·W + n·L²) memory for n tokens, L tags "
                        "and W ≤ n + 1 likely chunk counts), meu-corpus (F_β of the "
                        "expected corpus counts, a ratio of expectations), max-margin "
                        "(structured hinge with loss "
                        "--loss, solved by block-coordinate Frank-Wolfe to a duality gap "
                        "<= --tol); each is a mean per sentence; perceptron: the averaged "
                        "perceptron (no λ; --max-iter passes, stops after a pass without "
                        "mistakes; MEU needs --calibrate)")
    p.add_argument("--loss", default="hamming", choices=mm.LOSSES,
                   help="max-margin's Δ: per-token Hamming loss, or f: 1 - F_β(y | gold)")
    p.add_argument("--beta", type=positive_float, default=1.0,
                   help="β of the MEU objectives and of --loss f")
    reg = p.add_mutually_exclusive_group()
    reg.add_argument("--l2", type=nonnegative_float, default=None,
                     help=f"λ of the penalty λ‖θ‖² (none: the objective's default: {l2})")
    reg.add_argument("--C", type=positive_float, default=None,
                     help="max-margin only: C of ½‖θ‖² + C Σ_i hinge_i, i.e. λ = 1/(2·C·N) "
                          "for N training sentences (none: from --l2)")
    p.add_argument("--tol", type=nonnegative_float, default=None,
                   help="stopping tolerance: max-margin's duality gap (absolute; none: "
                        f"{mm.DEFAULT_GAP_TOL:g}), else L-BFGS-B's gradient tolerance "
                        "(none: 1e-9)")
    p.add_argument("--init", default=None, help="start from this saved CRF (e.g. the ML one)")
    p.add_argument("-o", "--output", required=True, help="model file to write (.npz)")
    p.add_argument("--model-type", default="crf", choices=("crf", "hmm"),
                   help="linear-chain CRF or counting HMM")
    p.add_argument("--scheme", default="IOB2", help="scheme the model tags in")
    p.add_argument("--data-scheme", default="IOB2", help="scheme of the files' tag column")
    p.add_argument("--min-count", type=positive_int, default=1,
                   help="drop feature strings seen fewer times")
    p.add_argument("--max-iter", type=positive_int, default=150,
                   help="L-BFGS iterations (max-margin, perceptron: passes over the "
                        "training set)")
    p.add_argument("--dev-every", type=nonnegative_int, default=10,
                   help="dev F every K iterations (0: only at the end)")
    p.add_argument("--checkpoint-every", type=nonnegative_int, default=10,
                   help="save OUTPUT.ckpt every K iterations (0: never)")
    p.add_argument("--resume", action="store_true",
                   help="continue from OUTPUT.ckpt (refused if its settings differ)")
    add_executor(p, "the training set (each objective evaluation)")
    p.add_argument("--calibrate", metavar="HELDOUT", default=None,
                   help="after training, fit the temperature T of p(y|x) ∝ exp(score/T) on "
                        "these held-out CoNLL sentences (same columns; not the training "
                        "set): what MEU decoding of a max-margin model needs")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_on_invalid(p)
    p.set_defaults(func=run_train)

    p = sub.add_parser("calibrate", formatter_class=HelpFormatter,
                       help="fit a CRF's temperature on held-out sentences (maximum "
                            "likelihood), so that MEU decoding reads a max-margin model's "
                            "scores as probabilities")
    p.add_argument("--model", required=True, help="a saved CRF (fstchunk train)")
    p.add_argument("--input", required=True,
                   help="held-out CoNLL file with gold tags, in the model's columns")
    p.add_argument("--data-scheme", default="IOB2", help="scheme of the file's tag column")
    p.add_argument("-o", "--output", required=True,
                   help="calibrated model file to write (may be --model itself)")
    add_on_invalid(p)
    p.set_defaults(func=run_calibrate)


def run_decode(args: argparse.Namespace) -> int:
    if args.output:
        check_output(args.output)
    model = load_model(args.model)
    with executor_of(args) as ex:
        results = iter_decode_sentences(
            model, model_layout(iter_input(args.input), args.columns, model), args.decoder,
            args.beta, args.k, args.output_scheme, memory_budget=args.memory_budget,
            executor=ex)
        if args.output:
            with atomic_write(args.output) as fh:
                total, failed = _stream(args.input, results, fh)
        else:
            total, failed = _stream(args.input, results, sys.stdout)
    if not failed:
        return 0
    shown = ", ".join(failed[:3]) + (", ..." if len(failed) > 3 else "")
    where = f"the rest are in {args.output}" if args.output else "the rest were written"
    print(f"fstchunk decode: error: {len(failed)} of {total} sentences not decoded "
          f"({shown}): their lines carry the tag {UNDECODED}, which fstchunk eval refuses; "
          f"{where}", file=sys.stderr)
    return 1


def _stream(path: str, results: Iterator[Decoded], out: IO[str]) -> tuple[int, list[str]]:
    """Echo the input's lines, each token line plus its predicted tag, a sentence at a
    time as ``results`` yields it; the blank and ``-DOCSTART-`` lines after a sentence
    go out with it, and ``out`` is flushed before the next sentence is decoded.  One
    error line per sentence that failed.  Only the sentence in hand is held, whatever
    the file's size.  Returns the number of sentences and where those that failed
    begin."""
    lines = iter_lines(path)
    held: list = []                               # the first line of the next sentence

    def separators() -> None:
        for lineno, raw in lines:
            if not is_separator(raw):
                held.append((lineno, raw))
                break
            out.write(raw.rstrip("\r\n") + "\n")
        out.flush()
    failed: list[str] = []
    total = 0
    separators()
    for d in results:
        s = d.sentence
        if d.index != total or not held or held[0][0] != s.lines[0]:   # a bug, not the user's
            raise AssertionError(f"decoded sentence {d.index} arrived for {total}")
        total += 1
        if d.error is not None:
            failed.append(s.where(0))
            _report(s, d.index, d.error)
        tags = [UNDECODED] * len(s) if d.tags is None else d.tags
        for tag, (lineno, raw) in zip(tags, chain([held.pop()], lines)):   # tags first:
            # zip stops at the shorter without reading a line past the sentence
            text = raw.rstrip("\r\n")
            out.write(text + ("\t" if "\t" in text else " ") + tag + "\n")
        separators()
    if total == 0:
        raise no_sentences(path)
    return total, failed


def _report(s: Sentence, index: int, error: BaseException) -> None:
    """The one line on standard error for a sentence that was not decoded."""
    if isinstance(error, MemoryError):
        reason = f"out of memory ({error})" if str(error) else "out of memory"
    else:
        reason = str(error)
        if isinstance(error, BudgetError) and "--memory-budget" not in reason:
            reason += " (--memory-budget sets the budget)"
    reason = " ".join(reason.split())            # one line, whatever the message
    print(f"fstchunk decode: error: {s.where(0)}: sentence {index + 1} ({len(s)} tokens) "
          f"not decoded, tagged {UNDECODED}: {reason}", file=sys.stderr, flush=True)


def run_train(args: argparse.Namespace) -> int:
    check_output(args.output)
    crf = CRF.load(args.init) if args.init else None
    cols = args.columns or (crf.columns if crf is not None else Columns())
    train = read_gold(args.train, args.data_scheme, cols.tag, args.on_invalid, "train")
    dev = (read_gold(args.dev, args.data_scheme, cols.tag, args.on_invalid, "train")
           if args.dev else None)
    if args.model_type == "hmm":
        if args.objective != "ml" or args.init or args.resume or args.calibrate:
            raise InputError("--model-type hmm is estimated by counting: --objective, --init, "
                             "--resume and --calibrate apply to the CRF only")
        model = HMM(scheme=args.scheme, columns=cols).fit(train, data_scheme=args.data_scheme)
        model.save(args.output)
        print(f"wrote {args.output}")
        return 0
    if crf is not None:
        data = crf.training_data(train)
    else:
        template = resolve_template(args.features, cols)
        if template != args.features:
            warn("train", f"--columns {cols.spec()} has no POS column: --features "
                          f"{args.features} runs as {template}")
        crf, data = CRF.prepare(train, template, args.scheme, args.data_scheme,
                                min_count=args.min_count, columns=cols)
    crf.settings.update(train=args.train, dev=args.dev, features=crf.fmap.template,
                        init=args.init)
    identity = {"scheme": crf.scheme, "template": crf.fmap.template,
                "columns": cols.spec(), "train_sha256": file_digest(args.train),
                "init": args.init}
    l2 = args.l2
    if args.C is not None:
        if args.objective != mm.MAX_MARGIN:
            raise InputError(f"--C applies to --objective {mm.MAX_MARGIN} only; use --l2")
        l2 = mm.c_to_l2(args.C, len(data.gold))
    with executor_of(args) as ex:
        Trainer(objective=args.objective, l2=l2, beta=args.beta, max_iter=args.max_iter,
                tol=args.tol, dev=dev, dev_every=args.dev_every,
                checkpoint=args.output + ".ckpt", checkpoint_every=args.checkpoint_every,
                resume=args.resume, output=args.output, progress=not args.quiet, log=print,
                identity=identity, loss=args.loss, executor=ex).fit(crf, data)
    if args.calibrate:
        _calibrate(crf, args.calibrate, args.data_scheme, args.on_invalid, "train")
        crf.save(args.output)
    print(f"wrote {args.output}")
    return 0


def _calibrate(crf: CRF, path: str, data_scheme: str, on_invalid: str, command: str) -> None:
    held = read_gold(path, data_scheme, crf.columns.tag, on_invalid, command)
    t = crf.calibrate(held, source=path, data_scheme=data_scheme)
    print(f"temperature {t:.6g} (maximum likelihood on {len(held)} sentences of {path})")


def run_calibrate(args: argparse.Namespace) -> int:
    check_output(args.output)
    model = load_model(args.model)
    if not isinstance(model, CRF):
        hint = " (a joint model: fstchunk joint calibrate)" if model.kind == "joint" else ""
        raise InputError(f"{args.model}: a {model.kind} model; calibrate fits a CRF's "
                         f"temperature{hint}")
    _calibrate(model, args.input, args.data_scheme, args.on_invalid, "calibrate")
    model.save(args.output)
    print(f"wrote {args.output}")
    return 0
