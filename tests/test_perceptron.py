"""The averaged perceptron on the CRF's features (``--objective perceptron``).

Oracle: a direct perceptron in θ-space (φ(x, y) through the CRF's own chain rule,
each argmax by the per-sentence lattice Viterbi, the average as the mean of θ after
every visit) on real CoNLL-2000 sentences; the Trainer's bookkeeping (Ctrl-C and
resume give the uninterrupted run), the refusals (λ, a trained start, MEU before
calibration) and the CLI.
"""

from __future__ import annotations

import numpy as np
import pytest

from fstchunk.cli import main
from fstchunk.io.conll import read_conll
from fstchunk.decoding.batch import decode_sentences
from fstchunk.engine.chain import viterbi
from fstchunk.core.errors import InputError, TrainingInterrupted
from fstchunk.structures.lattice import Lattice
from fstchunk.models import perceptron as pc
from fstchunk.models.crf import CRF
from fstchunk.models.crf_loss import chain_rule
from fstchunk.models.objectives import ChainGrad, Gold
from fstchunk.learn import Progress, Trainer
from oracles import TINY_CONLL, prepared


def _data(corpus, n=40):
    sents = read_conll(corpus("conll2000", "train.txt"))[:n]
    return sents, *prepared(CRF("tmpt1"), sents)


def _phi(crf, data, k, y):
    """φ(x_k, y) in θ-space, by the CRF's chain rule on sentence k's rows."""
    sub = type(data)(data.X[data.gold.offsets[k]:data.gold.offsets[k + 1]],
                     Gold([data.gold.sequences[k]], crf.tags_, crf.scheme_))
    n, L = len(y), len(crf.tags_)
    E, T, S, En = np.zeros((n, L)), np.zeros((L, L)), np.zeros(L), np.zeros(L)
    E[np.arange(n), y] = 1
    np.add.at(T, (y[:-1], y[1:]), 1)
    S[y[0]], En[y[-1]] = 1, 1
    return chain_rule(crf, sub, ChainGrad(E, T, S, En))


def reference(crf, data, passes):
    """θ averaged over every visit, straight from the definition."""
    theta, total, visits = np.zeros_like(crf.theta_), np.zeros_like(crf.theta_), 0
    off = data.gold.offsets
    for p in range(passes):
        for k in np.random.default_rng(p).permutation(len(data.gold)):
            ch = crf.chain(theta, data.X[off[k]:off[k + 1]])
            lat = Lattice.from_scores(crf.tags_, ch.emissions, ch.trans, ch.start, ch.end,
                                      scheme=crf.scheme_)
            y = np.array(viterbi(lat.layers)[0])
            g = data.gold.sequences[k]
            if not np.array_equal(y, g):
                theta = theta + _phi(crf, data, k, g) - _phi(crf, data, k, y)
            total += theta
            visits += 1
    return total / visits


def test_the_average_is_the_perceptron_of_the_definition(corpus):
    _, crf, data = _data(corpus)
    solver = pc.AveragedPerceptron(crf, data)
    reports = [solver.run_pass() for _ in range(3)]
    assert reports[0].mistakes > 0                          # it learnt something
    np.testing.assert_allclose(solver.theta, reference(crf, data, 3), rtol=0, atol=1e-9)


def test_trainer_stops_at_a_pass_without_mistakes_and_records_it(tmp_path):
    train = tmp_path / "t.txt"
    train.write_text(TINY_CONLL)
    sents = read_conll(str(train))
    crf = CRF("tmpt1")
    data = crf._prepare(sents)
    seen: list[Progress] = []
    Trainer(objective="perceptron", max_iter=50, progress=False, callbacks=[seen.append],
            dev=sents, dev_every=0, output=str(tmp_path / "p.npz")).fit(crf, data)
    s = CRF.load(tmp_path / "p.npz").settings_
    assert s["solver"] == "averaged-perceptron" and s["converged"]
    assert s["mistakes"] == 0 and s["passes"] == len(seen) < 50
    assert seen[-1].objective == 0.0 and s["dev_f"] == pytest.approx(100.0)


def test_ctrl_c_and_resume_give_the_uninterrupted_run(corpus, tmp_path):
    _, crf, data = _data(corpus, 30)
    Trainer(objective="perceptron", max_iter=4, progress=False).fit(crf, data)
    ckpt = str(tmp_path / "p.ckpt")

    def stop(p: Progress):
        if p.iteration == 2:
            raise KeyboardInterrupt

    _, part, pdata = _data(corpus, 30)
    with pytest.raises(TrainingInterrupted, match="stopped at iteration 2"):
        Trainer(objective="perceptron", max_iter=4, progress=False, checkpoint=ckpt,
                callbacks=[stop]).fit(part, pdata)
    _, resumed, rdata = _data(corpus, 30)
    Trainer(objective="perceptron", max_iter=4, progress=False, checkpoint=ckpt,
            resume=True).fit(resumed, rdata)
    np.testing.assert_allclose(resumed.theta_, crf.theta_, rtol=0, atol=1e-12)
    assert resumed.settings_["iteration"] == 4


