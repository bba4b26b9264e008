"""Audit of the segment commands as a new user runs them (second audit): the gold
segments of a CoNLL file in any scheme are its chunks (conlleval.pl misreads the
IOBES family: S-X S-X is not one chunk), and ``segment train --threshold dev``
chooses the threshold of the best F of the decoding ``segment decode`` runs on files
like the dev file (a CoNLL output always adds no-overlap and contiguous), checked
against decodes at each threshold scored by an independent count."""

from __future__ import annotations

import io
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.io.annotation import read_partial
from fstchunk.core.errors import InputError, SchemeError
from fstchunk.models import load_model
from fstchunk.models.segment import decisions
from fstchunk.io.segments import read_segments
from fstchunk.schemes.tagspace import TagSet
from oracles import all_chunkings


def write_tags(path, sentences, crlf=False, bom=False, sep=" "):
    """A CoNLL file of ``word TAG`` lines, sentences blank-line separated."""
    end = "\r\n" if crlf else "\n"
    text = end.join(end.join(f"w{i}{sep}{t}" for i, t in enumerate(tags)) + end
                    for tags in sentences)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(enc.SCHEMES), st.integers(1, 5), st.data(), st.booleans(),
       st.booleans(), st.sampled_from([" ", "\t"]))
def test_the_gold_segments_of_a_conll_file_are_its_chunks_in_every_scheme(
        tmp_path_factory, scheme, n, data, crlf, bom, sep):
    """Oracle: the chunking the file was written from (no reader code)."""
    chunkings = all_chunkings(n, ("A", "B"))
    picked = data.draw(st.lists(st.sampled_from(chunkings), min_size=1, max_size=3))
    f = write_tags(tmp_path_factory.mktemp("s") / "gold.txt",
                   [enc.chunks_to_tags(c, n, scheme) for c in picked], crlf, bom, sep)
    got = [sorted((g.type, g.positions) for g in s.segments) for s in read_segments(str(f))]
    assert got == [sorted((t, tuple(range(a, b))) for t, a, b in c) for c in picked]


@pytest.mark.parametrize("tags, want", [
    ("S-PER S-PER O", [("PER", (0,)), ("PER", (1,))]),
    ("B-PER E-PER B-PER E-PER", [("PER", (0, 1)), ("PER", (2, 3))]),
    ("U-LOC U-LOC B-PER L-PER", [("LOC", (0,)), ("LOC", (1,)), ("PER", (2, 3))]),
    ("B-PER E2-PER S-PER", [("PER", (0, 1)), ("PER", (2,))]),             # IOBES3
    ("I-NP I-NP B-NP O", [("NP", (0, 1)), ("NP", (2,))]),                 # IOB1
    ("I-NP E-NP I-NP E-NP", [("NP", (0, 1)), ("NP", (2, 3))]),            # IOE1/IOE2
])
def test_adjacent_chunks_of_one_type_stay_apart(tmp_path, tags, want):
    f = write_tags(tmp_path / "g.txt", [tags.split()])
    (s,) = read_segments(str(f))
    assert sorted((g.type, g.positions) for g in s.segments) == want


