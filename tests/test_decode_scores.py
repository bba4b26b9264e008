"""``fstchunk decode --scores FILE``: the score files of ``expected --scores`` (.npz) and
the JSONL form, decoded by every decoder with confidences equal to the lattices'."""

import io
import json

import numpy as np
import pytest

from fstchunk import Lattice
from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.decoding.confidence import scored_chunks
from fstchunk.io.conll import read_conll
from fstchunk.decoding.decoders import decode_lattices
from fstchunk.models.scorefile import save_scores
from oracles import random_scores, stable_seed

TYPES = ("NP", "VP")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _sentences(rng, scheme, lengths, scale=2.0):
    tags = list(enc.scheme_tags(scheme, TYPES))
    return tags, [random_scores(rng, len(tags), n, scale) for n in lengths]


def _write_jsonl(path, tags, sents, tokens=True, transitions=True):
    with open(path, "w", encoding="utf-8") as fh:
        for k, (e, t, s, en) in enumerate(sents):
            obj = {"tags": tags, "scores": e.tolist()}
            if tokens:
                obj["tokens"] = [f"w{k}_{i}" for i in range(len(e))]
            if transitions:
                obj.update(transitions=t.tolist(), start=s.tolist(), end=en.tolist())
            fh.write(json.dumps(obj) + "\n")


@pytest.mark.parametrize("scheme", ["IOB2", "IOE1", "BILOU"])
@pytest.mark.parametrize("decoder", ["map", "posterior", "meu", "meu-corpus"])
def test_jsonl_scores_decode_with_confidences(tmp_path, capsys, scheme, decoder):
    rng = np.random.default_rng(stable_seed((scheme, decoder)))
    tags, sents = _sentences(rng, scheme, [1, 4, 7, 3])
    path = tmp_path / "s.jsonl"
    _write_jsonl(path, tags, sents)
    code, out, err = run(capsys, "decode", "--scores", path, "--scheme", scheme,
                         "--decoder", decoder, "--format", "jsonl", "--marginals")
    assert code == 0, err
    rows = [json.loads(x) for x in out.splitlines()]
    lats = [Lattice.from_scores(tags, *s, scheme=scheme) for s in sents]
    want = decode_lattices(lats, decoder)
    for k, (r, lat, y) in enumerate(zip(rows, lats, want)):
        assert r["tokens"] == [f"w{k}_{i}" for i in range(lat.n)] and r["line"] == k + 1
        assert r["tags"] == y
        got = [(c["type"], c["start"], c["end"], c["p"]) for c in r["chunks"]]
        exp = [tuple(c) for c in scored_chunks(lat, y)]
        assert [g[:3] for g in got] == [e[:3] for e in exp]
        assert [g[3] for g in got] == pytest.approx([e[3] for e in exp], abs=1e-12)
        np.testing.assert_allclose([[m[t] for t in tags] for m in r["marginals"]],
                                   lat.marginals(), atol=1e-12)


