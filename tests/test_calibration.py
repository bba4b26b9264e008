"""fstchunk.evaluation.reliability: reliability tables, ECE and MCE against a hand computation and a
brute-force loop, perfectly calibrated and over-confident synthetic sources, the bootstrap
against a direct resampling loop, and the errors for what is not a probability."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.evaluation.reliability import bootstrap, reliability
from fstchunk.core.errors import InputError


def brute(p, c, bins):
    """ECE and MCE by the definition, one bin at a time."""
    p, c = np.asarray(p, float), np.asarray(c, float)
    ece, mce = 0.0, 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = (p >= lo) & ((p < hi) if b < bins - 1 else (p <= hi))
        if inside.any():
            gap = abs(c[inside].mean() - p[inside].mean())
            ece += inside.sum() / len(p) * gap
            mce = max(mce, gap)
    return ece, mce


def test_hand_computed_table():
    r = reliability([0.05, 0.15, 0.15, 0.95, 1.0], [0, 1, 0, 1, 1], bins=10)
    assert r.count.tolist() == [1, 2, 0, 0, 0, 0, 0, 0, 0, 2] and r.n == 5
    assert r.confidence[0] == pytest.approx(0.05) and r.accuracy[0] == 0
    assert r.confidence[1] == pytest.approx(0.15) and r.accuracy[1] == 0.5
    assert r.confidence[9] == pytest.approx(0.975) and r.accuracy[9] == 1
    assert np.isnan(r.confidence[2]) and np.isnan(r.accuracy[5])
    # (1·0.05 + 2·0.35 + 2·0.025) / 5 and the largest gap
    assert r.ece == pytest.approx(0.16) and r.mce == pytest.approx(0.35)
    assert r.edges.tolist() == pytest.approx([b / 10 for b in range(11)])


def test_bin_edges():
    r = reliability([0.0, 0.1, 0.2, 0.999999, 1.0], [0, 0, 0, 1, 1], bins=10)
    assert r.count.tolist() == [1, 1, 1, 0, 0, 0, 0, 0, 0, 2]
    assert reliability([0.5, 0.5], [1, 0], bins=2).count.tolist() == [0, 2]
    assert reliability([1.0 + 1e-12, -1e-12], [1, 0]).ece == pytest.approx(0.0)  # rounding


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=60),
       st.integers(1, 15))
def test_against_the_definition(pairs, bins):
    p, c = zip(*pairs)
    r = reliability(p, c, bins)
    ece, mce = brute(p, c, bins)
    assert r.ece == pytest.approx(ece, abs=1e-12) and r.mce == pytest.approx(mce, abs=1e-12)
    assert 0 <= r.ece <= r.mce <= 1 and r.n == len(p)
    one = reliability(p, c, 1)                 # one bin: |mean outcome − mean confidence|
    assert one.ece == pytest.approx(abs(np.mean(c) - np.mean(p)), abs=1e-12)


def test_synthetic_sources():
    rng = np.random.default_rng(3)
    p = rng.random(200_000)
    calibrated = reliability(p, rng.random(p.size) < p)          # Pr(c | p) = p
    assert calibrated.ece < 0.01
    over = reliability(p, rng.random(p.size) < p ** 2)           # acc p² < conf p
    assert over.ece == pytest.approx(1 / 6, abs=0.01)            # E[p − p²] = 1/2 − 1/3
    assert (over.confidence > over.accuracy).all()
    under = reliability(p ** 2, rng.random(p.size) < p)          # acc p > conf p²
    assert (under.accuracy > under.confidence).all() and under.ece > 0.1


def test_bootstrap_against_a_resampling_loop():
    rng = np.random.default_rng(5)
    groups = []
    for _ in range(40):
        k = int(rng.integers(0, 6))             # sentences with no chunk count too
        p = rng.random(k)
        groups.append((p, rng.random(k) < p ** 2))
    se_ece, se_mce = bootstrap(groups, bins=10, resamples=200, seed=11)
    draw = np.random.default_rng(11)
    eces, mces = [], []
    for _ in range(200):
        pick = draw.integers(0, len(groups), len(groups))
        p = np.concatenate([groups[i][0] for i in pick])
        c = np.concatenate([groups[i][1] for i in pick])
        ece, mce = brute(p, c, 10) if p.size else (0.0, 0.0)
        eces.append(ece), mces.append(mce)
    assert se_ece == pytest.approx(np.std(eces, ddof=1), rel=1e-9)
    assert se_mce == pytest.approx(np.std(mces, ddof=1), rel=1e-9)
    same = [([0.3, 0.9], [0, 1])] * 10           # every resample is the same set
    assert bootstrap(same, resamples=50) == pytest.approx((0.0, 0.0), abs=1e-12)


@pytest.mark.parametrize("p,c,message", [
    ([0.5, 0.2], [1], "2 confidences but 1 outcomes"),
    ([0.5, 1.5], [1, 0], "confidence 1 is 1.5"),
    ([float("nan")], [1], "confidence 0 is nan"),
    ([0.5], [2], "outcome 0 is 2.0"),
    ([], [], "no confidences"),
])
def test_refuses_what_is_not_a_probability(p, c, message):
    with pytest.raises(InputError, match=message):
        reliability(p, c)


def test_refuses_bad_settings():
    with pytest.raises(InputError, match="bins must be"):
        reliability([0.5], [1], bins=0)
    with pytest.raises(InputError, match="group 1: confidence 0 is -0.5"):
        bootstrap([([0.5], [1]), ([-0.5], [0])])
    with pytest.raises(InputError, match="resamples"):
        bootstrap([([0.5], [1])], resamples=1)


def test_howto_snippet_runs(capsys):
    """The Python of docs/howto/calibration.md runs as shown."""
    page = Path(__file__).resolve().parents[1] / "docs" / "howto" / "calibration.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert blocks
    for block in blocks:
        scope: dict = {}
        exec(compile(block, str(page), "exec"), scope)
        assert 0 <= scope["table"].ece <= scope["table"].mce and scope["se_ece"] > 0
