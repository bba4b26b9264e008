"""Issue 43, item 7: a segment model given where tag lattices are read (``decode``,
``expected``, ``select``, ``calibrate``, ``fstchunk.decode_sentences``) is one clear error
naming ``fstchunk segment decode`` (it was an AttributeError); a joint model where a
command cannot take it likewise names its own command."""

import pytest

import fstchunk
from fstchunk.cli import main
from fstchunk.io.conll import read_conll, write_conll
from fstchunk.core.errors import InputError
from fstchunk.io.segments import read_segments
from fstchunk.models.segment import SegmentModel


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def files(tmp_path_factory, corpus):
    d = tmp_path_factory.mktemp("kinds")
    write_conll(read_conll(corpus("conll2000", "train.txt"))[:20], d / "dev.txt")
    with open(corpus("genia", "train.jsonl"), encoding="utf-8") as fh:
        (d / "seg.jsonl").write_text("".join(next(fh) for _ in range(30)), encoding="utf-8")
    SegmentModel(D=2 ** 10, max_iter=1).fit(read_segments(str(d / "seg.jsonl")),
                                            progress=False).save(d / "seg.npz")
    return d


def test_a_segment_model_where_tag_lattices_are_read(files, capsys):
    seg, dev = files / "seg.npz", files / "dev.txt"
    for argv in (["decode", "--model", seg, "--input", dev],
                 ["decode", "--model", seg, "--input", dev, "--format", "jsonl"],
                 ["expected", dev, "--model", seg],
                 ["select", "--model", seg, "--input", dev, "--budget", "2", "-o",
                  files / "o.txt"]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (argv, err)
        assert f"{seg}: a segment model" in err and "fstchunk segment decode" in err, err
        assert "Traceback" not in err
    code, out, err = run(capsys, "calibrate", "--model", seg, "--input", dev, "-o",
                         files / "c.npz")
    assert code == 2 and "a segment model" in err and "segment decode" in err, err
    model = fstchunk.load_model(seg)
    with pytest.raises(InputError, match=r"model\.decode\(sentences\).*fstchunk segment "
                                         r"decode"):
        fstchunk.decode_sentences(model, read_conll(dev))
    with pytest.raises(InputError, match="segment"):
        list(fstchunk.decoding.batch.iter_decode_sentences(model, read_conll(dev)))


def test_a_model_of_another_kind_names_its_commands(files, capsys):
    seg, dev = files / "seg.npz", files / "dev.txt"
    for argv in (["train", "--train", dev, "--init", seg, "-o", files / "x.npz"],
                 ["joint", "decode", "--model", seg, "--input", dev]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and "a 'segment' model, not a" in err, err
        assert "fstchunk segment train, decode and eval" in err
