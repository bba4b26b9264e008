"""One CRF estimator over a pluggable feature map (fstchunk.models.chain_crf): the CRF
(templates over CoNLL columns) and the attribute CRF (python-crfsuite's items) are both
:class:`ChainCRF`, and a feature map of one's own plugs in with a few methods.  The
plugged model's lattices are checked against scores summed by hand over every valid
sequence, its fit against the likelihood's stationarity (finite differences), and its
copies, pickles, warm start and prepared data against the shared code's promises."""

import itertools
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from fstchunk.core.errors import InputError
from fstchunk.learn import objectives as lo
from fstchunk.models.attribute_crf import AttributeCRF
from fstchunk.models.batching import Gold
from fstchunk.models.chain_crf import ChainCRF
from fstchunk.models.crf import CRF
from fstchunk.models.design import TrainingData, observed_pairs
from fstchunk.models.estimator import Estimator
from fstchunk.schemes import encodings as enc
from fstchunk.schemes.tagspace import TagSet

X = [["the", "dog", "barks"], ["a", "cat", "sleeps", "."], ["dogs", "bark"]]
Y = [["B-NP", "I-NP", "B-VP"], ["B-NP", "I-NP", "B-VP", "O"], ["B-NP", "B-VP"]]


class WordFeatures:
    """A feature map of one's own: the word and its last two letters."""

    def __init__(self, names):
        self.names = list(names)
        self.index = {n: i for i, n in enumerate(self.names)}

    @staticmethod
    def of(word):
        return ["w=" + word, "suf=" + word[-2:]]

    def __len__(self):
        return len(self.names)

    def transform(self, X):
        rows, cols = [], []
        for i, word in enumerate(w for seq in X for w in seq):
            for f in self.of(word):
                if f in self.index:
                    rows.append(i)
                    cols.append(self.index[f])
        n = sum(len(seq) for seq in X)
        return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, len(self)))


class WordCRF(ChainCRF):
    """A chain CRF over word lists with IOB2 labels apart, in a few methods."""

    kind, noun = "word-crf", "a word CRF"
    objectives = (lo.ML, lo.MEU)

    def __init__(self, *, objective="ml", l2=0.1, beta=1.0, loss="hamming", max_iter=200,
                 tol=None, select="last", warm_start=False):
        self.objective, self.l2, self.beta, self.loss = objective, l2, beta, loss
        self.max_iter, self.tol, self.select, self.warm_start = max_iter, tol, select, warm_start

    def _set_state(self, fmap, tags, scheme, pairs, theta=None, settings=None):
        self.fmap_, self.tags_, self.scheme_ = fmap, tuple(tags), scheme
        self.pairs_ = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        self._set_theta(theta, "tags")
        self.settings_ = dict(settings or {})
        return self

    def _fitted_state(self):
        return dict(fmap=self.fmap_, tags=self.tags_, scheme=self.scheme_, pairs=self.pairs_)

    def _train_input(self, X, y):
        if isinstance(X, TrainingData):
            return X
        return X, y

    def _inputs(self, X):
        return [list(seq) for seq in X]

    def _gold(self, y):
        ix = {t: i for i, t in enumerate(self.tags_)}
        return Gold([np.array([ix[t] for t in ys]) for ys in y], self.tags_, self.scheme_)

    def _prepare(self, train):
        X, y = train
        names = sorted({f for seq in X for w in seq for f in WordFeatures.of(w)})
        tags = TagSet.from_tags({t for ys in y for t in ys}, "IOB2").tags
        fmap = WordFeatures(names)
        self._set_state(fmap, tags, "IOB2", np.zeros((0, 2)))
        gold = self._gold(y)
        Xm = fmap.transform(X)
        self._set_state(fmap, tags, "IOB2", observed_pairs(Xm, gold.sequences, len(tags)))
        return TrainingData(Xm, gold)

    def _data_of(self, train, data_scheme):
        X, y = train
        return TrainingData(self.fmap_.transform(X), self._gold(y))

    def dev_f(self, dev):
        return 0.0


def by_hand(model, words):
    """log Pr(y) of every valid IOB2 sequence, from θ's entries summed by hand."""
    trans, start, end = model.unpack(model.theta_)
    w = {(int(f), int(t)): v for (f, t), v in zip(model.pairs_, model.theta_[:model.P])}
    feats = [[model.fmap_.index[f] for f in WordFeatures.of(x) if f in model.fmap_.index]
             for x in words]
    scores = {}
    for y in itertools.product(range(model.L), repeat=len(words)):
        tags = [model.tags_[t] for t in y]
        if not enc.is_valid(tags, "IOB2"):
            continue
        s = start[y[0]] + end[y[-1]] + sum(trans[a, b] for a, b in zip(y, y[1:]))
        s += sum(w.get((f, t), 0.0) for fs, t in zip(feats, y) for f in fs)
        scores[tuple(tags)] = s
    logz = np.logaddexp.reduce(list(scores.values()))
    return {k: v - logz for k, v in scores.items()}


def test_the_crf_and_the_attribute_crf_are_one_estimator():
    for cls in (CRF, AttributeCRF):
        assert issubclass(cls, ChainCRF) and issubclass(cls, Estimator)
        for shared in ("fit", "lattices", "lattice", "copy", "solver", "training_data"):
            assert getattr(cls, shared) is getattr(ChainCRF, shared), (cls, shared)


def test_a_feature_map_of_ones_own_plugs_in():
    model = WordCRF().fit(X, Y)
    assert model.fitted and model.settings_["objective"] == "ml"
    for words in (["the", "cat", "barks"], ["dogs", "sleeps", "."], ["a"]):
        lat = model.lattice(words)
        expected = by_hand(model, words)
        got = dict(lat.enumerate())
        assert set(got) == set(expected)
        for y, lp in expected.items():
            assert got[y] == pytest.approx(lp, abs=1e-9)
    # fit found the optimum: the penalised likelihood's gradient is 0 there
    data = model.training_data((X, Y))
    fun = model.objective_function("ml", data, 0.1)
    value, grad = fun(model.theta_)
    assert np.abs(grad).max() < 1e-4
    rng = np.random.default_rng(0)
    d = rng.normal(size=model.theta_.shape) * 1e-5
    assert (fun(model.theta_ + d)[0] - fun(model.theta_ - d)[0]) / 2 == pytest.approx(
        grad @ d, abs=1e-9)


def test_the_shared_code_keeps_its_promises_for_a_plugged_map():
    model = WordCRF(max_iter=3).fit(X, Y)
    other = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(other.theta_, model.theta_)
    copy = model.copy(np.zeros_like(model.theta_))
    assert copy.get_params() == model.get_params() and not copy.theta_.any()
    assert model.theta_.any()
    data = model.training_data((X, Y))
    fresh = WordCRF(max_iter=3).fit(X, Y)
    model.fit(data)                           # prepared data: θ from 0, same run
    np.testing.assert_allclose(model.theta_, fresh.theta_, atol=1e-12)
    with pytest.raises(InputError, match="prepared training data belong to a fitted model; "
                                         "fit an unfitted WordCRF"):
        WordCRF().fit(data)
    with pytest.raises(InputError, match="unknown objective .max-margin.; use one of ml, meu"):
        WordCRF(objective="max-margin").fit(X, Y)
