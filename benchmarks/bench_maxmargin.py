"""Max-margin Markov networks on CoNLL-2000 (issue 18; Tang, Wang & Wang): Tables 7 and 8,
Figure 1, MAP vs calibrated MEU, and training speed, M3N beside the ML CRF.

Sections (``--section``, comma-separated; each writes its own part of RESULTS.md):

* ``tune``: λ of the M3N (IOB2, tmpt-3) over ``--grid`` by dev F (dev.txt only);
* ``schemes`` (Table 7): M3N and ML CRF with tmpt-3 in IOB1, IOB2, IOE1, IOE2, IOBES,
  IOBES2, IOBES3, test P/R/F beside the paper's F;
* ``templates`` (Table 8): IOB2, tmpt-1..4, M3N and ML CRF;
* ``curves`` (Figure 1): the first 20/40/60/80/100% of train.txt, IOB2, tmpt-3: table
  and ``benchmarks/m3n_learning_curve.png``;
* ``calibrate``: the M3N models above, MAP vs MEU after fitting the temperature on
  dev.txt (``CRF.calibrate``), beside the ML CRF's MAP and MEU;
* ``speed``: one M3N pass (oracle sweep + block steps) and its certificate sweep
  against one ML objective+gradient over the whole training set; the full trainings'
  wall times from the IOB2 tmpt-3 models; peak memory.

Models are cached in ``--models DIR`` (file names carry objective, scheme, template,
fraction) and reused by later sections and runs; a lock per model file lets two
processes (one per core: ``taskset -c 0 ...`` and ``taskset -c 1 ...``) share them.

The standard error of F is the bootstrap over test sentences (``--resamples``);
M3N − CRF differences are paired (the same resamples for both models).

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_maxmargin.py \\
        --section tune,schemes --models /tmp/m3n
"""

from __future__ import annotations

import argparse
import fcntl
import math
import os
import sys

import numpy as np

from common import RESULTS, Timer, data_path, peak_rss_mb, write_section
from fstchunk import read_conll
from fstchunk import decode_sentences
from fstchunk.evaluation.chunks import evaluate, read_chunks
from fstchunk import CRF
from fstchunk.learn.objectives import MAX_MARGIN, ML
from fstchunk.models.maxmargin import l2_to_c

MM_L2 = MAX_MARGIN.default_l2
from fstchunk.runtime.parallel import single_threaded_blas

SCHEMES = ("IOB1", "IOB2", "IOE1", "IOE2", "IOBES", "IOBES2", "IOBES3")
TEMPLATES = ("tmpt1", "tmpt2", "tmpt3", "tmpt4")
FRACTIONS = (0.2, 0.4, 0.6, 0.8, 1.0)
#: Tang et al.'s M3N test F (Table 7: schemes with tmpt-3; Table 8: IOB2 templates)
PAPER_SCHEMES = {"IOB1": 93.48, "IOB2": 93.63, "IOE1": 93.45, "IOE2": 93.55}
PAPER_TEMPLATES = {"tmpt1": 93.40, "tmpt2": 93.48, "tmpt3": 93.63, "tmpt4": 93.58}
SECTIONS = ("tune", "schemes", "templates", "curves", "calibrate", "speed", "loss")