def test_npz_scores_with_and_without_tokens(tmp_path, capsys):
    rng = np.random.default_rng(1)
    tags, sents = _sentences(rng, "IOBES", [3, 5])
    npz = tmp_path / "s.npz"
    save_scores(npz, tags, [s[0] for s in sents], sents[0][1], sents[0][2], sents[0][3],
                scheme="IOBES")
    shared = sents[0][1:]
    lats = [Lattice.from_scores(tags, s[0], *shared, scheme="IOBES") for s in sents]
    want = decode_lattices(lats, "meu")
    # no tokens: JSONL tokens null, CoNLL the tag column alone, in the file's scheme
    code, out, err = run(capsys, "decode", "--scores", npz, "--decoder", "meu",
                         "--format", "jsonl")
    assert code == 0, err
    rows = [json.loads(x) for x in out.splitlines()]
    assert [r["tokens"] for r in rows] == [None, None] and [r["line"] for r in rows] == [None] * 2
    assert [r["tags"] for r in rows] == want
    # p from the batched engine: equal to the sentence alone up to rounding
    assert [c["p"] for r in rows for c in r["chunks"]] == pytest.approx(
        [c.p for lat, y in zip(lats, want) for c in scored_chunks(lat, y)], abs=1e-12)
    code, out, _ = run(capsys, "decode", "--scores", npz, "--format", "html")
    assert code == 0 and all(f"[{i}]" in out for i in range(5))    # positions for tokens
    code, out, _ = run(capsys, "decode", "--scores", npz, "--decoder", "meu",
                       "--output-scheme", "IOB1")
    assert code == 0
    assert out == "".join("".join(t + "\n" for t in enc.convert(y, "IOBES", "IOB1")) + "\n"
                          for y in want)
    # tokens from --input: its lines plus the tag column, as decode writes them
    inp = tmp_path / "in.txt"
    inp.write_text("a A\nb B\nc C\n\nd D\ne E\nf F\ng G\nh H\n", encoding="utf-8")
    code, out, err = run(capsys, "decode", "--scores", npz, "--input", inp, "--decoder",
                         "meu")
    assert code == 0, err
    got = read_conll(io.StringIO(out))
    assert [s.column(-1) for s in got] == want and got[1].words == list("defgh")
    code, out, _ = run(capsys, "decode", "--scores", npz, "--input", inp, "--format", "jsonl")
    assert [json.loads(x)["tokens"] for x in out.splitlines()] == [list("abc"), list("defgh")]


def test_score_file_refusals(tmp_path, capsys):
    rng = np.random.default_rng(2)
    tags, sents = _sentences(rng, "IOB2", [2, 3])
    npz = tmp_path / "s.npz"
    save_scores(npz, tags, [s[0] for s in sents], sents[0][1])
    inp = tmp_path / "in.txt"
    inp.write_text("a\nb\n\nc\nd\n", encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    from fstchunk.models.hmm import HMM
    from fstchunk.io.conll import Sentence
    model = tmp_path / "m.npz"
    HMM().fit([Sentence([["a", "DT", "B-NP"], ["b", "NN", "I-NP"], ["c", "VB", "O"]])]
              ).save(model)
    cases = [
        (["--scores", npz, "--scheme", "BILOU"], "holds IOB2 scores"),
        (["--scores", npz, "--input", inp], "sentence 1 has 2 tokens but"),
        (["--scores", npz, "--columns", "word,tag"], "--columns is for --model"),
        (["--scores", bad], "bad.jsonl:2: not a JSON object"),
        (["--scores", tmp_path / "none.jsonl"], "none.jsonl: cannot read the score file"),
        (["--scores", tmp_path], "cannot read the score file"),
        (["--scores", model], "is a saved fstchunk model, not a score file"),
    ]
    bad.write_text('{"tags": ["O"], "scores": [[0]]}\n{oops\n', encoding="utf-8")
    for extra, msg in cases:
        code, out, err = run(capsys, "decode", *extra)
        assert code == 2 and msg in err and out == "", (extra, err)
    for line, msg in [('{"scores": [[0]]}', "bad.jsonl:1: missing key 'tags'"),
                      ('{"tags": ["O"], "scores": [[0]], "x": 1}', "unknown key 'x'"),
                      ('{"tags": ["O"], "scores": [0, 1]}', "'scores' must be a non-empty"),
                      ('{"tags": ["O"], "scores": [[0]], "tokens": ["a", "b"]}',
                       "2 tokens but 1 rows"),
                      ('[1, 2]', "must be a JSON object")]:
        bad.write_text(line + "\n", encoding="utf-8")
        code, out, err = run(capsys, "decode", "--scores", bad)
        assert code == 2 and msg in err and out == "", (line, err)


def test_a_bad_sentence_is_its_own_error(tmp_path, capsys):
    """Numbers are checked per sentence: a non-finite score or a tag list that cannot
    express the scheme stops that sentence only, named by file:line."""
    rng = np.random.default_rng(3)
    tags, sents = _sentences(rng, "IOB2", [2, 3, 2])
    path = tmp_path / "s.jsonl"
    _write_jsonl(path, tags, sents)
    lines = path.read_text().splitlines()
    lines[1] = json.dumps({"tags": ["O", "B-NP"], "scores": [[0, 1]]})     # lacks I-NP
    path.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "decode", "--scores", path, "--scheme", "IOB2", "--format",
                         "jsonl")
    rows = [json.loads(x) for x in out.splitlines()]
    assert code == 1 and len(rows) == 3
    assert "error" in rows[1] and "I-NP" in rows[1]["error"] and "tags" in rows[2]
    assert "s.jsonl:2" in err and "1 of 3 sentences not decoded" in err
    path.write_text(json.dumps({"tags": ["O", "B-NP", "I-NP"],
                                "scores": [[0, 1, float("inf")]]}) + "\n")
    code, out, err = run(capsys, "decode", "--scores", path, "--scheme", "IOB2")
    assert code == 1 and "non-finite score inf" in err and out == "<error>\n\n"


