"""``fstchunk joint {train,calibrate,decode}``: joint POS tagging and chunking
(Shimizu & Haas 2006).

The joint model reads words, POS and chunk tags; ``--columns`` says where they
are, and the model remembers it (``settings["columns"]``) and its training layout
(:mod:`fstchunk.io.layout`), so ``decode`` and ``calibrate`` read their files the same
way, after checking them against that layout
(:func:`~fstchunk.cli.inputs.layout_input`).  MEU decoding needs probabilities:
a perceptron or MMVP model must be calibrated first (``joint calibrate``, or
``joint train --calibrate HELDOUT``), which fits a temperature on held-out
sentences; an uncalibrated one asked for MEU is refused.

``joint train`` runs the one training loop (:class:`fstchunk.learn.loop.Trainer`) with
``train``'s options: ``--dev`` (dev F in the progress line; ``--select dev``),
``--dev-every`` (by default every epoch of perceptron/mmvp, every 10 crf iterations),
``--checkpoint-every`` (``OUTPUT.ckpt``, the perceptron's state in
``OUTPUT.ckpt.perceptron.npz``), ``--resume`` (refusing a checkpoint of other settings:
algorithm, λ, kind, ``--collapse-pos``, ``--np-only``, columns, training file,
``--sentences``), ``--max-iter`` (``--iterations``, its old name), ``--workers`` /
``--scheduler`` for ``crf`` (default: the usable cores, as before), Ctrl-C / SIGTERM
(the checkpoint written and named; exit 130 / 143).  :data:`ALGORITHMS` maps
``--algorithm`` to the registry's objectives: the one place they are named here.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import closing
from types import SimpleNamespace
from typing import Any

from ..core.errors import InputError
from ..core.outputs import atomic_write, check_output, json_text
from ..decoding.decoders import decoder as get_decoder
from ..decoding.decoders import names as decoder_names
from ..io.columns import Columns
from ..io.conll import Sentence, write_conll
from ..io.layout import Layout
from ..learn.loop import SELECT
from ..learn.runs import file_digest
from ..models import joint as J
from ..models.joint.train import ALGORITHMS, DEFAULT_L2
from ..runtime.parallel import usable_cores
from ..runtime.scale import LocalExecutor
from .common import (
    BETA_HELP,
    HelpFormatter,
    add_executor,
    add_on_invalid,
    add_training_loop,
    beta_option,
    executor_of,
    nonnegative_float,
    positive_int,
    require_probabilities,
)
from .inputs import (
    columns_spec,
    iter_input,
    layout_input,
    no_sentences,
    read_gold,
    read_input,
    warn_unread,
    warn_unrecorded,
)


def add_parser(sub) -> None:
    p = sub.add_parser("joint", formatter_class=HelpFormatter,
                       help="joint POS tagging and chunking (Shimizu & Haas 2006)")
    jsub = p.add_subparsers(dest="joint_command", required=True)

    q = jsub.add_parser("train", formatter_class=HelpFormatter,
                        help="train a joint model (or a tagger/chunker for cascades)")
    q.add_argument("--train", required=True, help="CoNLL file with words, POS and chunk tags")
    _columns(q)
    q.add_argument("--sentences", type=positive_int, default=None,
                   help="use the first N sentences (none: all)")
    q.add_argument("--collapse-pos", action="store_true", help="POS collapsed by Table 3")
    q.add_argument("--np-only", action="store_true", help="keep NP chunks only (B/I/O)")
    q.add_argument("--algorithm", choices=tuple(ALGORITHMS), default="mmvp",
                   help="averaged perceptron, MMVP, or crf: conditional likelihood over the "
                        "joint structure (probabilistic); no λ but for crf")
    q.add_argument("--l2", type=nonnegative_float, default=None,
                   help=f"crf only: λ of the mean NLL per sentence + λ‖w‖² (none: "
                        f"{DEFAULT_L2[ALGORITHMS['crf']]:g}; a λ of the old summed NLL, "
                        f"before this convention, divided by the training sentences)")
    add_executor(q, "the training sentences (crf: each objective evaluation; none: the "
                    "usable cores)")
    q.add_argument("--kind", choices=("joint", "tagger", "chunker"), default="joint",
                   help="joint model, POS tagger or chunker of a cascade")
    q.add_argument("--calibrate", metavar="HELDOUT", default=None,
                   help="fit the MEU temperature on these held-out sentences after training")
    q.add_argument("-o", "--output", required=True, help="model file to write (.npz)")
    add_training_loop(q, select=SELECT, unit="steps",
                      dev="held-out CoNLL file (same columns) for the dev "
                      "figure in the progress line and --select dev: chunk F1 of Viterbi "
                      "decoding (a tagger: POS accuracy)", max_iter=10,
                      max_iter_help="epochs of perceptron/mmvp, L-BFGS iterations of crf (in "
                                    "all, counting those before a --resume)",
                      max_iter_aliases=("--iterations",), dev_every=None,
                      dev_every_none="; none: every epoch of perceptron/mmvp, every 10 "
                                     "iterations of crf", checkpoint_every=10)
    add_on_invalid(q)
    q.set_defaults(func=run_train)

    q = jsub.add_parser("calibrate", formatter_class=HelpFormatter,
                        help="fit a model's temperature on held-out sentences (maximum "
                             "likelihood), so that MEU decoding reads its scores as "
                             "probabilities")
    q.add_argument("--model", required=True, help="a saved joint model")
    q.add_argument("--input", required=True, help="held-out CoNLL file with gold POS and chunks")
    _columns(q)
    q.add_argument("-o", "--output", required=True,
                   help="calibrated model file to write (may be --model itself)")
    add_on_invalid(q)
    q.set_defaults(func=run_calibrate)

    q = jsub.add_parser("decode", formatter_class=HelpFormatter,
                        help="CoNLL in; CoNLL plus predicted POS and chunk columns out "
                             "(or --json scores against the input's gold)")
    q.add_argument("--model", required=True, help="a saved joint model")
    q.add_argument("--input", required=True, help="CoNLL file to tag")
    _columns(q)
    q.add_argument("--decoder", choices=decoder_names(), default="map",
                   help="map: the joint Viterbi; any other decodes the chunk layer of the "
                        "calibrated joint model (meu: exact MEU; POS from the Viterbi)")
    q.add_argument("--beta", type=beta_option, default=1.0,
                   help=f"the MEU decoder's F_β: {BETA_HELP}")
    q.add_argument("--json", action="store_true",
                   help='print {"pos_accuracy", "np_accuracy", "np_f1"} (percent) against '
                        "the input's gold POS and chunks")
    q.add_argument("-o", "--output", default=None, help="output file (none: standard output)")
    add_on_invalid(q)
    q.set_defaults(func=run_decode)


def _columns(p: argparse.ArgumentParser) -> None:
    p.add_argument("--columns", type=columns_spec, default=None, metavar="SPEC",
                   help="the file's columns in order, named word, pos, tag or _ (ignored), "
                        "e.g. word,_,pos,tag; none: word,pos,...,tag for training, the "
                        "model's own columns otherwise")


def _model_columns(model: Any, given: Columns | None, path: str, model_path: str,
                   command: str, gold: bool) -> Columns:
    """Where the input ``path`` holds the model's columns: checked against its training
    layout (its first sentences); a model without one reads ``--columns`` or its
    ``settings["columns"]``, as before."""
    if given is None and model.layout_ is None:
        cols = Columns.from_json(model.settings_.get("columns", Columns().to_json()))
        warn_unrecorded(model_path, path, cols, command)
        return cols
    checked = layout_input(iter_input(path), model, model_path, given, command, need_tag=gold)
    return checked.source or given or Columns()


def _layout(sents: list[Sentence], cols: Columns, gold: bool) -> list[Sentence]:
    """The sentences with their columns rearranged as word, POS(, tag): the layout
    :func:`fstchunk.models.joint.layered` reads."""
    if cols.pos is None:
        raise InputError(f"--columns {cols.spec()}: the joint model needs a POS column")
    out = []
    for s in sents:
        c = cols.resolve(len(s.rows[0]), s.where(0), need_tag=gold)
        pick = [c.word, c.pos] + ([c.tag] if gold else [])
        out.append(Sentence([[r[j] for j in pick] for r in s.rows], list(s.lines), s.source))
    return out


def _gold(path: str, cols: Columns, on_invalid: str, command: str, n: int | None = None
          ) -> list[Sentence]:
    select = (lambda ss: ss[:n]) if n else None
    sents = read_gold(path, "IOB2", -1, on_invalid, command,
                      select=lambda ss: _layout(select(ss) if select else ss, cols, True))
    return sents


#: steps between dev figures when not given: L-BFGS iterations are many and short (every
#: 10), epochs few and long (every one)
SMOOTH_DEV_EVERY = 10


def run_train(args: argparse.Namespace) -> int:
    check_output(args.output)
    objective = ALGORITHMS[args.algorithm]
    if args.l2 is not None and objective.default_l2 is None:
        raise InputError(f"--l2 applies to --algorithm crf only (--algorithm "
                         f"{args.algorithm} has no λ: its averaging regularises)")
    if not objective.smooth and (args.workers not in (None, 1) or args.scheduler):
        raise InputError(f"--workers/--scheduler apply to --algorithm crf only (--algorithm "
                         f"{args.algorithm} trains by epochs in one process)")
    cols = args.columns or Columns()
    first = next(iter_input(args.train), None)
    if first is None:
        raise no_sentences(args.train)
    width = len(first.rows[0])
    resolved = cols.resolve(width, first.where(0))
    warn_unread(args.columns, resolved, [first], "joint train")
    sents = _gold(args.train, cols, args.on_invalid, "joint train", args.sentences)
    data = J.layered(sents, args.collapse_pos, args.np_only)
    model = J.JointModel(variant=args.kind, algorithm=args.algorithm, max_iter=args.max_iter,
                         l2=args.l2, select=args.select, collapse_pos=args.collapse_pos,
                         np_only=args.np_only)
    pos = "feature" if args.kind == "chunker" else "gold"
    layout = Layout.of(sents, Columns(0, 1, 2), "IOB2", pos).moved(resolved, width)
    reading = SimpleNamespace(reads=J.JointModel.reads, layout=layout, layout_=layout,
                              settings_={})           # the model to be, for layout_input
    heldout = (_gold(args.calibrate, _model_columns(reading, args.columns, args.calibrate,
                                                    args.output, "joint train", True),
                     args.on_invalid, "joint train") if args.calibrate else None)
    dev = (J.layered(_gold(args.dev, _model_columns(reading, args.columns, args.dev,
                                                    args.output, "joint train", True),
                           args.on_invalid, "joint train"), args.collapse_pos, args.np_only)
           if args.dev else None)
    if args.dev and not dev:
        raise no_sentences(args.dev)
    identity = {"kind": args.kind, "collapse_pos": args.collapse_pos,
                "np_only": args.np_only, "columns": resolved.spec(),
                "train_sha256": file_digest(args.train), "sentences": len(data)}
    every = SMOOTH_DEV_EVERY if objective.smooth else 1
    with _executor(args, objective, len(data)) as ex:
        model.fit(data, dev=dev, dev_every=every if args.dev_every is None else args.dev_every,
                  checkpoint=args.output + ".ckpt", checkpoint_every=args.checkpoint_every,
                  resume=args.resume, output=args.output, progress=not args.quiet,
                  log=print, identity=identity, executor=ex, layout=layout,
                  record={"columns": cols.to_json()})
    if heldout is not None:
        _calibrate(model, heldout, args.calibrate)
        model.save(args.output)
    print(f"wrote {args.output}")
    return 0


#: sentences per process below which the default spreads no further (a fork's cost)
PER_WORKER = 50


def _executor(args: argparse.Namespace, objective, sentences: int):
    """``--workers``/``--scheduler``; for crf without them, local processes over the
    usable cores (at most one per :data:`PER_WORKER` sentences), as the joint model's
    NLL was always spread; none for the passes of perceptron/mmvp."""
    if args.workers is None and args.scheduler is None and objective.smooth:
        k = min(usable_cores(), sentences // PER_WORKER)
        if k > 1:
            return closing(LocalExecutor(k))
    return executor_of(args)


def _calibrate(model: J.JointModel, sents: list[Sentence], source: str) -> None:
    data = J.layered(sents, model.settings_.get("collapse_pos", False),
                     model.settings_.get("np_only", False))
    t = J.calibrate(model, data, source=source)
    print(f"temperature {t:.6g} (maximum likelihood on {len(sents)} sentences of {source})")


def run_calibrate(args: argparse.Namespace) -> int:
    check_output(args.output)
    model = J.JointModel.load(args.model)
    cols = _model_columns(model, args.columns, args.input, args.model, "joint calibrate", True)
    sents = _gold(args.input, cols, args.on_invalid, "joint calibrate")
    _calibrate(model, sents, args.input)
    model.save(args.output)
    print(f"wrote {args.output}")
    return 0


def run_decode(args: argparse.Namespace) -> int:
    dec = get_decoder(args.decoder, beta=args.beta, as_options=True)
    if args.output:
        check_output(args.output)
    model = J.JointModel.load(args.model)
    if dec.needs_probabilities:
        require_probabilities(model, args.model)     # margins: the calibrating command
    cols = _model_columns(model, args.columns, args.input, args.model, "joint decode",
                          bool(args.json))
    raw = read_input(args.input)
    if args.json:
        sents = _gold(args.input, cols, args.on_invalid, "joint decode")
    else:
        sents = _layout(raw, cols, gold=False)
    data = J.layered(sents, model.settings_.get("collapse_pos", False),
                     model.settings_.get("np_only", False), gold=bool(args.json))
    pos, chunks = J.predict(model, data, dec)
    if args.json:
        text = json_text(J.scores(data, pos, chunks), indent=2) + "\n"
        rows = None
    else:
        rows = [[r + [p, c] for r, p, c in zip(s.rows, ps, cs)]
                for s, ps, cs in zip(raw, pos, chunks)]
    if args.output:
        with atomic_write(args.output) as fh:
            fh.write(text) if rows is None else write_conll(rows, fh)
    elif rows is None:
        sys.stdout.write(text)
    else:
        write_conll(rows, sys.stdout)
    return 0
