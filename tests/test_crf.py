import numpy as np
import pytest

from fstchunk import expected_f
from fstchunk.io.columns import Columns
from fstchunk.io.conll import Sentence, read_conll
from fstchunk.decoding.batch import decode_sentences
from fstchunk.core.errors import InputError, ModelFileError, SchemeError
from fstchunk.evaluation.chunks import evaluate
from fstchunk.models import chain_crf as chain_crf_module
from fstchunk.models.crf import CRF, TrainingData
from fstchunk.models.hmm import HMM
from oracles import finite_difference_check, prepared

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["Dogs", "NNS", "B-NP"], ["run", "VBP", "B-VP"]]),
         Sentence([["He", "PRP", "B-NP"]])]


def small_model(scheme="IOB2", seed=0):
    crf = CRF("tmpt3", scheme)
    data = crf._prepare(SENTS)
    crf.theta_ = np.random.default_rng(seed).normal(scale=0.5, size=crf.theta_.shape)
    return crf, data


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES"])
def test_ml_gradient_and_value(scheme):
    crf, data = small_model(scheme)
    rng = np.random.default_rng(1)
    finite_difference_check(crf.objective_function("ml", data, 0.1), crf.theta_, rng)
    # the value is -(1/S) Σ log Pr(gold) + λ‖θ‖² (a mean per sentence, issue 16),
    # Pr from the Lattice over valid sequences
    nll, _ = crf.objective_function("ml", data, 0.0)(crf.theta_)
    want = 0.0
    for s, g in zip(SENTS, data.gold.sequences):
        want -= crf.lattice(s).log_prob([crf.tags_[i] for i in g])
    assert nll == pytest.approx(want / len(SENTS), rel=1e-10)


@pytest.mark.parametrize("corpus", [False, True])
@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_meu_gradients(corpus, beta):
    crf, data = small_model("IOB2", seed=3)
    rng = np.random.default_rng(2)
    fun = crf.objective_function("meu-corpus" if corpus else "meu", data, 0.05, beta)
    finite_difference_check(fun, crf.theta_, rng)
    value = -fun(crf.theta_)[0] + 0.05 * float(crf.theta_ @ crf.theta_)
    lats = [crf.lattice(s) for s in SENTS]
    refs = [[crf.tags_[i] for i in g] for g in data.gold.sequences]
    rs = [expected_f(l, reference=r, beta=beta, method="fst") for l, r in zip(lats, refs)]
    if corpus:      # (1+β²)·Σ E[tp] / (Σ E[m(x)] + β²·Σ m(y)), x ~ the model, y the gold
        want = (1 + beta ** 2) * sum(r.tp for r in rs) / (sum(r.m_hyp for r in rs) +
                                                          beta ** 2 * sum(r.m_ref for r in rs))
    else:
        want = sum(r.f for r in rs) / len(rs)        # the mean per sentence (issue 16)
    assert value == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("scheme", ["IOB1", "IOE1", "IOBES", "IOBES3"])
def test_meu_corpus_gradient_every_scheme(scheme):
    """The batched corpus objective (matched-chunk masses in the expectation
    semiring) in schemes whose chunk boundaries depend on both neighbours."""
    crf, data = small_model(scheme, seed=5)
    fun = crf.objective_function("meu-corpus", data, 0.0, 1.0)
    finite_difference_check(fun, crf.theta_, np.random.default_rng(4))
    lats = [crf.lattice(s) for s in SENTS]
    rs = [expected_f(l, reference=[crf.tags_[i] for i in g], method="fst")
          for l, g in zip(lats, data.gold.sequences)]
    want = 2 * sum(r.tp for r in rs) / (sum(r.m_ref for r in rs) + sum(r.m_hyp for r in rs))
    assert -fun(crf.theta_)[0] == pytest.approx(want, rel=1e-9)


