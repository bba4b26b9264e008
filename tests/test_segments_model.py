"""The segment model (McDonald, Crammer & Pereira 2005): hashed features, scores,
Hildreth's QP solver, the online learner, model files.

The k best segments come from a brute-force enumeration here (all position subsets,
n <= 6), so these tests do not depend on :func:`fstchunk.structures.segments.kbest`.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.optimize

import fstchunk.models.segment.model as model_mod
import fstchunk.models.segment.train as train_mod
from fstchunk.core.errors import InputError, ModelFileError
from fstchunk.models import load_model
from fstchunk.models.io import load_model_file, save_model
from fstchunk.io.segments import Segment, SegSentence
from fstchunk.models.segment.features import allowed_arcs, members, sentence_features, token_ids
from fstchunk.models.segment.model import SegmentModel
from fstchunk.models.segment.train import OnlineLearner, hildreth


def brute_kbest(arc_scores, k, max_gap=None):
    """Every segment of every type scored by summing its steps, best first."""
    T, n = arc_scores.shape[0], arc_scores.shape[1] - 2
    out = []
    for t in range(T):
        for m in range(1, n + 1):
            for pos in itertools.combinations(range(n), m):
                if max_gap is not None and any(b - a - 1 > max_gap for a, b in zip(pos, pos[1:])):
                    continue
                idx = members(n, pos)
                s = float(sum(arc_scores[t, j, i] for j, i in zip(idx, idx[1:])))
                if s > -np.inf:
                    out.append((s, t, pos))
    out.sort(key=lambda x: (-x[0], x[1], tuple(reversed(x[2]))))
    return out[:k]


@pytest.fixture
def brute(monkeypatch):
    monkeypatch.setattr(model_mod, "kbest", brute_kbest)
    monkeypatch.setattr(train_mod, "kbest", brute_kbest)


def sent(text: str, segs=(), pos=None) -> SegSentence:
    return SegSentence(text.split(), [Segment(t, tuple(p)) for t, p in segs], pos=pos)


# Figure 2/3-like data: overlapping and non-contiguous segments
TRAIN = [
    sent("Bill and Hilary Clinton traveled", [("PER", (0, 3)), ("PER", (2, 3))]),
    sent("Bill Clinton met Gates", [("PER", (0, 1)), ("PER", (3,))]),
    sent("P450 18 / 19 hydroxylase", [("ENZ", (0, 1, 4)), ("ENZ", (0, 3, 4))]),
    sent("the P450 11 hydroxylase was", [("ENZ", (1, 2, 3))]),
    sent("Hilary and Bill Gates spoke", [("PER", (0, 3)), ("PER", (2, 3))]),
]


# ---------------------------------------------------------------- Hildreth
@pytest.mark.parametrize("seed", range(5))
def test_hildreth_solves_the_qp(seed):
    rng = np.random.default_rng(seed)
    C, d = 6, 8
    A = rng.normal(size=(C, d))
    r = rng.normal(size=C) + 0.5
    alpha = hildreth(A @ A.T, r)
    delta = alpha @ A
    # KKT: α >= 0, feasibility, complementary slackness (stationarity: Δ = Aᵀα)
    assert (alpha >= 0).all()
    slack = A @ delta - r
    assert slack.min() > -1e-7
    assert np.abs(alpha * slack).max() < 1e-7
    ref = scipy.optimize.minimize(
        lambda x: 0.5 * x @ x, np.zeros(d), jac=lambda x: x, method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda x: A @ x - r, "jac": lambda x: A}],
        options={"ftol": 1e-14, "maxiter": 500})
    assert ref.success
    np.testing.assert_allclose(delta, ref.x, atol=1e-6)


def test_hildreth_degenerate_constraints():
    """Repeated and parallel constraints (a singular Gram matrix) and one already met."""
    A = np.array([[1.0, 0.0, 1.0], [1.0, 0.0, 1.0], [2.0, 0.0, 2.0], [0.0, 1.0, 0.0],
                  [0.0, -1.0, 1.0]])
    r = np.array([1.0, 1.0, 1.5, -2.0, 1.0])
    delta = hildreth(A @ A.T, r) @ A
    ref = scipy.optimize.minimize(
        lambda x: 0.5 * x @ x, np.zeros(3), jac=lambda x: x, method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda x: A @ x - r, "jac": lambda x: A}],
        options={"ftol": 1e-14, "maxiter": 500})
    np.testing.assert_allclose(delta, ref.x, atol=1e-6)
    assert (A @ delta - r).min() > -1e-7


def test_hildreth_no_violation_no_change():
    assert not hildreth(np.eye(3), np.array([-1.0, 0.0, -2.0])).any()


# ---------------------------------------------------------------- features
def test_allowed_arcs():
    J, I = allowed_arcs(4, 1)
    steps = set(zip(J.tolist(), I.tolist()))
    assert (0, 5) not in steps                      # the empty segment
    assert {(0, 4), (1, 5), (1, 3)} <= steps        # boundary steps are free
    assert (1, 4) not in steps                      # skips 2 tokens > max_gap
    assert len(steps) == 4 + 4 + 3 + 2


def test_segment_score_equals_w_dot_features():
    rng = np.random.default_rng(1)
    m = SegmentModel(D=2 ** 12, max_gap=1)._fitted(["PER", "ENZ"], pos=True)
    m.W_ = rng.normal(size=m.W_.shape)
    s = sent("Bill and Hilary Clinton traveled today", pos="NNP CC NNP NNP VBD NN".split())
    a = m.arc_scores(s)
    for seg in [Segment("PER", (0, 3)), Segment("PER", (2, 3)), Segment("ENZ", (5,)),
                Segment("ENZ", (0, 1, 2, 3, 4, 5))]:
        t = m.type_index_[seg.type]
        idx = members(len(s), seg.positions)
        via_arcs = sum(a[t, j, i] for j, i in zip(idx, idx[1:]))
        f = m.segment_features(s, seg)
        assert f.shape == (1, m.D)
        via_w = float((f @ m.W_[:, t])[0])
        if np.isfinite(via_arcs):
            assert via_w == pytest.approx(via_arcs, rel=1e-12, abs=1e-12)
        else:                                       # (0, 3) skips 2 tokens > max_gap
            assert seg.positions == (0, 3) and np.isfinite(via_w)
    assert a[:, 0, len(s) + 1].max() == -np.inf


def test_features_of_states_and_skips():
    sf = sentence_features("a b c d".split(), None, 2 ** 16, None)
    nnz = np.diff(sf.F.indptr)
    row = sf.index
    # a skip over 2 tokens has the same templates as a next step plus distance and 2 words
    assert nnz[row[1, 4]] == nnz[row[1, 2]] + 1 + 2
    assert nnz[row[2, 4]] == nnz[row[1, 2]] + 1 + 1
    with_pos = sentence_features("a b c d".split(), list("NVNV"), 2 ** 16, None)
    assert np.diff(with_pos.F.indptr)[row[1, 4]] == nnz[row[1, 4]] + 2 + 2


def test_feature_hashing_is_stable_across_processes():
    tokens, pos = ["IL-2", "gene", "expression", "and", "NF-kappa", "B"], list("NNNCNN")
    here = sentence_features(tokens, pos, 2 ** 20, 2).F
    code = ("import json; from fstchunk.models.segment.features import sentence_features as f; "
            f"F = f({tokens!r}, {pos!r}, 2 ** 20, 2).F; "
            "print(json.dumps([F.indptr.tolist(), F.indices.tolist(), F.data.tolist()]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONHASHSEED": "12345"})
    indptr, indices, data = json.loads(out.stdout)
    assert indptr == here.indptr.tolist() and indices == here.indices.tolist()
    assert data == here.data.tolist()
    # pinned: the ids must not change with the platform or the numpy version
    assert token_ids(["x"], None).tolist()[1][0] == 2596869751    # crc32(b"w=x")
    assert sentence_features(["x"], None, 2 ** 20).F[0].indices[:5].tolist() == [
        15565, 84575, 132802, 144232, 261688]


# ---------------------------------------------------------------- learning
def f_score(model, sentences):
    pred = model.decode(sentences)
    gold = [set(s.segments) for s in sentences]
    tp = sum(len(g & set(p)) for g, p in zip(gold, pred))
    npred, ngold = sum(map(len, pred)), sum(map(len, gold))
    return 200.0 * tp / (npred + ngold)


@pytest.mark.parametrize("average", [True, False])
def test_training_fits_overlapping_and_noncontiguous_segments(brute, average):
    m = SegmentModel(D=2 ** 14, average=average, max_iter=6).fit(TRAIN, dev=TRAIN)
    assert m.types_ == ["PER", "ENZ"] and m.max_gap_ == 2
    assert f_score(m, TRAIN) == 100.0
    hist = m.settings_["history"]
    assert len(hist) == 6 and hist[-1]["dev_f_last"] == 100.0
    assert ("dev_f_average" in hist[-1]) == average


def test_update_satisfies_its_constraints(brute):
    m = SegmentModel(D=2 ** 14, max_gap=2)._fitted(["PER", "ENZ"])
    learner = OnlineLearner(m)
    s = TRAIN[0]
    top = m.candidates(s, k=len(s))                # before the update: all scores 0
    assert learner.step(s) > 0
    assert not m.W_.any()                           # the learner has its own W
    a = m.arc_scores(s, W=learner.W)
    for score, t, pos in top:
        idx = members(len(s), pos)
        new = sum(a[t, j, i] for j, i in zip(idx, idx[1:]))
        if Segment(m.types_[t], pos) in s.segments:
            assert new >= 1 - 1e-7
        else:
            assert new <= -1 + 1e-7
    assert learner.step(s) >= 0                    # stays finite, no error


def test_averaging_trick_equals_mean_of_weights(brute):
    m = SegmentModel(D=2 ** 12, max_gap=2)._fitted(["PER", "ENZ"])
    learner = OnlineLearner(m)
    seen = []
    for s in TRAIN * 2:
        learner.step(s)
        seen.append(learner.W.copy())
    np.testing.assert_allclose(learner.averaged(), np.mean(seen, axis=0), atol=1e-12)


@pytest.mark.parametrize("which", ["brute", "space"])
def test_training_with_restrictions_and_decoding_options(monkeypatch, which):
    if which == "brute":
        monkeypatch.setattr(model_mod, "kbest", brute_kbest)
        monkeypatch.setattr(train_mod, "kbest", brute_kbest)
    m = SegmentModel(D=2 ** 12, restrictions="no-overlap", max_iter=4).fit(TRAIN[1:4])
    assert m.restrictions_["no_overlap"] and not m.pos_
    for segs in m.decode(TRAIN):
        used = [p for g in segs for p in g.positions]
        assert len(used) == len(set(used))
    free = m.decode(TRAIN, restrictions="", threshold=-np.inf)
    assert [len(p) for p in free] == [len(s) for s in TRAIN]      # the top k = n
    assert m.decode(TRAIN, threshold=1e9) == [[] for _ in TRAIN]
    cands = m.candidates(TRAIN[0], k=3)
    assert len(cands) == 3 and cands[0][0] >= cands[1][0] >= cands[2][0]


def test_pos_is_read_only_by_a_model_trained_with_it(brute):
    tagged = [sent(" ".join(s.tokens), [(g.type, g.positions) for g in s.segments],
                   pos=["X"] * len(s)) for s in TRAIN]
    m = SegmentModel(D=2 ** 10, max_iter=1).fit(tagged)
    assert m.pos_
    with pytest.raises(InputError, match="reads POS tags, the sentence has none \\(a CoNLL file "
                                         "gives them in the second of three or more"):
        m.decode(TRAIN[:1])
    plain = SegmentModel(D=2 ** 10, max_iter=1).fit(TRAIN)
    assert plain.decode(tagged) == plain.decode(TRAIN)


def test_training_input_errors():
    with pytest.raises(InputError, match="needs gold segments"):
        SegmentModel().fit([SegSentence(["a"], None)])
    with pytest.raises(InputError, match="no segment"):
        SegmentModel().fit([sent("a b")])
    with pytest.raises(InputError, match="no training sentences"):
        SegmentModel().fit([])
    with pytest.raises(InputError, match="max_gap"):
        SegmentModel(max_gap=-1).fit(TRAIN)


# ---------------------------------------------------------------- files
def test_save_load_round_trip(tmp_path, brute):
    m = SegmentModel(D=2 ** 10, restrictions="no-embedding", seed=4, max_iter=2).fit(TRAIN)
    path = tmp_path / "seg.npz"
    m.save(path)
    back = load_model(path)
    assert isinstance(back, SegmentModel)
    np.testing.assert_array_equal(back.W_, m.W_)
    assert (back.types_, back.D, back.max_gap_, back.k, back.threshold_) == \
        (m.types_, m.D, m.max_gap_, m.k, m.threshold_)
    assert back.restrictions_ == m.restrictions_ and back.restrictions_["no_embedding"]
    assert back.max_gap == m.max_gap_ and back.max_iter == 2      # as fitted
    assert back.settings_["history"] == m.settings_["history"]
    assert (back.seed, back.average, back.max_sweeps) == (4, True, 1000)
    assert back.decode(TRAIN) == m.decode(TRAIN)


def _rewrite(src, dst, arrays=None, **meta):
    old, arr = load_model_file(src, "segment")
    keep = {k: v for k, v in old.items() if k not in ("format", "version", "kind", "checksum")}
    keep.update(meta)
    arr.update(arrays or {})
    save_model(dst, "segment", arr, keep)


@pytest.mark.parametrize("change, field", [
    ({"arrays": {"W": np.zeros((7, 2))}}, "W"),
    ({"arrays": {"W": np.full((2 ** 10, 2), np.nan)}}, "W"),
    ({"D": -3}, "D"),
    ({"max_gap": "two"}, "max_gap"),
    ({"types": ["PER", "PER"]}, "types"),
    ({"features": "other-v9"}, "features"),
    ({"restrictions": {"nested": True}}, "restrictions"),
    ({"k": 0}, "k"),
    ({"pos": "yes"}, "pos"),
    ({"threshold": None}, "threshold"),
])
def test_corrupt_field_is_named(tmp_path, change, field):
    m = SegmentModel(D=2 ** 10, max_gap=None)._fitted(["PER", "ENZ"])
    m.save(tmp_path / "ok.npz")
    _rewrite(tmp_path / "ok.npz", tmp_path / "bad.npz", **change)
    with pytest.raises(ModelFileError, match=f"field '{field}'"):
        load_model(tmp_path / "bad.npz")
