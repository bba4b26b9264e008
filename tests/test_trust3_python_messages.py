"""Messages shown to Python users name Python calls and parameters, not the command
line's options (issue 43, item 7); the command line prints its own wording
(``FstchunkError.cli_text``)."""

from __future__ import annotations

import re

import pytest

from fstchunk.core.errors import FstchunkError, InputError, TrainingInterrupted
from fstchunk.learn import Trainer
from fstchunk.models.crf import CRF
from fstchunk.runtime.scale import LocalExecutor
from test_training import SENTS

OPTION = re.compile(r"(^|[\s(])--[a-z]")


def _refused(call, python: str, cli: str) -> FstchunkError:
    with pytest.raises(FstchunkError) as e:
        call()
    assert python in str(e.value) and not OPTION.search(str(e.value)), str(e.value)
    assert cli in e.value.cli_text(), e.value.cli_text()
    return e.value


def test_trainer_settings(tmp_path):
    _refused(lambda: Trainer(objective="ml", loss="f"),
             "loss='f' applies to objective='max-margin' only",
             "--loss f applies to --objective max-margin only")
    _refused(lambda: Trainer(select="dev"), "select='dev' needs dev sentences (dev=...)",
             "--select dev needs dev sentences (--dev)")
    _refused(lambda: Trainer(resume=True), "resume=True: no checkpoint file given",
             "--resume: no checkpoint file given")
    ex = LocalExecutor(1)
    try:
        _refused(lambda: Trainer(objective="perceptron", executor=ex),
                 "objective='perceptron' trains by passes in one process; executor= ",
                 "--objective perceptron trains by passes in one process; --workers/")
    finally:
        ex.close()


def test_resume_and_interrupt(tmp_path):
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    ckpt = str(tmp_path / "m.ckpt")
    _refused(lambda: Trainer(checkpoint=ckpt, resume=True, progress=False).fit(crf, data),
             f"resume=True: no checkpoint at {ckpt}", f"--resume: no checkpoint at {ckpt}")

    def stop(p):
        raise KeyboardInterrupt
    e = _refused(lambda: Trainer(l2=0.1, checkpoint=ckpt, callbacks=[stop],
                                 progress=False).fit(crf, data),
                 "(continue with resume=True)", "(continue with --resume)")
    assert isinstance(e, TrainingInterrupted) and e.checkpoint == ckpt
    other = CRF("tmpt1")
    again = other._prepare(SENTS)
    _refused(lambda: Trainer(l2=0.2, checkpoint=ckpt, resume=True,
                             progress=False).fit(other, again),
             "resume=True: checkpoint", "--resume: checkpoint")


def test_objectives_are_named_as_the_caller_names_them():
    from fstchunk.learn.objectives import objective
    _refused(lambda: Trainer(objective="perceptron", l2=0.1),
             "objective='perceptron' has no λ", "--objective perceptron has no λ")
    _refused(lambda: Trainer(objective="max-margin", l2=0.0),
             "objective='max-margin' needs λ > 0", "--objective max-margin needs λ > 0")
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    e = _refused(lambda: Trainer(objective=objective("multilabel"), progress=False
                                 ).fit(crf, data),
                 "unknown objective 'multilabel'; use one of ml", "unknown objective")
    assert "summary" not in str(e)                  # the name, not the Objective's repr


def test_an_error_without_a_cli_wording_is_the_same_on_both():
    e = InputError("plain")
    assert e.cli_text() == str(e) == "plain"


def test_importing_a_crfsuite_model_names_the_scheme_parameter(tmp_path):
    pycrfsuite = pytest.importorskip("pycrfsuite")
    from fstchunk.models.crfsuite_import import from_crfsuite
    trainer = pycrfsuite.Trainer(verbose=False)
    trainer.append([{"w": "the"}, {"w": "dog"}], ["DT", "NN"])
    trainer.set_params({"max_iterations": 5})
    path = str(tmp_path / "pos.crfsuite")
    trainer.train(path)
    _refused(lambda: from_crfsuite(path, "IOB2"), "import with scheme=None for an unconstrained",
             "import with --scheme none for an unconstrained")
