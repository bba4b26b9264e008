"""The one loss object (issue 45): learn/loss.Loss, its pickling, its value against the
lattice's own log-probabilities and expected F, partial gold through the same object."""

import pickle

import numpy as np
import pytest

from fstchunk.core.errors import InputError
from fstchunk.io.conll import Sentence
from fstchunk.learn import objectives as lo
from fstchunk.learn.loss import Loss
from fstchunk.models.crf import CRF
from fstchunk.models.partial import PartialGold
from oracles import finite_difference_check

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["Dogs", "NNS", "B-NP"], ["run", "VBP", "B-VP"]])]


def model(seed=0):
    crf = CRF("tmpt3", "IOB2")
    data = crf._prepare(SENTS)
    crf.theta_ = np.random.default_rng(seed).normal(scale=0.5, size=crf.theta_.shape)
    return crf, data


@pytest.mark.parametrize("name", ["ml", "meu", "meu-corpus", "max-margin"])
def test_a_loss_pickles_with_the_registry_s_own_objective(name):
    loss = Loss(lo.objective(name), 0.1, beta=2.0, margin="hamming")
    back = pickle.loads(pickle.dumps(loss))
    assert back == loss and back.objective is lo.objective(name)


@pytest.mark.parametrize("name", ["perceptron", "pa", "arow", "mmvp", "multilabel"])
def test_objectives_trained_by_passes_have_no_loss(name):
    with pytest.raises(InputError, match="no objective function"):
        Loss(lo.objective(name))


def test_ml_loss_is_the_mean_negative_log_probability_plus_l2():
    crf, data = model()
    value, _ = Loss(lo.ML, 0.3).function(crf, data)(crf.theta_)
    want = -np.mean([crf.lattice(s).log_prob([crf.tags_[i] for i in g])
                     for s, g in zip(SENTS, data.gold.sequences)])
    assert value == pytest.approx(want + 0.3 * crf.theta_ @ crf.theta_, rel=1e-10)


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_meu_loss_is_minus_the_mean_expected_f(beta):
    crf, data = model(1)
    value, _ = Loss(lo.MEU, 0.0, beta=beta).function(crf, data)(crf.theta_)
    want = -np.mean([crf.lattice(s).expected_f([row[-1] for row in s.rows], beta=beta).f
                     for s in SENTS])
    assert value == pytest.approx(want, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("name", ["ml", "meu", "meu-corpus"])
def test_the_gradient_by_finite_differences(name):
    crf, data = model(2)
    finite_difference_check(Loss(lo.objective(name), 0.05).function(crf, data), crf.theta_,
                            np.random.default_rng(3))


def test_partial_gold_that_allows_only_the_gold_is_ml():
    """The gold-kind table: a partial annotation allowing exactly the gold tag at every
    token gives ML's value and gradient through the same loss object."""
    crf, data = model(4)
    masks = [np.eye(crf.L, dtype=bool)[g] for g in data.gold.sequences]
    partial = type(data)(data.X, PartialGold(masks, crf.tags_, crf.scheme_))
    full_v, full_g = Loss(lo.ML, 0.1).function(crf, data)(crf.theta_)
    part_v, part_g = Loss(lo.ML, 0.1).function(crf, partial)(crf.theta_)
    assert part_v == pytest.approx(full_v, rel=1e-10)
    np.testing.assert_allclose(part_g, full_g, rtol=1e-8, atol=1e-10)
