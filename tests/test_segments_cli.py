"""``fstchunk segment train|decode|eval`` (issue 19) on small slices: JSONL in, JSONL
out with the input's keys kept; CoNLL in, the input's lines plus a predicted column
out; the MEU decoder needs the calibration that ``train --dev`` fits; the errors."""

import json

import pytest

from fstchunk.cli import main
from fstchunk.io.conll import read_conll, write_conll
from fstchunk.io.segments import read_jsonl
from fstchunk.models import load_model


@pytest.fixture
def genia(tmp_path, corpus):
    lines = open(corpus("genia", "train.jsonl"), encoding="utf-8").read().splitlines()
    (tmp_path / "train.jsonl").write_text("\n".join(lines[:120]) + "\n")
    dev = open(corpus("genia", "dev.jsonl"), encoding="utf-8").read().splitlines()
    (tmp_path / "dev.jsonl").write_text("\n".join(dev[:40]) + "\n")
    return tmp_path


def test_jsonl_train_decode_eval(genia, capsys):
    model = str(genia / "m.npz")
    assert main(["segment", "train", "--train", str(genia / "train.jsonl"), "--dev",
                 str(genia / "dev.jsonl"), "--epochs", "2", "-o", model, "--quiet"]) == 0
    assert "calibration on" in capsys.readouterr().out
    m = load_model(model)
    assert m.kind == "segment" and len(m.settings_["platt"]) == 2
    for decoder in ("threshold", "meu"):
        out = genia / f"{decoder}.jsonl"
        assert main(["segment", "decode", "--model", model, "--input",
                     str(genia / "dev.jsonl"), "--decoder", decoder, "-o", str(out)]) == 0
        src = [json.loads(x) for x in (genia / "dev.jsonl").read_text().splitlines()]
        got = [json.loads(x) for x in out.read_text().splitlines()]
        assert [{k: v for k, v in g.items() if k != "segments"} for g in got] == \
            [{k: v for k, v in s.items() if k != "segments"} for s in src]
        read_jsonl(str(out))                                   # valid segments
        assert main(["segment", "eval", str(genia / "dev.jsonl"), str(out), "--json"]) == 0
        r = json.loads(capsys.readouterr().out)
        assert r["sentences"] == 40 and r["overall"]["gold"] > 0
    assert main(["segment", "decode", "--model", model, "--input", str(genia / "dev.jsonl"),
                 "--restrict", "no-overlap,contiguous"]) == 0
    for line in capsys.readouterr().out.splitlines():
        segs = json.loads(line)["segments"]
        flat = [p for s in segs for p in s["positions"]]
        assert len(flat) == len(set(flat))
        assert all(s["positions"] == list(range(s["positions"][0], s["positions"][-1] + 1))
                   for s in segs)


def test_meu_without_calibration_is_refused(genia, capsys):
    model = str(genia / "m.npz")
    assert main(["segment", "train", "--train", str(genia / "train.jsonl"), "--epochs", "1",
                 "-o", model, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["segment", "decode", "--model", model, "--input", str(genia / "dev.jsonl"),
                 "--decoder", "meu"]) == 2
    assert "no probability calibration" in capsys.readouterr().err
    assert main(["segment", "train", "--train", str(genia / "train.jsonl"), "--max-gap",
                 "-2", "-o", model]) == 2
    assert "--max-gap must be" in capsys.readouterr().err
    assert main(["segment", "train", "--train", str(genia / "train.jsonl"), "--restrict",
                 "no-crossing", "-o", model]) == 2
    assert "no-crossing" in capsys.readouterr().err


def test_conll_train_and_decode_writes_a_tag_column(tmp_path, corpus, capsys):
    write_conll(read_conll(corpus("conll2000", "train.txt"))[:80], tmp_path / "t.txt")
    write_conll(read_conll(corpus("conll2000", "dev.txt"))[:20], tmp_path / "d.txt")
    model = str(tmp_path / "m.npz")
    assert main(["segment", "train", "--train", str(tmp_path / "t.txt"), "--epochs", "2",
                 "-o", model, "--quiet"]) == 0
    chosen = str(tmp_path / "chosen.npz")
    assert main(["segment", "train", "--train", str(tmp_path / "t.txt"), "--dev",
                 str(tmp_path / "d.txt"), "--epochs", "3", "--select", "dev", "-o", chosen,
                 "--quiet"]) == 0
    s = load_model(chosen).settings_
    fs = [h["dev_f_average"] for h in s["history"]]
    assert s["select"] == "dev" and fs[s["selected_epoch"] - 1] == max(fs)
    assert "kept epoch" in capsys.readouterr().out
    assert main(["segment", "train", "--train", str(tmp_path / "t.txt"), "--select", "dev",
                 "-o", chosen, "--quiet"]) == 2                  # no --dev to choose on
    assert "select" in capsys.readouterr().err
    out = tmp_path / "p.txt"
    assert main(["segment", "decode", "--model", model, "--input", str(tmp_path / "d.txt"),
                 "-o", str(out)]) == 0
    src, got = (tmp_path / "d.txt").read_text().splitlines(), out.read_text().splitlines()
    assert len(src) == len(got)
    assert all(g.startswith(s) and (not s.strip() or len(g.split()) == len(s.split()) + 1)
               for s, g in zip(src, got))
    assert main(["eval", str(out)]) == 0                       # a valid tag column
    capsys.readouterr()
    assert main(["segment", "decode", "--model", str(tmp_path / "m.npz"), "--input",
                 str(tmp_path / "nope.txt")]) == 2