class Bench:
    def __init__(self, args):
        self.args = args
        self.train = read_conll(data_path("conll2000", "train.txt"))[:args.limit]
        self.dev = read_conll(data_path("conll2000", "dev.txt"))[:args.limit]
        self.test = read_conll(data_path("conll2000", "test.txt"))[:args.limit]
        os.makedirs(args.models, exist_ok=True)
        rng = np.random.default_rng(0)
        self.boot = rng.integers(0, len(self.test), size=(args.resamples, len(self.test)))

    # ------------------------------------------------------------------ models
    def path(self, kind: str, scheme: str = "IOB2", template: str = "tmpt3",
             frac: float = 1.0, l2: float | None = None) -> str:
        """kind: "ml", "m3n" (Hamming loss), or "m3n-f" / "m3n-h" (loss section:
        --loss-sentences, --loss-passes)."""
        a = self.args
        l2 = (a.ml_l2 if kind == "ml" else a.l2) if l2 is None else l2
        iters = {"ml": a.ml_iter, "m3n": a.passes}.get(kind, a.loss_passes)
        size = f"{round(frac * 100)}" if kind in ("ml", "m3n") else f"n{a.loss_sentences}"
        return os.path.join(a.models, f"{kind}_{scheme}_{template}_{size}_{l2:g}_{iters}.npz")

    def model(self, kind: str, scheme: str = "IOB2", template: str = "tmpt3",
              frac: float = 1.0, l2: float | None = None) -> CRF:
        """The cached model, or train it (waiting for another process that holds its lock)."""
        path = self.path(kind, scheme, template, frac, l2)
        with open(path + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.exists(path):
                self.fit(path, kind, scheme, template, frac, l2)
        return CRF.load(path)

    def ensure(self, specs) -> None:
        """Train every model of ``specs`` that is neither cached nor being trained by
        another process (non-blocking locks), in order; then wait for the others."""
        for spec in specs:
            path = self.path(*spec)
            with open(path + ".lock", "w") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                if not os.path.exists(path):
                    self.fit(path, *spec)
        for spec in specs:
            self.model(*spec)

    def fit(self, path, kind, scheme="IOB2", template="tmpt3", frac=1.0, l2=None) -> None:
        """Train kind "m3n" (BCFW, --passes, --tol) or "ml" and save it at ``path``."""
        a = self.args
        l2 = (a.ml_l2 if kind == "ml" else a.l2) if l2 is None else l2
        train = self.train[:max(1, round(frac * len(self.train)))]
        if kind in ("m3n-f", "m3n-h"):
            train = self.train[:a.loss_sentences]
        print(f"training {os.path.basename(path)} on {len(train)} sentences", flush=True)
        with single_threaded_blas():
            crf = CRF(template, scheme)
            data = crf._prepare(train)
            if kind == "m3n":
                crf.set_params(objective="max-margin", l2=l2, max_iter=a.passes, tol=a.tol).fit(data)
            elif kind == "ml":
                crf.set_params(objective="ml", l2=l2, max_iter=a.ml_iter).fit(data)
            else:
                crf.set_params(objective="max-margin", l2=l2, max_iter=a.loss_passes, tol=a.tol, loss="f" if kind == "m3n-f" else "hamming").fit(data)
        crf.settings_["train_sentences"] = len(train)
        crf.save(path)

    # ------------------------------------------------------------------ scoring
    def counts(self, model: CRF, sents, decoder: str = "map") -> np.ndarray:
        """Per sentence (tp, predicted, gold) chunk counts, conlleval's reading."""
        with single_threaded_blas():
            preds = decode_sentences(model, sents, decoder)
        out = np.zeros((len(sents), 3))
        for k, (s, p) in enumerate(zip(sents, preds)):
            g, h = set(read_chunks(s.column(-1))), set(read_chunks(p))
            out[k] = len(g & h), len(h), len(g)
        r = evaluate([s.column(-1) for s in sents], preds)       # the scorer agrees
        assert abs(r.overall.f - f_of(out.sum(0))) < 1e-9, (r.overall.f, f_of(out.sum(0)))
        return out

    def dev_f(self, model: CRF, decoder: str = "map") -> float:
        return f_of(self.counts(model, self.dev, decoder).sum(0))

    def boot_f(self, c: np.ndarray) -> np.ndarray:
        """F of each bootstrap resample of the test sentences."""
        s = c[self.boot].sum(axis=1)
        return 100 * 2 * s[:, 0] / np.maximum(s[:, 1] + s[:, 2], 1)


def f_of(c) -> float:
    tp, h, g = c
    return 100 * 2 * tp / (h + g) if h + g else 100.0


def prf(c) -> tuple[float, float, float]:
    tp, h, g = c
    return 100 * tp / max(h, 1), 100 * tp / max(g, 1), f_of(c)


def describe(m: CRF) -> str:
    s = m.settings_
    if s.get("objective") == "max-margin":
        return f"{s.get('passes')} passes, gap {s.get('duality_gap', math.nan):.3g}"
    return f"{s.get('iterations')} it."


def compare(b: Bench, rows, paper: dict, key_name: str) -> list[str]:
    """Table of M3N and ML CRF test P/R/F (± bootstrap SE) per row key."""
    out = [f"| {key_name} | paper M3N F | M3N P | M3N R | M3N F ± SE | CRF F ± SE "
           f"| M3N − CRF ± SE | dev F M3N / CRF | M3N training | M3N s / CRF s |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for key, m3n, ml in rows:
        cm, cc = b.counts(m3n, b.test), b.counts(ml, b.test)
        bm, bc = b.boot_f(cm), b.boot_f(cc)
        p, r, f = prf(cm.sum(0))
        fc = f_of(cc.sum(0))
        ref = f"{paper[key]:.2f}" if key in paper else "—"
        out.append(f"| {key} | {ref} | {p:.2f} | {r:.2f} | {f:.2f} ± {bm.std():.2f} "
                   f"| {fc:.2f} ± {bc.std():.2f} | {f - fc:+.2f} ± {(bm - bc).std():.2f} "
                   f"| {b.dev_f(m3n):.2f} / {b.dev_f(ml):.2f} | {describe(m3n)} "
                   f"| {m3n.settings_['train_seconds']:.0f} / {ml.settings_['train_seconds']:.0f} |")
        print(out[-1], flush=True)
    return out


def header(b: Bench, what: str) -> str:
    a = b.args
    return (f"{what} CoNLL-2000: {len(b.train)} training, {len(b.dev)} dev, {len(b.test)} "
            f"test sentences. M3N: Hamming loss, λ = {a.l2:g} (C = "
            f"{l2_to_c(a.l2, len(b.train)):.3g} in ½‖θ‖² + C Σ hinge), BCFW with pairwise "
            f"steps, at most {a.passes} passes or duality gap ≤ {a.tol:g}; ML CRF: λ = "
            f"{a.ml_l2:g}, {a.ml_iter} L-BFGS iterations (both λ per sentence, chosen on "
            f"dev). MAP decoding. Test F ± the bootstrap standard error over test sentences "
            f"({a.resamples} resamples; M3N − CRF paired). Each test figure is one run.\n")


def section_tune(b: Bench) -> None:
    out = [header(b, "λ of the M3N on dev (IOB2, tmpt-3); test set not read."),
           "| λ | C | passes | duality gap | primal | dev F (MAP) | train s |",
           "|---|---|---|---|---|---|---|"]
    best = None
    for l2 in b.args.grid:
        m = b.model("m3n", l2=l2)
        f = b.dev_f(m)
        s = m.settings_
        out.append(f"| {l2:g} | {l2_to_c(l2, len(b.train)):.3g} | {s['passes']} "
                   f"| {s['duality_gap']:.3g} | {s['final_objective']:.4g} | {f:.2f} "
                   f"| {s['train_seconds']:.0f} |")
        print(out[-1], flush=True)
        best = max(best or (f, l2), (f, l2))
    out.append(f"\nBest on dev: λ = {best[1]:g} (dev F {best[0]:.2f}; the standard error of "
               f"a dev F near 95 over ~22,000 chunks is about 0.2).")
    if best[1] != b.args.l2:
        chosen, prior, ml = b.model("m3n", l2=best[1]), b.model("m3n"), b.model("ml")
        cc, cp, cm = (b.counts(m, b.test) for m in (chosen, prior, ml))
        bc, bp, bm = (b.boot_f(c) for c in (cc, cp, cm))
        out.append(f"The tables of the other sections use λ = {b.args.l2:g} (Tang et al.'s "
                   f"C = 1, fixed before this tuning ran beside them). Test F of the "
                   f"dev-chosen λ = {best[1]:g} (one more test run): "
                   f"{f_of(cc.sum(0)):.2f} ± {bc.std():.2f}, against {f_of(cp.sum(0)):.2f} ± "
                   f"{bp.std():.2f} for λ = {b.args.l2:g} (difference "
                   f"{f_of(cc.sum(0)) - f_of(cp.sum(0)):+.2f} ± {(bc - bp).std():.2f}) and "
                   f"{f_of(cm.sum(0)):.2f} for the ML CRF (M3N − CRF "
                   f"{f_of(cc.sum(0)) - f_of(cm.sum(0)):+.2f} ± {(bc - bm).std():.2f}).")
    write_section("M3N (issue 18): λ on dev", "\n".join(out))


def section_schemes(b: Bench) -> None:
    rows = [(s, b.model("m3n", s), b.model("ml", s))
            for s in ("IOB2", *[x for x in SCHEMES if x != "IOB2"])]
    rows.sort(key=lambda r: SCHEMES.index(r[0]))
    out = [header(b, "Table 7 (tmpt-3, each chunk representation):"),
           *compare(b, rows, PAPER_SCHEMES, "scheme")]
    write_section("M3N (issue 18): Table 7, chunk representations", "\n".join(out))


def section_templates(b: Bench) -> None:
    order = ("tmpt1", "tmpt2", "tmpt4", "tmpt3")        # tmpt3 last: schemes trains it
    rows = [(t, b.model("m3n", template=t), b.model("ml", template=t)) for t in order]
    rows.sort(key=lambda r: TEMPLATES.index(r[0]))
    out = [header(b, "Table 8 (IOB2, each feature template):"),
           *compare(b, rows, PAPER_TEMPLATES, "template")]
    write_section("M3N (issue 18): Table 8, feature templates", "\n".join(out))


def section_curves(b: Bench) -> None:
    rows = [(f"{round(100 * f)}%", b.model("m3n", frac=f), b.model("ml", frac=f))
            for f in FRACTIONS]
    out = [header(b, "Figure 1 (IOB2, tmpt-3, the first part of train.txt):"),
           *compare(b, rows, {}, "training set")]
    fm = [float(r.split("|")[5].split("±")[0]) for r in out[3:]]
    fc = [float(r.split("|")[6].split("±")[0]) for r in out[3:]]
    png = os.path.join(os.path.dirname(RESULTS) if not b.args.no_write else "/tmp",
                       "m3n_learning_curve.png")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.5))
    x = [100 * f for f in FRACTIONS]
    ax.plot(x, fm, "o-", label="M3N (BCFW)")
    ax.plot(x, fc, "s--", label="CRF (ML)")
    ax.set_xlabel("% of the CoNLL-2000 training set")
    ax.set_ylabel("test F1")
    ax.set_title("Learning curves, IOB2, tmpt-3")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    diff = [float(r.split("|")[7].split("±")[0]) for r in out[3:]]     # paired column
    ahead = sum(d > 0 for d in diff)
    out.append(f"\nM3N ahead of the CRF at {ahead} of {len(diff)} training-set sizes; M3N − CRF "
               f"(paired) from {min(diff):+.2f} to {max(diff):+.2f} F. Gains from each size to the next: "
               f"M3N {', '.join(f'{b - a:+.2f}' for a, b in zip(fm, fm[1:]))}; CRF "
               f"{', '.join(f'{b - a:+.2f}' for a, b in zip(fc, fc[1:]))}. Tang et al.'s "
               f"claim (M3N above the CRF and smoother) holds here only where the table's "
               f"paired difference is positive by more than its SE.")
    out.append(f"\nPlot: `benchmarks/{os.path.basename(png)}`.")
    write_section("M3N (issue 18): Figure 1, learning curves", "\n".join(out))


