"""Training for the exact-boundary utility (issue 47 §2): the ``meu-exact`` objective,
−E[F_β] of a chunk right with its boundaries whatever its type (SemEval's exact mode),
against brute-force enumeration, its gradient by finite differences, and a model
trained for it through the CLI."""

import numpy as np
import pytest

from fstchunk.cli import main
from fstchunk.io.conll import Sentence, write_conll
from fstchunk.learn import objectives as lo
from fstchunk.learn.loss import Loss
from fstchunk.models.crf import CRF
from fstchunk.schemes import encodings as enc
from oracles import finite_difference_check

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["Dogs", "NNS", "B-NP"], ["run", "VBP", "B-VP"]])]


def model(seed=0, scale=0.5):
    crf = CRF("tmpt3", "IOB2")
    data = crf._prepare(SENTS)
    crf.theta_ = np.random.default_rng(seed).normal(scale=scale, size=crf.theta_.shape)
    return crf, data


def exact_f(y, gold, b2):
    spans = lambda tags: {(s, e) for _, s, e in enc.tags_to_chunks(list(tags), "IOB2")}
    h, g = spans(y), spans(gold)
    den = len(h) + b2 * len(g)
    return (1 + b2) * len(h & g) / den if den else 1.0


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("scale", [0.5, 30.0])
def test_the_value_is_minus_the_mean_expected_exact_f_by_enumeration(beta, scale):
    crf, data = model(1, scale)
    value, _ = Loss(lo.MEU_EXACT, 0.0, beta=beta).function(crf, data)(crf.theta_)
    want = []
    for s in SENTS:
        gold = [row[-1] for row in s.rows]
        want.append(sum(np.exp(lp) * exact_f(y, gold, beta * beta)
                        for y, lp in crf.lattice(s).enumerate()))
    assert value == pytest.approx(-np.mean(want), rel=1e-9, abs=1e-12)
    typed, _ = Loss(lo.MEU, 0.0, beta=beta).function(crf, data)(crf.theta_)
    assert value <= typed + 1e-12               # a right type is a right boundary too


def test_the_gradient_by_finite_differences():
    crf, data = model(2)
    finite_difference_check(Loss(lo.MEU_EXACT, 0.05).function(crf, data), crf.theta_,
                            np.random.default_rng(3))


def test_the_cli_trains_for_it_from_ml(tmp_path, capsys):
    write_conll(SENTS * 4, tmp_path / "train.txt")
    t = str(tmp_path / "train.txt")
    assert main(["train", "--train", t, "--max-iter", "5", "--quiet",
                 "-o", str(tmp_path / "ml.npz")]) == 0
    assert main(["train", "--train", t, "--objective", "meu-exact", "--init",
                 str(tmp_path / "ml.npz"), "--max-iter", "3", "--quiet",
                 "-o", str(tmp_path / "exact.npz")]) == 0
    from fstchunk.decoding.exact_boundaries import expected_exact_f
    from fstchunk.models import load_model

    def mean_exact_f(path):
        m = load_model(str(path))
        return np.mean([expected_exact_f(m.lattice(s), reference=[r[-1] for r in s.rows]).f
                        for s in SENTS])
    ml, exact = mean_exact_f(tmp_path / "ml.npz"), mean_exact_f(tmp_path / "exact.npz")
    assert exact > ml and exact > 0.99               # trained for it, from ML's θ
