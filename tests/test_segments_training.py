"""``segment train`` through the one training loop (issue 33): the segment model as a
:class:`fstchunk.learn.loop.Trainer` model (objective ``multilabel``, the Hildreth
solver): a run stopped by Ctrl-C — after an epoch or inside one — and resumed gives
bit-identical weights and history; ``select="dev"`` keeps the best epoch without a
second dev decoding; a checkpoint of another run is refused naming the field; SIGTERM
writes the checkpoint (exit 143); old model files load, decode and are reproduced by
retraining; the estimator's hyper-parameters are checked in its constructor."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import fstchunk.models.segment.train as train_mod
from fstchunk.cli import main
from fstchunk.io.conll import read_conll, write_conll
from fstchunk.core.errors import InputError, ModelFileError, TrainingInterrupted
from fstchunk.learn.loop import Trainer
from fstchunk.models import load_model
from fstchunk.models.segment import SegmentModel
from fstchunk.io.segments import SegSentence, Segment, read_conll_segments, read_segments

V2 = os.path.join(os.path.dirname(__file__), "data", "v2")


def sent(text: str, segs=()) -> SegSentence:
    return SegSentence(text.split(), [Segment(t, tuple(p)) for t, p in segs])


# overlapping and non-contiguous segments of two types
TOY = [
    sent("Bill and Hilary Clinton traveled", [("PER", (0, 3)), ("PER", (2, 3))]),
    sent("Bill Clinton met Gates", [("PER", (0, 1)), ("PER", (3,))]),
    sent("P450 18 / 19 hydroxylase", [("ENZ", (0, 1, 4)), ("ENZ", (0, 3, 4))]),
    sent("the P450 11 hydroxylase was", [("ENZ", (1, 2, 3))]),
    sent("Hilary and Bill Gates spoke", [("PER", (0, 3)), ("PER", (2, 3))]),
    sent("alpha- and beta-globin genes", [("DNA", (0, 2)), ("DNA", (2,))]),
]


def stop_at_visit(monkeypatch, visit: int) -> None:
    """Ctrl-C (a KeyboardInterrupt) at the learner's ``visit``-th sentence visit."""
    real = train_mod.OnlineLearner.step
    count = [0]

    def step(self, sentence):
        count[0] += 1
        if count[0] == visit:
            raise KeyboardInterrupt
        return real(self, sentence)
    monkeypatch.setattr(train_mod.OnlineLearner, "step", step)


def same_training(a: SegmentModel, b: SegmentModel) -> None:
    np.testing.assert_array_equal(a.W_, b.W_)
    assert a.settings_["history"] == b.settings_["history"]
    assert a.settings_["selected_epoch"] == b.settings_["selected_epoch"]
    if a.other_weights_ is None:
        assert b.other_weights_ is None
    else:
        np.testing.assert_array_equal(a.other_weights_, b.other_weights_)


# ---------------------------------------------------------------- resume (API)
@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("where", ["after epoch 2", "inside epoch 3", "first visit"])
@pytest.mark.parametrize("restrictions", [None, "no-overlap"])
def test_resumed_run_is_bit_identical(tmp_path, monkeypatch, average, where, restrictions):
    hyper = dict(D=2 ** 12, average=average, restrictions=restrictions, seed=5, max_iter=4)
    options = dict(dev=TOY[:4], select="dev")
    full = SegmentModel(**hyper).fit(TOY, **options)
    ckpt = str(tmp_path / "m.ckpt")
    callbacks = []
    if where == "after epoch 2":
        def stop(p):
            if p.iteration == 2:
                raise KeyboardInterrupt
        callbacks = [stop]
    else:
        stop_at_visit(monkeypatch, 2 * len(TOY) + 3 if where == "inside epoch 3" else 1)
    with pytest.raises(TrainingInterrupted, match=r"checkpoint .*m.ckpt.*resume=True") as e:
        SegmentModel(**hyper).fit(TOY, checkpoint=ckpt, callbacks=callbacks, **options)
    assert e.value.checkpoint == ckpt
    done = 0 if where == "first visit" else 2
    assert load_model(ckpt).settings_["iteration"] == done
    assert os.path.exists(ckpt + ".hildreth.npz")
    monkeypatch.undo()
    out = str(tmp_path / "m.npz")
    resumed = SegmentModel(**hyper).fit(TOY, checkpoint=ckpt, resume=True, output=out,
                                        **options)
    same_training(full, resumed)
    np.testing.assert_array_equal(load_model(out).W_, full.W_)
    assert not any(p.name.startswith("m.ckpt") for p in tmp_path.iterdir())


