"""Does decoding for the metric win on it?  MAP against MEU for conlleval's F1 and MEU
for the exact-boundary F1 (SemEval's ``exact`` mode: boundaries alone), each output
scored by both metrics, on CoNLL-2000 test and CoNLL-2002 Dutch ned.testb; with
``--set partial``, MAP against MEU for conlleval's F1 and for the partial-match F1
(SemEval's ``partial`` mode), each scored by both; ``--set type`` the same for the
type-match F1 (SemEval's ``type`` mode); with ``--set types``, MEU for macro F1 and for each type's F1, each output scored by
conlleval's, macro and every type's F1.

Models: those of ``bench_unlabelled.py`` (the ML CRF, tmpt1 / ner), with the temperature
fitted on the dev set (MEU reads the model as a distribution).  Standard errors: the
bootstrap over documents (Dutch) or sentences (CoNLL-2000), 1000 resamples; the gain of
each MEU decoder over MAP with the paired bootstrap's standard error.  One run on each
test set.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_utilities.py --models /tmp/unl
    FSTCHUNK_DATA=../shared/data python benchmarks/bench_utilities.py --set types --corpora ned
    FSTCHUNK_DATA=../shared/data python benchmarks/bench_utilities.py --set partial
    FSTCHUNK_DATA=../shared/data python benchmarks/bench_utilities.py --set type
"""

from __future__ import annotations

import argparse

import numpy as np

from bench_unlabelled import CORPORA, calibrated, model, units_of
from common import Timer, data_path, write_section
from fstchunk.decoding.decoders import decoder
from fstchunk.evaluation.significance import unit_counts
from fstchunk.io.conll import read_conll
from fstchunk.io.gold import check_gold
from fstchunk.schemes import encodings as enc

#: --set: (the decoders, the metrics each output is scored by, the section's title)
SETS = {"exact": ({"MAP": ("map", {}), "MEU (conlleval)": ("meu", {}),
                   "MEU (exact)": ("meu", {"utility": "exact"})}, ("conlleval", "exact"),
                  "Decoding for the metric: MAP against MEU for conlleval's F1 and for the "
                  "exact-boundary F1"),
        "partial": ({"MAP": ("map", {}), "MEU (conlleval)": ("meu", {}),
                     "MEU (partial)": ("meu", {"utility": "partial"})},
                    ("conlleval", "partial"),
                    "Decoding for the metric: MAP against MEU for the partial-match F1 "
                    "(SemEval-2013 partial)"),
        "type": ({"MAP": ("map", {}), "MEU (conlleval)": ("meu", {}),
                  "MEU (type)": ("meu", {"utility": "type"})}, ("conlleval", "type"),
                 "Decoding for the metric: MAP against MEU for the type-match F1 "
                 "(SemEval-2013 type)")}


def type_counts(pairs, types) -> tuple[np.ndarray, object]:
    """Per sentence, (correct, found, gold) of each type, (S, 3·K); the figures of
    summed counts: conlleval F1 of each type, and their mean (macro F1), in percent."""
    rows = []
    for g, p in pairs:
        gc, pc = set(enc.tags_to_chunks(g, "IOB2")), set(enc.tags_to_chunks(p, "IOB2"))
        rows.append([x for t in types for x in (
            len({c for c in gc & pc if c[0] == t}), sum(c[0] == t for c in pc),
            sum(c[0] == t for c in gc))])
    counts = np.array(rows, dtype=float)

    def figures(c: np.ndarray) -> np.ndarray:        # (B, 3K) -> (B, K + 1)
        c = c.reshape(len(c), len(types), 3)
        den = c[:, :, 1] + c[:, :, 2]
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.where(den > 0, 100 * 2 * c[:, :, 0] / den, 0.0)
        return np.concatenate([f, f.mean(axis=1, keepdims=True)], axis=1)
    return counts, figures


