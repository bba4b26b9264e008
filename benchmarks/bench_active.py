"""Active learning by expected F (issue 36, part 4): a simulation.

Start from a random ``--start`` share of the training sentences (the seed; the same
start, and the same round-0 model, for every strategy); each round trains a CRF on the
sentences annotated so far, scores it on the test file (MAP, conlleval F), and adds
``--step`` of the training set chosen by the strategy (:mod:`fstchunk.decoding.selection`, what
``fstchunk select`` runs): ``expected-f`` (lowest E[F] of the model's own MEU decision),
``entropy`` (highest mean token entropy) or ``random``, until ``--until``.  Round 0
trains ``--first-iter`` L-BFGS iterations from θ = 0; every later round trains
``--max-iter`` iterations on from the last round's θ with a feature map grown to the new
sentences (:func:`active_sim.warm_start`).  The uncertain strategies score a random
sub-pool of ``--candidates`` unlabelled sentences per round.

``--partial P`` runs the partial-annotation arm instead (expected-f picks, one model in
the loop): the picked sentences are annotated only where the model is unsure
(:func:`active_sim.partial_cells`, threshold P), the model trains with ``partial=True``;
a second model trains on the full annotation of the same picks, for the comparison of
test F against tokens annotated.  ``--full-iter N`` trains once on the whole training
set (the full-data F).  Every finished round is one line of the JSONL ``--store``
(models of the last round in ``--state``): a killed run started again resumes.
``--report`` reads the store, writes the RESULTS.md sections and the plots.  The curves
of one run advance round-robin (all reach round k before any reaches k + 1), so that a
run stopped at a deadline leaves every strategy and seed at the same share.

    python benchmarks/bench_active.py --corpus ned --seeds 0,1,2 --store al.jsonl
    python benchmarks/bench_active.py --report --store al.jsonl --full-f ned=78.79
"""

from __future__ import annotations

import argparse
import json
import os
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np

from active_sim import partial_cells, round_rng, warm_start, with_cells
from common import Timer, data_path
from fstchunk import evaluate
from fstchunk.engine.chain import viterbi
from fstchunk.io.conll import read_conll
from fstchunk.models.base import gold_tags
from fstchunk.models.crf import CRF
from fstchunk.decoding.selection import STRATEGIES, pick, scores

CORPORA = {"ned": ("conll2002", "ned.train", "ned.testb", "ner"),
           "conll2000": ("conll2000", "train.txt", "test.txt", "tmpt3")}


class Store:
    """The JSONL of finished rounds; a record belongs to this run when its ``config``
    is this run's."""

    def __init__(self, path: str, config: dict):
        self.path, self.config = path, config
        self.records = []
        if os.path.exists(path):
            with open(path) as f:
                self.records = [r for r in map(json.loads, f) if r.get("config") == config]

    def rounds(self, arm: str, strategy: str, seed: int) -> list[dict]:
        return sorted((r for r in self.records if (r["arm"], r["strategy"], r["seed"])
                       == (arm, strategy, seed)), key=lambda r: r["round"])

    def add(self, record: dict) -> None:
        record = dict(record, config=self.config)
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")
        self.records.append(record)


