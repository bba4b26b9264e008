"""Issue 47 §3: the corpus P, R and F_β of a fixed output under the model, without
labels.  Oracles: each sentence's joint law of (tp, m) against the machine
(composition with T⊠M) and brute-force enumeration; the corpus figures against
enumeration of every truth of a tiny corpus; the normal approximation against the
exact convolution and against corpora drawn by ``Lattice.sample``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fstchunk import Lattice
from fstchunk.core.errors import InputError
from fstchunk.decoding.corpus_f import corpus_f, count_laws, count_moments
from fstchunk.schemes import encodings as enc
from oracles import random_scores


def random_corpus(rng, scheme, lengths, scale=1.5, types=("A", "B")):
    tags = enc.scheme_tags(scheme, types)
    lats = [Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale=scale),
                                scheme=scheme) for n in lengths]
    return lats, [list(lat.map().tags) for lat in lats]


def brute_law(lat, hyp):
    h = set(enc.tags_to_chunks(hyp, lat.scheme))
    law = np.zeros((len(h) + 1, lat.n + 1))
    for y, lp in lat.enumerate():
        c = set(enc.tags_to_chunks(list(y), lat.scheme))
        law[len(c & h), len(c)] += np.exp(lp)
    return law


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "IOB1", "IOE2"])
def test_each_sentence_law_equals_enumeration_and_the_machine(scheme):
    rng = np.random.default_rng(abs(hash(scheme)) % 2**32)
    lats, hyps = random_corpus(rng, scheme, [1, 4, 5, 3])
    hyps[1] = enc.chunks_to_tags([("A", 0, 2), ("B", 3, 4)], 4, scheme)   # not the MAP
    laws = count_laws(lats, hyps)
    machine = [Lattice.from_fst(lat.fst, lat.tags, scheme) for lat in lats]
    for lat, hyp, J, J2 in zip(lats, hyps, laws, count_laws(machine, hyps)):
        want = brute_law(lat, hyp)
        assert J.shape == want.shape
        np.testing.assert_allclose(J, want, atol=1e-12)
        np.testing.assert_allclose(J2, want, atol=1e-12)
    # the moments, by the series sweep and from the machine's law, equal the law's
    t = [np.arange(J.shape[0])[:, None] for J in laws]
    c = [np.arange(J.shape[1])[None, :] for J in laws]
    for got in (count_moments(lats, hyps), count_moments(machine, hyps)):
        for J, tt, cc, m in zip(laws, t, c, got):
            et, ec = (J * tt).sum(), (J * cc).sum()
            np.testing.assert_allclose(m, [et, ec, (J * tt * tt).sum() - et ** 2,
                                           (J * cc * cc).sum() - ec ** 2,
                                           (J * tt * cc).sum() - et * ec], atol=1e-11)


def test_extreme_scores_keep_the_law_exact():
    rng = np.random.default_rng(5)
    lats, hyps = random_corpus(rng, "IOB2", [5, 4], scale=300.0)
    for lat, hyp, J in zip(lats, hyps, count_laws(lats, hyps)):
        np.testing.assert_allclose(J, brute_law(lat, hyp), atol=1e-9)


def brute_corpus(lats, hyps, beta):
    """E[F], E[R], E[TP], E[G] and F's law over every truth of the corpus."""
    P = sum(len(enc.tags_to_chunks(h, lat.scheme)) for lat, h in zip(lats, hyps))
    per = []
    for lat, hyp in zip(lats, hyps):
        h = set(enc.tags_to_chunks(hyp, lat.scheme))
        per.append([(len(set(enc.tags_to_chunks(list(y), lat.scheme)) & h),
                     len(enc.tags_to_chunks(list(y), lat.scheme)), np.exp(lp))
                    for y, lp in lat.enumerate()])
    b2 = beta * beta
    out = {"f": 0.0, "r": 0.0, "tp": 0.0, "g": 0.0, "law": {}}
    for combo in itertools.product(*per):
        p = np.prod([c[2] for c in combo])
        tp, g = sum(c[0] for c in combo), sum(c[1] for c in combo)
        f = (1 + b2) * tp / (P + b2 * g) if P + b2 * g else 1.0
        out["f"] += p * f
        out["r"] += p * (tp / g if g else 1.0)
        out["tp"] += p * tp
        out["g"] += p * g
        out["law"][f] = out["law"].get(f, 0.0) + p
    return P, out


@pytest.mark.parametrize("beta", [1.0, 0.5, 2.0])
def test_the_corpus_figures_equal_enumeration_of_every_truth(beta):
    rng = np.random.default_rng(int(beta * 10))
    lats, hyps = random_corpus(rng, "IOB2", [3, 2, 3], types=("A",))
    P, want = brute_corpus(lats, hyps, beta)
    got = corpus_f(P, laws=count_laws(lats, hyps), beta=beta, level=0.8)
    assert got.method == "exact" and got.predicted == P and got.sentences == 3
    assert got.f == pytest.approx(want["f"], abs=1e-12)
    assert got.recall == pytest.approx(want["r"], abs=1e-12)
    assert got.expected_tp == pytest.approx(want["tp"], abs=1e-12)
    assert got.expected_gold == pytest.approx(want["g"], abs=1e-12)
    assert got.precision == pytest.approx(want["tp"] / P, abs=1e-12)
    values = np.array(sorted(want["law"]))
    cum = np.cumsum([want["law"][v] for v in values])
    lo = values[np.searchsorted(cum, 0.1 - 1e-12)]
    hi = values[np.searchsorted(cum, 0.9 - 1e-12)]
    assert got.interval == pytest.approx((lo, hi), abs=1e-9)


