"""fstchunk.learn.Trainer: the one training loop, on a tiny in-memory corpus."""

import hashlib
import pathlib

import numpy as np
import pytest

from fstchunk.io.columns import Columns
from fstchunk.io.conll import Sentence
from fstchunk.core.errors import InputError, ModelFileError, OutputError, TrainingInterrupted
from fstchunk.learn import Progress, Trainer, file_digest
from fstchunk.learn.objectives import ML, MEU, MEU_CORPUS
from fstchunk.models.base import chunk_dev_f as dev_f
from fstchunk.models.crf import CRF

DEFAULT_L2 = {o.name: o.default_l2 for o in (ML, MEU, MEU_CORPUS)}

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["Dogs", "NNS", "B-NP"], ["run", "VBP", "B-VP"]]),
         Sentence([["He", "PRP", "B-NP"]])]


class Stop(Exception):
    pass


def test_callbacks_dev_f_and_bookkeeping():
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    seen: list[Progress] = []
    messages: list[str] = []
    out = Trainer(objective="ml", l2=0.1, max_iter=8, dev=SENTS, dev_every=2,
                  progress=False, callbacks=[seen.append], log=messages.append).fit(crf, data)
    assert out is crf
    n = crf.settings_["iterations"]
    assert [p.iteration for p in seen] == list(range(1, n + 1)) and 2 <= n <= 8
    assert np.isnan(seen[0].dev_f) and 0 <= seen[1].dev_f <= 100
    assert all(np.isfinite(p.objective) and p.model is crf for p in seen)
    assert seen[-1].objective == pytest.approx(crf.settings_["final_objective"])
    assert crf.settings_["dev_f"] == pytest.approx(dev_f(crf, SENTS))
    assert messages == [f"dev F = {crf.settings_['dev_f']:.2f}"]
    assert crf.settings_["iteration"] == n and crf.settings_["train_seconds"] > 0
    assert crf.settings_["objective"] == "ml" and crf.settings_["l2"] == 0.1


def test_checkpoints_every_n_and_removed_at_the_end(tmp_path):
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    ckpt, output = tmp_path / "m.npz.ckpt", tmp_path / "m.npz"
    found = {}

    def look(p: Progress):
        if ckpt.exists():
            found.setdefault(CRF.load(ckpt).settings_["iteration"], p.iteration)

    Trainer(l2=0.1, max_iter=7, checkpoint=str(ckpt), checkpoint_every=3, output=str(output),
            progress=False, callbacks=[look], tol=1e-12).fit(crf, data)
    assert found == {3: 3, 6: 6}                 # written at 3 and 6, seen from then on
    assert not ckpt.exists() and output.exists()
    np.testing.assert_array_equal(CRF.load(output).theta_, crf.theta_)


def test_resume_continues_and_reaches_the_uninterrupted_optimum(tmp_path):
    """Interrupted at iteration 5 with checkpoints every 3: the resumed run starts at 3,
    counts on from there and ends where the uninterrupted run does (ML with λ > 0 is
    strictly convex)."""
    opts = dict(objective="ml", l2=0.1, max_iter=300, tol=1e-10, progress=False)
    whole = CRF("tmpt1")
    data = whole._prepare(SENTS)
    Trainer(**opts).fit(whole, data)
    assert whole.settings_["converged"]

    ckpt = str(tmp_path / "m.npz.ckpt")
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)

    def interrupt(p: Progress):
        if p.iteration == 5:
            raise Stop

    with pytest.raises(Stop):
        Trainer(checkpoint=ckpt, checkpoint_every=3, callbacks=[interrupt], **opts).fit(crf, data)
    assert CRF.load(ckpt).settings_["iteration"] == 3

    fresh = CRF("tmpt1")
    data = fresh._prepare(SENTS)
    seen, messages = [], []
    Trainer(checkpoint=ckpt, resume=True, callbacks=[seen.append], log=messages.append,
            **opts).fit(fresh, data)
    assert messages == [f"resuming from {ckpt} at iteration 3"]
    assert seen[0].iteration == 4
    assert fresh.settings_["iteration"] == 3 + fresh.settings_["iterations"]
    # L-BFGS restarts its curvature memory, so the iterates differ; the optimum does not
    # (up to the stopping rule's tolerance)
    assert fresh.settings_["final_objective"] == pytest.approx(whole.settings_["final_objective"],
                                                              rel=1e-8)
    np.testing.assert_allclose(fresh.theta_, whole.theta_, atol=1e-3)


