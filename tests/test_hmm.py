import numpy as np
import pynini
import pytest

from fstchunk import Lattice
from fstchunk.grammars import fsa
from fstchunk.io.conll import Sentence, read_conll
from fstchunk.grammars.models import hmm_transducer
from fstchunk.models.features import word_shape
from fstchunk.io.columns import Columns
from fstchunk.models.hmm import HMM, UNKNOWN
from fstchunk.core.errors import InputError, ModelFileError
from fstchunk.schemes.tagspace import TagSet

TOY = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
       Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                 [".", ".", "O"]])]


def test_word_shape():
    assert word_shape("Verwilghen") == "Xx" and word_shape("1.8") == "d.d"
    assert word_shape("VLD-lijst") == "X-x"


def test_fit_counts_and_normalisation():
    m = HMM(delta=0.1, min_count=1).fit(TOY)
    assert m.kind == "hmm" and m.scheme_ == "IOB2" and m.settings_["sentences"] == 2
    assert m.tags_ == ("O", "B-NP", "I-NP", "B-VP", "I-VP")
    np.testing.assert_allclose(np.exp(m.log_word_).sum(axis=1), 1.0)
    np.testing.assert_allclose(np.exp(m.log_trans_).sum(axis=1) + np.exp(m.log_end_), 1.0)
    # relative frequency with add-δ: B-NP -> I-NP seen twice out of 2 transitions
    L = len(m.tags_)
    i, j = m.tags_.index("B-NP"), m.tags_.index("I-NP")
    assert np.exp(m.log_trans_[i, j]) == pytest.approx((2 + 0.1) / (2 + 0.1 * (L + 1)))


def test_lattice_equals_the_machine_built_twin_on_real_sentences(corpus):
    """HMM score arrays vs the HMM as a tags->words transducer composed with the words."""
    train = read_conll(corpus("conll2000", "train.txt"))[:300]
    m = HMM().fit(train)
    ts = TagSet.from_tags(m.tags_, "IOB2")
    for s in read_conll(corpus("conll2000", "test.txt"))[:3]:
        fast = m.lattice(s)
        # emit the token ids (word+POS as one symbol) through the transducer
        ids = [f"{i}" for i in range(len(s))]
        emis = m.emissions(s)                          # (n, L), log Pr(word, pos | tag)
        hmm_fst, words = hmm_transducer(ts, m.tags_, ids, m.log_start_, m.log_trans_, emis.T)
        # the end probabilities as final weights of the tag states
        for q in range(1, hmm_fst.num_states()):
            hmm_fst.set_final(q, pynini.Weight("log64", -float(m.log_end_[q - 1])))
        w = fsa.string_fst([words.find(x) for x in ids], "log64")
        twin = Lattice.from_fst(pynini.compose(hmm_fst, w).project("input"), m.tags_, "IOB2")
        assert twin.log_partition() == pytest.approx(fast.log_partition(), rel=1e-12)
        np.testing.assert_allclose(twin.marginals(), fast.marginals(), atol=1e-10)


def test_save_load_round_trip_and_errors(tmp_path):
    m = HMM(min_count=1).fit(TOY)
    p = tmp_path / "m.npz"
    m.save(p)
    m2 = HMM.load(p)
    s = TOY[1]
    assert m2.lattice(s).log_partition() == pytest.approx(m.lattice(s).log_partition())
    assert m2.settings_ == m.settings_ and m2.tags_ == m.tags_
    trunc = tmp_path / "t.npz"
    trunc.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])
    with pytest.raises(ModelFileError, match="t.npz: not a readable fstchunk model file"):
        HMM.load(trunc)
    foreign = tmp_path / "f.npz"
    np.savez(foreign, x=np.zeros(3))
    with pytest.raises(ModelFileError, match="f.npz: an .npz file but not an fstchunk model"):
        HMM.load(foreign)
    with pytest.raises(ModelFileError, match="no such model file"):
        HMM.load(tmp_path / "missing.npz")


def test_unknown_words_and_bad_rows():
    m = HMM(min_count=2).fit(TOY)
    s = Sentence([["Zebras", "NNS"], ["run", "VBP"]])
    assert np.isfinite(m.lattice(s).log_partition())
    with pytest.raises(InputError, match=r"f.txt:7: the HMM reads the POS from column 2, but "
                                         r"the line has 1 column; .*--columns word,tag"):
        m.lattice(Sentence([["word"]], [7], "f.txt"))


