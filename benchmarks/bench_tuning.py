"""Choosing λ on the development set: the ML penalty, then the minimum-risk one.

For one corpus, trains an ML CRF for each λ of ``--ml-grid`` and scores it on the
development set (conll2000/dev.txt or ned.testa; the test set is never read) with MAP
and exact MEU decoding; the λ with the best mean of the two dev F is kept (one
decoder's F alone moves by a few hundredths between neighbouring λ, which is noise).
From that model, trains a minimum-risk CRF (``--meu-objective``, ``--meu-iter`` L-BFGS
iterations) for each λ of ``--meu-grid`` and keeps the one with the best dev F of
MEU-trained+MEU. Ties go to the larger λ. With ``--meu-from all`` the minimum-risk CRFs
start from every ML model of the grid instead, and the starting λ is chosen jointly with
the minimum-risk λ (a less regularised ML model is more confident on its own training
data, which leaves the minimum-risk gradient less to work with, so the best start for
minimum-risk training need not be the best ML model).
The chosen values are what bench_training.py is then run with for the test figures
(``--l2``, ``--meu-l2`` and, if the start differs from the ML choice, ``--meu-init-l2``).

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_tuning.py --corpus conll2000 \\
        [--save-dir DIR]

With ``--defaults``, no grid: the check of issue 16 instead.  An ML CRF with every
default (λ = the registry's default of ``ml``, ``--max-iter`` iterations), then a minimum-risk CRF
from it (``--meu-objective``, λ = its default, ``--meu-iter`` iterations), and, to show
what the default prevents, the same from the same start with ``--collapse-l2`` (1.0:
the old CLI default, on either scale a penalty of order 1 flattens the model). Dev F of
MAP and MEU decoding for each; section "Default λ (issue 16)[: corpus]".

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_tuning.py --defaults

With ``--save-dir``, models are written there and an existing file is reused rather
than retrained; it must have been trained with the same objective, λ, β, iteration cap,
features and training sentences, or the run stops naming the difference.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

from bench_training import CORPORA, f_of
from common import Timer, data_path, write_section
from fstchunk.schemes import encodings as enc
from fstchunk import read_conll
from fstchunk import Trainer
from fstchunk.learn.objectives import ML, MEU, MEU_CORPUS

DEFAULT_L2 = {o.name: o.default_l2 for o in (ML, MEU, MEU_CORPUS)}
from fstchunk import CRF
from fstchunk import SCHEMES
from fstchunk.runtime.parallel import single_threaded_blas


def grid(text: str) -> list[float]:
    """A comma-separated list of λ values (finite, >= 0)."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of numbers: {text!r}")
    bad = [v for v in values if not (v >= 0 and math.isfinite(v))]
    if bad:
        raise argparse.ArgumentTypeError(f"λ must be finite and >= 0, got {bad[0]!r}")
    return values


