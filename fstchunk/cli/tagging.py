"""``fstchunk train`` (a CRF by ML, minimum risk or max margin, or a counting HMM) and
``fstchunk calibrate`` (a CRF's temperature on held-out sentences: a max-margin CRF
needs it before any decoder but MAP reads its scores as probabilities).

``train --format crfsuite`` trains an attribute CRF on CRFsuite data instead
(:func:`fstchunk.cli.crfsuite_format.run_train`); ``--features`` takes a built-in
template or a template file (:mod:`fstchunk.models.templates`).

Both check their destination (``-o``) before any work, and write it atomically
(:mod:`fstchunk.core.outputs`).

Layouts (:mod:`fstchunk.io.layout`): a model records its training layout; ``calibrate``
checks its input's first sentences against it before any work
(:func:`~fstchunk.cli.inputs.layout_input`), and so does ``train`` for ``--dev``,
``--calibrate`` and the training file of an ``--init`` model.  ``train --init``
refuses an explicit ``--scheme``, ``--features``, ``--columns`` or ``--min-count``
that contradicts the init model (options left at their defaults follow it;
``--data-scheme`` describes the file, so it may differ, and follows the init
model's when not given).
"""

from __future__ import annotations

import argparse

from ..core.errors import FstchunkError, InputError
from ..core.outputs import check_output
from ..io.annotation import read_partial
from ..io.columns import Columns
from ..learn import objectives as lo
from ..learn.loop import SELECT
from ..learn.runs import file_digest
from ..models import load_model
from ..models import maxmargin as mm
from ..models.crf import CRF, CRF_OBJECTIVES
from ..models.features import TEMPLATES, resolve_template, template_of
from ..models.hmm import HMM
from ..schemes import encodings as enc
from . import crfsuite_format
from .choices import objective_option
from .common import (
    Given,
    GivenTrue,
    HelpFormatter,
    add_executor,
    add_on_invalid,
    add_training_loop,
    chain_model,
    executor_of,
    given,
    nonnegative_float,
    positive_float,
    positive_int,
    refuse_given,
    refuse_unread_objective_options,
    training_beta_option,
    uncalibrated,
    warn,
)
from .inputs import (
    add_columns,
    iter_input,
    layout_input,
    no_sentences,
    read_gold,
    warn_unread,
)


