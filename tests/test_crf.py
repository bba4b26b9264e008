import numpy as np
import pytest

from fstchunk import expected_f
from fstchunk.conll import Sentence, read_conll
from fstchunk.models.crf import CRF
from fstchunk.models.io import ModelFileError

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["Dogs", "NNS", "B-NP"], ["run", "VBP", "B-VP"]]),
         Sentence([["He", "PRP", "B-NP"]])]


def small_model(scheme="IOB2", seed=0):
    fmap, tags, X, gold = CRF.prepare(SENTS, "tmpt3", scheme=scheme)
    crf = CRF(fmap, tags, scheme, CRF.observed_pairs(X, gold, len(tags)))
    crf.theta = np.random.default_rng(seed).normal(scale=0.5, size=crf.theta.shape)
    return crf, X, gold


def finite_difference_check(fun, theta, rng, k=25, h=1e-6):
    f0, g = fun(theta)
    for i in rng.choice(len(theta), size=min(k, len(theta)), replace=False):
        t = theta.copy()
        t[i] += h
        fp = fun(t)[0]
        t[i] -= 2 * h
        fm = fun(t)[0]
        assert (fp - fm) / (2 * h) == pytest.approx(g[i], rel=1e-5, abs=1e-7), i


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES"])
def test_ml_gradient_and_value(scheme):
    crf, X, gold = small_model(scheme)
    rng = np.random.default_rng(1)
    batches = CRF.batches(gold)
    finite_difference_check(lambda th: crf.ml_objective(th, X, batches, 0.1), crf.theta, rng)
    # the value is -Σ log Pr(gold) + λ‖θ‖², Pr from the Lattice over valid sequences
    nll, _ = crf.ml_objective(crf.theta, X, batches, 0.0)
    want = 0.0
    for s, g in zip(SENTS, gold):
        want -= crf.lattice(s).log_prob([crf.tags[i] for i in g])
    assert nll == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("corpus", [False, True])
@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_meu_gradients(corpus, beta):
    crf, X, gold = small_model("IOB2", seed=3)
    rng = np.random.default_rng(2)
    fun = lambda th: crf.meu_objective(th, X, gold, 0.05, beta, corpus)   # noqa: E731
    finite_difference_check(fun, crf.theta, rng)
    value = -fun(crf.theta)[0] + 0.05 * float(crf.theta @ crf.theta)
    lats = [crf.lattice(s) for s in SENTS]
    refs = [[crf.tags[i] for i in g] for g in gold]
    rs = [expected_f(l, reference=r, beta=beta, method="fst") for l, r in zip(lats, refs)]
    if corpus:
        want = (beta + 1) * sum(r.tp for r in rs) / (sum(r.m_ref for r in rs) +
                                                    beta * sum(r.m_hyp for r in rs))
    else:
        want = sum(r.f for r in rs)
    assert value == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("scheme", ["IOB1", "IOE1", "IOBES", "IOBES3"])
def test_meu_corpus_gradient_every_scheme(scheme):
    """The batched corpus objective (matched-chunk masses in the expectation
    semiring) in schemes whose chunk boundaries depend on both neighbours."""
    crf, X, gold = small_model(scheme, seed=5)
    fun = lambda th: crf.meu_objective(th, X, gold, 0.0, 1.0, True)   # noqa: E731
    finite_difference_check(fun, crf.theta, np.random.default_rng(4))
    lats = [crf.lattice(s) for s in SENTS]
    rs = [expected_f(l, reference=[crf.tags[i] for i in g], method="fst")
          for l, g in zip(lats, gold)]
    want = 2 * sum(r.tp for r in rs) / (sum(r.m_ref for r in rs) + sum(r.m_hyp for r in rs))
    assert -fun(crf.theta)[0] == pytest.approx(want, rel=1e-9)


def test_meu_corpus_value_on_real_sentences(corpus):
    """Against the fast per-sentence expectations on 40 CoNLL-2000 sentences."""
    sents = read_conll(corpus("conll2000", "train.txt"))[:40]
    fmap, tags, X, gold = CRF.prepare(sents, "tmpt1")
    crf = CRF(fmap, tags, "IOB2", CRF.observed_pairs(X, gold, len(tags)))
    crf.theta = np.random.default_rng(0).normal(scale=0.3, size=crf.theta.shape)
    value = -crf.meu_objective(crf.theta, X, gold, 0.0, 2.0, True)[0]
    rs = [expected_f(crf.lattice(s), reference=s.column(-1), beta=2.0, method="fast")
          for s in sents]
    want = 3 * sum(r.tp for r in rs) / (sum(r.m_ref for r in rs) + 2 * sum(r.m_hyp for r in rs))
    assert value == pytest.approx(want, rel=1e-9)


def test_training_improves_objectives_and_round_trips(tmp_path):
    crf, X, gold = small_model()
    crf.theta[:] = 0
    crf.fit(X, gold, "ml", l2=0.01, max_iter=50)
    lat = crf.lattice(SENTS[1])
    assert lat.log_prob(["B-NP", "I-NP", "B-VP", "O"]) > np.log(0.5)
    before = crf.meu_objective(crf.theta, X, gold, 0.01, 1.0, False)[0]
    crf.fit(X, gold, "meu", l2=0.01, max_iter=20)
    assert crf.meu_objective(crf.theta, X, gold, 0.01, 1.0, False)[0] <= before + 1e-12
    p = tmp_path / "crf.npz"
    crf.save(p)
    crf2 = CRF.load(p)
    assert crf2.lattice(SENTS[1]).log_partition() == pytest.approx(crf.lattice(SENTS[1]).log_partition())
    np.testing.assert_allclose(crf2.theta, crf.theta)
    assert crf2.fmap.names == crf.fmap.names and crf2.settings["objective"] == "meu"


def test_bad_files_and_arguments(tmp_path):
    crf, X, gold = small_model()
    p = tmp_path / "crf.npz"
    crf.save(p)
    raw = p.read_bytes()
    (tmp_path / "cut.npz").write_bytes(raw[:len(raw) // 3])
    with pytest.raises(ModelFileError, match="cut.npz"):
        CRF.load(tmp_path / "cut.npz")
    from fstchunk.models.hmm import HMM
    HMM.fit(SENTS, min_count=1).save(tmp_path / "hmm.npz")
    with pytest.raises(ModelFileError, match="a 'hmm' model, not a 'crf' model"):
        CRF.load(tmp_path / "hmm.npz")
    with pytest.raises(ValueError, match="unknown objective"):
        crf.fit(X, gold, "mle")
    with pytest.raises(ValueError, match="unknown feature template"):
        CRF.prepare(SENTS, "tmpt9")
    bad = [Sentence([["a", "DT", "I-NP"], ["b", "NN", "O"]], [3, 4], "bad.txt")]
    with pytest.raises(ValueError, match="bad.txt:3: position 0: tag 'I-NP'"):
        CRF.prepare(bad, "tmpt1")
