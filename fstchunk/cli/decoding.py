"""``fstchunk decode``: tag a CoNLL file with a saved model.

The destination (``-o``) is checked before any work and written atomically
(:mod:`fstchunk.core.outputs`).  ``decode`` writes every input line — ``-DOCSTART-``
and blank lines included — with the predicted tag appended, in a form that
conlleval.pl reads: the columns joined by one space (a tab when the input's first
token line holds one), ``O`` as the tag of a ``-DOCSTART-`` line, and, by default,
the tags in the scheme of the model's training data.  The input's first sentences
are checked against the model's training layout before any work
(:func:`~fstchunk.cli.inputs.layout_input`).

``decode`` streams: each sentence is written (and standard output flushed) as soon
as it is decoded, in input order, into the temporary of ``-o`` or to standard
output.  A sentence that cannot be decoded (an
:class:`~fstchunk.core.errors.FstchunkError` such as a
:class:`~fstchunk.core.errors.BudgetError`, or a :class:`MemoryError`) gets one error
line naming its ``file:line`` and length (a cause that repeats is shown three times,
then counted: :class:`~fstchunk.cli.common.Failures`); its lines are echoed with the
tag :data:`~fstchunk.evaluation.chunks.UNDECODED` (``<error>``, which ``fstchunk eval``
refuses), decoding goes on, the file is still completed, and the command ends with
a one-line summary and exit status 1.  A fault of the whole input (a
:class:`~fstchunk.core.errors.LayoutError`) stops it at once, writing nothing.

``--format jsonl`` writes one JSON object per sentence (tokens, tags, chunks with
their probabilities, token marginals with ``--marginals``), ``--format html`` one
self-contained page (:mod:`fstchunk.decoding.display`); a failed sentence is an object with
its ``error`` (a page paragraph) there.  ``--min-confidence`` applies to every
format (:mod:`fstchunk.cli.decode_formats`).  ``--scores FILE`` decodes a score
file (``.npz`` or JSONL, :mod:`fstchunk.models.scorefile`) instead of a model's
lattices: tokens from ``--input`` (its first column) or from the JSONL's
``tokens``; without either, JSONL ``tokens`` are null, the HTML shows positions and
the CoNLL output is the tag column alone (a blank line after each sentence).

An attribute CRF (``fstchunk import crfsuite``, ``train --format crfsuite``) reads its
``--input`` in CRFsuite's data format; ``--format crfsuite`` writes per item the
input's label, a tab and the predicted label, as ``crfsuite tag -r`` does
(:mod:`fstchunk.cli.crfsuite_format`), and ``jsonl``/``html`` show no words.  An
unconstrained chain's labels (scheme none) are written as they are; MEU and chunk
confidences need a chunk scheme and are refused on it before any work.
"""

from __future__ import annotations

import argparse
import sys
from itertools import chain
from typing import IO, Iterator

from ..decoding.batch import Decoded, iter_decode_sentences
from ..decoding.confidence import check_min_confidence
from ..io.conll import file_delimiter, is_separator, iter_lines, split_line
from ..io.crfsuite.data import iter_data
from ..decoding.decoders import UTILITIES, Decoder, decoder as get_decoder, names as decoder_names
from ..core.errors import BudgetError, FstchunkError, InputError
from ..evaluation.chunks import UNDECODED
from ..models import load_model
from ..models.io import read_metadata
from ..models.scorefile import open_scores
from ..core.outputs import atomic_write, check_output
from .common import (BETA_HELP, Failures, HelpFormatter, add_executor, beta_option,
                     chain_model, executor_of, memory_size, positive_int,
                     require_probabilities)
from .choices import utility_option
from .crfsuite_format import (KIND, SequenceModel, known_attributes, refuse_kind, require_kind,
                              write_reference)
from .decode_formats import (docstart_lines, thresholded, write_html, write_jsonl,
                             write_tag_column)
from .inputs import (add_columns, arranged, delimiter_arg, iter_input, layout_input,
                     no_sentences)