def test_hyper_parameters_and_unfitted_model():
    """The constructor takes the hyper-parameters as given, fit checks them, learns from
    the data and returns the model."""
    m = HMM(scheme="iobes", delta=0.5)
    assert m.scheme == "iobes" and not m.fitted and not hasattr(m, "tags_")
    with pytest.raises(InputError, match="not fitted"):
        m.lattices(TOY)
    assert m.fit(TOY) is m and any(t.startswith("S-") or t.startswith("E-") for t in m.tags_)
    assert m.scheme == "iobes" and m.scheme_ == "IOBES"
    with pytest.raises(InputError, match="delta must be a finite number > 0"):
        HMM(delta=0).fit(TOY)
    with pytest.raises(InputError, match="min_count must be an integer >= 1"):
        HMM(min_count=0).fit(TOY)
    with pytest.raises(InputError, match="at least one training sentence"):
        HMM().fit([])


def test_word_tag_files_and_stored_columns(tmp_path):
    """Issue 16, item 1 for the HMM: a word/tag file under the default columns is
    refused (its POS emission would be the gold tag); with word,tag columns the HMM
    emits words only, and the columns travel with the model file."""
    two = [Sentence([[r[0], r[2]] for r in s.rows], [1, 2, 3, 4][:len(s)], "wt.txt")
           for s in TOY]
    with pytest.raises(InputError, match=r"wt.txt:1: the pos column would be the tag "
                                         r"column.*--columns word,tag"):
        HMM().fit(two)
    m = HMM(min_count=1, columns=Columns.parse("word,tag")).fit(two)
    assert m.columns_ == Columns(0, None, 1) and list(m.pos_vocab_) == [UNKNOWN]
    np.testing.assert_allclose(m.log_pos_, 0.0)
    blind = [Sentence([[r[0], "O"] for r in s.rows], s.lines) for s in two]
    words = [Sentence([[r[0]] for r in s.rows], s.lines) for s in two]
    for a, b, c in zip(m.lattices(two), m.lattices(blind), m.lattices(words)):
        np.testing.assert_array_equal(a.marginals(), b.marginals())
        np.testing.assert_array_equal(a.marginals(), c.marginals())
    m.save(tmp_path / "m.npz")
    back = HMM.load(tmp_path / "m.npz")
    assert back.columns_ == m.columns_ and back.tags_ == m.tags_
    assert back.lattice(two[1]).log_partition() == pytest.approx(m.lattice(two[1]).log_partition())
    # a word,_,pos,tag file; the data scheme can be given to fit
    four = [Sentence([[r[0], "-", r[1], r[2]] for r in s.rows], s.lines, "f4") for s in TOY]
    m4 = HMM(min_count=1, columns=Columns.parse("word,_,pos,tag"), data_scheme="IOB2").fit(four)
    assert m4.columns_ == Columns(0, 2, 3) and "NN" in m4.pos_vocab_
    plain = HMM(min_count=1).fit(TOY)
    np.testing.assert_allclose(m4.log_word_, plain.log_word_)
    np.testing.assert_allclose(m4.log_pos_, plain.log_pos_)


def test_degenerate_training_sets_are_refused():
    """Issue 16, item 6: an HMM was "trained" from an empty file and tagged all O."""
    with pytest.raises(InputError, match="no training sentences"):
        HMM().fit([])
    with pytest.raises(InputError, match="o.txt: no chunk in 2 training sentences"):
        HMM().fit([Sentence([["a", "DT", "O"]], [1], "o.txt"),
                   Sentence([["b", "NN", "O"]], [3], "o.txt")])
    with pytest.raises(InputError, match="s.txt: every training tag is 'B-NP'"):
        HMM().fit([Sentence([["a", "DT", "B-NP"]], [1], "s.txt")])


def test_a_word_spelled_like_the_unknown_entry(tmp_path):
    """A corpus may contain the token "<unk>": the vocabulary stays distinct and the
    model file loads back."""
    sents = TOY + [Sentence([["<unk>", "NN", "B-NP"], ["<UNK>", "NN", "I-NP"]]),
                   Sentence([[UNKNOWN, UNKNOWN, "B-NP"]])]
    m = HMM(min_count=1).fit(sents)
    assert len(set(m.vocab_)) == len(m.vocab_) == max(m.vocab_.values()) + 1
    m.save(tmp_path / "u.npz")
    assert HMM.load(tmp_path / "u.npz").vocab_ == m.vocab_
