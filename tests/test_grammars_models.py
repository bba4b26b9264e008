"""fstchunk.grammars.models: score lattices, the toy bigram model, the HMM transducer."""

import itertools
import math

import numpy as np
import pytest

from fstchunk.core.errors import InputError
from fstchunk.grammars import fsa, models
from fstchunk.schemes import encodings as enc
from fstchunk.schemes.tagspace import TagSet


def test_score_lattice_weights_are_minus_scores():
    rng = np.random.default_rng(0)
    labels = [1, 2, 3]
    emis, trans, start, end = (rng.normal(size=(3, 3)), rng.normal(size=(3, 3)),
                               rng.normal(size=3), rng.normal(size=3))
    trans[0, 1] = -np.inf                                     # no arc
    got = {tuple(i): w for i, _, w in fsa.paths(models.score_lattice(labels, emis, trans,
                                                                      start, end))}
    want = {}
    for y in itertools.product(range(3), repeat=3):
        s = start[y[0]] + sum(emis[i, y[i]] for i in range(3)) + end[y[2]]
        s += sum(trans[a, b] for a, b in zip(y, y[1:]))
        if s > -math.inf:
            want[tuple(labels[k] for k in y)] = -s
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], abs=1e-12)


def test_score_lattice_checks_shapes():
    with pytest.raises(InputError, match=r"emissions has shape \(2, 3\), expected \(n, 2\)"):
        models.score_lattice([1, 2], np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(InputError, match="transitions has shape"):
        models.score_lattice([1, 2], np.zeros((2, 2)), np.zeros((3, 3)))
    with pytest.raises(InputError, match="end has shape"):
        models.score_lattice([1, 2], np.zeros((2, 2)), np.zeros((2, 2)), end=np.zeros(3))


@pytest.mark.parametrize("theta", [0.1, 0.5, 0.9])
def test_toy_bigram_is_a_distribution_over_valid_iob2(theta):
    fst = models.toy_bigram(theta, 4)
    assert fsa.total_weight(fst) == pytest.approx(0.0, abs=1e-12)
    names = fst.input_symbols().find
    for i, _, w in fsa.paths(fst):
        tags = [names(x) for x in i]
        assert len(tags) == 4 and enc.is_valid(tags, "IOB2")      # b(I|O) = 0
        assert w < math.inf
    assert models.toy_bigram(theta, 2, "standard").arc_type() == "standard"


@pytest.mark.parametrize("theta", [0.0, 1.0, -1, float("nan")])
def test_toy_bigram_rejects_theta(theta):
    with pytest.raises(InputError, match="theta"):
        models.toy_bigram_scores(theta, 3)


def test_hmm_transducer_weights():
    ts = TagSet("IOB2", ["NP"])
    tags = ts.tags
    vocab = ["a", "b"]
    rng = np.random.default_rng(1)
    log_start = np.log(rng.dirichlet(np.ones(3)))
    log_trans = np.log(rng.dirichlet(np.ones(3), size=3))
    log_emit = np.log(rng.dirichlet(np.ones(2), size=3))
    f, words = models.hmm_transducer(ts, tags, vocab, log_start, log_trans, log_emit)
    assert f.output_symbols().find("b") == words.find("b") > 0
    sentence = fsa.string_fst([words.find("a"), words.find("b")], "log64")
    joint = (f @ sentence).connect()
    total = math.fsum(
        math.exp(log_start[x] + log_emit[x, 0] + log_trans[x, y] + log_emit[y, 1])
        for x in range(3) for y in range(3))
    assert fsa.total_weight(joint) == pytest.approx(-math.log(total), abs=1e-12)
