"""Exact MEU at every length and score scale (issue 17): time and peak memory per
sentence against n, the issue's targets, and ratios against the decoder of commit
783b1a9 measured in the same run: its frozen copy, ``tests/reference_meu.py``, left
the tests with issue 45 and is read here from git history (commit 5d8f2cb).

Needs two saved CRFs (trained on the training sets only):

    fstchunk train --train ../shared/data/conll2000/train.txt --features tmpt3 -o conll_ml.npz
    fstchunk train --train ../shared/data/conll2002/ned.train --features ner -o ned_ml.npz
    FSTCHUNK_DATA=../shared/data python benchmarks/bench_meu_scale.py \\
        --conll-model conll_ml.npz --ned-model ned_ml.npz

Sections: ``growth`` (n = 10 … 1280: random 9- and 23-tag lattices, and CRF lattices
of test-set documents, i.e. consecutive sentences joined; new decoder always, the
reference while its O(n³) tables stay small), ``targets`` (the longest ned.train
sentence, a synthetic 2000-token lattice, whole test sets on all cores, meu-corpus and
posterior), ``train-sets`` (every sentence of both training sets through
``fstchunk decode --decoder meu``, peak memory of the whole run).  Peak memory of a
single call is numpy's traced peak (tracemalloc) in a pass apart from the timing
pass; the targets' memory is the peak resident size of a fresh process.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from common import Timer, data_path, peak_rss_mb, write_section
from fstchunk import Lattice
from fstchunk.decoding import decode as dec, decoders
from fstchunk.io.conll import Sentence, read_conll
from fstchunk import load_model
from fstchunk.runtime.parallel import map_sentences, single_threaded_blas, usable_cores
from fstchunk import TagSet

#: the commit whose tests/reference_meu.py is the old decoder (deleted from the tests after it)
REFERENCE_COMMIT = "5d8f2cb"


def _reference_module():
    """tests/reference_meu.py as of :data:`REFERENCE_COMMIT`, imported from git history."""
    import importlib.util
    root = Path(__file__).resolve().parents[1]
    src = subprocess.run(["git", "-C", str(root), "show",
                          f"{REFERENCE_COMMIT}:tests/reference_meu.py"],
                         check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "reference_meu.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("reference_meu", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _reference_module()

NS = (10, 20, 40, 80, 160, 320, 640, 1280)
NER = ("PER", "ORG", "LOC", "MISC")
CHUNK = ("NP", "VP", "PP", "ADJP", "ADVP", "SBAR", "PRT", "CONJP", "INTJ", "LST", "UCP")
REF_MAX_N = 160            # the reference's (T, n, n+1, n+1) table: 0.36 GB at 160, 23 tags


def random_lattice(types, n: int, scale: float, seed: int) -> Lattice:
    tags = TagSet("IOB2", types).tags
    rng = np.random.default_rng(seed)
    return Lattice.from_scores(tags, rng.normal(size=(n, len(tags))) * scale,
                               rng.normal(size=(len(tags), len(tags))) * scale)


def document_lattice(model, sentences, n: int) -> Lattice:
    """The CRF lattice of the first n tokens of consecutive sentences joined."""
    rows, lines = [], []
    for s in sentences:
        rows.extend(s.rows)
        lines.extend(s.lines)
        if len(rows) >= n:
            break
    doc = Sentence(rows[:n], lines[:n], sentences[0].source)
    return model.lattices([doc])[0]


def timed(fn, *a):
    with Timer() as t, single_threaded_blas():
        out = fn(*a)
    return out, t.seconds


def traced_peak(fn, *a) -> float:
    """Peak traced bytes (numpy arrays included) of one call, MB."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        with single_threaded_blas():
            fn(*a)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def fit_exponent(ns, ys) -> float:
    ns, ys = np.asarray(ns, float), np.asarray(ys, float)
    ok = (ns >= 80) & (ys > 0)
    return float(np.polyfit(np.log(ns[ok]), np.log(ys[ok]), 1)[0]) if ok.sum() >= 2 else float("nan")


