"""Data-parallel training (issue 20): local processes and a real Dask LocalCluster
(2 worker processes on loopback).

Oracle: the single-process objective.  Every objective's value and gradient through
1, 2 and 3 partitions equal it to 1e-10; a short L-BFGS training gives the same θ;
a killed worker during a step is survived with the same value; an unreachable
scheduler is one error naming its address.
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from fstchunk.cli import main
from fstchunk.io.conll import read_conll
from fstchunk.core.errors import InputError
from fstchunk.models.crf import CRF
from fstchunk.runtime import scale

distributed = pytest.importorskip("distributed")

OBJECTIVES = ("ml", "meu", "meu-corpus", "max-margin")


@pytest.fixture(scope="module")
def problem(corpus):
    sents = read_conll(corpus("conll2000", "train.txt"))[:90]
    crf = CRF("tmpt1")
    data = crf._prepare(sents)
    theta = np.random.default_rng(0).normal(scale=0.2, size=crf.theta_.shape)
    return sents, crf, data, theta


@pytest.fixture(scope="module")
def dask():
    ex = scale.DaskExecutor("local:2")
    yield ex
    ex.close()


class Fixed:
    """An executor whose partitioning is fixed to ``parts``."""

    def __init__(self, ex, parts):
        self.ex, self.parts = ex, parts

    def partitioned(self, model, data):
        return self.ex.partitioned(model, data, self.parts)


def _close(a, b):
    assert abs(a[0] - b[0]) <= 1e-10 * max(1.0, abs(b[0]))
    np.testing.assert_allclose(a[1], b[1], rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", OBJECTIVES)
def test_partitions_give_the_single_process_objective(problem, dask, name):
    _, crf, data, theta = problem
    want = crf.objective_function(name, data, 1e-3, beta=1.5)(theta)
    for ex in (scale.LocalExecutor(2), dask):
        for parts in (1, 2, 3):
            got = crf.objective_function(name, data, 1e-3, beta=1.5, executor=Fixed(ex, parts))(theta)
            _close(got, want)


def test_split_balances_tokens_and_keeps_every_sentence():
    lengths = [5, 1, 1, 1, 9, 2, 2, 3]
    for parts in (1, 2, 3, 8, 20):
        runs = scale.split(lengths, parts)
        assert sum(runs, []) == list(range(len(lengths)))
        assert all(runs) and len(runs) <= min(parts, len(lengths))


def test_training_gives_the_same_theta(problem, dask):
    sents, _, _, _ = problem
    thetas = []
    for ex in (None, scale.LocalExecutor(2), dask):
        crf = CRF("tmpt1")
        data = crf._prepare(sents)
        crf.set_params(objective="ml", l2=1e-3, max_iter=8).fit(data, executor=ex)
        thetas.append(crf.theta_)
    for th in thetas[1:]:
        np.testing.assert_allclose(th, thetas[0], rtol=0, atol=1e-8)


def test_a_killed_local_worker_is_recomputed(problem, tmp_path, monkeypatch):
    _, crf, data, theta = problem
    flag = tmp_path / "killed"
    real = scale.shard_statistics

    def dies_once(*args):
        if not flag.exists():
            flag.write_text("x")
            os._exit(9)                        # the forked worker dies without answering
        return real(*args)

    monkeypatch.setattr(scale, "shard_statistics", dies_once)
    got = crf.objective_function("ml", data, 1e-3, executor=scale.LocalExecutor(2))(theta)
    assert flag.exists()
    monkeypatch.setattr(scale, "shard_statistics", real)
    _close(got, crf.objective_function("ml", data, 1e-3)(theta))


def test_a_killed_dask_worker_is_survived(problem, dask):
    _, crf, data, theta = problem
    want = crf.objective_function("ml", data, 1e-3)(theta)
    parts = dask.partitioned(crf, data, 2)
    fun = crf.objective_function("ml", data, 1e-3, executor=Fixed(_Placed(parts), None))
    _close(fun(theta), want)
    pids = dask.client.run(os.getpid)
    os.kill(next(iter(pids.values())), signal.SIGKILL)       # holds a partition
    _close(fun(theta), want)                # the step recomputed, the partitions re-placed
    deadline = time.time() + 30
    while len(dask.client.scheduler_info()["workers"]) < 2 and time.time() < deadline:
        time.sleep(0.2)                     # the nanny restarts it for the next tests


class _Placed:
    def __init__(self, parts):
        self.parts = parts

    def partitioned(self, model, data, parts=None):
        return self.parts


def test_unreachable_scheduler_fails_fast_naming_it():
    t = time.time()
    with pytest.raises(InputError, match="tcp://127.0.0.1:9"):
        scale.DaskExecutor("tcp://127.0.0.1:9", timeout=2)
    assert time.time() - t < 30
    with pytest.raises(InputError, match="local:N needs N >= 1"):
        scale.DaskExecutor("local:0")
    with pytest.raises(InputError, match="not both"):
        scale.executor(2, "local:2")
    assert scale.executor(1, None) is None and scale.executor() is None


def test_online_learners_refuse_an_executor(problem):
    """The perceptron runs in one process; max-margin's certificate (every oracle of a
    pass) is spread over the executor's partitions, with the value of one process."""
    _, crf, data, _ = problem
    from fstchunk.learn import Trainer
    with pytest.raises(InputError, match="trains by passes"):
        Trainer(objective="perceptron", executor=scale.LocalExecutor(2))
    ex = scale.LocalExecutor(2)
    try:
        theta = np.random.default_rng(3).normal(size=crf.theta_.shape) * 0.1
        here, _ = crf.objective_function("max-margin", data, 0.0)(theta)
        spread, _ = crf.objective_function("max-margin", data, 0.0, executor=ex)(theta)
        assert spread == pytest.approx(here, rel=1e-12)
    finally:
        ex.close()


def test_cli_train_with_workers_and_scheduler(tmp_path, corpus, capsys):
    src = read_conll(corpus("conll2000", "train.txt"))[:60]
    train = tmp_path / "train.txt"
    train.write_text("\n\n".join("\n".join(" ".join(r) for r in s.rows) for s in src) + "\n")
    models = {}
    for name, extra in (("one", []), ("local", ["--workers", "2"]),
                        ("dask", ["--scheduler", "local:2"])):
        out = str(tmp_path / f"{name}.npz")
        assert main(["train", "--train", str(train), "--features", "tmpt1", "--max-iter", "5",
                     "--quiet", "-o", out, *extra]) == 0
        models[name] = CRF.load(out).theta_
    capsys.readouterr()
    for name in ("local", "dask"):
        np.testing.assert_allclose(models[name], models["one"], rtol=0, atol=1e-8)
    code = main(["train", "--train", str(train), "--objective", "perceptron", "--workers", "2",
                 "-o", str(tmp_path / "p.npz"), "--quiet"])
    assert code != 0 and "trains by passes" in capsys.readouterr().err
