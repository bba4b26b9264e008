"""A BiLSTM-CRF chunker / NER tagger trained from scratch on CPU with fstchunk.torch.

Word embeddings and a character CNN (no pretrained weights) feed a bidirectional
LSTM whose outputs are the emissions of :class:`fstchunk.torch.CRFLayer` (IOB2 tags,
transitions, start and end as parameters; only valid sequences have mass).

1. ``--epochs`` epochs of NLL training (Adam), keeping the epoch of best dev F;
2. ``--fine-tune`` epochs with the expected-corpus-F loss 1 − (1+β²)ΣE[tp]/(ΣE[m] +
   β²Σm(gold)) of each batch (β = 1 here) (minimum risk, Jansche 2005; ``--fine-tune-objective
   expected-f``: the mean of the sentences' 1 − E[F]), from the NLL model for each
   rate of ``--fine-tune-lr``, keeping the best (rate, epoch) on dev (the NLL model
   stays if none beats it);
3. MAP (constrained Viterbi) and exact MEU decoding of dev and test for both models.

Every choice (epoch, model) is made on the dev set; the test set is decoded once per
row at the end.  Prints one table (test F of each row, dev F, seconds per epoch).

    FSTCHUNK_DATA=../shared/data python examples/neural_tagger.py --corpus ned
    FSTCHUNK_DATA=../shared/data python examples/neural_tagger.py --corpus conll2000 \\
        --epochs 8 --fine-tune 2

Needs ``pip install ".[torch]"`` (CPU build: ``pip install torch==2.13.0``).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from fstchunk.io.conll import data_path, read_conll
from fstchunk.schemes.encodings import conlleval_chunks
from fstchunk import evaluate
from fstchunk import TagSet
from fstchunk.torch import CRFLayer

CORPORA = {"ned": (("conll2002", "ned.train"), ("conll2002", "ned.testa"),
                   ("conll2002", "ned.testb")),
           "conll2000": (("conll2000", "train.txt"), ("conll2000", "dev.txt"),
                         ("conll2000", "test.txt"))}


#: the fine-tuning losses of CRFLayer.loss and how the tables name them
FINE_TUNE = {"expected-corpus-f": "expected corpus F", "expected-f": "expected sentence F"}


class Vocab:
    """Strings to indices; 0 is padding, 1 unknown."""

    def __init__(self, items, min_count: int = 1):
        counts = collections.Counter(items)
        self.index = {x: i + 2 for i, x in enumerate(sorted(x for x, c in counts.items()
                                                            if c >= min_count))}

    def __len__(self) -> int:
        return len(self.index) + 2

    def __call__(self, x: str) -> int:
        return self.index.get(x, 1)


class Tagger(torch.nn.Module):
    """Word + character-CNN embeddings -> BiLSTM -> emissions -> CRFLayer."""

    def __init__(self, words: Vocab, chars: Vocab, tags: list[str], word_dim: int = 100,
                 char_dim: int = 25, char_filters: int = 50, hidden: int = 100,
                 dropout: float = 0.5):
        super().__init__()
        self.words, self.chars = words, chars
        self.word_emb = torch.nn.Embedding(len(words), word_dim, padding_idx=0)
        self.char_emb = torch.nn.Embedding(len(chars), char_dim, padding_idx=0)
        self.char_cnn = torch.nn.Conv1d(char_dim, char_filters, 3, padding=1)
        self.lstm = torch.nn.LSTM(word_dim + char_filters, hidden, batch_first=True,
                                  bidirectional=True)
        self.drop = torch.nn.Dropout(dropout)
        self.out = torch.nn.Linear(2 * hidden, len(tags))
        self.crf = CRFLayer(tags, "IOB2")

    def batch(self, sents: list[list[str]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        B, n = len(sents), max(map(len, sents))
        w = max(len(t) for s in sents for t in s)
        W = torch.zeros((B, n), dtype=torch.long)
        C = torch.zeros((B, n, w), dtype=torch.long)
        for b, s in enumerate(sents):
            for i, tok in enumerate(s):
                W[b, i] = self.words(tok.lower())
                C[b, i, :len(tok)] = torch.tensor([self.chars(ch) for ch in tok])
        return W, C, W > 0

    def emissions(self, sents: list[list[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        W, C, mask = self.batch(sents)
        B, n, w = C.shape
        ch = self.char_emb(C.view(B * n, w)).transpose(1, 2)           # (B·n, dim, w)
        ch = torch.relu(self.char_cnn(ch)).max(dim=2).values.view(B, n, -1)
        x = self.drop(torch.cat([self.word_emb(W), ch], -1))
        lengths = mask.sum(1)
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                         enforce_sorted=False)
        h, _ = self.lstm(packed)
        h, _ = torch.nn.utils.rnn.pad_packed_sequence(h, batch_first=True, total_length=n)
        return self.out(self.drop(h)), mask


def batches(data: list, size: int, shuffle: bool, rng: random.Random):
    """Batches of sentences of similar length (fewer padded steps in the CRF loops)."""
    order = sorted(range(len(data)), key=lambda i: len(data[i][0]))
    chunks = [order[i:i + size] for i in range(0, len(order), size)]
    if shuffle:
        rng.shuffle(chunks)
    for c in chunks:
        yield [data[i] for i in c]


def predict(model: Tagger, data: list, method: str, size: int = 64) -> list[list[str]]:
    """Tags of every sentence of ``data`` (in order) under MAP or MEU."""
    model.eval()
    preds: dict[int, list[str]] = {}
    order = sorted(range(len(data)), key=lambda i: len(data[i][0]))
    with torch.no_grad():
        for j in range(0, len(order), size):
            ids = order[j:j + size]
            em, mask = model.emissions([data[i][0] for i in ids])
            preds.update(zip(ids, model.crf.decode(em, mask, method=method)))
    return [preds[i] for i in range(len(data))]


def f_score(model: Tagger, data: list, method: str) -> float:
    return evaluate([t for _, t in data], predict(model, data, method)).overall.f


def counts(gold: list[list[str]], pred: list[list[str]]) -> np.ndarray:
    """Per sentence (tp, predicted, gold) chunk counts, conlleval's reading."""
    out = np.zeros((len(gold), 3))
    for k, (g, p) in enumerate(zip(gold, pred)):
        a, b = set(conlleval_chunks(g)), set(conlleval_chunks(p))
        out[k] = len(a & b), len(b), len(a)
    return out


