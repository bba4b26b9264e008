"""Segment sets (issue 19): exact MEU over independent segment decisions against brute
force over every subset and every gold realisation; Platt calibration against scipy;
the segment scorer against direct set arithmetic; the JSONL and CoNLL readers."""

import io
import itertools
import json

import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

from fstchunk.core.errors import InputError
from fstchunk.decoding import segments as meu
from fstchunk.io.segments import (Segment, read_conll_segments, read_jsonl, segments_to_tags,
                                  write_jsonl)
from fstchunk.evaluation.segments import hard_segments, score_segments
from oracles import f_standard


def brute_expected_f(p, chosen, beta):
    """E[F_β(chosen)] (standard β) by enumerating every gold realisation."""
    total = 0.0
    for z in itertools.product((0, 1), repeat=len(p)):
        w = np.prod([q if b else 1 - q for q, b in zip(p, z)])
        tp = sum(z[i] for i in chosen)
        total += w * f_standard(tp, len(chosen), sum(z), beta)
    return total


def brute_meu(p, beta):
    best = -1.0
    for r in range(len(p) + 1):
        for s in itertools.combinations(range(len(p)), r):
            best = max(best, brute_expected_f(p, s, beta))
    return best


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, 0.5, 0.01, 0.99]) | st.floats(0, 1),
                min_size=0, max_size=8),
       st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]))
def test_meu_set_is_the_best_of_every_subset(p, beta):
    chosen, value = meu.meu_set(p, beta)
    assert value == pytest.approx(brute_meu(p, beta), abs=1e-12)
    assert value == pytest.approx(brute_expected_f(p, chosen, beta), abs=1e-12)
    order, U = meu.expected_f_by_size(p, beta)
    for k in range(len(p) + 1):
        assert U[k] == pytest.approx(brute_expected_f(p, list(order[:k]), beta), abs=1e-12)


def test_expected_f_of_any_set_and_twelve_candidates():
    rng = np.random.default_rng(3)
    p = rng.uniform(size=12) ** 2
    for _ in range(5):
        s = list(np.flatnonzero(rng.uniform(size=12) < 0.4))
        assert meu.expected_f(p, s, 1.0) == pytest.approx(brute_expected_f(p, s, 1.0), abs=1e-12)
    chosen, value = meu.meu_set(p, 1.0)      # every one of the 4096 subsets, by expected_f
    best = max(meu.expected_f(p, s, 1.0) for r in range(13)
               for s in itertools.combinations(range(12), r))
    assert value == pytest.approx(best, abs=1e-12)


def test_meu_against_the_zero_threshold_on_uncertain_candidates():
    """A set the 0.5 threshold leaves empty can have a better expected F (and vice versa)."""
    p = [0.45, 0.45, 0.45]
    chosen, value = meu.meu_set(p)
    assert chosen and value > meu.expected_f(p, [], 1.0)


def test_probability_and_beta_errors():
    for bad in ([1.5], [np.nan], [[0.1]]):
        with pytest.raises(InputError, match="in \\[0, 1\\]"):
            meu.meu_set(bad)
    for bad in (-1.0, float("nan"), float("inf"), True, "2"):
        with pytest.raises(InputError, match="beta must be a finite number >= 0"):
            meu.meu_set([0.5], beta=bad)
    # β = 0 (F_0 = precision, 0/0 := 1 for the empty set) is accepted, as everywhere
    assert meu.meu_set([0.5, 0.9], beta=0) == ([], 1.0)