def test_scores_workers_and_html(tmp_path, capsys):
    rng = np.random.default_rng(4)
    tags, sents = _sentences(rng, "IOB2", [3, 6, 2, 5])
    path = tmp_path / "s.jsonl"
    _write_jsonl(path, tags, sents, transitions=False)
    base = ["decode", "--scores", path, "--scheme", "IOB2", "--decoder", "meu", "--format",
            "jsonl"]
    assert run(capsys, *base, "--workers", "2")[1] == run(capsys, *base)[1]
    code, out, _ = run(capsys, "decode", "--scores", path, "--scheme", "IOB2", "--format",
                       "html")
    assert code == 0 and out.startswith("<!DOCTYPE html>") and "w3_4" in out


def _tagger_scores(rng, scheme, sentences=6, n=8):
    """Emissions of a confident tagger trained in ``scheme``: the tags of random
    chunkings written in it, +4 on the tag, noise elsewhere."""
    tags = list(enc.scheme_tags("IOB2", TYPES))
    out = []
    for _ in range(sentences):
        chunks, i = [], 0
        while i < n:
            if rng.random() < 0.5:
                j = min(n, i + 1 + int(rng.integers(3)))
                chunks.append((TYPES[int(rng.integers(2))], i, j))
                i = j
            else:
                i += 1
        e = rng.normal(scale=0.3, size=(n, len(tags)))
        for k, t in enumerate(enc.chunks_to_tags(chunks, n, scheme)):
            e[k, tags.index(t)] += 4.0
        out.append(e)
    return tags, out


def test_iob1_scores_without_a_scheme_are_refused(tmp_path, capsys):
    """JSONL scores of tags that IOB1 and IOB2 share are refused without a scheme,
    naming the file and both --scheme options; with a scheme given they decode as that
    scheme's lattices."""
    rng = np.random.default_rng(5)
    tags, emis = _tagger_scores(rng, "IOB1")
    path = tmp_path / "iob1.jsonl"
    path.write_text("".join(json.dumps({"tags": tags, "scores": e.tolist()}) + "\n"
                            for e in emis))
    code, out, err = run(capsys, "decode", "--scores", path, "--format", "jsonl")
    assert code == 2 and "iob1.jsonl:" in err and "--scheme IOB1 or --scheme IOB2" in err
    for scheme in ("IOB1", "IOB2"):
        code, out, err = run(capsys, "decode", "--scores", path, "--scheme", scheme,
                             "--format", "jsonl")
        assert code == 0, err
        want = decode_lattices([Lattice.from_scores(tags, e, np.zeros((len(tags),) * 2),
                                                    scheme=scheme) for e in emis],
                               "map")
        assert [json.loads(x)["tags"] for x in out.splitlines()] == want
    tags, emis = _tagger_scores(rng, "IOB2")          # an IOB2 tagger's: its tags too
    path.write_text("".join(json.dumps({"tags": tags, "scores": e.tolist()}) + "\n"
                            for e in emis))
    code, out, err = run(capsys, "decode", "--scores", path, "--format", "jsonl")
    assert code == 2 and "--scheme IOB1 or --scheme IOB2" in err
