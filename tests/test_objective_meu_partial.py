"""Training for SemEval-2013's partial and type matches (issue 47 §2): the
``meu-partial`` and ``meu-type`` objectives, −E of the mode's F_β per sentence, against
brute-force enumeration (the credit from the evaluation module's nervaluate matching)
at two score scales and three β, their gradients by finite differences, and models
trained for them through the command line."""

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


#: objective -> (utility, credit of a sentence from nervaluate's counts)
MODES = {lo.MEU_PARTIAL: ("partial", lambda s: s.correct + 0.5 * s.partial),
         lo.MEU_TYPE: ("type", lambda s: s.correct)}


def mode_f(y, gold, b2, objective):
    pred, ref = enc.tags_to_chunks(list(y), "IOB2"), enc.tags_to_chunks(list(gold), "IOB2")
    if not pred and not ref:
        return 1.0
    utility, credit = MODES[objective]
    return (1 + b2) * credit(match(ref, pred, utility)) / (len(pred) + b2 * len(ref))


@pytest.mark.parametrize("objective", list(MODES))
@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("scale", [0.5, 30.0])
def test_the_value_is_minus_the_mean_expected_f_by_enumeration(beta, scale, objective):
    crf, data = model(1, scale)
    value, _ = Loss(objective, 0.0, beta=beta).function(crf, data)(crf.theta_)
    want = []
    for s in SENTS:
        gold = [row[-1] for row in s.rows]
        want.append(sum(np.exp(lp) * mode_f(y, gold, beta * beta, objective)
                        for y, lp in crf.lattice(s).enumerate()))
    assert value == pytest.approx(-np.mean(want), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("objective", list(MODES))
def test_the_gradient_by_finite_differences(objective):
    crf, data = model(2)
    finite_difference_check(Loss(objective, 0.05).function(crf, data), crf.theta_,
                            np.random.default_rng(3))
    crf, data = model(5, 4.0)
    finite_difference_check(Loss(objective, 0.0, beta=0.5).function(crf, data),
                            crf.theta_, np.random.default_rng(6))


@pytest.mark.parametrize("objective", list(MODES))
def test_the_cli_trains_for_it_from_ml(tmp_path, objective):
    ml, got = cli_trained_for(tmp_path, SENTS, objective.name, MODES[objective][0])
    assert got > ml and got > 0.99                 # trained for it, from ML's θ


@pytest.mark.parametrize("objective", list(MODES))
def test_the_attribute_crf_and_the_sklearn_drop_in_take_it(objective):
    attribute_models_take(objective.name, SENTS)
