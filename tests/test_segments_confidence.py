"""``fstchunk segment decode``: each predicted segment's calibrated probability ("p") in
JSONL output, ``--min-confidence`` on JSONL and CoNLL, and what an uncalibrated model
does (no p, the threshold refused)."""

import json

import numpy as np
import pytest

from fstchunk.cli import main
from fstchunk.decoding.segments import calibrated
from fstchunk.io.segments import Segment, read_jsonl
from fstchunk.models import load_model


@pytest.fixture(scope="module")
def seg(tmp_path_factory, corpus):
    d = tmp_path_factory.mktemp("seg")
    lines = open(corpus("genia", "train.jsonl"), encoding="utf-8").read().splitlines()
    (d / "train.jsonl").write_text("\n".join(lines[:100]) + "\n")
    dev = open(corpus("genia", "dev.jsonl"), encoding="utf-8").read().splitlines()
    (d / "dev.jsonl").write_text("\n".join(dev[:30]) + "\n")
    for name, extra in (("cal.npz", ["--dev", str(d / "dev.jsonl")]), ("raw.npz", [])):
        assert main(["segment", "train", "--train", str(d / "train.jsonl"), *extra,
                     "--epochs", "2", "--quiet", "-o", str(d / name)]) == 0
    return d


def decode(capsys, *argv):
    code = main(["segment", "decode", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("decoder", ["threshold", "meu"])
def test_jsonl_segments_carry_platt_probabilities(seg, capsys, decoder):
    code, out, err = decode(capsys, "--model", seg / "cal.npz", "--input", seg / "dev.jsonl",
                            "--decoder", decoder)
    assert code == 0, err
    model = load_model(str(seg / "cal.npz"))
    a, b = model.platt()
    sents = read_jsonl(str(seg / "dev.jsonl"), gold=False)
    rows = [json.loads(x) for x in out.splitlines()]
    assert sum(len(r["segments"]) for r in rows) > 0
    for r, s in zip(rows, sents):
        cands = {(model.types_[t], pos): score for score, t, pos in model.candidates(s)}
        for g in r["segments"]:
            score = cands[(g["type"], tuple(g["positions"]))]
            assert g["p"] == pytest.approx(float(calibrated([score], a, b)[0]), rel=1e-12)
    want = model.decode(sents, decoder=decoder)
    assert [{(g["type"], tuple(g["positions"])) for g in r["segments"]} for r in rows] == \
        [{(g.type, g.positions) for g in w} for w in want]


def test_min_confidence_monotone_on_jsonl_and_conll(seg, capsys, tmp_path):
    prev = None
    for least in (0.0, 0.2, 0.5, 0.8):
        code, out, err = decode(capsys, "--model", seg / "cal.npz", "--input",
                                seg / "dev.jsonl", "--min-confidence", least)
        assert code == 0, err
        rows = [{(g["type"], tuple(g["positions"]), g["p"]) for g in json.loads(x)["segments"]}
                for x in out.splitlines()]
        assert all(p >= least for r in rows for _, _, p in r)
        if prev is not None:
            assert all(r <= q for r, q in zip(rows, prev))
        prev = rows
    # CoNLL output: the kept segments' tags (a conlleval-readable IOB2 column)
    conll = tmp_path / "in.txt"                 # the dev sentences' tokens as a column
    conll.write_text("".join("".join(t + "\n" for t in s.tokens) + "\n" for s in
                             read_jsonl(str(seg / "dev.jsonl"), gold=False)), encoding="utf-8")
    counts = []
    for least in (0.0, 0.5, 0.9):
        code, out, err = decode(capsys, "--model", seg / "cal.npz", "--input", conll,
                                "--min-confidence", least)
        assert code == 0, err
        counts.append(sum(line.split()[-1].startswith("B-") for line in out.splitlines()
                          if line.strip()))
    assert counts[0] >= counts[1] >= counts[2] and counts[0] > counts[2], counts


def test_uncalibrated_model_writes_no_p_and_refuses_the_threshold(seg, capsys):
    code, out, err = decode(capsys, "--model", seg / "raw.npz", "--input", seg / "dev.jsonl")
    assert code == 0, err
    segs = [g for x in out.splitlines() for g in json.loads(x)["segments"]]
    assert segs and all("p" not in g for g in segs)
    code, out, err = decode(capsys, "--model", seg / "raw.npz", "--input", seg / "dev.jsonl",
                            "--min-confidence", "0.5")
    assert code == 2 and out == "" and "has no calibration" in err
    code, out, err = decode(capsys, "--model", seg / "cal.npz", "--input", seg / "dev.jsonl",
                            "--min-confidence", "-1")
    assert code == 2 and "--min-confidence must be a probability" in err


def test_decode_scored_equals_decode(seg):
    model = load_model(str(seg / "cal.npz"))
    sents = read_jsonl(str(seg / "dev.jsonl"), gold=False)
    for decoder in ("threshold", "meu"):
        scored = model.decode_scored(sents, decoder=decoder)
        assert [[g for g, _ in row] for row in scored] == model.decode(sents, decoder=decoder)
        assert all(isinstance(g, Segment) and 0 < p < 1 for row in scored for g, p in row)
    raw = load_model(str(seg / "raw.npz"))
    assert not raw.calibrated and model.calibrated
    assert all(p is None for row in raw.decode_scored(sents) for _, p in row)
    np.testing.assert_equal(len(raw.decode(sents)), len(sents))
