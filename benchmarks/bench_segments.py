"""Flexible segmentation (issue 19; McDonald, Crammer & Pereira 2005): the multilabel
segment model against the ML CRF on GENIA (Table 2 analogue: all segments and the
overlapping/non-contiguous ones), CoNLL-2000 NP chunks and CoNLL-2002 Dutch NER
(Table 1 analogue), with training and decoding times.

Sections (``--section``, comma-separated):

* ``genia``: the segment model (``--epochs`` passes, dev F per epoch) decoded by the
  paper's threshold, with the no-embedding restriction (Table 2, row 4) and by exact MEU
  under probabilities calibrated on dev.jsonl; the ML CRF (``ner-nopos`` features: GENIA
  has no POS) trained on the non-overlapping contiguous projection of the gold (outermost
  contiguous segments, greedily by length), which can never predict a nested or
  non-contiguous segment; seconds per training epoch, test-set decoding, peak memory;
* ``np``: CoNLL-2000 with NP chunks only (the other chunks read as O): multilabel,
  multilabel restricted to non-overlapping contiguous segments, and the ML CRF (tmpt-3);
* ``ned``: the same on CoNLL-2002 Dutch NER (the CRF with ``ner`` features);
* ``loop`` (issue 33): ``fstchunk segment train`` through the one training loop against
  another checkout (``--before DIR``, e.g. ``git worktree add /tmp/before COMMIT``), in
  fresh processes, paired (before, after, after without checkpoints, in turn, each
  ``--repeats`` times): seconds per epoch (the command's wall time over the epochs:
  reading, dev F every epoch, calibration and files included), peak memory, and
  whether both give the same weights and dev F for the same seed and epochs; on a
  GENIA slice (``--limit`` sentences, 300 dev) and CoNLL-2000 NP chunks (all).

Tuning reads dev files only; each test figure is one run; F ± the bootstrap standard
error over test sentences (``--resamples``).

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_segments.py --section genia
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import Timer, data_path, peak_rss_mb, write_section
from fstchunk.io.columns import Columns
from fstchunk.io.conll import Sentence
from fstchunk import decode_sentences
from fstchunk import load_model
from fstchunk import CRF
from fstchunk import SegmentModel
from fstchunk.runtime.parallel import single_threaded_blas
from fstchunk.io.segments import (SegSentence, Segment, read_conll_segments, read_jsonl,
                                  segments_to_tags)
from fstchunk.evaluation.segments import hard_segments, score_segments
from fstchunk.schemes import encodings as enc

#: McDonald et al.'s figures (Table 1: F of NE / NP; Table 2 is another corpus)
PAPER = {"ned": {"CRF": 83.47, "multilabel": 82.33, "multilabel, restricted": 83.26},
         "np": {"CRF": 94.29, "multilabel": 93.45, "multilabel, restricted": 93.90}}


def projection(s: SegSentence) -> list[Segment]:
    """The outermost contiguous segments that do not overlap, longest first."""
    kept: list[Segment] = []
    taken: set[int] = set()
    for g in sorted((g for g in s.segments if g.contiguous), key=lambda g: -len(g.positions)):
        if not taken & set(g.positions):
            kept.append(g)
            taken |= set(g.positions)
    return kept


def as_conll(sents, segments, pos: bool) -> list[Sentence]:
    """Sentences with (word, [POS,] IOB2 tag) rows for the CRF."""
    out = []
    for s, segs in zip(sents, segments):
        tags = segments_to_tags(segs, len(s), s.source)
        cols = [s.tokens] + ([s.pos] if pos else []) + [tags]
        out.append(Sentence([list(r) for r in zip(*cols)], list(s.lines) or [0] * len(s),
                            s.source))
    return out


def crf_segments(model: CRF, sents: list[Sentence]) -> list[list[Segment]]:
    with single_threaded_blas():
        preds = decode_sentences(model, sents, "map")
    return [[Segment(t, tuple(range(a, b))) for t, a, b in enc.conlleval_chunks(p)]
            for p in preds]


def boot(gold, pred, idx) -> np.ndarray:
    c = np.array([[len(set(g) & set(h)), len(set(h)), len(set(g))] for g, h in zip(gold, pred)])
    s = c[idx].sum(axis=1)
    return 100 * 2 * s[:, 0] / np.maximum(s[:, 1] + s[:, 2], 1)


def row(name: str, gold, pred, idx, paper: str = "—") -> str:
    r = score_segments(gold, pred)
    o, h = r.overall, r.hard
    return (f"| {name} | {paper} | {o.precision:.2f} | {o.recall:.2f} | {o.f():.2f} ± "
            f"{boot(gold, pred, idx).std():.2f} | {h.precision:.2f} | {h.recall:.2f} "
            f"| {h.f():.2f} |")


HEAD = ["| model | paper F | P | R | F ± SE | hard P | hard R | hard F |",
        "|---|---|---|---|---|---|---|---|"]


def multilabel(args, tr, dv, restrictions=None):
    """The multilabel model, averaged, the epoch (of at most --epochs) chosen by dev F."""
    with Timer() as t:
        m = SegmentModel(restrictions=restrictions, max_iter=args.epochs).fit(
            tr, dev=dv, select="dev", progress=not args.quiet)
    m.calibrate(dv, source="dev")
    return m, t.seconds


def perceptron(args, tr: list[Sentence], dv: list[Sentence], template: str,
               columns: Columns | None = None) -> tuple[CRF, int]:
    """The averaged perceptron tagger on the CRF's features, the pass (of at most
    --epochs) chosen by dev F."""
    crf = CRF(template, columns=columns, objective="perceptron", max_iter=args.epochs)
    data = crf._prepare(tr)
    best: dict = {"f": -1.0}

    def keep(p):
        if p.dev_f > best["f"]:
            best.update(f=p.dev_f, theta=p.theta.copy(), it=p.iteration)

    with single_threaded_blas():
        crf.fit(data, dev=dv, dev_every=1, callbacks=[keep])
    crf.theta_ = best["theta"]
    return crf, best["it"]


def epochs_note(m) -> str:
    h = m.settings_["history"]
    return (f"epoch {m.settings_['selected_epoch']} of {len(h)} kept (dev F averaged / last "
            f"weights per epoch: "
            + ", ".join(f"{r['dev_f_average']:.2f}/{r['dev_f_last']:.2f}" for r in h) + ")")


def section_genia(args) -> None:
    tr, dv, te = (read_jsonl(data_path("genia", f))[:args.limit]
                  for f in ("train.jsonl", "dev.jsonl", "test.jsonl"))
    idx = np.random.default_rng(0).integers(0, len(te), size=(args.resamples, len(te)))
    gold = [s.segments for s in te]
    m, secs = multilabel(args, tr, dv)
    with Timer() as t_dec:
        thr = m.decode(te)
    rows = [row("multilabel, threshold 0", gold, thr, idx),
            row("multilabel, the last epoch's last weights (not averaged), threshold 0", gold,
                m.decode(te, W=m.other_weights_), idx),
            row("multilabel, no embedding", gold, m.decode(te, restrictions="no-embedding"), idx),
            row("multilabel, MEU (calibrated on dev)", gold, meu := m.decode(te, decoder="meu"),
                idx)]
    crf = CRF("ner-nopos", columns=Columns.parse("word,tag"), max_iter=args.crf_iter)
    data = crf._prepare(as_conll(tr, [projection(s) for s in tr], False))
    with Timer() as t_crf, single_threaded_blas():
        crf.fit(data)
    crf_pred = crf_segments(crf, as_conll(te, [[] for _ in te], False))
    rows.append(row("ML CRF on the projection", gold, crf_pred, idx))
    base = boot(gold, crf_pred, idx)
    diffs = [f"{name} {score_segments(gold, pred).overall.f() - score_segments(gold, crf_pred).overall.f():+.2f} ± "
             f"{(boot(gold, pred, idx) - base).std():.2f}"
             for name, pred in (("threshold 0", thr), ("MEU", meu))]
    hard = sum(len(hard_segments(g)) for g in gold)
    out = [f"GENIA 3.02 (annotations © GENIA Project, CC BY 3.0): {len(tr)} training, "
           f"{len(dv)} dev, {len(te)} test sentences; {sum(map(len, gold))} test segments, "
           f"{hard} of them overlapping another or non-contiguous (the hard columns). "
           f"Multilabel: averaged weights, max gap {m.max_gap_}, k = n; {epochs_note(m)}. "
           f"ML CRF: ner-nopos features, "
           f"{args.crf_iter} L-BFGS iterations, default λ. Test F ± bootstrap SE "
           f"({args.resamples} resamples); one test run each.\n", *HEAD, *rows,
           f"\nMultilabel − CRF over all segments (paired bootstrap SE): {'; '.join(diffs)}. "
           f"The hard columns: R over the gold segments that overlap another or are "
           f"non-contiguous, P over the predicted ones that do (a tagger predicts none, so "
           f"its hard P and F are 0).",
           f"\nMultilabel training {secs / args.epochs:.0f} s per epoch ({secs:.0f} s in "
           f"all for {args.epochs} epochs, dev F each epoch included; one process; target "
           f"≤ 300 s); test decoding (threshold) {t_dec.seconds:.1f} s (target ≤ 60 s); "
           f"CRF training {t_crf.seconds:.0f} s; peak memory {peak_rss_mb():.0f} MB."]
    print("\n".join(out))
    if not args.no_write:
        write_section("Segments (issue 19): GENIA", "\n".join(out))


def _chunks(corpus: str, keep: str | None, limit: int | None):
    """train, dev, test of ``corpus`` as segment sentences (only type ``keep``)."""
    files = {"np": ("conll2000", "train.txt", "dev.txt", "test.txt"),
             "ned": ("conll2002", "ned.train", "ned.testa", "ned.testb")}[corpus]
    sets = []
    for f in files[1:]:
        ss = read_conll_segments(data_path(files[0], f))[:limit]
        for s in ss:
            s.segments = [g for g in s.segments if keep is None or g.type == keep]
        sets.append(ss)
    return sets


def section_table1(args, corpus: str) -> None:
    tr, dv, te = _chunks(corpus, "NP" if corpus == "np" else None, args.limit)
    idx = np.random.default_rng(0).integers(0, len(te), size=(args.resamples, len(te)))
    gold = [s.segments for s in te]
    paper = PAPER[corpus]
    m, secs = multilabel(args, tr, dv)
    r, secs_r = multilabel(args, tr, dv, restrictions="no-overlap,contiguous")
    template = "tmpt3" if corpus == "np" else "ner"
    conll_tr = as_conll(tr, [s.segments for s in tr], True)
    crf = CRF(template, max_iter=args.crf_iter)
    data = crf._prepare(conll_tr)
    with single_threaded_blas():
        crf.fit(data)
    ap, ap_passes = perceptron(args, conll_tr, as_conll(dv, [s.segments for s in dv], True),
                               template)
    rows = [row("multilabel", gold, m.decode(te), idx, f"{paper['multilabel']:.2f}"),
            row("multilabel, restricted", gold, r.decode(te), idx,
                f"{paper['multilabel, restricted']:.2f}"),
            row("ML CRF", gold, crf_segments(crf, as_conll(te, gold, True)), idx,
                f"{paper['CRF']:.2f}"),
            row("averaged perceptron tagger", gold, crf_segments(ap, as_conll(te, gold, True)),
                idx)]
    name = {"np": "CoNLL-2000, NP chunks only", "ned": "CoNLL-2002 Dutch NER"}[corpus]
    out = [f"{name}: {len(tr)} training, {len(dv)} dev, {len(te)} test sentences. "
           f"Multilabel: averaged, {epochs_note(m)}, {secs:.0f} s; restricted to "
           f"non-overlapping contiguous segments in training and decoding: "
           f"{epochs_note(r)}, {secs_r:.0f} s. ML CRF: {template}, {args.crf_iter} L-BFGS "
           f"iterations, default λ. Averaged perceptron: the CRF's {template} features, "
           f"IOB2, pass {ap_passes} of at most {args.epochs} kept by dev F. McDonald et al.'s "
           f"figures beside (their NE set is CoNLL-2003 English, not Dutch).\n", *HEAD, *rows]
    print("\n".join(out))
    if not args.no_write:
        write_section(f"Segments (issue 19): {name}", "\n".join(out))


def _cli(checkout: str, argv: list[str], cwd: str) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak memory (MB) of ``python -m
    fstchunk ARGV`` run from ``checkout``; exits naming the command if it fails."""
    env = dict(os.environ, PYTHONPATH=checkout)
    with open(Path(cwd) / "log.txt", "w") as log:
        t = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "fstchunk", *argv], cwd=cwd, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        sys.exit(f"{checkout}: fstchunk {' '.join(argv)} failed:\n"
                 f"{(Path(cwd) / 'log.txt').read_text()}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def _loop_files(corpus: str, folder: Path, limit: int) -> tuple[str, str, int]:
    """The training and dev files of ``corpus`` in ``folder`` and the training size."""
    if corpus == "genia":
        sizes = []
        for name, n in (("train", limit), ("dev", 300)):
            lines = [x for x in open(data_path("genia", f"{name}.jsonl"),
                                     encoding="utf-8").read().split("\n") if x.strip()][:n]
            (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
            sizes.append(len(lines))
        return str(folder / "train.jsonl"), str(folder / "dev.jsonl"), sizes[0]
    from fstchunk.io.conll import read_conll, write_conll
    sizes = []
    for name in ("train", "dev"):
        sents = read_conll(data_path("conll2000", f"{name}.txt"))
        write_conll([[[*r[:-1], r[-1] if r[-1].endswith("-NP") else "O"] for r in s.rows]
                     for s in sents], folder / f"{name}.txt")
        sizes.append(len(sents))
    return str(folder / "train.txt"), str(folder / "dev.txt"), sizes[0]


def section_loop(args) -> None:
    if not args.before:
        sys.exit("--section loop needs --before DIR (the checkout to compare with)")
    root = str(Path(__file__).resolve().parents[1])
    variants = [("before", args.before, []), ("after", root, []),
                ("after, --checkpoint-every 0", root, ["--checkpoint-every", "0"])]
    rows, notes = [], []
    for corpus in ("genia", "np"):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            train, dev, n = _loop_files(corpus, folder, args.limit or 2000)
            times: dict[str, list[tuple[float, float]]] = {v[0]: [] for v in variants}
            peaks: dict[str, float] = {}
            for r in range(args.repeats):
                for label, checkout, extra in variants:
                    out = str(folder / f"{label[:5]}-{len(extra)}-{r}.npz")
                    secs, cpu, peak = _cli(checkout, ["segment", "train", "--train", train, "--dev",
                                                 dev, "--epochs", str(args.epochs), "--quiet",
                                                 "-o", out, *extra], tmp)
                    times[label].append((secs / args.epochs, cpu / args.epochs))
                    peaks[label] = max(peaks.get(label, 0.0), peak)
                    print(f"{corpus} {label} run {r + 1}: {secs:.1f} s, CPU {cpu:.1f} s",
                          file=sys.stderr)
            before, after = (load_model(str(folder / f"{x}-0-0.npz")) for x in ("befor", "after"))
            same = bool(np.array_equal(before.W_, after.W_))
            fs = [(h["dev_f_average"], h["dev_f_last"]) for h in before.settings_["history"]]
            same_f = fs == [(h["dev_f_average"], h["dev_f_last"])
                            for h in after.settings_["history"]]
            name = {"genia": f"GENIA, first {n} training sentences",
                    "np": "CoNLL-2000 NP chunks, all"}[corpus]
            rows.append(f"| {name} | " + " | ".join(
                " / ".join(f"{w:.1f} ({c:.1f})" for w, c in times[v[0]]) for v in variants)
                + f" | {peaks['before']:.0f} / {peaks['after']:.0f} | "
                f"{'yes' if same else 'NO'} | {'yes' if same_f else 'NO'} |")
            notes.append(f"{name}: dev F (averaged / last weights) per epoch "
                         + ", ".join(f"{a:.2f}/{b:.2f}" for a, b in fs) + ".")
    label = args.before_label or f"the checkout at `{args.before}`"
    out = [f"`fstchunk segment train --epochs {args.epochs} --dev DEV` (averaged, seed 0, "
           f"2**20 hashed features per type; the after runs write OUTPUT.ckpt and the "
           f"learner's state every epoch by default) in fresh processes, 'before' = "
           f"{label}, 'after' = this checkout through `fstchunk.learn.Trainer`; runs in "
           f"turn, {args.repeats} of each. Seconds per epoch = the command's wall time / "
           f"epochs (reading, features, dev F each epoch, calibration and the model files "
           f"included), each run, and in parentheses its CPU time (user + system) / epochs, "
           f"less sensitive to other load on the machine; peak resident memory of the "
           f"command (max over runs).\n",
           "| data | before s/epoch | after s/epoch | after, no checkpoints s/epoch | peak MB "
           "before / after | same weights | same dev F |", "|---|---|---|---|---|---|---|",
           *rows, "", *notes]
    print("\n".join(out))
    if not args.no_write:
        write_section("Segments (issue 33): segment train through the training loop",
                      "\n".join(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--section", default="genia,np,ned")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--crf-iter", type=int, default=100)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--limit", type=int, default=None, help="first N sentences of each set")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--before", default=None, help="--section loop: the checkout to compare")
    ap.add_argument("--before-label", default=None, help="what --before holds (for the text)")
    ap.add_argument("--repeats", type=int, default=2, help="--section loop: runs of each")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    for s in args.section.split(","):
        if s == "genia":
            section_genia(args)
        elif s in ("np", "ned"):
            section_table1(args, s)
        elif s == "loop":
            section_loop(args)
        else:
            ap.error(f"unknown section {s!r}; use genia, np, ned, loop")


if __name__ == "__main__":
    sys.exit(main())