def growth(models) -> list[str]:
    out = ["Growth with sentence length (one sentence per n, β = 1, one core).\n",
           "Random lattices: IOB2, emission and transition scores N(0, 1), seed n. CRF "
           "lattices: the first n tokens of the test set's sentences joined into one "
           "document (conll2000/test.txt, ned.testb). Time: seconds; memory: numpy's "
           "traced peak of the call, MB (the reference only while its tables stay small). "
           "|score − U|: the decoder's score against U(tags) from `expected_f(method=\"fast\")`; "
           "ΔU: U(new tags) − U(reference tags), both by that evaluator.\n",
           "| lattice | n | tags | new s | new MB | gap | \\|score − U\\| | reference s | "
           "reference MB | ΔU |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    fams = [("random 9 tags", NER, None), ("random 23 tags", CHUNK, None)]
    fams += [("CRF " + name, None, m) for name, m in models.items()]
    for label, types, m in fams:
        ts, mbs, nsl = [], [], []
        for n in NS:
            if m is None:
                lat = random_lattice(types, n, 1.0, n)
            else:
                lat = document_lattice(m[0], m[1], n)
            d, t = timed(dec.decode_meu, lat)
            mb = traced_peak(dec.decode_meu, lat)
            ts.append(t), mbs.append(mb), nsl.append(n)
            u_new = dec.expected_f(lat, hypothesis=d.tags, method="fast").f
            rs = rmb = du = "—"
            if n <= REF_MAX_N:
                (rtags, ru), rt = timed(ref.reference_decode_meu, lat)
                rmb = f"{traced_peak(ref.reference_decode_meu, lat):.1f}"
                u_ref = dec.expected_f(lat, hypothesis=rtags, method="fast").f
                rs, du = f"{rt:.3f}", f"{u_new - u_ref:+.1e}"
            out.append(f"| {label} | {n} | {len(lat.tags)} | {t:.3f} | {mb:.1f} | {d.gap:.1e} "
                       f"| {abs(d.score - u_new):.0e} | {rs} | {rmb} | {du} |")
            print(out[-1], flush=True)
        out.append(f"| {label}: fitted exponent (n ≥ 80) | | | time n^{fit_exponent(nsl, ts):.2f} "
                   f"| memory n^{fit_exponent(nsl, mbs):.2f} | | | | | |")
    return out


def hwm_mb() -> float:
    """This process's peak resident size (VmHWM), MB: unlike ru_maxrss it starts anew
    at exec, so a child does not inherit the benchmark's own peak."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return peak_rss_mb()


def _one(spec: str) -> None:
    """Child process: decode one lattice, print JSON with time and peak RSS."""
    kind, arg = spec.split(":", 1)
    if kind == "synthetic":
        lat = random_lattice(NER, int(arg), 1.0, 0)
    else:
        model = load_model(arg)
        sents = read_conll(data_path("conll2002", "ned.train"))
        lat = model.lattices([max(sents, key=len)])[0]
    d, t = timed(dec.decode_meu, lat)
    print(json.dumps({"n": lat.n, "seconds": t, "rss_mb": hwm_mb(), "gap": d.gap}))


def _child(spec: str) -> dict:
    r = subprocess.run([sys.executable, __file__, "--one", spec], capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _decode(lats, job):
    i, decoder = job
    return decoders.decode_lattices([lats[i]], decoder)[0]


def _reference(lats, i):
    return ref.reference_decode_meu(lats[i])[0]


def targets(models, paths) -> list[str]:
    out = ["| what | figure | target |", "|---|---|---|"]
    if "ned" in paths:
        r = _child(f"ned:{paths['ned']}")
        out.append(f"| longest ned.train sentence ({r['n']} tokens), Dutch CRF, exact MEU | "
                   f"{r['seconds']:.2f} s, peak RSS {r['rss_mb']:.0f} MB (process), gap "
                   f"{r['gap']:.1e} | ≤ 5 s, ≤ 1 GB |")
        print(out[-1], flush=True)
    r = _child("synthetic:2000")
    out.append(f"| synthetic 2000-token 9-tag lattice (random N(0, 1) scores, seed 0) | "
               f"{r['seconds']:.1f} s, peak RSS {r['rss_mb']:.0f} MB (process), gap "
               f"{r['gap']:.1e} | ≤ 60 s, ≤ 2 GB |")
    print(out[-1], flush=True)
    cores = usable_cores()
    limits = {"conll2000": "≤ 10 s", "ned": "≤ 20 s"}
    for name, (model, test) in models.items():
        with single_threaded_blas():
            lats = model.lattices(test)
        jobs = [(i, "meu") for i in range(len(lats))]
        with Timer() as t:
            new = map_sentences(_decode, jobs, context=lats)
        with Timer() as tr:
            old = map_sentences(_reference, list(range(len(lats))), context=lats)
        same = sum(a == b for a, b in zip(new, old))
        out.append(f"| exact MEU of {name} test ({len(lats)} sentences, {cores} processes) | "
                   f"{t.seconds:.1f} s (reference {tr.seconds:.1f} s, ratio "
                   f"{t.seconds / tr.seconds:.2f}); same tags for {same}/{len(lats)} | "
                   f"{limits[name]} |")
        print(out[-1], flush=True)
        worst = 0.0
        for lat, a, b in zip(lats, new, old):
            if a != b:
                ua = dec.expected_f(lat, hypothesis=a, method="fast").f
                ub = dec.expected_f(lat, hypothesis=b, method="fast").f
                worst = max(worst, abs(ua - ub))
        out.append(f"| {name}: largest \\|E[F] new − E[F] reference\\| where the tags differ | "
                   f"{worst:.1e} | ≤ 1e-12 |")
        for decoder, fn in (("meu-corpus", ref.reference_decode_meu_corpus),
                            ("posterior", None)):
            with Timer() as t, single_threaded_blas():
                got = decoders.decode_lattices(lats, decoder)
            with Timer() as tr, single_threaded_blas():
                want = fn(lats)[0] if fn else [ref.reference_decode_posterior(x)[0] for x in lats]
            same = sum(a == b for a, b in zip(got, want))
            out.append(f"| {decoder} of {name} test (one process) | {t.seconds:.1f} s "
                       f"(reference {tr.seconds:.1f} s, ratio {t.seconds / tr.seconds:.2f}); "
                       f"same tags for {same}/{len(lats)} | as exact MEU |")
            print(out[-1], flush=True)
    return out


def train_sets(paths) -> list[str]:
    out = ["Every training sentence, exact MEU through the command line (one process; "
           "peak resident size of that process).\n",
           "| corpus | sentences | longest | wall s | peak RSS of the run, MB | exit | lines written |",
           "|---|---|---|---|---|---|---|"]
    for name, model, parts in (("conll2000 train.txt", paths.get("conll2000"),
                                ("conll2000", "train.txt")),
                               ("ned.train", paths.get("ned"), ("conll2002", "ned.train"))):
        if model is None:
            continue
        src = data_path(*parts)
        sents = read_conll(src)
        dest = Path(tempfile.mkdtemp()) / "out.txt"
        argv = ["decode", "--model", model, "--input", src, "--decoder", "meu", "-o", str(dest)]
        code = ("import sys; from fstchunk.cli import main; rc = main(%r); "
                "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]; "
                "print(int(hwm.split()[1]), file=sys.stderr); sys.exit(rc)" % argv)
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        rss = int(r.stderr.strip().splitlines()[-1]) / 1024
        lines = sum(1 for _ in open(dest)) if dest.exists() else 0
        shutil.rmtree(dest.parent)
        out.append(f"| {name} | {len(sents)} | {max(map(len, sents))} | {wall:.0f} | {rss:.0f} | "
                   f"{r.returncode} | {lines} |")
        print(out[-1], flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conll-model")
    ap.add_argument("--ned-model")
    ap.add_argument("--sections", default="growth,targets,train-sets")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.one:
        return _one(args.one)
    paths = {k: v for k, v in (("conll2000", args.conll_model), ("ned", args.ned_model)) if v}
    tests = {"conll2000": ("conll2000", "test.txt"), "ned": ("conll2002", "ned.testb")}
    models = {k: (load_model(p), read_conll(data_path(*tests[k]))) for k, p in paths.items()}
    for sec, fn in (("growth", lambda: growth(models)), ("targets", lambda: targets(models, paths)),
                    ("train-sets", lambda: train_sets(paths))):
        if sec in args.sections.split(","):
            body = fn()
            if not args.no_write:
                write_section(f"Exact MEU at scale (issue 17): {sec}", "\n".join(body))


if __name__ == "__main__":
    main()
