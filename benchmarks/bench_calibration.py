"""Calibration of entity confidences (issue 35, part 5): reliability tables, ECE and MCE.

Each chunk a decoder predicts (MAP, MEU for F1) gets its confidence p = Pr(chunk ∈ y),
its exact chunk marginal (:func:`fstchunk.decoding.confidence.scored_chunks`), and an outcome:
whether the chunk (type, start, end) is in the gold.  Per model, split and decoder: the
reliability table (10 equal bins: count, mean confidence, accuracy), the expected and
maximum calibration errors (:mod:`fstchunk.evaluation.reliability`) with their bootstrap standard
errors over sentences, and, as a decoder-free variant, every chunk of marginal ≥
``--all-min`` (the marginals themselves, predicted or not).

Models (cached in ``--models``, trained by the CLI when missing): the ML CRF (tmpt3 on
CoNLL-2000, ner on CoNLL-2002 Dutch; ``--ml-iter`` L-BFGS iterations), the same with its
temperature fitted on the dev set (``CRF.calibrate``, here), and the max-margin CRF
(``--mm-passes`` BCFW passes), temperature-calibrated on the dev set (``fstchunk train
--calibrate``); the calibrated models' dev figures are in-sample for T.  Splits: CoNLL-2000 dev.txt and
test.txt, Dutch ned.testa and ned.testb.  A reliability plot of the test sets goes to
``--plot``.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_calibration.py --models /tmp/calib35
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from common import Timer, data_path, write_section
from fstchunk.schemes import encodings as enc
from fstchunk.evaluation.reliability import Reliability, bootstrap, reliability
from fstchunk.decoding.confidence import scored_chunks
from fstchunk.io.conll import read_conll
from fstchunk.decoding.decoders import decoder as get_decoder
from fstchunk import evaluate
from fstchunk.io.gold import check_gold
from fstchunk.models import load_model
from fstchunk.models.scorefile import load_lattices

CORPORA = {"conll2000": ("tmpt3", ("conll2000", "train.txt"), ("conll2000", "dev.txt"),
                         ("conll2000", "test.txt")),
           "ned": ("ner", ("conll2002", "ned.train"), ("conll2002", "ned.testa"),
                   ("conll2002", "ned.testb"))}
MODELS = ("ml", "ml-t", "mm")
NAMES = {"ml": "ML CRF", "ml-t": "ML CRF, T on dev", "mm": "max-margin CRF, T on dev"}
SHORT = {"ml": "ML", "ml-t": "ML + T", "mm": "max-margin + T"}
DECODERS = ("map", "meu")
PLOT = Path(__file__).resolve().parent / "calibration_reliability.png"


def train_command(corpus: str, model: str, out: str, args) -> list[str]:
    """The CLI command that trains (and, for max-margin, calibrates) a cached model."""
    features, train, dev, _ = CORPORA[corpus]
    cmd = [sys.executable, "-m", "fstchunk", "train", "--train", data_path(*train),
           "--features", features, "--workers", str(args.workers), "--quiet",
           "--checkpoint-every", "0", "-o", out]
    if model == "ml":
        return cmd + ["--max-iter", str(args.ml_iter)]
    return cmd + ["--objective", "max-margin", "--max-iter", str(args.mm_passes),
                  "--calibrate", data_path(*dev)]


def model_path(corpus: str, model: str, args):
    """The cached model (``ml-t``: the ML one, its temperature fitted on dev here)."""
    path = os.path.join(args.models, f"{corpus}-{model.split('-')[0]}.npz")
    if not os.path.exists(path):
        cmd = train_command(corpus, model.split("-")[0], path, args)
        print("training:", " ".join(cmd), flush=True)
        subprocess.run(["nice"] + cmd, check=True)
    loaded = load_model(path)
    if model == "ml-t":           # T on the dev sentences whose gold the model can tag
        dev = data_path(*CORPORA[corpus][2])
        sents = check_gold(read_conll(dev), "IOB2").sentences
        known = [s for s in sents if set(s.column(-1)) <= set(loaded.tags_)]
        if len(known) < len(sents):
            print(f"{dev}: {len(sents) - len(known)} sentences with tags the model lacks "
                  "left out of its calibration")
        loaded.calibrate(known, source=dev)
    return loaded


def outcomes(lattices, gold, all_min: float) -> dict:
    """Per decoder (map, meu, and None: every chunk of marginal ≥ ``all_min``) the
    per-sentence (confidences, outcomes) and the decoder's F (NaN for None), the lattices
    against the gold sentences (IOB2 tags last)."""
    out = {d: ([], []) for d in DECODERS + (None,)}
    for s, lat in zip(gold, lattices):
        truth = set(enc.tags_to_chunks(s.column(-1), "IOB2"))
        for decoder in DECODERS:
            tags = get_decoder(decoder).decode(lat).tags
            chunks = scored_chunks(lat, tags)
            out[decoder][0].append((np.array([c.p for c in chunks], float),
                                    np.array([(c.type, c.start, c.end) in truth
                                              for c in chunks], bool)))
            out[decoder][1].append(enc.convert(tags, lat.scheme, "IOB2"))
        cm = lat.chunk_marginals()
        t, b, e = np.nonzero(cm >= all_min)
        out[None][0].append((cm[t, b, e], np.array(
            [(lat.space.types[i], int(x), int(y)) in truth for i, x, y in zip(t, b, e)], bool)))
    refs = [s.column(-1) for s in gold]
    return {d: (groups, evaluate(refs, preds).overall.f if preds else float("nan"))
            for d, (groups, preds) in out.items()}


def measure(groups, args) -> tuple[Reliability, float, float]:
    p = np.concatenate([g[0] for g in groups])
    c = np.concatenate([g[1] for g in groups])
    r = reliability(p, c, bins=args.bins)
    se = bootstrap(groups, bins=args.bins, resamples=args.resamples, seed=0)
    return r, se[0], se[1]


def table_row(corpus, model, split, decoder, n_sent, f, r, se_ece, se_mce) -> str:
    mean_p = float(np.nansum(r.confidence * r.count) / r.n)
    acc = float(np.nansum(r.accuracy * r.count) / r.n)
    fs = "–" if np.isnan(f) else f"{f:.2f}"
    return (f"| {corpus} | {NAMES.get(model, model)} | {split} ({n_sent}) | {decoder} | {fs} | {r.n} | "
            f"{mean_p:.4f} | {acc:.4f} | {100 * r.ece:.2f} ± {100 * se_ece:.2f} | "
            f"{100 * r.mce:.2f} ± {100 * se_mce:.2f} |")


def reliability_table(title: str, cols: dict[str, Reliability]) -> list[str]:
    """One row per bin, (count, mean confidence, accuracy) per column."""
    names = list(cols)
    head = "| bin | " + " | ".join(f"{n}: count | conf | acc" for n in names) + " |"
    lines = [title, "", head, "|---" * (1 + 3 * len(names)) + "|"]
    edges = next(iter(cols.values())).edges
    for b in range(len(edges) - 1):
        cells = []
        for n in names:
            r = cols[n]
            cells.append(f"{r.count[b]} | " + (f"{r.confidence[b]:.3f} | {r.accuracy[b]:.3f}"
                                               if r.count[b] else "– | –"))
        lines.append(f"| [{edges[b]:.1f}, {edges[b + 1]:.1f}{']' if b == len(edges) - 2 else ')'}"
                     f" | " + " | ".join(cells) + " |")
    return lines + [""]


def plot(curves: dict, path: Path) -> None:
    """Reliability diagrams of the test sets, one panel per corpus."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    corpora = list(dict.fromkeys(c for c, _, _ in curves))
    fig, axes = plt.subplots(1, len(corpora), figsize=(4.2 * len(corpora), 4), squeeze=False)
    colours = dict(zip(MODELS, ("tab:blue", "tab:green", "tab:red")))
    for ax, corpus in zip(axes[0], corpora):
        ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls=":", label="calibrated")
        for (c, model, decoder), r in curves.items():
            if c == corpus:
                keep = r.count > 0
                ax.plot(r.confidence[keep], r.accuracy[keep], marker="o", ms=3, lw=1.2,
                        color=colours[model], ls="-" if decoder == "map" else "--",
                        label=f"{SHORT[model]}, {decoder.upper()} (ECE {100 * r.ece:.1f})")
        ax.set_title(f"{corpus}, test set", fontsize=10)
        ax.set_xlabel("confidence Pr(chunk ∈ y)")
        ax.set_ylabel("accuracy (chunk in gold)")
        ax.set_xlim(0, 1), ax.set_ylim(0, 1)
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)


