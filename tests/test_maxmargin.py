"""Max-margin training (issue 18): the structured hinge and its subgradient against
finite differences; BCFW's duality gap against the optimum of the same problem solved
by scipy as an explicit QP over every valid sequence; the Trainer's bookkeeping
(settings, checkpoints, Ctrl-C, resume) and the command line."""

import itertools
import json

import numpy as np
import pytest
import scipy.optimize

from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.io.conll import Sentence
from fstchunk.core.errors import InputError, TrainingInterrupted
from fstchunk.decoding.lossaug import loss_value
from fstchunk.models import bcfw, maxmargin as mm
from fstchunk.models.crf import CRF
from fstchunk.models.crf_loss import chain_rule
from fstchunk.models.objectives import ChainGrad, Gold
from fstchunk.learn import Progress, Trainer

from oracles import TINY_CONLL, prepared

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["Dogs", "NNS", "B-NP"], ["run", "VBP", "B-VP"]]),
         Sentence([["He", "PRP", "B-NP"]])]


def _problem(min_count=1):
    return prepared(CRF("tmpt1", min_count=min_count), SENTS)


@pytest.mark.parametrize("loss", mm.LOSSES)
def test_hinge_subgradient_matches_finite_differences(loss):
    crf, data = _problem()
    rng = np.random.default_rng(1)
    theta = rng.normal(scale=0.7, size=crf.theta_.shape)
    fun = crf.objective_function("max-margin", data, 0.03, beta=1.5, loss=loss)
    value, grad = fun(theta)
    assert value > 0
    eps = 1e-6
    for _ in range(6):                    # random directions at a differentiable point
        d = rng.normal(size=theta.shape)
        fd = (fun(theta + eps * d)[0] - fun(theta - eps * d)[0]) / (2 * eps)
        assert fd == pytest.approx(float(grad @ d), rel=1e-6, abs=1e-8)
    for i in rng.choice(len(theta), 10, replace=False):
        e = np.zeros_like(theta)
        e[i] = eps
        fd = (fun(theta + e)[0] - fun(theta - e)[0]) / (2 * eps)
        assert fd == pytest.approx(grad[i], rel=1e-6, abs=1e-8)


def test_hinge_is_the_mean_of_brute_force_maxima():
    crf, data = _problem()
    theta = np.random.default_rng(2).normal(scale=0.5, size=crf.theta_.shape)
    value, _ = crf.objective_function("max-margin", data, 0.0, loss="f", beta=2.0)(theta)
    crf.theta_ = theta
    want = 0.0
    for s, lat in zip(SENTS, crf.lattices(SENTS)):
        gold = enc.convert(s.column(-1), "IOB2", crf.scheme_)
        em, tr, st, en = lat.scores
        best = max(loss_value(y, gold, crf.scheme_, "f", 2.0)
                   + _score(crf, em, tr, st, en, y) for y in _valid(crf, len(s)))
        want += best - _score(crf, em, tr, st, en, gold)
    assert value == pytest.approx(want / len(SENTS), rel=1e-12)


def _valid(crf, n):
    return [list(y) for y in itertools.product(crf.tags_, repeat=n)
            if enc.is_valid(list(y), crf.scheme_)]


def _score(crf, em, tr, st, en, tags):
    y = np.array([crf.tags_.index(t) for t in tags])
    return mm.sequence_score(em, tr, st, en, y)


