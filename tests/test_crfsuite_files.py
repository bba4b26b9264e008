"""CRFsuite's files read (and written) without python-crfsuite (fstchunk/io/crfsuite/):
model files against pycrfsuite.Tagger's dump and its probabilities, damaged files
refused naming file and offset, the data format's escapes and refusals."""

import io
import math
import os
import re
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstchunk.io.conll import read_conll
from fstchunk.io.crfsuite import (Sequence, escape, format_sequence, iter_data, read_data,
                                  read_model, write_data)
from fstchunk.core.errors import InputError, ModelFileError
from fstchunk.models.features import token_features

pycrfsuite = pytest.importorskip("pycrfsuite")
DATA = os.environ.get("FSTCHUNK_DATA", "/work/shared/data")
needs_data = pytest.mark.skipif(not os.path.isdir(DATA), reason="FSTCHUNK_DATA not found")


def _items(s):
    """tmpt1 attributes plus a weighted one and names CRFsuite must escape."""
    out = []
    for i, feats in enumerate(token_features(s.column(0), s.column(1), "tmpt1")):
        d = {f: 1.0 for f in feats}
        d["len"] = len(s.rows[i][0]) / 4.0
        d["ratio:colon\\back"] = 0.5 if s.rows[i][0][0].isupper() else 0.25
        d["é"] = 1.0
        out.append(d)
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    sents = read_conll(os.path.join(DATA, "conll2000/train.txt"))[:150]
    trainer = pycrfsuite.Trainer(verbose=False)
    for s in sents:
        trainer.append(pycrfsuite.ItemSequence(_items(s)), s.column(2))
    trainer.set_params({"c1": 0.0, "c2": 0.1, "max_iterations": 40,
                        "feature.possible_transitions": True})
    path = str(tmp_path_factory.mktemp("crfsuite") / "model.crfsuite")
    trainer.train(path)
    tagger = pycrfsuite.Tagger()
    tagger.open(path)
    return path, tagger, sents


@needs_data
def test_model_equals_pycrfsuite_dump(trained):
    path, tagger, _ = trained
    m = read_model(path)
    info = tagger.info()
    assert m.labels == sorted(info.labels, key=lambda k: int(info.labels[k]))
    assert m.labels == tagger.labels()
    assert m.attributes == sorted(info.attributes, key=lambda k: int(info.attributes[k]))
    assert "ratio:colon\\back" in m.attributes and "é" in m.attributes
    ours = m.state_features()
    assert ours.keys() == info.state_features.keys()
    # the dump prints weights with %f: equal to its 6 decimals
    assert max(abs(ours[k] - w) for k, w in info.state_features.items()) <= 5e-7 + 1e-12
    trans = m.transition_features(nonzero=False)
    assert trans.keys() == info.transitions.keys()
    assert max(abs(trans[k] - w) for k, w in info.transitions.items()) <= 5e-7 + 1e-12


def _log_partition(E, T):
    a = E[0].copy()
    for t in range(1, len(E)):
        a = np.logaddexp.reduce(a[:, None] + T, axis=0) + E[t]
    return np.logaddexp.reduce(a)


@needs_data
def test_weights_are_exact_crfsuite_probabilities(trained):
    """Beyond the dump's 6 decimals: p(y|x) from the weights read (Σ x·w + Σ trans,
    CRFsuite's score) equals Tagger.probability to 1e-9 on the training sentences."""
    path, tagger, sents = trained
    m = read_model(path)
    lab = {y: i for i, y in enumerate(m.labels)}
    att = {a: i for i, a in enumerate(m.attributes)}
    W = np.zeros((len(m.attributes), len(m.labels)))
    W[m.state_attr, m.state_label] = m.state_weight
    for s in sents[:40]:
        items = _items(s)
        E = np.array([sum(v * W[att[a]] for a, v in it.items() if a in att) for it in items])
        y = [lab[t] for t in s.column(2)]
        score = E[np.arange(len(y)), y].sum() + sum(m.transitions[a, b] for a, b in
                                                   zip(y, y[1:]))
        tagger.set(pycrfsuite.ItemSequence(items))
        assert math.isclose(math.exp(score - _log_partition(E, m.transitions)),
                            tagger.probability(s.column(2)), rel_tol=1e-9, abs_tol=1e-12)


def _damaged(src, tmp_path, edit, name="bad.crfsuite"):
    data = bytearray(open(src, "rb").read())
    out = edit(data)
    data = data if out is None else out
    p = tmp_path / name
    p.write_bytes(bytes(data))
    return str(p)


def _header(data):
    return struct.unpack_from("<4sI4s9I", data, 0)


def _put(data, off, fmt, value):
    struct.pack_into(fmt, data, off, value)


