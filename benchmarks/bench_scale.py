"""Data-parallel ML training (issue 20): 1 and 2 workers, local processes and Dask,
against CRFsuite on the same features.

Reports, on CoNLL-2000 (tmpt3 features, IOB2 tags, λ = the dev-chosen default):

* one ML objective + gradient evaluation over the whole training set through 1
  partition in this process, 2 local processes (``--workers 2``) and a 2-process
  Dask ``LocalCluster`` (``--scheduler local:2``): median seconds of 5, speed-up;
* bytes sent per iteration per worker, measured as the pickled size of what a Dask
  task receives (θ and the settings) and returns (the partition's statistics);
* decoding the test set with exact MEU through each executor (the same tags checked);
* ML training wall time (``--max-iter`` L-BFGS iterations) with each executor and
  with python-crfsuite on the same feature strings, and each model's test F.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_scale.py [--limit N]

Run it on a quiet machine: with 2 cores, anything beside it steals a worker's core.
"""

from __future__ import annotations

import argparse
import pickle
import sys

import numpy as np

from bench_training import CORPORA, crfsuite_peer, f_of
from common import Timer, data_path, peak_rss_mb, write_section
from fstchunk import decode_sentences
from fstchunk import read_conll
from fstchunk import CRF
from fstchunk.learn.loss import Loss
from fstchunk.learn.objectives import ML
from fstchunk.runtime.parallel import single_threaded_blas
from fstchunk.runtime.scale import DaskExecutor, LocalExecutor, shard_statistics


def median_seconds(fun, theta, repeats: int) -> float:
    fun(theta)                                   # warm-up: X^T, placement, imports
    times = []
    th = theta.copy()
    for _ in range(repeats):
        th[0] += 1e-6
        with Timer() as t:
            fun(th)
        times.append(t.seconds)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="conll2000", choices=CORPORA)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--limit", type=int, default=None, help="first N sentences of each set")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    tr, _, te, template = CORPORA[args.corpus]
    train = read_conll(data_path(*tr))[:args.limit]
    test = read_conll(data_path(*te))[:args.limit]
    l2 = ML.default_l2
    crf = CRF(template, "IOB2")
    data = crf._prepare(train)
    out = [f"Corpus: {args.corpus}, features {template}, IOB2 tags, λ = {l2} (the dev-chosen "
           f"default); {len(train)} training sentences, |θ| = {len(crf.theta_)}; "
           f"{args.max_iter} L-BFGS iterations at most for every trainer."]
    theta = np.random.default_rng(0).normal(scale=0.01, size=crf.theta_.shape)

    executors = {"1 partition, this process": lambda: None,
                 "--workers 2 (local processes)": lambda: LocalExecutor(2),
                 "--scheduler local:2 (Dask LocalCluster)": lambda: DaskExecutor("local:2")}
    out += ["", "| executor | one ML objective + gradient, s | speed-up |", "|---|---|---|"]
    base = None
    for name, make in executors.items():
        ex = make()
        try:
            with single_threaded_blas():
                s = median_seconds(crf.objective_function("ml", data, l2, executor=ex), theta,
                                   args.repeats)
        finally:
            if ex is not None:
                ex.close()
        base = base or s
        out.append(f"| {name} | {s:.3f} | {base / s:.2f}x |")
        print(out[-1], flush=True)

    # what one Dask task carries per step: θ and the settings in, the statistics out
    half = data.subset(list(range(len(data.gold) // 2)))
    placed = len(pickle.dumps((crf.scoring_copy(), half), protocol=5))
    loss = Loss(ML, 0.0)
    sent = len(pickle.dumps((theta, loss), protocol=5))
    back = len(pickle.dumps(shard_statistics((crf.scoring_copy(), half), theta, loss),
                            protocol=5))
    design = half.design(crf.pairs_, crf.L)
    design_mb = (design.data.nbytes + design.indices.nbytes + design.indptr.nbytes) / 1e6
    out.append(f"\nBytes per iteration per worker (2 partitions, pickled): {sent / 1e6:.2f} MB "
               f"sent (θ: 8·|θ| = {8 * len(theta) / 1e6:.2f} MB), {back / 1e6:.2f} MB returned "
               f"(the value and its θ-gradient); placed once per training: "
               f"{placed / 1e6:.1f} MB per partition (features, gold, scoring copy), and the "
               f"partition's pair design matrix, built where it lives: {design_mb:.0f} MB.")
    print(out[-1], flush=True)

    out += ["", "| trainer | iterations | wall time, s | / CRFsuite | test F |",
            "|---|---|---|---|---|"]
    rows, trained = [], []
    for name, make in executors.items():
        model = crf.copy(np.zeros_like(crf.theta_))
        ex = make()
        try:
            with Timer() as t, single_threaded_blas():
                model.set_params(objective="ml", l2=l2, max_iter=args.max_iter).fit(data, executor=ex)
        finally:
            if ex is not None:
                ex.close()
        f = f_of(model, test, "map")[0]
        trained.append(model)
        rows.append((name, model.settings_.get("iterations", "?"), t.seconds, f))
        print(rows[-1], flush=True)
    c2 = l2 * len(train)                  # CRFsuite's objective is the summed log-likelihood
    f_peer, t_peer = crfsuite_peer(train, test, template, c2, args.max_iter)
    for name, its, secs, f in rows:
        out.append(f"| fstchunk, {name} | {its} | {secs:.0f} | {secs / t_peer:.2f}x | {f:.2f} |")
    out.append(f"| python-crfsuite (L-BFGS, c2 = λ·S = {c2:g}, 1 thread) | ≤ {args.max_iter} "
               f"| {t_peer:.0f} | 1.00x | {f_peer:.2f} |")
    out += ["", "| decoding the test set (MEU, exact), executor | seconds | speed-up |",
            "|---|---|---|"]
    ml = trained[0]
    base = None
    for name, make in executors.items():
        ex = make()
        try:
            with Timer() as t, single_threaded_blas():
                preds = decode_sentences(ml, test, "meu", executor=ex)
        finally:
            if ex is not None:
                ex.close()
        if base is None:
            want = preds
        assert preds == want, f"{name}: decoding differs from one process"
        base = base or t.seconds
        out.append(f"| {name} | {t.seconds:.1f} | {base / t.seconds:.2f}x |")
        print(out[-1], flush=True)
    out.append(f"\nPeak resident memory of the driver and its finished children: "
               f"{peak_rss_mb():.0f} MB. One run of each row.")
    print("\n".join(out))
    if not args.no_write:
        write_section(f"Scale-out (issue 20): ML training on {args.corpus}, 1 and 2 workers",
                      "\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
