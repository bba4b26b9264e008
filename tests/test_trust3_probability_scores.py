"""Probabilities passed as scores are warned of (issue 43, item 5): scores are log
potentials, and a softmax's rows read as such give a nearly flat distribution, with
no word said.  Every row summing to 1 within 1e-6 with entries in [0, 1] warns, in
Lattice.from_scores, score files, the CLI (one warning line) and the torch layer."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from fstchunk import Lattice
from fstchunk.cli import main
from fstchunk.core.errors import FstchunkWarning
from fstchunk.core.scorecheck import looks_like_probabilities
from fstchunk.models.scorefile import load_lattices, save_scores

TAGS = ["O", "B-X", "I-X"]


def _softmax(rng, n, L=3):
    x = rng.normal(scale=2.0, size=(n, L))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_from_scores_warns_of_probability_rows_only():
    rng = np.random.default_rng(0)
    p = _softmax(rng, 4)
    with pytest.warns(FstchunkWarning, match=r"emissions: every row sums to 1 .* pass "
                                             r"np\.log\(probabilities\)"):
        Lattice.from_scores(TAGS, p, np.zeros((3, 3)))
    for fine in (np.log(p), p * 0.5, p + 1e-5, np.eye(3)[[0, 1]] * 2, -p,
                 np.full((2, 3), 0.3)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", FstchunkWarning)
            Lattice.from_scores(TAGS, fine, np.zeros((3, 3)))


def test_fstchunk_s_own_lattices_do_not_warn():
    """Posterior decoding sums marginals through a lattice of them: no warning."""
    from fstchunk.decoding.decode import decode_posterior
    rng = np.random.default_rng(3)
    lat = Lattice.from_scores(TAGS, rng.normal(size=(4, 3)), rng.normal(size=(3, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FstchunkWarning)
        decode_posterior(lat)
        Lattice.from_scores(TAGS, _softmax(rng, 3), np.zeros((3, 3)), warn=False)


@pytest.mark.parametrize("rows, want", [
    ([[0.2, 0.8], [1.0, 0.0]], True), ([[0.2, 0.8 + 2e-6]], False),
    ([[0.2, 0.8 + 5e-7]], True), ([[1.2, -0.2]], False), ([[0.5, 0.5], [0.5, 0.4]], False),
    (np.zeros((0, 2)), False)])
def test_the_rule(rows, want):
    assert looks_like_probabilities(np.array(rows, dtype=float)) is want


def test_score_files_and_the_cli_warn_once(tmp_path, capsys):
    rng = np.random.default_rng(1)
    sents = [_softmax(rng, n) for n in (3, 5, 2)]
    npz = tmp_path / "s.npz"
    save_scores(npz, TAGS, sents, np.zeros((3, 3)))
    with pytest.warns(FstchunkWarning, match="look like probabilities"):
        load_lattices(npz)
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text("".join(json.dumps({"tags": TAGS, "scores": e.tolist()}) + "\n"
                             for e in sents))
    for path in (npz, jsonl):
        code = main(["decode", "--scores", str(path), "--scheme", "IOB2"])
        out, err = capsys.readouterr()
        assert code == 0, err
        lines = err.strip().split("\n")
        assert len(lines) == 1 and lines[0].startswith(
            "fstchunk decode: warning: emissions: every row sums to 1"), err
        assert "np.log" in lines[0]
    np.savez(npz, tags=np.array(TAGS), scheme=np.array("IOB2"), transitions=np.zeros((3, 3)),
             **{f"emissions_{k}": np.log(e) for k, e in enumerate(sents)})
    assert main(["decode", "--scores", str(npz)]) == 0
    assert capsys.readouterr().err == ""


def test_the_torch_layer_warns():
    torch = pytest.importorskip("torch")
    from fstchunk.torch import ChunkCRF
    rng = np.random.default_rng(2)
    crf = ChunkCRF(TAGS, "IOB2")
    p = torch.tensor(np.stack([_softmax(rng, 4), _softmax(rng, 4)]))
    p32 = p.float()
    mask = torch.ones(2, 4, dtype=torch.bool)
    mask[1, 3] = False
    tr = torch.zeros(3, 3, dtype=torch.float64)
    with pytest.warns(FstchunkWarning, match=r"torch\.log\(probabilities\)"):
        crf.log_partition(p, tr, mask)
    with pytest.warns(FstchunkWarning, match="look like probabilities"):
        crf.log_partition(p32, tr.float(), mask)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FstchunkWarning)
        crf.log_partition(torch.log(p), tr, mask)
        p[1, 3] = 7.0                               # padding is not read: still warns below
    with pytest.warns(FstchunkWarning):
        crf.log_partition(p, tr, mask)