def add_parser(sub) -> None:
    p = sub.add_parser("decode", formatter_class=HelpFormatter,
                       help="tag a CoNLL file with a saved model; writes its lines plus a "
                            "predicted-tag column")
    p.add_argument("--model", default=None, help="a saved model (fstchunk train)")
    p.add_argument("--scores", default=None, metavar="FILE",
                   help="decode score arrays instead of a model: the .npz score file of "
                        "expected --scores or JSONL (per line tokens, tags, scores n x "
                        "|tags|, optional transitions, start, end; fstchunk.models.scorefile)")
    p.add_argument("--input", default=None,
                   help="CoNLL file with the columns the model reads (its --columns); "
                        "required with --model; with --scores, optional: the tokens (first "
                        "column), one sentence per scored sentence")
    p.add_argument("--scheme", default=None,
                   help="with --scores: the scheme of the JSONL scores' tags (none: the one "
                        "scheme their tags are of; tags that schemes share, as IOB1 and "
                        "IOB2 do, are refused); a .npz says its own")
    p.add_argument("--format", choices=("conll", "jsonl", "html", "crfsuite"), default="conll",
                   help="conll: the input's lines plus the predicted tag; jsonl: one JSON "
                        "object per sentence with tokens, tags and chunks with their "
                        "probability p; html: one self-contained page, a summary and the "
                        "sentences, each chunk in its type's colour with its p; "
                        "crfsuite: --input in CRFsuite's data format (what an attribute CRF "
                        "reads: fstchunk import crfsuite), written as crfsuite tag -r does: "
                        "the input's label, a tab, the predicted label (eval --format "
                        "crfsuite reads it); an attribute CRF's jsonl and html read "
                        "CRFsuite data too (tokens: null, positions)")
    p.add_argument("--marginals", action="store_true",
                   help="with --format jsonl: each token's marginal Pr(tag) for every tag "
                        "of the model (its scheme)")
    p.add_argument("--min-confidence", type=float, default=0.0, metavar="P",
                   help="drop the decided chunks whose probability is below P (their "
                        "tokens become O, neighbours re-encoded validly) on every format: "
                        "higher P, higher precision, lower recall (as a lower --beta)")
    p.add_argument("--decoder", choices=decoder_names(), default="map",
                   help="map (Viterbi), posterior, meu (exact MEU for F_β), meu-kbest "
                        "(the --k best paths of the lattice machine reranked by E[F_β]: one "
                        "tilted sweep bounds them all, and only those it cannot rule out "
                        "are scored exactly, O(n·L²·W) each for n tokens, L tags and W ≤ "
                        "n + 1 likely chunk counts), meu-corpus (one joint decision "
                        "maximising F_β of the corpus's expected counts: a ratio of "
                        "expectations, not the expected corpus F)")
    p.add_argument("--beta", type=beta_option, default=1.0,
                   help=f"the MEU decoders' F_β: {BETA_HELP}")
    p.add_argument("--k", type=positive_int, default=20, help="paths reranked by meu-kbest")
    p.add_argument("--utility", type=utility_option, default="conlleval",
                   metavar="{" + ",".join(UTILITIES) + "}",
                   help="what --decoder meu maximises the expectation of: conlleval's F_β "
                        "(a chunk is correct with its boundaries and type), exact (the "
                        "exact-boundary F_β: boundaries alone, any type: eval --mode exact), "
                        "partial (eval --mode partial: half credit for an overlap), type "
                        "(eval --mode type: a chunk of the gold's type overlapping it is "
                        "enough), type:T (the F_β of the chunks of type T alone), "
                        "weighted:T=w,... (a chunk of type T counts w times), near (half a "
                        "point for a chunk one boundary off) or macro (the mean over the "
                        "model's types of type:T); the certificate of partial, type, near "
                        "and macro is a bound")
    p.add_argument("--output-scheme", default=None,
                   help="scheme of the predicted column (none: the scheme of the model's "
                        "training data, its --data-scheme; IOB2 for models that do not "
                        "record it)")
    p.add_argument("--delimiter", type=delimiter_arg, default=None,
                   help="column delimiter of the input and the output (conlleval.pl's -d "
                        "forms: '\\t' or a tab, ' ', ...); none: runs of spaces and tabs, "
                        "written as tabs when the first token line holds one, else as one "
                        "space")
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


