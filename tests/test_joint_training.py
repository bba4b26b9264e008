"""The joint model through the one training loop (issue 33).

Oracles: an uninterrupted run (a resumed perceptron/MMVP run must give the same
weights bit for bit, a resumed CRF run the same optimum); brute-force enumeration of
structures (the ML objective's value at the per-sentence scale) and central
differences (its gradient); one process (the partitioned statistics to 1e-10); the
code before the change (an old ``crf`` model file decodes as it did); the trainer's
own records (``--select dev`` keeps the epoch of the best dev figure).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from fstchunk.models.joint import fitting as joint_fitting
from fstchunk.cli import main
from fstchunk.io.conll import Sentence, read_conll, write_conll
from fstchunk.core.errors import InputError, ModelFileError, TrainingInterrupted
from fstchunk.learn import Trainer
from fstchunk.learn import objectives as lo
from fstchunk.learn.loss import Loss
from fstchunk.models import joint as J
from fstchunk.models.joint import train as JT
from fstchunk.runtime.scale import LocalExecutor
from oracles import brute_joint

HERE = os.path.join(os.path.dirname(__file__), "data")
KINDS = ("joint", "chunker", "tagger")


@pytest.fixture(scope="module")
def conll(corpus):
    return read_conll(corpus("conll2000", "train.txt"))


def prepared(sents, kind="joint"):
    return J.model_for(J.layered(sents, collapse=True, np_chunks=True), kind)


def stop_at(k):
    """A callback that presses Ctrl-C after step ``k``."""
    def ctrl_c(p):
        if p.iteration == k:
            raise KeyboardInterrupt
    return ctrl_c


# ------------------------------------------------------- resume = uninterrupted
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("algorithm", ["perceptron", "mmvp"])
def test_a_resumed_perceptron_is_the_uninterrupted_one_bit_for_bit(conll, tmp_path, kind,
                                                                   algorithm):
    sents = conll[:40]
    whole, enc = prepared(sents, kind)
    whole.set_params(algorithm=algorithm, max_iter=6).fit(enc)
    ckpt = str(tmp_path / "m.ckpt")
    first, enc = prepared(sents, kind)
    with pytest.raises(TrainingInterrupted, match=f"stopped at iteration 3; checkpoint {ckpt}"):
        first.set_params(algorithm=algorithm, max_iter=6).fit(enc, checkpoint=ckpt, checkpoint_every=100, callbacks=[stop_at(3)])
    assert os.path.isfile(ckpt + JT.STATE_SUFFIX)
    assert J.JointModel.load(ckpt).settings_["iteration"] == 3
    resumed, enc = prepared(sents, kind)
    resumed.set_params(algorithm=algorithm, max_iter=6).fit(enc, checkpoint=ckpt, resume=True)
    assert resumed.settings_["iteration"] == whole.settings_["iteration"]
    np.testing.assert_array_equal(resumed.theta_, whole.theta_)
    assert not os.path.exists(ckpt) and not os.path.exists(ckpt + JT.STATE_SUFFIX)


@pytest.mark.parametrize("algorithm", ["perceptron", "mmvp"])
@pytest.mark.parametrize("epoch, sentence", [(1, 5), (3, 17)])
def test_ctrl_c_inside_an_epoch_keeps_the_last_complete_one(conll, tmp_path, algorithm,
                                                            epoch, sentence):
    """Ctrl-C in the middle of an epoch (epoch 1: the first-iteration trick's) saves the
    state after the last complete epoch; the resume redoes the cut one exactly."""
    sents = conll[:30]
    whole, enc = prepared(sents)
    whole.set_params(algorithm=algorithm, max_iter=5).fit(enc)
    ckpt = str(tmp_path / "m.ckpt")
    cut, enc = prepared(sents)
    calls, real = [0], cut.parts

    def parts(x, w=None):
        calls[0] += 1
        if calls[0] == (epoch - 1) * len(enc) + sentence:
            raise KeyboardInterrupt
        return real(x, w)
    cut.parts = parts
    with pytest.raises(TrainingInterrupted, match=f"stopped at iteration {epoch - 1}"):
        cut.set_params(algorithm=algorithm, max_iter=5).fit(enc, checkpoint=ckpt)
    resumed, enc = prepared(sents)
    resumed.set_params(algorithm=algorithm, max_iter=5).fit(enc, checkpoint=ckpt, resume=True)
    np.testing.assert_array_equal(resumed.theta_, whole.theta_)


@pytest.mark.parametrize("kind", KINDS)
def test_a_resumed_crf_reaches_the_uninterrupted_optimum(tmp_path, kind):
    kw = dict(max_iter=400, l2=0.01, tol=1e-9)
    whole, enc = _tiny(kind)
    whole.set_params(algorithm="crf", **kw).fit(enc)
    ckpt = str(tmp_path / "m.ckpt")
    first, enc = _tiny(kind)
    with pytest.raises(TrainingInterrupted, match="stopped at iteration 4"):
        first.set_params(algorithm="crf", **kw).fit(enc, checkpoint=ckpt, callbacks=[stop_at(4)])
    resumed, enc = _tiny(kind)
    resumed.set_params(algorithm="crf", **kw).fit(enc, checkpoint=ckpt, resume=True)
    assert whole.settings_["converged"] and resumed.settings_["converged"]
    assert resumed.settings_["iteration"] > 4
    assert resumed.settings_["final_objective"] == pytest.approx(
        whole.settings_["final_objective"], rel=1e-7)
    np.testing.assert_allclose(resumed.theta_, whole.theta_, atol=1e-3)


def test_a_state_of_another_run_is_refused(conll, tmp_path):
    sents = conll[:20]
    ckpt = str(tmp_path / "m.ckpt")
    m, enc = prepared(sents)
    with pytest.raises(TrainingInterrupted):
        m.set_params(algorithm="mmvp", max_iter=4).fit(enc, checkpoint=ckpt, callbacks=[stop_at(2)])
    state = ckpt + JT.STATE_SUFFIX
    with np.load(state) as z:
        arrays = dict(z)
    np.savez(state, **dict(arrays, u=arrays["u"] * 2))       # another run's average
    m, enc = prepared(sents)
    with pytest.raises(ModelFileError, match="does not give the checkpoint's θ"):
        m.set_params(algorithm="mmvp", max_iter=4).fit(enc, checkpoint=ckpt, resume=True)
    np.savez(state, **dict(arrays, mmvp=np.bool_(False)))
    with pytest.raises(ModelFileError, match="a state of perceptron, not of mmvp"):
        m.set_params(algorithm="mmvp", max_iter=4).fit(enc, checkpoint=ckpt, resume=True)
    os.remove(state)
    with pytest.raises(InputError, match="no perceptron state at"):
        m.set_params(algorithm="mmvp", max_iter=4).fit(enc, checkpoint=ckpt, resume=True)


# ------------------------------------------------------------ --select dev
@pytest.mark.parametrize("kind", KINDS)
def test_select_dev_keeps_the_best_epoch(conll, kind):
    model, enc = prepared(conll[:40], kind)
    dev = J.layered(conll[300:340], collapse=True, np_chunks=True)
    seen = []
    model.set_params(algorithm="mmvp", max_iter=7, select="dev").fit(enc, dev=dev, dev_every=1, callbacks=[lambda p: seen.append((p.dev_f, p.iteration, p.theta.copy()))])
    best = max(seen, key=lambda s: (s[0], -s[1]))          # ties: the earlier
    assert model.settings_["selected_iteration"] == best[1]
    assert model.settings_["dev_f"] == best[0]
    np.testing.assert_array_equal(model.theta_, best[2])
    s = J.scores(dev, *J.predict(model, dev))               # the figure is what is scored
    assert model.dev_f(dev) == s["pos_accuracy" if kind == "tagger" else "np_f1"]


# ------------------------------------------------------- the ML objective
def _tiny(kind):
    rows = [[("The", "DT", "B-NP"), ("cat", "NN", "I-NP"), ("sat", "VBD", "O")],
            [("Dogs", "NNS", "B-NP"), ("run", "VBP", "O")],
            [("A", "DT", "B-NP"), ("dog", "NN", "I-NP")],
            [("run", "VBP", "O"), ("cats", "NNS", "B-NP"), ("sat", "VBD", "O")]]
    sents = [Sentence([list(r) for r in s], list(range(1, len(s) + 1)), "<tiny>") for s in rows]
    return prepared(sents, kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scale", [0.3, 30.0])
def test_the_ml_objective_is_the_mean_nll_plus_l2_and_its_gradient(kind, scale):
    model, enc = _tiny(kind)
    l2 = 0.05
    fun = Loss(lo.ML, l2).function(model, enc)
    w = np.random.default_rng(int(scale)).normal(size=model.size) * scale
    value, grad = fun(w)
    nll = []
    for x in enc:
        parts = model.parts(x, w)
        ys, sc = brute_joint(parts, model.c, model.p, model.outside)
        nll.append(np.logaddexp.reduce(sc) - sc[ys.index(x.gold)])
    assert value == pytest.approx(np.mean(nll) + l2 * float(w @ w), rel=1e-10)
    if scale > 1:
        return                      # central differences need a smooth neighbourhood
    rng = np.random.default_rng(1)
    for i in rng.choice(np.flatnonzero(grad), 12, replace=False):
        e = np.zeros_like(w)
        e[i] = 1e-5
        fd = (fun(w + e)[0] - fun(w - e)[0]) / 2e-5
        assert fd == pytest.approx(grad[i], rel=1e-5, abs=1e-8)


def test_the_default_l2_is_the_old_summed_one_over_conll2000():
    assert JT.default_l2(lo.ML, None) == pytest.approx(0.5 / 8936, rel=1e-3)
    assert JT.default_l2(lo.ML, 0.25) == 0.25
    assert JT.default_l2(lo.MMVP, None) is None
    model, enc = _tiny("joint")
    model.set_params(algorithm="crf", max_iter=2).fit(enc)
    assert model.settings_["l2"] == JT.DEFAULT_L2[lo.ML] and model.probabilistic
    with pytest.raises(InputError, match="has no λ"):
        model.set_params(algorithm="mmvp", max_iter=2, l2=0.5).fit(enc)


@pytest.mark.parametrize("executor", ["local:2", "local:3", "dask:2"])
def test_partitions_give_the_one_process_value_and_gradient(conll, executor):
    model, enc = prepared(conll[:60])
    w = np.random.default_rng(3).normal(size=model.size) * 0.1
    want = Loss(lo.ML, 1e-3).function(model, enc)(w)
    kind, n = executor.split(":")
    if kind == "dask":
        pytest.importorskip("distributed")
        from fstchunk.runtime.scale import DaskExecutor
        ex = DaskExecutor(f"local:{n}")
    else:
        ex = LocalExecutor(int(n))
    try:
        got = Loss(lo.ML, 1e-3).function(model, enc, ex)(w)
    finally:
        ex.close()
    assert got[0] == pytest.approx(want[0], rel=1e-10)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-13)
    shards = model.partitions(enc, int(n))
    assert sum(len(part) for _, part in shards) == len(enc)
    assert all(copy.size == model.size and not hasattr(copy.vocabs_[0], "get")
               for copy, _ in shards)            # sizes, not the vocabularies' strings


# -------------------------------------------------------------- old files
def test_old_files_load_and_decode_as_before():
    """A joint ``crf`` file written by the code before the change (tests/data/v2/
    make_joint_crf.py) is probabilistic and decodes as it did, MEU included; the old
    perceptron files are the registry's perceptron."""
    with open(os.path.join(HERE, "v2", "joint-crf.json"), encoding="utf-8") as fh:
        ref = json.load(fh)
    with open(os.path.join(HERE, "v2", "expected.json"), encoding="utf-8") as fh:
        rows = json.load(fh)["train"]
    data = J.layered([Sentence(r, list(range(1, len(r) + 1)), "v2") for r in rows])
    model = J.JointModel.load(os.path.join(HERE, "v2", "joint-crf.npz"))
    assert model.trained_by is lo.ML and model.probabilistic
    assert J.predict(model, data) == (ref["map_pos"], ref["map_chunks"])
    assert J.predict(model, data, "meu")[1] == ref["meu_chunks"]
    assert J.predict(model, data, "meu", 3.0)[1] == ref["meu_beta3_chunks"]
    logz = [model.marginals(J.encode(model, d, gold=False))[0] for d in data]
    np.testing.assert_allclose(logz, ref["log_z"], rtol=1e-12)
    for version in ("v1", "v2"):
        old = J.JointModel.load(os.path.join(HERE, version, "joint.npz"))
        assert old.trained_by is lo.PERCEPTRON and not old.probabilistic
        assert old.theta_ is old.theta_


# ------------------------------------------------------------- the CLI
def _train_file(conll, folder, n=40):
    path = folder / "train.txt"
    write_conll(conll[:n], path)
    return path


def _cli(folder, *argv):
    return ["joint", "train", "--train", str(folder / "train.txt"), "--collapse-pos",
            "--np-only", "--quiet", "-o", str(folder / "m.npz"), *map(str, argv)]


def _opts(algorithm, max_iter):
    """crf in this process (a Ctrl-C from a callback, the trainer patched here)."""
    return ["--algorithm", algorithm, "--max-iter", max_iter,
            *(["--workers", 1] if algorithm == "crf" else [])]


def _stopping(k):
    class Stopping(Trainer):
        def __init__(self, *args, **kw):
            super().__init__(*args, callbacks=[stop_at(k)], **kw)
    return Stopping


@pytest.mark.parametrize("algorithm", ["mmvp", "perceptron", "crf"])
def test_cli_ctrl_c_then_resume_is_the_uninterrupted_run(conll, tmp_path, capsys,
                                                          monkeypatch, algorithm):
    whole_dir = tmp_path / "whole"
    whole_dir.mkdir()
    _train_file(conll, whole_dir)
    _train_file(conll, tmp_path)
    opts = _opts(algorithm, 6)
    assert main(_cli(whole_dir, *opts)) == 0
    with monkeypatch.context() as m:
        m.setattr(joint_fitting, "Trainer", _stopping(3))
        assert main(_cli(tmp_path, *opts)) == 130
    err = capsys.readouterr().err
    ckpt = tmp_path / "m.npz.ckpt"
    assert f"stopped at iteration 3; checkpoint {ckpt}" in err and "Traceback" not in err
    assert ckpt.exists() and not (tmp_path / "m.npz").exists()
    assert main(_cli(tmp_path, *opts, "--resume")) == 0
    assert f"resuming from {ckpt} at iteration 3" in capsys.readouterr().out
    whole = J.JointModel.load(whole_dir / "m.npz")
    resumed = J.JointModel.load(tmp_path / "m.npz")
    if algorithm == "crf":         # the same iterations; L-BFGS's memory restarts
        assert resumed.settings_["iteration"] == 6
        assert resumed.settings_["final_objective"] <= 1.01 * whole.settings_["final_objective"]
    else:
        np.testing.assert_array_equal(resumed.theta_, whole.theta_)
    assert resumed.settings_["run"]["sentences"] == 40 and not ckpt.exists()


@pytest.mark.parametrize("algorithm, change, field", [
    ("mmvp", ["--algorithm", "perceptron"], "objective: 'mmvp' vs 'perceptron'"),
    ("crf", ["--l2", "0.001"], "l2: 5.6e-05 vs 0.001"),
    ("mmvp", ["--train", "{copy}"], "train_sha256: '"),
    ("mmvp", ["--select", "dev", "--dev", "{dev}"], "select: (not recorded) vs 'dev'"),
])
def test_cli_resume_refuses_a_checkpoint_of_another_run(conll, tmp_path, capsys, monkeypatch,
                                                        algorithm, change, field):
    _train_file(conll, tmp_path)
    opts = _opts(algorithm, 4)
    with monkeypatch.context() as m:
        m.setattr(joint_fitting, "Trainer", _stopping(2))
        assert main(_cli(tmp_path, *opts)) == 130
    copy = tmp_path / "copy.txt"
    copy.write_bytes((tmp_path / "train.txt").read_bytes() + b"\n")   # same sentences
    write_conll(conll[300:320], tmp_path / "dev.txt")
    argv = _cli(tmp_path, *opts, "--resume") + [c.format(copy=copy, dev=tmp_path / "dev.txt")
                                                for c in change]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is of another run" in err and field in err, err
    assert (tmp_path / "m.npz.ckpt").exists()                # kept for the right resume


def test_cli_refusals(conll, tmp_path, capsys):
    _train_file(conll, tmp_path)
    for argv, message in [(["--algorithm", "mmvp", "--l2", "0.5"], "--l2 applies to "
                                                                     "--algorithm crf only"),
                          (["--algorithm", "perceptron", "--workers", "2"],
                           "--workers/--scheduler apply to --algorithm crf only"),
                          (["--select", "dev"], "needs dev sentences (--dev)"),
                          (["--resume"], "--resume: no checkpoint at")]:
        assert main(_cli(tmp_path, *argv)) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, err
    assert main(_cli(tmp_path, "--max-iter", 2, "--checkpoint-every", 1)) == 0  # kept name
    assert main(_cli(tmp_path, "--iterations", 2, "--dev", tmp_path / "train.txt")) == 0
    out = capsys.readouterr().out
    assert "dev F = " in out


# ---------------------------------------------------------------- SIGTERM
def _start(*argv, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen([sys.executable, "-m", "fstchunk", *map(str, argv)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.parametrize("algorithm", ["mmvp", "crf"])
def test_sigterm_writes_the_checkpoint_and_resume_finishes(conll, tmp_path, capsys, algorithm):
    write_conll(conll[:300], tmp_path / "train.txt")
    argv = ["joint", "train", "--train", "train.txt", "--collapse-pos", "--np-only",
            "--algorithm", algorithm, "--max-iter", 500, "--checkpoint-every", 1, "--quiet",
            "-o", "m.npz"]
    proc = _start(*argv, cwd=tmp_path)
    ckpt = tmp_path / "m.npz.ckpt"
    end = time.monotonic() + 120
    while not ckpt.exists() and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "fstchunk joint train: terminated" in err and "m.npz.ckpt" in err
    assert "Traceback" not in err
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]
    done = J.JointModel.load(ckpt).settings_["iteration"]
    assert done >= 1 and not (tmp_path / "m.npz").exists()
    assert (algorithm == "crf") != (tmp_path / f"m.npz.ckpt{JT.STATE_SUFFIX}").exists()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        argv[argv.index(500)] = done + 1
        assert main([str(a) for a in argv] + ["--resume"]) == 0
    finally:
        os.chdir(cwd)
    assert J.JointModel.load(tmp_path / "m.npz").settings_["iteration"] == done + 1
    assert not ckpt.exists()
