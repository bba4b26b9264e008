"""Expected F: brute force vs composition path vs fast engine (issue 3 targets).

On CoNLL-2000 test sentences with the 23 IOB2 tags of CoNLL-2000 and a random CRF
lattice (emission and transition scores ~ N(0, 2²)): time per sentence of each
method in one run, the ratio composition/fast at 30 tokens, the whole test set
with the fast engine on all cores, growth with n, peak memory.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_expected.py
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys

import numpy as np

from common import Timer, data_path, peak_rss_mb, write_section
from fstchunk import Lattice, TagSet, expected_f
from fstchunk.schemes import encodings as enc
from fstchunk import read_conll
from fstchunk.evaluation.chunks import f_beta
from fstchunk.runtime.parallel import map_sentences, usable_cores

TYPES = "ADJP ADVP CONJP INTJ LST NP PP PRT SBAR UCP VP".split()
TAGS = TagSet("IOB2", TYPES).tags


def lattice_for(n: int, seed: int) -> Lattice:
    rng = np.random.default_rng(seed)
    return Lattice.from_scores(TAGS, rng.normal(scale=2, size=(n, 23)),
                               rng.normal(scale=2, size=(23, 23)),
                               rng.normal(size=23), rng.normal(size=23))


def brute_force_f(lat: Lattice, gold) -> float:
    gc = set(enc.tags_to_chunks(gold, "IOB2"))
    total, z = 0.0, 0.0
    for y in itertools.product(TAGS, repeat=lat.n):
        if not enc.is_valid(y, "IOB2"):
            continue
        p = np.exp(lat.log_prob(list(y)) + 0.0)
        c = set(enc.tags_to_chunks(y, "IOB2"))
        total += p * f_beta(len(gc & c), len(c), len(gc))
        z += p
    return total


def _fast_one(_, args):
    k, gold = args
    return expected_f(lattice_for(len(gold), k), reference=gold, method="fast").f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=12, help="sentences per length bucket")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    test = read_conll(data_path("conll2000", "test.txt"))
    lines = []

    # 1. brute force where feasible (3-4 tokens: 12^n sequences), against both paths
    lines.append("### Brute force (all valid sequences) on short synthetic sentences\n")
    lines.append("| n | brute force s/sent | composition s/sent | fast s/sent | max abs diff |")
    lines.append("|---|---|---|---|---|")
    for n in (3, 4):
        gold = enc.chunks_to_tags([("NP", 0, 1)], n, "IOB2")
        lat = lattice_for(n, n)
        with Timer() as tb:
            fb = brute_force_f(lat, gold)
        with Timer() as tc:
            fc = expected_f(lat, reference=gold, method="fst").f
        with Timer() as tf:
            ff = expected_f(lat, reference=gold, method="fast").f
        lines.append(f"| {n} | {tb.seconds:.3f} | {tc.seconds:.4f} | {tf.seconds:.5f} | "
                     f"{max(abs(fb - fc), abs(fb - ff)):.1e} |")
        print(lines[-1])

    # 2. real sentences of 20-40 tokens: composition vs fast, in one run
    lines.append("\n### CoNLL-2000 test sentences, 23 tags, random CRF (per sentence)\n")
    lines.append("| tokens | sentences | composition s | fast s | ratio | max abs diff E[F] |")
    lines.append("|---|---|---|---|---|---|")
    ratio30 = None
    for lo, hi in ((20, 24), (28, 32), (36, 40)):
        bucket = [s for s in test if lo <= len(s) <= hi][:args.sentences]
        tc_all, tf_all, diff = [], [], 0.0
        for k, s in enumerate(bucket):
            gold = s.column(-1)
            lat = lattice_for(len(s), k)
            with Timer() as tc:
                a = expected_f(lat, reference=gold, method="fst")
            with Timer() as tf:
                b = expected_f(lat, reference=gold, method="fast")
            tc_all.append(tc.seconds)
            tf_all.append(tf.seconds)
            diff = max(diff, abs(a.f - b.f), abs(a.tp - b.tp))
        c, f = statistics.mean(tc_all), statistics.mean(tf_all)
        if lo == 28:
            ratio30 = c / f
        lines.append(f"| {lo}-{hi} | {len(bucket)} | {c:.3f} | {f:.4f} | {c / f:.0f}x | "
                     f"{diff:.1e} |")
        print(lines[-1])

    # 3. the whole test set with the fast engine on all usable cores
    cores = usable_cores()
    jobs = [(k, s.column(-1)) for k, s in enumerate(test)]
    with Timer() as tall:
        fs = map_sentences(_fast_one, jobs, chunksize=32)
    lines.append(f"\n### Whole CoNLL-2000 test set, fast engine\n\n{len(jobs)} sentences "
                 f"({sum(len(g) for _, g in jobs)} tokens) in **{tall.seconds:.1f} s** on "
                 f"{cores} processes (target <= 20 s); mean E[F] of gold under the random "
                 f"model {np.mean(fs):.4f}.")
    print(lines[-1])

    # 4. growth with n
    lines.append("\n### Growth with sentence length (synthetic, 23 tags)\n")
    lines.append("| n | composition s | fast s |")
    lines.append("|---|---|---|")
    for n in (10, 20, 40, 80, 160):
        gold = enc.chunks_to_tags([("NP", i, i + 2) for i in range(0, n - 1, 3)], n, "IOB2")
        lat = lattice_for(n, n)
        with Timer() as tf:
            expected_f(lat, reference=gold, method="fast")
        if n <= 80:
            with Timer() as tc:
                expected_f(lat, reference=gold, method="fst")
            comp = f"{tc.seconds:.2f}"
        else:
            comp = "(skipped: O(n³) states)"
        lines.append(f"| {n} | {comp} | {tf.seconds:.4f} |")
        print(lines[-1])
    lines.append(f"\nPeak resident memory: {peak_rss_mb():.0f} MB. Ratio composition/fast "
                 f"at 28-32 tokens: **{ratio30:.0f}x** (target >= 50x).")
    print(lines[-1])
    if not args.no_write:
        write_section("expected F: composition vs fast engine", "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
