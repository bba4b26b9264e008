"""CRF training: speed of the objectives, ML vs minimum-risk, and CRFsuite as a peer.

Reports, for one corpus (CoNLL-2000 chunking or CoNLL-2002 Dutch NER):
* time of one ML objective+gradient, one MEU-corpus and one per-sentence MEU
  evaluation over the whole training set, peak memory;
* test-set conlleval F of ML+MAP, ML+MEU decoding, MEU-trained+MAP and
  MEU-trained+MEU, with dev F beside them (λ is fixed a priori or tuned on dev,
  never on test); the MEU model is trained here from the ML one (per-sentence
  ``meu`` or ``meu-corpus`` objective) unless ``--meu-model`` gives one;
* python-crfsuite trained on the same feature strings (L-BFGS, c2 = λ): F and time.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_training.py --corpus conll2000 \\
        [--meu-objective meu-corpus --meu-l2 1e-6 --meu-iter 20] [--save-dir DIR]

Objective times are the median of 3 evaluations after one warm-up call (the
first call also builds X^T and touches the weight matrices).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from common import Timer, data_path, peak_rss_mb, write_section
from fstchunk import decode_sentences
from fstchunk import read_conll
from fstchunk.schemes import encodings as enc
from fstchunk import CRF
from fstchunk import OBJECTIVES
from fstchunk import evaluate
from fstchunk.models.features import token_features
from fstchunk.runtime.parallel import single_threaded_blas

CORPORA = {"conll2000": (("conll2000", "train.txt"), ("conll2000", "dev.txt"),
                         ("conll2000", "test.txt"), "tmpt3"),
           "ned": (("conll2002", "ned.train"), ("conll2002", "ned.testa"),
                   ("conll2002", "ned.testb"), "ner")}


def f_of(model, sents, decoder, beta=1.0):
    preds = decode_sentences(model, sents, decoder, beta)
    r = evaluate([s.column(-1) for s in sents], preds)
    return r.overall.f, r.overall.precision, r.overall.recall


def timed(fun, theta, repeats: int = 3) -> tuple[float, float]:
    """(seconds of a first call, median seconds of ``repeats`` later calls), θ
    nudged each time so that no cache answers."""
    th = theta.copy()
    with Timer() as t:
        fun(th)
    times = []
    for _ in range(repeats):
        th[0] += 1e-6
        with Timer() as u:
            fun(th)
        times.append(u.seconds)
    return t.seconds, float(np.median(times))


def crfsuite_peer(train, test, template, c2, max_iter, scheme="IOB2"):
    """CRFsuite's test F and training seconds, its labels converted from the data's
    IOB2 to ``scheme`` and its predictions back. CRFsuite's Viterbi is not restricted to
    valid sequences, so its predictions are read leniently in ``scheme``
    (``tags_to_chunks(strict=False)``; on ned.testb in IOBES 2 of 5195 sentences are
    invalid, and scoring the raw tags with conlleval's reading instead moves F by 0.03)."""
    import pycrfsuite
    trainer = pycrfsuite.Trainer(verbose=False)
    for s in train:
        trainer.append(token_features(s.column(0), s.column(1), template),
                       enc.convert(s.column(-1), "IOB2", scheme))
    trainer.set_params({"c1": 0.0, "c2": c2, "max_iterations": max_iter})
    with Timer() as t:
        trainer.train("/tmp/fstchunk_peer.crfsuite")
    tagger = pycrfsuite.Tagger()
    tagger.open("/tmp/fstchunk_peer.crfsuite")
    preds = [enc.convert(tagger.tag(token_features(s.column(0), s.column(1), template)),
                         scheme, "IOB2", strict=False) for s in test]
    r = evaluate([s.column(-1) for s in test], preds)
    return r.overall.f, t.seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="conll2000", choices=CORPORA)
    ap.add_argument("--l2", type=float, default=None,
                    help="λ of ML on the objectives' per-sentence scale (default: "
                         "the registry's default for ml)")
    ap.add_argument("--meu-objective", default="meu", choices=("meu", "meu-corpus"))
    ap.add_argument("--meu-l2", type=float, default=None,
                    help="λ of the MEU objective (per-sentence scale, like ML's); default "
                         "the registry's default λ of the objective")
    ap.add_argument("--scheme", default="IOB2", choices=enc.SCHEMES,
                    help="scheme the CRF (and the peer) tag in; the data's IOB2 tags are "
                         "converted and predictions converted back before scoring")
    ap.add_argument("--beta", type=float, default=1.0,
                    help="the standard β of F_β = (1+β²)PR/(β²P+R)")
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--meu-iter", type=int, default=10)
    ap.add_argument("--meu-init-l2", type=float, default=None,
                    help="start MEU training from an ML model trained with this λ "
                         "(default: the ML model of the rows, λ = --l2)")
    ap.add_argument("--ml-model", default=None, help="use this trained ML model")
    ap.add_argument("--meu-model", default=None, help="use this MEU-trained model")
    ap.add_argument("--save-dir", default=None, help="write ml.npz and meu.npz here")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--limit", type=int, default=None, help="first N sentences of each set")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.l2 is None:
        args.l2 = OBJECTIVES["ml"].default_l2
    if args.meu_l2 is None:
        args.meu_l2 = OBJECTIVES[args.meu_objective].default_l2
    for name in ("l2", "meu_l2", "meu_init_l2"):
        value = getattr(args, name)
        if value is not None and not (np.isfinite(value) and value >= 0):
            ap.error(f"--{name.replace('_', '-')} must be a finite number >= 0, got {value}")
    if args.meu_init_l2 is not None and args.meu_model:
        ap.error("--meu-init-l2 trains the model that MEU training starts from; "
                 "with --meu-model there is no MEU training to start")
    if args.meu_init_l2 == args.l2:
        args.meu_init_l2 = None
    tr, dv, te, template = CORPORA[args.corpus]
    train = read_conll(data_path(*tr))[:args.limit]
    dev = read_conll(data_path(*dv))[:args.limit]
    test = read_conll(data_path(*te))[:args.limit]
    out = [f"Corpus: {args.corpus}, features {template}, CRF tags in {args.scheme}, "
           f"λ = {args.l2} for ML and "
           f"{args.meu_l2} for MEU ({args.meu_objective}"
           + (f", started from an ML model with λ = {args.meu_init_l2}"
              if args.meu_init_l2 is not None else "")
           + f"; chosen a priori or on dev, never on test), β = {args.beta}; "
           f"{len(train)} training sentences."]
    with Timer() as t:
        crf = CRF(template, args.scheme)
        data = crf._prepare(train)
    out.append(f"\nFeature extraction: {t.seconds:.1f} s; {len(crf.fmap_)} feature strings, "
               f"{crf.P} (attribute, tag) weights, {len(crf.tags_)} tags.\n")
    out.append("| evaluation over the whole training set | seconds |")
    out.append("|---|---|")
    theta = np.random.default_rng(0).normal(scale=0.01, size=crf.theta_.shape)
    with single_threaded_blas():
        ml_first, ml_s = timed(crf.objective_function("ml", data, args.l2), theta)
        out.append(f"| ML objective + gradient | {ml_s:.2f} (first call {ml_first:.2f}) |")
        first, mc = timed(crf.objective_function("meu-corpus", data, args.meu_l2, args.beta), theta)
        out.append(f"| MEU-corpus objective + gradient (batched, 1 process) | {mc:.2f} "
                   f"({mc / ml_s:.1f}x ML; first call {first:.2f}) |")
        with Timer() as t:
            crf.objective_function("meu", data, args.meu_l2, args.beta)(theta)
        out.append(f"| per-sentence MEU objective + gradient (2 processes, one call) "
                   f"| {t.seconds:.2f} |")
    print("\n".join(out), flush=True)

    def loaded(path, option):
        model = CRF.load(path)
        if model.scheme_ != enc.canonical_scheme(args.scheme):
            sys.exit(f"{option} {path}: the model tags in {model.scheme_}, not --scheme "
                     f"{args.scheme}")
        return model

    if args.ml_model:
        ml = loaded(args.ml_model, "--ml-model")
        ml_time = ml.settings_.get("train_seconds", float("nan"))
    else:
        with Timer() as t, single_threaded_blas():
            crf.set_params(objective="ml", l2=args.l2, max_iter=args.max_iter).fit(data)
        ml, ml_time = crf, t.seconds
    start = ml
    if args.meu_model:
        meu = loaded(args.meu_model, "--meu-model")
    else:
        if args.meu_init_l2 is not None:
            start = crf.copy(np.zeros_like(crf.theta_))
            with single_threaded_blas():
                start.set_params(objective="ml", l2=args.meu_init_l2, max_iter=args.max_iter).fit(data)
        meu = start.copy()
        with Timer() as t, single_threaded_blas():
            meu.set_params(warm_start=True, objective=args.meu_objective, l2=args.meu_l2, beta=args.beta, max_iter=args.meu_iter).fit(data)
        meu.settings_["train_seconds"] = t.seconds
    if args.save_dir:
        ml.save(f"{args.save_dir}/ml.npz")
        meu.save(f"{args.save_dir}/meu.npz")
        if start is not ml:
            start.save(f"{args.save_dir}/ml_meu_start.npz")
    rows = [("ML", ml, "map"), ("ML", ml, "meu"), ("MEU-trained", meu, "map"),
            ("MEU-trained", meu, "meu")]
    out.append("\n| training | decoding | dev F | test P | test R | test F |")
    out.append("|---|---|---|---|---|---|")
    for name, model, decoder in rows:
        with single_threaded_blas():
            fd = f_of(model, dev, decoder, args.beta)[0]
            ft, p, r = f_of(model, test, decoder, args.beta)
        out.append(f"| {name} | {decoder.upper()} | {fd:.2f} | {p:.2f} | {r:.2f} | {ft:.2f} |")
        print(out[-1], flush=True)
    out.append(f"\nML training wall time: {ml_time:.0f} s "
               f"({ml.settings_.get('iterations', '?')} L-BFGS iterations); MEU training: "
               f"objective {meu.settings_.get('objective', '?')}, λ = {meu.settings_.get('l2', '?')}, "
               f"{meu.settings_.get('iterations', '?')} iterations from the ML model"
               + (f" trained with λ = {args.meu_init_l2}" if start is not ml else "")
               + f" ({meu.settings_.get('train_seconds', float('nan')):.0f} s).")
    if not args.no_peer:
        # CRFsuite's objective is the summed log-likelihood: its c2 is λ·S
        c2 = args.l2 * len(train)
        f_peer, t_peer = crfsuite_peer(train, test, template, c2, args.max_iter, args.scheme)
        out.append(f"\nPeer: python-crfsuite on the same feature strings (L-BFGS, c2 = λ·S = "
                   f"{c2:g}, {args.max_iter} iterations max): test F {f_peer:.2f}, training "
                   f"{t_peer:.0f} s; ours/CRFsuite training time {ml_time / t_peer:.1f}x.")
    out.append(f"\nPeak resident memory: {peak_rss_mb():.0f} MB.")
    print("\n".join(out[-4:]))
    if not args.no_write:
        key = f"CRF training: {args.corpus}"
        if args.scheme != "IOB2":
            key += f", {args.scheme} tags"
        if args.meu_init_l2 is not None:
            key += f", MEU from ML λ = {args.meu_init_l2:g}"
        write_section(key, "\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
