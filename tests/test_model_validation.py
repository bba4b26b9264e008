"""Model files edited or mismatched (issue 16, item 8): every field a CRF or HMM reads
is validated on load and named on failure, and edits that would stay valid are
caught by the checksum.  Plus a fuzz suite: random bytes and random edits of the
metadata and arrays give a model that works or one FstchunkError, nothing else.

"v1-style" below means a file whose checksum was removed and version set to 1 (as
the files of fstchunk 0.1 are): the checksum no longer guards it, so each field's
own validation must."""

import contextlib
import json
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstchunk.io.conll import Sentence
from fstchunk.decoding.batch import decode_sentences
from fstchunk.core.errors import FstchunkError, ModelFileError
from fstchunk.models import load_model
from fstchunk.models.crf import CRF
from fstchunk.models.hmm import HMM

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["Dogs", "NNS", "B-NP"], ["run", "VBP", "B-VP"]])]


def crf_file(path, template="tmpt3"):
    crf = CRF(template)
    crf._prepare(SENTS)
    crf.theta_ = np.random.default_rng(0).normal(size=crf.theta_.shape)
    crf.save(path)
    return crf


def hmm_file(path):
    m = HMM(min_count=1).fit(SENTS)
    m.save(path)
    return m


def parts(path):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files if k != "__metadata__"}
        meta = json.loads(str(z["__metadata__"]))
    return meta, arrays


def write(path, meta, arrays, raw: str | None = None):
    np.savez(path, __metadata__=np.array(json.dumps(meta) if raw is None else raw), **arrays)


def edit(path, change=lambda m: None, v1=False, **arrays):
    meta, old = parts(path)
    change(meta)
    if v1:
        meta.pop("checksum", None)
        meta["version"] = 1
    write(path, meta, dict(old, **arrays))


def refused(path, match):
    with pytest.raises(ModelFileError, match=match):
        load_model(path)


def test_reordered_tags_are_refused(tmp_path):
    """They decoded silently with F = 0.00."""
    p = tmp_path / "crf.npz"
    crf = crf_file(p)
    tags = list(crf.tags_)
    swapped = [tags[0], tags[2], tags[1]] + tags[3:]
    edit(p, lambda m: m.update(tags=swapped))
    refused(p, r"crf.npz: field\(s\) 'tags' do not match the checksum written with the model "
               r"\(the file was edited\)")
    edit(p, lambda m: None, v1=True)
    refused(p, r"crf.npz: field 'tags': expected the IOB2 tags O, B-NP, I-NP, B-VP, I-VP in "
               r"this order, found O, I-NP, B-NP")


def test_changed_columns_or_template_are_refused(tmp_path):
    p = tmp_path / "crf.npz"
    crf_file(p)
    edit(p, lambda m: m["columns"].update(pos=0, word=2))
    refused(p, r"field\(s\) 'columns' do not match the checksum")
    crf_file(p)
    edit(p, lambda m: m.update(template="tmpt1"))
    refused(p, r"field\(s\) 'template' do not match the checksum")
    # without the checksum: the feature names give the template away
    edit(p, v1=True)
    refused(p, r"crf.npz: field 'template': tmpt1 does not write the features of this model")
    for columns, match in [({"word": 0, "pos": None, "tag": 2}, "template tmpt3 reads POS"),
                           ({"word": 0, "pos": 0, "tag": 2}, "word and pos are the same"),
                           ({"word": 0, "pos": 1}, "exactly the keys word, pos, tag")]:
        crf_file(p)
        edit(p, lambda m: m.update(template="tmpt3", columns=columns), v1=True)
        refused(p, f"crf.npz: field 'columns': .*{match}")
    crf_file(p)
    edit(p, lambda m: (m.pop("columns"), m.update(word_col=1, pos_col=1)), v1=True)
    refused(p, r"crf.npz: field 'word_col/pos_col': .*same column")
    crf_file(p)
    edit(p, lambda m: m.update(template="tmpt7"), v1=True)
    refused(p, r"crf.npz: field 'template': unknown feature template 'tmpt7'")