def section_calibrate(b: Bench) -> None:
    out = [header(b, "MAP vs calibrated MEU (temperature fitted on dev.txt):"),
           "| model | T | dev NLL/sentence at T (at T = 1) | test F MAP ± SE | test F MEU ± SE "
           "| MEU − MAP ± SE |", "|---|---|---|---|---|---|"]
    for name, m in [(f"M3N {s}", b.model("m3n", s)) for s in ("IOB2", "IOBES")] + [
            (f"ML CRF {s}", b.model("ml", s)) for s in ("IOB2", "IOBES")]:
        T, nll, nll1 = "1 (ML)", "—", ""
        if m.settings_.get("objective") == "max-margin":
            with single_threaded_blas():
                t = m.calibrate(b.dev, source="dev.txt")
            T = f"{t:.4g}"
            nll = f"{m.settings_['calibration_nll']:.3f} ({m.settings_['calibration_nll_t1']:.3f})"
        cmap, cmeu = b.counts(m, b.test, "map"), b.counts(m, b.test, "meu")
        bmap, bmeu = b.boot_f(cmap), b.boot_f(cmeu)
        out.append(f"| {name} | {T} | {nll}{nll1} | {f_of(cmap.sum(0)):.2f} ± {bmap.std():.2f} "
                   f"| {f_of(cmeu.sum(0)):.2f} ± {bmeu.std():.2f} "
                   f"| {f_of(cmeu.sum(0)) - f_of(cmap.sum(0)):+.2f} ± {(bmeu - bmap).std():.2f} |")
        print(out[-1], flush=True)
    write_section("M3N (issue 18): MAP vs calibrated MEU", "\n".join(out))