def add_parsers(sub) -> None:
    l2 = ", ".join(f"{o.name} {o.default_l2:g}" if o.default_l2 is not None else
                   f"{o.name}: none" for o in CRF_OBJECTIVES)
    p = sub.add_parser("train", formatter_class=HelpFormatter,
                       help="train a CRF (ML, minimum-risk or max-margin) or a counting HMM")
    p.add_argument("--train", required=True, help="CoNLL training file")
    p.add_argument("--format", choices=("conll", "crfsuite"), default="conll",
                   help="of --train, --dev and --calibrate: CoNLL columns read through "
                        "--features, or CRFsuite's data format (LABEL<TAB>attr[:value]..., "
                        "an attribute CRF over those attributes; --scheme none: any labels, "
                        "not given: detected; docs/howto/crfsuite.md)")
    add_columns(p)
    p.add_argument("--features", default="tmpt3", type=feature_template, action=Given,
                   metavar="TEMPLATE",
                   help="feature template: a built-in name (Tang et al. tmpt1-4, ner; -nopos: "
                        "no POS column: " + ", ".join(TEMPLATES) + ") or a template file "
                        "(CRF++'s syntax, U and B lines, %%x[row,col]; docs/howto/"
                        "templates.md); with --init: the init model's")
    p.add_argument("--objective", action=Given, default=lo.ML.name,
                   type=objective_option(CRF_OBJECTIVES),
                   metavar="{" + ",".join(lo.names(CRF_OBJECTIVES)).replace(
                       lo.MEU_WEIGHTED.name, lo.MEU_WEIGHTED.name + ":T=w") + "}",
                   help="what training minimises, a mean per sentence plus λ‖θ‖² where it "
                        "has a λ: " + lo.help_text(CRF_OBJECTIVES) + "; meu costs "
                        "O(n·L²·W) time and O(√n·L·W + n·L²) memory per sentence of n "
                        "tokens, L tags and W ≤ n + 1 likely chunk counts; the margin "
                        "objectives' scores are not probabilities (MEU needs --calibrate)")
    p.add_argument("--loss", action=Given, default="hamming", choices=mm.LOSSES,
                   help="max-margin's Δ: per-token Hamming loss, or f: 1 - F_β(y | gold)")
    p.add_argument("--beta", action=Given, type=training_beta_option, default=1.0,
                   help="the standard β of the MEU objectives' and --loss f's F_β = "
                        "(1+β²)PR/(β²P+R) (β > 1 favours recall); > 0: at 0 (precision) the "
                        "tagging without chunks would win")
    reg = p.add_mutually_exclusive_group()
    reg.add_argument("--l2", action=Given, type=nonnegative_float, default=None,
                     help=f"λ of the penalty λ‖θ‖² (none: the objective's default: {l2})")
    reg.add_argument("--C", action=Given, type=positive_float, default=None,
                     help="max-margin only: C of ½‖θ‖² + C Σ_i hinge_i, i.e. λ = 1/(2·C·N) "
                          "for N training sentences (none: from --l2)")
    p.add_argument("--tol", action=Given, type=nonnegative_float, default=None,
                   help="stopping tolerance: max-margin's duality gap (absolute; none: "
                        f"{lo.MAX_MARGIN.default_tol:g}), else L-BFGS-B's gradient "
                        f"tolerance (none: {lo.ML.default_tol:g})")
    p.add_argument("--init", action=Given, default=None,
                   help="start from this saved CRF (e.g. the ML one): its scheme, features, "
                        "columns and min-count, which explicit options must not contradict")
    p.add_argument("-o", "--output", required=True, help="model file to write (.npz)")
    p.add_argument("--model-type", default="crf", choices=("crf", "hmm"),
                   help="linear-chain CRF or counting HMM (which reads --train, --columns, "
                        "--scheme, --data-scheme, --min-count and --on-invalid; the other "
                        "options are refused)")
    p.add_argument("--scheme", default="IOB2", action=Given,
                   help="scheme the model tags in (with --init: the init model's)")
    p.add_argument("--data-scheme", default="IOB2", action=Given,
                   help="scheme of the files' tag column (with --init: the init model's "
                        "training data scheme where it records one)")
    p.add_argument("--min-count", type=positive_int, default=1, action=Given,
                   help="drop feature strings seen fewer times (with --init: the init "
                        f"model's; --model-type hmm: words seen fewer times are read as "
                        f"their shape class, not given: {HMM().min_count})")
    add_executor(p, "the training set (each objective evaluation)",
                 "for " + ", ".join(o.name for o in CRF_OBJECTIVES if o.spread_by_default))
    p.add_argument("--calibrate", action=Given, metavar="HELDOUT", default=None,
                   help="after training, fit the temperature T of p(y|x) ∝ exp(score/T) on "
                        "these held-out CoNLL sentences (same columns; not the training "
                        "set): what MEU decoding of a max-margin model needs")
    p.add_argument("--partial", action=GivenTrue,
                   help="read the tag column as partial annotation: ? (any tag), sets "
                        "B-PER|I-PER|O, *-PER (any tag of type PER), B-* (a chunk of unknown "
                        "type), O! (outside every chunk), and '# annotated: PER,LOC' lines "
                        "(there O means: no chunk of those types); trains the marginal "
                        "likelihood of what the annotation allows (--objective ml, a CRF); "
                        "a contradiction with the scheme is an error at its line")
    add_training_loop(p, select=SELECT, unit="iterations",
                      dev="CoNLL file (same columns) for the dev F in "
                      "the progress line and --select dev", max_iter=150,
                      max_iter_help="L-BFGS iterations (max-margin, perceptron: passes over "
                                    "the training set)", dev_every=10, checkpoint_every=10)
    add_on_invalid(p)
    p.set_defaults(func=run_train)

    p = sub.add_parser("calibrate", formatter_class=HelpFormatter,
                       help="fit a CRF's temperature on held-out sentences (maximum "
                            "likelihood), so that MEU decoding reads a max-margin model's "
                            "scores as probabilities")
    p.add_argument("--model", required=True,
                   help="a saved CRF (fstchunk train) or attribute CRF (train --format "
                        "crfsuite, fstchunk import crfsuite)")
    p.add_argument("--input", required=True,
                   help="held-out file with gold tags: CoNLL in the model's columns, or "
                        "CRFsuite data for an attribute CRF")
    p.add_argument("--format", choices=("conll", "crfsuite"), default=None,
                   help="of --input: CoNLL columns (a CRF), or CRFsuite's data format (an "
                        "attribute CRF, its labels the gold); none: the one the model reads")
    p.add_argument("--data-scheme", default="IOB2", action=Given,
                   help="scheme of the file's tag column (CoNLL; CRFsuite labels are in the "
                        "model's scheme)")
    p.add_argument("-o", "--output", required=True,
                   help="calibrated model file to write (may be --model itself)")
    add_on_invalid(p)
    p.set_defaults(func=run_calibrate)


