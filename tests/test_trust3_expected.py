"""Issue 43, items 10 and 11, and their family: ``expected --scores`` given a file that
is not a score file says what it is and what is expected (not numpy's pickle advice);
``expected`` over sentences it cannot score reports them and writes no figure for
none (no ``NaN``, no ``1.0`` over 0 sentences); every JSON output is strict JSON."""

import json
import re

import numpy as np
import pytest

from fstchunk.cli import main
from fstchunk.core.errors import ModelFileError
from fstchunk.io.conll import read_conll, write_conll
from fstchunk.models.crf import CRF
from fstchunk.models.scorefile import load_lattices


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def strict(text: str):
    """JSON as a strict reader takes it: NaN and Infinity refused."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def files(tmp_path_factory, corpus):
    d = tmp_path_factory.mktemp("expected")
    sents = read_conll(corpus("conll2000", "train.txt"))
    CRF("tmpt1", max_iter=10).fit(sents[:100]).save(d / "m.npz")
    dev = sents[100:106]
    write_conll(dev, d / "dev.txt")
    # every chunk of the gold of a type the model never saw
    write_conll([[r[:2] + [r[2][:2] + "ZZZ" if r[2] != "O" else "O"] for r in s.rows]
                 for s in dev], d / "unseen.txt")
    return d


@pytest.mark.parametrize("content, said", [
    (b'{"tokens": ["a"], "tags": ["O"], "scores": [[0.0]]}\n', "JSON lines, the JSONL form"),
    (b"The DT B-NP\n\n", "text (a CoNLL file?)"),
    (b"", "an empty file"),
    (b"\x93NUMPY\x01\x00v\x00", "a single array, not a score file"),
    (b"\x00\xff\x00binary", "not a zip archive"),
    (b"lCRF\x00\x00\x00\x00FOMC", "a CRFsuite model file (fstchunk import crfsuite"),
])
def test_a_file_that_is_no_score_file_says_what_it_is(files, capsys, tmp_path, content,
                                                      said):
    path = tmp_path / "scores.x"
    path.write_bytes(content)
    code, out, err = run(capsys, "expected", files / "dev.txt", "--scores", path)
    assert code == 2 and out == "" and said in err, err
    assert "pickle" not in err and "save_scores writes" in err, err
    with pytest.raises(ModelFileError, match=re.escape(said)):
        load_lattices(path)


def test_decode_scores_given_a_conll_file_says_so(files, capsys):
    code, out, err = run(capsys, "decode", "--scores", files / "dev.txt")
    assert code == 2 and out == "" and "(a CoNLL file? it is given as --input)" in err, err


def test_sentences_the_model_cannot_score_give_no_figure(files, capsys):
    code, out, err = run(capsys, "expected", files / "unseen.txt", "--model", files / "m.npz",
                         "--json")
    assert code == 1
    report = strict(out)                                  # strict JSON: no NaN
    s = report["summary"]
    assert (s["sentences"], s["failed"]) == (0, 6)
    assert s["mean_sentence_expected_f"] is None and s["corpus_f_of_expectations"] is None
    assert all("ZZZ" in r["error"] for r in report["sentences"])
    assert "6 of 6 sentences not scored" in err
    code, out, err = run(capsys, "expected", files / "unseen.txt", "--model", files / "m.npz")
    assert code == 1 and "no sentence scored (6 not scored)" in out
    assert "nan" not in out and "1.000000" not in out
    # some scored, some not: the figures are over the scored ones, and say so
    mixed = files / "mixed.txt"
    mixed.write_text((files / "dev.txt").read_text() + (files / "unseen.txt").read_text())
    code, out, err = run(capsys, "expected", mixed, "--model", files / "m.npz")
    assert code == 1 and "over 6 sentences, 6 not scored (left out of both figures)" in out
    want = run(capsys, "expected", files / "dev.txt", "--model", files / "m.npz", "--json")[1]
    code, out, err = run(capsys, "expected", mixed, "--model", files / "m.npz", "--json")
    got, alone = strict(out)["summary"], strict(want)["summary"]
    assert got["corpus_f_of_expectations"] == pytest.approx(alone["corpus_f_of_expectations"])


def test_json_outputs_are_strict(files, capsys, tmp_path):
    """json_text writes NaN and infinities as null; the commands' JSON reads strictly."""
    from fstchunk.core.outputs import json_text
    assert json_text({"a": float("nan"), "b": [1.0, float("inf")], "c": np.float64("nan")}) \
        == '{"a": null, "b": [1.0, null], "c": null}'
    decoded = tmp_path / "decoded.txt"
    assert run(capsys, "decode", "--model", files / "m.npz", "--input", files / "dev.txt",
               "-o", decoded)[0] == 0
    for argv in (["eval", decoded, "--json"],
                 ["decode", "--model", files / "m.npz", "--input", files / "dev.txt",
                  "--format", "jsonl", "--marginals"]):
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        for line in ([out] if argv[0] == "eval" else out.splitlines()):
            strict(line)
