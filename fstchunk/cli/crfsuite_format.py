"""``--format crfsuite``: CRFsuite's data files (:mod:`fstchunk.io.crfsuite.data`) as the
input of ``train``, ``decode`` and ``expected``, and ``crfsuite tag -r``'s output
(``LABEL<TAB>PREDICTED`` per item, a blank line after each sequence) as what
``decode --format crfsuite`` writes and ``eval --format crfsuite`` reads.

A model that reads CRFsuite data is an attribute CRF (kind ``attribute-crf``: ``fstchunk
import crfsuite``, ``train --format crfsuite``, ``fstchunk.sklearn.CRF``); it reads
nothing else, and no other model reads CRFsuite data.  Gold labels pass through
:func:`fstchunk.io.gold.check_gold` as every gold column does (``--on-invalid``), under
a chunk scheme; under ``none`` any label goes.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import chain
from typing import IO, Any, Iterable, Iterator

from ..decoding.batch import Decoded
from ..io.conll import Sentence
from ..io.crfsuite.data import Sequence, iter_data
from ..core.errors import FstchunkError, InputError
from ..io.gold import GoldReport, check_gold
from ..io.layout import head
from ..schemes.tagspace import UNCONSTRAINED, canonical
from .common import Failures, warn

#: the model kind that reads CRFsuite data
KIND = "attribute-crf"


def require_kind(model: Any, path: str, option: str = "--format crfsuite") -> None:
    """InputError unless ``model`` reads CRFsuite data, naming the file and the fix."""
    if getattr(model, "kind", None) != KIND:
        raise InputError(f"{path}: a {getattr(model, 'kind', '?')} model reads CoNLL "
                         f"columns; {option} inputs are CRFsuite data, which an attribute "
                         f"CRF reads (fstchunk import crfsuite, train --format crfsuite)")


def refuse_kind(model: Any, path: str) -> None:
    """InputError if ``model`` reads CRFsuite data while the command reads CoNLL."""
    if getattr(model, "kind", None) == KIND:
        raise InputError(f"{path}: an attribute CRF reads CRFsuite data, not CoNLL columns: "
                         f"give --format crfsuite and an input in CRFsuite's format")


#: sequences without a known attribute told one by one; further ones are counted
SHOWN = 3


def known_attributes(seqs: Iterable[Sequence], model: Any, path: str, command: str
                     ) -> Iterator[Sequence]:
    """``seqs``, checked against the attributes ``model`` knows: InputError, before any
    work, when none of the first sequences (about 1000 items) carries one (not this
    model's data: a CoNLL file, other features); later, one warning per sequence that
    carries none (its labels would come from the transitions alone; the first
    :data:`SHOWN`, then a count after the last)."""
    known = model.fmap_.index
    first, rest = head(seqs)
    if first and not any(a in known for s in first for item in s.items for a in item):
        items = sum(len(s) for s in first)
        raise InputError(f"{first[0].where(0)}: none of the first {items} items of {path} "
                         f"carries an attribute the model knows ({len(known)} attributes, "
                         f"e.g. {next(iter(known), '-')!r}): not CRFsuite data of this "
                         f"model's features (an attribute CRF reads LABEL<TAB>attr... lines "
                         f"with the attributes it was trained on)")
    blind, total = [], 0
    for s in chain(first, rest):
        total += 1
        if not any(a in known for item in s.items for a in item):
            blind.append(s.where(0))
            if len(blind) <= SHOWN:
                more = " (further ones are counted)" if len(blind) == SHOWN else ""
                warn(command, f"{s.where(0)}: no item of this sequence ({len(s)} items) "
                              f"carries an attribute the model knows: its labels come from "
                              f"the transitions alone{more}")
        yield s
    if len(blind) > SHOWN:
        warn(command, f"{len(blind)} of {total} sequences of {path} carry no attribute the "
                      f"model knows (first at {blind[0]})")


class SequenceModel:
    """An attribute CRF seen through CRFsuite sequences: :meth:`lattices` of
    :class:`~fstchunk.io.crfsuite.data.Sequence` objects (their items), everything else
    the model's own.  Its ``data_scheme_`` is the model's scheme (what decode writes)."""

    def __init__(self, model: Any):
        self.model = model
        self.data_scheme_ = model.scheme_

    def __getattr__(self, name: str) -> Any:
        if name == "model":                      # not set yet (unpickling)
            raise AttributeError(name)
        return getattr(self.model, name)

    def lattices(self, seqs: list, require_probabilities: bool = True) -> list:
        return self.model.lattices([s.items for s in seqs], require_probabilities)


def _proxy(seq: Sequence) -> Sentence:
    return Sentence([[y] for y in seq.labels], list(seq.lines), seq.source)


def gold_sequences(path: str, scheme: str | None, on_invalid: str, command: str
                   ) -> Iterator[Sequence]:
    """The sequences of a CRFsuite data file, lazily, their labels checked in ``scheme``
    (:func:`fstchunk.io.gold.check_gold`: repaired, skipped or refused; one warning after
    the last); under ``none`` as they are.  InputError for a file without sequences."""
    chunked = canonical(scheme) != UNCONSTRAINED
    report, kept = GoldReport([]), 0
    for seq in iter_data(path):
        if chunked:
            one = check_gold([_proxy(seq)], scheme, -1, on_invalid)
            report.repaired += one.repaired
            report.skipped += one.skipped
            if not one.sentences:
                continue
            seq = replace(seq, labels=one.sentences[0].column(-1))
        kept += 1
        yield seq
    if not kept and not report.skipped:
        raise InputError(f"{path}: no sequences (an empty CRFsuite data file)")
    if report.warning():
        warn(command, f"{path}: {report.warning()}")
    if not kept:
        raise InputError(f"{path}: every sequence was skipped as invalid (--on-invalid skip)")


def training_pairs(seqs: Iterable[Sequence], path: str) -> tuple[list, list]:
    """(X, y) of CRFsuite sequences for an attribute CRF; a sequence weight other than 1
    is refused (fstchunk's objectives weigh every sequence alike), and a label with
    white space, at its ``file:line``."""
    X, y = [], []
    for s in seqs:
        if s.weight != 1.0:
            raise InputError(f"{s.where(0)}: @weight:{s.weight:g}: fstchunk trains with "
                             f"every sequence weighing 1; drop the declaration")
        for t, label in enumerate(s.labels):
            if any(c.isspace() for c in label):
                raise InputError(f"{s.where(t)}: label {label!r} holds white space, which "
                                 f"fstchunk's labels cannot (its outputs split on it)")
        X.append(s.items)
        y.append(s.labels)
    if not X:
        raise InputError(f"{path}: no sequences")
    return X, y


def write_reference(results: Iterator[Decoded], out: IO[str], failed: Failures,
                    undecoded: str) -> int:
    """``crfsuite tag -r``'s form: per item the input's label, a tab and the predicted
    one; a blank line after each sequence; a sequence that failed gets ``undecoded``.
    Returns the number of sequences."""
    total = 0
    for d in results:
        total += 1
        s = d.sentence
        if d.error is not None:
            failed.add(s.where(0), d.index, len(s), d.error, f"tagged {undecoded}")
        tags = [undecoded] * len(s) if d.tags is None else d.tags
        out.write("".join(f"{g}\t{p}\n" for g, p in zip(s.labels, tags)) + "\n")
        out.flush()
    return total


def _calibrate(crf: Any, held: tuple[list, list], path: str) -> None:
    t = crf.calibrate(held, source=path)
    print(f"temperature {t:.6g} (maximum likelihood on {len(held[0])} sequences of {path})")


def calibrate(crf: Any, path: str, on_invalid: str, command: str) -> None:
    """``calibrate --format crfsuite``: the temperature of an attribute CRF fitted on the
    held-out CRFsuite data at ``path``, its labels the gold in the model's scheme."""
    seqs = known_attributes(gold_sequences(path, crf.scheme_, on_invalid, command), crf, path,
                            command)
    _calibrate(crf, training_pairs(seqs, path), path)


#: train's options that CRFsuite data has no use for (their defaults are allowed)
NOT_FOR_CRFSUITE = ("columns", "features", "data_scheme", "min_count", "partial")


def run_train(args: Any) -> int:
    """``train --format crfsuite``: an attribute CRF (:class:`~fstchunk.models.
    attribute_crf.AttributeCRF`) on CRFsuite data, through the one training loop, with
    train's objective, λ, β, loss, iterations, dev, checkpoints and ``--init`` (an
    attribute CRF's file, e.g. ``fstchunk import crfsuite``'s).  ``--scheme`` given: the
    model's scheme (``none``: the unconstrained chain); not given: detected from the
    labels (:func:`~fstchunk.models.attribute_crf.detect_scheme`)."""
    # imported here, not at the top: decode and expected import this module too, and
    # must not load the training machinery (scipy.optimize; the front door's budget)
    from ..learn import objectives as lo
    from ..learn.runs import file_digest
    from ..models import load_model
    from ..models import maxmargin as mm
    from ..models.attribute_crf import AttributeCRF
    from ..core.outputs import check_output
    from .common import executor_of, given, refuse_unread_objective_options, uncalibrated
    check_output(args.output)
    for name in NOT_FOR_CRFSUITE:
        if given(args, name):
            raise InputError(f"--{name.replace('_', '-')} is for CoNLL files; CRFsuite data "
                             f"holds each item's attributes and its label")
    if args.model_type != "crf":
        raise InputError("--model-type hmm reads CoNLL files; --format crfsuite trains an "
                         "attribute CRF")
    refuse_unread_objective_options(args, lo.objective(args.objective))
    if args.init:
        crf = load_model(args.init)
        require_kind(crf, args.init, "train --format crfsuite --init")
        if given(args, "scheme") and canonical(args.scheme) != crf.scheme_:
            raise InputError(f"--scheme {args.scheme} contradicts the --init model's scheme "
                             f"{crf.scheme_} ({args.init}); drop --scheme")
        scheme = crf.scheme_
        crf.set_params(warm_start=True)             # train on from its θ
    else:
        scheme = args.scheme if given(args, "scheme") else "auto"
        crf = AttributeCRF(scheme)
    check = None if scheme == "auto" else scheme

    def pairs(path: str) -> tuple[list, list]:
        return training_pairs(gold_sequences(path, check, args.on_invalid, "train"), path)
    X, y = pairs(args.train)
    dev = pairs(args.dev) if args.dev else None
    held = pairs(args.calibrate) if args.calibrate else None
    l2 = args.l2
    if args.C is not None:
        if not lo.objective(args.objective).needs_l2:
            raise InputError("--C applies to the max-margin objectives only; use --l2")
        l2 = mm.c_to_l2(args.C, len(X))
    crf.set_params(objective=args.objective, l2=l2, beta=args.beta, loss=args.loss,
                   max_iter=args.max_iter, tol=args.tol, select=args.select)
    identity = {"format": "crfsuite", "scheme": scheme, "train_sha256": file_digest(args.train),
                "init": args.init}
    with executor_of(args, auto=lo.objective(args.objective).spread_by_default) as ex:
        crf.fit(X, y, dev=dev, dev_every=args.dev_every, checkpoint=args.output + ".ckpt",
                checkpoint_every=args.checkpoint_every, resume=args.resume,
                output=args.output, progress=not args.quiet, log=print, identity=identity,
                executor=ex)
    crf.settings_.update(train=args.train, dev=args.dev, init=args.init)
    if held is not None:
        try:
            _calibrate(crf, held, args.calibrate)
        except FstchunkError as e:            # the trained model is on disk: say so
            raise uncalibrated(e, crf, args.output) from e
    crf.save(args.output)
    print(f"wrote {args.output}: scheme {crf.scheme_}, {crf.L} labels, {len(crf.fmap_)} "
          f"attributes, {crf.P} state features")
    return 0