def _qp_optimum(crf, data, l2, loss, beta):
    """min_θ λ‖θ‖² + (1/N) Σ ξ_i  s.t.  ξ_i ≥ Δ(y, y_i) + θ·(φ(y) − φ(y_i)) for every
    valid y: the primal as an explicit QP (SLSQP), every sequence enumerated."""
    P = len(crf.theta_)
    N = len(SENTS)
    rows, rhs = [], []
    for k, s in enumerate(SENTS):
        g_tags = [crf.tags_[t] for t in data.gold.sequences[k]]
        one = Gold([data.gold.sequences[k]], crf.tags_, crf.scheme_)
        sub = type(data)(data.X[data.gold.offsets[k]:data.gold.offsets[k + 1]], one)

        def phi(tags):
            y = np.array([crf.tags_.index(t) for t in tags])
            n, L = len(y), crf.L
            E = np.zeros((n, L))
            E[np.arange(n), y] = 1
            T = np.zeros((L, L))
            np.add.at(T, (y[:-1], y[1:]), 1)
            S, En = np.zeros(L), np.zeros(L)
            S[y[0]], En[y[-1]] = 1, 1
            return chain_rule(crf, sub, ChainGrad(E, T, S, En))

        pg = phi(g_tags)
        for y in _valid(crf, len(s)):
            a = np.zeros(P + N)
            a[:P] = phi(y) - pg
            a[P + k] = -1.0
            rows.append(a)            # a·z + Δ ≤ 0
            rhs.append(loss_value(y, g_tags, crf.scheme_, loss, beta))
    A, b = np.array(rows), np.array(rhs)

    def f(z):
        return l2 * z[:P] @ z[:P] + z[P:].sum() / N, np.concatenate([2 * l2 * z[:P],
                                                                     np.full(N, 1.0 / N)])

    z0 = np.concatenate([np.zeros(P), np.full(N, b.max())])
    res = scipy.optimize.minimize(f, z0, jac=True, method="SLSQP",
                                  constraints=[{"type": "ineq", "fun": lambda z: -(A @ z + b),
                                                "jac": lambda z: -A}],
                                  options={"maxiter": 500, "ftol": 1e-12})
    assert res.success, res.message
    assert np.all(A @ res.x + b <= 1e-7)
    return res.fun


@pytest.mark.parametrize("loss, beta", [("hamming", 1.0), ("f", 1.0), ("f", 2.0)])
def test_bcfw_gap_reaches_the_tolerance_at_the_qp_optimum(loss, beta):
    crf, data = _problem(min_count=2)
    l2, tol = 0.05, 1e-5
    optimum = _qp_optimum(crf, data, l2, loss, beta)
    solver = bcfw.BCFW(crf, data, l2, loss, beta)
    primal, gap = solver.certificate()
    for _ in range(400):
        if gap <= tol:
            break
        solver.run_pass()
        primal, gap = solver.certificate()
    assert gap <= tol
    # the certificate: D(α) = P(w) − gap ≤ min P ≤ P(w)
    assert primal - gap <= optimum + 1e-7
    assert primal >= optimum - 1e-7
    assert primal == pytest.approx(optimum, abs=tol + 1e-7)
    fun = crf.objective_function("max-margin", data, l2, beta=beta, loss=loss)
    assert fun(solver.theta)[0] == pytest.approx(primal, rel=1e-12)


def test_batched_oracles_reach_the_qp_optimum(monkeypatch):
    """Oracles found 3 sentences at a time at the w before the first (the big-corpus
    pass): the line search at the current w keeps the dual rising, so the certificate
    still closes at the QP optimum."""
    crf, data = _problem(min_count=2)
    optimum = _qp_optimum(crf, data, 0.05, "hamming", 1.0)
    monkeypatch.setattr(bcfw.BCFW, "oracle_batch", lambda self: 3)
    calls = {"n": 0}
    real = bcfw.BCFW.oracles

    def counted(self, *args):
        calls["n"] += 1
        return real(self, *args)

    monkeypatch.setattr(bcfw.BCFW, "oracles", counted)
    solver = bcfw.BCFW(crf, data, 0.05)
    duals = []
    for _ in range(400):
        primal, gap = solver.certificate()
        duals.append(primal - gap)
        if gap <= 1e-5:
            break
        before = calls["n"]
        solver.run_pass()
        assert calls["n"] - before >= 2           # ceil(N / 3) batches 
    assert gap <= 1e-5
    assert np.all(np.diff(duals) >= -1e-12)          # D(α) never falls
    assert primal == pytest.approx(optimum, abs=1e-5 + 1e-7)


def test_plain_frank_wolfe_steps_give_a_valid_certificate():
    crf, data = _problem(min_count=2)
    optimum = _qp_optimum(crf, data, 0.05, "hamming", 1.0)
    solver = bcfw.BCFW(crf, data, 0.05, method="fw")
    for _ in range(60):
        solver.run_pass()
    primal, gap = solver.certificate()
    assert primal - gap <= optimum + 1e-7 <= primal + 2e-7
    assert gap < 0.05


