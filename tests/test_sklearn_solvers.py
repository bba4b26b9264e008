"""The solvers behind fstchunk.sklearn.CRF's algorithms: OWL-QN against scipy's
L-BFGS-B on the smooth reformulation, l2sgd against L-BFGS's optimum, pa and arow on
separable data, resume and Ctrl-C through the Trainer."""

import numpy as np
import pytest
import scipy.optimize

from fstchunk.core.errors import FstchunkWarning, TrainingInterrupted
from fstchunk.learn.owlqn import OWLQN, Stopping, pseudo_gradient
from fstchunk.learn.solvers import LBFGS
from fstchunk.models.attribute_crf import AttributeCRF
from fstchunk.sklearn import CRF

from test_attribute_crf import toy


def logistic(seed, n=40, d=8):
    """A smooth convex f: logistic loss of random data (value, gradient)."""
    rng = np.random.default_rng(seed)
    A, b = rng.normal(size=(n, d)), rng.integers(0, 2, size=n) * 2 - 1

    def f(x):
        z = -b * (A @ x)
        value = float(np.logaddexp(0, z).sum())
        return value, A.T @ (-b / (1 + np.exp(-z)))
    return f, d


def l1_reference(f, d, mu, free):
    """argmin f(x) + μ‖x‖₁ by L-BFGS-B on x = u − v, u, v ≥ 0 (the smooth form)."""
    idx = np.flatnonzero(free)

    def g(z):
        x = np.zeros(d)
        x[idx] = z[:len(idx)] - z[len(idx):]
        value, grad = f(x)
        gi = grad[idx]
        return value + mu * z.sum(), np.concatenate([gi + mu, -gi + mu])
    res = scipy.optimize.minimize(g, np.zeros(2 * len(idx)), jac=True, method="L-BFGS-B",
                                  bounds=[(0, None)] * (2 * len(idx)),
                                  options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000})
    x = np.zeros(d)
    x[idx] = res.x[:len(idx)] - res.x[len(idx):]
    return x, res.fun


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mu", [0.3, 2.0, 6.0])
def test_owlqn_against_the_smooth_reformulation(seed, mu):
    f, d = logistic(seed)
    free = np.ones(d, bool)
    free[-1] = seed % 2 == 0                       # a fixed entry stays 0
    x_ref, F_ref = l1_reference(f, d, mu, free)
    solver = OWLQN(f, mu, free, memory=6, stop=Stopping(1, 1e-10, None, None))
    out = solver.run(np.zeros(d), 0, 1000, lambda *a: None)
    x = solver.interrupted()[0]
    assert out.value == pytest.approx(F_ref, rel=1e-7, abs=1e-8)
    np.testing.assert_allclose(x, x_ref, atol=2e-4)
    assert np.array_equal(x == 0, np.abs(x_ref) < 1e-6)       # the same support
    assert out.settings["nonzero"] == np.count_nonzero(x)
    if not free[-1]:
        assert x[-1] == 0
    # optimality: the pseudo-gradient vanishes
    assert np.abs(pseudo_gradient(x, f(x)[1], mu, free)).max() < 1e-4


def test_owlqn_without_l1_is_lbfgs():
    f, d = logistic(7)
    a = OWLQN(f, 0.0, None, stop=Stopping(1, 1e-10, None, None))
    a.run(np.zeros(d), 0, 1000, lambda *x: None)
    b = LBFGS(f, 1e-12, stop=Stopping(1, 1e-10, None, None))
    b.run(np.zeros(d), 0, 1000, lambda *x: None)
    np.testing.assert_allclose(a.interrupted()[0], b.interrupted()[0], atol=1e-6)


def test_crf_c1_zero_is_lbfgs_and_l1_sparser():
    X, y = toy(60)
    base = CRF(c1=0.0, c2=0.1, epsilon=1e-9, delta=1e-12, max_iterations=500).fit(X, y)
    assert base.model_.settings_["solver"] == "lbfgs"
    sparse = CRF(c1=2.0, c2=0.1, epsilon=1e-9, delta=1e-12, max_iterations=500).fit(X, y)
    assert sparse.model_.settings_["solver"] == "owlqn"
    assert sparse.num_nonzero_ < base.num_nonzero_


