"""Corpus MEU: the ratio of expectations it maximises against E[corpus F] (issue 32).

    fstchunk train --train ../shared/data/conll2000/train.txt -o conll_ml.npz
    FSTCHUNK_DATA=../shared/data python benchmarks/bench_corpus_meu.py --model conll_ml.npz

``decode_meu_corpus`` maximises F_β of the expected counts, R(D) = F_β(Σ_i E[tp_i],
Σ_i m(D_i), Σ_i E[m(y_i)]) — a ratio of expectations — while conlleval's corpus F of a
decision D against a corpus y drawn from the model is F_β(Σ tp_i, Σ m(D_i), Σ m(y_i)),
whose expectation E[F(D)] is what a user may think is maximised.  For the CRF's
lattices of CoNLL-2000 dev.txt (every sentence, and the first 200 alone) and three
decisions — MAP, per-sentence exact MEU, corpus MEU (decided on that corpus) — this
prints R(D) (``expected_f(method="fast")`` per sentence, exact) and a Monte Carlo
estimate of E[F(D)]: ``--samples`` corpora, each sentence's y drawn independently and
exactly from its lattice by forward sampling on the lattice's stochastic chain
(``Lattice.chain``, the backward h-transform: backward filtering, forward sampling),
their corpus F averaged, with its standard error — plainly, and with the control variate
F − ℓ, ℓ the linearisation of F at the exact (Σ E[tp], Σ E[m(y)]) (E[ℓ] = R exactly, so
F − ℓ + R has the mean E[F] and only the curvature's share of the noise); the
differences E[F(D)] − R(D) and between decisions are paired (the same sampled
corpora).  The sampler is checked against the exact expectations: the sampled mean
of Σ tp and of Σ m(y) against Σ E[tp] and Σ E[m(y)] (z-scores).  F_β is
``fstchunk.evaluation.chunks.f_beta`` (β = 1).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from common import Timer, data_path, write_section
from fstchunk import decode_map, decode_meu, decode_meu_corpus, expected_f
from fstchunk.schemes import encodings as enc
from fstchunk import read_conll
from fstchunk.evaluation.chunks import f_beta
from fstchunk import load_model
from fstchunk.runtime.parallel import single_threaded_blas

BETA = 1.0


def sample_tags(lat, samples: int, rng: np.random.Generator) -> np.ndarray:
    """(samples, n) tag indices drawn from the lattice's distribution: each row of the
    stochastic chain's layer is Pr(next state | state), so forward sampling is exact."""
    chain = lat.chain
    state = np.zeros(samples, dtype=int)
    out = np.empty((samples, lat.n), dtype=int)
    with np.errstate(invalid="ignore", divide="ignore"):
        for i, (w, lab) in enumerate(zip(chain.weights, chain.labels)):
            cdf = np.cumsum(np.exp(w), axis=1)
            cdf /= cdf[:, -1:]                     # rounding; dead rows are never visited
            u = rng.random(samples)
            state = np.minimum((u[:, None] > cdf[state]).sum(axis=1), w.shape[1] - 1)
            out[:, i] = lab[state]
    return out


def matches(lat, Y: np.ndarray, chunks) -> tuple[np.ndarray, np.ndarray]:
    """Per sample: tp of ``chunks`` (type index, s, e) against the sampled y, and m(y).
    A chunk is in y iff the arc into s opens a chunk of its type, the arcs into
    s+1..e−1 continue it and the arc into e does not (or the sentence ends)."""
    sp = lat.space
    S, n = Y.shape
    prev = np.concatenate([np.full((S, 1), len(lat.tags)), Y[:, :-1]], axis=1)
    opens, cont = sp.opens[prev, Y], sp.cont[prev, Y]
    tix = sp.type_index[Y]
    tp = np.zeros(S)
    for t, s, e in chunks:
        ok = opens[:, s] & (tix[:, s] == t)
        if e - s > 1:
            ok &= cont[:, s + 1:e].all(axis=1)
        if e < n:
            ok &= ~cont[:, e]
        tp += ok
    return tp, opens.sum(axis=1)


