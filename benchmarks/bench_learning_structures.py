"""The one learning loop (issue 33) for the joint and segment models: its invariants on
real data against a checkout of the code before it (``bench_learning.py`` does the CRF's;
its helpers are used here).

* **training gives the same model**: each model trained by both checkouts, the arrays
  of the two files compared (bit for bit, else the largest difference);
* **the same files decode the same; files written before still load**: each file
  decoded by both checkouts: outputs byte-identical, ``joint decode --json`` /
  ``segment eval --json`` equal;
* **speed the same or better**: the checkouts in turn (A B A B ...), the median of the
  pairwise ratios after/before.

``--model joint``: Table 7's setting (``bench_joint.py``): the first ``--sentences``
(447, set D) CoNLL-2000 sentences, POS collapsed, NP only; ``perceptron``/``mmvp``
(``--iterations`` epochs, calibrated on ``--heldout`` dev sentences for ``--decoder
meu``) and ``crf`` (``--crf-iter`` iterations; the before checkout's ``--l2 L`` on the
summed NLL is ``--l2 L/S`` on the loop's mean: the same penalty); also the stop on a
separated training set (``--separable``) and ``crf`` on S = a power of four
(``--crf-check``: the rounding explained).  ``--part crf-speed``: ``crf`` training
timed in one process and spread, wall and CPU seconds, its own section.
``--model segment``: GENIA, ``--sentences``, ``--epochs`` (seed 0), dev F and the MEU
calibration on ``--heldout`` dev sentences; training also timed without checkpoints.
Both: the first ``--test-limit`` test sentences decoded.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_learning_structures.py \\
        --model joint --before /tmp/before-33

``--before``: a checkout of the commit before the learning package (``git worktree add
/tmp/before-33 1f90fdf``); both run by this Python, each with its own ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from bench_learning import HERE, cli, head, paired
from common import data_path, write_section

#: the checkouts' labels in the tables
WHO = ("before", "after")


def model_arrays(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(metadata, arrays) of an fstchunk model file, read as plain .npz."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["__metadata__"]))
        return meta, {k: z[k] for k in z.files if k != "__metadata__"}


def same_model(a: Path, b: Path) -> tuple[str, str]:
    """(verdict on the arrays, on the metadata but ``settings``) of two model files:
    'identical' or the largest |Δ| (and relative |Δ|/max|x|) of each differing array."""
    (ma, xa), (mb, xb) = model_arrays(a), model_arrays(b)
    if set(xa) != set(xb):
        arrays = f"arrays differ: {sorted(set(xa) ^ set(xb))}"
    else:
        diffs = []
        for k in sorted(xa):
            if xa[k].shape != xb[k].shape or xa[k].dtype != xb[k].dtype:
                diffs.append(f"{k}: shape/dtype {xa[k].shape} {xa[k].dtype} vs "
                             f"{xb[k].shape} {xb[k].dtype}")
            elif not np.array_equal(xa[k], xb[k]):
                if xa[k].dtype.kind != "f":
                    diffs.append(f"{k}: {int(np.sum(xa[k] != xb[k]))} entries differ")
                    continue
                d = float(np.max(np.abs(xa[k] - xb[k])))
                scale = float(np.max(np.abs(xa[k]))) or 1.0
                diffs.append(f"{k}: max \\|Δ\\| {d:.2e} ({d / scale:.1e} of max \\|x\\|)")
        arrays = "identical (bit for bit)" if not diffs else "; ".join(diffs)
    keys = (set(ma) | set(mb)) - {"settings", "checksum"}
    meta = [k for k in sorted(keys) if ma.get(k) != mb.get(k)]
    return arrays, "identical" if not meta else "differ: " + ", ".join(meta)


def settings_differing(a: Path, b: Path) -> str:
    """The ``settings`` keys of two model files whose values differ (bookkeeping such as
    the training seconds always does), and those only one file has."""
    sa, sb = (model_arrays(p)[0].get("settings", {}) for p in (a, b))
    differ = [k for k in sorted(set(sa) & set(sb)) if sa[k] != sb[k]]
    only = [f"only {w}: {', '.join(sorted(x))}" for w, x in
            (("before", set(sa) - set(sb)), ("after", set(sb) - set(sa))) if x]
    return "; ".join([", ".join(differ) or "none differ", *only])


def temperature(path: Path) -> str:
    t = model_arrays(path)[0].get("settings", {}).get("temperature")
    return "–" if t is None else repr(t)


def slice_jsonl(src: str, dst: Path, n: int) -> Path:
    """The first ``n`` non-blank lines of a JSONL file."""
    lines = [x for x in open(src, encoding="utf-8").read().split("\n") if x.strip()][:n]
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dst


def differing(a: str, b: str) -> int:
    """Lines that differ between two texts (and those one has beyond the other)."""
    la, lb = a.splitlines(), b.splitlines()
    return sum(x != y for x, y in zip(la, lb)) + abs(len(la) - len(lb))


def train_both(checkouts: dict, argv: dict, out: dict) -> None:
    """Train once by each checkout: ``argv[who]`` + ``-o out[who]``."""
    for who in WHO:
        cli(checkouts[who], *argv[who], "-o", out[who])


# ------------------------------------------------------------------- joint
@contextmanager
def cores(n: int | None):
    """This process (and the checkouts it starts) limited to its first ``n`` usable
    cores (None: as they are): both checkouts spread the joint NLL over them."""
    was = os.sched_getaffinity(0)
    if n is not None:
        os.sched_setaffinity(0, sorted(was)[:n])
    try:
        yield
    finally:
        os.sched_setaffinity(0, was)


def crf_rounding(args, checkouts: dict, work: Path) -> list[str]:
    """Rows: ``crf`` on S = a power of four sentences (1/S, λ/S and √(1/S) exact in
    floating point, as L-BFGS-B's Cholesky factors need), in one process each and over
    the usable cores: where the mean per sentence is the only difference, the arrays
    are bit for bit the same."""
    s = args.crf_check
    train = head(data_path("conll2000", "train.txt"), work / "pow2.txt", s)
    base = ["joint", "train", "--train", train, "--collapse-pos", "--np-only", "--quiet",
            "--algorithm", "crf", "--iterations", args.crf_iter]
    argv = {"before": base + ["--l2", repr(args.l2)],
            "after": base + ["--l2", repr(args.l2 / s)]}
    rows = []
    for n in (1, None):
        files = {w: work / f"pow2-{n}-{w}.npz" for w in WHO}
        with cores(n):
            train_both(checkouts, argv, files)
        k = 1 if n == 1 else min(len(os.sched_getaffinity(0)), s // 50)
        rows.append(f"| {s} | {k} | {same_model(files['before'], files['after'])[0]} |")
    return rows


def separable(args, checkouts: dict, work: Path) -> list[str]:
    """Rows: the perceptron and MMVP on a training set small enough to be separated,
    ``--separable-epochs`` epochs asked of both checkouts; the epochs the after
    checkout ran (it stops after an epoch without a mistake, the registry's perceptron
    convention), and the before checkout trained for exactly those epochs."""
    train = head(data_path("conll2000", "train.txt"), work / "sep.txt", args.separable)
    rows = []
    for alg in ("perceptron", "mmvp"):
        base = ["joint", "train", "--train", train, "--collapse-pos", "--np-only", "--quiet",
                "--algorithm", alg]
        files = {w: work / f"sep-{alg}-{w}.npz" for w in WHO}
        train_both(checkouts, {w: base + ["--iterations", args.separable_epochs]
                               for w in WHO}, files)
        ran = model_arrays(files["after"])[0]["settings"]["iteration"]
        again = work / f"sep-{alg}-before-{ran}.npz"
        cli(checkouts["before"], *base, "--iterations", ran, "-o", again)
        rows.append(f"| {alg} | {args.separable_epochs} | {ran} | "
                    f"{same_model(files['before'], files['after'])[0]} | "
                    f"{same_model(again, files['after'])[0]} |")
    return rows


def joint(args, checkouts: dict, work: Path) -> tuple[str, str]:
    train = head(data_path("conll2000", "train.txt"), work / "train.txt", args.sentences)
    heldout = head(data_path("conll2000", "dev.txt"), work / "heldout.txt", args.heldout)
    test = head(data_path("conll2000", "test.txt"), work / "test.txt", args.test_limit)
    s = sum(1 for ln in train.read_text().split("\n\n") if ln.strip())
    base = ["joint", "train", "--train", train, "--collapse-pos", "--np-only", "--quiet"]
    commands, models = {}, {}
    for alg in ("perceptron", "mmvp", "crf"):
        extra = {w: (["--iterations", args.crf_iter] if alg == "crf" else
                     ["--iterations", args.iterations, "--calibrate", heldout])
                 for w in WHO}
        if alg == "crf":
            extra["before"] += ["--l2", repr(args.l2)]
            extra["after"] += ["--l2", repr(args.l2 / s)]
        commands[alg] = {w: [*base, "--algorithm", alg, *extra[w]] for w in WHO}
        models[alg] = {w: work / f"{alg}-{w}.npz" for w in WHO}
        train_both(checkouts, commands[alg], models[alg])
    trows, drows, seen = [], [], {}
    for alg, files in models.items():
        arrays, meta = same_model(files["before"], files["after"])
        trows.append(f"| {alg} | {arrays} | {meta} | {temperature(files['before'])} / "
                     f"{temperature(files['after'])} | "
                     f"{settings_differing(files['before'], files['after'])} |")
        for trained in WHO:
            for decoder in ("map", "meu"):
                argv = ["joint", "decode", "--model", files[trained], "--input", test,
                        "--decoder", decoder]
                cols = [cli(checkouts[w], *argv).stdout for w in WHO]
                figs = [json.loads(cli(checkouts[w], *argv, "--json").stdout) for w in WHO]
                shown = ", ".join(f"{k} {v:.4f}" for k, v in figs[1].items())
                seen[trained, decoder] = cols[1]
                cross = differing(seen["before", decoder], cols[1])
                drows.append(f"| {alg}, trained {trained} | {decoder} | "
                             f"{len(cols[0].splitlines())} | {differing(*cols)} | "
                             f"{'yes' if figs[0] == figs[1] else 'NO: ' + str(figs[0])} | "
                             f"{cross} | {shown} |")
    timing = [(f"joint train --algorithm {alg}", commands[alg]["before"] + ["-o", work / "t.npz"],
               commands[alg]["after"] + ["-o", work / "t.npz"]) for alg in models]
    timing += [(f"joint decode --decoder {d} (mmvp model)",
                ["joint", "decode", "--model", models["mmvp"]["before"], "--input", test,
                 "--decoder", d, "-o", work / "d.txt"], None) for d in ("map", "meu")]
    setting = (f"CoNLL-2000: the first {s} training sentences{' (set D)' * (s == 447)}, "
               f"POS collapsed, NP "
               f"chunks only; perceptron and MMVP {args.iterations} epochs, calibrated on "
               f"the first {args.heldout} dev sentences; crf {args.crf_iter} L-BFGS "
               f"iterations, λ = {args.l2:g} on the summed NLL by the checkout before, "
               f"`--l2 {args.l2 / s!r}` (= {args.l2:g}/{s}, the same penalty on the mean) "
               f"by the checkout after (with its defaults: OUTPUT.ckpt every 10 steps); "
               f"test: the first {args.test_limit} test sentences.")
    sep = separable(args, checkouts, work)
    setting += (f"\n\nA training set the perceptron separates (the first {args.separable} "
                f"training sentences, the same reading): the checkout after stops after "
                f"the first epoch without a mistake (the registry's perceptron convention, "
                f"as the CRF's averaged perceptron did before), the checkout before ran "
                f"every epoch asked; the before checkout trained for the epochs the after "
                f"one ran:\n\n| algorithm | epochs asked | epochs run, after | arrays, "
                f"before vs after | arrays, before with the epochs run vs after |\n"
                f"|---|---|---|---|---|\n" + "\n".join(sep))
    if args.crf_check:
        setting += (f"\n\nWhy `crf` is not bit for bit the same: the checkout before "
                    f"summed the NLL over interleaved shards of the sentences (i, i+k, ...) and "
                    f"minimised the sum + λ‖w‖²; the one after sums contiguous runs of about "
                    f"equal tokens and minimises the mean + (λ/S)‖w‖²: the same iterates "
                    f"in exact arithmetic (L-BFGS-B is invariant to scaling the objective), "
                    f"other roundings in floating point. With S a power of four the scaling "
                    f"is exact (1/S and λ/S, and √(1/S) in L-BFGS-B's Cholesky factors; a "
                    f"power of two with an odd exponent is not); `crf`, {args.crf_iter} "
                    f"iterations, the same λ:\n\n"
                    f"| S | processes (k) | arrays, before vs after |\n|---|---|---|\n"
                    + "\n".join(crf_rounding(args, checkouts, work)))
    return setting, tables(trows, drows, timing, checkouts, args.runs,
                           "| model, trained by | decoder | lines | lines differing, "
                           "before vs after checkout | `--json` equal | lines differing from the "
                           "before-trained file's (after checkout) | figures (after) |")


def crf_speed(args, checkouts: dict, work: Path) -> tuple[str, str]:
    """``joint train --algorithm crf`` timed in pairs in one process (both checkouts
    limited to one core: neither spreads the NLL) and over the usable cores: wall
    seconds and CPU seconds (user + system, the command and its workers)."""
    from bench_segments import _cli          # wall, CPU (with the workers) and peak
    train = head(data_path("conll2000", "train.txt"), work / "train.txt", args.sentences)
    s = sum(1 for ln in train.read_text().split("\n\n") if ln.strip())
    base = ["joint", "train", "--train", str(train), "--collapse-pos", "--np-only",
            "--quiet", "--algorithm", "crf", "--iterations", str(args.crf_iter), "-o",
            str(work / "t.npz")]
    argv = {"before": base + ["--l2", repr(args.l2)], "after": base + ["--l2", repr(args.l2 / s)]}
    rows = []
    for n, label in ((1, "one process (one core each)"),
                     (None, "spread over the usable cores (defaults)")):
        runs = {w: [] for w in WHO}
        with cores(n):
            for _ in range(args.runs):
                for w in WHO:
                    runs[w].append(_cli(str(checkouts[w]), argv[w], str(work))[:2])
        med = {w: [statistics.median(x[i] for x in runs[w]) for i in (0, 1)] for w in WHO}
        ratio = [statistics.median(a[i] / b[i] for a, b in zip(runs["after"], runs["before"]))
                 for i in (0, 1)]
        rows.append(f"| {label} | {med['before'][0]:.1f} ({med['before'][1]:.1f}) | "
                    f"{med['after'][0]:.1f} ({med['after'][1]:.1f}) | {ratio[0]:.2f} "
                    f"({ratio[1]:.2f}) |")
    setting = (f"`joint train --algorithm crf --iterations {args.crf_iter}` on the first {s} "
               f"CoNLL-2000 training sentences (POS collapsed, NP only; λ as in the "
               f"invariants section), the two checkouts in turn ({args.runs} pairs; medians "
               f"of the wall seconds of the whole command and, in parentheses, of its CPU "
               f"seconds, user + system, its worker processes included, less sensitive to "
               f"other load on the machine); with {args.crf_iter} iterations the after "
               f"checkout writes no checkpoint (every 10).")
    return setting, ("| where the NLL is computed | before s | after s | after / before "
                     "(median of pairs) |\n|---|---|---|---|\n" + "\n".join(rows))


# ----------------------------------------------------------------- segment
def segment(args, checkouts: dict, work: Path) -> tuple[str, str]:
    train = slice_jsonl(data_path("genia", "train.jsonl"), work / "train.jsonl",
                        args.sentences)
    dev = slice_jsonl(data_path("genia", "dev.jsonl"), work / "dev.jsonl", args.heldout)
    test = slice_jsonl(data_path("genia", "test.jsonl"), work / "test.jsonl", args.test_limit)
    command = ["segment", "train", "--train", train, "--dev", dev, "--epochs", args.epochs,
               "--quiet"]
    files = {w: work / f"segment-{w}.npz" for w in WHO}
    train_both(checkouts, {w: command for w in WHO}, files)
    arrays, meta = same_model(files["before"], files["after"])
    trows = [f"| segment | {arrays} | {meta} | – | "
             f"{settings_differing(files['before'], files['after'])} |"]
    drows, seen = [], {}
    for trained in WHO:
        for decoder in ("threshold", "meu"):
            outs, figs = [], []
            for w in WHO:
                pred = work / f"pred-{trained}-{decoder}-{w}.jsonl"
                cli(checkouts[w], "segment", "decode", "--model", files[trained], "--input",
                    test, "--decoder", decoder, "-o", pred)
                outs.append(pred.read_text(encoding="utf-8"))
                figs.append(json.loads(cli(checkouts[w], "segment", "eval", test, pred,
                                           "--json").stdout))
            seen[trained, decoder] = outs[1]
            cross = differing(seen["before", decoder], outs[1])
            overall = figs[1].get("overall", figs[1])
            shown = ", ".join(f"{k} {v:.4f}" for k, v in overall.items()
                              if isinstance(v, float))
            drows.append(f"| trained {trained} | {decoder} | {len(outs[0].splitlines())} | "
                          f"{differing(*outs)} | {'yes' if figs[0] == figs[1] else 'NO'} | "
                          f"{cross} | {shown} |")
    out = ["-o", work / "t.npz"]
    timing = [(f"segment train --epochs {args.epochs}", command + out, None),
              (f"segment train --epochs {args.epochs}, after with --checkpoint-every 0",
               command + out, command + ["--checkpoint-every", 0] + out)]
    timing += [(f"segment decode --decoder {d}",
                ["segment", "decode", "--model", files["before"], "--input", test,
                 "--decoder", d, "-o", work / "d.jsonl"], None) for d in ("threshold", "meu")]
    setting = (f"GENIA: the first {args.sentences} training sentences, {args.epochs} epochs "
               f"(seed 0, averaged, 2**20 hashed features per type), dev F and the MEU "
               f"calibration on the first {args.heldout} dev sentences (the after checkout with "
               f"its defaults: OUTPUT.ckpt and the learner's state every epoch, unless "
               f"said otherwise); test: the first "
               f"{args.test_limit} test sentences; `segment eval --json` of each output by "
               f"the checkout that wrote it.")
    return setting, tables(trows, drows, timing, checkouts, args.runs,
                           "| model, trained by | decoder | lines | lines differing, "
                           "before vs after checkout | `segment eval --json` equal | lines "
                           "differing from the before-trained file's (after checkout) | "
                           "figures (after) |")


def tables(trows: list[str], drows: list[str], timing: list, checkouts: dict, runs: int,
           decode_head: str) -> str:
    """The three tables: training, decoding, and the paired times."""
    speed = []
    for label, argv, after_argv in timing:
        b, a, r = paired(checkouts["before"], checkouts["after"], argv, runs, after_argv)
        speed.append(f"| {label} | {b:.1f} | {a:.1f} | {r:.2f} |")
    return ("Training by each checkout, the model files compared:\n\n"
            "| model | arrays, before vs after | metadata but settings | temperature "
            "before / after | settings keys differing |\n|---|---|---|---|---|\n"
            + "\n".join(trows)
            + "\n\nEach model file decoded by each checkout:\n\n" + decode_head
            + "\n|---|---|---|---|---|---|---|\n" + "\n".join(drows)
            + f"\n\nSpeed, the two checkouts in turn ({runs} pairs; medians; seconds of the "
              "whole command):\n\n| command | before | after | after / before (median of "
              "pairs) |\n|---|---|---|---|\n" + "\n".join(speed))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=("joint", "segment"), required=True)
    ap.add_argument("--before", required=True, type=Path,
                    help="a checkout of the commit before the learning loop")
    ap.add_argument("--after", type=Path, default=HERE,
                    help="the checkout after (default: this one)")
    ap.add_argument("--sentences", type=int, default=None,
                    help="training sentences (joint: 447, set D; segment: 2000)")
    ap.add_argument("--heldout", type=int, default=500,
                    help="dev sentences: calibration (joint), dev F and calibration "
                         "(segment)")
    ap.add_argument("--test-limit", type=int, default=300)
    ap.add_argument("--iterations", type=int, default=10, help="joint perceptron/mmvp epochs")
    ap.add_argument("--crf-iter", type=int, default=10, help="joint crf L-BFGS iterations")
    ap.add_argument("--l2", type=float, default=0.5, help="joint crf λ on the summed NLL")
    ap.add_argument("--separable", type=int, default=20,
                    help="joint: training sentences of the separable check")
    ap.add_argument("--separable-epochs", type=int, default=30,
                    help="joint: epochs asked in the separable check")
    ap.add_argument("--crf-check", type=int, default=256,
                    help="joint: training sentences (a power of four) of the crf rounding "
                         "check (0: none)")
    ap.add_argument("--epochs", type=int, default=2, help="segment epochs")
    ap.add_argument("--runs", type=int, default=3, help="paired timing runs")
    ap.add_argument("--part", choices=("invariants", "crf-speed"), default="invariants",
                    help="crf-speed (--model joint): crf training timed in one process and "
                         "spread, its own section")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.part == "crf-speed" and args.model != "joint":
        ap.error("--part crf-speed is of --model joint")
    if args.sentences is None:
        args.sentences = 447 if args.model == "joint" else 2000
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run = crf_speed if args.part == "crf-speed" else \
            joint if args.model == "joint" else segment
        setting, body = run(args, checkouts, Path(tmp))
        total = time.perf_counter() - t0
    body = f"{setting}\n\n{body}\n\n({total:.0f} s in all.)"
    print(body)
    if not args.no_write:
        write_section("Learning loop (issue 33): joint crf training, one process and spread"
                      if args.part == "crf-speed" else
                      f"Learning loop (issue 33): invariants of the {args.model} model", body)


if __name__ == "__main__":
    main()
