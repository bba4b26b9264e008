"""Viterbi needs no probabilities (issue 43, item 7): ``predict_single`` and
``tagger_.tag`` of fstchunk.sklearn.CRF worked for likelihood-trained models only, though
``predict`` decodes every model; what needs probabilities (marginals, MEU, confidences,
expected F) is refused with advice naming the Python call, and the command line's
message names its options."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fstchunk.cli import main
from fstchunk.io.conll import Sentence
from fstchunk.core.errors import FstchunkWarning, InputError
from fstchunk.learn import Trainer
from fstchunk.models.crf import CRF as ChainCRF
from fstchunk.sklearn import CRF
from oracles import TINY_CONLL

X = [[{"w": w, "suf": w[-1]} for w in s] for s in
     (["Ann", "met", "Bob"], ["Bob", "ran"], ["Ann", "and", "Cy", "met"], ["Cy", "ran"])]
Y = [["B-PER", "O", "B-PER"], ["B-PER", "O"], ["B-PER", "O", "B-PER", "O"], ["B-PER", "O"]]
CLI_OPTION = re.compile(r"(^|\s)--[a-z]|fstchunk (calibrate|train)")
MARGIN = [{"algorithm": "ap", "max_iterations": 5}, {"algorithm": "pa", "max_iterations": 5},
          {"algorithm": "arow", "max_iterations": 5},
          {"objective": "max-margin", "c2": 1.0, "max_iterations": 20}]


@pytest.mark.parametrize("params", MARGIN, ids=lambda p: p.get("algorithm", p.get("objective")))
def test_viterbi_works_for_every_algorithm(params):
    crf = CRF(**params).fit(X, Y)
    for xseq, want in zip(X, crf.predict(X)):
        assert crf.predict_single(xseq) == list(want)
        assert crf.tagger_.tag(xseq) == list(want)
    crf.tagger_.set(X[0])
    assert crf.tagger_.tag() == list(crf.predict([X[0]])[0])


@pytest.mark.parametrize("params", MARGIN, ids=lambda p: p.get("algorithm", p.get("objective")))
def test_what_needs_probabilities_names_the_python_call(params):
    """fstchunk's extras need probabilities; sklearn-crfsuite's own calls (marginals,
    tagger_.marginal/probability) give ap, pa and arow's normalised scores with a warning
    (as sklearn-crfsuite does) and refuse max-margin's until calibrated."""
    crf = CRF(**params).fit(X, Y)
    tagger = crf.tagger_
    tagger.set(X[0])
    compat = [lambda: crf.predict_marginals(X), lambda: crf.predict_marginals_single(X[0]),
              lambda: tagger.marginal("O", 0), lambda: tagger.probability(Y[0])]
    extras = [lambda: crf.predict(X, decoder="meu"), lambda: crf.predict_chunks(X),
              lambda: crf.expected_f(X, Y)]
    online = "algorithm" in params
    refused = extras if online else extras + compat
    if online:
        with pytest.warns(FstchunkWarning, match=r"not calibrated probabilities.*"
                                                 r"crf\.calibrate\(X_held_out, y_held_out\)"):
            assert np.isclose(sum(crf.predict_marginals_single(X[0])[0].values()), 1.0)
        for call in compat:
            call()
    calls = refused + (compat if online else [])
    for call in refused:
        with pytest.raises(InputError, match=r"Calibrate it on held-out sentences first: "
                                             r"crf\.calibrate\(X_held_out, y_held_out\)") as e:
            call()
        assert not CLI_OPTION.search(str(e.value)), str(e.value)
    crf.calibrate(X[2:], Y[2:])
    for call in calls:
        call()
    assert np.isclose(sum(crf.predict_marginals_single(X[0])[0].values()), 1.0)


def test_an_unfitted_estimator_says_so():
    with pytest.raises(InputError, match=r"not fitted yet: call fit\(X, y\)"):
        CRF().predict_single(X[0])


SENTS = [Sentence([r.split() for r in block.split("\n") if r])
         for block in TINY_CONLL.strip().split("\n\n")]


def test_the_chain_crf_advises_python_in_python_and_options_on_the_command_line(tmp_path,
                                                                                 capsys):
    crf = ChainCRF("tmpt1")
    data = crf._prepare(SENTS)
    Trainer(objective="max-margin", l2=0.1, max_iter=20, progress=False).fit(crf, data)
    with pytest.raises(InputError, match=r"crf\.calibrate\(held_out_sentences\)") as e:
        crf.lattices(SENTS)
    assert not CLI_OPTION.search(str(e.value))
    assert crf.lattices(SENTS, require_probabilities=False)
    path = tmp_path / "mm.npz"
    crf.save(path)
    conll = tmp_path / "in.txt"
    conll.write_text(TINY_CONLL)
    code = main(["decode", "--model", str(path), "--input", str(conll), "--decoder", "meu"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"fstchunk calibrate --model {path} --input HELDOUT -o {path}" in err
    assert "crf.calibrate" not in err


def test_trained_starts_of_the_online_solvers_name_python_calls():
    crf = ChainCRF("tmpt1")
    data = crf._prepare(SENTS)
    crf.theta_[:] = 0.1
    for objective in ("perceptron", "max-margin"):
        kw = {} if objective == "perceptron" else {"l2": 0.1}
        with pytest.raises(InputError, match="θ = 0") as e:
            Trainer(objective=objective, progress=False, **kw).fit(crf, data)
        assert "--init" not in str(e.value) and "resume=True" in str(e.value)
        assert "--init" in e.value.cli_text()
