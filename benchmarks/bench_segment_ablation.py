"""Where the multilabel segmenter's points go on CoNLL-2000 NP chunks (issue 37;
McDonald, Crammer & Pereira 2005, Table 1): a dev ablation of the segment model.

Each configuration trains :class:`fstchunk.SegmentModel` on the first ``--train-limit``
sentences of conll2000/train.txt (NP chunks only, the other chunks read as O, as in
``bench_segments.py --section np``) for ``--epochs`` epochs and measures F on the first
``--dev-limit`` sentences of dev.txt after every epoch, of the averaged weights and of
the last weights (the history of the training loop).  The factors: the predicate set
(``mcp05``, Sha & Pereira's ``sp03``, both), the §3.2.1 restrictions in training and
decoding, k of the top-k constraints (k = n against a small k), Hildreth's sweep cap
(``max_sweeps``), averaging (the last weights' column), the number of epochs (the per
epoch columns) and the decision threshold on dev (Figure 5's curve, read off the top-k
candidates of the chosen configuration).  No test file is read.

Runs are slow on a loaded machine: ``--configs`` picks some (comma-separated names of
:data:`CONFIGS`), each appends one JSON line to ``--store``; ``--write`` composes the
RESULTS.md section from the store.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_segment_ablation.py \\
        --configs mcp05,sp03 --store /tmp/abl.jsonl
    FSTCHUNK_DATA=../shared/data python benchmarks/bench_segment_ablation.py \\
        --store /tmp/abl.jsonl [--store /tmp/other.jsonl] --write

On all of a corpus (``--full np|ned|genia``, issue 37's Table 1 and GENIA re-check):
``--configs default,default-r`` trains with epochs chosen on all of dev (each epoch's dev
F to STORE.epochs, the best model so far beside the store); ``--finish`` then reads the
test file once and writes the section (GENIA: also MEU and Figure 5's dev panel);
``--curve`` (dev only) and ``--decisions`` (test by the threshold and MEU fixed on dev)
follow it.  ``--cost --before DIR``: seconds per epoch against another checkout
(:mod:`segment_cost`).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

from bench_segments import _chunks
from common import data_path, machine, write_section
from segment_cost import cost, full_epochs
from fstchunk import SegmentModel
from fstchunk.models.segment import train as segment_train
from fstchunk.structures.segments import kbest
from fstchunk.models.segment.decisions import THRESHOLDS, best_threshold, threshold_curve
from fstchunk.io.segments import read_jsonl
from fstchunk.evaluation.segments import score_segments

#: a CONFIGS keyword that is not SegmentModel's: the tolerance of Hildreth's KKT test
#: (:func:`fstchunk.models.segment.train.hildreth`, 1e-8 in the library), patched in
TOL = "hildreth_tol"
#: a CONFIGS keyword that is not SegmentModel's: the learner's top k times this factor
WIDER = "train_k_factor"
#: name -> (description, SegmentModel keywords)
CONFIGS = {
    "mcp05": ("mcp05 predicates (issue 19's), k = n, averaged, ≤ 1000 sweeps",
              {"predicates": "mcp05"}),
    "sp03": ("sp03 predicates (Sha & Pereira 2003)", {"predicates": "sp03"}),
    "both": ("mcp05 + sp03 predicates", {"predicates": "mcp05+sp03"}),
    "mcp05-r": ("mcp05, restricted (no-overlap, contiguous)",
                {"predicates": "mcp05", "restrictions": "no-overlap,contiguous"}),
    "sp03-r": ("sp03, restricted (no-overlap, contiguous)",
               {"predicates": "sp03", "restrictions": "no-overlap,contiguous"}),
    "sp03-k3": ("sp03, k = 3 (not n)", {"predicates": "sp03", "k": 3}),
    "sp03-s1": ("sp03, Hildreth capped at 1 sweep", {"predicates": "sp03", "max_sweeps": 1}),
    "sp03-s5": ("sp03, Hildreth capped at 5 sweeps", {"predicates": "sp03", "max_sweeps": 5}),
    "sp03-tol2": ("sp03, Hildreth's KKT tolerance 1e-2 (not 1e-8)",
                  {"predicates": "sp03", TOL: 1e-2}),
    "sp03-tol4": ("sp03, Hildreth's KKT tolerance 1e-4 (not 1e-8)",
                  {"predicates": "sp03", TOL: 1e-4}),
    "sp03-k2n": ("sp03, top 2n in training (n incorrect segments at least; decoding k = n)",
                 {"predicates": "sp03", WIDER: 2}),
    "default": ("multilabel (the defaults of `segment train`: mcp05+sp03, k = n, averaged)",
                {}),
    "default-d22": ("the default with 2**22 hash buckets per type (not 2**20)", {"D": 2 ** 22}),
    "default-r": ("multilabel with restrictions (no-overlap, contiguous; the defaults "
                  "otherwise)", {"restrictions": "no-overlap,contiguous"}),
}


def prf(gold, pred) -> tuple[float, float, float]:
    o = score_segments(gold, pred).overall
    return o.precision, o.recall, o.f()


def run(name: str, args) -> dict:
    tr, dv, _ = _chunks("np", "NP", None)
    tr, dv = tr[:args.train_limit], dv[:args.dev_limit]
    desc, kw = CONFIGS[name]
    kw = dict(kw)
    tol, wider = kw.pop(TOL, 1e-8), kw.pop(WIDER, 1)
    t = time.perf_counter()
    with mock.patch.object(segment_train, "hildreth",
                           functools.partial(segment_train.hildreth, tol=tol)), \
            mock.patch.object(segment_train, "kbest",
                              lambda a, k, g: kbest(a, wider * k, g)):
        m = SegmentModel(**kw, max_iter=args.epochs).fit(tr, dev=dv)
    secs = time.perf_counter() - t
    hist = m.settings_["history"]
    out = {"name": name, "desc": desc, "train": len(tr), "dev": len(dv), "seconds": secs,
           "epochs": len(hist), "avg": [h["dev_f_average"] for h in hist],
           "last": [h["dev_f_last"] for h in hist],
           "updates": [h["updates"] for h in hist]}
    gold = [s.segments for s in dv]
    out["prf"] = prf(gold, m.decode(dv))
    if args.thresholds:                     # Figure 5: P, R, F against the threshold
        out["curve"] = threshold_curve(m, dv, THRESHOLDS)
    return out


def table(rows: list[dict]) -> str:
    E = max(r["epochs"] for r in rows)
    head = ("| configuration | s/epoch | P | R | F (last epoch, averaged) | best epoch | "
            + " | ".join(f"e{e}" for e in range(1, E + 1)) + " |")
    lines = [head, "|" + "---|" * (6 + E)]
    for r in rows:
        best = int(np.argmax(r["avg"])) + 1
        cells = [f"{a:.2f} / {b:.2f}" for a, b in zip(r["avg"], r["last"])]
        p, rc, f = r["prf"]
        lines.append(f"| {r['desc']} | {r['seconds'] / r['epochs']:.0f} | {p:.2f} | {rc:.2f} "
                     f"| {f:.2f} | {best} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(curves: list[dict]) -> Path:
    """Figure 5's panels (P squares, R circles, F line against the threshold), one per
    configuration with a curve; the PNG's path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(curves), figsize=(4 * len(curves), 3.4), squeeze=False)
    for ax, r in zip(axes[0], curves):
        t, p, rc, f = (np.array(c) for c in zip(*r["curve"]))
        ax.plot(t, p, "s-", label="precision")
        ax.plot(t, rc, "o-", label="recall")
        ax.plot(t, f, "-", color="k", label="F")
        ax.set_title(f"NP dev: {r['name']}")
        ax.set_xlabel("threshold")
    axes[0][0].legend()
    path = Path(__file__).resolve().parent / "segment_threshold_np.png"
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path