def test_a_state_file_of_another_run_is_refused(tmp_path):
    """The learner state beside the checkpoint must give the checkpoint's θ."""
    ckpt = str(tmp_path / "m.ckpt")
    hyper = dict(D=2 ** 10)

    def stop(p):
        if p.iteration == 2:
            raise KeyboardInterrupt
    for path, seed in ((ckpt, 0), (str(tmp_path / "other.ckpt"), 0)):
        with pytest.raises(TrainingInterrupted):
            SegmentModel(seed=seed, **hyper, max_iter=3).fit(
                TOY if path == ckpt else TOY[::-1], checkpoint=path, callbacks=[stop])
    os.replace(tmp_path / "other.ckpt.hildreth.npz", ckpt + ".hildreth.npz")
    with pytest.raises(ModelFileError, match="hildreth.npz: the solver state does not give"):
        SegmentModel(**hyper, max_iter=3).fit(TOY, checkpoint=ckpt, resume=True)
    (tmp_path / "m.ckpt.hildreth.npz").write_bytes(b"not a state")
    with pytest.raises(ModelFileError, match="not a segment learner state"):
        SegmentModel(**hyper, max_iter=3).fit(TOY, checkpoint=ckpt, resume=True)
    os.remove(ckpt + ".hildreth.npz")
    with pytest.raises(InputError, match="no segment learner state at .*hildreth.npz"):
        SegmentModel(**hyper, max_iter=3).fit(TOY, checkpoint=ckpt, resume=True)


# ---------------------------------------------------------------- selection on dev
@pytest.mark.parametrize("average", [True, False])
def test_select_dev_keeps_the_best_epoch(monkeypatch, average):
    """The Trainer's select="dev" is the one selection: the kept θ is that of the epoch
    with the best dev F (ties: the earlier); each epoch's dev F is decoded once for θ
    and once for the last W when averaging, and the end's measurement is read back."""
    scripted = iter([40.0, 70.0, 70.0, 50.0])
    calls = []

    def fake_f(model, dev, W=None):
        calls.append(W is None)
        return next(scripted) if W is None else 10.0
    monkeypatch.setattr(train_mod, "segment_f", fake_f)
    seen = {}
    m = SegmentModel(D=2 ** 12, average=average, max_iter=4).fit(
        TOY, dev=TOY, select="dev",
        callbacks=[lambda p: seen.setdefault(p.iteration, p.theta.copy())])
    s = m.settings_
    assert s["select"] == "dev" and s["selected_epoch"] == s["selected_iteration"] == 2
    np.testing.assert_array_equal(m.theta_, seen[2])
    assert not np.array_equal(seen[2], seen[4])
    key = "dev_f_average" if average else "dev_f_last"
    assert [h[key] for h in s["history"]] == [40.0, 70.0, 70.0, 50.0]
    assert s["dev_f"] == 70.0
    assert calls == ([True, False] * 4 if average else [True] * 4)
    if average:
        assert [h["dev_f_last"] for h in s["history"]] == [10.0] * 4
    else:
        assert m.other_weights_ is None


def test_dev_every_and_select_last():
    """dev F every 2 epochs and at the end; the last θ is kept with select="last"."""
    m = SegmentModel(D=2 ** 12, max_iter=5).fit(TOY, dev=TOY, dev_every=2)
    hist = m.settings_["history"]
    assert ["dev_f_average" in h for h in hist] == [False, True, False, True, True]
    assert m.settings_["selected_epoch"] == 5 and m.settings_["dev_f"] == hist[-1]["dev_f_average"]
    last = SegmentModel(D=2 ** 12, max_iter=5).fit(TOY)
    np.testing.assert_array_equal(m.W_, last.W_)       # dev F does not change the weights


# ---------------------------------------------------------------- the CLI
@pytest.fixture(params=["jsonl", "conll"])
def files(request, tmp_path, corpus):
    """A training and a dev file of each format (GENIA JSONL, CoNLL-2000 chunks)."""
    if request.param == "jsonl":
        for name, count in (("train", 60), ("dev", 20)):
            lines = open(corpus("genia", f"{name}.jsonl"), encoding="utf-8").read().splitlines()
            (tmp_path / f"{name}.jsonl").write_text("\n".join(lines[:count]) + "\n")
        return tmp_path / "train.jsonl", tmp_path / "dev.jsonl"
    write_conll(read_conll(corpus("conll2000", "train.txt"))[:60], tmp_path / "train.txt")
    write_conll(read_conll(corpus("conll2000", "dev.txt"))[:20], tmp_path / "dev.txt")
    return tmp_path / "train.txt", tmp_path / "dev.txt"


