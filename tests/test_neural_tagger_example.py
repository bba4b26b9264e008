"""examples/neural_tagger.py runs end to end on a slice (NLL, expected-corpus-F
fine-tuning, MAP and MEU rows with their bootstrap errors) and its bookkeeping holds:
the rows' test F are what conlleval gives for the kept model's predictions."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "neural_tagger.py"


@pytest.mark.parametrize("objective,label", [("expected-corpus-f", "expected corpus F"),
                                             ("expected-f", "expected sentence F")])
def test_neural_tagger_runs_on_a_slice(corpus, tmp_path, monkeypatch, capsys, objective,
                                       label):
    corpus("conll2000", "train.txt")                 # skips (or fails in CI) without data
    out = tmp_path / "nt.json"
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE), "--corpus", "conll2000", "--limit", "60",
                                      "--epochs", "2", "--fine-tune", "1", "--quiet",
                                      "--fine-tune-lr", "1e-3,5e-4",
                                      "--fine-tune-objective", objective,
                                      "--hidden", "16", "--json", str(out)])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(EXAMPLE), run_name="__main__")
    assert done.value.code in (None, 0)
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert [(r[0], r[1]) for r in doc["rows"]] == [
        ("NLL", "map"), ("NLL", "meu"), (f"NLL + {label}", "map"), (f"NLL + {label}", "meu")]
    assert all(0 <= r[2] <= 100 and 0 <= r[3] <= 100 and r[4] >= 0 for r in doc["rows"])
    assert len(doc["dev_f_per_epoch"]["nll"]) == 2
    assert len(doc["seconds_per_epoch"][objective]) == 2
    ft = doc["dev_f_per_epoch"][objective]
    assert sorted(ft) == ["0.0005", "0.001"] and all(len(v) == 1 for v in ft.values())
    # the kept model is the fine-tuned one exactly when a (rate, epoch) beat NLL on dev
    best_ft = max(max(v) for v in ft.values())
    assert doc["kept"].startswith("fine-tuned") == (best_ft > max(doc["dev_f_per_epoch"]["nll"]))
    assert "| NLL | MAP |" in printed and f"| NLL + {label} | MEU |" in printed