def section_loss(b: Bench) -> None:
    """--loss f against Hamming: each loss's λ chosen on dev over its own grid."""
    a = b.args
    out = [f"M3N with the chunk-F loss Δ = 1 − F_1(y | y_i) (exact loss-augmented "
           f"inference over (state, match, tp, m)) against the per-token Hamming loss, on "
           f"the first {a.loss_sentences} sentences of train.txt (IOB2, tmpt-3; the F-loss "
           f"oracle costs about 57 ms a sentence, so not the whole set), {a.loss_passes} "
           f"BCFW passes at most, duality gap ≤ {a.tol:g}; each loss's λ chosen by dev F "
           f"over its own grid (a loss of at most 1 per sentence wants a smaller λ than "
           f"one of up to n); test F of the chosen models only, ± the bootstrap standard "
           f"error ({a.resamples} resamples; the difference paired).\n",
           "| loss | λ | passes | duality gap | train s | dev F (MAP) |", "|---|---|---|---|---|---|"]
    chosen = {}
    for kind, grid_ in (("m3n-h", a.grid_hamming), ("m3n-f", a.grid_f)):
        for l2 in grid_:
            m = b.model(kind, l2=l2)
            f = b.dev_f(m)
            s = m.settings_
            out.append(f"| {'F' if kind == 'm3n-f' else 'Hamming'} | {l2:g} | {s['passes']} "
                       f"| {s['duality_gap']:.3g} | {s['train_seconds']:.0f} | {f:.2f} |")
            print(out[-1], flush=True)
            chosen[kind] = max(chosen.get(kind, (-1.0, None, None)), (f, l2, m),
                               key=lambda r: r[0])
    ch, cf = b.counts(chosen["m3n-h"][2], b.test), b.counts(chosen["m3n-f"][2], b.test)
    bh, bf = b.boot_f(ch), b.boot_f(cf)
    out += ["", "| loss (dev-chosen λ) | test P | test R | test F ± SE |", "|---|---|---|---|"]
    for name, c, bt in (("Hamming", ch, bh), ("F", cf, bf)):
        p, r, f = prf(c.sum(0))
        out.append(f"| {name} | {p:.2f} | {r:.2f} | {f:.2f} ± {bt.std():.2f} |")
    out.append(f"\nF − Hamming: {f_of(cf.sum(0)) - f_of(ch.sum(0)):+.2f} ± "
               f"{(bf - bh).std():.2f} (paired bootstrap).")
    print("\n".join(out[-5:]))
    write_section("M3N (issue 18): chunk-F loss vs Hamming loss", "\n".join(out))