def test_meu_corpus_value_on_real_sentences(corpus):
    """Against the fast per-sentence expectations on 40 CoNLL-2000 sentences."""
    sents = read_conll(corpus("conll2000", "train.txt"))[:40]
    crf = CRF("tmpt1")
    data = crf._prepare(sents)
    crf.theta_ = np.random.default_rng(0).normal(scale=0.3, size=crf.theta_.shape)
    value = -crf.objective_function("meu-corpus", data, 0.0, 2.0)(crf.theta_)[0]
    rs = [expected_f(crf.lattice(s), reference=s.column(-1), beta=2.0, method="fast")
          for s in sents]
    want = 5 * sum(r.tp for r in rs) / (sum(r.m_hyp for r in rs) + 4 * sum(r.m_ref for r in rs))
    assert value == pytest.approx(want, rel=1e-9)


def test_training_improves_objectives_and_round_trips(tmp_path):
    crf, data = small_model()
    crf.theta_[:] = 0
    assert crf.set_params(objective="ml", l2=0.01, max_iter=50).fit(data) is crf
    lat = crf.lattice(SENTS[1])
    assert lat.log_prob(["B-NP", "I-NP", "B-VP", "O"]) > np.log(0.5)
    meu = crf.objective_function("meu", data, 0.01, 1.0)
    before = meu(crf.theta_)[0]
    crf.set_params(objective="meu", l2=0.01, max_iter=20, warm_start=True).fit(SENTS)          # sentences or prepared data
    assert meu(crf.theta_)[0] <= before + 1e-12
    assert crf.settings_["final_objective"] == pytest.approx(meu(crf.theta_)[0])
    p = tmp_path / "crf.npz"
    crf.save(p)
    crf2 = CRF.load(p)
    assert crf2.lattice(SENTS[1]).log_partition() == pytest.approx(crf.lattice(SENTS[1]).log_partition())
    np.testing.assert_allclose(crf2.theta_, crf.theta_)
    assert crf2.fmap_.names == crf.fmap_.names and crf2.settings_["objective"] == "meu"


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
        crf.set_params(objective="mle").fit(data)
    with pytest.raises(InputError, match="y must be None, got 'ml'.*set_params"):
        crf.fit(data, "ml")
    with pytest.raises(InputError, match="y must be None, got list; held-out sentences go "
                                         "in dev="):
        crf.fit(data, [["B-NP"]])
    with pytest.raises(InputError, match="dev must be sentences"):
        crf.fit(data, dev="dev.txt")
    with pytest.raises(InputError, match="unknown objective"):
        crf.objective_function("mle", data, 0.0)
    with pytest.raises(InputError, match="l2 must be a finite number >= 0"):
        crf.set_params(objective="ml", l2=-1.0).fit(data)
    with pytest.raises(InputError, match="unknown feature template"):
        prepared(CRF("tmpt9"), SENTS)
    bad = [Sentence([["a", "DT", "I-NP"], ["b", "NN", "O"]], [3, 4], "bad.txt")]
    with pytest.raises(SchemeError, match="bad.txt:3: tag 'I-NP' cannot stand at the start"):
        prepared(CRF("tmpt1"), bad)
    unseen = [Sentence([["a", "DT", "B-NP"], ["b", "IN", "B-PP"]], [5, 6], "new.txt")]
    with pytest.raises(SchemeError, match="new.txt:6: tag 'B-PP' is not among the model's"):
        crf.training_data(unseen)
    with pytest.raises(InputError, match="parameters do not fit"):
        crf.copy(crf.theta_[:-1])
    np.savez(tmp_path / "short.npz", **{k: v for k, v in np.load(p).items()
                                          if k != "theta"}, theta=crf.theta_[:-1])
    with pytest.raises(ModelFileError, match=r"short.npz: field\(s\) arrays .* do not match "
                                             r"the checksum"):
        CRF.load(tmp_path / "short.npz")


def test_prepare_and_training_data_agree():
    """A fresh model's data and the data of a loaded model are the same arrays."""
    crf = CRF("tmpt1", "IOBES")
    data = crf._prepare(SENTS)
    again = crf.training_data(SENTS)
    assert isinstance(again, TrainingData) and crf.training_data(again) is again
    assert (again.X != data.X).nnz == 0
    for a, b in zip(again.gold.sequences, data.gold.sequences):
        np.testing.assert_array_equal(a, b)
    assert crf.kind == "crf" and crf.scheme_ == "IOBES" and crf.P == len(crf.pairs_) > 0
    assert len(crf.lattices(SENTS)) == len(SENTS)