def plot_meu(curve: dict, name: str) -> Path:
    """Figure 5's panel of one corpus: P, R, F against the threshold, the calibrated
    MEU decision's P, R, F marked (dotted lines; it is no single threshold)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.6))
    t, p, rc, f = (np.array(c) for c in zip(*curve["curve"]))
    for y, style, label, color in ((p, "s-", "precision", "C0"), (rc, "o-", "recall", "C1"),
                                   (f, "-", "F", "k")):
        ax.plot(t, y, style, color=color, label=label)
    for y, color in zip(curve["meu"], ("C0", "C1", "k")):
        ax.axhline(y, ls=":", color=color)
    ax.set_title(f"{curve['name']}\nMEU (calibrated, dotted): P {curve['meu'][0]:.1f}, "
                 f"R {curve['meu'][1]:.1f}, F {curve['meu'][2]:.1f}", fontsize=9)
    ax.set_xlabel("threshold")
    ax.legend(fontsize=8)
    path = Path(__file__).resolve().parent / name
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path


def _runs(store: str) -> list[dict]:
    """The runs of a store in :data:`CONFIGS` order (the last run of a name counts)."""
    rows = {}
    for line in open(store, encoding="utf-8"):
        r = json.loads(line)
        rows[r["name"]] = r
    return [rows[n] for n in CONFIGS if n in rows]


def write(args) -> None:
    body = ["Each table: CoNLL-2000 NP chunks only (other chunks read as O), the first N "
            "training sentences of train.txt, F on the first M sentences of dev.txt after "
            "each epoch (averaged weights / last weights), k = n, threshold 0, D = 2**20, "
            "seed 0 unless the row says otherwise; no test file read. Seconds per epoch "
            "include dev F twice per epoch and were measured while other jobs loaded the "
            "machine (load average 9–13 on 2 cores): compare them within a table only. "
            "P, R and F: the last epoch's averaged weights."]
    curves = []
    for store in args.store:
        order = _runs(store)
        body += [f"\nN = {order[0]['train']} training sentences, M = {order[0]['dev']} dev "
                 f"sentences, {max(r['epochs'] for r in order)} epochs:\n", table(order)]
        curves += [r for r in order if "curve" in r]
    for r in curves:
        body += [f"\nFigure 5 analogue, {r['desc']} (N = {r['train']}, last epoch, averaged "
                 f"weights, M = {r['dev']} dev sentences): P / R / F against the decision "
                 f"threshold\n",
                 "| threshold | P | R | F |", "|---|---|---|---|",
                 *(f"| {t + 0.0:+.1f} | {p:.2f} | {rc:.2f} | {f:.2f} |" for t, p, rc, f in r["curve"])]
    if curves:
        body.append(f"\nPlot: `benchmarks/{plot(curves).name}`.")
    text = "\n".join(body)
    print(text)
    write_section("Segments (issue 37): dev ablation on CoNLL-2000 NP chunks", text)


# ------------------------------------------------------------ full data (--full)
def corpus(name: str, limit: int | None = None):
    """train, dev, test of ``name``: ``np`` (CoNLL-2000 NP chunks), ``ned`` or ``genia``
    (the first ``limit`` sentences of each: a smoke test)."""
    if name == "genia":
        return tuple(read_jsonl(data_path("genia", f"{f}.jsonl"))[:limit]
                     for f in ("train", "dev", "test"))
    return _chunks(name, "NP" if name == "np" else None, limit)


def full_run(name: str, args) -> None:
    """Train configuration ``name`` on all of ``--full``'s training set, at most
    ``--epochs`` epochs, dev F of all of dev after each (the Trainer's ``select="dev"``).
    After every epoch a line goes to STORE.epochs and the model of the best dev F so
    far to STORE.CORPUS.NAME.npz, so a run cut short still has its figures; no test
    file is read (``--finish`` does that, once).  ``--patience N``: stop once dev F
    has not improved for N epochs (convergence on dev); the trainer's checkpoint
    beside the store lets a stopped run resume (``--resume``)."""
    tr, dv, _ = corpus(args.full, args.full_limit)
    desc, kw = CONFIGS[name]
    best_path = f"{args.store[0]}.{args.full}.{name}.npz"
    best = {"f": -1.0}
    if args.resume:                     # the best of the epochs before the stop
        done = epochs_of(args.store[0], args.full, name)
        top = max(done, key=lambda r: r["dev_f"])
        best.update(f=top["dev_f"], epoch=top["epoch"])

    def keep(p) -> None:
        h = p.model._learner.history[-1]
        rec = {"corpus": args.full, "name": name, "epoch": p.iteration,
               "dev_avg": h.get("dev_f_average"), "dev_last": h.get("dev_f_last"),
               "dev_f": p.dev_f,
               "updates": h["updates"], "seconds": p.seconds, "train": len(tr),
               "dev": len(dv)}
        with open(args.store[0] + ".epochs", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(json.dumps(rec), file=sys.stderr, flush=True)
        if p.dev_f > best["f"]:
            best.update(f=p.dev_f, epoch=p.iteration)
            p.model.settings_["best_epoch"] = p.iteration
            p.model.save(best_path)
        if args.patience and p.iteration - best["epoch"] >= args.patience:
            raise StopTraining(f"dev F flat for {args.patience} epochs")

    ckpt = f"{args.store[0]}.{args.full}.{name}.ckpt"
    try:
        SegmentModel(**kw, max_iter=args.epochs).fit(tr, dev=dv, select="dev",
                                                     callbacks=[keep], checkpoint=ckpt,
                                                     resume=args.resume)
    except StopTraining as e:
        print(f"{name}: {e}", file=sys.stderr)


class StopTraining(Exception):
    """Raised by ``full_run``'s callback to end a run converged on dev."""


def epochs_of(store: str, corpus_name: str, name: str) -> list[dict]:
    """The epoch lines of a run (the last run's, where one was restarted)."""
    rows = [r for r in map(json.loads, open(store + ".epochs", encoding="utf-8"))
            if r["corpus"] == corpus_name and r["name"] == name]
    start = max(i for i, r in enumerate(rows) if r["epoch"] == 1)
    return rows[start:]


def dev_curve(m: SegmentModel, dv, name: str) -> dict:
    """Figure 5 on dev: P, R, F of the threshold decoder at each of :data:`THRESHOLDS`
    (the top-k candidates computed once) and of MEU (calibrated on dev: in sample)."""
    if not m.calibrated:
        m.calibrate(dv, source="dev")
    return {"name": name, "curve": threshold_curve(m, dv, THRESHOLDS),
            "meu": prf([s.segments for s in dv], m.decode(dv, decoder="meu"))}


def curve_text(curve: dict, args, png: str) -> list[str]:
    """The curve kept beside the store, plotted to ``png``, and its table's lines."""
    Path(f"{args.store[0]}.{args.full}.curve.json").write_text(json.dumps(curve))
    plot_meu(curve, png)
    return [f"\nFigure 5 analogue, {curve['name']} (the default, best epoch, averaged "
            f"weights): P / R / F against the threshold; MEU (calibrated on dev, in sample): "
            f"P {curve['meu'][0]:.2f}, R {curve['meu'][1]:.2f}, F {curve['meu'][2]:.2f}. "
            f"Plot: `benchmarks/{png}`.\n",
            "| threshold | P | R | F |", "|---|---|---|---|",
            *(f"| {t + 0.0:+.1f} | {p:.2f} | {rc:.2f} | {f:.2f} |"
              for t, p, rc, f in curve["curve"])]


def curve_only(args) -> None:
    """``--curve``: Figure 5 on all of dev for the best-on-dev model of ``--configs``
    (one name) on ``--full``; no test file read."""
    m = SegmentModel.load(f"{args.store[0]}.{args.full}.{args.configs}.npz")
    _, dv, _ = corpus(args.full, args.full_limit)
    name = {"np": "NP dev", "ned": "Dutch NER dev", "genia": "GENIA dev"}[args.full]
    text = "\n".join(curve_text(dev_curve(m, dv, f"{name}, all training data"), args,
                                 f"segment_threshold_{args.full}_full{args.tag}.png"))
    print(text)
    write_section(f"Segments (issue 37): Figure 5 on {name}, all training data"
                  f"{_title_tag(args)}", text)


def decisions(args) -> None:
    """``--decisions``: the saved best-on-dev model of ``--configs`` (one name) on
    ``--full`` decoded on test by the two decision rules fixed on dev alone, after
    ``--curve``: the threshold of the best dev F on its grid (ties: nearest 0) and MEU
    calibrated on dev; one reading of the test file, a section of its own."""
    from bench_segments import HEAD, row
    m = SegmentModel.load(f"{args.store[0]}.{args.full}.{args.configs}.npz")
    curve = json.loads(Path(f"{args.store[0]}.{args.full}.curve.json").read_text())
    best = best_threshold(curve["curve"])
    _, dv, te = corpus(args.full, args.full_limit)
    m.calibrate(dv, source="dev")
    gold = [s.segments for s in te]
    idx = np.random.default_rng(0).integers(0, len(te), size=(1000, len(te)))
    rows = [row(f"multilabel, threshold {best[0] + 0.0:+.1f} (the best dev F of the grid)", gold,
                m.decode(te, threshold=best[0]), idx),
            row("multilabel, MEU (calibrated on dev)", gold, m.decode(te, decoder="meu"), idx)]
    text = "\n".join([
        f"The model of the first row of the Table 1 section ({args.configs}, best epoch on "
        f"dev), with the decision rule fixed on dev before this one reading of the "
        f"{len(te)} test sentences: the threshold whose dev F is highest among "
        f"{', '.join(f'{c[0] + 0.0:+.1f}' for c in curve['curve'])} (dev P / R / F there "
        f"{best[1]:.2f} / {best[2]:.2f} / {best[3]:.2f}; at 0: "
        + " / ".join(f"{x:.2f}" for x in next(c for c in curve["curve"] if c[0] == 0)[1:])
        + "), and MEU under Platt probabilities fitted on dev.\n", *HEAD, *rows])
    print(text)
    write_section(f"Segments (issue 37): {args.full} test, decision rules fixed on dev"
                  f"{_title_tag(args)}", text)


def finish(args) -> None:
    """Read the test file once: each configuration's best-on-dev model (``--configs``)
    decoded on test (GENIA also by MEU, calibrated on dev, and Figure 5's dev panel);
    the RESULTS.md section of ``--full``."""
    from bench_segments import HEAD, PAPER, row
    _, dv, te = corpus(args.full, args.full_limit)
    gold = [s.segments for s in te]
    idx = np.random.default_rng(0).integers(0, len(te), size=(1000, len(te)))
    rows, notes, curve = [], [], None
    for name in args.configs.split(","):
        store = next((st for st in args.store if Path(f"{st}.{args.full}.{name}.npz").exists()),
                     None)
        if store is None:
            sys.exit(f"no model of {name} on {args.full} beside any --store: run --full first")
        m = SegmentModel.load(f"{store}.{args.full}.{name}.npz")
        ep = epochs_of(store, args.full, name)
        desc = CONFIGS[name][0]
        paper = PAPER.get(args.full, {}).get("multilabel, restricted" if m.restrictions_[
            "no_overlap"] else "multilabel", "—")
        rows.append(row(f"{desc}, threshold 0", gold, m.decode(te), idx,
                        paper if isinstance(paper, str) else f"{paper:.2f}"))
        secs = np.diff([0.0] + [r["seconds"] for r in ep])
        notes.append(f"{desc}: epoch {m.settings_['best_epoch']} of {len(ep)} run kept by dev F "
                     f"(dev F averaged / last weights per epoch: "
                     + ", ".join(f"{r['dev_avg']:.2f}/{r['dev_last']:.2f}" for r in ep)
                     + f"); {np.median(secs):.0f} s per epoch (median; dev F of both weights "
                     f"each epoch included)")
        if args.full == "genia":
            m.calibrate(dv, source="dev")
            rows.append(row(f"{desc}, MEU (calibrated on dev)", gold, m.decode(te, decoder="meu"),
                            idx))
            curve = dev_curve(m, dv, "GENIA dev")
    body = [f"{args.full}: all {ep[0]['train']} "
            f"training sentences, epochs chosen by F on all {len(dv)} dev sentences "
            f"(select dev), then the {len(te)} test sentences read once. F ± bootstrap SE "
            f"(1000 resamples).\n", *HEAD, *rows, "", *(f"- {n}" for n in notes)]
    if curve is not None:
        body += curve_text(curve, args, f"segment_threshold_genia{args.tag}.png")
    text = "\n".join(body)
    print(text)
    title = {"np": "Table 1 on all of CoNLL-2000 NP chunks", "ned": "Table 1 on CoNLL-2002 "
             "Dutch NER", "genia": "GENIA with the new default"}[args.full]
    write_section(f"Segments (issue 37): {title}{_title_tag(args)}", text)


def _title_tag(args) -> str:
    """``--tag`` in a section title: ``_to-convergence`` -> ``, to convergence``."""
    return args.tag.replace("_", ", ").replace("-", " ")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--train-limit", type=int, default=1000)
    ap.add_argument("--dev-limit", type=int, default=500)
    ap.add_argument("--thresholds", action="store_true",
                    help="also P/R/F against the threshold (Figure 5) for each config")
    ap.add_argument("--store", action="append", required=True,
                    help="JSON lines file of the runs (--write: one table per store)")
    ap.add_argument("--write", action="store_true", help="compose the RESULTS.md section")
    ap.add_argument("--full", choices=("np", "ned", "genia"),
                    help="train --configs on all of this corpus (dev F each epoch)")
    ap.add_argument("--full-limit", type=int, default=None,
                    help="with --full: the first N sentences of each set (a smoke test)")
    ap.add_argument("--curve", action="store_true",
                    help="with --full: Figure 5 on dev of the saved best model (no test)")
    ap.add_argument("--decisions", action="store_true",
                    help="with --full, after --curve: test by the dev-fixed threshold and MEU")
    ap.add_argument("--patience", type=int, default=0,
                    help="with --full: stop when dev F has not improved for N epochs")
    ap.add_argument("--resume", action="store_true", help="with --full: resume a run")
    ap.add_argument("--tag", default="",
                    help="with --finish: a suffix of the section's title and plot (a rerun)")
    ap.add_argument("--finish", action="store_true",
                    help="with --full: read its test file once, write the section")
    ap.add_argument("--cost", action="store_true", help="seconds per epoch, --before vs this")
    ap.add_argument("--before", help="--cost: the checkout to compare with")
    ap.add_argument("--before-label", default="the checkout at --before")
    ap.add_argument("--before-has-sp03", action="store_true",
                    help="--cost: the --before checkout has the mcp05+sp03 predicates")
    ap.add_argument("--cost-limit", type=int, default=1000)
    ap.add_argument("--cost-full", choices=("genia", "np"),
                    help="seconds per epoch of this checkout on all of a training set")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    if args.cost:
        return cost(args)
    if args.cost_full:
        return full_epochs(args)
    if args.write:
        return write(args)
    if args.full and args.curve:
        return curve_only(args)
    if args.full and args.decisions:
        return decisions(args)
    if args.full and args.finish:
        return finish(args)
    if args.full:
        for name in args.configs.split(","):
            full_run(name, args)
        return None
    for name in args.configs.split(","):
        if name not in CONFIGS:
            ap.error(f"unknown configuration {name!r}; use {', '.join(CONFIGS)}")
        r = run(name, args)
        print(json.dumps(r), file=sys.stderr)
        with open(args.store[0], "a", encoding="utf-8") as fh:
            fh.write(json.dumps(r) + "\n")
    print(machine())


if __name__ == "__main__":
    sys.exit(main())
