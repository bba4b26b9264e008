"""``fstchunk train`` (a CRF by ML or minimum risk, or a counting HMM) and ``fstchunk
decode`` (tag a CoNLL file with a saved model).

Both check their destination (``-o``) before any work, and write it atomically
(:mod:`fstchunk.outputs`).  ``decode`` echoes every input line as it was —
delimiter, ``-DOCSTART-`` and blank lines included — and appends the predicted
tag with the line's own delimiter (a tab if the line has one, else a space).
"""

from __future__ import annotations

import argparse
import sys

from ..columns import Columns
from ..conll import iter_lines
from ..decode import DECODERS, decode_sentences
from ..errors import InputError
from ..models import load_model
from ..models.crf import CRF
from ..models.features import TEMPLATES, resolve_template
from ..models.hmm import HMM
from ..models.objectives import DEFAULT_L2, OBJECTIVES
from ..outputs import atomic_write, check_output
from ..training import Trainer, file_digest
from .common import (HelpFormatter, add_on_invalid, columns_spec, nonnegative_float, nonnegative_int,
                     positive_float, positive_int, model_layout, read_gold, read_input, warn)


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
                   help="map (Viterbi), posterior, meu (exact MEU for F_β), meu-kbest, "
                        "meu-corpus (expected corpus F)")
    p.add_argument("--beta", type=positive_float, default=1.0, help="β of the MEU decoders")
    p.add_argument("--k", type=positive_int, default=20, help="paths reranked by meu-kbest")
    p.add_argument("--output-scheme", default="IOB2", help="scheme of the predicted column")
    p.add_argument("-o", "--output", default=None, help="output file (none: standard output)")
    add_columns(p)
    p.set_defaults(func=run_decode)

    l2 = ", ".join(f"{k} {v:g}" for k, v in DEFAULT_L2.items())
    p = sub.add_parser("train", formatter_class=HelpFormatter,
                       help="train a CRF (ML or minimum-risk) or a counting HMM")
    p.add_argument("--train", required=True, help="CoNLL training file")
    p.add_argument("--dev", default=None,
                   help="CoNLL file (same columns) for the dev F in the progress bar")
    add_columns(p)
    p.add_argument("--features", default="tmpt3", choices=tuple(TEMPLATES),
                   help="feature template (Tang et al. tmpt1-4, ner; -nopos: no POS column)")
    p.add_argument("--objective", default="ml", choices=tuple(OBJECTIVES),
                   help="ml (log-likelihood), meu (expected sentence F_β), meu-corpus "
                        "(expected corpus F_β); each is a mean per sentence")
    p.add_argument("--beta", type=positive_float, default=1.0, help="β of the MEU objectives")
    p.add_argument("--l2", type=nonnegative_float, default=None,
                   help=f"λ of the penalty λ‖θ‖² (none: the objective's default: {l2})")
    p.add_argument("--init", default=None, help="start from this saved CRF (e.g. the ML one)")
    p.add_argument("-o", "--output", required=True, help="model file to write (.npz)")
    p.add_argument("--model-type", default="crf", choices=("crf", "hmm"),
                   help="linear-chain CRF or counting HMM")
    p.add_argument("--scheme", default="IOB2", help="scheme the model tags in")
    p.add_argument("--data-scheme", default="IOB2", help="scheme of the files' tag column")
    p.add_argument("--min-count", type=positive_int, default=1,
                   help="drop feature strings seen fewer times")
    p.add_argument("--max-iter", type=positive_int, default=150, help="L-BFGS iterations")
    p.add_argument("--dev-every", type=nonnegative_int, default=10,
                   help="dev F every K iterations (0: only at the end)")
    p.add_argument("--checkpoint-every", type=nonnegative_int, default=10,
                   help="save OUTPUT.ckpt every K iterations (0: never)")
    p.add_argument("--resume", action="store_true",
                   help="continue from OUTPUT.ckpt (refused if its settings differ)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_on_invalid(p)
    p.set_defaults(func=run_train)


def run_decode(args: argparse.Namespace) -> int:
    if args.output:
        check_output(args.output)
    model = load_model(args.model)
    sents = read_input(args.input)
    preds = decode_sentences(model, model_layout(sents, args.columns, model), args.decoder,
                             args.beta, args.k, args.output_scheme)
    tag_of = {line: t for s, p in zip(sents, preds) for line, t in zip(s.lines, p)}
    if args.output:
        with atomic_write(args.output) as fh:
            _echo(args.input, tag_of, fh)
    else:
        _echo(args.input, tag_of, sys.stdout)
    return 0


def _echo(path: str, tag_of: dict[int, str], out) -> None:
    """The input's lines as they were, each token line plus its predicted tag."""
    for lineno, raw in iter_lines(path):
        text = raw.rstrip("\r\n")
        if lineno in tag_of:
            text += ("\t" if "\t" in text else " ") + tag_of[lineno]
        out.write(text + "\n")


def run_train(args: argparse.Namespace) -> int:
    check_output(args.output)
    crf = CRF.load(args.init) if args.init else None
    cols = args.columns or (crf.columns if crf is not None else Columns())
    train = read_gold(args.train, args.data_scheme, cols.tag, args.on_invalid, "train")
    dev = (read_gold(args.dev, args.data_scheme, cols.tag, args.on_invalid, "train")
           if args.dev else None)
    if args.model_type == "hmm":
        if args.objective != "ml" or args.init or args.resume:
            raise InputError("--model-type hmm is estimated by counting: --objective, --init "
                             "and --resume apply to the CRF only")
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
    Trainer(objective=args.objective, l2=args.l2, beta=args.beta, max_iter=args.max_iter,
            dev=dev, dev_every=args.dev_every, checkpoint=args.output + ".ckpt",
            checkpoint_every=args.checkpoint_every, resume=args.resume, output=args.output,
            progress=not args.quiet, log=print, identity=identity).fit(crf, data)
    print(f"wrote {args.output}")
    return 0
