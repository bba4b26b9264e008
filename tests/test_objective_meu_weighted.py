"""Training for per-type weighted F (issue 47 §2): the ``meu-weighted:T=w,...``
objective, −E of the weighted F_β per sentence (a chunk of type T counts w in tp and
in both chunk counts).  Oracles: the weighted count table against enumeration in four
schemes (and equal to the unweighted one at unit weights), the objective's value
against enumeration at two score scales and three β, its gradient by finite
differences, a model trained for it through the command line, and the names it is
given by (the weights written in one form, bad ones refused)."""

import numpy as np
import pytest

from fstchunk import Lattice
from fstchunk.core.errors import InputError
from fstchunk.engine.expectation import tp_count_table
from fstchunk.learn import objectives as lo
from fstchunk.learn.loss import Loss
from fstchunk.models.crf import CRF
from fstchunk.schemes import encodings as enc
from oracles import (attribute_models_take, cli_trained_for, finite_difference_check,
                     random_scores)
from test_objective_meu_partial import SENTS
from test_weighted_utility import f_w

TYPES = ("A", "B")


@pytest.mark.parametrize("scheme,n,scale,w", [
    ("IOB2", 4, 1.0, {"A": 2}), ("IOBES", 4, 30.0, {"B": 3}),
    ("IOB1", 3, 2.0, {"A": 2, "B": 2}), ("IOE1", 3, 0.5, {"A": 1, "B": 2})])
def test_the_weighted_count_table_equals_enumeration(scheme, n, scale, w):
    rng = np.random.default_rng(4)
    tags = enc.scheme_tags(scheme, TYPES)
    lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale=scale),
                              scheme=scheme)
    W = np.array([w.get(t, 1) for t in TYPES])
    seqs = [(enc.tags_to_chunks(list(y), scheme), np.exp(lp)) for y, lp in lat.enumerate()]
    for fixed, _ in seqs[::3]:
        Z, T = tp_count_table(lat, fixed, weights=W)
        wantZ, wantT = np.zeros_like(Z), np.zeros_like(T)
        for ch, p in seqs:
            m = sum(w.get(t, 1) for t, _, _ in ch)
            wantZ[m] += p
            wantT[m] += p * sum(w.get(c[0], 1) for c in set(ch) & set(fixed))
        np.testing.assert_allclose(Z, wantZ, atol=1e-12)
        np.testing.assert_allclose(T, wantT, atol=1e-12)
        Z1, T1 = tp_count_table(lat, fixed, weights=np.ones(2, int))
        Z0, T0 = tp_count_table(lat, fixed)
        np.testing.assert_allclose(Z1, Z0, atol=1e-15)
        np.testing.assert_allclose(T1, T0, atol=1e-15)


def model(seed=0, scale=0.5):
    crf = CRF("tmpt3", "IOB2")
    data = crf._prepare(SENTS)
    crf.theta_ = np.random.default_rng(seed).normal(scale=scale, size=crf.theta_.shape)
    return crf, data


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("scale", [0.5, 30.0])
def test_the_value_is_minus_the_mean_expected_weighted_f_by_enumeration(beta, scale):
    crf, data = model(1, scale)
    w = {"NP": 2, "PP": 3}
    o = lo.objective("meu-weighted:NP=2,PP=3")
    value, _ = Loss(o, 0.0, beta=beta).function(crf, data)(crf.theta_)
    want = []
    for s in SENTS:
        gold = enc.tags_to_chunks([row[-1] for row in s.rows], "IOB2")
        want.append(sum(np.exp(lp) * f_w(enc.tags_to_chunks(list(y), "IOB2"), gold, w,
                                         beta * beta)
                        for y, lp in crf.lattice(s).enumerate()))
    assert value == pytest.approx(-np.mean(want), rel=1e-9, abs=1e-12)


def test_the_gradient_by_finite_differences():
    crf, data = model(2)
    o = lo.objective("meu-weighted:VP=3")
    finite_difference_check(Loss(o, 0.05).function(crf, data), crf.theta_,
                            np.random.default_rng(3))
    crf, data = model(5, 4.0)
    finite_difference_check(Loss(lo.objective("meu-weighted:NP=2,VP=2"), 0.0, beta=0.5)
                            .function(crf, data), crf.theta_, np.random.default_rng(6))


def test_the_cli_trains_for_it_from_ml(tmp_path, capsys):
    ml, weighted = cli_trained_for(tmp_path, SENTS, "meu-weighted:VP=3", "weighted:VP=3")
    assert weighted > ml and weighted > 0.99
    from fstchunk.cli import main
    for bad, said in [("meu-weighted:VP=x", "argument --objective: objective "
                       "'meu-weighted:VP=x': each weight is TYPE=W"),
                      ("meu-weighted", "argument --objective: objective 'meu-weighted' needs "
                       "its weights")]:
        with pytest.raises(SystemExit):
            main(["train", "--train", str(tmp_path / "train.txt"), "--objective", bad,
                  "-o", str(tmp_path / "x.npz")])
        assert said in capsys.readouterr().err


def test_the_attribute_crf_and_the_sklearn_drop_in_take_it():
    attribute_models_take("meu-weighted:NP=2", SENTS)


def test_its_names():
    o = lo.objective("meu-weighted: PER=2 ,LOC=3")
    assert o.name == "meu-weighted:PER=2,LOC=3" and o.family == "meu-weighted"
    assert o == lo.objective(o.name) and o.default_l2 == lo.MEU.default_l2
    import pickle
    assert pickle.loads(pickle.dumps(o)) == o
    for bad, said in [("meu-weighted", "needs its weights"), ("meu-weighted:", "needs its"),
                      (lo.MEU_WEIGHTED, "needs its weights"),
                      ("meu-weighted:LOC=1.5", "each weight is TYPE=W with a whole W >= 1"),
                      ("meu-weighted:LOC", "each weight is TYPE=W")]:
        with pytest.raises(InputError, match=said):
            lo.objective(bad)
    with pytest.raises(InputError, match="unknown objective 'meu-weighted:X=2'; use one of "
                                         "ml, perceptron"):
        lo.objective("meu-weighted:X=2", (lo.ML, lo.PERCEPTRON))
    crf, data = model()
    with pytest.raises(InputError, match="'PER' not among the lattice's types NP, PP, VP"):
        Loss(lo.objective("meu-weighted:PER=2"), 0.0).function(crf, data)(crf.theta_)