HEAD = ["| corpus | model | split (sentences) | chunks of | F | chunks | mean p | accuracy "
        "| ECE (%) | MCE (%) |", "|---|---|---|---|---|---|---|---|---|---|"]
DEFINITIONS = (
    "Confidence of a chunk: its exact marginal Pr(chunk ∈ y) under the model "
    "(`fstchunk.decoding.confidence.scored_chunks`); outcome: the chunk (type, start, end) is in "
    "the gold. ECE = Σ_b (n_b/N)|acc_b − conf_b| over 10 equal bins, MCE the largest "
    "non-empty bin's gap, whatever its count, so the sparse low-confidence bins drive it and "
    "its error (`fstchunk.evaluation.reliability`); ± the bootstrap standard error over sentences "
    "({resamples} resamples). Rows `all p ≥ {all_min}`: every chunk of "
    "marginal at least that, decoded or not.")


def score_file_section(args) -> None:
    """The same rows for a score file against its gold sentences."""
    if not args.gold:
        sys.exit("--scores needs --gold: the CoNLL file of the scored sentences")
    with Timer() as total:
        lattices = load_lattices(args.scores)
        gold = check_gold(read_conll(args.gold)[:len(lattices)], "IOB2").sentences
        if len(gold) < len(lattices) or any(len(g) != lat.n for g, lat in zip(gold, lattices)):
            sys.exit(f"{args.scores} does not score the first {len(lattices)} sentences of "
                     f"{args.gold} (counts or lengths differ)")
        rows, cols = [], {}
        for decoder, (groups, f) in outcomes(lattices, gold, args.all_min).items():
            r, se_ece, se_mce = measure(groups, args)
            name = decoder or f"all p ≥ {args.all_min}"
            rows.append(table_row(Path(args.gold).name, "scores", "file", name, len(gold), f, r,
                                  se_ece, se_mce))
            print(rows[-1], flush=True)
            cols[name.upper() if decoder else "all"] = r
    body = "\n".join([
        DEFINITIONS.format(resamples=args.resamples, all_min=args.all_min) +
        f" Scores: {args.label or args.scores}, {len(lattices)} sentences, "
        f"{lattices[0].scheme} lattices. {total.seconds:.0f} s in all.", "",
        *[h.replace("| model |", "| source |") for h in HEAD],
        *rows, "", *reliability_table("Reliability:", cols)])
    print(body)
    if not args.no_write:
        write_section("Calibration (issue 35): a score file", body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="/tmp/calib35", help="cache of trained models")
    ap.add_argument("--corpora", default="conll2000,ned")
    ap.add_argument("--ml-iter", type=int, default=100)
    ap.add_argument("--mm-passes", type=int, default=10)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--bins", type=int, default=10)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--all-min", type=float, default=0.01,
                    help="the all-chunks variant: every chunk of marginal >= this")
    ap.add_argument("--limit", type=int, default=None, help="first N sentences of each split")
    ap.add_argument("--plot", default=str(PLOT))
    ap.add_argument("--no-write", action="store_true", help="print, do not write RESULTS.md")
    ap.add_argument("--scores", help="instead: a score file (fstchunk.models.scorefile) of the "
                                     "first sentences of --gold, e.g. the transformers "
                                     "example's --scores")
    ap.add_argument("--gold", help="with --scores: the CoNLL file of its sentences (IOB2)")
    ap.add_argument("--label", default="", help="with --scores: what made the scores")
    args = ap.parse_args()
    if args.scores:
        return score_file_section(args)
    os.makedirs(args.models, exist_ok=True)
    rows, details, curves, notes = [], [], {}, []
    with Timer() as total:
        for corpus in args.corpora.split(","):
            _, _, dev, test = CORPORA[corpus]
            for model_name in MODELS:
                model = model_path(corpus, model_name, args)
                s = model.settings_
                unit = "BCFW passes" if model_name == "mm" else "L-BFGS iterations"
                stop = "converged" if s.get("converged") else "not converged" + (
                    f", duality gap {s['duality_gap']:.3f}" if s.get("duality_gap") else "")
                notes.append(f"{corpus} {NAMES[model_name]} ({s['features']}, λ {s['l2']:g}): "
                             f"{s['iterations']} {unit} ({stop})" + (
                                 f", T = {model.temperature:.3f} (dev NLL per sentence "
                                 f"{s['calibration_nll']:.3f}, at T = 1 "
                                 f"{s['calibration_nll_t1']:.3f})" if "T" in NAMES[model_name]
                                 else ""))
                for split, parts in (("dev", dev), ("test", test)):
                    sents = check_gold(read_conll(data_path(*parts))[:args.limit],
                                       "IOB2").sentences
                    cols = {}
                    for decoder, (groups, f) in outcomes(model.lattices(sents), sents,
                                                         args.all_min).items():
                        r, se_ece, se_mce = measure(groups, args)
                        name = decoder or f"all p ≥ {args.all_min}"
                        rows.append(table_row(corpus, model_name, split, name, len(sents), f,
                                              r, se_ece, se_mce))
                        print(rows[-1], flush=True)
                        cols[name.upper() if decoder else "all"] = r
                        if split == "test" and decoder:
                            curves[(corpus, model_name, decoder)] = r
                    if split == "test":
                        details += reliability_table(
                            f"Reliability, {corpus} test, {NAMES[model_name]}:", cols)
    plot(curves, Path(args.plot))
    body = "\n".join([
        DEFINITIONS.format(resamples=args.resamples, all_min=args.all_min) + " Models: "
        + "; ".join(notes) + ". T is fitted on the dev split, so the dev rows of the models "
        "with T are in-sample for T; the test figures are from one run (one training each). "
        f"{total.seconds:.0f} s in all.", "", *HEAD, *rows, "",
        f"![reliability of the test sets]({Path(args.plot).name})", "", *details])
    print(body)
    if not args.no_write:
        write_section("Calibration (issue 35): entity confidences, reliability and ECE", body)


if __name__ == "__main__":
    main()
