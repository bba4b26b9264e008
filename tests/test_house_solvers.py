"""The solver shell (issue 45): every epoch solver derives from one base, the averaging
is one implementation, the solver table covers every objective, and a Ctrl-C before
the first epoch still leaves a checkpoint that resumes to the uninterrupted run.
(Resume equals the uninterrupted run for each solver: test_perceptron.py,
test_sklearn_solvers.py (pa, arow, l2sgd), test_maxmargin.py, test_joint_training.py,
test_segments_training.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from fstchunk.io.conll import read_conll
from fstchunk.core.errors import TrainingInterrupted
from fstchunk.learn import Trainer
from fstchunk.learn import objectives as lo
from fstchunk.learn.epochs import Average, EpochSolver
from fstchunk.learn.solvers import LBFGS
from fstchunk.models import bcfw, perceptron as pc
from fstchunk.models.bcfw import BCFWSolver
from fstchunk.models.crf import CRF
from fstchunk.models.joint.train import JointPerceptronSolver
from fstchunk.models.online import MarginSolver
from fstchunk.models.segment.train import HildrethSolver
from fstchunk.models.sgd import L2SGDSolver
from fstchunk.models.solvers import SOLVERS, make_solver

from oracles import prepared

EPOCH_SOLVERS = (pc.PerceptronSolver, JointPerceptronSolver, MarginSolver, L2SGDSolver,
                 BCFWSolver, HildrethSolver)


@pytest.mark.parametrize("cls", EPOCH_SOLVERS)
def test_every_epoch_solver_derives_from_the_one_base(cls):
    assert issubclass(cls, EpochSolver)
    own = {name for name in ("run", "restore", "save_state") if name in vars(cls)}
    assert own == set()                       # the loop and the state file: the base's


def test_the_table_covers_every_objectives_solver():
    for o in lo.OBJECTIVES.values():
        assert o.solver in SOLVERS, o.name
    assert "l2sgd" in SOLVERS                 # the attribute CRF's algorithm for ml


def test_a_model_is_refused_an_objective_it_does_not_train():
    with pytest.raises(Exception, match="a CRF does not train objective='pa'"):
        make_solver(CRF("tmpt1"), lo.PA, None, l2=0.0, beta=1.0, loss="hamming", tol=None,
                    executor=None, kind="a CRF")


def test_the_table_builds_each_chain_solver(corpus):
    sents = read_conll(corpus("conll2000", "train.txt"))[:5]
    crf, data = prepared(CRF("tmpt1"), sents)
    kw = dict(l2=1e-3, beta=1.0, loss="hamming", tol=None, executor=None)
    assert isinstance(crf.solver(lo.ML, data, **kw), LBFGS)
    assert isinstance(crf.solver(lo.MAX_MARGIN, data, **kw), BCFWSolver)
    assert isinstance(crf.solver(lo.PERCEPTRON, data, **kw), pc.PerceptronSolver)


@pytest.mark.parametrize("start", [0, 1])
def test_the_average_is_the_mean_of_the_weights(start):
    """From count 0: the mean of w after each visit; from count 1: with the start too."""
    rng = np.random.default_rng(start)
    w0 = rng.normal(size=6) if start else np.zeros(6)
    avg = Average([w0.copy()], count=start)
    seen = [w0.copy()] if start else []
    for _ in range(20):
        if rng.random() < 0.6:
            idx = rng.choice(6, size=3, replace=False)
            avg.add(0, idx, rng.normal(size=3), float(rng.random()))
        avg.visit()
        seen.append(avg.w[0].copy())
    np.testing.assert_allclose(Average.mean(avg.w[0], avg.u[0], avg.count),
                               np.mean(seen, axis=0), rtol=0, atol=1e-12)


@pytest.mark.parametrize("objective, learner", [("perceptron", (pc, "AveragedPerceptron")),
                                                ("max-margin", (bcfw, "BCFW"))])
def test_ctrl_c_before_the_first_epoch_leaves_a_resumable_checkpoint(
        corpus, tmp_path, monkeypatch, objective, learner):
    """Stopped while its learner is being made (a Ctrl-C early in a long setup), the run
    writes a checkpoint at iteration 0 with the solver's state, and resuming it gives
    the uninterrupted run (it used to end in an AttributeError)."""
    sents = read_conll(corpus("conll2000", "train.txt"))[:20]
    whole, data = prepared(CRF("tmpt1"), sents)
    Trainer(objective=objective, max_iter=2, progress=False).fit(whole, data)
    module, name = learner
    real, calls = getattr(module, name).__init__, {"n": 0}

    def stop_once(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt
        real(self, *args, **kwargs)

    monkeypatch.setattr(getattr(module, name), "__init__", stop_once)
    ckpt = str(tmp_path / "m.ckpt")
    part, pdata = prepared(CRF("tmpt1"), sents)
    with pytest.raises(TrainingInterrupted, match="stopped at iteration 0"):
        Trainer(objective=objective, max_iter=2, progress=False, checkpoint=ckpt).fit(part,
                                                                                      pdata)
    monkeypatch.setattr(getattr(module, name), "__init__", real)
    resumed, rdata = prepared(CRF("tmpt1"), sents)
    Trainer(objective=objective, max_iter=2, progress=False, checkpoint=ckpt,
            resume=True).fit(resumed, rdata)
    np.testing.assert_allclose(resumed.theta_, whole.theta_, rtol=0, atol=1e-12)