def test_resume_without_a_checkpoint_is_refused(tmp_path):
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    theta = crf.theta_.copy()
    missing = str(tmp_path / "none.ckpt")
    with pytest.raises(InputError, match=f"resume=True: no checkpoint at {missing}$"):
        Trainer(l2=0.1, max_iter=3, checkpoint=missing, resume=True,
                progress=False).fit(crf, data)
    np.testing.assert_array_equal(crf.theta_, theta)              # nothing trained
    with pytest.raises(InputError, match=r"resume=True: no checkpoint file given \(checkpoint"):
        Trainer(resume=True)


def test_a_checkpoint_of_other_features_is_refused(tmp_path):
    other = CRF("tmpt1")
    _ = other._prepare(SENTS[:1])
    ckpt = tmp_path / "m.ckpt"
    other.save(ckpt)
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    with pytest.raises(ModelFileError, match="m.ckpt: checkpoint does not fit"):
        Trainer(checkpoint=str(ckpt), resume=True, progress=False).fit(crf, data)


@pytest.mark.parametrize("kwargs, message", [
    ({"objective": "mle"}, "unknown objective 'mle'"),
    ({"l2": float("nan")}, "l2 must be a finite number >= 0"),
    ({"l2": -1e-9}, "l2 must be a finite number >= 0"),
    ({"l2": float("inf")}, "l2 must be a finite number >= 0"),
    ({"beta": -1.0}, "beta must be a finite number > 0"),
    ({"beta": 0.0}, r"beta must be a finite number > 0 \(1e-150 to 1e\+150\), got 0.0"),
    ({"beta": 1e-200}, "beta must be a finite number > 0"),    # β² would be 0: F_0
    ({"beta": float("nan")}, "beta must be a finite number > 0"),
    ({"beta": float("inf")}, "beta must be a finite number > 0"),
    ({"max_iter": -1}, "max_iter must be an integer >= 1"),
    ({"max_iter": 0}, "max_iter must be an integer >= 1"),
    ({"max_iter": 2.0}, "max_iter must be an integer >= 1"),
    ({"dev_every": -1}, "dev_every must be an integer >= 0"),
    ({"checkpoint_every": 1.5}, "checkpoint_every must be an integer >= 0"),
])
def test_bad_options(kwargs, message):
    with pytest.raises(InputError, match=message):
        Trainer(**kwargs)


@pytest.mark.parametrize("objective", sorted(DEFAULT_L2))
def test_l2_none_is_the_objectives_default(objective):
    t = Trainer(objective=objective, progress=False)
    assert t.l2 == DEFAULT_L2[objective]
    assert Trainer(objective=objective, l2=0).l2 == 0.0


def test_file_digest(tmp_path):
    p = tmp_path / "train.txt"
    p.write_bytes(b"The DT B-NP\n")
    assert file_digest(p) == hashlib.sha256(b"The DT B-NP\n").hexdigest()
    with pytest.raises(InputError, match="nothere.txt: cannot read"):
        file_digest(tmp_path / "nothere.txt")


IDENTITY = {"scheme": "IOB2", "template": "tmpt1", "columns": "word,pos,tag",
            "train_sha256": "ab" * 32, "init": None}


def _interrupted_run(tmp_path, at=4, **opts):
    """A run stopped by Ctrl-C (a callback raising KeyboardInterrupt) at ``at``."""
    ckpt = str(tmp_path / "m.npz.ckpt")
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)

    def ctrl_c(p: Progress):
        if p.iteration == at:
            raise KeyboardInterrupt

    kw = dict(objective="ml", l2=0.1, max_iter=50, tol=1e-10, progress=False,
              identity=IDENTITY, checkpoint=ckpt, checkpoint_every=100)
    kw.update(opts)
    with pytest.raises(TrainingInterrupted) as e:
        Trainer(callbacks=[ctrl_c], **kw).fit(crf, data)
    return crf, ckpt, kw, e.value


def test_ctrl_c_saves_the_latest_iterate_and_resumes(tmp_path):
    crf, ckpt, kw, err = _interrupted_run(tmp_path)
    assert str(err) == f"stopped at iteration 4; checkpoint {ckpt} (continue with resume=True)"
    assert err.cli_text() == f"stopped at iteration 4; checkpoint {ckpt} (continue with --resume)"
    assert err.checkpoint == ckpt
    saved = CRF.load(ckpt)                  # written at 4 though checkpoint_every is 100
    assert saved.settings_["iteration"] == 4
    np.testing.assert_array_equal(saved.theta_, crf.theta_)
    assert saved.settings_["run"] == {"objective": "ml", "l2": 0.1, "beta": 1.0, **IDENTITY}
    fresh = CRF("tmpt1")
    data = fresh._prepare(SENTS)
    messages, seen = [], []
    Trainer(resume=True, log=messages.append, callbacks=[seen.append], **kw).fit(fresh, data)
    assert messages[0] == f"resuming from {ckpt} at iteration 4" and seen[0].iteration == 5


