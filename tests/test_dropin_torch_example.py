"""examples/pytorch_crf_bert.py runs (issue 46 §2): a pytorch-crf BERT-CRF checkpoint
loads into fstchunk.torch.CRF unchanged, the unconstrained Viterbi equals torchcrf's,
and entity confidences and MEU output are printed."""

import importlib.util
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchcrf")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pytorch_crf_bert.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("pytorch_crf_bert", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_example_prints_confidences_and_meu(example, tmp_path, capsys):
    ckpt = tmp_path / "model.pt"
    example.build_checkpoint(ckpt)
    assert example.main(["--checkpoint", str(ckpt), "--beta", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "unconstrained Viterbi equals pytorch-crf's: True" in out
    assert out.count("MEU (β = 0.5):") == len(example.SENTENCES)
    probs = [float(p) for p in re.findall(r"Pr = ([0-9.]+)", out)]
    assert probs and all(0 < p <= 1 for p in probs)
    # the confidences are the chunk marginals of the loaded model
    model = example.BertCrf(example.CRF(len(example.TAGS), batch_first=True,
                                        tags=example.TAGS))
    model.load_state_dict(torch.load(ckpt))
    with torch.no_grad():
        em, mask = model.emissions(example.SENTENCES)
        cm = model.crf.chunk_marginals(em, mask)
        conf = model.crf.chunk_confidences(em, mask)
    types = model.crf._chunk.types
    for b, ents in enumerate(conf):
        for typ, s, e, p in ents:
            assert p == pytest.approx(float(cm[b, s, e, types.index(typ)]), abs=1e-6)
    assert [f"{p:.3f}" for row in conf for *_, p in row] == [f"{p:.3f}" for p in probs]


def test_example_builds_its_own_checkpoint(example, capsys):
    assert example.main([]) == 0
    assert "equals pytorch-crf's: True" in capsys.readouterr().out
