"""Training for SemEval-2013's partial match (issue 47 §2): the ``meu-partial``
objective, −E of the partial-match F_β per sentence, against brute-force enumeration
(the credit from the evaluation module's nervaluate matching) at two score scales and
three β, its gradient by finite differences, and a model trained for it through the
command line."""

import numpy as np
import pytest

from fstchunk.evaluation.modes import match
from fstchunk.io.conll import Sentence
from fstchunk.learn import objectives as lo
from fstchunk.learn.loss import Loss
from fstchunk.models.crf import CRF
from fstchunk.schemes import encodings as enc
from oracles import attribute_models_take, cli_trained_for, finite_difference_check

SENTS = [Sentence([["The", "DT", "B-NP"], ["big", "JJ", "I-NP"], ["dog", "NN", "I-NP"],
                   ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["in", "IN", "B-PP"], ["Paris", "NNP", "B-NP"], ["run", "VBP", "B-VP"]])]


def model(seed=0, scale=0.5):
    crf = CRF("tmpt3", "IOB2")
    data = crf._prepare(SENTS)
    crf.theta_ = np.random.default_rng(seed).normal(scale=scale, size=crf.theta_.shape)
    return crf, data


def partial_f(y, gold, b2):
    pred, ref = enc.tags_to_chunks(list(y), "IOB2"), enc.tags_to_chunks(list(gold), "IOB2")
    if not pred and not ref:
        return 1.0
    s = match(ref, pred, "partial")
    return (1 + b2) * (s.correct + 0.5 * s.partial) / (len(pred) + b2 * len(ref))


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("scale", [0.5, 30.0])
def test_the_value_is_minus_the_mean_expected_partial_f_by_enumeration(beta, scale):
    crf, data = model(1, scale)
    value, _ = Loss(lo.MEU_PARTIAL, 0.0, beta=beta).function(crf, data)(crf.theta_)
    want = []
    for s in SENTS:
        gold = [row[-1] for row in s.rows]
        want.append(sum(np.exp(lp) * partial_f(y, gold, beta * beta)
                        for y, lp in crf.lattice(s).enumerate()))
    assert value == pytest.approx(-np.mean(want), rel=1e-9, abs=1e-12)


def test_the_gradient_by_finite_differences():
    crf, data = model(2)
    finite_difference_check(Loss(lo.MEU_PARTIAL, 0.05).function(crf, data), crf.theta_,
                            np.random.default_rng(3))
    crf, data = model(5, 4.0)
    finite_difference_check(Loss(lo.MEU_PARTIAL, 0.0, beta=0.5).function(crf, data),
                            crf.theta_, np.random.default_rng(6))


def test_the_cli_trains_for_it_from_ml(tmp_path):
    ml, part = cli_trained_for(tmp_path, SENTS, "meu-partial", "partial")
    assert part > ml and part > 0.99               # trained for it, from ML's θ


def test_the_attribute_crf_and_the_sklearn_drop_in_take_it():
    attribute_models_take("meu-partial", SENTS)
