"""fstchunk.sklearn.CRF against sklearn_crfsuite.CRF on CoNLL-2002 Dutch NER.

The same tutorial-like feature function (our own: lower-cased word, suffixes, case and
digit flags, POS, the same of the ±1 neighbours, BOS/EOS), the same c1, c2 and
max_iterations for both; conlleval F (fstchunk.evaluate, the function) and the wall time of ``fit``
in one process with one BLAS thread (fstchunk also with 2 workers).  Tuning reads
ned.testa; ned.testb is read once, for the final figure (``--test testb``).

    python benchmarks/bench_sklearn.py [--sentences N] [--c1 0.1] [--c2 0.1]
        [--max-iterations 100] [--test testa|testb] [--workers 2] [--only both|fstchunk|crfsuite]
        [--unconstrained]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from fstchunk.io.conll import data_path, read_conll        # noqa: E402
from fstchunk import evaluate                    # noqa: E402


def word2features(sent, i):
    """The tutorial's kind of features (written afresh)."""
    word, pos = sent[i][0], sent[i][1]
    f = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:],
         "word[-2:]": word[-2:], "word.isupper()": word.isupper(),
         "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit(),
         "postag": pos, "postag[:2]": pos[:2]}
    for off, name in ((-1, "-1"), (1, "+1")):
        j = i + off
        if 0 <= j < len(sent):
            w, p = sent[j][0], sent[j][1]
            f.update({f"{name}:word.lower()": w.lower(), f"{name}:word.istitle()": w.istitle(),
                      f"{name}:word.isupper()": w.isupper(), f"{name}:postag": p,
                      f"{name}:postag[:2]": p[:2]})
        else:
            f["BOS" if off < 0 else "EOS"] = True
    return f


def featurize(sents):
    rows = [[r for r in s.rows if r[0] != "-DOCSTART-"] for s in sents]
    rows = [r for r in rows if r]
    return ([[word2features(r, i) for i in range(len(r))] for r in rows],
            [[t[-1] for t in r] for r in rows])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sentences", type=int, default=0, help="first N training sentences (0: all)")
    ap.add_argument("--c1", type=float, default=0.1)
    ap.add_argument("--c2", type=float, default=0.1)
    ap.add_argument("--max-iterations", type=int, default=100,
                    help="0: CRFsuite's default for lbfgs (until its stopping test)")
    ap.add_argument("--test", choices=("testa", "testb"), default="testa")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", choices=("both", "fstchunk", "crfsuite"), default="both")
    ap.add_argument("--unconstrained", action="store_true",
                    help="also fstchunk with scheme=None (CRFsuite's model: every label "
                         "sequence, not only valid IOB2 ones)")
    args = ap.parse_args()
    train = read_conll(data_path("conll2002", "ned.train"))
    if args.sentences:
        train = train[:args.sentences]
    test = read_conll(data_path("conll2002", f"ned.{args.test}"))
    t = time.perf_counter()
    X, y = featurize(train)
    Xt, yt = featurize(test)
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    print(f"# train {len(X)} sentences, {sum(map(len, X))} tokens; ned.{args.test} {len(Xt)}; "
          f"features {time.perf_counter() - t:.1f} s; c1={args.c1} c2={args.c2} "
          f"max_iterations={args.max_iterations}", flush=True)
    print("| system | fit (s) | ratio | iterations | final loss | non-zero weights | "
          f"F (ned.{args.test}) |")
    print("|---|---:|---:|---:|---:|---:|---:|", flush=True)
    kw = dict(algorithm="lbfgs", c1=args.c1, c2=args.c2,
              max_iterations=args.max_iterations or None)
    base = []

    def report(name, secs, pred, iterations, loss, nonzero):
        base.append(secs)
        f = evaluate([list(g) for g in yt], [list(p) for p in pred], scheme="IOB2").overall.f
        print(f"| {name} | {secs:.1f} | {secs / base[0]:.2f} | {iterations} | {loss:.2f} | "
              f"{nonzero} | {f:.2f} |", flush=True)

    if args.only in ("both", "crfsuite"):
        import sklearn_crfsuite
        t = time.perf_counter()
        a = sklearn_crfsuite.CRF(**kw).fit(X, y)
        secs = time.perf_counter() - t
        report("sklearn-crfsuite", secs, a.predict(Xt), len(a.training_log_.iterations),
               a.training_log_.last_iteration["loss"],
               len(a.state_features_) + len(a.transition_features_))
    if args.only in ("both", "fstchunk"):
        from fstchunk.sklearn import CRF
        runs = [(w, "auto") for w in sorted({1, args.workers})]
        runs += [(1, None)] if args.unconstrained else []
        for workers, scheme in runs:
            t = time.perf_counter()
            b = CRF(**kw, workers=workers, scheme=scheme).fit(X, y)
            secs = time.perf_counter() - t
            report(f"fstchunk.sklearn ({workers} worker{'s' * (workers > 1)}, scheme "
                   f"{b.scheme_})", secs, b.predict(Xt), len(b.training_log_.iterations),
                   b.training_log_.last_iteration["loss"], b.num_nonzero_)
    print(f"# load average {os.getloadavg()[0]:.1f} at the end", flush=True)


if __name__ == "__main__":
    main()