def word_tag(sentences):
    """The sentences as a two-column (word, tag) file would give them."""
    return [Sentence([[r[0], r[-1]] for r in s.rows], s.lines, s.source) for s in sentences]


def test_word_tag_files_need_columns_and_never_leak_the_gold_tags(corpus):
    """Issue 16, item 1: the default columns read column 2 as POS; on a word/tag file
    that is the gold tag (dev F 100, real F near 0).  The file is refused with a
    message naming --columns; with --columns word,tag the model uses the POS-free
    template, its dev F is plausible, and its decisions do not depend on the tag
    column of the input."""
    train = word_tag(read_conll(corpus("conll2000", "train.txt"))[:250])
    test = word_tag(read_conll(corpus("conll2000", "test.txt"))[:80])
    with pytest.raises(InputError, match=r"train.txt:1: the pos column would be the tag "
                                         r"column.*--columns word,tag"):
        prepared(CRF("tmpt3"), train)
    crf = CRF("tmpt3", columns=Columns.parse("word,tag"))
    data = crf._prepare(train)
    assert crf.fmap_.template == "tmpt3-nopos" and crf.columns_ == Columns(0, None, 1)
    crf.set_params(objective="ml", l2=0.1, max_iter=40).fit(data)
    preds = decode_sentences(crf, test, "map", 1.0)
    f = evaluate([s.column(-1) for s in test], preds).overall.f
    assert 40 < f < 97, f
    blind = [Sentence([[r[0], "O"] for r in s.rows], s.lines, s.source) for s in test]
    assert decode_sentences(crf, blind, "map", 1.0) == preds
    words_only = [Sentence([[r[0]] for r in s.rows], s.lines, s.source) for s in test]
    assert decode_sentences(crf, words_only, "map", 1.0) == preds


def test_columns_are_stored_and_used_for_gold_and_features(tmp_path):
    """A word,_,pos,tag file: the model reads its columns there, remembers them in its
    file, and training_data on the same layout takes the gold from column 4."""
    cols = Columns.parse("word,_,pos,tag")
    four = [Sentence([[r[0], "lemma", r[1], r[2]] for r in s.rows], list(range(1, len(s) + 1)),
                     "four.txt") for s in SENTS]
    crf = CRF("tmpt3", columns=cols)
    data = crf._prepare(four)
    assert crf.columns_ == Columns(0, 2, 3) and crf.fmap_.pos_col == 2
    plain = CRF("tmpt3")
    plain_data = plain._prepare(SENTS)
    assert plain.columns_ == Columns(0, 1, 2)
    assert crf.fmap_.names == plain.fmap_.names and (data.X != plain_data.X).nnz == 0
    again = crf.training_data(four)
    for a, b in zip(again.gold.sequences, data.gold.sequences):
        np.testing.assert_array_equal(a, b)
    crf.theta_ = np.random.default_rng(0).normal(size=crf.theta_.shape)
    crf.save(tmp_path / "m.npz")
    back = CRF.load(tmp_path / "m.npz")
    assert back.columns_ == Columns(0, 2, 3) and back.fmap_.template == "tmpt3"
    for a, b in zip(back.lattices(four), crf.lattices(four)):
        assert a.log_partition() == pytest.approx(b.log_partition(), rel=1e-12)
    with pytest.raises(InputError, match=r"<input>:\?: feature template tmpt3 reads the POS "
                                         r"from column 3, but the line has 2 columns"):
        back.lattices([Sentence([["a", "DT"]])])