def test_l2sgd_reaches_the_lbfgs_optimum():
    X, y = toy(50)
    lb = CRF(algorithm="lbfgs", c2=1.0, epsilon=1e-10, delta=1e-12,
             max_iterations=1000).fit(X, y)
    sgd = CRF(algorithm="l2sgd", c2=1.0, max_iterations=300, delta=1e-9).fit(X, y)
    assert sgd.model_.settings_["solver"] == "l2sgd"
    a, b = lb.model_, sgd.model_
    fa = a.objective_function("ml", a.training_data((X, y)), a.settings_["l2"])
    va, vb = fa(a.theta_)[0], fa(b.theta_)[0]
    assert vb == pytest.approx(va, rel=1e-3)
    np.testing.assert_allclose(b.theta_, a.theta_, atol=0.05)
    assert [list(p) for p in sgd.predict(X)] == [list(p) for p in lb.predict(X)]


@pytest.mark.parametrize("algorithm, params", [
    ("ap", {}), ("pa", {"pa_type": 0}), ("pa", {"pa_type": 1, "error_sensitive": False}),
    ("pa", {"pa_type": 2, "averaging": False}), ("arow", {"variance": 0.5, "gamma": 2.0})])
def test_online_algorithms_fit_separable_data(algorithm, params):
    X, y = toy(60, seed=3)
    crf = CRF(algorithm=algorithm, max_iterations=30, scheme=None, **params).fit(X, y)
    assert crf.model_.settings_["objective"] == {"ap": "perceptron"}.get(algorithm, algorithm)
    assert crf.score(X, y) == 1.0
    model = crf.model_
    assert np.all(model.theta_[~model.free] == 0)        # no start/end, seen transitions only
    with pytest.warns(FstchunkWarning, match="calibrate"):
        crf.predict_marginals(X[:1])                     # normalised margins until calibrated
    crf.calibrate(*toy(20, seed=9))
    assert len(crf.predict_marginals(X[:1])[0]) == len(X[0])


@pytest.mark.parametrize("algorithm, options", [
    ("pa", {"pa_type": 1}), ("arow", {"epsilon": -1.0}), ("l2sgd", {"period": 10, "delta": 1e-6}),
    ("lbfgs", {})])
def test_resume_after_interrupt_continues_the_run(tmp_path, algorithm, options):
    """The online solvers keep their state: the resumed run is the uninterrupted model;
    L-BFGS restarts its curvature memory: the same iterations, not the same iterates.
    (arow: ε < 0, since CRFsuite's test loss/N <= 0 would stop it before pass 3 here.)"""
    X, y = toy(30, seed=5)
    objective = {"pa": "pa", "arow": "arow"}.get(algorithm, "ml")
    kw = dict(scheme=None, objective=objective, algorithm=algorithm, options=options,
              l2=None if objective != "ml" else 0.01, max_iter=6)
    whole = AttributeCRF(**kw).fit(X, y)
    ck = str(tmp_path / "ck.npz")

    def stop_at_3(p):
        if p.iteration == 3:
            raise KeyboardInterrupt
    with pytest.raises(TrainingInterrupted):
        AttributeCRF(**kw).fit(X, y, checkpoint=ck, checkpoint_every=1, callbacks=[stop_at_3])
    resumed = AttributeCRF(**kw).fit(X, y, checkpoint=ck, resume=True)
    assert resumed.settings_["iteration"] == whole.settings_["iteration"]
    if algorithm == "lbfgs":        # curvature memory restarts: the same optimum, not iterates
        assert resumed.settings_["iteration"] == 6
    else:
        np.testing.assert_allclose(resumed.theta_, whole.theta_, rtol=1e-9, atol=1e-12)