def test_segment_eval_of_an_iobes_gold_against_an_iob2_prediction(tmp_path, capsys):
    """The same chunks in two schemes score 100; one chunk merged scores what an
    independent count gives."""
    gold = write_tags(tmp_path / "gold.txt", [["S-PER", "S-PER", "O", "B-LOC", "E-LOC"]])
    same = write_tags(tmp_path / "same.txt", [["B-PER", "B-PER", "O", "B-LOC", "I-LOC"]])
    merged = write_tags(tmp_path / "merged.txt", [["B-PER", "I-PER", "O", "B-LOC", "I-LOC"]])
    assert main(["segment", "eval", str(gold), str(same), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["f"] == 100.0
    assert main(["segment", "eval", str(gold), str(merged), "--json"]) == 0
    o = json.loads(capsys.readouterr().out)["overall"]
    # gold {PER 0, PER 1, LOC 3-4}, predicted {PER 0-1, LOC 3-4}: 1 correct
    assert (o["tp"], o["predicted"], o["gold"]) == (1, 2, 3)
    assert o["f"] == pytest.approx(100 * 2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3))


def test_a_sentence_mixing_iobes_and_bilou_tags_is_one_error_at_its_line(tmp_path, capsys):
    f = write_tags(tmp_path / "mix.txt", [["B-PER", "E-PER"], ["S-PER", "O", "U-PER"]])
    with pytest.raises(InputError, match=r"mix\.txt:4: 'S-PER' .* mixes schemes"):
        read_segments(str(f))
    assert main(["segment", "eval", str(f), str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mix.txt:4" in err


# ----------------------------------------------------------------- the dev threshold

def _iob2_segments(tags):
    """Chunks of a valid IOB2 column (what segment decode writes), by hand."""
    out, cur = [], None
    for i, t in enumerate(tags + ["O"]):
        if cur and not (t.startswith("I-") and t[2:] == cur[0]):
            out.append(cur)
            cur = None
        if t.startswith("B-"):
            cur = (t[2:], [i])
        elif cur:
            cur[1].append(i)
    return {(ty, tuple(p)) for ty, p in out}


def _predicted(path, conll):
    """Per sentence the predicted segments of a decode output: the last column of a
    CoNLL file (blank-line separated), or the JSONL ``segments``."""
    text = open(path, encoding="utf-8").read()
    if not conll:
        return [{(g["type"], tuple(g["positions"])) for g in json.loads(x)["segments"]}
                for x in text.splitlines() if x.strip()]
    blocks = [b for b in text.split("\n\n") if b.strip()]
    return [_iob2_segments([ln.split()[-1] for ln in b.splitlines()]) for b in blocks]


def _gold(path, conll):
    text = open(path, encoding="utf-8").read()
    if not conll:
        return [{(g["type"], tuple(g["positions"])) for g in json.loads(x)["segments"]}
                for x in text.splitlines() if x.strip()]
    return [_iob2_segments([ln.split()[-1] for ln in b.splitlines()])
            for b in text.split("\n\n") if b.strip()]


def _f(gold, pred):
    tp = sum(len(g & p) for g, p in zip(gold, pred))
    npred, ngold = sum(map(len, pred)), sum(map(len, gold))
    p, r = (tp / npred if npred else 0.0), (tp / ngold if ngold else 0.0)
    return 100 * 2 * p * r / (p + r) if p + r else 0.0


@pytest.fixture
def slices(tmp_path, corpus):
    def blocks(path, n):
        text = open(path, encoding="utf-8").read()
        return "\n\n".join([b for b in text.split("\n\n") if b.strip()][:n]) + "\n"
    (tmp_path / "train.txt").write_text(blocks(corpus("conll2000", "train.txt"), 80))
    (tmp_path / "dev.txt").write_text(blocks(corpus("conll2000", "dev.txt"), 25))
    for name, n in (("train.jsonl", 100), ("dev.jsonl", 30)):
        lines = open(corpus("genia", name), encoding="utf-8").read().splitlines()
        (tmp_path / name).write_text("\n".join(lines[:n]) + "\n")
    return tmp_path


@pytest.mark.parametrize("ext, restrict", [("txt", None), ("txt", "no-embedding"),
                                           ("jsonl", None), ("jsonl", "no-overlap")])
def test_threshold_dev_is_the_best_f_of_the_decoding_of_the_dev_file(slices, capsys, ext,
                                                                     restrict):
    """Oracle: ``segment decode --threshold t`` of the dev file at each grid value, its
    output scored by hand; the tuned threshold is the best (ties nearest 0, then the
    lower) and the F train reports is that decoding's."""
    conll = ext == "txt"
    model, dev = str(slices / "m.npz"), str(slices / f"dev.{ext}")
    args = ["segment", "train", "--train", str(slices / f"train.{ext}"), "--dev", dev,
            "--threshold", "dev", "--epochs", "2", "--hash-bits", "14", "-o", model,
            "--quiet"] + (["--restrict", restrict] if restrict else [])
    assert main(args) == 0
    out = capsys.readouterr().out
    gold, rows = _gold(dev, conll), []
    for t in decisions.THRESHOLDS:
        pred = slices / f"pred.{ext}"
        assert main(["segment", "decode", "--model", model, "--input", dev, "--threshold",
                     str(t), "-o", str(pred)]) == 0
        rows.append((t, _f(gold, _predicted(pred, conll))))
    best = max(rows, key=lambda r: (round(r[1], 9), -abs(r[0]), -r[0]))
    m = load_model(model)
    assert m.threshold == best[0], rows
    assert m.settings_["threshold_tuned_on"]["f"] == pytest.approx(best[1], abs=1e-9)
    assert f"threshold on {dev}: {best[0]:+.1f}" in out and f"F {best[1]:.2f}" in out


@pytest.mark.parametrize("ext, restrict", [("txt", None), ("txt", "no-embedding"),
                                           ("jsonl", None)])
def test_dev_f_of_training_is_the_f_of_the_decoding_of_the_dev_file(slices, capsys, ext,
                                                                   restrict):
    """Oracle: the model each epoch kept (``--select dev``, one epoch at a time) decoded
    by ``segment decode`` on the dev file and scored by hand gives the dev F that
    training reported for that epoch (a CoNLL output adds no-overlap and contiguous)."""
    conll = ext == "txt"
    dev, gold = str(slices / f"dev.{ext}"), _gold(str(slices / f"dev.{ext}"), conll)
    for epochs in (1, 2):
        model = str(slices / f"m{epochs}.npz")
        assert main(["segment", "train", "--train", str(slices / f"train.{ext}"), "--dev",
                     dev, "--epochs", str(epochs), "--hash-bits", "14", "-o", model,
                     "--quiet"] + (["--restrict", restrict] if restrict else [])) == 0
        capsys.readouterr()
        pred = slices / f"pred.{ext}"
        assert main(["segment", "decode", "--model", model, "--input", dev,
                     "-o", str(pred)]) == 0
        m = load_model(model)
        want = _f(gold, _predicted(pred, conll))
        assert m.settings_["history"][-1]["dev_f_average"] == pytest.approx(want, abs=1e-9)
        assert m.settings_["dev_f"] == pytest.approx(want, abs=1e-9)


# ----------------------------------------------------------------- partial annotation

@pytest.mark.parametrize("scheme", ["IOB2", "IOE2", "IOBES", "BILOU"])
@pytest.mark.parametrize("cell", ["*-PER~|O", "O|*-PER~|?", "?~|O", "*-*~|O!"])
def test_a_not_one_chunk_mark_inside_a_cell_is_one_error_not_a_type(tmp_path, capsys,
                                                                    scheme, cell):
    """'~' ends a whole cell; inside one it made a chunk type 'PER~' silently."""
    f = tmp_path / "p.txt"
    single = enc.chunks_to_tags([("PER", 0, 1)], 1, scheme)[0]     # B-PER, E-PER, S-PER...
    f.write_bytes(f"a NN O\r\nb NN {cell}\r\nc NN O\r\n\r\nd NN {single}\r\n".encode())
    raw = next(x for x in cell.split("|") if "~" in x)
    with pytest.raises(SchemeError, match=re.escape(f"{f}:2: annotation item {raw!r}: the "
                                                     "not-one-chunk mark")):
        read_partial(str(f), scheme=scheme)
    code = main(["train", "--train", str(f), "--partial", "--scheme", scheme,
                 "--data-scheme", scheme, "-o", str(tmp_path / "m.npz"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"{f}:2: annotation item" in err
    assert main(["grammar", "print", "annotation", "--scheme", scheme, "--types", "PER",
                 "--gold", f"O,{cell}"]) == 2
    assert "--gold token 2: annotation item" in capsys.readouterr().err


@pytest.mark.parametrize("scheme", ["IOB2", "IOE2", "IOBES", "BILOU"])
def test_a_mark_ending_the_cell_still_rules_the_chunk_out(scheme):
    """Control: 'B-PER|O~' style cells read as before — the span's one chunk excluded,
    against enumeration of the scheme's sequences over PER."""
    ts = TagSet(scheme, ("PER",))
    (ps,) = read_partial(io.StringIO("a *-PER|O~\nb O\n"), scheme=scheme)
    assert ps.types == {"PER"} and ps.not_chunks == ((0, 0),)
    terms = ps.terms(ts)
    col = {t: i for i, t in enumerate(ts.tags)}
    passes = {tuple(y) for c in all_chunkings(2, ("PER",))
              for y in [enc.chunks_to_tags(c, 2, scheme)]
              if any(all(m[i, col[t]] for i, t in enumerate(y)) for m in terms)}
    want = {tuple(enc.chunks_to_tags(c, 2, scheme)) for c in all_chunkings(2, ("PER",))
            if ("PER", 1, 2) not in c and ("PER", 0, 1) not in c
            and ("PER", 0, 2) not in c}
    assert passes == want == {("O", "O")}
