"""Active learning by expected F (issue 36, part 4): a simulation.

Start from a random ``--start`` share of the training sentences; each round trains a
CRF on the sentences annotated so far, scores it on the test file (MAP, conlleval F),
and adds ``--step`` of the training set chosen by the strategy
(:mod:`fstchunk.selection`, what ``fstchunk select`` runs): ``expected-f`` (lowest
E[F] of the model's own MEU decision), ``entropy`` (highest mean token entropy) or
``random``, until ``--until``.  The share of the training set each strategy needs to
reach 95 % of ``--full-f`` (the full-data F, e.g. from bench_partial's "full" row) is
read off the curve.

    python benchmarks/bench_active.py --corpus ned --until 0.25 --max-iter 50
"""

from __future__ import annotations

import argparse

import numpy as np

from common import Timer, data_path, write_section
from fstchunk import evaluate
from fstchunk.batch import decode_sentences
from fstchunk.conll import read_conll
from fstchunk.models.crf import CRF
from fstchunk.selection import STRATEGIES, pick, scores

CORPORA = {"ned": ("conll2002", "ned.train", "ned.testb", "ner"),
           "conll2000": ("conll2000", "train.txt", "test.txt", "tmpt3")}


def curve(train, test, strategy: str, start: float, step: float, until: float,
          features: str, max_iter: int, seed: int, candidates: int = 0
          ) -> list[tuple[float, float, float]]:
    """[(share annotated, test F, seconds of the round)] for one strategy and seed."""
    rng = np.random.default_rng(seed)
    n = len(train)
    labelled = set(rng.choice(n, int(round(start * n)), replace=False).tolist())
    out = []
    while True:
        with Timer() as t:
            crf = CRF(features, "IOB2", max_iter=max_iter).fit([train[i] for i in sorted(labelled)])
            pred = decode_sentences(crf, test, "map", 1.0, output_scheme="IOB2")
            f = evaluate([s.column(-1) for s in test], pred, scheme="IOB2").overall.f
            share = len(labelled) / n
            if share + step / 2 > until:
                out.append((share, f, 0.0))
                print(strategy, seed, f"{share:.2f}", f"{f:.2f}", flush=True)
                return out
            pool = [i for i in range(n) if i not in labelled]
            if candidates and len(pool) > candidates:       # a random sub-pool to score
                pool = sorted(rng.choice(pool, candidates, replace=False).tolist())
            budget = int(round(step * n))
            if strategy == "random":
                chosen = pick(len(pool), budget, int(rng.integers(2 ** 31)))
            else:
                values = []
                for lo in range(0, len(pool), 1000):
                    block = [train[i] for i in pool[lo:lo + 1000]]
                    values.extend(scores(crf.lattices(block), strategy))
                chosen = pick(np.array(values), budget)
            labelled.update(pool[k] for k in chosen)
        out.append((share, f, t.seconds))
        print(strategy, seed, f"{share:.2f}", f"{f:.2f}", f"{t.seconds:.0f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=tuple(CORPORA), default="ned")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--start", type=float, default=0.05)
    ap.add_argument("--step", type=float, default=0.05)
    ap.add_argument("--until", type=float, default=0.5)
    ap.add_argument("--max-iter", type=int, default=50)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--candidates", type=int, default=0,
                    help="score a random sub-pool of this many sentences each round "
                         "(0: the whole pool)")
    ap.add_argument("--full-f", type=float, default=None,
                    help="the full-data test F (for the 95 %% column)")
    args = ap.parse_args()
    folder, train_name, test_name, features = CORPORA[args.corpus]
    train = read_conll(data_path(folder, train_name))
    test = read_conll(data_path(folder, test_name))
    seeds = [int(s) for s in args.seeds.split(",")]
    curves = {}
    for strategy in args.strategies.split(","):
        for seed in seeds:
            curves[strategy, seed] = curve(train, test, strategy, args.start, args.step,
                                           args.until, features, args.max_iter, seed,
                                           args.candidates)
    shares = [s for s, _, _ in next(iter(curves.values()))]
    head = "| strategy | seed | " + " | ".join(f"{100 * s:.0f} %" for s in shares) + \
        " | reaches 95 % of full F at |\n|---|---|" + "---|" * len(shares) + "---|\n"
    lines = []
    for (strategy, seed), c in curves.items():
        reach = "—"
        if args.full_f is not None:
            hit = [s for s, f, _ in c if f >= 0.95 * args.full_f]
            reach = f"{100 * hit[0]:.0f} %" if hit else f"not by {100 * c[-1][0]:.0f} %"
        lines.append(f"| {strategy} | {seed} | " + " | ".join(f"{f:.2f}" for _, f, _ in c)
                     + f" | {reach} |")
    secs = {k: sum(t for _, _, t in c) for k, c in curves.items()}
    body = (f"{train_name} → {test_name}, features {features}, IOB2, MAP; start "
            f"{100 * args.start:.0f} % at random (the seed), + {100 * args.step:.0f} % per "
            f"round up to {100 * args.until:.0f} %"
            + (f", chosen among a random sub-pool of {args.candidates} sentences each round"
               if args.candidates else ", chosen from the whole pool") + f"; L-BFGS at most {args.max_iter} "
            f"iterations per round, ML's default λ; full-data F "
            f"{args.full_f if args.full_f is not None else 'not given'}.\n\n"
            "Test F by share of the training sentences annotated:\n\n" + head +
            "\n".join(lines) + "\n\nRound time (training, test, scoring the pool), s: "
            + ", ".join(f"{k[0]} seed {k[1]} {v:.0f}" for k, v in secs.items()) + ".")
    write_section(f"Active learning (issue 36): {args.corpus}", body)


if __name__ == "__main__":
    main()