@needs_data
@pytest.mark.parametrize("case,offset,what", [
    ("empty", 0, "the file header needs 48 bytes"),
    ("magic", 0, "magic"),
    ("truncated", 4, "the header says the file has"),
    ("type", 8, "model type"),
    ("labels-db", None, "expected a CQDB"),
    ("byteorder", None, "byte-order mark"),
    ("feature-type", None, "type is neither"),
    ("label-range", None, "label id out of range"),
    ("nan", None, "not finite"),
    ("refs", None, "expected chunk LFRF"),
])
def test_damaged_model_files_are_refused_naming_file_and_offset(trained, tmp_path, case,
                                                                offset, what):
    path = trained[0]
    h = _header(open(path, "rb").read())
    off_feat, off_labels, off_lrefs = h[7], h[8], h[10]
    first = off_feat + 12
    edits = {
        "empty": lambda d: bytearray(),
        "magic": lambda d: d.__setitem__(slice(0, 4), b"lCRX"),
        "truncated": lambda d: d[:len(d) // 2],
        "type": lambda d: d.__setitem__(slice(8, 12), b"FOMX"),
        "labels-db": lambda d: d.__setitem__(slice(off_labels, off_labels + 4), b"XXXX"),
        "byteorder": lambda d: _put(d, off_labels + 12, "<I", 0x71534462),
        "feature-type": lambda d: _put(d, first, "<I", 7),
        "label-range": lambda d: _put(d, first + 8, "<I", 10_000),
        "nan": lambda d: _put(d, first + 12, "<d", float("nan")),
        "refs": lambda d: d.__setitem__(slice(off_lrefs, off_lrefs + 4), b"XXXX"),
    }
    bad = _damaged(path, tmp_path, edits[case])
    with pytest.raises(ModelFileError) as e:
        read_model(bad)
    msg = str(e.value)
    assert msg.startswith(f"{bad}: byte offset ") and what in msg, msg
    if offset is not None:
        assert msg.startswith(f"{bad}: byte offset {offset}:")
    with pytest.raises(ModelFileError, match="cannot read the CRFsuite model"):
        read_model(tmp_path / "missing.crfsuite")


@needs_data
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_truncation_or_corruption_is_one_error_or_the_same_model(trained, tmp_path,
                                                                     data):
    path = trained[0]
    raw = bytearray(open(path, "rb").read())
    good = read_model(path)
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    else:
        for _ in range(data.draw(st.integers(1, 4))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    p = tmp_path / "fuzz.crfsuite"
    p.write_bytes(bytes(raw))
    try:
        m = read_model(p)
    except ModelFileError as e:
        assert str(e).startswith(f"{p}: byte offset ")
        return
    # a byte that no reader uses (hash tables, references' contents) may change freely;
    # what was read is either the model or a weight changed in place
    assert m.labels == good.labels or len(m.labels) == len(good.labels)
    assert m.state_weight.shape == good.state_weight.shape


# ------------------------------------------------------------------ data format
def test_data_format_reads_as_crfsuite_does(tmp_path):
    p = tmp_path / "d.txt"
    p.write_bytes("@weight:2.5\nB-NP\tw=He\tlen:0.5\t\tw\\:x\\\\y:2\tlen:1\tq\\z:\n"
                  "I-NP\té\n\n\nO\ta\r\n".encode())
    seqs = read_data(p)
    assert len(seqs) == 2 and seqs[0].weight == 2.5 and seqs[1].weight == 1.0
    assert seqs[0].labels == ["B-NP", "I-NP"] and seqs[0].lines == [2, 3]
    assert seqs[0].items[0] == {"w=He": 1.0, "len": 1.5, "w:x\\y": 2.0, "q\\z": 1.0}
    assert seqs[1].items == [{"a": 1.0}] and seqs[1].where(0) == f"{p}:6"


@pytest.mark.parametrize("text,where,what", [
    ("B-NP\tw=a:1:2\n", ":1 (field 2)", "second unescaped ':'"),
    ("B-NP\tw=a:abc\n", ":1 (field 2)", "not a finite number"),
    ("B-NP\tw=a:nan\n", ":1 (field 2)", "not a finite number"),
    ("B:NP\tw=a\n", ":1", "label field 'B:NP' has an unescaped ':'"),
    ("B-NP\tw\n\t\t\n", ":2", "a line of tabs only"),
    ("B-NP\tw\n\tw=a\tb\n", ":2", "starts with a tab: no label .*'w=a' as the label"),
    ("B-NP\tw\n@weight:2\n", ":2", "@weight:W, alone on a sequence's first line"),
    ("@group:1\nB-NP\tw\n", ":1", "the one declaration is @weight"),
])
def test_data_format_refusals_name_the_line(tmp_path, text, where, what):
    p = tmp_path / "d.txt"
    p.write_text(text)
    with pytest.raises(InputError, match=f"^{re.escape(f'{p}{where}')}: .*{what}"):
        read_data(p)


_NAME = st.text(st.characters(codec="utf-8", exclude_characters="\t\n\r\ufeff",
                              exclude_categories=("Cs",)), min_size=1, max_size=6)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.tuples(_NAME.filter(lambda t: not t.startswith("@")),
                                   st.dictionaries(_NAME, st.floats(-1e6, 1e6)
                                                   .filter(lambda v: v != 0) | st.just(1.0),
                                                   max_size=4)),
                         min_size=1, max_size=4), min_size=1, max_size=3),
       st.sampled_from([1.0, 0.5, 3.0]))
def test_data_format_round_trip(seqs, weight):
    """Whatever labels and names (colons, backslashes, any Unicode), values and weights:
    written and read back equal."""
    text = "".join(format_sequence([y for y, _ in s], [d for _, d in s], weight)
                   for s in seqs)
    back = read_data(io.BytesIO(text.encode("utf-8")))
    assert [b.labels for b in back] == [[y for y, _ in s] for s in seqs]
    assert [b.items for b in back] == [[d for _, d in s] for s in seqs]
    assert all(b.weight == weight for b in back)


def test_write_data_and_unwritable_names(tmp_path):
    seq = Sequence(["B-NP", "O"], [{"a:b": 2.0, "c": 1.0}, {"\\": 1.0}])
    write_data(tmp_path / "o.txt", [seq])
    assert (tmp_path / "o.txt").read_text() == "B-NP\ta\\:b:2.0\tc\nO\t\\\\\n\n"
    assert read_data(tmp_path / "o.txt")[0].items == seq.items
    with pytest.raises(InputError, match="tab or line break"):
        escape("a\tb")
    assert list(iter_data(io.BytesIO(b""))) == []
