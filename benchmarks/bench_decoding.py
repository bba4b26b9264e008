"""Decoding against sklearn-crfsuite on one core: predict, marginals, entity
confidences and exact MEU, side by side in one run.

sklearn-crfsuite's tutorial-style features on CoNLL-2002 Dutch (:mod:`bench_sklearn`'s
``featurize``), both fitted on ``ned.train`` (or its first ``--sentences``) with the
same c1, c2 and iterations, then each call timed on ``ned.testb`` — ``--repeats``
times, interleaved, the minimum reported — with one BLAS thread.  Speed only: no
figure here is an accuracy claim (ned.testb's F is the other benchmarks').

    python benchmarks/bench_decoding.py [--sentences N] [--repeats 3] [--test testb]
        [--max-iterations 100]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from bench_sklearn import featurize                   # noqa: E402
from common import data_path, machine, write_section  # noqa: E402
from fstchunk.io.conll import read_conll                 # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sentences", type=int, default=0, help="first N training sentences (0: all)")
    ap.add_argument("--max-iterations", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--test", choices=("testa", "testb"), default="testb")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    train = read_conll(data_path("conll2002", "ned.train"))
    if args.sentences:
        train = train[:args.sentences]
    X, y = featurize(train)
    Xt, _ = featurize(read_conll(data_path("conll2002", f"ned.{args.test}")))
    tokens = sum(map(len, Xt))
    import sklearn_crfsuite
    from fstchunk.sklearn import CRF
    kw = dict(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=args.max_iterations)
    peer = sklearn_crfsuite.CRF(**kw).fit(X, y)
    ours = CRF(**kw).fit(X, y)
    calls = [
        ("sklearn-crfsuite", "predict", lambda: peer.predict(Xt)),
        ("sklearn-crfsuite", "predict_marginals", lambda: peer.predict_marginals(Xt)),
        ("fstchunk.sklearn", "predict", lambda: ours.predict(Xt)),
        ("fstchunk.sklearn", "predict_marginals", lambda: ours.predict_marginals(Xt)),
        ("fstchunk.sklearn", "predict_chunks", lambda: ours.predict_chunks(Xt)),
        ("fstchunk.sklearn", 'predict(decoder="meu")', lambda: ours.predict(Xt, decoder="meu")),
        ("fstchunk.sklearn", "feature transform alone",
         lambda: ours._fitted().fmap.transform(Xt)),
    ]
    best = {k: float("inf") for k in range(len(calls))}
    for _ in range(args.repeats):
        for k, (_, _, call) in enumerate(calls):
            t = time.perf_counter()
            call()
            best[k] = min(best[k], time.perf_counter() - t)
    base = {"predict": best[0], "predict_marginals": best[1]}
    rows = ["| system | call | seconds | tokens/s | ratio | against |", "|---|---|---:|---:|---:|---|"]
    against = {2: "predict", 3: "predict_marginals", 4: "predict_marginals",
               5: "predict_marginals", 6: "predict"}
    for k, (who, what, _) in enumerate(calls):
        ref = against.get(k)
        ratio = f"{best[k] / base[ref]:.2f}" if ref else "1.00"
        rows.append(f"| {who} | `{what}` | {best[k]:.3f} | {tokens / best[k]:,.0f} | {ratio} | "
                    f"{'sklearn-crfsuite ' + ref if ref else '-'} |")
    body = (f"Fitted on {len(X)} sentences of ned.train (c1 = c2 = 0.1, {args.max_iterations} "
            f"iterations, the same features for both); timed on ned.{args.test}, {len(Xt)} "
            f"sentences, {tokens} tokens; the minimum of {args.repeats} interleaved runs, one "
            f"core, one BLAS thread ({machine()}).\n\n" + "\n".join(rows))
    print(body)
    if not args.no_write:
        write_section("Decoding against sklearn-crfsuite (issue 44): one core", body)


if __name__ == "__main__":
    main()
