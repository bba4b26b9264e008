"""The library from Python against the CLI, and the BLAS thread limit (issue 32, item 9).

    fstchunk train --train ../shared/data/conll2000/train.txt -o conll_ml.npz
    git archive 2857aae fstchunk | tar -x -C /tmp/before     # the code before the limit
    FSTCHUNK_DATA=../shared/data python benchmarks/bench_library_threads.py \\
        --model conll_ml.npz --before /tmp/before

One long sentence: CoNLL-2000 dev.txt's sentences joined until ~2000 tokens, written
as a CoNLL file.  For each code tree (``before``: without the limit; ``after``: this
checkout), fresh processes with OPENBLAS_NUM_THREADS (and its kin) unset, i.e. the
BLAS's default thread count, time:

* API: ``model.lattices([doc])`` and then ``expected_f(lat, reference=gold,
  method="fast")``, or ``decode_meu(lat)`` (exact), in Python, as a user calls them;
* CLI: ``fstchunk expected --model M FILE`` and ``fstchunk decode --model M --input
  FILE --decoder meu``, wall time minus that of the same command on a one-token file
  (start-up, imports, reading the model).

Each figure is the median of ``--repeats`` runs, the API and CLI runs interleaved.
Then, in this checkout: the two API calls with the limit set to 1, 2, … up to the
usable cores (``fstchunk.core.blas.LIMIT``), and the limit's own cost per call, against
threadpoolctl's ``threadpool_limits``.
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
import timeit
from pathlib import Path

from common import data_path, write_section

HERE = Path(__file__).resolve()
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
               "GOTO_NUM_THREADS", "BLIS_NUM_THREADS")


def write_document(path: str, tokens: int) -> int:
    """Dev sentences joined into one until ``tokens`` would be exceeded; its length."""
    from fstchunk import read_conll
    rows: list = []
    sents = read_conll(data_path("conll2000", "dev.txt"))
    for s in sents:
        if len(rows) + len(s) > tokens:
            break
        rows.extend(s.rows)
    rows = rows or sents[0].rows[:tokens]
    with open(path, "w") as f:
        f.write("\n".join(" ".join(r) for r in rows) + "\n\n")
    return len(rows)


def _api(model_path: str, doc: str, repeats: int, limits: str) -> None:
    """Child: the API timings (median seconds) as JSON; ``limits``: thread limits to try
    (``-``: the code's own behaviour)."""
    from fstchunk import decode_meu, expected_f
    from fstchunk import read_conll
    from fstchunk import load_model
    model = load_model(model_path)
    sents = read_conll(doc)
    gold = sents[0].column(-1)
    out: dict = {}
    for limit in limits.split(","):
        if limit != "-":
            import fstchunk.core.blas as blas
            blas.LIMIT = int(limit)

        def expected():
            lat = model.lattices(sents)[0]
            return expected_f(lat, reference=gold, method="fast").f

        def meu():
            lat = model.lattices(sents)[0]
            return decode_meu(lat).score
        for name, fn in (("expected", expected), ("meu", meu)):
            ts, value = [], None
            for _ in range(repeats):
                t0 = time.perf_counter()
                value = fn()
                ts.append(time.perf_counter() - t0)
            out[f"{name}@{limit}"] = (statistics.median(ts), value)
    print(json.dumps(out))


def child_env(tree: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    env["PYTHONPATH"] = str(Path(tree).resolve())
    return env


def api(tree: str, model: str, doc: str, repeats: int, limits: str = "-") -> dict:
    r = subprocess.run([sys.executable, str(HERE), "--api", doc, "--model", model,
                        "--repeats", str(repeats), "--limits", limits],
                       capture_output=True, text=True, env=child_env(tree))
    if r.returncode != 0:
        sys.exit(f"API run under {tree} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def cli(tree: str, args: list[str], repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "fstchunk", *args], capture_output=True,
                           text=True, env=child_env(tree))
        ts.append(time.perf_counter() - t0)
        if r.returncode != 0:
            sys.exit(f"fstchunk {' '.join(args)} under {tree} failed:\n{r.stderr[-2000:]}")
    return statistics.median(ts)


def overhead() -> list[str]:
    """The limit's own cost per call (µs), nested and outermost, against threadpoolctl."""
    from threadpoolctl import threadpool_limits
    import fstchunk  # noqa: F401  (the libraries a user's process has loaded)
    from fstchunk.core.blas import ONE_THREAD, one_blas_thread

    @one_blas_thread
    def limited():
        pass

    def plain():
        pass
    N = 20000
    bare = timeit.timeit(plain, number=N) / N
    outer = timeit.timeit(limited, number=N) / N - bare
    with ONE_THREAD:
        nested = timeit.timeit(limited, number=N) / N - bare
    tpl = timeit.timeit(lambda: threadpool_limits(limits=1, user_api="blas")
                        .restore_original_limits(), number=500) / 500
    return [f"| one_blas_thread, outermost call | {outer * 1e6:.1f} µs |",
            f"| one_blas_thread, inside another limited call | {nested * 1e6:.2f} µs |",
            f"| threadpoolctl `threadpool_limits(1)` + restore (what a per-call limit "
            f"would cost with it) | {tpl * 1e6:.0f} µs |"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--before", help="a checkout of the code without the limit")
    ap.add_argument("--tokens", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--api", help=argparse.SUPPRESS)
    ap.add_argument("--limits", default="-", help=argparse.SUPPRESS)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.api:
        _api(args.model, args.api, args.repeats, args.limits)
        return
    load0 = os.getloadavg()[0]
    trees = {"after": str(HERE.parents[1])}
    if args.before:
        trees = {"before": args.before, **trees}
    tmp = tempfile.mkdtemp(prefix="fstchunk-threads-")
    doc, tiny = os.path.join(tmp, "doc.txt"), os.path.join(tmp, "tiny.txt")
    n = write_document(doc, args.tokens)
    write_document(tiny, 1)
    out_file = os.path.join(tmp, "out.txt")
    rows = ["| code | call | API s | CLI s | API / CLI | value (API = CLI?) |",
            "|---|---|---|---|---|---|"]
    cmds = {"expected": (["expected", "--model", args.model, "--json"],
                         ["expected_f", "fstchunk expected"]),
            "meu": (["decode", "--model", args.model, "--decoder", "meu", "-o", out_file,
                     "--input"], ["decode_meu", "fstchunk decode --decoder meu"])}
    for name, tree in trees.items():
        # interleaved (API, CLI, CLI on one token) runs, so that a drift of the machine's
        # load moves all three alike
        times: dict = {c: ([], [], []) for c in cmds}
        values: dict = {}
        for _ in range(args.repeats):
            a = api(tree, args.model, doc, 1)
            for call, (argv, _) in cmds.items():
                t_api, values[call] = a[f"{call}@-"]
                times[call][0].append(t_api)
                times[call][1].append(cli(tree, argv + [doc], 1))
                times[call][2].append(cli(tree, argv + [tiny], 1))
        for call, (_, labels) in cmds.items():
            t_api, full, base = (statistics.median(x) for x in times[call])
            t_cli = full - base
            rows.append(f"| {name} | `{labels[0]}` / `{labels[1]}` | {t_api:.2f} | "
                        f"{t_cli:.2f} ({full:.2f} − {base:.2f}) | {t_api / t_cli:.2f} | "
                        f"{values[call]:.12f} |")
            print(rows[-1], flush=True)
    cores = len(os.sched_getaffinity(0))
    limits = ",".join(str(k) for k in range(1, cores + 1))
    lim = api(trees["after"], args.model, doc, args.repeats, limits)
    lrows = ["| BLAS threads inside the calls | `expected_f` s | `decode_meu` s |",
             "|---|---|---|"]
    for k in range(1, cores + 1):
        lrows.append(f"| {k} | {lim[f'expected@{k}'][0]:.2f} | {lim[f'meu@{k}'][0]:.2f} |")
    orows = ["| what | cost per call |", "|---|---|", *overhead()]
    load = "load average (1 min) {:.1f} at the start, {:.1f} at the end (a shared machine)".format(
        load0, os.getloadavg()[0])
    body = "\n".join([
        f"One sentence of {n} tokens (CoNLL-2000 dev joined), a CRF trained on train.txt "
        f"({Path(args.model).name}); BLAS threads left at their default "
        f"(OPENBLAS_NUM_THREADS unset: {cores} here, `nproc` = {os.cpu_count()}, "
        f"`uname -m` = {os.uname().machine}). API: `model.lattices` and the call, in a "
        "Python process; CLI: the command's wall time minus that of the same command on "
        "a one-token file (start-up and model loading). Medians of "
        f"{args.repeats} interleaved runs. `before`: commit 2857aae (no limit in the "
        "library; the CLI limited its whole run); `after`: this checkout; " + load + ".", "",
        *rows, "",
        "The limit's value, chosen by measurement (this checkout, the same two API "
        "calls with `fstchunk.core.blas.LIMIT` = k):", "", *lrows, "",
        "The limit's own cost:", "", *orows])
    print(body)
    if not args.no_write:
        write_section("Library threads: API against CLI (issue 32, item 9)", body)


if __name__ == "__main__":
    main()