def test_cli_ctrl_c_then_resume_is_bit_identical(files, tmp_path, monkeypatch, capsys):
    train, dev = files
    n = len(read_segments(str(train)))
    argv = ["segment", "train", "--train", str(train), "--dev", str(dev), "--max-iter", "4",
            "--hash-bits", "14", "--select", "dev", "--quiet"]
    full, part = str(tmp_path / "full.npz"), str(tmp_path / "part.npz")
    assert main(argv + ["-o", full]) == 0
    stop_at_visit(monkeypatch, 2 * n + 5)                # inside epoch 3
    capsys.readouterr()
    assert main(argv + ["-o", part]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"fstchunk segment train: interrupted: stopped at iteration 2; checkpoint "
                   f"{part}.ckpt (continue with --resume)"]
    assert os.path.exists(part + ".ckpt.hildreth.npz") and not os.path.exists(part)
    monkeypatch.undo()
    assert main(argv + ["-o", part, "--resume"]) == 0
    out = capsys.readouterr().out
    assert f"resuming from {part}.ckpt at iteration 2" in out and "kept epoch" in out
    a, b = load_model(full), load_model(part)
    same_training(a, b)
    assert a.settings_["platt"] == b.settings_["platt"]
    assert a.settings_["train"] == b.settings_["train"] == str(train)
    assert not os.path.exists(part + ".ckpt") and not os.path.exists(part + ".ckpt.hildreth.npz")
    # --epochs is --max-iter; both at once are refused
    assert main(argv[:6] + ["--epochs", "1", "-o", full, "--quiet"]) == 0
    assert load_model(full).settings_["epochs"] == 1
    with pytest.raises(SystemExit) as e:
        main(argv + ["--epochs", "2", "-o", full])
    assert e.value.code == 2
    assert "--epochs: not allowed with argument --max-iter" in capsys.readouterr().err


def test_cli_resume_refuses_a_checkpoint_of_another_run(files, tmp_path, monkeypatch,
                                                        capsys):
    train, dev = files
    base = ["segment", "train", "--train", str(train), "--max-iter", "3", "--hash-bits", "12",
            "--quiet", "-o", str(tmp_path / "m.npz")]
    stop_at_visit(monkeypatch, len(read_segments(str(train))) + 1)   # after epoch 1
    assert main(base) == 130
    monkeypatch.undo()
    other = tmp_path / ("other" + train.suffix)
    other.write_bytes(train.read_bytes().replace(b"the", b"The", 1))
    for extra, field in ((["--seed", "1"], "seed"), (["--no-average"], "average"),
                         (["--max-gap", "none"], "max_gap"),
                         (["--restrict", "no-overlap"], "restrictions"),
                         (["--dev", str(dev), "--select", "dev"], "select"),
                         (["--train", str(other)], "train_sha256")):
        capsys.readouterr()
        assert main(base + extra + ["--resume"]) == 2, field
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is of another run" in err[0] and f"{field}:" in err[0], err
    assert main(base + ["--hash-bits", "11", "--resume"]) == 2     # another θ size: named
    assert "D: 4096 vs 2048 (--hash-bits 12 vs 11)" in capsys.readouterr().err
    assert main(base + ["--resume"]) == 0                           # the checkpoint is intact
    s = load_model(str(tmp_path / "m.npz")).settings_              # as the trainer wrote it
    assert (s["iteration"], s["selected_epoch"], s["select"]) == (3, 3, "last")
    assert s["train"] == str(train) and s["dev"] is None and len(s["history"]) == 3


def test_cli_resume_without_checkpoint(files, tmp_path, capsys):
    train, _ = files
    assert main(["segment", "train", "--train", str(train), "--resume", "--quiet", "-o",
                 str(tmp_path / "m.npz")]) == 2
    assert "--resume: no checkpoint at" in capsys.readouterr().err