def test_c_and_lambda():
    assert mm.c_to_l2(1.0, 8936) == pytest.approx(5.6e-5, rel=1e-3)
    assert mm.l2_to_c(mm.c_to_l2(3.0, 10), 10) == pytest.approx(3.0)


def test_trainer_records_the_certificate_in_the_settings(tmp_path):
    crf, data = _problem()
    seen: list[Progress] = []
    Trainer(objective="max-margin", l2=0.05, loss="f", tol=1e-4, max_iter=300,
            progress=False, callbacks=[seen.append], dev=SENTS, dev_every=0,
            output=str(tmp_path / "m.npz")).fit(crf, data)
    s = CRF.load(tmp_path / "m.npz").settings_
    assert s["solver"] == "bcfw" and s["loss"] == "f" and s["l2"] == 0.05
    assert s["C"] == pytest.approx(1 / (2 * 0.05 * 4))
    assert s["converged"] and s["duality_gap"] <= 1e-4
    assert len(s["duality_gaps"]) == s["passes"] == len(seen) == s["iteration"]
    assert s["duality_gaps"][-1] == s["duality_gap"]
    assert s["final_objective"] == pytest.approx(seen[-1].objective)
    assert s["dev_f"] == pytest.approx(100.0)
    assert s["run"]["loss"] == "f"


def _interrupt_at(k):
    def cb(p: Progress):
        if p.iteration == k:
            raise KeyboardInterrupt
    return cb


def test_ctrl_c_and_resume_give_the_uninterrupted_run(tmp_path):
    opts = dict(objective="max-margin", l2=0.05, tol=0.0, max_iter=12, progress=False)
    whole, data = _problem()
    Trainer(**opts).fit(whole, data)
    ckpt = str(tmp_path / "m.npz.ckpt")
    crf, data = _problem()
    with pytest.raises(TrainingInterrupted, match="stopped at iteration 5; checkpoint"):
        Trainer(checkpoint=ckpt, checkpoint_every=3, callbacks=[_interrupt_at(5)],
                **opts).fit(crf, data)
    assert CRF.load(ckpt).settings_["iteration"] == 5
    fresh, data = _problem()
    messages: list[str] = []
    Trainer(checkpoint=ckpt, resume=True, log=messages.append, **opts).fit(fresh, data)
    assert messages == [f"resuming from {ckpt} at iteration 5"]
    np.testing.assert_allclose(fresh.theta_, whole.theta_, rtol=1e-9, atol=1e-12)
    assert fresh.settings_["duality_gaps"] == pytest.approx(whole.settings_["duality_gaps"])
    assert not (tmp_path / "m.npz.ckpt").exists()
    assert not (tmp_path / ("m.npz.ckpt" + bcfw.DUAL_SUFFIX)).exists()


@pytest.mark.parametrize("change, field", [({"loss": "f"}, "loss: 'hamming' vs 'f'"),
                                           ({"l2": 0.1}, "l2: 0.05 vs 0.1"),
                                           ({"objective": "ml"}, "objective")])
def test_resume_refuses_other_settings(tmp_path, change, field):
    ckpt = str(tmp_path / "m.ckpt")
    opts = dict(objective="max-margin", l2=0.05, tol=0.0, max_iter=9, progress=False,
                checkpoint=ckpt)
    crf, data = _problem()
    with pytest.raises(TrainingInterrupted):
        Trainer(callbacks=[_interrupt_at(2)], **opts).fit(crf, data)
    fresh, data = _problem()
    with pytest.raises(InputError, match="is of another run") as e:
        Trainer(resume=True, **{**opts, **change}).fit(fresh, data)
    assert field in str(e.value)


