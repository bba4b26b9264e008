"""The estimator contract (issue 45, fstchunk/models/estimator.py) for JointModel: items
1-4 (hyper-parameters as given, fit never rewrites them, fitted state in ``*_``
attributes, warm_start), the old names as warning aliases, load setting both, and the
weights and predictions of JointModel(...).fit equal to those of the way that stays
(``model_for`` + :class:`fstchunk.learn.loop.Trainer`, as ``joint train`` ran before)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fstchunk.core.errors import FstchunkDeprecationWarning, InputError
from fstchunk.io.conll import read_conll
from fstchunk.learn.loop import Trainer
from fstchunk.models import joint as J
from fstchunk.models.joint.train import ALGORITHMS, default_l2

PARAMS = {"variant": "joint", "algorithm": "mmvp", "max_iter": 2, "l2": None, "tol": None,
          "select": "last", "collapse_pos": True, "np_only": True, "warm_start": False}


@pytest.fixture(scope="module")
def sents(corpus):
    return read_conll(corpus("conll2000", "train.txt"))[:30]


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k] == b[k] and type(a[k]) is type(b[k]) for k in a)


def test_constructor_stores_hyper_parameters_as_given():
    odd = {**PARAMS, "max_iter": "two", "variant": "svm", "collapse_pos": 1}
    m = J.JointModel(**odd)                    # no check, no conversion in __init__
    assert _same(m.get_params(), odd)
    clone = type(m)(**m.get_params())
    assert _same(clone.get_params(), odd) and not clone.fitted
    with pytest.raises(InputError, match="unknown JointModel parameter 'iterations'"):
        m.set_params(iterations=3)
    with pytest.raises(InputError, match="unknown model kind 'svm'"):
        m.fit([])                              # the checks happen in fit
    with pytest.raises(InputError, match="collapse_pos must be True or False"):
        m.set_params(variant="joint").fit([])


def test_fit_returns_self_and_keeps_hyper_parameters(sents):
    m = J.JointModel(**PARAMS)
    before = m.get_params()
    assert m.fit(sents) is m and m.fitted
    assert _same(m.get_params(), before)
    with pytest.raises(InputError, match=r"set_params\(max_iter=3\)"):
        m.fit(sents, max_iter=3)
    with pytest.raises(InputError, match=r"set_params\(algorithm='crf'\)"):
        m.fit(sents, "crf")                    # the form before: fit(data, algorithm)
    with pytest.raises(InputError, match=r"set_params\(max_iter=3\)"):
        m.fit(sents, iterations=3)             # max_iter's older name


def test_fitted_state_ends_in_underscore(sents):
    unfitted = J.JointModel(**PARAMS)
    assert not [k for k in vars(unfitted) if k.endswith("_") and not k.startswith("_")]
    assert not hasattr(unfitted, "theta_") and not hasattr(unfitted, "settings_")
    with pytest.raises(InputError, match="not fitted"):
        J.predict(unfitted, J.layered(sents[:1]))
    fitted = J.JointModel(**PARAMS).fit(sents)
    new = set(vars(fitted)) - set(vars(unfitted))
    assert new and all(k.endswith("_") or k.startswith("_") for k in new), new
    assert fitted.scheme_ == "IOB2" and fitted.variant_ == "joint"
    assert fitted.theta_.shape == (fitted.size,) and fitted.theta_.any()
    assert fitted.settings_["collapse_pos"] and fitted.settings_["algorithm"] == "mmvp"
    assert fitted.layout_ is None and fitted.data_scheme_ is None
    assert "NP" in fitted.chunk_labels_ and "O" in fitted.chunk_labels_
    theta = fitted.theta_ + 1.0                # theta_ reads and assigns the weights
    fitted.theta_ = theta
    np.testing.assert_array_equal(fitted.theta_, theta)
    with pytest.warns(FstchunkDeprecationWarning, match=r"JointModel.w is JointModel.theta_"):
        np.testing.assert_array_equal(fitted.w, theta)
    with pytest.warns(FstchunkDeprecationWarning, match="settings_"):
        assert fitted.settings is fitted.settings_
    with pytest.warns(FstchunkDeprecationWarning, match="scheme_"):
        assert fitted.scheme == "IOB2"


def test_warm_start(sents):
    cold = J.JointModel(**PARAMS).fit(sents[:15])
    first = cold.theta_.copy()
    again = cold.fit(sents[:15]).theta_.copy()         # afresh: the same weights
    np.testing.assert_allclose(again, first, rtol=0, atol=1e-12)
    warm = J.JointModel(**{**PARAMS, "warm_start": True}).fit(sents[:15])
    np.testing.assert_allclose(warm.theta_, first, rtol=0, atol=1e-12)
    vocabs = warm.vocabs_
    warm.fit(sents[:15])                               # on from the current weights
    assert warm.vocabs_ is vocabs and np.abs(warm.theta_ - first).max() > 1e-6
    with pytest.raises(InputError, match="variant='tagger', but the model was built with"):
        warm.set_params(variant="tagger").fit(sents[:15])


@pytest.mark.parametrize("variant,algorithm,max_iter", [("joint", "perceptron", 2),
                                                         ("joint", "crf", 4),
                                                         ("tagger", "mmvp", 2),
                                                         ("chunker", "perceptron", 2)])
def test_weights_and_predictions_equal_the_way_that_stays(sents, variant, algorithm,
                                                           max_iter):
    data = J.layered(sents, True, True)
    old, encoded = J.model_for(data, variant, {"collapse_pos": True, "np_only": True})
    objective = ALGORITHMS[algorithm]
    Trainer(objective=objective, l2=default_l2(objective, None), max_iter=max_iter,
            progress=False).fit(old, encoded)
    new = J.JointModel(variant=variant, algorithm=algorithm, max_iter=max_iter,
                       collapse_pos=True, np_only=True).fit(sents)
    np.testing.assert_allclose(new.theta_, old.theta_, rtol=0, atol=1e-12)
    assert J.predict(new, data) == J.predict(old, data)
    assert new.settings_["algorithm"] == old.settings_["algorithm"] == algorithm
    on_encoded = J.model_for(data, variant, {"collapse_pos": True, "np_only": True})[0]
    on_encoded.set_params(algorithm=algorithm, max_iter=max_iter).fit(encoded)
    np.testing.assert_allclose(on_encoded.theta_, old.theta_, rtol=0, atol=1e-12)


def test_load_sets_hyper_parameters_and_fitted_state(sents, tmp_path):
    m = J.JointModel(**{**PARAMS, "algorithm": "crf", "l2": 0.01}).fit(sents)
    m.save(tmp_path / "m.npz")
    back = J.JointModel.load(tmp_path / "m.npz")
    assert back.fitted and back.path == str(tmp_path / "m.npz")
    assert _same(back.get_params(), {**PARAMS, "algorithm": "crf", "l2": 0.01})
    np.testing.assert_array_equal(back.theta_, m.theta_)
    assert back.settings_ == m.settings_ and back.scheme_ == "IOB2"


def test_old_model_files_load():
    for name in ("joint.npz", "joint-crf.npz"):
        m = J.JointModel.load(Path(__file__).parent / "data" / "v2" / name)
        assert m.fitted and m.variant == m.variant_ == m.settings_.get("kind", "joint")
        assert m.theta_.shape == (m.size,) and not m.warm_start
