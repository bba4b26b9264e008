"""A Hugging Face token classifier under a chunk CRF: MAP and MEU decoding, entity confidences.

An ``AutoModelForTokenClassification`` scores the word pieces; :func:`fstchunk.torch.
first_subword_pool` gives each word its first piece's scores, which are the emissions of
:class:`fstchunk.torch.CRFLayer` (a distribution over the valid tag sequences of
``--scheme``; transitions, start and end are its parameters).  The example

1. trains ``--epochs`` epochs of the NLL (AdamW), then ``--fine-tune`` epochs of an
   expected-F loss (``--fine-tune-objective``: 1 − E[F_β] per sentence, or the batch's
   expected corpus F; minimum risk, Jansche 2005);
2. decodes the dev sentences by MAP (constrained Viterbi) and MEU (maximal expected F_β),
   prints conlleval F of both, and each chunk of the first ``--show`` sentences with its
   confidence p = Pr(chunk ∈ y), the exact chunk marginal (``CRFLayer.decode_chunks``);
3. with ``--scores FILE``, writes the dev sentences' scores as an fstchunk score file
   (:mod:`fstchunk.models.scorefile`) that ``fstchunk expected --scores`` reads.

``--model`` is any checkpoint name or path (its tokenizer must be a fast one: ``word_ids``);
without it a tiny randomly initialised BERT (``--layers``, ``--hidden``) and a WordPiece
tokenizer trained here on the training words are used — nothing is downloaded:

    FSTCHUNK_DATA=../shared/data python examples/transformers_tagger.py --corpus ned \\
        --limit 2000 --epochs 3 --fine-tune 1
    FSTCHUNK_DATA=../shared/data python examples/transformers_tagger.py --corpus conll2000 \\
        --model bert-base-cased --lr 3e-5 --epochs 2

Needs ``pip install ".[hf]"`` (transformers, tokenizers; torch as in ``.[torch]``).
A sentence whose pieces exceed the model's positions is refused, naming it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

import torch

from fstchunk.schemes import encodings as enc
from fstchunk.io.conll import data_path, read_conll
from fstchunk.core.errors import FstchunkError, InputError
from fstchunk import evaluate
from fstchunk.core.fbeta import check_beta
from fstchunk.io.gold import check_gold
from fstchunk.models.scorefile import save_scores
from fstchunk.schemes.tagspace import TagSet
from fstchunk.torch import CRFLayer, first_subword_pool

CORPORA = {"ned": (("conll2002", "ned.train"), ("conll2002", "ned.testa")),
           "conll2000": (("conll2000", "train.txt"), ("conll2000", "dev.txt"))}
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def read(path: str, limit: int | None, data_scheme: str, scheme: str
         ) -> list[tuple[list[str], list[str]]]:
    """(words, tags in ``scheme``) of the first ``limit`` sentences of a CoNLL file: word
    first, tag last; invalid gold repaired as conlleval reads it (:mod:`fstchunk.io.gold`)."""
    sents = check_gold(read_conll(path)[:limit], data_scheme).sentences
    return [(s.column(0), enc.convert(s.column(-1), data_scheme, scheme)) for s in sents]


def tiny_tokenizer(words: list[str], vocab_size: int):
    """A BERT-style WordPiece tokenizer trained on ``words`` (``tokenizers``), wrapped
    as a fast tokenizer ([CLS] words [SEP])."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(words, trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL, show_progress=False))
    tok.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[(t, tok.token_to_id(t)) for t in SPECIAL[2:4]])
    tok.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def build(args, tags: list[str], words: list[str], sents: list[list[str]]):
    """(tokenizer, token classifier with len(tags) outputs); the tiny model gets positions
    for the longest of ``sents``."""
    from transformers import (AutoModelForTokenClassification, AutoTokenizer, BertConfig,
                              BertForTokenClassification)
    labels = dict(id2label=dict(enumerate(tags)), label2id={t: i for i, t in enumerate(tags)})
    if args.model:
        try:
            tokenizer = AutoTokenizer.from_pretrained(args.model)
            model = AutoModelForTokenClassification.from_pretrained(
                args.model, num_labels=len(tags), ignore_mismatched_sizes=True, **labels)
        except (OSError, ValueError) as e:       # not found, not a token classifier, ...
            raise InputError(f"--model {args.model}: {str(e).splitlines()[0]}") from None
        if not tokenizer.is_fast:
            raise InputError(f"--model {args.model}: its tokenizer is not a fast one "
                             "(no word_ids to pool word pieces with)")
        return tokenizer, model
    tokenizer = tiny_tokenizer(words, args.vocab_size)
    max_pieces = max(len(ids) for ids in tokenizer(sents, is_split_into_words=True)["input_ids"])
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=args.hidden,
                        num_hidden_layers=args.layers, num_attention_heads=2,
                        intermediate_size=2 * args.hidden, num_labels=len(tags),
                        max_position_embeddings=max(512, max_pieces), **labels)
    return tokenizer, BertForTokenClassification(config)