def test_resume_refuses_a_dual_state_of_another_checkpoint(tmp_path):
    ckpt = str(tmp_path / "m.ckpt")
    opts = dict(objective="max-margin", l2=0.05, tol=0.0, max_iter=9, progress=False,
                checkpoint=ckpt)
    crf, data = _problem()
    with pytest.raises(TrainingInterrupted):
        Trainer(callbacks=[_interrupt_at(3)], **opts).fit(crf, data)
    saved = CRF.load(ckpt)
    saved.theta_ = saved.theta_ + 1e-3
    saved.save(ckpt)
    fresh, data = _problem()
    with pytest.raises(Exception, match="does not give the checkpoint's θ"):
        Trainer(resume=True, **opts).fit(fresh, data)
    (tmp_path / ("m.ckpt" + bcfw.DUAL_SUFFIX)).unlink()
    with pytest.raises(InputError, match="no max-margin dual state"):
        Trainer(resume=True, **opts).fit(fresh, data)


@pytest.mark.parametrize("kwargs, message", [
    ({"l2": 0.0}, "needs λ > 0"),
    ({"loss": "zero-one"}, "unknown loss 'zero-one'"),
])
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(InputError, match=message):
        Trainer(objective="max-margin", **kwargs)


def test_loss_f_with_another_objective_and_a_trained_start_are_refused():
    with pytest.raises(InputError, match="loss='f' applies to objective='max-margin' only") as e:
        Trainer(objective="ml", loss="f")
    assert e.value.cli_text() == "--loss f applies to --objective max-margin only"
    crf, data = _problem()
    crf.theta_[:] = 0.1
    with pytest.raises(InputError, match="θ = 0"):
        Trainer(objective="max-margin", progress=False).fit(crf, data)


def test_cli_train_max_margin_decode_eval(capsys, tmp_path):
    train = tmp_path / "train.txt"
    train.write_text(TINY_CONLL)
    model = str(tmp_path / "mm.npz")
    code = main(["train", "--train", str(train), "--features", "tmpt1", "--objective",
                 "max-margin", "--loss", "f", "--C", "5", "--tol", "1e-4", "--max-iter",
                 "300", "--dev", str(train), "-o", model, "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    s = CRF.load(model).settings_
    assert s["l2"] == pytest.approx(1 / (2 * 5 * 3)) and s["C"] == pytest.approx(5.0)
    assert s["loss"] == "f" and s["solver"] == "bcfw" and s["duality_gap"] <= 1e-4
    pred = tmp_path / "pred.txt"
    assert main(["decode", "--model", model, "--input", str(train), "-o", str(pred)]) == 0
    assert main(["eval", str(pred), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["overall"]["f"] == pytest.approx(100.0)
    with pytest.raises(SystemExit) as e:           # argparse: one or the other
        main(["train", "--train", str(train), "--objective", "max-margin", "--C", "1",
              "--l2", "0.1", "-o", model])
    assert e.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    code = main(["train", "--train", str(train), "--C", "1", "-o", model])
    assert code == 2 and "--C applies to --objective max-margin only" in capsys.readouterr().err


def test_ctrl_c_inside_a_pass_saves_a_consistent_dual_point(tmp_path, monkeypatch):
    """A Ctrl-C between block updates: the checkpoint holds w(α) of the active sets
    (complete passes counted), and the resumed run reaches the tolerance."""
    ckpt = str(tmp_path / "m.ckpt")
    opts = dict(objective="max-margin", l2=0.05, tol=1e-4, max_iter=300, progress=False,
                checkpoint=ckpt)
    calls = {"n": 0}
    real = bcfw.most_violating

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2 * 4 + 2:     # 2 passes of 4 sentences (the certificates run
                                        # the batched Hamming oracle), then the 2nd
                                        # sentence of pass 3
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(bcfw, "most_violating", flaky)
    crf, data = _problem()
    with pytest.raises(TrainingInterrupted, match="stopped at iteration 2; checkpoint"):
        Trainer(**opts).fit(crf, data)
    monkeypatch.setattr(bcfw, "most_violating", real)
    saved = CRF.load(ckpt)
    solver = bcfw.BCFW(saved, data, 0.05,
                       state=bcfw.load_state(ckpt + bcfw.DUAL_SUFFIX, [3, 4, 2, 1]))
    np.testing.assert_allclose(solver.theta, saved.theta_, rtol=1e-12, atol=1e-15)
    assert solver.state.passes == saved.settings_["iteration"] == 2
    fresh, data = _problem()
    Trainer(resume=True, **opts).fit(fresh, data)
    assert fresh.settings_["converged"] and fresh.settings_["duality_gap"] <= 1e-4
