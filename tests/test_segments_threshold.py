"""The segment model's decision threshold fixed on dev (McDonald et al. 2005, §4.3 and
Figure 5): the curve is the threshold decoder's P/R/F at each threshold, the best
threshold maximises dev F (ties nearest 0), ``tune_threshold`` makes it the model's,
a new fit undoes it, and ``segment train --threshold dev`` / ``segment decode
--threshold`` give the API's answers."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstchunk.cli import main
from fstchunk.core.errors import InputError
from fstchunk.models import load_model
from fstchunk.models.segment import decisions
from fstchunk.models.segment.model import SegmentModel
from fstchunk.io.segments import Segment, SegSentence, read_jsonl
from fstchunk.evaluation.segments import score_segments

from test_segments_model import TRAIN, sent

DEV = [
    sent("Hilary Clinton and Bill traveled", [("PER", (0, 1)), ("PER", (1, 3))]),
    sent("Gates met Bill Clinton", [("PER", (0,)), ("PER", (2, 3))]),
    sent("P450 11 / 19 hydroxylase", [("ENZ", (0, 1, 4)), ("ENZ", (0, 3, 4))]),
]


def random_model(seed: int, restrictions=None) -> SegmentModel:
    """A model of the TRAIN types with random weights (scores on the scale of ±1)."""
    m = SegmentModel(D=2 ** 10, max_gap=2, restrictions=restrictions)
    m._fitted(["PER", "ENZ"])
    m.W_ = np.random.default_rng(seed).normal(scale=0.3, size=m.W_.shape)
    return m


def prf(model, sentences, threshold, beta=1.0):
    o = score_segments([s.segments for s in sentences],
                       model.decode(sentences, threshold=threshold), beta).overall
    return o.precision, o.recall, o.f(beta)


@pytest.mark.parametrize("restrictions", [None, "no-overlap", "no-overlap,contiguous"])
@pytest.mark.parametrize("seed", range(3))
def test_curve_is_the_threshold_decoder_at_each_threshold(seed, restrictions):
    m = random_model(seed, restrictions)
    grid = [-2.0, -0.7, -0.1, 0.0, 0.25, 1.5]
    for beta in (1.0, 2.0):
        curve = decisions.threshold_curve(m, DEV + TRAIN, grid, beta)
        assert [r[0] for r in curve] == grid
        for t, p, r, f in curve:
            assert (p, r, f) == pytest.approx(prf(m, DEV + TRAIN, t, beta), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-10, 10), st.integers(0, 4)), min_size=1, max_size=12,
                unique_by=lambda r: r[0]))
def test_best_threshold_is_the_best_f_nearest_zero(rows):
    curve = [(t / 5, 50.0, 50.0, 60.0 + f) for t, f in sorted(rows)]
    t, _, _, f = decisions.best_threshold(curve)
    top = max(r[3] for r in curve)
    assert f == top
    ties = [r[0] for r in curve if r[3] == top]
    assert abs(t) == min(abs(x) for x in ties)
    assert t == min(x for x in ties if abs(x) == abs(t))            # then the lower


def test_tune_threshold_sets_records_and_a_refit_undoes_it(tmp_path):
    m = SegmentModel(D=2 ** 12, threshold=0.3, max_iter=3).fit(TRAIN)
    curve = decisions.threshold_curve(m, DEV)
    want = decisions.best_threshold(curve)
    t = m.tune_threshold(DEV, source="dev.jsonl")
    assert t == m.threshold_ == want[0] and m.threshold == 0.3      # the hyper-parameter stays
    rec = m.settings_["threshold_tuned_on"]
    assert rec["before"] == 0.3 and rec["source"] == "dev.jsonl" and rec["f"] == want[3]
    assert rec["curve"] == [list(r) for r in curve]
    assert m.decode(DEV) == m.decode(DEV, threshold=t)
    m.tune_threshold(DEV, thresholds=[-5.0, 5.0])                   # again: before kept
    assert m.settings_["threshold_tuned_on"]["before"] == 0.3
    assert m.settings_["threshold_tuned_on"]["at_edge"]
    path = tmp_path / "m.npz"
    m.save(path)
    back = SegmentModel.load(path)
    assert back.threshold_ == m.threshold_ and back.threshold == 0.3   # as fitted
    assert back.settings_["threshold_tuned_on"] == json.loads(json.dumps(
        m.settings_["threshold_tuned_on"]))
    back.set_params(max_iter=1).fit(TRAIN)                          # new weights: undone
    assert back.threshold_ == 0.3 and "threshold_tuned_on" not in back.settings_


def test_tuning_errors_name_the_problem():
    m = random_model(0)
    with pytest.raises(InputError, match="got none"):
        m.tune_threshold([])
    with pytest.raises(InputError, match="nosegs.*needs gold segments"):
        m.tune_threshold([SegSentence(["a", "b"], None, source="nosegs:1")])
    for bad in ([], [float("nan")], [True], ["0.1"], 0.5, "0.1", None):
        with pytest.raises(InputError, match="thresholds must be"):
            m.tune_threshold(DEV, thresholds=bad)
    with pytest.raises(InputError, match="empty threshold curve"):
        decisions.best_threshold([])


@pytest.fixture
def genia(tmp_path, corpus):
    for name, n in (("train.jsonl", 120), ("dev.jsonl", 40)):
        lines = open(corpus("genia", name), encoding="utf-8").read().splitlines()
        (tmp_path / name).write_text("\n".join(lines[:n]) + "\n")
    return tmp_path


def test_cli_threshold_dev_is_the_apis_choice(genia, capsys):
    model, dev = str(genia / "m.npz"), str(genia / "dev.jsonl")
    args = ["segment", "train", "--train", str(genia / "train.jsonl"), "--epochs", "2",
            "-o", model, "--quiet"]
    assert main(args + ["--threshold", "dev"]) == 2
    err = capsys.readouterr().err
    assert "--threshold dev" in err and "--dev FILE" in err
    assert main(args + ["--threshold", "dev", "--dev", dev]) == 0
    out = capsys.readouterr().out
    m = load_model(model)
    tuned = m.settings_["threshold_tuned_on"]
    assert f"threshold on {dev}: {m.threshold_:+.1f}" in out
    again = load_model(model)
    assert again.threshold == tuned["before"]                 # the hyper-parameter, as fitted
    again.threshold_ = tuned["before"]
    assert again.tune_threshold(read_jsonl(dev)) == m.threshold_
    assert tuned["before"] == 0.0 and tuned["sentences"] == 40
    assert main(args + ["--threshold", "0.4"]) == 0
    assert load_model(model).threshold_ == load_model(model).threshold == 0.4
    for bad in ("abc", "nan", "inf"):
        with pytest.raises(SystemExit):
            main(args + ["--threshold", bad])


def test_cli_decode_threshold_is_the_apis_decode(genia, capsys):
    model, dev = str(genia / "m.npz"), str(genia / "dev.jsonl")
    assert main(["segment", "train", "--train", str(genia / "train.jsonl"), "--dev", dev,
                 "--epochs", "2", "-o", model, "--quiet"]) == 0
    m = load_model(model)
    sentences = read_jsonl(dev)
    for t in ("-0.6", "0.5"):
        capsys.readouterr()
        assert main(["segment", "decode", "--model", model, "--input", dev,
                     "--threshold", t]) == 0
        got = [{Segment(g["type"], tuple(g["positions"])) for g in json.loads(x)["segments"]}
               for x in capsys.readouterr().out.splitlines()]
        assert got == [set(p) for p in m.decode(sentences, threshold=float(t))]
        assert len({frozenset(g) for g in got}) > 1           # not every sentence empty
    assert main(["segment", "decode", "--model", model, "--input", dev, "--decoder", "meu",
                 "--threshold", "0.5"]) == 2
    assert "decoder meu reads no --threshold" in capsys.readouterr().err
