import numpy as np
import pytest

from fstchunk.cli import demo
from fstchunk.schemes import encodings as enc


def test_toy_table_matches_the_slides():
    rows = {x: (p, r, round(f, 2)) for x, p, r, f in demo.toy_table()}
    assert rows == {"OOO": ("0/0", "0/1", 0.0), "OBO": ("0/1", "0/1", 0.0),
                    "BOO": ("0/1", "0/1", 0.0), "BBB": ("1/3", "1/1", 0.67),
                    "BOB": ("1/2", "1/1", 0.8), "OOB": ("1/1", "1/1", 1.0)}


def test_toy_sweep_against_direct_enumeration():
    """MAP and MEU picks recomputed from the model's formula by hand."""
    theta = 0.35
    b = {("O", "O"): theta, ("O", "B"): 1 - theta, ("O", "I"): 0.0, ("B", "O"): 1 - theta ** 2,
         ("B", "B"): 0.0, ("B", "I"): theta ** 2, ("I", "O"): theta, ("I", "B"): 1 - theta,
         ("I", "I"): 0.0}
    seqs = demo.valid_sequences(3)
    prob = {x: np.prod([b[(p, c)] for p, c in zip("O" + x[:-1], x)]) for x in seqs}
    assert sum(prob.values()) == pytest.approx(1.0)
    from fstchunk.evaluation.chunks import sentence_f
    ch = {x: enc.tags_to_chunks(list(x), "IOB2") for x in seqs}
    ef = {x: sum(prob[y] * sentence_f(ch[x], ch[y], 3 ** 0.5) for y in seqs)   # slides' 3
          for x in seqs}
    row, = demo.toy_sweep([theta])
    for x in seqs:
        assert row["prob"][x] == pytest.approx(prob[x], abs=1e-12)
        assert row["expected_f"][x] == pytest.approx(ef[x], abs=1e-12)
    assert row["map"] == max(seqs, key=prob.get) and row["meu"] == max(seqs, key=ef.get)
    assert row["meu"] == "BBB" and prob["BBB"] == 0.0     # MEU may pick an impossible sequence


def test_example_script_writes_png(tmp_path):
    import subprocess
    import sys
    out = tmp_path / "toy.png"
    from pathlib import Path
    script = Path(__file__).resolve().parents[1] / "examples" / "toy_example.py"
    r = subprocess.run([sys.executable, str(script), "--png", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "BBB" in r.stdout
