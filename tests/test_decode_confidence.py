"""``fstchunk decode --format jsonl|html``, ``--marginals``, ``--min-confidence``: every
chunk's p equals the lattice's chunk marginal, across decoders, output schemes and
model kinds (HMM, ML CRF, calibrated max-margin CRF, calibrated joint model)."""

import json

import numpy as np
import pytest

from fstchunk.cli import main
from fstchunk.decoding.confidence import scored_chunks
from fstchunk.io.conll import read_conll, write_conll
from fstchunk.models import load_model
from fstchunk.schemes import encodings as enc

DECODERS = ["map", "posterior", "meu", "meu-kbest", "meu-corpus"]


@pytest.fixture(scope="module")
def models(tmp_path_factory, corpus):
    """Small models of each kind with lattices, and an 8-sentence input."""
    from fstchunk.models.crf import CRF
    from fstchunk.models.hmm import HMM
    d = tmp_path_factory.mktemp("models")
    train = read_conll(corpus("conll2000", "train.txt"))[:150]
    held = read_conll(corpus("conll2000", "dev.txt"))[:40]
    HMM().fit(train).save(d / "hmm.npz")
    CRF("tmpt1", objective="ml", max_iter=15).fit(train).save(d / "crf.npz")
    mm = CRF("tmpt1", objective="max-margin", l2=0.05, max_iter=15).fit(train)
    mm.save(d / "mm-raw.npz")
    mm.calibrate(held, source="held")
    mm.save(d / "mm.npz")
    write_conll(read_conll(corpus("conll2000", "test.txt"))[:8], d / "in.txt")
    return d


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def jsonl(capsys, *argv):
    code, out, err = run(capsys, "decode", *argv, "--format", "jsonl")
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


def check_against_lattices(model_path, inp, rows, scheme):
    """Every line: tags valid in ``scheme``, its chunks exactly the tags' chunks, each
    p equal to scored_chunks and to the lattice's dense chunk marginals."""
    model = load_model(model_path)
    sents = read_conll(inp)
    lats = model.lattices(sents)
    assert [r["sentence"] for r in rows] == list(range(len(sents)))
    for r, s, lat in zip(rows, sents, lats):
        assert r["tokens"] == s.words and r["line"] == s.lines[0]
        assert enc.is_valid(r["tags"], scheme)
        chunks = [(c["type"], c["start"], c["end"]) for c in r["chunks"]]
        assert chunks == enc.tags_to_chunks(r["tags"], scheme)
        want = scored_chunks(lat, enc.convert(r["tags"], scheme, lat.scheme))
        np.testing.assert_allclose([c["p"] for c in r["chunks"]], [c.p for c in want],
                                   rtol=1e-9, atol=1e-12)
        dense = lat.chunk_marginals()
        for c in r["chunks"]:
            assert c["p"] == pytest.approx(
                dense[lat.space.types.index(c["type"]), c["start"], c["end"]], abs=1e-9)


@pytest.mark.parametrize("kind", ["hmm", "crf", "mm"])
@pytest.mark.parametrize("decoder,scheme", list(zip(DECODERS, ["IOB2", "IOB1", "IOE1",
                                                               "BILOU", "IOBES"])))
def test_jsonl_chunks_carry_their_marginals(models, capsys, kind, decoder, scheme):
    rows = jsonl(capsys, "--model", models / f"{kind}.npz", "--input", models / "in.txt",
                 "--decoder", decoder, "--output-scheme", scheme)
    check_against_lattices(models / f"{kind}.npz", models / "in.txt", rows, scheme)
    # the same tags as the CoNLL output
    code, out, err = run(capsys, "decode", "--model", models / f"{kind}.npz", "--input",
                         models / "in.txt", "--decoder", decoder, "--output-scheme", scheme)
    assert code == 0, err
    assert [r["tags"] for r in rows] == [s.column(-1) for s in _conll(out)]


def _conll(text):
    import io
    return read_conll(io.StringIO(text))


def test_marginals_are_the_lattice_marginals(models, capsys):
    rows = jsonl(capsys, "--model", models / "crf.npz", "--input", models / "in.txt",
                 "--marginals", "--output-scheme", "IOE2")
    model = load_model(models / "crf.npz")
    for r, lat in zip(rows, model.lattices(read_conll(models / "in.txt"))):
        assert r["marginals_scheme"] == model.scheme_
        assert all(list(m) == list(lat.tags) for m in r["marginals"])
        got = np.array([[m[t] for t in lat.tags] for m in r["marginals"]])
        np.testing.assert_allclose(got, lat.marginals(), atol=1e-12)
        np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-9)