def test_npy_and_other_files_given_as_a_model(tmp_path):
    """A .npy given as a model ended in a TypeError traceback."""
    np.save(tmp_path / "theta.npy", np.zeros(4))
    refused(tmp_path / "theta.npy", "theta.npy: a .npy array file, not an fstchunk model")
    (tmp_path / "model.json").write_text('{"kind": "crf"}')
    refused(tmp_path / "model.json", r"model.json: not a readable fstchunk model file")


def test_float_pairs_and_other_bad_arrays(tmp_path):
    """Float pairs ended in an IndexError traceback."""
    p = tmp_path / "crf.npz"
    crf = crf_file(p)
    edit(p, pairs=crf.pairs_.astype(float))
    refused(p, r"field\(s\) arrays \(names, dtypes, shapes\) do not match the checksum")
    F, L, P = len(crf.fmap_), len(crf.tags_), crf.P
    bad_pairs = crf.pairs_.copy()
    bad_pairs[0, 1] = L
    dup = crf.pairs_.copy()
    dup[1] = dup[0]
    nan = crf.theta_.copy()
    nan[3] = np.nan
    cases = [({"pairs": crf.pairs_.astype(float)}, "field 'pairs': expected a int array, "
                                                   "found dtype float64"),
             ({"pairs": crf.pairs_.ravel()}, r"field 'pairs': expected shape \(\*, 2\)"),
             ({"pairs": bad_pairs}, f"field 'pairs': .*out of range of the {F} features "
                                    f"and {L} tags"),
             ({"pairs": -crf.pairs_}, "field 'pairs': .*out of range"),
             ({"pairs": dup}, "field 'pairs': repeats a"),
             ({"theta": nan}, "field 'theta': has values that are not finite"),
             ({"theta": crf.theta_[:-1]},
              f"field 'theta': expected shape \\({P + L * L + 2 * L},\\)"),
             ({"theta": crf.theta_.astype(np.int64)}, "field 'theta': expected a float array"),
             ({"feature_names": np.frombuffer(b"\xff\xfe", dtype=np.uint8)},
              "field 'feature_names': not UTF-8"),
             ({"feature_names": np.array(["b"])}, "field 'feature_names': expected a bytes"),
             ]
    for arrays, match in cases:
        crf_file(p)
        edit(p, v1=True, **arrays)
        refused(p, "crf.npz: " + match)
    crf_file(p)
    meta, arrays = parts(p)
    del arrays["theta"]
    meta.pop("checksum")
    meta["version"] = 1
    write(p, meta, arrays)
    refused(p, "crf.npz: field 'theta': array missing")


def test_hmm_fields(tmp_path):
    p = tmp_path / "hmm.npz"
    m = hmm_file(p)
    pos = m.log_pos_.copy()
    pos[0, 0] = 0.5
    cases = [({"log_pos": pos}, {}, "field 'log_pos': log-probabilities must be <= 0"),
             ({"vocab": np.array(["a", "<unk>"])}, {}, r"field 'log_word': expected shape"),
             ({"vocab": np.array([w for w in m.vocab_ if w != "<unk>"] + ["zzz"])}, {},
              "field 'vocab': lacks the unknown-word entry"),
             ({"log_end": np.full(len(m.tags_), np.inf)}, {}, "field 'log_end': has values"),
             ({}, {"settings": {"delta": -1}}, "field 'settings': delta must be"),
             ({}, {"settings": [1]}, "field 'settings': expected dict"),
             ({}, {"scheme": "IOB9"}, "field 'scheme': unknown chunk scheme"),
             ({}, {"tags": "O"}, "field 'tags': expected list")]
    for arrays, meta, match in cases:
        hmm_file(p)
        edit(p, lambda mt: mt.update(meta), v1=True, **arrays)
        refused(p, "hmm.npz: " + match)
    hmm_file(p)
    edit(p, lambda mt: mt["settings"].update(delta=0.5))     # bookkeeping: may be edited
    assert load_model(p).settings_["delta"] == 0.5


def test_old_hmm_files_keep_their_columns_in_settings(tmp_path):
    p = tmp_path / "hmm.npz"
    hmm_file(p)
    edit(p, lambda m: (m.pop("columns"), m["settings"].update(word_col=0, pos_col=1)), v1=True)
    m = load_model(p)
    assert (m.columns_.word, m.columns_.pos, m.columns_.tag) == (0, 1, -1)
    edit(p, lambda m: m["settings"].update(pos_col="1"), v1=True)
    refused(p, "hmm.npz: field 'word_col/pos_col': .*pos column must be an integer")


