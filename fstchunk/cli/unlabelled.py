"""``fstchunk expected --model M --input FILE --interval 0.9``: how good the model's own
output is on text without labels — the expected corpus precision, recall and F_β of
its decisions (``--decoder``, default MAP) with the truth drawn from the model, and an
interval for F_β (:mod:`fstchunk.decoding.corpus_f`)."""

from __future__ import annotations

import argparse
import sys

from ..core.errors import InputError
from ..core.outputs import json_text
from ..decoding.batch import block_lattices
from ..runtime.blocks import map_blocks
from ..decoding.corpus_f import EXACT_CELLS, corpus_f, count_laws, count_moments
from ..decoding.decoders import decoder as get_decoder
from ..models import load_model
from ..schemes import encodings as enc
from .common import chain_model, require_probabilities
from .inputs import arranged, iter_input, layout_input


def _block(job: tuple, block: list) -> tuple[list, int]:
    """A block's moments and its output's chunk count; a sentence that cannot be
    scored stops the command, naming its line (the corpus figure needs every sentence)."""
    model, move, dec = job
    lats, hyps = _decided(model, move, dec, block)
    return (count_moments(lats, hyps),
            sum(len(enc.tags_to_chunks(h, lat.scheme)) for h, lat in zip(hyps, lats)))


def _decided(model, move, dec, block: list) -> tuple[list, list]:
    """The block's lattices and the decoder's tags."""
    lats = block_lattices(model.lattices, list(arranged(block, move)))
    for s, lat in zip(block, lats):
        if isinstance(lat, BaseException):
            raise InputError(f"{s.where(0)}: {lat}")
    return lats, dec.tags(lats)


def run_unlabelled(args: argparse.Namespace, ex) -> int:
    if args.file is not None:
        raise InputError(f"give the text as --input FILE or as the positional FILE with its "
                         f"tag column, not both ({args.file} and --input {args.input})")
    if args.model is None or args.scores is not None:
        raise InputError("--input reads text without labels and needs --model MODEL (the "
                         "model decodes it and is the distribution of its truth)")
    if args.direction != "training" or args.method != "fast":
        raise InputError("--input computes the corpus figures on the fast engine; "
                         "--direction and --method are for the per-sentence table")
    model = chain_model(load_model(args.model), args.model, "expected")
    require_probabilities(model, args.model)
    dec = get_decoder(args.decoder, beta=args.beta if args.decoder != "map" else None,
                      as_options=True)
    checked = layout_input(iter_input(args.input), model, args.model, args.columns,
                           "expected")
    job = (model, checked.arrangement, dec)
    moments: list = []
    predicted, tokens, small = 0, 0, []   # small: the sentences while their law is small
    for block, (got, p) in map_blocks(_block, job, checked.sentences, ex):
        moments += got
        predicted += p
        tokens += sum(len(x) for x in block)
        small = small + block if small is not None and \
            (predicted + 1) * (tokens + 1) <= EXACT_CELLS else None
    if not moments:
        raise InputError(f"{args.input}: no sentences")
    laws = None if small is None else count_laws(*_decided(model, checked.arrangement, dec,
                                                           small))
    r = corpus_f(predicted, laws=laws, moments=None if laws is not None else moments,
                 beta=args.beta, level=args.interval)
    pct = 100 * r.level
    if args.json:
        print(json_text({"sentences": r.sentences, "predicted_chunks": r.predicted,
                         "decoder": args.decoder, "beta": r.beta,
                         "expected_tp": r.expected_tp, "expected_gold_chunks": r.expected_gold,
                         "precision": r.precision, "recall": r.recall, "f": r.f,
                         "sd_f": r.sd_f, "interval": list(r.interval), "level": r.level,
                         "method": r.method}))
        return 0
    how = ("exact law of the corpus counts" if r.method == "exact" else
           "normal approximation on the exact moments of the corpus counts")
    out = sys.stdout
    out.write(f"{r.sentences} sentences, {r.predicted} chunks decoded by {args.decoder}; "
              f"the truth drawn from the model\n")
    out.write(f"expected precision {100 * r.precision:.2f}  recall {100 * r.recall:.2f}  "
              f"F{r.beta:g} {100 * r.f:.2f} (sd {100 * r.sd_f:.2f})\n")
    out.write(f"{pct:g}% interval of F{r.beta:g}: [{100 * r.interval[0]:.2f}, "
              f"{100 * r.interval[1]:.2f}] ({how})\n")
    return 0