def section_speed(b: Bench) -> None:
    """One pass and one certificate vs one ML evaluation, then both full trainings one
    after the other on the whole machine, as the command line runs them (the certificate's
    oracle sweep uses every core; ML is one process): run it on a quiet machine."""
    from fstchunk.models.bcfw import BCFW
    done: dict = {}
    a = b.args
    with single_threaded_blas():
        crf = CRF("tmpt3", "IOB2")
        data = crf._prepare(b.train)
        fun = crf.objective_function("ml", data, a.ml_l2)
        fun(crf.theta_)
        with Timer() as t_ml:
            fun(crf.theta_ + 1e-3)
        solver = BCFW(crf, data, a.l2)
        with Timer() as t_pass:
            solver.run_pass()
        with Timer() as t_cert:
            solver.certificate()
        for kind in () if a.components_only else ("ml", "m3n"):   # one after the other
            fresh = crf.copy(np.zeros_like(crf.theta_))
            with Timer() as t:
                if kind == "m3n":
                    fresh.set_params(objective="max-margin", l2=a.l2, max_iter=a.passes, tol=a.tol).fit(data)
                else:
                    fresh.set_params(objective="ml", l2=a.ml_l2, max_iter=a.ml_iter).fit(data)
            done[kind] = (t.seconds, describe(fresh), peak_rss_mb(),
                          f_of(b.counts(fresh, b.test).sum(0)))
    if a.components_only:
        _speed_components(b, t_ml.seconds, t_pass.seconds, t_cert.seconds)
        return
    (wm, dm, rm, fm), (wc, dc, rc, fc) = done["m3n"], done["ml"]
    out = [f"CoNLL-2000 train.txt ({len(b.train)} sentences), IOB2, tmpt-3, single-threaded "
           f"BLAS.\n",
           "| work over the whole training set (one process) | seconds | ratio to one ML "
           "objective+gradient |", "|---|---|---|",
           f"| ML objective + gradient (after a warm-up call) | {t_ml.seconds:.2f} | 1.0 |",
           f"| M3N: one BCFW pass (oracle + block step per sentence) | {t_pass.seconds:.2f} "
           f"| {t_pass.seconds / t_ml.seconds:.1f} |",
           f"| M3N: the certificate (one hinge sweep) | {t_cert.seconds:.2f} "
           f"| {t_cert.seconds / t_ml.seconds:.1f} |",
           "",
           "| full training (one after the other, the whole machine) | wall s | peak MB so far "
           "| test F (MAP) |", "|---|---|---|---|",
           f"| M3N, λ = {a.l2:g}, {dm} | {wm:.0f} | {rm:.0f} | {fm:.2f} |",
           f"| ML CRF, λ = {a.ml_l2:g}, {dc} | {wc:.0f} | {rc:.0f} | {fc:.2f} |",
           "",
           f"The M3N pass finds the Hamming oracles of {max(1, min(64, len(b.train) // 100))} "
           f"sentences at a time in one padded Viterbi (the line search stays exact; "
           f"`models/bcfw.py`); the models of the other sections were trained before that "
           f"change, one oracle per sentence.",
           "",
           f"M3N / ML wall time: {wm / wc:.2f} (target ≤ 2); peak memory of the process "
           f"{max(rm, rc):.0f} MB (target ≤ 6 GB)."]
    print("\n".join(out))
    write_section("M3N (issue 18): training speed", "\n".join(out))