def run_decode(args: argparse.Namespace) -> int:
    try:
        check_min_confidence(args.min_confidence)
    except FstchunkError:
        raise InputError(f"--min-confidence must be a probability in [0, 1], got "
                         f"{args.min_confidence}") from None
    if args.marginals and args.format != "jsonl":
        raise InputError("--marginals is written by --format jsonl only")
    if (args.model is None) == (args.scores is None):
        raise InputError("give exactly one of --model MODEL or --scores FILE")
    dec = get_decoder(args.decoder, beta=args.beta, k=args.k,
                      memory_budget=args.memory_budget, utility=args.utility, as_options=True)
    if args.output:
        check_output(args.output)
    if args.scores and args.format == "crfsuite":
        raise InputError("--format crfsuite decodes CRFsuite data with an attribute CRF "
                         "(--model), not a score file")
    if args.scores:
        model, items, word = _scored_input(args)
    else:
        model, items, word = _model_input(args)
    scheme = args.output_scheme or output_scheme(model)
    if args.model and (dec.needs_probabilities or args.format not in ("conll", "crfsuite")
                       or args.min_confidence > 0):
        require_probabilities(model, args.model)     # margins: the calibrating command
    with executor_of(args) as ex:
        results = thresholded(iter_decode_sentences(
            model, items, dec, output_scheme=scheme, executor=ex,
            confidences=args.format not in ("conll", "crfsuite") or args.min_confidence > 0,
            marginals=args.marginals), args.min_confidence, scheme)
        failed = Failures("decode", "decoded")
        if args.output:
            with atomic_write(args.output) as fh:
                total = _write(args, results, fh, failed, word, model, dec)
        else:
            total = _write(args, results, sys.stdout, failed, word, model, dec)
    if not failed.where:
        return 0
    where = f"the rest are in {args.output}" if args.output else "the rest were written"
    print(f"fstchunk decode: error: {failed.summary(total)}: " + (
        f"their lines carry the tag {UNDECODED}, which fstchunk eval refuses; "
        if args.format == "conll" else "written with their error; ") + where,
        file=sys.stderr)
    return 1


def _model_input(args: argparse.Namespace) -> tuple:
    """(model, its arranged sentences, the word column there) under ``--model``."""
    if args.scheme is not None:
        raise InputError("--scheme is for --scores; a model decodes in its own scheme "
                         "(--output-scheme sets the output's)")
    if args.input is None:
        raise InputError("--model needs --input, the CoNLL file to tag")
    model = chain_model(load_model(args.model), args.model, "decode")
    if args.format == "crfsuite" or getattr(model, "kind", None) == KIND:
        if args.format == "conll":
            refuse_kind(model, args.model)
        require_kind(model, args.model)
        if args.columns is not None or args.delimiter is not None:
            raise InputError("--columns and --delimiter are for CoNLL inputs; CRFsuite data "
                             "has one label and tab-separated attributes per line")
        return SequenceModel(model), known_attributes(iter_data(args.input), model,
                                                      args.input, "decode"), 0
    checked = layout_input(iter_input(args.input, args.delimiter), model, args.model,
                           args.columns, "decode")
    move = checked.arrangement
    word = move.target.word if move else (checked.source.word if checked.source else 0)
    return model, arranged(checked.sentences, move), word


def _scored_input(args: argparse.Namespace) -> tuple:
    """(score model, its scored sentences, 0) under ``--scores`` (read in full)."""
    if args.columns is not None:
        raise InputError("--columns is for --model; with --scores the tokens are the "
                         "first column of --input")
    try:
        read_metadata(args.scores)
    except FstchunkError:
        pass
    else:
        raise InputError(f"{args.scores} is a saved fstchunk model, not a score file: "
                         f"give it as --model {args.scores}")
    sents = None
    if args.input is not None:
        sents = list(iter_input(args.input, args.delimiter))
        if not sents:
            raise no_sentences(args.input)
    model, items = open_scores(args.scores, args.scheme, sents, "--scheme")
    return model, items, 0


