"""Costs of the per-sentence ``meu`` training objective and of k-best MEU decoding by
sentence length (issue 32, item 9): seconds and peak memory of one sentence of
n = 250, 500, 1000, 2000 tokens, before and after the rewrite, and the answers compared.

    fstchunk train --train ../shared/data/conll2000/train.txt -o conll_ml.npz
    git archive 2857aae fstchunk | tar -x -C /tmp/before     # the code before the rewrite
    FSTCHUNK_DATA=../shared/data python benchmarks/bench_meu_costs.py \\
        --model conll_ml.npz --before /tmp/before

The sentence: the first n tokens of CoNLL-2000 dev.txt joined into one document, its
gold tags the reference of the objective.  Each figure is one fresh process per
(code, task, n), run under ``/usr/bin/time -v``: its peak resident size (the whole
process: Python, numpy, the model, the lattice) and, printed by the process itself,
the seconds of the call alone; ``floor`` is the peak of a process that only builds
the lattice, so peak − floor is what the call adds.  The tasks: ``objective``, the
``meu`` objective and its gradient (``fstchunk.models.objectives.meu``) on that one
sentence; ``kbest`` and ``meu``, ``decode_meu`` with ``method="kbest"`` (k = 20,
the lattice machine built inside the call, as ``decode --decoder meu-kbest`` does)
and the exact decoder.  One BLAS thread everywhere (the CLI's setting; the old code
does not set it itself).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from common import data_path, write_section

LENGTHS = (250, 500, 1000, 2000)
TASKS = ("floor", "objective", "meu", "kbest")
HERE = Path(__file__).resolve()


def document(n: int):
    """The first n tokens of CoNLL-2000 dev joined into one sentence."""
    from fstchunk.io.conll import Sentence, read_conll
    dev = read_conll(data_path("conll2000", "dev.txt"))
    rows, lines = [], []
    for s in dev:
        rows.extend(s.rows)
        lines.extend(s.lines)
        if len(rows) >= n:
            break
    return Sentence(rows[:n], lines[:n], dev[0].source)


def _one(task: str, n: int, model_path: str) -> None:
    """Child process: one task on the n-token document; prints JSON."""
    from threadpoolctl import threadpool_limits
    from fstchunk import decode_meu
    from fstchunk import load_model
    from fstchunk.models.objectives import Chain, Gold, meu
    threadpool_limits(limits=1, user_api="blas")
    model = load_model(model_path)
    doc = document(n)
    lat = model.lattices([doc])[0]
    out = {"n": lat.n}
    t0 = time.perf_counter()
    if task == "objective":
        e, t, s, en = lat.scores
        tags = tuple(lat.tags)
        gold = Gold([np.array([tags.index(x) for x in doc.column(-1)])], tags, lat.scheme)
        value, grad = meu(Chain(tags, lat.scheme, e, t, s, en), gold)
        out.update(value=value, grad=[float(np.abs(g).sum()) for g in grad])
    elif task in ("meu", "kbest"):
        d = decode_meu(lat, method="exact" if task == "meu" else "kbest", k=20)
        out.update(score=d.score, tags=hashlib.sha1(" ".join(d.tags).encode()).hexdigest())
    out["seconds"] = time.perf_counter() - t0
    print(json.dumps(out))


def run(tree: str, task: str, n: int, model: str) -> dict:
    """One child under /usr/bin/time -v, with ``tree`` first on its path."""
    env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
    r = subprocess.run(["/usr/bin/time", "-v", sys.executable, str(HERE), "--one",
                        f"{task}:{n}", "--model", model], capture_output=True, text=True,
                       env=env)
    if r.returncode != 0:
        sys.exit(f"{task}:{n} under {tree} failed:\n{r.stderr[-2000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["peak_mb"] = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                                   r.stderr).group(1)) / 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--before", help="a checkout of the code before the rewrite")
    ap.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.one:
        task, n = args.one.split(":")
        _one(task, int(n), args.model)
        return
    load0 = os.getloadavg()[0]
    trees = {"after": str(HERE.parents[1])}
    if args.before:
        trees["before"] = args.before
    lengths = [int(x) for x in args.lengths.split(",")]
    res: dict = {}
    for n in lengths:
        for task in TASKS:
            for name, tree in trees.items():
                r = res[name, task, n] = run(tree, task, n, args.model)
                print(name, task, n, json.dumps(r), flush=True)
    rows = ["| n | task | " + " | ".join(f"{t} s | {t} peak MB (− floor)" for t in trees)
            + (" | same answer |" if "before" in trees else ""),
            "|---|---|" + "---|---|" * len(trees) + ("---|" if "before" in trees else "")]
    for n in lengths:
        for task in TASKS[1:]:
            cells = []
            for name in trees:
                r, f = res[name, task, n], res[name, "floor", n]
                cells.append(f"{r['seconds']:.2f} | {r['peak_mb']:.0f} "
                             f"(+{r['peak_mb'] - f['peak_mb']:.0f})")
            same = ""
            if "before" in trees:
                a, b = res["after", task, n], res["before", task, n]
                if task == "objective":
                    dv = abs(a["value"] - b["value"])
                    dg = max(abs(x - y) / max(abs(y), 1.0) for x, y in zip(a["grad"], b["grad"]))
                    same = f" | value Δ {dv:.0e}, Σ\\|∇\\| rel. Δ {dg:.0e} |"
                else:
                    same = (f" | tags {'same' if a['tags'] == b['tags'] else 'DIFFERENT'}, "
                            f"score Δ {abs(a['score'] - b['score']):.0e} |")
            rows.append(f"| {res['after', task, n]['n']} | {task} | " + " | ".join(cells) + same)
    load = "load average (1 min) {:.1f} at the start, {:.1f} at the end (a shared machine)".format(
        load0, os.getloadavg()[0])
    body = "\n".join([
        "One sentence per row: the first n tokens of CoNLL-2000 dev joined, under a CRF "
        f"trained on train.txt ({Path(args.model).name}, 23 IOB2 tags). Seconds: the call "
        "alone; peak: the whole process's maximum resident size by `/usr/bin/time -v` "
        "(in brackets, above a process that only builds the lattice). `objective`: the "
        "per-sentence `meu` objective and its gradient; `meu`: exact MEU decoding; "
        "`kbest`: `decode_meu(method=\"kbest\", k=20)`, the lattice machine built in the "
        "call. One BLAS thread. `before`: the code of commit 2857aae; " + load + ".", "",
        *rows])
    print(body)
    if not args.no_write:
        write_section("MEU objective and k-best costs by length (issue 32, item 9)", body)


if __name__ == "__main__":
    main()
