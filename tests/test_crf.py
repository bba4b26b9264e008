import numpy as np
import pytest

from fstchunk import expected_f
from fstchunk.conll import Sentence, read_conll
from fstchunk.errors import InputError, ModelFileError, SchemeError
from fstchunk.models.crf import CRF, TrainingData
from fstchunk.models.hmm import HMM

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["Dogs", "NNS", "B-NP"], ["run", "VBP", "B-VP"]]),
         Sentence([["He", "PRP", "B-NP"]])]


def small_model(scheme="IOB2", seed=0):
    crf, data = CRF.prepare(SENTS, "tmpt3", scheme=scheme)
    crf.theta = np.random.default_rng(seed).normal(scale=0.5, size=crf.theta.shape)
    return crf, data


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
    crf, data = small_model(scheme)
    rng = np.random.default_rng(1)
    finite_difference_check(crf.objective("ml", data, 0.1), crf.theta, rng)
    # the value is -Σ log Pr(gold) + λ‖θ‖², Pr from the Lattice over valid sequences
    nll, _ = crf.objective("ml", data, 0.0)(crf.theta)
    want = 0.0
    for s, g in zip(SENTS, data.gold.sequences):
        want -= crf.lattice(s).log_prob([crf.tags[i] for i in g])
    assert nll == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("corpus", [False, True])
@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_meu_gradients(corpus, beta):
    crf, data = small_model("IOB2", seed=3)
    rng = np.random.default_rng(2)
    fun = crf.objective("meu-corpus" if corpus else "meu", data, 0.05, beta)
    finite_difference_check(fun, crf.theta, rng)
    value = -fun(crf.theta)[0] + 0.05 * float(crf.theta @ crf.theta)
    lats = [crf.lattice(s) for s in SENTS]
    refs = [[crf.tags[i] for i in g] for g in data.gold.sequences]
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
    crf, data = small_model(scheme, seed=5)
    fun = crf.objective("meu-corpus", data, 0.0, 1.0)
    finite_difference_check(fun, crf.theta, np.random.default_rng(4))
    lats = [crf.lattice(s) for s in SENTS]
    rs = [expected_f(l, reference=[crf.tags[i] for i in g], method="fst")
          for l, g in zip(lats, data.gold.sequences)]
    want = 2 * sum(r.tp for r in rs) / (sum(r.m_ref for r in rs) + sum(r.m_hyp for r in rs))
    assert -fun(crf.theta)[0] == pytest.approx(want, rel=1e-9)


def test_meu_corpus_value_on_real_sentences(corpus):
    """Against the fast per-sentence expectations on 40 CoNLL-2000 sentences."""
    sents = read_conll(corpus("conll2000", "train.txt"))[:40]
    crf, data = CRF.prepare(sents, "tmpt1")
    crf.theta = np.random.default_rng(0).normal(scale=0.3, size=crf.theta.shape)
    value = -crf.objective("meu-corpus", data, 0.0, 2.0)(crf.theta)[0]
    rs = [expected_f(crf.lattice(s), reference=s.column(-1), beta=2.0, method="fast")
          for s in sents]
    want = 3 * sum(r.tp for r in rs) / (sum(r.m_ref for r in rs) + 2 * sum(r.m_hyp for r in rs))
    assert value == pytest.approx(want, rel=1e-9)


def test_training_improves_objectives_and_round_trips(tmp_path):
    crf, data = small_model()
    crf.theta[:] = 0
    assert crf.fit(data, "ml", l2=0.01, max_iter=50) is crf
    lat = crf.lattice(SENTS[1])
    assert lat.log_prob(["B-NP", "I-NP", "B-VP", "O"]) > np.log(0.5)
    meu = crf.objective("meu", data, 0.01, 1.0)
    before = meu(crf.theta)[0]
    crf.fit(SENTS, "meu", l2=0.01, max_iter=20)          # sentences or prepared data
    assert meu(crf.theta)[0] <= before + 1e-12
    assert crf.settings["final_objective"] == pytest.approx(meu(crf.theta)[0])
    p = tmp_path / "crf.npz"
    crf.save(p)
    crf2 = CRF.load(p)
    assert crf2.lattice(SENTS[1]).log_partition() == pytest.approx(crf.lattice(SENTS[1]).log_partition())
    np.testing.assert_allclose(crf2.theta, crf.theta)
    assert crf2.fmap.names == crf.fmap.names and crf2.settings["objective"] == "meu"


def test_bad_files_and_arguments(tmp_path):
    crf, data = small_model()
    p = tmp_path / "crf.npz"
    crf.save(p)
    raw = p.read_bytes()
    (tmp_path / "cut.npz").write_bytes(raw[:len(raw) // 3])
    with pytest.raises(ModelFileError, match="cut.npz"):
        CRF.load(tmp_path / "cut.npz")
    HMM(min_count=1).fit(SENTS).save(tmp_path / "hmm.npz")
    with pytest.raises(ModelFileError, match="a 'hmm' model, not a 'crf' model"):
        CRF.load(tmp_path / "hmm.npz")
    with pytest.raises(InputError, match="unknown objective"):
        crf.fit(data, "mle")
    with pytest.raises(InputError, match="unknown objective"):
        crf.objective("mle", data, 0.0)
    with pytest.raises(InputError, match="l2 must be a finite number >= 0"):
        crf.fit(data, "ml", l2=-1.0)
    with pytest.raises(InputError, match="unknown feature template"):
        CRF.prepare(SENTS, "tmpt9")
    bad = [Sentence([["a", "DT", "I-NP"], ["b", "NN", "O"]], [3, 4], "bad.txt")]
    with pytest.raises(SchemeError, match="bad.txt:3: position 0: tag 'I-NP'"):
        CRF.prepare(bad, "tmpt1")
    unseen = [Sentence([["a", "DT", "B-PP"]], [5], "new.txt")]
    with pytest.raises(SchemeError, match="new.txt:5: tag 'B-PP' is not among the model's"):
        crf.training_data(unseen)
    with pytest.raises(InputError, match="parameters do not fit"):
        CRF(crf.fmap, crf.tags, crf.scheme, crf.pairs, crf.theta[:-1])
    np.savez(tmp_path / "short.npz", **{k: v for k, v in np.load(p).items()
                                          if k != "theta"}, theta=crf.theta[:-1])
    with pytest.raises(ModelFileError, match="short.npz: corrupt CRF model file"):
        CRF.load(tmp_path / "short.npz")


def test_prepare_and_training_data_agree():
    """A fresh model's data and the data of a loaded model are the same arrays."""
    crf, data = CRF.prepare(SENTS, "tmpt1", scheme="IOBES")
    again = crf.training_data(SENTS)
    assert isinstance(again, TrainingData) and crf.training_data(again) is again
    assert (again.X != data.X).nnz == 0
    for a, b in zip(again.gold.sequences, data.gold.sequences):
        np.testing.assert_array_equal(a, b)
    assert crf.kind == "crf" and crf.scheme == "IOBES" and crf.P == len(crf.pairs) > 0
    assert len(crf.lattices(SENTS)) == len(SENTS)
