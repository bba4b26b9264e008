"""How long the machines of ``fstchunk grammar`` take to build (issue 32, item 8).

Every registered family (validity, encoder, convert, T, M, TM, toy, hamming-loss,
f-loss) is built through :func:`fstchunk.grammars.registry.build` over 1, 10, 50 and
100 chunk types ``T0, T1, ...``, each case in its own process (wall time of the
build, the machine's states and arcs, the peak resident memory of the process), plus
the command a user runs, ``fstchunk grammar info validity|convert --types T0,...`` (wall time of the whole
process, interpreter start included).  A case is killed after ``--timeout`` seconds or
at ``--memory`` GB of address space, and reported so.

``--before DIR`` runs the same cases against another checkout (e.g. ``git archive`` of
an older commit unpacked in DIR) and writes both columns side by side:

    git archive 2857aae | tar -x -C /tmp/grammar-before
    FSTCHUNK_DATA=../shared/data python benchmarks/bench_grammars.py \\
        --before /tmp/grammar-before --before-label "commit 2857aae" --timeout 120
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLD = ("B-T0,I-T0,O," * 7)[:-1].split(",")[:20]        # 20 tokens, 7 chunks of type T0

#: (label, registry name, options other than the types)
CASES = [
    ("validity IOB2", "validity", {"scheme": "IOB2"}),
    ("validity IOBES3", "validity", {"scheme": "IOBES3"}),
    ("encoder IOB1", "encoder", {"scheme": "IOB1"}),
    ("encoder IOBES3", "encoder", {"scheme": "IOBES3"}),
    ("convert IOB2 -> IOBES", "convert", {"scheme": "IOB2", "target": "IOBES"}),
    ("convert IOE1 -> IOBES3", "convert", {"scheme": "IOE1", "target": "IOBES3"}),
    ("T, max-length 4", "T", {"max_length": 4}),
    ("M, max-length 4", "M", {"max_length": 4}),
    ("TM, max-length 4", "TM", {"max_length": 4}),
    ("toy, max-length 4 (untyped)", "toy", {"max_length": 4}),
    ("hamming-loss, 20-token gold", "hamming-loss", {"scheme": "IOB2", "gold": GOLD}),
    ("f-loss, 20-token gold", "f-loss", {"scheme": "IOB2", "gold": GOLD}),
]
COMMANDS = [("grammar info validity", "validity"), ("grammar info convert", "convert")]


def types_of(k: int) -> list[str]:
    return [f"T{i}" for i in range(k)]


def child(case: int, k: int) -> None:
    """In the child process: build one case with the code on PYTHONPATH, print JSON."""
    from fstchunk.grammars import budget, registry
    label, name, kw = CASES[case]
    budget.set_state_budget(10 ** 9)            # time the builders, not the refusals
    o = registry.Options(types=types_of(k), **kw)
    t = time.perf_counter()
    f = registry.build(name, o)
    seconds = time.perf_counter() - t
    print(json.dumps({"seconds": seconds, "states": f.num_states(),
                      "arcs": sum(f.num_arcs(s) for s in f.states()),
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def limit_memory(gb: float):
    def apply():
        cap = int(gb * 2 ** 30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    return apply


def run(argv: list[str], code: str, timeout: float, memory: float) -> tuple[dict | None, str]:
    """Run ``argv`` with ``code`` first on PYTHONPATH: (its JSON or None, a note)."""
    env = dict(os.environ, PYTHONPATH=code, OMP_NUM_THREADS="1")
    t = time.perf_counter()
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=limit_memory(memory), cwd=code)   # -m: cwd first
    except subprocess.TimeoutExpired:
        return None, f"> {timeout:g} s (killed)"
    wall = time.perf_counter() - t
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        oom = "MemoryError" in done.stderr or "bad_alloc" in done.stderr or done.returncode < 0
        return None, (f"out of memory at {memory:g} GB after {wall:.0f} s" if oom
                      else f"failed: {last[:80]}")
    lines = done.stdout.strip().splitlines()
    try:
        got = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        got = {}
    got.setdefault("seconds", wall)
    got["wall"] = wall
    return got, ""


def cell(got: dict | None, note: str) -> str:
    if got is None:
        return note
    return f"{got['seconds']:.3g} s, {got['peak_mb']:.0f} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--types", default="1,10,50,100", help="numbers of chunk types")
    ap.add_argument("--before", default=None, help="another checkout to time as 'before'")
    ap.add_argument("--before-label", default=None,
                    help="what --before holds, for the section (e.g. 'commit 2857aae')")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    ap.add_argument("--memory", type=float, default=4.0, help="GB of address space per case")
    ap.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    ks = [int(x) for x in args.types.split(",")]
    codes = ([("before", args.before)] if args.before else []) + [("after", str(ROOT))]
    me = [sys.executable, str(Path(__file__).resolve())]
    rows = []
    for i, (label, name, _) in enumerate(CASES):
        for k in (ks[:1] if name == "toy" else ks):
            row = [label, str(k)]
            sizes = []
            for tag, code in codes:
                got, note = run(me + ["--child", str(i), str(k)], code, args.timeout,
                                args.memory)
                row.append(cell(got, note))
                if got is not None:
                    sizes.append(f"{got['states']:,} / {got['arcs']:,}")
                print(f"{label:32} k={k:<4} {tag:6} {row[-1]:>24}  {sizes[-1:]}", flush=True)
            # the same machine before and after: one size, else both
            rows.append(row + [" vs ".join(dict.fromkeys(sizes))])
    for label, name in COMMANDS:
        for k in ks:
            row = [f"`fstchunk {label}`", str(k)]
            for tag, code in codes:
                argv = [sys.executable, "-m", "fstchunk", "grammar", "info", name,
                        "--types", ",".join(types_of(k))]
                got, note = run(argv, code, args.timeout, args.memory)
                row.append(f"{got['wall']:.3g} s" if got else note)
                print(f"{label:32} k={k:<4} {tag:6} {row[-1]:>24}", flush=True)
            rows.append(row + [""])
    head = ["machine", "types"] + [t for t, _ in codes] + ["states / arcs"]
    table = "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] +
                      ["| " + " | ".join(r) + " |" for r in rows])
    label = args.before_label or f"the checkout at `{args.before}`"
    before = f"'before' is {label}; " if args.before else ""
    body = (f"`uname -m`: {platform.machine()}, `nproc`: {os.cpu_count()}.\n\n"
            f"{before}'after' this one. Seconds of `registry.build` in a fresh process "
            f"(the `fstchunk grammar info` rows: the whole command, interpreter start and "
            f"the functional check included); each case killed after {args.timeout:g} s "
            f"or at {args.memory:g} GB of address space.\n\n{table}")
    print("\n" + body)
    if not args.no_write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from common import write_section
        write_section("Grammars (issue 32, item 8): building the machines", body)


if __name__ == "__main__":
    main()
