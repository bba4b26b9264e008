"""The scheme of a score file whose tags schemes share is asked for, never guessed
(issue 43, item 4): a small JSONL of an IOB1 tagger's scores was read as IOB2 (the
guard needed three chunks opened by I-), and decode wrote all O with exit status 0."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fstchunk import Lattice
from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.decoding.decoders import decode_lattices
from fstchunk.core.errors import InputError
from fstchunk.decoding.expected import expected_f
from fstchunk.models.scorefile import load_lattices, open_scores, scheme_of


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


#: an IOB1 tagger's scores for "Tom met Ann": each name opens with I-PER
IOB1_TAGS = ["O", "B-PER", "I-PER"]
IOB1_SCORES = [[0.0, -2.0, 3.0], [3.0, -2.0, 0.0], [0.0, -2.0, 3.0]]


def _jsonl(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_the_issue_case_small_iob1_scores_are_not_read_as_iob2(tmp_path, capsys):
    path = _jsonl(tmp_path / "s.jsonl", [{"tokens": ["Tom", "met", "Ann"], "tags": IOB1_TAGS,
                                          "scores": IOB1_SCORES}])
    code, out, err = run(capsys, "decode", "--scores", path)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"{path}: the tags are those of IOB1 and IOB2" in err
    assert "give the scheme, --scheme IOB1 or --scheme IOB2" in err
    code, out, err = run(capsys, "decode", "--scores", path, "--scheme", "IOB1")
    assert code == 0, err
    assert out == "I-PER\nO\nI-PER\n\n"                # in the scores' scheme
    with pytest.raises(InputError, match=r"scheme='IOB1' or scheme='IOB2'"):
        open_scores(str(path), None)
    model, items = open_scores(str(path), "IOB1")
    assert decode_lattices(model.lattices(items), "map") == [["I-PER", "O", "I-PER"]]


@pytest.mark.parametrize("tags, want", [
    (("O", "B-X", "I-X"), ("IOB1", "IOB2")), (("O", "I-X", "E-X"), ("IOE1", "IOE2")),
    (("B-X", "I-X"), ("IOB1", "IOB2")),
    (tuple(enc.scheme_tags("IOBES", ["X"])), "IOBES"),
    (tuple(enc.scheme_tags("BILOU", ["X", "Y"])), "BILOU"),
    (tuple(enc.scheme_tags("IOBES2", ["X"])), "IOBES2"),
    (("O",), "IOB2"),                                   # no chunk: any scheme reads it
])
def test_scheme_of_the_tags(tags, want):
    if isinstance(want, str):
        assert scheme_of([tags, ("O",)], "f") == want
    else:
        with pytest.raises(InputError, match="those of " + " and ".join(want)):
            scheme_of([tags], "f")


def test_jsonl_lines_of_two_schemes_are_refused_and_a_bad_line_is_its_own(tmp_path, capsys):
    iobes = list(enc.scheme_tags("IOBES", ["X"]))
    rows = [[0.0] * len(iobes)]
    mixed = _jsonl(tmp_path / "m.jsonl", [{"tags": iobes, "scores": rows},
                                          {"tags": list(enc.scheme_tags("IOE2", ["X"])),
                                           "scores": [[0.0, 0.0, 0.0]]}])
    code, _, err = run(capsys, "decode", "--scores", mixed)
    assert code == 2 and "tag lists are of different schemes" in err and "--scheme" in err
    # a line whose tags are no scheme's does not decide: it fails on its own
    one = _jsonl(tmp_path / "o.jsonl", [{"tags": iobes, "scores": rows},
                                        {"tags": ["O", "B-X"], "scores": [[0.0, 1.0]]}])
    code, out, err = run(capsys, "decode", "--scores", one, "--format", "jsonl")
    assert code == 1 and "1 of 2 sentences not decoded" in err
    assert "tags" in json.loads(out.splitlines()[0])


def test_iobes_tags_need_no_scheme(tmp_path, capsys):
    rng = np.random.default_rng(0)
    tags = list(enc.scheme_tags("IOBES", ["X", "Y"]))
    scores = rng.normal(scale=2.0, size=(5, len(tags)))
    path = _jsonl(tmp_path / "s.jsonl", [{"tags": tags, "scores": scores.tolist()}])
    plain = run(capsys, "decode", "--scores", path, "--format", "jsonl")
    given = run(capsys, "decode", "--scores", path, "--scheme", "IOBES", "--format", "jsonl")
    assert plain[0] == 0 and plain == given


def test_an_npz_without_its_scheme_takes_the_given_one(tmp_path, capsys):
    """A score file of another writer may lack 'scheme' (save_scores writes it): its
    ambiguous tags were read as IOB2, and --scheme IOB1 refused as 'holds IOB2 scores'."""
    path = tmp_path / "s.npz"
    np.savez(path, tags=np.array(IOB1_TAGS), transitions=np.zeros((3, 3)),
             emissions_0=np.array(IOB1_SCORES))
    with pytest.raises(InputError, match=r"s\.npz: the tags are those of IOB1 and IOB2"):
        load_lattices(path)
    lat, = load_lattices(path, "IOB1")
    assert lat.scheme == "IOB1"
    code, out, err = run(capsys, "decode", "--scores", path, "--scheme", "IOB1")
    assert code == 0, err
    assert out == "I-PER\nO\nI-PER\n\n"
    code, _, err = run(capsys, "decode", "--scores", path)
    assert code == 2 and "--scheme IOB1 or --scheme IOB2" in err
    np.savez(path, tags=np.array(IOB1_TAGS), scheme=np.array("IOB2"),
             transitions=np.zeros((3, 3)), emissions_0=np.array(IOB1_SCORES))
    code, _, err = run(capsys, "decode", "--scores", path, "--scheme", "IOB1")
    assert code == 2 and "holds IOB2 scores (its 'scheme' array)" in err


def test_expected_reads_an_npz_without_scheme_in_its_scheme_option(tmp_path, capsys):
    path = tmp_path / "s.npz"
    np.savez(path, tags=np.array(IOB1_TAGS), transitions=np.zeros((3, 3)),
             emissions_0=np.array(IOB1_SCORES))
    gold = tmp_path / "g.txt"
    gold.write_text("Tom I-PER\nmet O\nAnn I-PER\n", encoding="utf-8")
    code, out, err = run(capsys, "expected", gold, "--scores", path, "--scheme", "IOB1",
                         "--json")
    assert code == 0, err
    lat = Lattice.from_scores(IOB1_TAGS, np.array(IOB1_SCORES), np.zeros((3, 3)),
                              scheme="IOB1")
    want = expected_f(lat, reference=["I-PER", "O", "I-PER"]).f
    assert json.loads(out)["sentences"][0]["f"] == pytest.approx(want, rel=1e-12)
