"""Behaviour and speed across a rebuild of the house: this checkout against an older one.

For CoNLL-2000 (train.txt, test.txt) and CoNLL-2002 Dutch (ned.train, ned.testb), each
checkout trains the same CRF from the command line (`fstchunk train`, tmpt1, ML, a fixed
number of L-BFGS iterations) and decodes the test set with MAP and MEU. The two
checkouts' trained weights must be equal (at 1e-12) and their decoded files byte for
byte; the table gives each command's wall time, the median of the repeats, the runs of
the two checkouts interleaved so that the machine's drift falls on both.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_house.py --old /path/to/old/checkout \\
        [--sentences 2000] [--max-iter 30] [--repeats 3]

``--old`` is a checkout of fstchunk (a git worktree of the older commit); each run is a
fresh process with that checkout first on ``PYTHONPATH`` and one BLAS thread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from common import data_path, write_section

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPORA = {"CoNLL-2000": ("conll2000", "train.txt", "test.txt"),
           "CoNLL-2002 Dutch": ("conll2002", "ned.train", "ned.testb")}


def run(checkout: str, args: list[str]) -> float:
    """Seconds of ``python -m fstchunk ARGS`` with ``checkout`` first on the path."""
    env = dict(os.environ, PYTHONPATH=checkout, OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fstchunk", *args], env=env, check=True,
                   stdout=subprocess.DEVNULL, cwd=checkout)
    return time.perf_counter() - t0


def head(path: str, sentences: int, out: str) -> str:
    """The first ``sentences`` sentences of a CoNLL file (all for 0)."""
    with open(path, encoding="utf-8") as f:
        blocks = f.read().strip("\n").split("\n\n")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n\n".join(blocks[:sentences] if sentences else blocks) + "\n\n")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="a checkout of the older fstchunk")
    ap.add_argument("--sentences", type=int, default=2000, help="training sentences (0: all)")
    ap.add_argument("--max-iter", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    old, new = os.path.abspath(a.old), HERE
    rows = ["| corpus | command | older (s) | this (s) | ratio | older, range (s) | this, range (s) "
            "| same output |", "|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for name, (corpus, train_file, test_file) in CORPORA.items():
            train = head(data_path(corpus, train_file), a.sentences,
                         os.path.join(tmp, f"{corpus}.train"))
            test = data_path(corpus, test_file)
            times: dict[tuple[str, str], list[float]] = {}
            for r in range(a.repeats):
                for side, checkout in ((("old", old), ("new", new)) if r % 2 == 0
                                       else (("new", new), ("old", old))):
                    model = os.path.join(tmp, f"{corpus}-{side}.npz")
                    steps = {"train": ["train", "--train", train, "--features", "tmpt1",
                                       "--max-iter", str(a.max_iter), "--quiet",
                                       "-o", model]}
                    for dec in ("map", "meu"):
                        steps[f"decode {dec}"] = [
                            "decode", "--model", model, "--input", test, "--decoder", dec,
                            "-o", os.path.join(tmp, f"{corpus}-{side}-{dec}.txt")]
                    for step, cmd in steps.items():
                        times.setdefault((step, side), []).append(run(checkout, cmd))
            with np.load(os.path.join(tmp, f"{corpus}-old.npz")) as z_old, \
                    np.load(os.path.join(tmp, f"{corpus}-new.npz")) as z_new:
                same_theta = np.allclose(z_old["theta"], z_new["theta"], rtol=0, atol=1e-12)
            for step in ("train", "decode map", "decode meu"):
                if step == "train":
                    same = f"θ equal at 1e-12: {same_theta}"
                else:
                    dec = step.split()[1]
                    files = [open(os.path.join(tmp, f"{corpus}-{s}-{dec}.txt"), "rb").read()
                             for s in ("old", "new")]
                    same = f"byte-identical: {files[0] == files[1]}"
                old_t, new_t = times[(step, "old")], times[(step, "new")]
                t_old, t_new = statistics.median(old_t), statistics.median(new_t)
                rows.append(f"| {name} | {step} | {t_old:.2f} | {t_new:.2f} | "
                            f"{t_new / t_old:.2f} | {min(old_t):.2f}–{max(old_t):.2f} | "
                            f"{min(new_t):.2f}–{max(new_t):.2f} | {same} |")
                print(rows[-1], flush=True)
    commit = subprocess.run(["git", "-C", old, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "?"
    body = (f"This checkout against the older commit {commit}, from the command line: "
            f"`fstchunk train` (tmpt1, ML, {a.max_iter} L-BFGS iterations, the first "
            f"{a.sentences or 'all'} training sentences), then `decode` of the whole test "
            f"set with MAP and MEU. Median wall time of {a.repeats} runs each, the two "
            f"checkouts interleaved, one BLAS thread. A ratio is this checkout's time over "
            f"the older one's; the ranges show the spread of the runs.\n\n" + "\n".join(rows))
    print(body)
    if not a.no_write:
        write_section("The house rebuilt: behaviour and speed against the older code", body)


if __name__ == "__main__":
    main()
