"""The report of ``bench_active.py --report``: RESULTS.md sections and plots from the
JSONL store of finished rounds (the runs themselves are in :mod:`bench_active`).

Per corpus: test F by share annotated, mean ± standard error over the seeds that
finished the round (SE = s / √k, s the sample standard deviation of the k seeds' F),
and the first share at which each strategy's mean F — and each seed's F — reaches
95 % (the issue's mark; also 98 %) of the full-data F; a plot of the mean curves with
a ±1 SE band.  The partial
arm: F and tokens annotated per round, partial against full annotation of the same
picks, and a plot of F against tokens annotated.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from common import write_section

HERE = Path(__file__).resolve().parent
NAMES = {"ned": "ned.train → ned.testb (CoNLL-2002 Dutch NER)",
         "conll2000": "CoNLL-2000 train → test (chunking)"}


def load(paths: str) -> list[dict]:
    """The records of the stores (comma-separated), each round once (a store copied to
    start a second process holds the first one's records too)."""
    out = {}
    for p in paths.split(","):
        with open(p) as f:
            for r in (json.loads(line) for line in f if line.strip()):
                key = (json.dumps(r["config"], sort_keys=True), r["arm"], r["strategy"],
                       r["seed"], r["round"])
                out.setdefault(key, r)
    return list(out.values())


def mean_se(values: list[float]) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0


def reach(shares: list[float], fs: list[float], target: float | None,
          tokens: list[float] | None = None) -> str:
    """The first share whose F is at least ``target`` (with its tokens if given)."""
    if target is None:
        return "—"
    hit = [k for k, f in enumerate(fs) if f >= target]
    if not hit:
        return f"not by {100 * shares[-1]:.0f} %"
    return f"{100 * shares[hit[0]]:.0f} %" + (
        f" ({tokens[hit[0]] / 1000:.0f}k tokens)" if tokens is not None else "")


def full_f(records: list[dict], corpus: str, given: dict[str, float]) -> tuple[float | None, str]:
    if corpus in given:
        return given[corpus], "given (--full-f)"
    whole = [r for r in records if r["arm"] == "whole" and r["config"]["corpus"] == corpus]
    if whole:
        r = whole[-1]
        return r["f"], (f"measured here: the whole training set, {r['seed']} L-BFGS iterations "
                        f"from θ = 0, {r['config']['features']} features, ML's default λ, "
                        f"MAP ({r['train_s']:.0f} s)")
    return None, "not measured"


def curves_section(records: list[dict], corpus: str, full: float | None, how: str,
                   commands: str) -> None:
    rs = [r for r in records if r["arm"] == "full" and r["config"]["corpus"] == corpus]
    if not rs:
        return
    counts = Counter(json.dumps(r["config"], sort_keys=True) for r in rs)
    cfg = json.loads(counts.most_common(1)[0][0])        # the main run's settings only
    rs = [r for r in rs if r["config"] == cfg]
    by = defaultdict(dict)                       # (strategy) -> {seed: {round: rec}}
    for r in rs:
        by[r["strategy"]].setdefault(r["seed"], {})[r["round"]] = r
    rounds = sorted({r["round"] for r in rs})
    target = None if full is None else 0.95 * full
    head = ("| strategy | seeds | " + " | ".join(
        f"{100 * (cfg['start'] + k * cfg['step']):.0f} %" for k in rounds)
        + " | mean reaches 95 % at | each seed reaches 95 % at | mean reaches 98 % at |"
        "\n|---|---|" + "---|" * len(rounds) + "---|---|---|\n")
    lines, tok_lines, plot = [], [], {}
    for strategy, seeds in by.items():
        cells, shares, means, toks = [], [], [], []
        for k in rounds:
            fs = [c[k]["f"] for c in seeds.values() if k in c]
            if not fs:
                cells.append("")
                continue
            m, se = mean_se(fs)
            cells.append(f"{m:.2f} ± {se:.2f}" + ("" if len(fs) == len(seeds) else
                                                  f" ({len(fs)})"))
            if len(fs) < len(seeds):
                continue            # the mean curve, its mark and the plot: every seed's
            shares.append(np.mean([c[k]["share"] for c in seeds.values()]))
            means.append(m)
            toks.append(np.mean([c[k]["tokens"] for c in seeds.values()]))
            plot.setdefault(strategy, []).append((shares[-1], m, se, len(fs)))
        per_seed = ", ".join(
            f"{s}: " + reach([c[k]["share"] for k in sorted(c)], [c[k]["f"] for k in sorted(c)],
                             target) for s, c in sorted(seeds.items()))
        tok_lines.append(f"| {strategy} | " + " | ".join(
            f"{np.mean([c[k]['tokens'] for c in seeds.values() if k in c]) / 1000:.1f}k"
            if any(k in c for c in seeds.values()) else "" for k in rounds) + " |")
        lines.append(f"| {strategy} | {','.join(map(str, sorted(seeds)))} | "
                     + " | ".join(cells) + f" | {reach(shares, means, target, toks)} | "
                     f"{per_seed} | "
                     + reach(shares, means, None if full is None else 0.98 * full, toks) + " |")
    paired = paired_lines(by, rounds)
    secs = defaultdict(list)
    for r in rs:
        if r["round"]:
            secs[r["strategy"]].append((r["train_s"], r["test_s"], r["pick_s"]))
    timing = "; ".join(f"{s} {np.mean([t[0] for t in v]):.0f} / {np.mean([t[1] for t in v]):.0f}"
                       f" / {np.mean([t[2] for t in v]):.0f}" for s, v in secs.items())
    starts = [r for r in records if r["arm"] == "start" and r["config"] == cfg]
    png = HERE / f"active_learning_{corpus}.png"
    draw(plot, target, corpus, png)
    body = (
        f"{NAMES.get(corpus, corpus)}, features {cfg['features']}, IOB2, ML CRF (default λ), "
        f"MAP decoding, conlleval F. Start: {100 * cfg['start']:.0f} % of the training "
        f"sentences at random (one draw per seed, shared by the strategies, one round-0 "
        f"model per seed: {cfg['first_iter']} L-BFGS iterations from θ = 0); each round "
        f"adds {100 * cfg['step']:.0f} % chosen by the strategy, up to "
        f"{100 * cfg['until']:.0f} %. Every later round trains {cfg['max_iter']} L-BFGS "
        f"iterations on from the last round's θ, the feature map grown to the new "
        f"sentences (`active_sim.warm_start`). expected-f and entropy score a random "
        f"sub-pool of {cfg['candidates']} unlabelled sentences per round "
        f"(random draws from the whole pool)."
        + (f" Slice: first {cfg['limit']} training sentences." if cfg.get("limit") else "")
        + (f" Slice: first {cfg['test_limit']} test sentences." if cfg.get("test_limit") else "")
        + f"\n\nFull-data F: {'—' if full is None else f'{full:.2f}'} ({how}); 95 % of it: "
        + ("—" if target is None else f"{target:.2f}") + ", 98 %: "
        + ("—" if full is None else f"{0.98 * full:.2f}") + ".\n\n"
        + f"Runs: {commands or '(see the command above)'}\n\n"
        "Test F by share of the training sentences annotated, mean ± standard error over "
        "the seeds (a count in brackets: fewer seeds finished that round; such rounds are "
        "left out of the marks and the plot):\n\n"
        + head + "\n".join(lines) + "\n\n"
        + (("Paired differences of test F (the same seed: the same start), mean ± "
            "standard error over the seeds:\n\n| difference | " + " | ".join(
                f"{100 * (cfg['start'] + k * cfg['step']):.0f} %" for k in rounds[1:])
            + " |\n|---|" + "---|" * len(rounds[1:]) + "\n" + paired + "\n\n")
           if paired else "")
        + "Tokens annotated (mean over the seeds; the strategies pick sentences of "
          "different lengths, so equal shares of sentences are not equal work):\n\n"
        + "| strategy | " + " | ".join(f"{100 * (cfg['start'] + k * cfg['step']):.0f} %"
                                     for k in rounds)
        + " |\n|---|" + "---|" * len(rounds) + "\n" + "\n".join(tok_lines) + "\n\n"
        + f"![test F against share annotated](active_learning_{corpus}.png)\n\n"
        + "Mean seconds per round after round 0 (training / test decoding / scoring the "
          "pool), on a shared machine: " + timing + "; round-0 models: "
        + ", ".join(f"seed {r['seed']} {r['train_s']:.0f} s (F {r['f']:.2f})" for r in starts)
        + ".")
    write_section(f"Active learning (issue 36): {corpus}", body)


def paired_lines(by: dict, rounds: list[int]) -> str:
    """Rows of F(a) − F(b) paired by seed, for each pair of strategies (several seeds)."""
    out = []
    names = list(by)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            seeds = sorted(set(by[a]) & set(by[b]))
            if len(seeds) < 2:
                continue
            cells = []
            for k in rounds[1:]:
                d = [by[a][s][k]["f"] - by[b][s][k]["f"] for s in seeds
                     if k in by[a][s] and k in by[b][s]]
                if len(d) < len(seeds):
                    cells.append("")
                    continue
                m, se = mean_se(d)
                cells.append(f"{m:+.2f} ± {se:.2f}")
            out.append(f"| {a} − {b} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def draw(plot: dict, target: float | None, corpus: str, png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for strategy, pts in plot.items():
        x = 100 * np.array([p[0] for p in pts])
        m, se = np.array([p[1] for p in pts]), np.array([p[2] for p in pts])
        k = max(p[3] for p in pts)
        ax.plot(x, m, marker="o", ms=3, label=f"{strategy} ({k} seed{'s' if k > 1 else ''})")
        ax.fill_between(x, m - se, m + se, alpha=0.25)
    if target is not None:
        ax.axhline(target, color="0.5", ls=":", lw=1, label="95 % of full-data F")
    _save(fig, ax, png, "training sentences annotated (%)",
          f"active learning, {corpus} (mean ± 1 SE)")


def _save(fig, ax, png, xlabel: str, title: str) -> None:
    """Label a test-F plot, write it to ``png`` and close it."""
    import matplotlib.pyplot as plt
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test F")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def partial_section(records: list[dict], corpus: str, commands: str) -> None:
    arms = sorted({r["arm"] for r in records if r["arm"].startswith("partial-")
                   and r["config"]["corpus"] == corpus})
    if not arms:
        return
    rows, series = [], {}
    for arm in arms:
        rs = sorted((r for r in records if r["arm"] == arm and r["config"]["corpus"] == corpus),
                    key=lambda r: (r["seed"], r["round"]))
        _, kept, p = arm.split("-", 2)
        for r in rs:
            rows.append(f"| {kept} | {p} | {r['seed']} | {r['round']} | {100 * r['share']:.0f} % | "
                        f"{r['tokens']} | {r['tokens_full']} | "
                        f"{100 * r['tokens'] / r['tokens_full']:.0f} % | {r['f']:.2f} | "
                        f"{r['f_full']:.2f} | {r['labelled_tokens']} of {r['picked_tokens']}"
                        f" | {r['kept_wrong']} |")
        series[f"partial ({kept}, p ≥ {p})"] = [(r["tokens"], r["f"]) for r in rs]
        if not any(name.startswith("full annotation") for name in series):
            series[f"full annotation, same picks as {kept} p ≥ {p}"] = \
                [(r["tokens_full"], r["f_full"]) for r in rs]
        cfg = rs[0]["config"]
    seed = rs[0]["seed"]
    main = [r for r in records if r["arm"] == "full" and r["config"]["corpus"] == corpus
            and r["seed"] == seed]
    if main:                     # the main curves of that seed, as F against tokens
        counts = Counter(json.dumps(r["config"], sort_keys=True) for r in main)
        cfg_main = json.loads(counts.most_common(1)[0][0])
        for strategy in ("expected-f", "random"):
            pts = sorted((r["tokens"], r["f"]) for r in main
                         if r["strategy"] == strategy and r["config"] == cfg_main)
            if pts:
                series[f"{strategy}, full annotation (curve above, seed {seed})"] = pts
    png = HERE / f"active_learning_partial_{corpus}.png"
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for name, pts in series.items():
        ax.plot([t for t, _ in pts], [f for _, f in pts], marker="o", ms=3, label=name,
                ls="--" if "curve above" in name else "-")
    _save(fig, ax, png, "tokens annotated", f"partial annotation inside active learning, {corpus}")
    body = (
        f"{NAMES.get(corpus, corpus)}, features {cfg['features']}, IOB2, ML CRF (default λ), "
        f"MAP, conlleval F; start {100 * cfg['start']:.0f} % (fully annotated, the seed's "
        f"round-0 model of the curves above), + {100 * cfg['step']:.0f} % per round picked by "
        f"expected-f (sub-pool {cfg['candidates']}) *by the partially trained model*; "
        f"{cfg['max_iter']} L-BFGS iterations per round from the last θ.\n\n"
        "Each picked sentence is annotated only where the model is unsure "
        "(`active_sim.partial_cells`): a token is *confident* when it lies in a chunk of the "
        "model's MAP decision whose exact chunk marginal Pr(c ∈ chunks(y)) ≥ p, or when MAP "
        "tags it O with token marginal Pr(y_i = O) ≥ p; the annotator labels every other "
        "token, a gold chunk touching a labelled token whole, and a confident chunk touching "
        "a labelled token whole (fixed point). The confident tokens keep the model's tag "
        "(`fix`: a constraint; with one tag per token the marginal likelihood of "
        "`partial=True` is ML on the mixed sequence) or are left open (`open`: `?`, summed "
        "over). Beside it, a second model trains on the full annotation of the same picks "
        "(warm-started the same way). Tokens annotated are cumulative, the start included.\n\n"
        f"Runs: {commands or '(see the command above)'}\n\n"
        "| kept | p | seed | round | sentences | tokens annotated (partial) | tokens "
        "(full) | ratio | F partial | F full, same picks | of the tokens picked this "
        "round (annotated for the next), labelled | picked tokens kept with a wrong tag |"
        "\n|---|---|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        f"![F against tokens annotated](active_learning_partial_{corpus}.png)\n")
    write_section(f"Active learning (issue 36): partial annotation, {corpus}", body)


def report(args) -> None:
    records = load(args.store)
    given = {k: float(v) for k, v in (x.split("=") for x in args.full_f.split(",") if x)}
    for corpus in sorted({r["config"]["corpus"] for r in records}):
        full, how = full_f(records, corpus, given)
        curves_section(records, corpus, full, how, args.out_of)
        partial_section(records, corpus, args.out_of)
