"""The cost of a segment-model epoch (issue 37): seconds per epoch, wall and CPU, of
another checkout against this one, in fresh processes run in turn
(``bench_segment_ablation.py --cost``, which writes the RESULTS.md section)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from common import data_path, write_section

#: one child run: train a slice for some epochs (no dev), print each epoch's wall and CPU
#: seconds as JSON; runs with PYTHONPATH = the checkout measured
CHILD = """
import json, resource, sys, time
from fstchunk import SegmentModel
from fstchunk.io.segments import read_conll_segments, read_jsonl
a = json.loads(sys.argv[1])
if a["corpus"] == "genia":
    tr = read_jsonl(a["train"])[:a["n"]]
else:
    tr = read_conll_segments(a["train"])[:a["n"]]
    for s in tr:
        s.segments = [g for g in s.segments if g.type == "NP"]
marks = []
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
def mark(p=None):
    marks.append((time.perf_counter(), cpu()))
def fit():
    mark()
    if "max_iter" in SegmentModel().__dict__:        # a checkout with the estimator contract
        SegmentModel(predicates=a["predicates"], max_iter=a["epochs"]).fit(
            tr, callbacks=[mark], checkpoint_every=0)
    else:
        SegmentModel(predicates=a["predicates"]).fit(tr, max_iter=a["epochs"],
                                                     callbacks=[mark], checkpoint_every=0)
if a["one_thread"]:
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=1, user_api="blas"):
        fit()
else:
    fit()
print(json.dumps([[b[0] - x[0], b[1] - x[1]] for x, b in zip(marks, marks[1:])]))
"""


def cost(args) -> None:
    """Seconds per epoch (wall and CPU, training only) of the checkout at ``--before``
    (library default BLAS threads, and one BLAS thread as its CLI ran) and of this one,
    on the first ``--cost-limit`` training sentences of GENIA and CoNLL-2000 NP chunks,
    predicate sets mcp05 (the old default) and mcp05+sp03 (the new), runs in turn in
    fresh processes, ``--runs`` rounds; the RESULTS.md section."""
    root = str(Path(__file__).resolve().parents[1])
    files = {"genia": data_path("genia", "train.jsonl"), "np": data_path("conll2000", "train.txt")}
    variants = [("before", args.before, False), ("before, one BLAS thread", args.before, True),
                ("after", root, False)]
    rows, loads = [], []
    for corpus_name in ("genia", "np"):
        for pred in ("mcp05", "mcp05+sp03"):
            got: dict[str, list] = {v[0]: [] for v in variants}
            for _ in range(args.runs):
                for label, checkout, one in variants:
                    a = {"corpus": corpus_name, "train": files[corpus_name], "n": args.cost_limit,
                         "predicates": pred, "epochs": args.epochs, "one_thread": one}
                    if label.startswith("before") and pred != "mcp05" and not args.before_has_sp03:
                        continue
                    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(a)], check=True,
                                         env=dict(os.environ, PYTHONPATH=checkout),
                                         capture_output=True, text=True).stdout
                    got[label].append(json.loads(out.strip().splitlines()[-1]))
                    loads.append(os.getloadavg()[0])
                    print(corpus_name, pred, label, got[label][-1], file=sys.stderr, flush=True)
            cells = []
            for label, _, _ in variants:
                if not got[label]:
                    cells.append("–")
                    continue
                ep = np.array(got[label])                      # runs × epochs × (wall, cpu)
                cells.append(f"{np.median(ep[:, 0, 0]):.1f} / {np.median(ep[:, 1:, 0]):.1f} "
                             f"({np.median(ep[:, 0, 1]):.1f} / {np.median(ep[:, 1:, 1]):.1f})")
            rows.append(f"| {corpus_name}, first {args.cost_limit} | {pred} | " + " | ".join(cells) + " |")
    text = "\n".join([
        f"Seconds per training epoch (no dev F), `SegmentModel(predicates=P).fit` on the "
        f"first {args.cost_limit} training sentences, {args.epochs} epochs, in fresh "
        f"processes run in turn ({args.runs} rounds; medians): each cell 'epoch 1 / later "
        f"epochs' of wall time and, in parentheses, CPU time (user + system), less "
        f"sensitive to the other jobs on the machine. 'before' = {args.before_label}, through "
        f"the library with the default BLAS threads (as bench_segments.py and the "
        f"API ran it); 'before, one BLAS thread' = the same under "
        f"threadpool_limits(1) (as `fstchunk segment train` ran it); 'after' = this "
        f"checkout (one BLAS thread inside the learner's step, features kept from epoch "
        f"2 on). Load average (1 min) during the runs: {min(loads):.1f}–{max(loads):.1f} "
        f"on 2 cores (other jobs beside).\n",
        "| data | predicates | before | before, one BLAS thread | after |",
        "|---|---|---|---|---|", *rows])
    print(text)
    write_section("Segments (issue 37): cost of an epoch", text)


def full_epochs(args) -> None:
    """``--cost-full CORPUS``: wall and CPU seconds of each of ``--epochs`` epochs of this
    checkout on all of CORPUS's training sentences (the default predicates, no dev F),
    one fresh process, with the load average beside; the RESULTS.md section."""
    files = {"genia": data_path("genia", "train.jsonl"), "np": data_path("conll2000", "train.txt")}
    a = {"corpus": args.cost_full, "train": files[args.cost_full], "n": 10 ** 9,
         "predicates": "mcp05+sp03", "epochs": args.epochs, "one_thread": False}
    load0 = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(a)], check=True,
                         capture_output=True, text=True).stdout
    ep = json.loads(out.strip().splitlines()[-1])
    text = "\n".join([
        f"All training sentences of {args.cost_full}, `SegmentModel()` (the default "
        f"predicates mcp05+sp03, one BLAS thread in the learner's step, features kept "
        f"from epoch 2 on), {args.epochs} epochs, no dev F, one fresh process. Load "
        f"average (1 min) before / after: {load0:.1f} / {os.getloadavg()[0]:.1f} on 2 cores.\n",
        "| epoch | wall s | CPU s |", "|---|---|---|",
        *(f"| {i} | {w:.1f} | {c:.1f} |" for i, (w, c) in enumerate(ep, 1))])
    print(text)
    write_section(f"Segments (issue 37): a full {args.cost_full} epoch", text)
