"""``fstchunk decode`` as a whole process against a python-crfsuite script, one core.

A CRFsuite model is trained by python-crfsuite on CoNLL-2000 train (CRFsuite's
chunking example features: words and POS at -2..2, their bigrams) and imported with
``fstchunk import crfsuite --scheme IOB2``; the test file is CoNLL-2000 test in
CRFsuite's data format, repeated ``--times`` times (5: 10,060 sentences).  Timed
whole, start-up included, each command ``--repeats`` times interleaved (median
quoted, with peak resident memory):

* the peer: :data:`PEER`, a python-crfsuite script that reads the same file and
  writes ``gold<TAB>predicted`` per item, as ``crfsuite tag -r`` does;
* ``fstchunk decode --format crfsuite`` (MAP), ``--format jsonl`` (entities with
  their probabilities), ``--decoder meu --format crfsuite``.

``--scaling 1,10,100``: tokens per second and peak memory of each fstchunk command
against the corpus size (CoNLL-2000 test concatenated that many times).

    python benchmarks/bench_decode_cli.py [--times 5] [--repeats 3] [--scaling 1,10,100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import data_path, machine, write_section
from fstchunk.io.conll import read_conll
from fstchunk.io.crfsuite.data import escape

#: the peer: python-crfsuite tagging a CRFsuite data file (what a user's script does)
PEER = r'''
import sys, pycrfsuite
def split(f):
    out, val, i, cur = [], None, 0, []
    while i < len(f):
        c = f[i]
        if c == "\\" and i + 1 < len(f) and f[i + 1] in ":\\":
            cur.append(f[i + 1]); i += 2; continue
        if c == ":" and val is None:
            out, cur, val = cur, [], True
        else:
            cur.append(c)
        i += 1
    return ("".join(out), float("".join(cur) or 1.0)) if val else ("".join(cur), 1.0)
def fast(f):
    if "\\" in f:
        return split(f)
    name, sep, value = f.partition(":")
    return name, (float(value) if value else 1.0)
tagger = pycrfsuite.Tagger()
tagger.open(sys.argv[1])
out = open(sys.argv[3], "w")
def flush(labels, items):
    for g, p in zip(labels, tagger.tag(pycrfsuite.ItemSequence(items))):
        out.write(g + "\t" + p + "\n")
    out.write("\n")
labels, items = [], []
for line in open(sys.argv[2], encoding="utf-8"):
    line = line.rstrip("\r\n")
    if not line:
        if items:
            flush(labels, items)
        labels, items = [], []
        continue
    fields = line.split("\t")
    labels.append(fields[0])
    items.append(dict(fast(f) for f in fields[1:] if f))
if items:
    flush(labels, items)
'''


def features(rows, i):
    """CRFsuite's chunking example: w and pos at -2..2, w bigrams, pos bi/trigrams."""
    n = len(rows)
    w = lambda k: rows[i + k][0] if 0 <= i + k < n else "__"            # noqa: E731
    p = lambda k: rows[i + k][1] if 0 <= i + k < n else "__"            # noqa: E731
    f = [f"w[{k}]={w(k)}" for k in range(-2, 3)] + [f"pos[{k}]={p(k)}" for k in range(-2, 3)]
    f += [f"w[{k}]|w[{k + 1}]={w(k)}|{w(k + 1)}" for k in (-1, 0)]
    f += [f"pos[{k}]|pos[{k + 1}]={p(k)}|{p(k + 1)}" for k in range(-2, 2)]
    f += [f"pos[{k}]|pos[{k + 1}]|pos[{k + 2}]={p(k)}|{p(k + 1)}|{p(k + 2)}"
          for k in range(-2, 1)]
    return f


def write_crfsuite(sents, path: Path, times: int = 1) -> int:
    tokens = 0
    with open(path, "w", encoding="utf-8") as fh:
        block = []
        for s in sents:
            rows = s.rows
            for i, r in enumerate(rows):
                block.append(escape(r[-1]) + "\t" + "\t".join(escape(a) for a in features(rows, i)))
            block.append("")
            tokens += len(rows)
        text = "\n".join(block) + "\n"
        for _ in range(times):
            fh.write(text)
    return tokens * times