def test_degenerate_training_sets_are_refused():
    """Issue 16, item 6: no sentences, no chunk, a single tag: one InputError naming
    the file (a CRF once failed on an empty file with a bare numpy message)."""
    with pytest.raises(InputError, match="no training sentences"):
        prepared(CRF("tmpt1"), [])
    all_o = [Sentence([["a", "DT", "O"], ["b", "NN", "O"]], [1, 2], "o.txt")]
    with pytest.raises(InputError, match=r"o.txt: no chunk in 1 training sentence \(every "
                                         r"tag is O\)"):
        prepared(CRF("tmpt1"), all_o)
    one = [Sentence([["a", "DT", "B-NP"], ["b", "NN", "B-NP"]], [1, 2], "one.txt")]
    with pytest.raises(InputError, match="one.txt: every training tag is 'B-NP'"):
        prepared(CRF("tmpt1"), one)
    with pytest.raises(InputError, match="e.txt:.*a training sentence without tokens"):
        prepared(CRF("tmpt1"), [Sentence([], [], "e.txt")])
    mixed = [SENTS[0], Sentence([["a", "DT", "x", "B-NP"]], [7], "four.txt")]
    with pytest.raises(InputError, match="four.txt:7: the line has 4 columns, unlike "
                                         "<input>:"):
        prepared(CRF("tmpt1"), mixed)
    with pytest.raises(InputError, match="min_count must be an integer >= 1"):
        prepared(CRF("tmpt1", min_count=0), SENTS)
    crf = CRF("tmpt1")
    crf._prepare(SENTS)
    with pytest.raises(InputError, match="no training sentences"):
        crf.training_data([])
    with pytest.raises(InputError, match="o.txt: no chunk"):
        crf.training_data(all_o)


def test_invalid_gold_is_reported_at_the_tags_own_line():
    """Issue 16, item 4: the error names the offending tag's line, not the sentence's
    first line, and what the tag follows."""
    bad = [Sentence([["a", "DT", "B-NP"], ["b", "NN", "I-NP"], ["c", "VB", "I-VP"]],
                    [10, 11, 12], "bad.txt")]
    with pytest.raises(SchemeError, match=r"^bad.txt:12: tag 'I-VP' cannot stand after "
                                          r"'I-NP' in IOB2$") as e:
        prepared(CRF("tmpt1"), bad)
    assert e.value.position == 2
    with pytest.raises(SchemeError, match=r"^bad.txt:11: tag 'X-NP' is not a IOB2 tag"):
        prepared(CRF("tmpt1"), [Sentence([["a", "DT", "B-NP"], ["b", "NN", "X-NP"]], [10, 11],
                              "bad.txt")])


def test_l2_none_is_passed_to_the_trainer(monkeypatch):
    """λ left out means the objective's own default, which the Trainer resolves."""
    seen = {}

    class FakeTrainer:
        def __init__(self, **kwargs):
            seen.update(kwargs)

        def fit(self, model, train):
            return model

    monkeypatch.setattr(chain_crf_module, "Trainer", FakeTrainer)
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    assert crf.set_params(objective="meu").fit(data) is crf
    assert seen["l2"] is None and seen["objective"] == "meu" and seen["progress"] is False
    crf.set_params(objective="ml", l2=0.5).fit(data)
    assert seen["l2"] == 0.5


def test_pair_design_matrix_is_x_times_w_and_its_transpose():
    """The pair design matrix against the dense products it replaces: Aᵀᵀ·θ_pairs =
    vec(X·W) and Aᵀ·vec(G) = (Xᵀ·G) at the pairs, on random sparse X with repeated
    features, a feature seen with several tags and one seen with none."""
    import scipy.sparse as sp
    from fstchunk.models.design import pair_design
    rng = np.random.default_rng(3)
    N, F, L = 40, 12, 5
    X = sp.random(N, F, density=0.3, format="csr", random_state=4)
    X.data = rng.normal(size=X.nnz)
    cells = rng.choice(F * (L - 1), size=25, replace=False)     # feature F-1 has no pair
    pairs = np.stack([cells // L % (F - 1), cells % L], axis=1)
    pairs = np.unique(pairs, axis=0)
    pairs = pairs[rng.permutation(len(pairs))]
    theta = rng.normal(size=len(pairs))
    W = np.zeros((F, L))
    W[pairs[:, 0], pairs[:, 1]] = theta
    AT = pair_design(X, pairs, L)
    np.testing.assert_allclose(AT.T @ theta, (X @ W).ravel(), rtol=0, atol=1e-12)
    G = rng.normal(size=(N, L))
    np.testing.assert_allclose(AT @ G.ravel(), (X.T @ G)[pairs[:, 0], pairs[:, 1]],
                               rtol=0, atol=1e-12)