def trained(path, make, expect: dict):
    """The model at ``path`` if it exists and its settings agree with ``expect`` (which
    ``make()``'s model is stamped with); else ``make()``, saved to ``path``."""
    if path and os.path.exists(path):
        model = CRF.load(path)
        got = {k: model.scheme_ if k == "scheme" else model.settings_.get(k) for k in expect}
        if got != expect:
            sys.exit(f"{path}: trained with {got}, expected {expect}; "
                     "remove it or change --save-dir")
        return model
    with Timer() as t, single_threaded_blas():
        model = make()
    model.settings_.update(expect, train_seconds=t.seconds)
    if path:
        model.save(path)
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="conll2000", choices=CORPORA)
    # λ on the objectives' per-sentence scale (objectives.py); before issue 16 the ML and
    # per-sentence MEU objectives were sums, and their λ was S times larger
    ap.add_argument("--ml-grid", type=grid, default="3e-7,1e-6,3e-6,1e-5,3e-5,1e-4")
    ap.add_argument("--meu-grid", type=grid, default="1e-7,1e-6,1e-5,1e-4")
    ap.add_argument("--meu-objective", default="meu-corpus", choices=("meu", "meu-corpus"))
    ap.add_argument("--scheme", default="IOB2", choices=SCHEMES,
                    help="scheme the CRF tags in (the data's IOB2 tags are converted; "
                         "predictions are converted back before scoring)")
    ap.add_argument("--beta", type=float, default=1.0,
                    help="the standard β of F_β = (1+β²)PR/(β²P+R)")
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--meu-iter", type=int, default=20)
    ap.add_argument("--meu-from", default="best", choices=("best", "all"),
                    help="start minimum-risk training from the chosen ML model only, or "
                         "from every ML model of the grid (the start is then chosen on dev "
                         "jointly with the minimum-risk λ)")
    ap.add_argument("--save-dir", default=None)
    ap.add_argument("--defaults", action="store_true",
                    help="the default-λ check of issue 16 instead of a grid (see the doc)")
    ap.add_argument("--collapse-l2", type=float, default=1.0,
                    help="with --defaults: the λ of the row that shows the old failure")
    ap.add_argument("--limit", type=int, default=None, help="first N sentences of each set")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.defaults:
        return defaults_check(args)
    tr, dv, _, template = CORPORA[args.corpus]
    train = read_conll(data_path(*tr))[:args.limit]
    dev = read_conll(data_path(*dv))[:args.limit]
    fresh = CRF(template, args.scheme)
    train_data = fresh._prepare(train)
    if args.save_dir:
        os.makedirs(args.save_dir, exist_ok=True)

    def path(name):
        return os.path.join(args.save_dir, name) if args.save_dir else None

    def dev_f(model):
        with single_threaded_blas():
            return [f_of(model, dev, d, args.beta)[0] for d in ("map", "meu")]

    out = [f"Corpus: {args.corpus}, features {template}, CRF tags in {args.scheme} "
           f"({len(fresh.tags_)} tags), β = {args.beta}; "
           f"{len(train)} training sentences, {len(dev)} development sentences "
           f"({dv[-1]}). Test set not read.\n",
           "| training | λ | iterations | train s | dev F (MAP) | dev F (MEU) |",
           "|---|---|---|---|---|---|"]
    ml_rows = []
    data = {"template": template, "train_sentences": len(train), "scheme": args.scheme}
    for lam in args.ml_grid:
        def make(lam=lam):
            m = fresh.copy(np.zeros_like(fresh.theta_))
            return m.set_params(objective="ml", l2=lam, max_iter=args.max_iter).fit(train_data)
        m = trained(path(f"ml_l{lam:g}.npz"), make,
                    dict(data, objective="ml", l2=lam, max_iter=args.max_iter))
        fm, fe = dev_f(m)
        ml_rows.append(((fm + fe) / 2, lam, m))
        out.append(f"| ML | {lam:g} | {m.settings_.get('iterations')} | "
                   f"{m.settings_.get('train_seconds', float('nan')):.0f} | {fm:.2f} | {fe:.2f} |")
        print(out[-1], flush=True)
    _, ml_lam, _ = max(ml_rows, key=lambda r: r[:2])
    starts = ml_rows if args.meu_from == "all" else [r for r in ml_rows if r[1] == ml_lam]
    meu_rows = []
    for _, start_lam, ml in starts:
        for lam in args.meu_grid:
            def make(lam=lam, ml=ml):
                m = ml.copy()
                return m.set_params(warm_start=True, objective=args.meu_objective, l2=lam, beta=args.beta, max_iter=args.meu_iter).fit(train_data)
            m = trained(path(f"{args.meu_objective}_l{lam:g}_from_ml_l{start_lam:g}.npz"),
                        make, dict(data, objective=args.meu_objective, l2=lam,
                                   beta=args.beta, max_iter=args.meu_iter,
                                   init_l2=start_lam))
            fm, fe = dev_f(m)
            meu_rows.append((fe, start_lam, lam))
            out.append(f"| {args.meu_objective} from ML λ = {start_lam:g} | {lam:g} | "
                       f"{m.settings_.get('iterations')} | "
                       f"{m.settings_.get('train_seconds', float('nan')):.0f} | {fm:.2f} | "
                       f"{fe:.2f} |")
            print(out[-1], flush=True)
    _, start_lam, meu_lam = max(meu_rows)
    out.append("\nTraining seconds are for orientation only (tuning runs may share the "
               "machine); the timed figures are in the 'CRF training' sections.")
    out.append(f"\nChosen on dev: λ = {ml_lam:g} for ML (best mean dev F of ML+MAP and "
               f"ML+MEU), λ = {meu_lam:g} for {args.meu_objective} (best dev F of "
               f"MEU-trained+MEU)"
               + (f", started from ML λ = {start_lam:g} (chosen jointly)."
                  if args.meu_from == "all" else "."))
    print(out[-1])
    if not args.no_write:
        key = f"λ on dev: {args.corpus}"
        if args.meu_objective != "meu-corpus":
            key += f", {args.meu_objective} objective"
        if args.scheme != "IOB2":
            key += f", {args.scheme} tags"
        if args.meu_from == "all":
            key += ", every ML start"
        write_section(key, "\n".join(out))


