"""The one learning loop (issue 33): the invariants, shown on real data.

* **the same model files decode the same**: models trained by the code *before* the
  learning loop (a checkout of that commit, ``--before``) — ML, meu-corpus from the ML
  model, max-margin and the perceptron (both calibrated on dev) — are decoded by both
  checkouts: the tag columns must be byte-identical (MAP, and MEU for the probabilistic
  or calibrated ones) and the expected F of each (``fstchunk expected --json``) equal;
* **speed the same or better**: ``train`` (ML, a fixed number of iterations) and
  ``decode --decoder meu`` run by both checkouts in turn (A B A B ...), the ratio
  after/before taken pair by pair, its median reported.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_learning.py \\
        --before /tmp/before-33 --corpus conll2000 --train-limit 2000 --test-limit 500

``--before`` is a checkout of the commit before the learning package (``git worktree add
/tmp/before-33 1f90fdf``); both checkouts run through the same Python (the one running
this script), each with its own ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import data_path, write_section

HERE = Path(__file__).resolve().parents[1]
CORPORA = {"conll2000": (("conll2000", "train.txt"), ("conll2000", "dev.txt"),
                         ("conll2000", "test.txt"), "tmpt3"),
           "ned": (("conll2002", "ned.train"), ("conll2002", "ned.testa"),
                   ("conll2002", "ned.testb"), "ner")}


def cli(checkout: Path, *argv, capture: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    r = subprocess.run([sys.executable, "-m", "fstchunk", *map(str, argv)], env=env,
                       capture_output=capture, text=True, cwd=checkout)
    if r.returncode not in (0, 1):
        sys.exit(f"{checkout}: fstchunk {' '.join(map(str, argv))} failed:\n{r.stderr}")
    return r


def head(src: str, dst: Path, sentences: int) -> Path:
    """The first ``sentences`` sentences of a corpus file (blank-line separated)."""
    out, n = [], 0
    with open(src, encoding="utf-8") as fh:
        for line in fh:
            out.append(line)
            if not line.strip():
                n += 1
                if n >= sentences:
                    break
    dst.write_text("".join(out), encoding="utf-8")
    return dst


def train_models(before: Path, work: Path, train: Path, dev: Path, template: str,
                 iters: int, passes: int) -> dict[str, tuple[Path, bool]]:
    """Models trained by the before checkout: name -> (file, probabilistic)."""
    m = {name: work / f"{name}.npz" for name in ("ml", "meu-corpus", "max-margin",
                                                 "perceptron")}
    base = ["--train", train, "--features", template, "--quiet", "--checkpoint-every", "0"]
    cli(before, "train", *base, "--max-iter", iters, "-o", m["ml"])
    cli(before, "train", *base, "--objective", "meu-corpus", "--init", m["ml"], "--max-iter",
        max(iters // 4, 2), "-o", m["meu-corpus"])
    cli(before, "train", *base, "--objective", "max-margin", "--max-iter", passes,
        "--calibrate", dev, "-o", m["max-margin"])
    cli(before, "train", *base, "--objective", "perceptron", "--max-iter", passes,
        "--calibrate", dev, "-o", m["perceptron"])
    return {k: (v, True) for k, v in m.items()}


def compare(before: Path, after: Path, models: dict, test: Path) -> list[str]:
    """Rows: per model and decoder, lines that differ and |ΔE[F]|."""
    rows = []
    for name, (model, _) in models.items():
        for decoder in ("map", "meu"):
            outs = [cli(c, "decode", "--model", model, "--input", test, "--decoder",
                        decoder).stdout for c in (before, after)]
            differ = sum(a != b for a, b in zip(*(o.splitlines() for o in outs)))
            differ += abs(len(outs[0].splitlines()) - len(outs[1].splitlines()))
            rows.append(f"| {name} | decode {decoder} | {len(outs[0].splitlines())} | "
                        f"{differ} |")
        ef = []
        for c in (before, after):
            doc = json.loads(cli(c, "expected", test, "--model", model, "--json").stdout)
            ef.append(doc["summary"]["mean_sentence_expected_f"])
        rows.append(f"| {name} | expected: mean E[F] {ef[1]:.12f} | | "
                    f"{abs(ef[0] - ef[1]):.1e} |")
    return rows


def paired(before: Path, after: Path, argv: list, runs: int,
           after_argv: list | None = None) -> tuple[float, float, float]:
    """Median seconds before, after, and the median of the pairwise ratios after/before
    (``after_argv``: the after checkout's command where its options differ)."""
    tb, ta, ratios = [], [], []
    for _ in range(runs):
        times = []
        for c, args in ((before, argv), (after, after_argv or argv)):
            t = time.perf_counter()
            cli(c, *args)
            times.append(time.perf_counter() - t)
        tb.append(times[0])
        ta.append(times[1])
        ratios.append(times[1] / times[0])
    return statistics.median(tb), statistics.median(ta), statistics.median(ratios)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, type=Path,
                    help="a checkout of the commit before the learning loop")
    ap.add_argument("--after", type=Path, default=HERE,
                    help="the checkout after (default: this one)")
    ap.add_argument("--corpus", choices=sorted(CORPORA), default="conll2000")
    ap.add_argument("--train-limit", type=int, default=2000)
    ap.add_argument("--test-limit", type=int, default=500)
    ap.add_argument("--iters", type=int, default=40, help="L-BFGS iterations of ML")
    ap.add_argument("--passes", type=int, default=6, help="max-margin/perceptron passes")
    ap.add_argument("--runs", type=int, default=3, help="paired timing runs")
    args = ap.parse_args()
    tr, dv, te, template = CORPORA[args.corpus]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        train = head(data_path(*tr), work / "train.txt", args.train_limit)
        dev = head(data_path(*dv), work / "dev.txt", args.test_limit)
        test = head(data_path(*te), work / "test.txt", args.test_limit)
        t0 = time.perf_counter()
        models = train_models(args.before, work, train, dev, template, args.iters,
                              args.passes)
        rows = compare(args.before, args.after, models, test)
        timing = [
            ("train (ML, 20 iterations)",
             ["train", "--train", train, "--features", template, "--quiet", "--max-iter",
              "20", "--checkpoint-every", "0", "-o", work / "t.npz"]),
            ("decode --decoder meu",
             ["decode", "--model", models["ml"][0], "--input", test, "--decoder", "meu",
              "-o", work / "d.txt"]),
        ]
        trows = []
        for label, argv in timing:
            b, a, r = paired(args.before, args.after, argv, args.runs)
            trows.append(f"| {label} | {b:.1f} | {a:.1f} | {r:.2f} |")
        total = time.perf_counter() - t0
    body = (f"Corpus {args.corpus}: the first {args.train_limit} training sentences "
            f"({template}), the first {args.test_limit} of dev and test; models trained by "
            f"the checkout before the learning loop (ML {args.iters} iterations, meu-corpus "
            f"from it, max-margin and perceptron {args.passes} passes, both calibrated on "
            f"dev), decoded by it and by this checkout.\n\n"
            "| model | what | lines | lines differing / \\|ΔE[F]\\| |\n|---|---|---|---|\n"
            + "\n".join(rows) + "\n\nSpeed, the two checkouts in turn "
            f"({args.runs} pairs; medians; seconds of the whole command):\n\n"
            "| command | before | after | after / before (median of pairs) |\n"
            "|---|---|---|---|\n" + "\n".join(trows)
            + f"\n\n({total:.0f} s in all.)")
    print(body)
    write_section(f"Learning loop (issue 33): invariants on {args.corpus}", body)


if __name__ == "__main__":
    main()