def test_the_normal_approximation_against_the_exact_law_and_sampled_corpora():
    rng = np.random.default_rng(11)
    lats, hyps = random_corpus(rng, "IOBES", rng.integers(3, 12, size=60).tolist(), scale=1.0)
    laws = count_laws(lats, hyps)
    P = sum(len(enc.tags_to_chunks(h, "IOBES")) for h in hyps)
    exact = corpus_f(P, laws=laws, level=0.9)
    normal = corpus_f(P, laws=laws, level=0.9, exact_cells=0)
    moments = count_moments(lats, hyps)
    by_moments = corpus_f(P, moments=moments, level=0.9)              # the same draws
    for field in ("expected_tp", "expected_gold", "recall", "f", "sd_f"):
        assert getattr(by_moments, field) == pytest.approx(getattr(normal, field), rel=1e-9)
    assert by_moments.interval == pytest.approx(normal.interval, rel=1e-9)
    assert (exact.method, normal.method) == ("exact", "normal")
    assert normal.f == pytest.approx(exact.f, abs=2e-3)
    assert normal.sd_f == pytest.approx(exact.sd_f, rel=0.1)
    assert normal.interval == pytest.approx(exact.interval, abs=0.02)
    # corpora drawn from the model: their F's spread matches the exact law's
    hsets = [set(enc.tags_to_chunks(h, "IOBES")) for h in hyps]
    R = 3000
    draws = [lat.sample(R, seed=k) for k, lat in enumerate(lats)]
    fs = []
    for r in range(R):
        tp = g = 0
        for hs, d in zip(hsets, draws):
            c = set(enc.tags_to_chunks(list(d[r]), "IOBES"))
            tp, g = tp + len(c & hs), g + len(c)
        fs.append(2 * tp / (P + g))
    fs = np.array(fs)
    assert fs.mean() == pytest.approx(exact.f, abs=4 * fs.std() / np.sqrt(R))
    assert np.quantile(fs, [0.05, 0.95]) == pytest.approx(exact.interval, abs=0.015)


def test_refusals():
    rng = np.random.default_rng(2)
    lats, hyps = random_corpus(rng, "IOB2", [3])
    laws = count_laws(lats, hyps)
    for level in (0, 1, 1.5, -0.1):
        with pytest.raises(InputError, match="level must lie strictly between 0 and 1"):
            corpus_f(1, laws=laws, level=level)
    with pytest.raises(InputError, match="no sentences"):
        corpus_f(0, laws=[])
    with pytest.raises(InputError, match="beta must be"):
        corpus_f(1, laws=laws, beta=-1)
    with pytest.raises(InputError, match="laws or their moments"):
        corpus_f(1)
    with pytest.raises(InputError, match="1 lattices but 2 hypotheses"):
        count_laws(lats, hyps * 2)


# ---------------------------------------------------------------- the command line
def test_expected_input_prints_the_figures_of_the_python_api(tmp_path, capsys):
    import json

    from fstchunk.cli import main
    from fstchunk.io.conll import read_conll
    from fstchunk.models import load_model
    from oracles import TINY_CONLL
    train = tmp_path / "train.txt"
    train.write_text(TINY_CONLL * 3, encoding="utf-8")
    text = tmp_path / "text.txt"
    text.write_text("\n".join(" ".join(line.split()[:2]) for line in
                              TINY_CONLL.splitlines()) + "\n", encoding="utf-8")
    model = tmp_path / "m.npz"
    assert main(["train", "--train", str(train), "--max-iter", "10", "--quiet",
                 "-o", str(model)]) == 0
    capsys.readouterr()
    assert main(["expected", "--model", str(model), "--input", str(text), "--interval",
                 "0.8", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    crf = load_model(str(model))
    lats = crf.lattices(read_conll(str(text)))
    hyps = [list(lat.map().tags) for lat in lats]
    want = corpus_f(sum(len(enc.tags_to_chunks(h, lat.scheme)) for h, lat in zip(hyps, lats)),
                    laws=count_laws(lats, hyps), level=0.8)
    assert got["method"] == want.method == "exact"
    assert got["f"] == pytest.approx(want.f, abs=1e-12)
    assert got["interval"] == pytest.approx(list(want.interval), abs=1e-12)
    assert got["predicted_chunks"] == want.predicted and got["sentences"] == len(lats)
    assert main(["expected", "--model", str(model), "--input", str(text)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("90% interval of F1: [") and out[-1].endswith("(exact law of "
                                                                              "the corpus counts)")
    for argv, message in (
            ([str(text), "--input", str(text)], "not both"),
            ([str(text), "--interval", "0.9"], "--interval and --decoder go with --input"),
            ([], "give FILE .* or --input FILE"),
            (["--input", str(text), "--interval", "1.5"], "strictly between 0 and 1"),
            (["--input", str(text), "--format", "crfsuite"], "--input reads CoNLL columns")):
        assert main(["expected", "--model", str(model), *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("fstchunk expected: error:") and len(err.splitlines()) == 1
        assert __import__("re").search(message, err), err