def study(lats, decisions: dict, samples: int, seed: int) -> list[str]:
    """The table rows for one corpus: R(D), E[F(D)] ± SE, their difference, per D."""
    rng = np.random.default_rng(seed)
    names = list(decisions)
    types = lats[0].space.types
    sets = {d: [[(types.index(t), s, e) for t, s, e in enc.tags_to_chunks(x, lat.scheme)]
                for x, lat in zip(decisions[d], lats)] for d in names}
    exp_tp = {d: 0.0 for d in names}
    exp_m = 0.0
    m_hyp = {d: sum(map(len, sets[d])) for d in names}
    TP = {d: np.zeros(samples) for d in names}
    M = np.zeros(samples)
    for i, lat in enumerate(lats):
        Y = sample_tags(lat, samples, rng)
        for d in names:
            ef = expected_f(lat, hypothesis=decisions[d][i], beta=BETA, method="fast")
            exp_tp[d] += ef.tp
            tp, m = matches(lat, Y, sets[d][i])
            TP[d] += tp
        exp_m += ef.m_ref
        M += m
    F = {d: np.array([f_beta(a, m_hyp[d], b, BETA) for a, b in zip(TP[d], M)]) for d in names}
    R = {d: f_beta(exp_tp[d], m_hyp[d], exp_m, BETA) for d in names}
    # control variate: F minus its linearisation at the exact means (mean 0 exactly), so
    # the estimate of E[F] − R keeps only the curvature's share of the noise; slopes by
    # central differences of f_beta (one count), whatever F_β's formula
    cv = {}
    for d in names:
        g_tp = (f_beta(exp_tp[d] + 1, m_hyp[d], exp_m, BETA)
                - f_beta(exp_tp[d] - 1, m_hyp[d], exp_m, BETA)) / 2
        g_m = (f_beta(exp_tp[d], m_hyp[d], exp_m + 1, BETA)
               - f_beta(exp_tp[d], m_hyp[d], exp_m - 1, BETA)) / 2
        cv[d] = F[d] - g_tp * (TP[d] - exp_tp[d]) - g_m * (M - exp_m)
    se = lambda x: float(np.std(x, ddof=1) / np.sqrt(len(x)))   # noqa: E731
    rows = []
    for d in names:
        z_tp = (TP[d].mean() - exp_tp[d]) / se(TP[d])
        rows.append(f"| {d} | {R[d]:.6f} | {F[d].mean():.6f} ± {se(F[d]):.6f} | "
                    f"{cv[d].mean():.6f} ± {se(cv[d]):.1e} | "
                    f"{cv[d].mean() - R[d]:+.2e} ± {se(cv[d]):.1e} | {z_tp:+.2f} |")
    z_m = (M.mean() - exp_m) / se(M)
    ref = names[-1]
    paired = [f"E[F({ref})] − E[F({d})] = {np.mean(cv[ref] - cv[d]):+.2e} ± "
              f"{se(cv[ref] - cv[d]):.1e} (R: {R[ref] - R[d]:+.2e})" for d in names[:-1]]
    return rows, z_m, paired


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--subset", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sentences", type=int, help="only the first N of dev.txt (a quick run)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    model = load_model(args.model)
    sents = read_conll(data_path("conll2000", "dev.txt"))[:args.sentences]
    out = [f"CRF {Path(args.model).name} (trained on train.txt), its lattices of CoNLL-2000 "
           f"dev.txt; β = {BETA:g}; {args.samples} sampled corpora (seed {args.seed}). R: F of "
           "the expected counts, the ratio corpus MEU maximises (exact); E[F]: the mean corpus "
           "F over the sampled corpora ± its standard error, plainly and with the control "
           "variate F − (its linearisation at the exact E[Σ tp], E[Σ m(y)]), which has the "
           "same mean and far less noise; E[F] − R and the differences between decisions "
           "(paired: the same samples) use the latter; z(tp): (sampled mean of Σ tp − "
           "Σ E[tp]) / SE, z(m) likewise: the sampler's check.", ""]
    with single_threaded_blas():
        lats = model.lattices(sents)
        maps = [decode_map(lat).tags for lat in lats]
        meus = [decode_meu(lat, beta=BETA).tags for lat in lats]
        whole = f"dev.txt ({'all' if args.sentences is None else 'first'})"
        for label, k in ((whole, len(lats)), (f"its first {args.subset} sentences",
                                              args.subset)):
            with Timer() as t:
                corpus, lam = decode_meu_corpus(lats[:k], beta=BETA)
            decisions = {"MAP": maps[:k], "per-sentence MEU": meus[:k], "corpus MEU": corpus}
            with Timer() as tm:
                rows, z_m, paired = study(lats[:k], decisions, args.samples, args.seed)
            chunks = sum(len(enc.tags_to_chunks(x, lats[0].scheme)) for x in corpus)
            out += [f"**{label}** ({k} sentences, {chunks} chunks decided by corpus MEU; "
                    f"its reported ratio {lam:.6f}; corpus decision {t.seconds:.1f} s, "
                    f"sampling and scoring {tm.seconds:.0f} s; z(m) = {z_m:+.2f}):", "",
                    "| decision D | R(D) | E[F(D)], plain mean | E[F(D)], control variate | "
                    "E[F(D)] − R(D) | z(tp) |",
                    "|---|---|---|---|---|---|", *rows, "", "Paired: " + "; ".join(paired) + ".",
                    ""]
            print("\n".join(out[-10:]), flush=True)
    body = "\n".join(out)
    print(body)
    if not args.no_write:
        write_section("Corpus MEU: the ratio of expectations against E[corpus F]", body)


if __name__ == "__main__":
    main()