class Tagger(torch.nn.Module):
    """Word pieces → token classifier → first-piece pooling → CRFLayer."""

    def __init__(self, tokenizer, encoder, tags: list[str], scheme: str):
        super().__init__()
        self.tokenizer, self.encoder = tokenizer, encoder
        self.crf = CRFLayer(tags, scheme)
        limit = getattr(encoder.config, "max_position_embeddings", None) or 10 ** 9
        self.max_pieces = min(limit, tokenizer.model_max_length or limit)

    def pieces(self, words: list[str]) -> int:
        return len(self.tokenizer(words, is_split_into_words=True)["input_ids"])

    def emissions(self, sents: list[list[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Word scores (B, n, L) and the word mask (B, n) of a batch of sentences."""
        batch = self.tokenizer(sents, is_split_into_words=True, padding=True,
                               return_tensors="pt")
        logits = self.encoder(input_ids=batch["input_ids"],
                              attention_mask=batch["attention_mask"]).logits
        scores, mask = first_subword_pool(logits, [batch.word_ids(b) for b in range(len(sents))])
        got = mask.sum(1).tolist()
        for b, s in enumerate(sents):       # a word the tokenizer drops would shift the tags
            if got[b] != len(s):
                raise InputError(f"the tokenizer gives {got[b]} of the {len(s)} words of "
                                 f"sentence {' '.join(s[:8])!r}... a first piece")
        return scores, mask


def check_lengths(model: Tagger, data: list, name: str) -> None:
    """Refuse a sentence longer (in pieces) than the model's positions, naming it."""
    for k, (words, _) in enumerate(data):
        p = model.pieces(words)
        if p > model.max_pieces:
            raise InputError(f"{name}: sentence {k + 1} has {p} word pieces but the model "
                             f"takes at most {model.max_pieces}")


def batches(data: list, size: int, rng: random.Random | None):
    """Batches of sentences of similar length, shuffled when ``rng`` is given."""
    order = sorted(range(len(data)), key=lambda i: len(data[i][0]))
    groups = [order[i:i + size] for i in range(0, len(order), size)]
    if rng is not None:
        rng.shuffle(groups)
    return [[data[i] for i in g] for g in groups]


def mean_loss(model: Tagger, data: list, objective: str, size: int) -> float:
    """The loss ``objective`` over ``data`` in eval mode (no dropout): sentence-weighted
    mean of the batches' losses."""
    model.eval()
    total = 0.0
    with torch.no_grad():
        for batch in batches(data, size, None):
            em, mask = model.emissions([w for w, _ in batch])
            total += len(batch) * float(model.crf.loss(em, mask, [t for _, t in batch],
                                                       objective=objective))
    return total / len(data)


def train(model: Tagger, data: list, objective: str, epochs: int, args,
          rng: random.Random) -> list[float]:
    """``epochs`` epochs of ``objective``; the eval-mode training loss before and after each."""
    groups = [{"params": model.encoder.parameters(), "lr": args.lr},
              {"params": model.crf.parameters(), "lr": args.crf_lr}]
    opt = torch.optim.AdamW(groups)
    losses = [mean_loss(model, data, objective, args.batch_size)]
    for ep in range(1, epochs + 1):
        model.train()
        t = time.perf_counter()
        for batch in batches(data, args.batch_size, rng):
            em, mask = model.emissions([w for w, _ in batch])
            loss = model.crf.loss(em, mask, [t for _, t in batch], objective=objective,
                                  beta=args.beta)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
        losses.append(mean_loss(model, data, objective, args.batch_size))
        print(f"{objective} epoch {ep}: training loss {losses[-1]:.4f} "
              f"({time.perf_counter() - t:.1f} s)", flush=True)
    return losses


def decode(model: Tagger, data: list, method: str, args) -> tuple[list, list]:
    """Per sentence the tags (``--scheme``) and the chunks (type, start, end, p) of
    ``method`` (map or meu), in the order of ``data``."""
    model.eval()
    chunks: dict[int, list] = {}
    order = sorted(range(len(data)), key=lambda i: len(data[i][0]))
    with torch.no_grad():
        for j in range(0, len(order), args.batch_size):
            ids = order[j:j + args.batch_size]
            em, mask = model.emissions([data[i][0] for i in ids])
            chunks.update(zip(ids, model.crf.decode_chunks(em, mask, method=method,
                                                           beta=args.beta)))
    found = [chunks[i] for i in range(len(data))]
    tags = [enc.chunks_to_tags([c[:3] for c in cs], len(w), args.scheme)
            for cs, (w, _) in zip(found, data)]
    return tags, found


def write_scores(model: Tagger, data: list, path: str, args) -> None:
    """The dev sentences' word scores and the CRF's transitions as a score file."""
    model.eval()
    ems = []
    with torch.no_grad():
        for words, _ in data:
            em, _ = model.emissions([words])
            ems.append(em[0].double().numpy())
        crf = model.crf
        save_scores(path, crf.tags, ems, crf.transitions.double().numpy(),
                    crf.start.double().numpy(), crf.end.double().numpy(), scheme=args.scheme)


def show(words: list[str], chunks: list) -> str:
    """One sentence with its chunks bracketed: ``[NP the man p=0.97]``."""
    out, at = [], 0
    for t, s, e, p in chunks:
        out += words[at:s] + [f"[{t} {' '.join(words[s:e])} p={p:.3f}]"]
        at = e
    return " ".join(out + words[at:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=CORPORA, default="ned")
    ap.add_argument("--train", help="CoNLL training file (word first, tag last) instead of "
                                    "the corpus's")
    ap.add_argument("--dev", help="CoNLL dev file instead of the corpus's")
    ap.add_argument("--limit", type=int, default=500, help="first N training sentences")
    ap.add_argument("--dev-limit", type=int, default=200, help="first N dev sentences")
    ap.add_argument("--data-scheme", default="IOB2", help="scheme of the files' tags")
    ap.add_argument("--scheme", default="IOB2", help="scheme the CRF tags in")
    ap.add_argument("--model", help="checkpoint name or path (default: a tiny random BERT)")
    ap.add_argument("--layers", type=int, default=2, help="tiny BERT: layers")
    ap.add_argument("--hidden", type=int, default=32, help="tiny BERT: hidden size")
    ap.add_argument("--vocab-size", type=int, default=2000, help="tiny BERT: WordPiece vocab")
    ap.add_argument("--epochs", type=int, default=3, help="NLL epochs")
    ap.add_argument("--fine-tune", type=int, default=0, help="expected-F epochs after NLL")
    ap.add_argument("--fine-tune-objective", choices=("expected-f", "expected-corpus-f"),
                    default="expected-f")
    ap.add_argument("--beta", type=float, default=1.0, help="β of F_β (loss and MEU)")
    ap.add_argument("--lr", type=float, default=1e-3, help="encoder learning rate "
                                                          "(pretrained models: ~3e-5)")
    ap.add_argument("--crf-lr", type=float, default=1e-2, help="CRF layer learning rate")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--show", type=int, default=3, help="print the chunks of N dev sentences")
    ap.add_argument("--scores", help="write the dev sentences' scores to this score file")
    ap.add_argument("--json", help="write losses, F and decoded chunks to this file")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    try:
        run(args)
    except FstchunkError as e:
        print(f"transformers_tagger: {e}", file=sys.stderr)
        sys.exit(2)


def check_options(args) -> list[str]:
    """Every option checked before any work; the training and dev paths."""
    for name in ("limit", "dev_limit", "epochs", "fine_tune", "show", "batch_size", "layers",
                 "hidden", "vocab_size", "threads"):
        least = 0 if name in ("epochs", "fine_tune", "show") else 1
        if getattr(args, name) < least:
            raise InputError(f"--{name.replace('_', '-')} must be >= {least}")
    for name in ("lr", "crf_lr"):
        if not getattr(args, name) > 0:
            raise InputError(f"--{name.replace('_', '-')} must be > 0")
    if not check_beta(args.beta) > 0:
        raise InputError("--beta must be > 0 (at 0 the tagging without chunks would win)")
    args.scheme = enc.canonical_scheme(args.scheme)
    args.data_scheme = enc.canonical_scheme(args.data_scheme)
    paths = [p or data_path(*d) for p, d in zip((args.train, args.dev), CORPORA[args.corpus])]
    for opt, p in zip(("--train", "--dev"), paths):
        if not os.path.isfile(p):
            raise InputError(f"{opt}: no such file {p}" + ("" if getattr(args, opt[2:]) else
                                                             " (set FSTCHUNK_DATA, or fetch the public "
                                                             "corpora: fstchunk data get NAME)"))
    return paths


def run(args) -> None:
    paths = check_options(args)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    train_set, dev = (read(p, n, args.data_scheme, args.scheme)
                      for p, n in zip(paths, (args.limit, args.dev_limit)))
    if not train_set or not dev:
        raise InputError(f"no sentences in {paths[0] if not train_set else paths[1]}")
    tags = list(TagSet.from_tags({t for _, ts in train_set for t in ts}, args.scheme).tags)
    words = [w for ws, _ in train_set for w in ws]
    tokenizer, encoder = build(args, tags, words, [ws for ws, _ in train_set + dev])
    model = Tagger(tokenizer, encoder, tags, args.scheme)
    check_lengths(model, train_set, paths[0])
    check_lengths(model, dev, paths[1])
    unseen = {t for _, ts in dev for t in ts} - set(tags)
    if unseen:       # a gold type the training slice lacks: the CRF cannot tag it
        print(f"note: dev tags not in the training slice: {', '.join(sorted(unseen))}")
    print(f"{len(train_set)} training and {len(dev)} dev sentences, {len(tags)} tags "
          f"({args.scheme}), model {args.model or 'tiny random BERT'}", flush=True)
    losses = {"nll": train(model, train_set, "nll", args.epochs, args, rng)}
    if args.fine_tune:
        losses[args.fine_tune_objective] = train(model, train_set, args.fine_tune_objective,
                                                 args.fine_tune, args, rng)
    gold = [t for _, t in dev]
    doc = {"tags": tags, "scheme": args.scheme, "losses": losses, "f": {}, "decoded": {}}
    for method in ("map", "meu"):
        pred, chunks = decode(model, dev, method, args)
        f = evaluate(gold, pred, scheme=args.scheme).overall.f
        doc["f"][method], doc["decoded"][method] = f, {"tags": pred, "chunks": chunks}
        print(f"dev F ({method.upper()}): {f:.2f}")
        for (words_k, _), cs in list(zip(dev, chunks))[:args.show]:
            print(f"  {show(words_k, cs)}")
    if args.scores:
        write_scores(model, dev, args.scores, args)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(doc, fh)


if __name__ == "__main__":
    sys.exit(main())