def _write(args: argparse.Namespace, results: Iterator[Decoded], out: IO[str],
           failed: Failures, word: int, model, dec: Decoder) -> int:
    """The chosen format; the number of sentences written (none: refused)."""
    total = None
    if args.format == "jsonl":
        total = write_jsonl(results, out, failed, word, model.scheme_)
    elif args.format == "html":
        what = args.model or args.scores
        sub = (f"decoder {dec.name}" + (f", β = {dec.beta:g}" if "beta" in dec.settings
                                         else "")
               + (f", chunks with p ≥ {args.min_confidence:g}" if args.min_confidence
                  else ""))
        conll = args.input is not None and not isinstance(model, SequenceModel)
        total = write_html(results, out, failed, word, f"fstchunk decode: {what}", sub,
                           docstart_lines(args.input, args.delimiter) if conll else ())
    elif args.format == "crfsuite":
        total = write_reference(results, out, failed, UNDECODED)
    elif args.scores and args.input is None:
        return write_tag_column(results, out, failed, UNDECODED)
    else:
        return _stream(args.input, results, out, failed, args.delimiter)
    if total == 0:
        raise no_sentences(args.input)
    return total


def _stream(path: str, results: Iterator[Decoded], out: IO[str], failed: Failures,
            delimiter: str | None = None) -> int:
    """Write the input's lines, each token line's columns plus its predicted tag, a
    sentence at a time as ``results`` yields it; the blank and ``-DOCSTART-`` lines
    after a sentence go out with it, and ``out`` is flushed before the next sentence
    is decoded.  One error line per sentence that failed.  Only the sentence in hand
    is held, whatever the file's size.  Returns the number of sentences; those that
    failed are told to ``failed``.

    What is written, conlleval.pl reads (:mod:`fstchunk.evaluation.conlleval`): a token line's
    columns are joined by one space (by a tab when the input's first token line
    holds one, by ``delimiter`` when given), so runs of white space and trailing
    spaces do not make empty columns; a ``-DOCSTART-`` line gets the tag ``O`` too,
    padded with ``O`` to the token lines' width; blank lines are empty."""
    lines = iter_lines(path)
    first = next(lines, None)          # opened now, before the parse runs ahead: a pipe's
    lines = chain([first] if first is not None else [], lines)   # bytes are kept for it
    held: list = []                               # the first line of the next sentence
    pending: list[str] = []                       # separators before the width is known
    form: dict = {}                               # the input's delimiter and width

    def separators() -> None:
        for lineno, raw in lines:
            if not is_separator(raw):
                held.append((lineno, raw))
                break
            pending.append(raw.rstrip("\r\n"))
        if held and not form:                     # the first token line: the layout
            first = held[0][1].rstrip("\r\n")
            join = delimiter if delimiter is not None else file_delimiter(first)
            form.update(split=delimiter, join=join, width=len(split_line(first, delimiter)))
        if form:
            flush()

    def flush() -> None:
        for text in pending:
            cols = split_line(text, form["split"])
            if cols:                              # a -DOCSTART- line: O as its tag
                width = form["width"]
                cols = cols[:width] + ["O"] * (width - len(cols)) + ["O"]
            out.write(form["join"].join(cols) + "\n")
        pending.clear()
        out.flush()
    total = 0
    separators()
    for d in results:
        s = d.sentence
        if d.index != total or not held or held[0][0] != s.lines[0]:   # a bug, not the user's
            raise AssertionError(f"decoded sentence {d.index} arrived for {total}")
        total += 1
        if d.error is not None:
            failed.add(s.where(0), d.index, len(s), _with_hint(d.error),
                       f"tagged {UNDECODED}")
        tags = [UNDECODED] * len(s) if d.tags is None else d.tags
        for tag, (lineno, raw) in zip(tags, chain([held.pop()], lines)):   # tags first:
            # zip stops at the shorter without reading a line past the sentence
            cols = split_line(raw.rstrip("\r\n"), form["split"])
            out.write(form["join"].join(cols + [tag]) + "\n")
        separators()
    if total == 0:
        raise no_sentences(path)
    return total


def output_scheme(model) -> str:
    """The scheme ``decode`` writes by default: that of the model's training data
    (``data_scheme``), else IOB2 (models that do not record it)."""
    return getattr(model, "data_scheme_", None) or "IOB2"


def _with_hint(error: BaseException) -> BaseException:
    """A BudgetError told with the option that raises the budget."""
    if isinstance(error, BudgetError) and "--memory-budget" not in error.cli_text():
        return BudgetError(f"{error.cli_text()} (--memory-budget sets the budget)",
                           error.estimate, error.budget)
    return error
