"""examples/transformers_tagger.py end to end on a slice, with a tiny random BERT and a
WordPiece tokenizer trained on the fly (nothing downloaded): the NLL falls, MAP and MEU
tags are valid sequences of the CRF's scheme, and every printed confidence is the exact
chunk marginal of the numpy lattice built from the same scores (the example's score
file), MEU the numpy engine's MEU decision on those scores."""

from __future__ import annotations

import json
import os
import runpy
import sys
from pathlib import Path

import pytest

from fstchunk.decoding.confidence import scored_chunks
from fstchunk.decoding.decode import decode_map, decode_meu
from fstchunk.models.scorefile import load_lattices
from fstchunk.schemes import encodings as enc
from fstchunk.schemes.tagspace import TagSet


def _need(module: str):
    """The optional dependency, skipped where it is not installed (never in CI: the test
    extra installs it)."""
    if os.environ.get("CI", "").lower() == "true":
        return __import__(module)
    return pytest.importorskip(module)


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "transformers_tagger.py"


def run_example(monkeypatch, argv: list[str]) -> int:
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE)] + argv)
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(EXAMPLE), run_name="__main__")
    return done.value.code or 0


@pytest.mark.parametrize("corpus_name,files,scheme,fine_tune", [
    ("conll2000", ("conll2000", "train.txt"), "IOB2", "expected-f"),
    ("ned", ("conll2002", "ned.train"), "IOBES", "expected-corpus-f"),
    ("conll2000", ("conll2000", "train.txt"), "BILOU", "expected-f"),
])
def test_transformers_tagger_on_a_slice(corpus, tmp_path, monkeypatch, capsys, corpus_name,
                                        files, scheme, fine_tune):
    _need("torch"), _need("transformers"), _need("tokenizers")
    corpus(*files)                                   # skips (or fails in CI) without data
    out, scores = tmp_path / "run.json", tmp_path / "dev.npz"
    code = run_example(monkeypatch, [
        "--corpus", corpus_name, "--limit", "24", "--dev-limit", "6", "--scheme", scheme,
        "--epochs", "3", "--fine-tune", "1", "--fine-tune-objective", fine_tune,
        "--lr", "3e-3", "--batch-size", "8", "--show", "2", "--json", str(out),
        "--scores", str(scores)])
    assert code == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["scheme"] == scheme and tuple(doc["tags"]) == TagSet.from_tags(
        doc["tags"], scheme).tags                    # every tag of the scheme per type
    nll = doc["losses"]["nll"]
    assert len(nll) == 4 and nll[-1] < nll[0]        # before + 3 epochs; the NLL falls
    ft = doc["losses"][fine_tune]
    assert len(ft) == 2 and all(0 <= x <= 1 for x in ft)      # 1 - E[F] in [0, 1]
    lattices = load_lattices(scores)
    assert len(lattices) == 6
    for method in ("map", "meu"):
        tags, chunks = doc["decoded"][method]["tags"], doc["decoded"][method]["chunks"]
        assert f"dev F ({method.upper()})" in printed
        for lat, t, cs in zip(lattices, tags, chunks):
            assert len(t) == lat.n and enc.is_valid(t, scheme)
            assert set(t) <= set(TagSet.from_tags(doc["tags"], scheme).tags)
            assert [tuple(c[:3]) for c in cs] == [tuple(c) for c in enc.tags_to_chunks(t, scheme)]
            cm = lat.chunk_marginals()             # every chunk's marginal, one sweep
            for ctype, s, e, p in cs:
                assert 0 <= p <= 1
                assert p == pytest.approx(cm[lat.space.types.index(ctype), s, e], abs=1e-4)
            assert [c[3] for c in cs] == pytest.approx([c.p for c in scored_chunks(lat, t)],
                                                      abs=1e-4)
            if method == "meu":                      # the same decision as the numpy engine
                assert t == list(decode_meu(lat).tags)
            else:                                    # as probable as the numpy Viterbi's path
                assert lat.log_prob(t) >= lat.log_prob(decode_map(lat).tags) - 1e-3
    assert " p=" in printed


@pytest.mark.parametrize("argv,message", [
    (["--limit", "0"], "--limit must be >= 1"),
    (["--fine-tune", "-1"], "--fine-tune must be >= 0"),
    (["--beta", "0"], "--beta must be > 0"),
    (["--lr=-1e-3"], "--lr must be > 0"),
    (["--scheme", "IOX"], "unknown chunk scheme 'IOX'"),
    (["--train", "no-such-file.txt"], "--train: no such file no-such-file.txt"),
    (["--limit", "2", "--model", "MISSING"], "--model MISSING: "),
])
def test_transformers_tagger_refuses_bad_options(corpus, monkeypatch, capsys, tmp_path, argv,
                                                 message):
    """One line on standard error, exit status 2, before any training."""
    _need("torch"), _need("transformers"), _need("tokenizers")
    corpus("conll2000", "train.txt")
    monkeypatch.chdir(tmp_path)                      # MISSING: a path that is not there
    missing = str(tmp_path / "no-checkpoint")
    argv = [missing if a == "MISSING" else a for a in argv]
    assert run_example(monkeypatch, ["--corpus", "conll2000"] + argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("transformers_tagger: ")
    assert message.replace("MISSING", missing) in err[0]
    assert "epoch" not in captured.out


def test_transformers_tagger_loads_a_checkpoint(corpus, tmp_path, monkeypatch, capsys):
    """--model: a saved checkpoint (another label count: its head is replaced) and its
    fast tokenizer load through the Auto classes and train as the tiny model does."""
    _need("torch"), _need("transformers"), _need("tokenizers")
    from transformers import BertConfig, BertForTokenClassification
    corpus("conll2000", "train.txt")
    example = runpy.run_path(str(EXAMPLE), run_name="example")
    tokenizer = example["tiny_tokenizer"](["the", "cat", "sat", "on", "a", "mat"], 100)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, num_labels=3)
    ckpt = tmp_path / "ckpt"
    BertForTokenClassification(config).save_pretrained(ckpt)
    tokenizer.save_pretrained(ckpt)
    out = tmp_path / "run.json"
    assert run_example(monkeypatch, ["--corpus", "conll2000", "--model", str(ckpt), "--limit",
                                     "12", "--dev-limit", "3", "--epochs", "2", "--lr", "1e-3",
                                     "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert str(ckpt) in capsys.readouterr().out
    assert doc["losses"]["nll"][-1] < doc["losses"]["nll"][0]
    for t in doc["decoded"]["meu"]["tags"]:
        assert enc.is_valid(t, "IOB2")
