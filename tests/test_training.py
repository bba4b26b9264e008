"""fstchunk.training.Trainer: the one L-BFGS loop, on a tiny in-memory corpus."""

import numpy as np
import pytest

from fstchunk.conll import Sentence
from fstchunk.errors import InputError, ModelFileError
from fstchunk.models.crf import CRF
from fstchunk.training import Progress, Trainer, dev_f

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["Dogs", "NNS", "B-NP"], ["run", "VBP", "B-VP"]]),
         Sentence([["He", "PRP", "B-NP"]])]


class Stop(Exception):
    pass


def test_callbacks_dev_f_and_bookkeeping():
    crf, data = CRF.prepare(SENTS, "tmpt1")
    seen: list[Progress] = []
    messages: list[str] = []
    out = Trainer(objective="ml", l2=0.1, max_iter=8, dev=SENTS, dev_every=2,
                  progress=False, callbacks=[seen.append], log=messages.append).fit(crf, data)
    assert out is crf
    n = crf.settings["iterations"]
    assert [p.iteration for p in seen] == list(range(1, n + 1)) and 2 <= n <= 8
    assert np.isnan(seen[0].dev_f) and 0 <= seen[1].dev_f <= 100
    assert all(np.isfinite(p.objective) and p.model is crf for p in seen)
    assert seen[-1].objective == pytest.approx(crf.settings["final_objective"])
    assert crf.settings["dev_f"] == pytest.approx(dev_f(crf, SENTS))
    assert messages == [f"dev F (MAP) = {crf.settings['dev_f']:.2f}"]
    assert crf.settings["iteration"] == n and crf.settings["train_seconds"] > 0
    assert crf.settings["objective"] == "ml" and crf.settings["l2"] == 0.1


def test_checkpoints_every_n_and_removed_at_the_end(tmp_path):
    crf, data = CRF.prepare(SENTS, "tmpt1")
    ckpt, output = tmp_path / "m.npz.ckpt", tmp_path / "m.npz"
    found = {}

    def look(p: Progress):
        if ckpt.exists():
            found.setdefault(CRF.load(ckpt).settings["iteration"], p.iteration)

    Trainer(l2=0.1, max_iter=7, checkpoint=str(ckpt), checkpoint_every=3, output=str(output),
            progress=False, callbacks=[look], tol=1e-12).fit(crf, data)
    assert found == {3: 3, 6: 6}                 # written at 3 and 6, seen from then on
    assert not ckpt.exists() and output.exists()
    np.testing.assert_array_equal(CRF.load(output).theta, crf.theta)


def test_resume_continues_and_reaches_the_uninterrupted_optimum(tmp_path):
    """Interrupted at iteration 5 with checkpoints every 3: the resumed run starts at 3,
    counts on from there and ends where the uninterrupted run does (ML with λ > 0 is
    strictly convex)."""
    opts = dict(objective="ml", l2=0.1, max_iter=300, tol=1e-10, progress=False)
    whole, data = CRF.prepare(SENTS, "tmpt1")
    Trainer(**opts).fit(whole, data)
    assert whole.settings["converged"]

    ckpt = str(tmp_path / "m.npz.ckpt")
    crf, data = CRF.prepare(SENTS, "tmpt1")

    def interrupt(p: Progress):
        if p.iteration == 5:
            raise Stop

    with pytest.raises(Stop):
        Trainer(checkpoint=ckpt, checkpoint_every=3, callbacks=[interrupt], **opts).fit(crf, data)
    assert CRF.load(ckpt).settings["iteration"] == 3

    fresh, data = CRF.prepare(SENTS, "tmpt1")
    seen, messages = [], []
    Trainer(checkpoint=ckpt, resume=True, callbacks=[seen.append], log=messages.append,
            **opts).fit(fresh, data)
    assert messages == [f"resuming from {ckpt} at iteration 3"]
    assert seen[0].iteration == 4
    assert fresh.settings["iteration"] == 3 + fresh.settings["iterations"]
    # L-BFGS restarts its curvature memory, so the iterates differ; the optimum does not
    # (up to the stopping rule's tolerance)
    assert fresh.settings["final_objective"] == pytest.approx(whole.settings["final_objective"],
                                                              rel=1e-8)
    np.testing.assert_allclose(fresh.theta, whole.theta, atol=1e-3)


def test_resume_without_a_checkpoint_starts_afresh(tmp_path):
    crf, data = CRF.prepare(SENTS, "tmpt1")
    messages = []
    Trainer(l2=0.1, max_iter=3, checkpoint=str(tmp_path / "none.ckpt"), resume=True,
            progress=False, log=messages.append).fit(crf, data)
    assert messages == [] and crf.settings["iteration"] == crf.settings["iterations"]


def test_a_checkpoint_of_other_features_is_refused(tmp_path):
    other, _ = CRF.prepare(SENTS[:1], "tmpt1")
    ckpt = tmp_path / "m.ckpt"
    other.save(ckpt)
    crf, data = CRF.prepare(SENTS, "tmpt1")
    with pytest.raises(ModelFileError, match="m.ckpt: checkpoint does not fit"):
        Trainer(checkpoint=str(ckpt), resume=True, progress=False).fit(crf, data)


@pytest.mark.parametrize("kwargs, message", [
    ({"objective": "mle"}, "unknown objective 'mle'"),
    ({"l2": float("nan")}, "l2 must be a finite number >= 0"),
    ({"beta": -1.0}, "beta must be a finite number >= 0"),
    ({"max_iter": -1}, "max_iter must be an integer >= 0"),
    ({"checkpoint_every": 1.5}, "checkpoint_every must be an integer >= 0"),
])
def test_bad_options(kwargs, message):
    with pytest.raises(InputError, match=message):
        Trainer(**kwargs)