def boot_f(c: np.ndarray, resamples: np.ndarray) -> np.ndarray:
    """F (%) of each bootstrap resample of the sentences (rows of ``resamples``)."""
    s = c[resamples].sum(axis=1)
    return 100 * 2 * s[:, 0] / np.maximum(s[:, 1] + s[:, 2], 1)


def run_epoch(model: Tagger, opt, data: list, objective: str, size: int,
              rng: random.Random, desc: str, quiet: bool) -> float:
    model.train()
    t = time.perf_counter()
    bar = tqdm(list(batches(data, size, True, rng)), desc=desc, disable=quiet, leave=False)
    for batch in bar:
        em, mask = model.emissions([s for s, _ in batch])
        loss = model.crf.loss(em, mask, [t for _, t in batch], objective=objective)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        bar.set_postfix(loss=f"{float(loss.detach()):.3f}")
    return time.perf_counter() - t


def train_phase(model: Tagger, data: list, dev: list, objective: str, epochs: int,
                lr: float, size: int, rng: random.Random, quiet: bool,
                best: float = -1.0) -> tuple[float, list[float], list[float]]:
    """``epochs`` epochs of ``objective``; keeps the parameters of best dev F (MAP)."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    times, devs = [], []
    for ep in range(1, epochs + 1):
        times.append(run_epoch(model, opt, data, objective, size, rng,
                               f"{objective} epoch {ep}", quiet))
        devs.append(f_score(model, dev, "map"))
        print(f"{objective} epoch {ep}: {times[-1]:.0f} s, dev F (MAP) {devs[-1]:.2f}",
              flush=True)
        if devs[-1] > best:
            best = devs[-1]
            state = {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    return best, times, devs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=CORPORA, default="ned")
    ap.add_argument("--epochs", type=int, default=8, help="NLL epochs")
    ap.add_argument("--fine-tune", type=int, default=2, help="expected-corpus-F epochs")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--fine-tune-lr", default="5e-4",
                    help="learning rate(s) of the fine-tuning, comma-separated: each starts "
                         "from the NLL model and the best (rate, epoch) on dev is kept")
    ap.add_argument("--fine-tune-objective", choices=tuple(FINE_TUNE),
                    default="expected-corpus-f")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=100)
    ap.add_argument("--limit", type=int, default=None, help="first N sentences of each set")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument("--json", default=None, help="write the figures to this file")
    ap.add_argument("--results", action="store_true",
                    help="write the table to benchmarks/RESULTS.md (section 'Neural tagger')")
    args = ap.parse_args()
    try:
        lrs = [float(x) for x in args.fine_tune_lr.split(",")]
    except ValueError:
        ap.error(f"--fine-tune-lr: comma-separated numbers, got {args.fine_tune_lr!r}")
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    sets = [[(s.column(0), s.column(-1)) for s in read_conll(data_path(*p))][:args.limit]
            for p in CORPORA[args.corpus]]
    train, dev, test = sets
    # every IOB2 tag of the training types (a slice may have B-PRT but no I-PRT)
    tags = list(TagSet.from_tags({t for _, ts in train for t in ts}, "IOB2").tags)
    words = Vocab(w.lower() for s, _ in train for w in s)
    chars = Vocab(c for s, _ in train for w in s for c in w)
    model = Tagger(words, chars, tags, hidden=args.hidden)
    print(f"{args.corpus}: {len(train)} training sentences, {len(tags)} tags, "
          f"{len(words)} words, {len(chars)} characters", flush=True)
    best, t_nll, d_nll = train_phase(model, train, dev, "nll", args.epochs, args.lr,
                                     args.batch_size, rng, args.quiet)
    gold = [t for _, t in test]
    resamples = np.random.default_rng(0).integers(0, len(test), size=(1000, len(test)))

    def row(name: str, m: str) -> tuple:
        pred = predict(model, test, m)
        c = counts(gold, pred)
        f = evaluate(gold, pred).overall.f
        assert abs(f - 100 * 2 * c[:, 0].sum() / max(c[:, 1].sum() + c[:, 2].sum(), 1)) < 1e-9
        return name, m, f_score(model, dev, m), f, boot_f(c, resamples)
    rows = [row("NLL", m) for m in ("map", "meu")]
    nll_state = {k: v.clone() for k, v in model.state_dict().items()}
    best_ft, best_lr, state, t_ft, d_ft = best, None, nll_state, [], {}
    for lr in lrs:                  # every rate from the NLL model, the same batch order
        model.load_state_dict(nll_state)
        got, times, devs = train_phase(model, train, dev, args.fine_tune_objective, args.fine_tune,
                                       lr, args.batch_size, random.Random(args.seed + 1),
                                       args.quiet)
        t_ft += times
        d_ft[lr] = devs
        if got > best_ft:
            best_ft, best_lr = got, lr
            state = {k: v.clone() for k, v in model.state_dict().items()}
    kept = (f"fine-tuned (lr {best_lr}, chosen on dev)" if best_lr is not None
            else "NLL (no fine-tuning epoch beat it on dev)")
    model.load_state_dict(state)
    label = FINE_TUNE[args.fine_tune_objective]
    rows += [row(f"NLL + {label}", m) for m in ("map", "meu")]
    per = lambda ts: f"{sum(ts) / len(ts):.0f}" if ts else "-"      # noqa: E731
    ft_devs = "; ".join(f"lr {lr}: " + ", ".join(f"{x:.2f}" for x in d) for lr, d in d_ft.items())
    print(f"\n{args.corpus}, seed {args.seed}; s/epoch: NLL {per(t_nll)}, {label} "
          f"{per(t_ft)}; second model: {kept}\n")
    table = [f"{args.corpus}: {len(train)} training sentences, seed {args.seed}, BiLSTM "
             f"hidden {args.hidden}, batch {args.batch_size}; {args.epochs} NLL epochs (Adam, lr "
             f"{args.lr}) then {args.fine_tune} {label} epochs from the NLL model "
             f"for each lr in {{{args.fine_tune_lr}}}, keeping the best dev epoch (MAP) of each "
             f"phase; the second model is {kept}. Seconds per epoch: NLL {per(t_nll)}, "
             f"{label} {per(t_ft)} ({args.threads} threads). Dev F per epoch: NLL "
             f"{', '.join(f'{x:.2f}' for x in d_nll)}; {label} "
             f"{ft_devs or '-'}. Test F ± the bootstrap standard "
             f"error over test sentences (1000 resamples), and the paired difference from the "
             f"first row; one run.", "",
             "| training | decoding | dev F | test F | − NLL + MAP |", "|---|---|---|---|---|"]
    table += [f"| {name} | {m.upper()} | {fd:.2f} | {ft:.2f} ± {b.std():.2f} | "
              f"{ft - rows[0][3]:+.2f} ± {(b - rows[0][4]).std():.2f} |"
              for name, m, fd, ft, b in rows]
    print("\n".join(table[2:]))
    if args.results:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
        from common import write_section
        tail = "" if args.fine_tune_objective == "expected-corpus-f" else f", fine-tuned by {label}"
        write_section(f"Neural tagger (issue 21): BiLSTM-CRF on {args.corpus}{tail}",
                      "\n".join(table))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"corpus": args.corpus, "seed": args.seed, "args": vars(args),
                       "seconds_per_epoch": {"nll": t_nll, args.fine_tune_objective: t_ft},
                       "dev_f_per_epoch": {"nll": d_nll, args.fine_tune_objective: {
                           str(k): v for k, v in
                                                                          d_ft.items()}},
                       "kept": kept, "rows": [r[:4] + (float(r[4].std()),) for r in rows]},
                      fh, indent=2)


if __name__ == "__main__":
    sys.exit(main())
