"""Training for the macro-averaged F (issue 47 §2): the ``meu-macro`` objective, −E of
the mean over types of each type's F_β, against brute-force enumeration at two score
scales, its gradient by finite differences, the per-type count sweep against the
per-type utility's machine, and a model trained for it through the command line."""

import numpy as np
import pytest

from fstchunk.core.errors import InputError
from fstchunk.decoding.utilities import utility
from fstchunk.engine.expectation import from_count_table, tp_count_table
from fstchunk.io.conll import Sentence
from fstchunk.learn import objectives as lo
from fstchunk.learn.loss import Loss
from fstchunk.models.crf import CRF
from fstchunk.schemes import encodings as enc
from oracles import attribute_models_take, cli_trained_for, finite_difference_check

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["in", "IN", "B-PP"], ["Paris", "NNP", "B-NP"], ["run", "VBP", "B-VP"]])]


def model(seed=0, scale=0.5):
    crf = CRF("tmpt3", "IOB2")
    data = crf._prepare(SENTS)
    crf.theta_ = np.random.default_rng(seed).normal(scale=scale, size=crf.theta_.shape)
    return crf, data


def macro_f(y, gold, types, b2):
    out = []
    for t in types:
        h = {c for c in enc.tags_to_chunks(list(y), "IOB2") if c[0] == t}
        g = {c for c in enc.tags_to_chunks(list(gold), "IOB2") if c[0] == t}
        den = len(h) + b2 * len(g)
        out.append((1 + b2) * len(h & g) / den if den else 1.0)
    return np.mean(out)


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("scale", [0.5, 30.0])
def test_the_value_is_minus_the_mean_expected_macro_f_by_enumeration(beta, scale):
    crf, data = model(1, scale)
    value, _ = Loss(lo.MEU_MACRO, 0.0, beta=beta).function(crf, data)(crf.theta_)
    want = []
    for s in SENTS:
        gold = [row[-1] for row in s.rows]
        lat = crf.lattice(s)
        want.append(sum(np.exp(lp) * macro_f(y, gold, lat.space.types, beta * beta)
                        for y, lp in lat.enumerate()))
    assert value == pytest.approx(-np.mean(want), rel=1e-9, abs=1e-12)


def test_the_per_type_sweep_is_the_per_type_machine():
    crf, _ = model(4, 3.0)
    for s in SENTS:
        lat, gold = crf.lattice(s), [row[-1] for row in s.rows]
        for t in lat.space.types:
            ch = [c for c in enc.tags_to_chunks(gold, "IOB2") if c[0] == t]
            Z, T = tp_count_table(lat, ch, count_type=t)
            assert from_count_table(Z, T, len(ch), 1.0, "training").f == pytest.approx(
                utility(f"type:{t}").expected(lat, reference=gold), abs=1e-12)


def test_the_gradient_by_finite_differences():
    crf, data = model(2)
    finite_difference_check(Loss(lo.MEU_MACRO, 0.05).function(crf, data), crf.theta_,
                            np.random.default_rng(3))


def test_the_cli_trains_for_it_from_ml(tmp_path):
    ml, macro = cli_trained_for(tmp_path, SENTS, "meu-macro", "macro")
    assert macro > ml and macro > 0.99               # trained for it, from ML's θ


def test_the_attribute_crf_and_the_sklearn_drop_in_take_it():
    from fstchunk.sklearn import CRF as SkCRF
    attribute_models_take("meu-macro", SENTS)
    X = [[{"w": r[0].lower(), "pos": r[1]} for r in s.rows] for s in SENTS]
    y = [[r[-1] for r in s.rows] for s in SENTS]
    with pytest.raises(InputError, match="unknown objective 'macro'; use one of ml, meu, "
                                         "meu-exact, meu-macro, meu-partial, meu-type, meu-weighted"):
        SkCRF(objective="macro").fit(X, y)
