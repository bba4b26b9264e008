"""sklearn-crfsuite's tutorial (benchmarks/sklearn_tutorial.py) with sklearn-crfsuite and
with only the import changed to fstchunk.sklearn (and once more with ``scheme=None``,
CRFsuite's model), side by side: weighted token F of the tutorial (``flat_f1_score``
over the labels but O, 0-100), sentence accuracy, the seconds of ``fit`` (100 L-BFGS
iterations, c1 = c2 = 0.1, all possible transitions) and of ``predict``, whether
python-crfsuite tags the model file identically.  Each run a separate process, one
BLAS thread; the search is left out (N_ITER 0).  Writes its section of RESULTS.md.

    python benchmarks/bench_sklearn_tutorial.py [--train 3000] [--test 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from common import data_path, write_section

HERE = os.path.dirname(os.path.abspath(__file__))
IMPORTS = ("import sklearn_crfsuite\nfrom sklearn_crfsuite import metrics\n",
           "import fstchunk.sklearn as sklearn_crfsuite\nfrom fstchunk.sklearn import metrics\n")


def variants(text: str) -> list[tuple[str, str]]:
    ours = text.replace(*IMPORTS)
    return [("sklearn-crfsuite", text), ("fstchunk.sklearn (only the import changed)", ours),
            ("fstchunk.sklearn, scheme=None", ours.replace(
                "all_possible_transitions=True", "all_possible_transitions=True, scheme=None"))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", type=int, default=3000)
    ap.add_argument("--test", type=int, default=2000)
    args = ap.parse_args()
    path = data_path("conll2002", "ned.train")
    text = open(os.path.join(HERE, "sklearn_tutorial.py"), encoding="utf-8").read()
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([os.path.dirname(HERE),
                                           os.environ.get("PYTHONPATH", "")]))
    rows, load = [], []
    for name, script in variants(text):
        tmp = os.path.join(HERE, f".tutorial_{len(rows)}.py")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(script)
        try:
            load.append(os.getloadavg()[0])
            out = subprocess.run([sys.executable, tmp, path, str(args.train), str(args.test),
                                  "0"], capture_output=True, text=True, env=env, check=True)
        finally:
            os.remove(tmp)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append((name, r))
        print(name, r["f1"], r["fit_seconds"], flush=True)
    base = rows[0][1]
    lines = ["| system | F (weighted, 0-100) | sentences right | fit (s) | fit ratio | "
             "predict (s) | python-crfsuite tags the file alike |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in rows:
        lines.append(f"| {name} | {100 * r['f1']:.2f} | {100 * r['seq_accuracy']:.2f} | "
                     f"{r['fit_seconds']:.1f} | {r['fit_seconds'] / base['fit_seconds']:.2f} | "
                     f"{r['predict_seconds']:.2f} | {100 * r['pycrfsuite_agrees']:.0f}% |")
    body = (f"ned.train: the first {args.train} sentences train, the next {args.test} test "
            f"(the tutorial's features and CRF: lbfgs, c1 = c2 = 0.1, 100 iterations, all "
            f"possible transitions). Load average at each run's start: "
            f"{', '.join(f'{x:.1f}' for x in load)}.\n\n" + "\n".join(lines) + "\n")
    write_section("fstchunk.sklearn (issue 46): sklearn-crfsuite's tutorial side by side", body)


if __name__ == "__main__":
    main()