def _speed_components(b: Bench, t_ml: float, t_pass: float, t_cert: float) -> None:
    """The speed section without the full trainings: their wall times projected from the
    timed components (M3N: passes × (pass + certificate); ML: iterations × one
    evaluation, L-BFGS taking about one evaluation per iteration)."""
    a = b.args
    m3n, ml = a.passes * (t_pass + t_cert), a.ml_iter * t_ml
    out = [f"CoNLL-2000 train.txt ({len(b.train)} sentences), IOB2, tmpt-3, one process, "
           f"single-threaded BLAS (the certificate's oracle sweep over the usable cores).\n",
           "| work over the whole training set | seconds | ratio to one ML objective+gradient |",
           "|---|---|---|",
           f"| ML objective + gradient (after a warm-up call) | {t_ml:.2f} | 1.0 |",
           f"| M3N: one BCFW pass (oracle + block step per sentence) | {t_pass:.2f} "
           f"| {t_pass / t_ml:.1f} |",
           f"| M3N: the certificate (one hinge sweep) | {t_cert:.2f} | {t_cert / t_ml:.1f} |",
           "",
           f"Projected full trainings (not timed end to end in this run): M3N {a.passes} "
           f"passes × (pass + certificate) = {m3n:.0f} s; ML {a.ml_iter} iterations × one "
           f"evaluation = {ml:.0f} s; M3N / ML = {m3n / ml:.2f} (target ≤ 2). Peak resident "
           f"memory of this process (features, the ML objective, one BCFW solver): "
           f"{peak_rss_mb():.0f} MB (target ≤ 6 GB)."]
    print("\n".join(out))
    write_section("M3N (issue 18): training speed", "\n".join(out))


