"""The objectives' scale (issue 16): ``ml`` and ``meu`` are means per sentence,
``meu-corpus`` a corpus F; one default λ per objective (the registry's) that keeps
minimum-risk training from collapsing."""

import math

import numpy as np
import pytest

from fstchunk.io.conll import Sentence, read_conll
from fstchunk.models.crf import CRF
from fstchunk.learn.objectives import ML, MEU, MEU_CORPUS
from fstchunk.learn import Trainer
from fstchunk.models.base import chunk_dev_f as dev_f

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["Dogs", "NNS", "B-NP"], ["run", "VBP", "B-VP"]]),
         Sentence([["He", "PRP", "B-NP"]])]


def _model():
    crf = CRF("tmpt1")
    crf._prepare(SENTS)
    crf.theta_ = np.random.default_rng(0).normal(scale=0.5, size=crf.theta_.shape)
    return crf


@pytest.mark.parametrize("name", ["ml", "meu"])
def test_per_sentence_objectives_are_the_mean_of_the_sentences(name):
    crf = _model()
    whole, grad = crf.objective_function(name, crf.training_data(SENTS), 0.0)(crf.theta_)
    halves = [SENTS[:2], SENTS[2:]]     # (a training set of one tag is refused)
    parts = [crf.objective_function(name, crf.training_data(h), 0.0)(crf.theta_) for h in halves]
    assert whole == pytest.approx((2 * parts[0][0] + 2 * parts[1][0]) / 4, rel=1e-10)
    np.testing.assert_allclose(grad, (2 * parts[0][1] + 2 * parts[1][1]) / 4, atol=1e-10)
    assert not np.isclose(parts[0][0], parts[1][0])
    if name == "meu":
        assert -1.0 <= whole <= 0.0


@pytest.mark.parametrize("name", [o.name for o in (ML, MEU, MEU_CORPUS)])
def test_value_and_gradient_do_not_grow_with_the_corpus(name):
    crf = _model()
    once = crf.objective_function(name, crf.training_data(SENTS), 0.0)(crf.theta_)
    thrice = crf.objective_function(name, crf.training_data(SENTS * 3), 0.0)(crf.theta_)
    assert thrice[0] == pytest.approx(once[0], rel=1e-10)
    np.testing.assert_allclose(thrice[1], once[1], atol=1e-10)


def test_one_lambda_means_the_same_on_a_repeated_corpus():
    """Same λ, corpus repeated 3x: the same optimum (a sum would weaken λ 3-fold)."""
    a = CRF("tmpt1")
    da = a._prepare(SENTS)
    b = CRF("tmpt1")
    _ = b._prepare(SENTS)
    opts = dict(l2=0.01, max_iter=200, progress=False)
    Trainer(**opts).fit(a, da)
    Trainer(**opts).fit(b, b.training_data(SENTS * 3))
    np.testing.assert_allclose(b.theta_, a.theta_, atol=1e-4)


def test_default_lambdas():
    assert all(math.isfinite(o.default_l2) and 0 < o.default_l2 <= 1e-5
               for o in (ML, MEU, MEU_CORPUS))


def _start_from(ml):
    return ml.copy()


def test_minimum_risk_from_ml_with_defaults_does_not_fall_below_it(corpus):
    """Issue 16's acceptance on a slice of CoNLL-2000: ML with every default, then
    meu-corpus with every default from it, scores within noise of the ML model on dev;
    λ = 1 (the old CLI default) collapses it (every token its own chunk)."""
    train = read_conll(corpus("conll2000", "train.txt"))[:300]
    dev = read_conll(corpus("conll2000", "dev.txt"))[:150]
    ml = CRF("tmpt3")
    data = ml._prepare(train)
    Trainer(max_iter=40, progress=False).fit(ml, data)
    f_ml = dev_f(ml, dev)
    assert f_ml > 85
    meu = Trainer(objective="meu-corpus", max_iter=10, progress=False).fit(_start_from(ml), data)
    f_meu = dev_f(meu, dev)
    assert f_meu >= f_ml - 1.0
    bad = Trainer(objective="meu-corpus", l2=1.0, max_iter=10, progress=False).fit(
        _start_from(ml), data)
    assert dev_f(bad, dev) < f_meu - 30