def feature_template(text: str) -> str:
    """argparse type: a built-in template name or a readable template file, parsed here
    so that a bad template is refused (naming file:line:column) before any data is
    read."""
    try:
        template_of(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


#: train's options the counting HMM does not read (refused when given)
HMM_UNREAD = ("features", "objective", "loss", "beta", "l2", "C", "tol", "init", "dev",
              "max_iter", "dev_every", "select", "checkpoint_every", "resume", "workers",
              "scheduler", "calibrate", "partial")


def run_train(args: argparse.Namespace) -> int:
    if args.format == "crfsuite":
        return crfsuite_format.run_train(args)
    check_output(args.output)
    if args.model_type == "hmm":
        refuse_given(args, HMM_UNREAD, "--model-type hmm is estimated by counting and does "
                     "not read it (it reads --train, --columns, --scheme, --data-scheme, "
                     "--min-count and --on-invalid); drop it or train a CRF")
    refuse_unread_objective_options(args, lo.objective(args.objective))
    if args.partial and (args.model_type == "hmm"
                         or lo.objective(args.objective) is not lo.ML):
        raise InputError(f"--partial trains a CRF by --objective {lo.ML.name} (the marginal "
                         f"likelihood of the annotation); got --model-type "
                         f"{args.model_type} --objective {args.objective}")
    crf = CRF.load(args.init) if args.init else None
    data_scheme = args.data_scheme
    if crf is not None:
        _refuse_init_conflicts(args, crf)
        if not given(args, "data_scheme") and crf.data_scheme_ is not None:
            data_scheme = crf.data_scheme_
    cols = args.columns or (crf.columns_ if crf is not None else Columns())
    if crf is not None:                          # the init model's layout, before reading
        layout_input(iter_input(args.train), crf, args.init, args.columns, "train",
                     need_tag=True, fix="train --init reads files in the init model's layout")
    else:                                        # --columns against the file, before reading
        first = next(iter_input(args.train), None)
        if first is not None:
            cols.resolve(len(first.rows[0]), first.where(0))
    train = (_read_partial(args.train, data_scheme, cols.tag) if args.partial else
             read_gold(args.train, data_scheme, cols.tag, args.on_invalid, "train"))
    plain = [getattr(s, "sentence", s) for s in train]
    if args.model_type == "hmm":
        counts = {"min_count": args.min_count} if given(args, "min_count") else {}
        model = HMM(scheme=args.scheme, columns=cols, data_scheme=data_scheme,
                    **counts).fit(train)
        warn_unread(args.columns, model.columns_, train, "train")
        model.save(args.output)
        print(f"wrote {args.output}")
        return 0
    if crf is not None:                      # --init: train on from its θ
        crf.set_params(partial=args.partial, warm_start=True)
        data = crf.training_data(train, data_scheme)
        layout = crf.layout_of(plain, data_scheme)
        crf.layout_ = layout if crf.layout_ is None else crf.layout_.union(layout)
    else:
        template = resolve_template(args.features, cols)
        if template != args.features:
            warn("train", f"--columns {cols.spec()} has no POS column: --features "
                          f"{args.features} runs as {template}")
        crf = CRF(template, args.scheme, data_scheme=data_scheme, min_count=args.min_count,
                  columns=cols, partial=args.partial)
        data = crf._prepare(train)
        warn_unread(args.columns, crf.columns_, plain, "train")
    dev = _heldout(crf, args.dev, args, data_scheme) if args.dev else None
    heldout = _heldout(crf, args.calibrate, args, data_scheme) if args.calibrate else None
    crf.settings_.update(train=args.train, dev=args.dev, features=crf.fmap_.template,
                        init=args.init, partial=args.partial)
    identity = {"scheme": crf.scheme_, "template": crf.fmap_.template,
                "columns": cols.spec(), "train_sha256": file_digest(args.train),
                "init": args.init}
    if args.partial:             # recorded only when set: older checkpoints stay resumable
        identity["partial"] = True
    identity["min_count"] = crf.settings_.get("min_count", 1)   # older ones: 1 (loop.ABSENT)
    l2 = args.l2
    if args.C is not None:
        if not lo.objective(args.objective).needs_l2:
            margins = " or ".join(f"--objective {o.name}" for o in CRF_OBJECTIVES
                                  if o.needs_l2)
            raise InputError(f"--C applies to {margins} only; use --l2")
        l2 = mm.c_to_l2(args.C, len(data.gold))
    crf.set_params(objective=args.objective, l2=l2, beta=args.beta, loss=args.loss,
                   max_iter=args.max_iter, tol=args.tol, select=args.select)
    with executor_of(args, auto=lo.objective(args.objective).spread_by_default) as ex:
        crf.fit(data, dev=dev, dev_every=args.dev_every, checkpoint=args.output + ".ckpt",
                checkpoint_every=args.checkpoint_every, resume=args.resume,
                output=args.output, progress=not args.quiet, log=print, identity=identity,
                executor=ex)
    if heldout is not None:
        try:
            _calibrate(crf, heldout, args.calibrate, data_scheme)
        except FstchunkError as e:            # the trained model is on disk: say so
            raise uncalibrated(e, crf, args.output) from e
        crf.save(args.output)
    print(f"wrote {args.output}")
    return 0


def _read_partial(path: str, data_scheme: str, column: int | None) -> list:
    """The partially annotated sentences of a training file (:func:`fstchunk.io.annotation.
    read_partial`); an empty file is an error naming it."""
    if column is None:
        raise InputError(f"{path}: --columns names no tag column, and --partial reads the "
                         f"annotation from it")
    sents = read_partial(path, column, data_scheme)
    if not sents:
        raise no_sentences(path)
    return sents


def _refuse_init_conflicts(args: argparse.Namespace, crf: CRF) -> None:
    """One InputError for the first explicit option that contradicts the ``--init``
    model (naming both values), before any data is read."""
    def refuse(option: str, value: object, what: str, theirs: object) -> None:
        raise InputError(f"{option} {value} contradicts the --init model's {what} {theirs} "
                         f"({args.init}); drop {option} or give a matching one")
    if given(args, "scheme") and enc.canonical_scheme(args.scheme) != crf.scheme_:
        refuse("--scheme", args.scheme, "scheme", crf.scheme_)
    if given(args, "features") and template_of(resolve_template(
            args.features, crf.columns_)).source != crf.fmap_.spec.source:
        refuse("--features", args.features, "feature template", crf.fmap_.template)
    if given(args, "min_count"):
        theirs = crf.settings_.get("min_count")
        if theirs is None:
            raise InputError(f"--min-count {args.min_count} cannot be checked against the "
                             f"--init model ({args.init} does not record its min-count) and "
                             f"would not apply: the feature map is the init model's; drop "
                             f"--min-count")
        if theirs != args.min_count:
            refuse("--min-count", args.min_count, "min-count", theirs)
    if given(args, "columns"):
        first = next(iter_input(args.train), None)
        if first is None:
            raise no_sentences(args.train)
        width = len(first.rows[0])
        mine = args.columns.resolve(width, first.where(0))
        theirs = crf.columns_.resolve(width, first.where(0)) if crf.layout_ is None else \
            crf.layout_.source(width)
        if theirs is None or (mine.word, mine.pos, mine.tag) != (theirs.word, theirs.pos,
                                                                 theirs.tag):
            refuse("--columns", args.columns.spec(), "columns",
                   crf.layout_.spec() if crf.layout_ is not None else crf.columns_.spec())


def _heldout(crf: CRF, path: str, args: argparse.Namespace, data_scheme: str):
    """The gold sentences of a ``--dev`` or ``--calibrate`` file, in the training layout
    (checked against it; ``--columns`` turns a mismatch into a warning)."""
    layout_input(iter_input(path), crf, args.output, args.columns, "train", need_tag=True,
                 fix="--dev and --calibrate files need the training file's columns")
    return read_gold(path, data_scheme, crf.columns_.tag, args.on_invalid, "train")


def _calibrate(crf: CRF, held: list, path: str, data_scheme: str) -> None:
    t = crf.calibrate(held, source=path, data_scheme=data_scheme)
    print(f"temperature {t:.6g} (maximum likelihood on {len(held)} sentences of {path})")


def run_calibrate(args: argparse.Namespace) -> int:
    check_output(args.output)
    model = chain_model(load_model(args.model), args.model, "calibrate")
    fmt = args.format or ("crfsuite" if model.kind == crfsuite_format.KIND else "conll")
    if fmt == "crfsuite":
        crfsuite_format.require_kind(model, args.model, "calibrate --format crfsuite")
        if given(args, "data_scheme"):
            raise InputError(f"--data-scheme is for CoNLL files; the labels of CRFsuite data "
                             f"are read in the model's scheme ({model.scheme_})")
        crfsuite_format.calibrate(model, args.input, args.on_invalid, "calibrate")
        model.save(args.output)
        print(f"wrote {args.output}")
        return 0
    crfsuite_format.refuse_kind(model, args.model)
    if not isinstance(model, CRF):
        hint = " (a joint model: fstchunk joint calibrate)" if model.kind == "joint" else ""
        raise InputError(f"{args.model}: a {model.kind} model; calibrate fits a CRF's "
                         f"temperature (or an attribute CRF's){hint}")
    layout_input(iter_input(args.input), model, args.model, None, "calibrate", need_tag=True,
                 fix="give calibrate a held-out file in that layout")
    held = read_gold(args.input, args.data_scheme, model.columns_.tag, args.on_invalid,
                     "calibrate")
    _calibrate(model, held, args.input, args.data_scheme)
    model.save(args.output)
    print(f"wrote {args.output}")
    return 0
