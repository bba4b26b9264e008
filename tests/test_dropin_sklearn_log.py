"""``training_log_`` of fstchunk.sklearn.CRF against sklearn-crfsuite's on the same data
(issue 46 §1): the same keys per algorithm (CRFsuite's log), with held-out data
CRFsuite's holdout evaluation, and the ``featgen_*`` figures.  Values are fstchunk's
(other solvers): the keys are compared, and the holdout figures against the model's
own predictions."""

from fractions import Fraction

import numpy as np
import pytest

sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")

from fstchunk.sklearn import CRF  # noqa: E402
from fstchunk.sklearn.traininglog import LabelScore  # noqa: E402
from test_sklearn_crf import corpus_xy  # noqa: E402

ALGORITHMS = [("lbfgs", {"c1": 0.1}), ("lbfgs", {"c2": 0.1}), ("l2sgd", {}), ("ap", {}),
              ("pa", {}), ("arow", {})]


@pytest.fixture(scope="module")
def ned(corpus):
    X, y = corpus_xy(corpus("conll2002", "ned.train"), 150)
    return X[30:], y[30:], X[:30], y[:30]


@pytest.mark.parametrize("algorithm, params", ALGORITHMS,
                         ids=[f"{a}-{'-'.join(p)}" for a, p in ALGORITHMS])
@pytest.mark.parametrize("with_dev", [False, True], ids=["train", "holdout"])
def test_iteration_keys_are_crfsuites(ned, algorithm, params, with_dev):
    X, y, Xd, yd = ned
    dev = {"X_dev": Xd, "y_dev": yd} if with_dev else {}
    theirs = sklearn_crfsuite.CRF(algorithm=algorithm, max_iterations=4, **params).fit(
        X, y, **dev).training_log_
    ours = CRF(algorithm=algorithm, max_iterations=4, **params).fit(X, y, **dev).training_log_
    extra = {"dev"} if with_dev else set()          # fstchunk's own figure
    for a, b in zip(theirs.iterations, ours.iterations):
        assert set(b) == set(a) | extra
    assert set(ours.last_iteration) == set(theirs.last_iteration) | extra
    assert ours.featgen_percent == theirs.featgen_percent == 100
    for name in ("featgen_seconds", "training_seconds", "storing_seconds"):
        assert isinstance(getattr(ours, name), float) and getattr(ours, name) >= 0
    assert ours.featgen_num_features > 0


def test_featgen_counts_crfsuites_features(ned):
    X, y, _, _ = ned
    for params in ({}, {"all_possible_transitions": True}, {"min_freq": 2}):
        theirs = sklearn_crfsuite.CRF(c2=0.1, max_iterations=2, **params).fit(X, y)
        ours = CRF(c2=0.1, max_iterations=2, **params).fit(X, y)
        assert ours.training_log_.featgen_num_features == \
            theirs.training_log_.featgen_num_features


def test_holdout_figures_are_crfsuites_evaluation_of_the_predictions(ned):
    X, y, Xd, yd = ned
    crf = CRF(c2=0.1, max_iterations=8).fit(X, y, X_dev=Xd, y_dev=yd)
    last = crf.training_log_.last_iteration
    pred = crf.predict(Xd)
    pairs = [(g, p) for gs, ps in zip(yd, pred) for g, p in zip(gs, ps)]
    assert last["item_accuracy"] == Fraction(sum(g == p for g, p in pairs), len(pairs))
    assert last["instance_accuracy"] == Fraction(
        sum(list(p) == g for g, p in zip(yd, pred)), len(yd))
    scores = last["scores"]
    assert set(scores) >= set(crf.classes_)
    for label, s in scores.items():
        assert isinstance(s, LabelScore)
        assert s.match == sum(g == p == label for g, p in pairs)
        assert s.model == sum(p == label for _, p in pairs)
        assert s.ref == sum(g == label for g, _ in pairs)
        if s.ref == 0:
            assert s.precision is s.recall is s.f1 is None
    f1 = [s.f1 or 0.0 for s in scores.values()]
    assert last["avg_f1"] == pytest.approx(sum(f1) / len(f1), abs=1e-12)


def test_lbfgs_error_norm_is_the_gradient_norm_on_crfsuites_scale(ned):
    """c1 = 0: error_norm is N·‖∇‖ at the iterate; it falls as L-BFGS converges."""
    X, y, _, _ = ned
    crf = CRF(c2=0.1, max_iterations=60).fit(X, y)
    its = crf.training_log_.iterations
    assert all(it["linesearch_trials"] >= 1 and it["linesearch_step"] > 0 for it in its)
    assert its[-1]["error_norm"] < 0.05 * its[0]["error_norm"]
    from fstchunk.learn.objectives import objective
    from fstchunk.models.solvers import Call
    model = crf.model_
    data = model.training_data((X, y))
    call = Call(objective("ml"), data, model.l2, 1.0, "hamming", 1e-9, None)
    _, grad = call.objective_loss.function(model, data, None)(model.theta_)
    grad = np.where(model.free, grad, 0.0)
    assert its[-1]["error_norm"] == pytest.approx(len(X) * np.linalg.norm(grad), rel=1e-6)