def test_platt_fit_is_the_logistic_maximum_likelihood():
    rng = np.random.default_rng(0)
    s = rng.normal(size=300) * 3
    y = rng.uniform(size=300) < 1 / (1 + np.exp(-(0.7 * s - 0.4)))
    a, b = meu.platt_fit(s, y)

    def nll(w):
        z = w[0] * s + w[1]
        return np.sum(np.logaddexp(0, z) - y * z)

    ref = scipy.optimize.minimize(nll, [0.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x
    assert (a, b) == pytest.approx(tuple(ref), abs=1e-5)
    assert meu.calibrated([0.0], a, b)[0] == pytest.approx(1 / (1 + np.exp(-b)))
    with pytest.raises(InputError, match="both kinds"):
        meu.platt_fit([1.0, 2.0], [True, True])


# ----------------------------------------------------------------------- scoring
def seg(t, *pos):
    return Segment(t, tuple(pos))


def test_scorer_equals_set_arithmetic():
    gold = [[seg("DNA", 0, 1), seg("protein", 1), seg("DNA", 3, 5)], [seg("RNA", 2)], []]
    pred = [[seg("DNA", 0, 1), seg("DNA", 1), seg("DNA", 3, 5), seg("DNA", 3, 5)],
            [], [seg("RNA", 0)]]
    r = score_segments(gold, pred, beta=2.0)
    tp, h, g = 2, 4, 4            # duplicates count once
    assert (r.overall.tp, r.overall.pred, r.overall.gold) == (tp, h, g)
    assert r.overall.f(2.0) == pytest.approx(100 * f_standard(tp, h, g, 2.0))
    assert (r.by_type["DNA"].tp, r.by_type["DNA"].pred, r.by_type["DNA"].gold) == (2, 3, 2)
    # hard gold: DNA(0,1) and protein(1) overlap; DNA(3,5) is non-contiguous
    assert hard_segments(gold[0]) == set(gold[0])
    assert (r.hard.tp, r.hard.gold) == (2, 3)
    # hard predictions: DNA(0,1) & DNA(1) overlap, DNA(3,5) non-contiguous; correct: 2
    assert (r.hard.tp_pred, r.hard.pred) == (2, 3)
    json.dumps(r.to_json())
    assert "overlapping/non-contiguous" in r.text()
    with pytest.raises(InputError, match="2 gold sentences but 1"):
        score_segments(gold[:2], pred[:1])


# ----------------------------------------------------------------------- files
def test_jsonl_round_trip_and_errors(tmp_path):
    src = tmp_path / "a.jsonl"
    rec = {"id": "s1", "doc_id": "d", "tokens": ["a", "b", "c"],
           "segments": [{"type": "DNA", "positions": [0, 2]}], "extra": 1}
    src.write_text(json.dumps(rec) + "\n\n" + json.dumps({**rec, "id": "s2"}) + "\n")
    ss = read_jsonl(str(src))
    assert [s.segments for s in ss] == [[seg("DNA", 0, 2)]] * 2 and ss[1].source.endswith(":3")
    out = io.StringIO()
    write_jsonl(ss, [[seg("RNA", 1)], []], out)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert lines[0] == {**rec, "segments": [{"type": "RNA", "positions": [1]}]}
    assert lines[1]["id"] == "s2" and lines[1]["segments"] == []
    for bad, msg in ((["x"], "not a JSON object"),
                     ({"tokens": []}, "'tokens' must be"),
                     ({"tokens": ["a"], "segments": [{"type": "X", "positions": [1]}]},
                      "outside the sentence"),
                     ({"tokens": ["a", "b"], "segments": [{"type": "X", "positions": [1, 0]}]},
                      "increasing and distinct"),
                     ({"tokens": ["a"], "segments": [{"type": "", "positions": [0]}]},
                      "non-empty string"),
                     ({"tokens": ["a"]}, "'segments' must be a list")):
        src.write_text(json.dumps(bad) + "\n")
        with pytest.raises(InputError, match=msg) as e:
            read_jsonl(str(src))
        assert f"{src}:1" in str(e.value)
    src.write_text(json.dumps({"tokens": ["a"]}) + "\n")
    assert read_jsonl(str(src), gold=False)[0].segments is None


def test_conll_segments_and_tags(tmp_path):
    f = tmp_path / "c.txt"
    f.write_text("He PRP B-NP\nsaw VBD B-VP\nthe DT B-NP\ncat NN I-NP\n\n")
    (s,) = read_conll_segments(str(f))
    assert s.segments == [seg("NP", 0), seg("VP", 1), seg("NP", 2, 3)] and s.pos[0] == "PRP"
    assert segments_to_tags(s.segments, 4, "x") == ["B-NP", "B-VP", "B-NP", "I-NP"]
    with pytest.raises(InputError, match="not contiguous"):
        segments_to_tags([seg("NP", 0, 2)], 4, "here")
    with pytest.raises(InputError, match="overlaps another"):
        segments_to_tags([seg("NP", 0, 1), seg("VP", 1)], 4, "here")


def test_genia_reads(corpus):
    ss = read_jsonl(corpus("genia", "dev.jsonl"))
    assert len(ss) == 1765
    segs = [g for s in ss for g in s.segments]
    hard = sum(len(hard_segments(s.segments)) for s in ss)
    assert any(not g.contiguous for g in segs) and 0.1 < hard / len(segs) < 0.4


def test_cli_segment_eval(capsys, tmp_path):
    from fstchunk.cli import main
    gold, pred = tmp_path / "g.jsonl", tmp_path / "p.jsonl"
    toks = ["a", "b", "c", "d"]
    gold.write_text(json.dumps({"tokens": toks, "segments": [
        {"type": "DNA", "positions": [0, 2]}, {"type": "DNA", "positions": [2]}]}) + "\n")
    pred.write_text(json.dumps({"tokens": toks, "segments": [
        {"type": "DNA", "positions": [0, 2]}, {"type": "RNA", "positions": [3]}]}) + "\n")
    assert main(["segment", "eval", str(gold), str(pred), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["overall"]["tp"] == 1 and r["overall"]["f"] == pytest.approx(50.0)
    assert r["overlapping_or_noncontiguous"]["gold"] == 2
    assert r["types"]["RNA"]["predicted"] == 1
    pred.write_text(json.dumps({"tokens": ["x"] * 4, "segments": []}) + "\n")
    assert main(["segment", "eval", str(gold), str(pred)]) == 2
    assert "tokens differ" in capsys.readouterr().err