def test_sigterm_during_segment_training_writes_the_checkpoint(tmp_path, corpus):
    lines = open(corpus("genia", "train.jsonl"), encoding="utf-8").read().splitlines()
    (tmp_path / "train.jsonl").write_text("\n".join(lines[:80]) + "\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    argv = [sys.executable, "-m", "fstchunk", "segment", "train", "--train", "train.jsonl",
            "--hash-bits", "14", "--checkpoint-every", "1", "--quiet", "-o", "m.npz"]
    proc = subprocess.Popen(argv + ["--max-iter", "500"], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ckpt = tmp_path / "m.npz.ckpt"
    end = time.monotonic() + 120
    while not ckpt.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "no checkpoint within 120 s"
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "fstchunk segment train: terminated" in err and "m.npz.ckpt" in err
    assert "Traceback" not in err
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []
    assert ckpt.exists() and (tmp_path / "m.npz.ckpt.hildreth.npz").exists()
    assert not (tmp_path / "m.npz").exists()
    done = load_model(str(ckpt)).settings_["iteration"]
    resumed = subprocess.run(argv + ["--max-iter", str(done + 1), "--resume"], cwd=tmp_path,
                             env=env, text=True, capture_output=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert load_model(str(tmp_path / "m.npz")).settings_["iteration"] == done + 1


# ---------------------------------------------------------------- old files, estimator
def test_old_model_file_loads_decodes_and_is_reproduced(tmp_path):
    """tests/data/v2/segment.npz (written before the training loop): it loads with its
    learner's settings, decodes as recorded, and retraining it (same data, seed,
    epochs) gives its weights — to 1e-9: the file was written on another CPU, whose
    BLAS sums in another order (bit for bit holds on one machine: the resume tests) —
    and its history (the toy data's margins are far from the learner's ties)."""
    with open(os.path.join(V2, "expected.json"), encoding="utf-8") as fh:
        ref = json.load(fh)
    write_conll(ref["train"], tmp_path / "v2seg.txt")
    old = load_model(os.path.join(V2, "segment.npz"))
    assert (old.seed, old.average, old.max_sweeps, old.max_gap, old.max_gap_) == \
        (0, True, 1000, 0, 0)
    np.testing.assert_array_equal(old.theta_, old.W_.ravel())
    sents = read_conll_segments(str(tmp_path / "v2seg.txt"))
    pred = old.decode(sents, restrictions="no-overlap,contiguous")
    tags = []
    for s, segs in zip(sents, pred):
        t = ["O"] * len(s)
        for g in segs:
            t[g.positions[0]] = f"B-{g.type}"
            for p in g.positions[1:]:
                t[p] = f"I-{g.type}"
        tags += t
    assert tags == [t for s in ref["expect"]["segment-threshold"] for t in s]
    assert old.predicates == "mcp05"             # files before issue 37: one predicate set
    assert old.max_iter == old.settings_["epochs"]       # the epochs its run made
    again = SegmentModel(**old.get_params()).fit(sents)
    assert again.types_ == old.types_ and again.max_gap_ == old.max_gap_
    np.testing.assert_allclose(again.W_, old.W_, rtol=1e-9, atol=1e-12)
    assert again.settings_["history"] == old.settings_["history"]


def test_estimator_hyperparameters_and_fitted_state(tmp_path):
    for bad, match in (({"D": 0}, "D"), ({"seed": -1}, "seed"), ({"max_sweeps": 0},
                       "max_sweeps"), ({"average": "yes"}, "average"),
                       ({"max_gap": "two"}, "max_gap"), ({"k": 0}, "k"),
                       ({"threshold": float("nan")}, "threshold"),
                       ({"restrictions": "no-crossing"}, "no-crossing")):
        with pytest.raises(InputError, match=match):
            SegmentModel(**bad).fit(TOY)            # checked by fit (the contract)
    m = SegmentModel(D=2 ** 10, max_iter=2)
    assert m.max_gap == "auto" and not m.fitted and not hasattr(m, "W_")
    for call in (lambda: m.decode(TOY[:1]), lambda: m.save(tmp_path / "x.npz"),
                 lambda: m.theta_):
        with pytest.raises(InputError, match="not fitted"):
            call()
    m.fit(TOY)
    assert m.types_ == ["PER", "ENZ", "DNA"] and m.max_gap_ == 2 and m.max_gap == "auto"
    first = m.W_.copy()
    m.fit(TOY[:2])                               # fit starts afresh: types from the data
    assert m.types_ == ["PER"] and m.settings_["iteration"] == 2
    assert np.array_equal(m.fit(TOY).W_, first)
    with pytest.raises(InputError, match="starts from W = 0"):
        Trainer("multilabel", max_iter=1, progress=False).fit(m, TOY)
    with pytest.raises(InputError, match="DNA are not among the model's"):
        Trainer("multilabel", max_iter=1, progress=False).fit(
            SegmentModel(D=2 ** 10, max_iter=1).fit(TOY[:2]), TOY)
    with pytest.raises(InputError, match="multilabel"):
        Trainer("ml", progress=False).fit(SegmentModel(), TOY)
    with pytest.raises(InputError, match="no λ"):
        Trainer("multilabel", l2=0.1)