def defaults_check(args) -> None:
    """ML with all defaults, then minimum-risk training from it with its default λ and
    with ``--collapse-l2``; dev F (MAP, MEU) of each, written to RESULTS.md."""
    tr, dv, _, template = CORPORA[args.corpus]
    train = read_conll(data_path(*tr))[:args.limit]
    dev = read_conll(data_path(*dv))[:args.limit]
    ml = CRF(template, args.scheme)
    data = ml._prepare(train)
    rows = []

    def run(model, objective, l2, iters, label):
        trainer = Trainer(objective=objective, l2=l2, beta=args.beta, max_iter=iters,
                          progress=False)
        with Timer() as t, single_threaded_blas():
            trainer.fit(model, data)
        with single_threaded_blas():
            fm, fe = (f_of(model, dev, d, args.beta)[0] for d in ("map", "meu"))
        rows.append(f"| {label} | {trainer.l2:g} | {model.settings_['iterations']} | "
                    f"{t.seconds:.0f} | {fm:.2f} | {fe:.2f} |")
        print(rows[-1], flush=True)
        return fm, fe

    def start():
        return ml.copy()

    ml_f = run(ml, "ml", None, args.max_iter, "ML (default λ)")
    meu_f = run(start(), args.meu_objective, None, args.meu_iter,
                f"{args.meu_objective} from it (default λ)")
    bad_f = run(start(), args.meu_objective, args.collapse_l2, args.meu_iter,
                f"{args.meu_objective} from it, λ = {args.collapse_l2:g} (old CLI default)")
    worst = min(meu_f[0] - ml_f[0], meu_f[1] - ml_f[1])
    # noise: the binomial standard error of an F of about ml_f over the dev set's gold
    # chunks, SE ≈ 100·sqrt(F(1−F)/n) (a rough reading; F is not a proportion)
    n_gold = sum(len(enc.conlleval_chunks(s.column(-1))) for s in dev)
    se = 100.0 * math.sqrt(ml_f[0] / 100 * (1 - ml_f[0] / 100) / n_gold)
    out = [f"Corpus: {args.corpus}, features {template}, CRF tags in {args.scheme} "
           f"({len(ml.tags_)} tags), β = {args.beta}; {len(train)} training sentences, "
           f"{len(dev)} development sentences ({dv[-1]}). Test set not read. Objectives on "
           f"the per-sentence scale (fstchunk/learn/objectives.py); default λ = "
           f"{DEFAULT_L2}; Trainer defaults otherwise (tol 1e-9).\n",
           "| training | λ | iterations | train s | dev F (MAP) | dev F (MEU) |",
           "|---|---|---|---|---|---|", *rows,
           f"\nWith the defaults, the {args.meu_objective}-trained model minus the ML model "
           f"it starts from: {meu_f[0] - ml_f[0]:+.2f} (MAP decoding), "
           f"{meu_f[1] - ml_f[1]:+.2f} (MEU decoding); "
           + (f"the standard error of a dev F near {ml_f[0]:.1f} over {n_gold} gold chunks "
              f"is about {se:.2f}, so this is "
              + ("within noise or better." if worst >= -2 * se else
                 f"a drop of {-worst:.2f}, beyond two standard errors: CHECK."))
           + f" With λ = {args.collapse_l2:g} the same training falls to "
           f"{bad_f[0]:.2f} / {bad_f[1]:.2f}: the default is what matters."]
    print(out[-1])
    if not args.no_write:
        key = "Default λ (issue 16)" + ("" if args.corpus == "conll2000" else f": {args.corpus}")
        write_section(key, "\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