# ------------------------------------------------------------------------- fuzz
@pytest.fixture(scope="module")
def originals():
    with tempfile.TemporaryDirectory() as d:
        out = {}
        for kind, make in (("crf", crf_file), ("hmm", hmm_file)):
            p = os.path.join(d, f"{kind}.npz")
            make(p)
            with open(p, "rb") as fh:
                out[kind] = fh.read()
        yield out


def loads_or_fails_cleanly(path):
    """load_model and decode one sentence: success, or one FstchunkError."""
    try:
        model = load_model(path)
        decode_sentences(model, SENTS[:2], "map", 1.0)
        decode_sentences(model, SENTS[:1], "meu", 1.0)
    except FstchunkError:
        pass


FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", 60)), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(st.binary(max_size=300), st.sampled_from(["crf", "hmm"]), st.integers(0, 10**6),
       st.booleans())
def test_random_bytes(originals, data, kind, at, splice):
    """Random bytes, or random bytes spliced into a real model file."""
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "m.npz")
        raw = originals[kind]
        if splice:
            at %= len(raw)
            data = raw[:at] + data + raw[at + len(data):]
        with open(p, "wb") as fh:
            fh.write(data)
        loads_or_fails_cleanly(p)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False)
    | st.text(max_size=6) | st.sampled_from(["O", "B-NP", "IOB2", "tmpt1", "ner-nopos"]),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=8)


def paths(value, prefix=()):
    """Every path (keys and indices) into a JSON value."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, prefix + (i,))



@contextlib.contextmanager
def copy_of(data: bytes):
    """A model file holding ``data`` in a fresh temporary folder (hypothesis examples
    cannot use the function-scoped tmp_path)."""
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "m.npz")
        with open(p, "wb") as fh:
            fh.write(data)
        yield p


@FUZZ
@given(st.sampled_from(["crf", "hmm"]), st.data(), st.booleans())
def test_random_metadata_edits(originals, kind, data, v1):
    with copy_of(originals[kind]) as p:
        meta, arrays = parts(p)
        for _ in range(data.draw(st.integers(1, 3))):
            where = data.draw(st.sampled_from([q for q in paths(meta) if q]))
            parent = meta
            for k in where[:-1]:
                parent = parent[k]
            if isinstance(parent, dict) and data.draw(st.booleans()):
                del parent[where[-1]]
            else:
                parent[where[-1]] = data.draw(json_values)
        if v1:
            meta.pop("checksum", None)
            meta["version"] = 1
        write(p, meta, arrays)
        loads_or_fails_cleanly(p)


@FUZZ
@given(st.sampled_from(["crf", "hmm"]), st.data())
def test_random_array_edits(originals, kind, data):
    with copy_of(originals[kind]) as p:
        meta, arrays = parts(p)
        meta.pop("checksum")
        meta["version"] = 1
        name = data.draw(st.sampled_from(sorted(arrays)))
        shape = data.draw(st.lists(st.integers(0, 4), max_size=3).map(tuple))
        dtype = data.draw(st.sampled_from([np.float64, np.int64, np.uint8, np.bool_, "U3"]))
        size = int(np.prod(shape))
        values = data.draw(st.lists(st.integers(-5, 300) | st.floats(), min_size=size,
                                    max_size=size))
        with np.errstate(all="ignore"):
            arrays[name] = (np.array(values, dtype=float).astype(dtype) if dtype != "U3"
                            else np.array([str(v) for v in values])).reshape(shape)
        write(p, meta, arrays)
        loads_or_fails_cleanly(p)


@FUZZ
@given(st.sampled_from(["crf", "hmm"]), st.integers(0, 10**6), st.text(max_size=12))
def test_random_json_text(originals, kind, at, text):
    """The metadata text itself damaged (not JSON, bare NaN, ...)."""
    with copy_of(originals[kind]) as p:
        meta, arrays = parts(p)
        raw = json.dumps(meta)
        at %= len(raw)
        write(p, meta, arrays, raw=raw[:at] + text + raw[at + len(text):])
        loads_or_fails_cleanly(p)