def by_type(args) -> None:
    """MAP, MEU for conlleval's F1, for macro F1 and for each type's F1, each output
    scored by conlleval's F1, macro F1 and each type's F1."""
    for corpus in args.corpora:
        m, dev = model(corpus, args)
        m = calibrated(m, dev)
        path = data_path(*CORPORA[corpus][3])
        test = check_gold(read_conll(path), "IOB2").sentences[:args.limit]
        units = units_of(path, test)
        gold = [s.column(-1) for s in test]
        lats = m.lattices(test)
        types = list(lats[0].space.types)
        decoders = {"MAP": ("map", {}), "MEU (conlleval)": ("meu", {}),
                    "MEU (macro)": ("meu", {"utility": "macro"}),
                    **{f"MEU (type:{t})": ("meu", {"utility": f"type:{t}"}) for t in types}}
        rng = np.random.default_rng(0)
        w = rng.multinomial(len(units), np.full(len(units), 1.0 / len(units)),
                            size=args.samples)
        head = ["conlleval F1", "macro F1"] + [f"{t} F1" for t in types]
        lines = ["| decoder | " + " | ".join(head) + " | seconds |",
                 "|---|" + "---|" * (len(head) + 1)]
        base: dict = {}
        failures: list = []
        base_tags: list = []
        for name, (dname, settings) in decoders.items():
            with Timer() as t:
                tags = decoder(dname, **settings).tags(lats, errors="return")
            bad = [i for i, tg in enumerate(tags) if isinstance(tg, BaseException)]
            if bad:               # over the memory budget: MAP's tags stand in, counted
                failures.append(f"{name}: {len(bad)} sentence(s) decoded by MAP "
                                f"({type(tags[bad[0]]).__name__})")
                tags = [base_tags[i] if i in bad else tg for i, tg in enumerate(tags)]
            if name == "MAP":
                base_tags = tags
            pred = [enc.convert(tg, lat.scheme, "IOB2") for tg, lat in zip(tags, lats)]
            cc, fig = unit_counts(list(zip(gold, pred)), "conlleval", "IOB2")
            tc, tfig = type_counts(list(zip(gold, pred)), types)
            u = np.concatenate([unit_rows(cc, units), unit_rows(tc, units)], axis=1)

            def all_figures(c, k=cc.shape[1]):
                return np.concatenate([fig(c[:, :k])[:, None], tfig(c[:, k:])], axis=1)
            f = all_figures(u.sum(axis=0, keepdims=True))[0]      # conlleval, types, macro
            boot = all_figures(w @ u)
            order = [0, len(types) + 1] + list(range(1, len(types) + 1))
            if name == "MAP":
                base = {"f": f, "boot": boot}
                cells = [f"{f[i]:.2f} ± {boot[:, i].std():.2f}" for i in order]
            else:
                d = boot - base["boot"]
                cells = [f"{f[i]:.2f} ({f[i] - base['f'][i]:+.2f} ± {d[:, i].std():.2f})"
                         for i in order]
            lines.append(f"| {name} | {' | '.join(cells)} | {t.seconds:.0f} |")
            print(lines[-1], flush=True)
        what = f"the first {args.limit} sentences of" if args.limit else "all of"
        body = (f"The ML CRF of `bench_unlabelled.py` ({CORPORA[corpus][0]} features, "
                f"{args.iter} L-BFGS iterations) with T fitted on dev, decoded on {what} "
                f"the test set by MAP and by MEU for each utility of "
                f"`fstchunk.decoding.utilities` (one run). Each output scored by corpus "
                f"conlleval F1, macro F1 (the mean of the types' corpus F1) and each type's "
                f"F1; MAP ± the bootstrap standard error over "
                f"{'documents' if len(units) < len(test) else 'sentences'} "
                f"({args.samples} resamples), the others (their difference from MAP ± the "
                f"paired bootstrap's standard error). A `type:T` decoder outputs chunks of "
                f"type T only: its other columns are near 0 by design; its own column is "
                f"the one it is for. The utilities are sentence-level expectations (0/0 := "
                f"1 per type), the scores corpus-level.\n\n" + "\n".join(lines)
                + "".join(f"\n\n- {x}" for x in failures))
        write_section(f"Decoding for the metric: per-type and macro F ({corpus})", body)