@pytest.mark.parametrize("scheme", ["IOB1", "IOE1", "IOB2", "BILOU"])
def test_min_confidence_is_monotone_on_every_format(models, capsys, scheme):
    base = ["--model", models / "crf.npz", "--input", models / "in.txt", "--decoder", "meu",
            "--beta", "2", "--output-scheme", scheme]
    full = jsonl(capsys, *base)
    prev = full
    for p in (0.3, 0.6, 0.9, 0.99, 1.0):
        rows = jsonl(capsys, *base, "--min-confidence", p)
        code, out, _ = run(capsys, "decode", *base, "--min-confidence", p)
        assert code == 0
        conll = _conll(out)
        for r, q, f, s in zip(rows, prev, full, conll):
            kept = {(c["type"], c["start"], c["end"], c["p"]) for c in r["chunks"]}
            assert kept <= {(c["type"], c["start"], c["end"], c["p"]) for c in q["chunks"]}
            assert kept == {(c["type"], c["start"], c["end"], c["p"]) for c in f["chunks"]
                            if c["p"] >= p}
            assert enc.is_valid(r["tags"], scheme)
            assert enc.tags_to_chunks(r["tags"], scheme) == [k[:3] for k in sorted(
                kept, key=lambda k: k[1])]
            assert s.column(-1) == r["tags"]                    # CoNLL: the same tags
        prev = rows
    assert sum(len(r["chunks"]) for r in prev) < sum(len(r["chunks"]) for r in full)


@pytest.mark.parametrize("decoder", ["meu", "meu-corpus"])
def test_workers_give_the_same_lines(models, capsys, decoder):
    base = ["--model", models / "crf.npz", "--input", models / "in.txt", "--decoder",
            decoder, "--marginals"]
    assert jsonl(capsys, *base, "--workers", "2") == jsonl(capsys, *base)


def test_errors_per_sentence(models, capsys):
    """A memory budget of one byte refuses every sentence whose MEU needs tables; those
    the MAP certificate decides need none and come out as MAP's chunks."""
    code, out, err = run(capsys, "decode", "--model", models / "crf.npz", "--input",
                         models / "in.txt", "--decoder", "meu", "--memory-budget", "1",
                         "--format", "jsonl")
    rows = [json.loads(x) for x in out.splitlines()]
    _, map_out, _ = run(capsys, "decode", "--model", models / "crf.npz", "--input",
                        models / "in.txt", "--format", "jsonl")
    maps = [json.loads(x) for x in map_out.splitlines()]
    failed = [r for r in rows if "error" in r]
    assert code == 1 and len(rows) == 8 and failed
    assert all("memory budget" in r["error"] and "tags" not in r for r in failed)
    assert all(r["tags"] == m["tags"] for r, m in zip(rows, maps) if "error" not in r)
    assert f"{len(failed)} of 8 sentences not decoded" in err and "written with their error" in err


def test_refusals(models, capsys, tmp_path):
    m, inp = models / "crf.npz", models / "in.txt"
    cases = [
        (["--marginals"], "--marginals is written by --format jsonl only"),
        (["--min-confidence", "1.5", "--format", "jsonl"], "--min-confidence must be"),
        (["--min-confidence", "nan"], "--min-confidence must be"),
        (["--scheme", "IOB2"], "--scheme is for --scores"),
        (["--scores", inp], "exactly one of --model MODEL or --scores FILE"),
    ]
    for extra, msg in cases:
        code, out, err = run(capsys, "decode", "--model", m, "--input", inp, *extra)
        assert code == 2 and msg in err and out == "", (extra, err)
    code, _, err = run(capsys, "decode", "--model", m)
    assert code == 2 and "--model needs --input" in err
    # an uncalibrated max-margin model decodes MAP tags, but has no confidences
    raw = models / "mm-raw.npz"
    assert run(capsys, "decode", "--model", raw, "--input", inp)[0] == 0
    for extra in (["--format", "jsonl"], ["--format", "html"], ["--min-confidence", "0.5"]):
        code, out, err = run(capsys, "decode", "--model", raw, "--input", inp, *extra)
        assert code == 2 and "fstchunk calibrate --model" in err and out == "", extra


def test_joint_model_chunk_layer(tmp_path, capsys, corpus):
    """The joint model's chunk layer gives lattices: its confidences, once calibrated."""
    test = tmp_path / "test.txt"
    write_conll(read_conll(corpus("conll2000", "test.txt"))[:5], test)
    held = tmp_path / "held.txt"
    write_conll(read_conll(corpus("conll2000", "dev.txt"))[:40], held)
    raw, model = tmp_path / "joint-raw.npz", tmp_path / "joint.npz"
    assert main(["joint", "train", "--train", corpus("conll2000", "train.txt"), "--sentences",
                 "60", "--collapse-pos", "--np-only", "--algorithm", "mmvp", "--iterations",
                 "2", "--quiet", "-o", str(raw)]) == 0
    assert main(["joint", "calibrate", "--model", str(raw), "--input", str(held), "-o",
                 str(model)]) == 0
    capsys.readouterr()
    for decoder in ("map", "meu"):
        rows = jsonl(capsys, "--model", model, "--input", test, "--decoder", decoder)
        lats = load_model(model).lattices(read_conll(test))
        for r, lat in zip(rows, lats):
            want = scored_chunks(lat, enc.convert(r["tags"], "IOB2", lat.scheme))
            assert [c["p"] for c in r["chunks"]] == pytest.approx([c.p for c in want],
                                                                  abs=1e-12)
