"""Does decoding for the metric win on it?  MAP against MEU for conlleval's F1 and MEU
for the exact-boundary F1 (SemEval's ``exact`` mode: boundaries alone), each output
scored by both metrics, on CoNLL-2000 test and CoNLL-2002 Dutch ned.testb.

Models: those of ``bench_unlabelled.py`` (the ML CRF, tmpt1 / ner), with the temperature
fitted on the dev set (MEU reads the model as a distribution).  Standard errors: the
bootstrap over documents (Dutch) or sentences (CoNLL-2000), 1000 resamples; the gain of
each MEU decoder over MAP with the paired bootstrap's standard error.  One run on each
test set.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_utilities.py --models /tmp/unl
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

DECODERS = {"MAP": ("map", {}), "MEU (conlleval)": ("meu", {}),
            "MEU (exact)": ("meu", {"utility": "exact"})}
METRICS = ("conlleval", "exact")


def unit_rows(counts: np.ndarray, units: list) -> np.ndarray:
    return np.array([counts[u].sum(axis=0) for u in units])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="/tmp/fstchunk-unlabelled")
    ap.add_argument("--iter", type=int, default=40)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--limit", type=int, default=None, help="first sentences only")
    args = ap.parse_args()
    lines = ["| corpus | decoder | conlleval F1 | gain | exact F1 | gain | seconds |",
             "|---|---|---|---|---|---|---|"]
    for corpus in CORPORA:
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
        for name, (dname, settings) in DECODERS.items():
            with Timer() as t:
                tags = decoder(dname, **settings).tags(lats)
            pred = [enc.convert(tg, lat.scheme, "IOB2") for tg, lat in zip(tags, lats)]
            cells = []
            for metric in METRICS:
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
    body = ("ML CRFs (tmpt1 on CoNLL-2000, ner on Dutch; "
            f"{args.iter} L-BFGS iterations) with T fitted on dev; each decoder's output "
            "scored by conlleval's F1 and by the exact-boundary F1 (SemEval's exact "
            "mode), ± the bootstrap standard error over "
            f"{'the first ' + str(args.limit) + ' sentences' if args.limit else 'the test set'}"
            " (documents for Dutch, sentences for CoNLL-2000); gain: over MAP, ± the "
            "paired bootstrap's standard error. One run on each test set.\n\n"
            + "\n".join(lines))
    write_section("Decoding for the metric: MAP against MEU for conlleval's F1 and for "
                  "the exact-boundary F1", body)


if __name__ == "__main__":
    main()
