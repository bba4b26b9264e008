"""The front door (issue 34): how long ``import fstchunk`` and ``fstchunk eval`` take,
each against its yardstick in the same run.

* ``python -c "import fstchunk"`` against ``python -c "import pynini, numpy"``
  (target: at most 2x);
* ``fstchunk eval`` of a decoded CoNLL-2000 test file against ``perl conlleval.pl``
  on the same file (target: at most 2x).

The two commands of a pair run in turn (A B A B ...), each a whole process, and the
ratio is taken pair by pair; the medians are reported.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_front_door.py \\
        --conlleval ~/.cache/fstchunk-tests/conlleval.pl
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import data_path, write_section

HERE = Path(__file__).resolve().parents[1]


def seconds(argv: list[str], stdin: Path | None = None) -> float:
    t = time.perf_counter()
    with open(stdin, "rb") if stdin else open("/dev/null", "rb") as fh:
        r = subprocess.run(argv, stdin=fh, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, cwd=HERE)
    if r.returncode:
        sys.exit(f"{' '.join(argv)} failed: {r.stderr.decode()[-500:]}")
    return time.perf_counter() - t


def paired(a: tuple, b: tuple, runs: int) -> tuple[float, float, float]:
    ta, tb, ratios = [], [], []
    for _ in range(runs):
        x, y = seconds(*a), seconds(*b)
        ta.append(x)
        tb.append(y)
        ratios.append(x / y)
    return statistics.median(ta), statistics.median(tb), statistics.median(ratios)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conlleval", required=True, help="the path of conlleval.pl")
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        model, out = Path(tmp) / "hmm.npz", Path(tmp) / "test.out"
        for argv in (["train", "--model-type", "hmm", "--train",
                      data_path("conll2000", "train.txt"), "-o", str(model)],
                     ["decode", "--model", str(model), "--input",
                      data_path("conll2000", "test.txt"), "-o", str(out)]):
            subprocess.run([py, "-m", "fstchunk", *argv], check=True, cwd=HERE,
                           stdout=subprocess.DEVNULL)
        rows = []
        for label, a, b in (
                ("`import fstchunk` / `import pynini, numpy`",
                 ([py, "-c", "import fstchunk"],), ([py, "-c", "import pynini, numpy"],)),
                ("`fstchunk eval` / `conlleval.pl` (CoNLL-2000 test, 47377 tokens)",
                 ([py, "-m", "fstchunk", "eval", str(out)],),
                 (["perl", args.conlleval], out))):
            x, y, r = paired(a, b, args.runs)
            rows.append(f"| {label} | {x:.3f} | {y:.3f} | **{r:.2f}** |")
        same = subprocess.run([py, "-m", "fstchunk", "eval", str(out)], capture_output=True,
                              text=True, cwd=HERE).stdout == subprocess.run(
            ["perl", args.conlleval], stdin=open(out), capture_output=True, text=True).stdout
    body = (f"{args.runs} pairs, each command a whole process, run in turn; medians of the "
            "seconds and of the pairwise ratios. `fstchunk eval`'s report is the same text "
            f"as conlleval.pl's: {'yes' if same else 'NO'}.\n\n"
            "| pair (A / B) | A s | B s | A / B |\n|---|---|---|---|\n" + "\n".join(rows))
    print(body)
    write_section("Front door (issue 34): import and eval against their yardsticks", body)


if __name__ == "__main__":
    main()