def test_ctrl_c_inside_a_pass_keeps_the_last_complete_pass(corpus, tmp_path, monkeypatch):
    _, crf, data = _data(corpus, 30)
    Trainer(objective="perceptron", max_iter=3, progress=False).fit(crf, data)
    calls = {"n": 0}
    real = pc.AveragedPerceptron.oracles

    def flaky(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 30 + 7:               # 7th sentence of pass 2
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pc.AveragedPerceptron, "oracles", flaky)
    ckpt = str(tmp_path / "p.ckpt")
    _, part, pdata = _data(corpus, 30)
    with pytest.raises(TrainingInterrupted, match="stopped at iteration 1"):
        Trainer(objective="perceptron", max_iter=3, progress=False,
                checkpoint=ckpt).fit(part, pdata)
    monkeypatch.setattr(pc.AveragedPerceptron, "oracles", real)
    _, resumed, rdata = _data(corpus, 30)
    Trainer(objective="perceptron", max_iter=3, progress=False, checkpoint=ckpt,
            resume=True).fit(resumed, rdata)
    np.testing.assert_allclose(resumed.theta_, crf.theta_, rtol=0, atol=1e-12)


def test_resume_refuses_a_state_of_another_run(corpus, tmp_path):
    ckpt = str(tmp_path / "p.ckpt")
    _, a, adata = _data(corpus, 30)
    with pytest.raises(TrainingInterrupted):
        Trainer(objective="perceptron", max_iter=3, progress=False, checkpoint=ckpt,
                callbacks=[lambda p: (_ for _ in ()).throw(KeyboardInterrupt)]).fit(a, adata)
    other = pc.AveragedPerceptron(*_data(corpus, 30)[1:])
    other.run_pass()
    other.run_pass()
    other.save_state(ckpt + pc.STATE_SUFFIX)        # 2 passes against the checkpoint's 1
    _, b, bdata = _data(corpus, 30)
    with pytest.raises(Exception, match="perceptron.npz: the solver state"):
        Trainer(objective="perceptron", max_iter=3, progress=False, checkpoint=ckpt,
                resume=True).fit(b, bdata)


def test_refusals(corpus):
    with pytest.raises(InputError, match="objective='perceptron' has no λ"):
        Trainer(objective="perceptron", l2=0.1)
    _, crf, data = _data(corpus, 10)
    with pytest.raises(InputError, match="no objective function"):
        crf.objective_function("perceptron", data, 0.0)
    crf.theta_[:] = 0.1
    with pytest.raises(InputError, match="θ = 0"):
        Trainer(objective="perceptron", progress=False).fit(crf, data)


def test_meu_needs_calibration_map_does_not(corpus):
    sents, crf, data = _data(corpus, 60)
    Trainer(objective="perceptron", max_iter=3, progress=False).fit(crf, data)
    held = read_conll(corpus("conll2000", "dev.txt"))[:30]
    assert len(decode_sentences(crf, held, "map")) == 30
    with pytest.raises(InputError, match="trained by perceptron; its scores are margins"):
        decode_sentences(crf, held, "meu")
    t = crf.calibrate(held, source="dev")
    assert np.isfinite(t) and t > 0 and crf.probabilistic
    assert len(decode_sentences(crf, held, "meu")) == 30


def test_cli_train_perceptron_then_decode(capsys, tmp_path):
    train = tmp_path / "train.txt"
    train.write_text(TINY_CONLL)
    model = str(tmp_path / "p.npz")
    code = main(["train", "--train", str(train), "--features", "tmpt1", "--objective",
                 "perceptron", "--max-iter", "20", "--calibrate", str(train), "-o", model,
                 "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    s = CRF.load(model).settings_
    assert s["objective"] == "perceptron" and s["solver"] == "averaged-perceptron"
    assert "temperature" in s
    assert main(["decode", "--model", model, "--input", str(train), "--decoder", "meu"]) == 0
    out, _ = capsys.readouterr()
    assert [ln.split()[-1] for ln in out.splitlines() if ln.strip()] == [
        ln.split()[-1] for ln in TINY_CONLL.splitlines() if ln.strip()]
    code = main(["train", "--train", str(train), "--objective", "perceptron", "--l2", "0.5",
                 "-o", model, "--quiet"])
    assert code != 0 and "perceptron has no λ" in capsys.readouterr().err