def run(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, peak resident MB) of one whole process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}): {err}")
    return wall, usage.ru_maxrss / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--times", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scaling", default="", help="e.g. 1,10,100")
    ap.add_argument("--max-iterations", type=int, default=100)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    os.environ.update(env)
    import pycrfsuite
    py = sys.executable
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        train = read_conll(data_path("conll2000", "train.txt"))
        test = read_conll(data_path("conll2000", "test.txt"))
        trainer = pycrfsuite.Trainer(verbose=False)
        for s in train:
            trainer.append(pycrfsuite.ItemSequence([features(s.rows, i)
                                                    for i in range(len(s.rows))]),
                           [r[-1] for r in s.rows])
        trainer.set_params({"c1": 0.0, "c2": 1.0, "max_iterations": args.max_iterations})
        model = d / "chunk.crfsuite"
        trainer.train(str(model))
        npz = d / "chunk.npz"
        subprocess.run([py, "-m", "fstchunk", "import", "crfsuite", str(model), "--scheme",
                        "IOB2", "-o", str(npz)], check=True, env=env)
        peer = d / "peer.py"
        peer.write_text(PEER)
        data = d / "test.crfsuite.txt"
        tokens = write_crfsuite(test, data, args.times)
        sentences = len(test) * args.times
        out = d / "out"
        fst = [py, "-m", "fstchunk", "decode", "--model", str(npz), "--input", str(data),
               "-o", str(out)]
        cmds = {"python-crfsuite script": [py, str(peer), str(model), str(data), str(out)],
                "decode --format crfsuite": fst + ["--format", "crfsuite"],
                "decode --format jsonl": fst + ["--format", "jsonl"],
                "decode --decoder meu --format crfsuite": fst + ["--format", "crfsuite",
                                                                  "--decoder", "meu"]}
        got = {k: [] for k in cmds}
        for _ in range(args.repeats):
            for k, c in cmds.items():
                got[k].append(run(c))
        base = statistics.median(w for w, _ in got["python-crfsuite script"])
        rows = ["| command | wall s (median) | min-max | ratio | tokens/s | peak MB |",
                "|---|---:|---:|---:|---:|---:|"]
        for k, runs in got.items():
            walls = [w for w, _ in runs]
            med = statistics.median(walls)
            rows.append(f"| `{k}` | {med:.2f} | {min(walls):.2f}-{max(walls):.2f} | "
                        f"{med / base:.2f} | {tokens / med:,.0f} | "
                        f"{max(m for _, m in runs):.0f} |")
        body = (f"CoNLL-2000 test in CRFsuite's data format, {args.times} times: {sentences} "
                f"sentences, {tokens} tokens; a CRFsuite model (python-crfsuite, L-BFGS, "
                f"c2 = 1, {args.max_iterations} iterations, CRFsuite's chunking features) "
                f"imported by `fstchunk import crfsuite --scheme IOB2`; whole processes, "
                f"start-up included, {args.repeats} interleaved runs each, one BLAS thread "
                f"({machine()}).\n\n" + "\n".join(rows))
        if args.scaling:
            body += "\n\n" + scaling(d, test, npz, py, [int(x) for x in args.scaling.split(",")])
        print(body)
        if not args.no_write:
            write_section("Decoding from the command line against python-crfsuite (issue 44)",
                          body)


def scaling(d: Path, test, npz: Path, py: str, factors: list[int]) -> str:
    """Tokens per second and peak memory against corpus size, one run each."""
    rows = ["| corpus | tokens | command | wall s | tokens/s | peak MB |",
            "|---|---:|---|---:|---:|---:|"]
    for f in factors:
        data = d / f"x{f}.txt"
        tokens = write_crfsuite(test, data, f)
        for name, extra in (("map", []), ("jsonl", ["--format", "jsonl"]),
                            ("meu", ["--decoder", "meu"])):
            fmt = [] if extra[:1] == ["--format"] else ["--format", "crfsuite"]
            w, m = run([py, "-m", "fstchunk", "decode", "--model", str(npz), "--input",
                        str(data), "-o", str(d / "o"), *fmt, *extra])
            rows.append(f"| test x{f} | {tokens} | {name} | {w:.1f} | {tokens / w:,.0f} | "
                        f"{m:.0f} |")
        data.unlink()
    return "Throughput against corpus size (one run each):\n\n" + "\n".join(rows)


if __name__ == "__main__":
    main()