def specs(b: Bench, sections) -> list[tuple]:
    """The models the sections need, most needed first (IOB2 tmpt-3 is in most)."""
    out = [("m3n",), ("ml",)]
    if "tune" in sections:
        out += [("m3n", "IOB2", "tmpt3", 1.0, l2) for l2 in b.args.grid]
    if "schemes" in sections:
        out += [(k, s) for s in SCHEMES for k in ("m3n", "ml")]
    if "templates" in sections:
        out += [(k, "IOB2", t) for t in TEMPLATES for k in ("m3n", "ml")]
    if "loss" in sections:
        out += [("m3n-h", "IOB2", "tmpt3", 1.0, l2) for l2 in b.args.grid_hamming]
        out += [("m3n-f", "IOB2", "tmpt3", 1.0, l2) for l2 in b.args.grid_f]
    if "curves" in sections:
        out += [(k, "IOB2", "tmpt3", f) for f in FRACTIONS for k in ("m3n", "ml")]
    return out


def grid(text: str) -> list[float]:
    return [float(x) for x in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--section", default="tune,schemes,templates,curves,calibrate,speed")
    ap.add_argument("--models", required=True, help="model cache directory")
    ap.add_argument("--l2", type=float, default=MM_L2, help="M3N λ (per sentence)")
    ap.add_argument("--grid", type=grid, default=[1e-5, MM_L2, 2e-4])
    ap.add_argument("--passes", type=int, default=40)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--ml-l2", type=float, default=ML.default_l2)
    ap.add_argument("--ml-iter", type=int, default=150)
    ap.add_argument("--loss-sentences", type=int, default=400)
    ap.add_argument("--loss-passes", type=int, default=8)
    ap.add_argument("--grid-hamming", type=grid, default=[3e-4, 1e-3, 3e-3])
    ap.add_argument("--grid-f", type=grid, default=[5e-5, 2e-4])
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--limit", type=int, default=None, help="first N sentences of each set")
    ap.add_argument("--train-only", action="store_true",
                    help="train the sections' models (sharing the work with other processes "
                         "on the same --models) and stop")
    ap.add_argument("--components-only", action="store_true",
                    help="speed: time one pass, one certificate and one ML evaluation only")
    ap.add_argument("--no-write", action="store_true", help="print, do not touch RESULTS.md")
    args = ap.parse_args()
    sections = args.section.split(",")
    bad = [s for s in sections if s not in SECTIONS]
    if bad:
        ap.error(f"unknown section {bad[0]!r}; use {', '.join(SECTIONS)}")
    b = Bench(args)
    if args.no_write:
        globals()["write_section"] = lambda key, body: print(f"(section '{key}' not written)")
    b.ensure(specs(b, sections))
    if args.train_only:
        return
    for s in sections:
        globals()[f"section_{s}"](b)


if __name__ == "__main__":
    sys.exit(main())