class Simulation:
    def __init__(self, args):
        folder, train_name, test_name, self.features = CORPORA[args.corpus]
        self.train = read_conll(data_path(folder, train_name))
        self.test = read_conll(data_path(folder, test_name))
        if args.limit:
            self.train = self.train[:args.limit]
        if args.test_limit:
            self.test = self.test[:args.test_limit]
        self.args, self.n = args, len(self.train)
        self.config = {k: getattr(args, k) for k in (
            "corpus", "start", "step", "until", "first_iter", "max_iter", "candidates",
            "limit", "test_limit")}
        self.config["features"] = self.features
        self.store = Store(args.store, self.config)
        self.state = Path(args.state)
        self.state.mkdir(parents=True, exist_ok=True)
        self.rounds = int(round((args.until - args.start) / args.step))
        self.budget = int(round(args.step * self.n))
        self.gold = [s.column(-1) for s in self.test]

    # ------------------------------------------------------------------ pieces
    def test_f(self, crf: CRF) -> float:
        """conlleval F of MAP decoding on the test set: Viterbi on each lattice, the
        tags ``decode_sentences(crf, test, "map")`` gives (checked), without the log
        probability of the path that decode_map adds (half the time)."""
        pred = []
        for lo in range(0, len(self.test), 1000):
            for lat in crf.lattices(self.test[lo:lo + 1000], require_probabilities=False):
                pred.append([crf.tags_[i] for i in viterbi(lat.layers)[0]])
        return evaluate(self.gold, pred, scheme="IOB2").overall.f

    def start_set(self, seed: int) -> list[int]:
        rng = np.random.default_rng(seed)
        return sorted(rng.choice(self.n, int(round(self.args.start * self.n)),
                                 replace=False).tolist())

    def model_path(self, arm: str, strategy: str, seed: int, rnd: int) -> Path:
        c = self.config
        return self.state / (f"{c['corpus']}_{arm}_{strategy}_s{seed}_r{rnd}_"
                             f"{zlib.crc32(json.dumps(c, sort_keys=True).encode()):08x}.npz")

    def save(self, crf: CRF, path: Path) -> None:
        tmp = path.with_suffix(".tmp.npz")
        crf.save(tmp)
        os.replace(tmp, path)

    def start_model(self, seed: int) -> tuple[CRF, float, float]:
        """Round 0 of every curve of ``seed``: (model, test F, seconds), trained once."""
        path = self.model_path("start", "all", seed, 0)
        done = self.store.rounds("start", "all", seed)
        if done and path.exists():
            return CRF.load(path), done[0]["f"], done[0]["train_s"]
        with Timer() as t:
            crf, _ = warm_start(None, [self.train[i] for i in self.start_set(seed)],
                                self.features, self.args.first_iter)
        f = self.test_f(crf)
        self.save(crf, path)
        self.store.add({"arm": "start", "strategy": "all", "seed": seed, "round": 0,
                        "f": f, "train_s": t.seconds})
        return crf, f, t.seconds

    def choose(self, crf: CRF, labelled: set[int], strategy: str, seed: int, rnd: int
               ) -> list[int]:
        rng = round_rng(seed, strategy, rnd)
        pool = [i for i in range(self.n) if i not in labelled]
        if strategy == "random":
            return [pool[k] for k in pick(len(pool), self.budget, int(rng.integers(2 ** 31)))]
        if self.args.candidates and len(pool) > self.args.candidates:
            pool = sorted(rng.choice(pool, self.args.candidates, replace=False).tolist())
        values = []
        for lo in range(0, len(pool), 1000):
            values.extend(scores(crf.lattices([self.train[i] for i in pool[lo:lo + 1000]]),
                                 strategy))
        return [pool[k] for k in pick(np.array(values), self.budget)]

    def tokens(self, ids) -> int:
        return sum(len(self.train[i]) for i in ids)

    # ------------------------------------------------------------------ curves
    def curve(self, strategy: str, seed: int) -> Iterator[None]:
        """Run (or resume) the curve of ``strategy`` and ``seed``, one round per step."""
        arm = "full"
        done = self.store.rounds(arm, strategy, seed)
        labelled = self.start_set(seed)
        for rec in done:
            labelled += rec["picks"]
        rnd = len(done)
        if rnd > self.rounds:
            return
        crf = CRF.load(self.model_path(arm, strategy, seed, rnd - 1)) if rnd else None
        while rnd <= self.rounds:
            carried, test_s = 0, 0.0
            if rnd == 0:
                crf, f, train_s = self.start_model(seed)
            else:
                with Timer() as tt:
                    crf, carried = warm_start(crf, [self.train[i] for i in sorted(labelled)],
                                              self.features, self.args.max_iter)
                with Timer() as te:
                    f = self.test_f(crf)
                train_s, test_s = tt.seconds, te.seconds
            with Timer() as tp:
                picks = self.choose(crf, set(labelled), strategy, seed, rnd) \
                    if rnd < self.rounds else []
            path = self.model_path(arm, strategy, seed, rnd)
            self.save(crf, path)
            self.store.add({"arm": arm, "strategy": strategy, "seed": seed, "round": rnd,
                            "share": len(labelled) / self.n, "sentences": len(labelled),
                            "tokens": self.tokens(labelled), "f": f, "train_s": train_s,
                            "test_s": test_s, "pick_s": tp.seconds,
                            "carried": carried, "picks": picks})
            print(self.args.corpus, strategy, seed, rnd, f"{len(labelled) / self.n:.3f}",
                  f"F {f:.2f}", f"train {train_s:.0f} s, test {test_s:.0f} s, "
                  f"pick {tp.seconds:.0f} s", flush=True)
            if rnd:
                self.model_path(arm, strategy, seed, rnd - 1).unlink(missing_ok=True)
            labelled += picks
            rnd += 1
            yield

    def partial_curve(self, seed: int, p_min: float, kept: str) -> Iterator[None]:
        """Run (or resume) the partial-annotation arm (expected-f picks by the partial
        model; a full-annotation model of the same picks beside it)."""
        arm, strategy = f"partial-{kept}-{p_min:g}", "expected-f"
        done = self.store.rounds(arm, strategy, seed)
        labelled = self.start_set(seed)
        cells: dict[int, list[str]] = {}
        for rec in done:
            labelled += rec["picks"]
            cells.update({int(k): v for k, v in rec["cells"].items()})
        tok_partial = self.tokens(self.start_set(seed)) + sum(
            r["labelled_tokens"] for r in done)
        rnd = len(done)
        if rnd > self.rounds:
            return
        if rnd:
            pm = CRF.load(self.model_path(arm, "partial", seed, rnd - 1))
            fm = CRF.load(self.model_path(arm, "full", seed, rnd - 1))
        while rnd <= self.rounds:
            with Timer() as tt:
                if rnd == 0:
                    pm, f, _ = self.start_model(seed)
                    fm, f_full = pm, f
                else:
                    items = [with_cells(self.train[i], cells[i]) if i in cells
                             else self.train[i] for i in sorted(labelled)]
                    pm, _ = warm_start(pm, items, self.features, self.args.max_iter,
                                       partial=True)
                    fm, _ = warm_start(fm, [self.train[i] for i in sorted(labelled)],
                                       self.features, self.args.max_iter)
                    f, f_full = self.test_f(pm), self.test_f(fm)
            picks, new_cells, labelled_tokens, wrong = [], {}, 0, 0
            if rnd < self.rounds:
                picks = self.choose(pm, set(labelled), strategy, seed, rnd)
                lats = pm.lattices([self.train[i] for i in picks])
                for i, lat in zip(picks, lats):
                    gold = gold_tags(self.train[i], "IOB2", "IOB2", -1)
                    c, k, w = partial_cells(lat, gold, p_min, kept)
                    new_cells[i], labelled_tokens, wrong = c, labelled_tokens + k, wrong + w
            self.save(pm, self.model_path(arm, "partial", seed, rnd))
            self.save(fm, self.model_path(arm, "full", seed, rnd))
            self.store.add({"arm": arm, "strategy": strategy, "seed": seed, "round": rnd,
                            "share": len(labelled) / self.n, "sentences": len(labelled),
                            "tokens": tok_partial, "tokens_full": self.tokens(labelled),
                            "f": f, "f_full": f_full, "seconds": tt.seconds,
                            "picks": picks, "cells": {str(k): v for k, v in new_cells.items()},
                            "labelled_tokens": labelled_tokens,
                            "picked_tokens": self.tokens(picks), "kept_wrong": wrong})
            print(self.args.corpus, arm, seed, rnd, f"{len(labelled) / self.n:.3f}",
                  f"F {f:.2f} (full {f_full:.2f}), tokens {tok_partial} of "
                  f"{self.tokens(labelled)}, kept wrong {wrong}, {tt.seconds:.0f} s",
                  flush=True)
            if rnd:
                for m in ("partial", "full"):
                    self.model_path(arm, m, seed, rnd - 1).unlink(missing_ok=True)
            labelled += picks
            cells.update(new_cells)
            tok_partial += labelled_tokens
            rnd += 1
            yield

    def full(self, max_iter: int) -> None:
        """The full-data F: one CRF on the whole training set from θ = 0."""
        if self.store.rounds("whole", "all", max_iter):
            return
        with Timer() as t:
            crf, _ = warm_start(None, self.train, self.features, max_iter)
        f = self.test_f(crf)
        self.store.add({"arm": "whole", "strategy": "all", "seed": max_iter, "round": 0,
                        "f": f, "train_s": t.seconds})
        print(self.args.corpus, "whole training set", max_iter, "iterations: F",
              f"{f:.2f}", f"{t.seconds:.0f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=tuple(CORPORA), default="ned")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--start", type=float, default=0.05)
    ap.add_argument("--step", type=float, default=0.05)
    ap.add_argument("--until", type=float, default=0.5)
    ap.add_argument("--first-iter", type=int, default=50,
                    help="L-BFGS iterations of round 0 (from θ = 0)")
    ap.add_argument("--max-iter", type=int, default=20,
                    help="L-BFGS iterations of each later round (from the last θ)")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--candidates", type=int, default=4000,
                    help="score a random sub-pool of this many sentences each round "
                         "(0: the whole pool)")
    ap.add_argument("--limit", type=int, default=0, help="the first N training sentences")
    ap.add_argument("--test-limit", type=int, default=0, help="the first N test sentences")
    ap.add_argument("--partial", type=float, default=None, metavar="P",
                    help="run the partial-annotation arm with threshold P")
    ap.add_argument("--kept", choices=("fix", "open"), default="fix",
                    help="the partial arm's confident tokens: the model's tag, or ?")
    ap.add_argument("--full-iter", type=int, default=0,
                    help="first train on the whole training set for this many iterations")
    ap.add_argument("--store", default="/tmp/fstchunk_active/rounds.jsonl")
    ap.add_argument("--state", default="/tmp/fstchunk_active/models")
    ap.add_argument("--report", action="store_true",
                    help="write the RESULTS.md sections and plots from --store")
    ap.add_argument("--full-f", default="",
                    help="corpus=F,... the full-data F for the 95 %% column (else the "
                         "store's --full-iter run)")
    ap.add_argument("--out-of", default="",
                    help="for --report: the runs' commands, quoted in the section")
    args = ap.parse_args()
    if args.report:
        from active_report import report
        report(args)
        return
    sim = Simulation(args)
    if args.full_iter:
        sim.full(args.full_iter)
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.partial is not None:
        curves = [sim.partial_curve(seed, args.partial, args.kept) for seed in seeds]
    else:
        curves = [sim.curve(strategy, seed) for seed in seeds
                  for strategy in args.strategies.split(",") if strategy]
    while curves:           # round-robin: every curve reaches round k before any k + 1
        curves = [c for c in curves if next(c, StopIteration) is not StopIteration]


if __name__ == "__main__":
    main()