def test_ctrl_c_without_a_checkpoint_says_so(tmp_path):
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)

    def ctrl_c(p: Progress):
        raise KeyboardInterrupt

    with pytest.raises(TrainingInterrupted, match="stopped at iteration 1; no checkpoint") as e:
        Trainer(l2=0.1, progress=False, callbacks=[ctrl_c]).fit(crf, data)
    assert e.value.checkpoint is None


@pytest.mark.parametrize("change, fields", [
    ({"objective": "meu-corpus", "l2": 0.1}, ["objective: 'ml' vs 'meu-corpus'"]),
    ({"l2": 0.2}, ["l2: 0.1 vs 0.2"]),
    ({"beta": 2.0}, ["beta: 1.0 vs 2.0"]),
    ({"identity": dict(IDENTITY, train_sha256="cd" * 32, template="tmpt2")},
     ["template: 'tmpt1' vs 'tmpt2'", f"train_sha256: '{'ab' * 32}' vs '{'cd' * 32}'"]),
    ({"identity": dict(IDENTITY, init="ml.npz")}, ["init: None vs 'ml.npz'"]),
    ({"identity": None}, ["scheme: 'IOB2' vs (not recorded)"]),
])
def test_resume_refuses_a_checkpoint_of_another_run(tmp_path, change, fields):
    _, ckpt, kw, _ = _interrupted_run(tmp_path)
    kw.update(change)
    fresh = CRF("tmpt1")
    data = fresh._prepare(SENTS)
    with pytest.raises(InputError, match=f"checkpoint {ckpt} is of another run") as e:
        Trainer(resume=True, **kw).fit(fresh, data)
    for field in fields:
        assert field in str(e.value)
    assert CRF.load(ckpt).settings_["iteration"] == 4           # kept for a right resume


def test_destinations_are_checked_before_training(tmp_path):
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    called = []
    for bad in ({"output": str(tmp_path / "no" / "m.npz")}, {"output": str(tmp_path)},
                {"checkpoint": str(tmp_path / "no" / "m.ckpt")}):
        with pytest.raises(OutputError, match=str(tmp_path)):
            Trainer(l2=0.1, progress=False, callbacks=[called.append], **bad).fit(crf, data)
    assert called == []


def test_dev_f_reads_the_models_tag_column():
    """Gold tags in column 1 of a (word, tag, POS) layout: dev F must score against
    them, not against the last column."""
    layout = Columns.parse("word=0,pos=2,tag=1")
    sents = [Sentence([[w, t, p] for w, p, t in s.rows]) for s in SENTS]
    crf = CRF("tmpt1", columns=layout)
    data = crf._prepare(sents)
    Trainer(l2=0.01, max_iter=50, progress=False).fit(crf, data)
    assert dev_f(crf, sents) == pytest.approx(100.0)


def test_ctrl_c_during_the_final_dev_f_keeps_the_trained_weights(tmp_path, monkeypatch):
    """After the optimiser, the final dev F can take a while: a Ctrl-C there must save
    the trained θ to the checkpoint too, not lose the run in a bare KeyboardInterrupt."""
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    ckpt = str(tmp_path / "m.npz.ckpt")

    def ctrl_c(model, sentences):
        raise KeyboardInterrupt

    monkeypatch.setattr(CRF, "dev_f", ctrl_c)
    with pytest.raises(TrainingInterrupted, match="stopped at iteration 5; checkpoint") as e:
        Trainer(l2=0.1, max_iter=5, tol=0, dev=SENTS, dev_every=0, checkpoint=ckpt,
                checkpoint_every=0, output=str(tmp_path / "m.npz"),
                progress=False).fit(crf, data)
    assert e.value.checkpoint == ckpt and not (tmp_path / "m.npz").exists()
    saved = CRF.load(ckpt)
    assert saved.settings_["iteration"] == 5
    np.testing.assert_array_equal(saved.theta_, crf.theta_)


def test_identity_fields_must_survive_the_checkpoint():
    with pytest.raises(InputError, match="identity field 'train': PosixPath"):
        Trainer(identity={"train": pathlib.Path("train.txt")})
    with pytest.raises(InputError, match="identity field 'x': nan"):
        Trainer(identity={"x": float("nan")})
    assert Trainer(identity={"a": "s", "b": 1, "c": 0.5, "d": None, "e": True}).identity


@pytest.mark.parametrize("objective, l2, stop", [("ml", 0.1, 3), ("max-margin", 0.05, 2),
                                                 ("perceptron", 0.0, 1)])