def unit_rows(counts: np.ndarray, units: list) -> np.ndarray:
    return np.array([counts[u].sum(axis=0) for u in units])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="/tmp/fstchunk-unlabelled")
    ap.add_argument("--iter", type=int, default=40)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--limit", type=int, default=None, help="first sentences only")
    ap.add_argument("--set", choices=("exact", "partial", "type", "types"), default="exact",
                    help="exact: MAP, MEU for conlleval and exact-boundary F1; partial: MAP, "
                         "MEU for conlleval and partial-match F1; type: the same for the "
                         "type-match F1; types: MAP, MEU for "
                         "conlleval, macro and each type's F1")
    ap.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    args = ap.parse_args()
    if args.set == "types":
        return by_type(args)
    decoders, metrics, title = SETS[args.set]
    notes: list = []
    lines = ["| corpus | decoder | " + " | ".join(f"{m} F1 | gain" for m in metrics)
             + " | seconds |", "|---|---|" + "---|---|" * len(metrics) + "---|"]
    for corpus in args.corpora:
        m, dev = model(corpus, args)
        m = calibrated(m, dev)
        path = data_path(*CORPORA[corpus][3])
        test = check_gold(read_conll(path), "IOB2").sentences[:args.limit]
        units = units_of(path, test)
        gold = [s.column(-1) for s in test]
        lats = m.lattices(test)
        rng = np.random.default_rng(0)
        w = rng.multinomial(len(units), np.full(len(units), 1.0 / len(units)),
                            size=args.samples)
        base: dict = {}
        for name, (dname, settings) in decoders.items():
            with Timer() as t:
                got = decoder(dname, **settings).decode_all(lats, errors="return")
            failed = [i for i, d in enumerate(got) if isinstance(d, BaseException)]
            if failed:            # over the memory budget: MAP's tags stand in, counted
                notes.append(f"{corpus}, {name}: {len(failed)} sentence(s) of "
                             f"{', '.join(str(lats[i].n) for i in failed)} tokens over the "
                             f"memory budget ({type(got[failed[0]]).__name__}) decoded by MAP")
            tags = [base["tags"][i] if i in failed else d.tags for i, d in enumerate(got)]
            gaps = np.array([0.0 if i in failed else d.gap for i, d in enumerate(got)])
            if name != "MAP" and (gaps > 1e-9).any():
                notes.append(f"{corpus}, {name}: certificate gap > 1e-9 on "
                             f"{(gaps > 1e-9).sum()} of {len(gaps)} sentences (mean "
                             f"{gaps.mean():.2g}, largest {gaps.max():.2g})")
            if name == "MAP":
                base["tags"] = tags
            pred = [enc.convert(tg, lat.scheme, "IOB2") for tg, lat in zip(tags, lats)]
            cells = []
            for metric in metrics:
                counts, figure = unit_counts(list(zip(gold, pred)), metric, "IOB2")
                u = unit_rows(counts, units)
                f = float(figure(u.sum(axis=0, keepdims=True))[0])
                boot = figure(w @ u)
                se = float(boot.std())
                if name == "MAP":
                    base[metric] = (f, boot)
                    gain = "—"
                else:
                    d = boot - base[metric][1]
                    gain = f"{f - base[metric][0]:+.2f} ± {d.std():.2f}"
                cells += [f"{f:.2f} ± {se:.2f}", gain]
            lines.append(f"| {corpus} | {name} | {' | '.join(cells)} | {t.seconds:.0f} |")
            print(lines[-1], flush=True)
    scored = {"exact": "the exact-boundary F1 (SemEval's exact mode)",
              "partial": "the partial-match F1 (SemEval's partial mode, as nervaluate "
                         "counts it: ½ credit for an overlap)",
              "type": "the type-match F1 (SemEval's type mode, as nervaluate counts it: "
                      "a chunk of the gold's type overlapping it is correct)"}[metrics[1]]
    body = ("ML CRFs (tmpt1 on CoNLL-2000, ner on Dutch; "
            f"{args.iter} L-BFGS iterations) with T fitted on dev; each decoder's output "
            f"scored by conlleval's F1 and by {scored}, ± the bootstrap standard error over "
            f"{'the first ' + str(args.limit) + ' sentences' if args.limit else 'the test set'}"
            " (documents for Dutch, sentences for CoNLL-2000); gain: over MAP, ± the "
            "paired bootstrap's standard error. One run on each test set.\n\n"
            + "\n".join(lines) + "".join(f"\n\n- {x}" for x in notes))
    print("\n".join(notes))
    write_section(title, body)


if __name__ == "__main__":
    main()