def test_resume_with_max_iter_at_or_below_the_checkpoint_takes_no_step(
        tmp_path, monkeypatch, objective, l2, stop):
    """Issue 32: ``--resume`` with ``--max-iter`` <= the checkpoint's iteration writes the
    checkpoint's θ bit for bit, evaluates no objective, makes no solver, keeps the
    checkpoint (a larger ``--max-iter`` continues it)."""
    from fstchunk.models import bcfw, perceptron as pc
    ckpt, output = str(tmp_path / "m.npz.ckpt"), tmp_path / "m.npz"
    opts = dict(objective=objective, l2=l2, tol=0.0, progress=False, checkpoint=ckpt,
                checkpoint_every=1)
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)

    def interrupt(p: Progress):
        if p.iteration == stop:
            raise KeyboardInterrupt

    with pytest.raises(TrainingInterrupted, match=f"stopped at iteration {stop}"):
        Trainer(max_iter=20, callbacks=[interrupt], **opts).fit(crf, data)
    saved = CRF.load(ckpt)
    assert saved.settings_["iteration"] == stop
    calls = []
    real = CRF.objective_function

    def counted(self, *args, **kwargs):
        fun = real(self, *args, **kwargs)

        def f(theta):
            calls.append(1)
            return fun(theta)
        return f

    def no_solver(*args, **kwargs):
        raise AssertionError("a solver was made")

    monkeypatch.setattr(CRF, "objective_function", counted)
    monkeypatch.setattr(bcfw.BCFW, "__init__", no_solver)
    monkeypatch.setattr(pc.AveragedPerceptron, "__init__", no_solver)
    for max_iter in sorted({stop, max(stop - 1, 1), 1}, reverse=True):
        fresh = CRF("tmpt1")
        data = fresh._prepare(SENTS)
        seen, messages = [], []
        Trainer(max_iter=max_iter, resume=True, output=str(output), dev=SENTS,
                callbacks=[seen.append], log=messages.append, **opts).fit(fresh, data)
        assert seen == [] and calls == []                          # no step, no evaluation
        assert np.array_equal(fresh.theta_, saved.theta_)
        written = CRF.load(output)
        assert np.array_equal(written.theta_, saved.theta_)
        assert written.settings_["iterations"] == 0
        assert written.settings_["iteration"] == stop
        assert "final_objective" not in written.settings_
        assert written.settings_["dev_f"] == pytest.approx(dev_f(saved, SENTS))
        assert messages[1] == (f"--max-iter {max_iter}: the checkpoint is at iteration "
                               f"{stop} already; no step taken, the model is the "
                               f"checkpoint's (checkpoint kept)")
        assert pathlib.Path(ckpt).exists()
        assert np.array_equal(CRF.load(ckpt).theta_, saved.theta_)
    monkeypatch.undo()                  # and a larger --max-iter continues from it
    fresh = CRF("tmpt1")
    data = fresh._prepare(SENTS)
    seen = []
    Trainer(max_iter=stop + 1, resume=True, callbacks=[seen.append], **opts).fit(fresh, data)
    assert [p.iteration for p in seen] == [stop + 1]
    assert not pathlib.Path(ckpt).exists()


def test_cli_resume_past_max_iter_says_so(tmp_path, capsys):
    """``fstchunk train --resume`` with ``--max-iter`` below the checkpoint: one plain line
    on standard output, the checkpoint's θ written, exit 0."""
    from fstchunk.cli import main
    from fstchunk.io.conll import write_conll
    train, out = tmp_path / "t.txt", str(tmp_path / "m.npz")
    write_conll(SENTS, train)
    argv = ["train", "--train", str(train), "--features", "tmpt1", "--l2", "0.1", "-o", out,
            "--quiet"]

    def stop(p: Progress):
        if p.iteration == 3:
            raise KeyboardInterrupt

    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    ident = {"scheme": crf.scheme_, "template": "tmpt1", "columns": Columns().spec(),
             "train_sha256": file_digest(train), "init": None}
    with pytest.raises(TrainingInterrupted):
        Trainer(l2=0.1, max_iter=9, checkpoint=out + ".ckpt", checkpoint_every=0,
                identity=ident, callbacks=[stop], progress=False).fit(crf, data)
    capsys.readouterr()
    assert main(argv + ["--resume", "--max-iter", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"resuming from {out}.ckpt at iteration 3",
                     "--max-iter 2: the checkpoint is at iteration 3 already; no step taken, "
                     "the model is the checkpoint's (checkpoint kept)", f"wrote {out}"]
    assert np.array_equal(CRF.load(out).theta_, CRF.load(out + ".ckpt").theta_)
