"""Joint model files edited or mismatched (issue 16, item 8, joint side): every field
JointModel.load reads is validated and named on failure, never a TypeError or
IndexError traceback.  Edits are written with a fresh checksum (or as a version-1
file, which has none) so that the field's own validation, not the checksum, is what
is tested; a fuzz test edits fields at random."""

import json

import numpy as np
import pytest
from hypothesis import example, given, HealthCheck, settings
from hypothesis import strategies as st

from fstchunk.io.conll import Sentence
from fstchunk.core.errors import FstchunkError, ModelFileError
from fstchunk.models import joint as J
from fstchunk.models import load_model
from fstchunk.models.io import checksum

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "O"]])]


def saved(path, kind="joint", algorithm="mmvp"):
    data = J.layered(SENTS, collapse=True)
    model, enc = J.model_for(data, kind, {"collapse_pos": True, "np_only": False})
    model.set_params(algorithm=algorithm, max_iter=2).fit(enc)
    model.save(path)
    return model


def rewrite(path, change=lambda m: None, v1=False, **arrays):
    with np.load(path) as z:
        meta = json.loads(str(z["__metadata__"]))
        old = {k: z[k] for k in z.files if k != "__metadata__"}
    change(meta)
    old.update(arrays)
    if v1:
        meta.pop("checksum", None)
        meta["version"] = 1
    else:
        try:
            meta["checksum"] = checksum(meta, old)
        except ValueError:      # inf: JSON has no such number; the reader must refuse it
            pass
    np.savez(path, __metadata__=np.array(json.dumps(meta)), **old)


def setting(key, value):
    def change(m):
        m["settings"][key] = value
    return change


def field(key, value):
    def change(m):
        m[key] = value
    return change


EDITS = [
    (setting("temperature", 0), "settings.temperature", "finite number > 0"),
    (setting("temperature", -2.0), "settings.temperature", "finite number > 0"),
    (setting("temperature", None), "settings.temperature", "finite number > 0"),
    (setting("temperature", "hot"), "settings.temperature", "finite number > 0"),
    (setting("temperature", True), "settings.temperature", "finite number > 0"),
    (setting("kind", "svm"), "settings.kind", "joint, tagger, chunker"),
    (setting("kind", "tagger"), "settings.kind", "the settings were edited"),
    (setting("np_only", True), "settings.np_only", "the settings were edited"),
    (setting("collapse_pos", False), "settings.collapse_pos", "the settings were edited"),
    (field("reading", "joint"), "reading", "expected dict"),
    (setting("collapse_pos", "yes"), "settings.collapse_pos", "true or false"),
    (setting("np_only", 1), "settings.np_only", "true or false"),
    (setting("algorithm", "svm"), "settings.algorithm", "perceptron, mmvp, crf"),
    (setting("calibration_nll", "low"), "settings.calibration_nll", "a number"),
    (setting("columns", {"word": 0}), "settings.columns", "word, pos"),
    (field("settings", []), "settings", "expected dict"),
    (field("chunk_labels", ["NP"]), "chunk_labels", "must include 'O'"),
    (field("chunk_labels", ["NP", "NP", "O"]), "chunk_labels", "repeats a label"),
    (field("chunk_labels", "NP O"), "chunk_labels", "expected list"),
    (field("chunk_labels", [1, "O"]), "chunk_labels", "labels"),
    (field("pos_labels", []), "pos_labels", "non-empty list"),
    (field("pos_labels", ["NOUN", "A B"]), "pos_labels", "without spaces"),
    (field("templates", {"node": [[["w", 0]]], "edge": []}), "templates", "unknown part kind"),
    (field("templates", {"node": [[["x", 0]]]}), "templates.node", "column one of w, t, p"),
    (field("templates", {"node": [[["w", 0.5]]]}), "templates.node", "pairs"),
    (field("templates", {"node": [[["p", 0]]]}), "templates.node", "only a chunker"),
    (field("templates", {"node": "w"}), "templates.node", "list of templates"),
    (field("vocabs", [[]]), "vocabs", "one vocabulary per template"),
    (lambda m: m["vocabs"].__setitem__(0, [1, 2]), "vocabs[0]", "observation strings"),
    (lambda m: m["vocabs"].__setitem__(1, ["a", "a"]), "vocabs[1]", "repeats"),
    (lambda m: m["vocabs"][2].append("w0=extra"), "w", "expected"),
]


@pytest.mark.parametrize("change,name,problem", EDITS, ids=[e[1] + ":" + e[2] for e in EDITS])
@pytest.mark.parametrize("v1", [False, True], ids=["checksummed", "v1"])
def test_each_field_is_validated_and_named(tmp_path, change, name, problem, v1):
    path = tmp_path / "j.npz"
    saved(path)
    rewrite(path, change, v1=v1)
    with pytest.raises(ModelFileError) as e:
        J.JointModel.load(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: field '{name}'") and problem in msg, msg
    with pytest.raises(ModelFileError):
        load_model(path)


@pytest.mark.parametrize("w,problem", [
    (np.zeros(3), "expected"), (np.zeros((2, 2)), "shape"), (np.array(["a"]), "float array"),
    (np.arange(4), "float array")])
def test_weights_are_validated(tmp_path, w, problem):
    path = tmp_path / "j.npz"
    saved(path)
    rewrite(path, w=w)
    with pytest.raises(ModelFileError, match=f"field 'w': .*{problem}"):
        J.JointModel.load(path)


def test_non_finite_weights_and_tagger_labels(tmp_path):
    path = tmp_path / "j.npz"
    model = saved(path)
    w = model.theta_.copy()
    w[3] = np.nan
    rewrite(path, w=w)
    with pytest.raises(ModelFileError, match="field 'w': has values that are not finite"):
        J.JointModel.load(path)
    tagger = tmp_path / "t.npz"
    saved(tagger, "tagger")
    rewrite(tagger, field("chunk_labels", ["NP", "O"]))
    with pytest.raises(ModelFileError, match="field 'chunk_labels': a tagger has the single"):
        J.JointModel.load(tagger)


@pytest.mark.parametrize("kind,saved_as,name,problem", [
    ("tagger", "joint", "chunk_labels", "a tagger has the single chunk label O"),
    ("joint", "tagger", "chunk_labels", "a joint model has at least one chunk type besides O"),
    ("chunker", "tagger", "pos_labels", "a chunker's labels are IOB2 chunk tags"),
    ("tagger", "chunker", "templates.node", r".*only a chunker")])
def test_old_files_without_reading_check_labels_against_the_variant(tmp_path, kind, saved_as,
                                                                    name, problem):
    """Version-1 files have no checksummed ``reading``: an edited ``settings.kind``
    is caught by labels and templates that do not fit the variant."""
    path = tmp_path / "j.npz"
    saved(path, saved_as)

    def change(m):
        m.pop("reading")
        m["settings"]["kind"] = kind
    rewrite(path, change, v1=True)
    with pytest.raises(ModelFileError, match=f"field '{name}': {problem}"):
        J.JointModel.load(path)


def test_settings_edits_outside_the_checksum_that_stay_valid_load(tmp_path):
    """A calibrated temperature is bookkeeping of the settings: a valid edit loads and
    is used (MAP unchanged); a missing field fails naming it."""
    path = tmp_path / "j.npz"
    model = saved(path)
    with np.load(path) as z:
        meta = json.loads(str(z["__metadata__"]))
        arrays = {k: z[k] for k in z.files if k != "__metadata__"}
    meta["settings"]["temperature"] = 2            # edited by hand, checksum untouched
    np.savez(path, __metadata__=np.array(json.dumps(meta)), **arrays)
    back = J.JointModel.load(path)
    assert back.temperature == 2.0 and back.probabilistic and back.path == str(path)
    data = J.layered(SENTS, collapse=True)
    assert J.predict(back, data) == J.predict(model, data)
    rewrite(path, lambda m: m.pop("vocabs"))
    with pytest.raises(ModelFileError, match="field 'vocabs': missing"):
        J.JointModel.load(path)


def test_the_old_v1_file_still_loads():
    import os
    model = J.JointModel.load(os.path.join(os.path.dirname(__file__), "data", "v1",
                                           "joint.npz"))
    assert model.settings_["algorithm"] == "perceptron" and not model.probabilistic


VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False),
                   st.text(max_size=4), st.lists(st.integers(-1, 2), max_size=3),
                   st.dictionaries(st.sampled_from(["node", "w", "O"]),
                                   st.lists(st.text(max_size=2), max_size=2), max_size=2))
KEYS = ["chunk_labels", "pos_labels", "templates", "vocabs", "settings", "settings.kind",
        "settings.temperature", "settings.collapse_pos", "settings.algorithm",
        "settings.columns"]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(KEYS), value=VALUES, v1=st.booleans())
@example(key="chunk_labels", value=float("inf"), v1=False)   # not JSON: refused on load
def test_fuzzed_fields_load_or_fail_with_one_error(tmp_path_factory, key, value, v1):
    path = tmp_path_factory.mktemp("fuzz") / "j.npz"
    saved(path)

    def change(m):
        if key.startswith("settings."):
            m["settings"][key.split(".", 1)[1]] = value
        else:
            m[key] = value
    rewrite(path, change, v1=v1)
    try:
        model = J.JointModel.load(path)
    except ModelFileError as e:
        assert str(e).startswith(f"{path}: ")
        return
    try:                                            # what loads must work or fail cleanly
        J.predict(model, J.layered(SENTS, collapse=True))
    except FstchunkError:
        pass


def test_a_chunker_over_the_tags_seen_in_training_loads(tmp_path):
    """A chunker's labels are the chunk tags its training data has, which need not
    express IOB2 (here B-VP without I-VP; CoNLL-2000 has B-LST without I-LST): the
    file keeps loading, and decodes as before.  A label outside IOB2 is refused."""
    path = tmp_path / "c.npz"
    model = saved(path, "chunker")
    assert "B-VP" in model.pos_labels_ and "I-VP" not in model.pos_labels_
    loaded = J.JointModel.load(path)
    data = J.layered(SENTS, collapse=True)
    assert J.predict(loaded, data) == J.predict(model, data)
    rewrite(path, field("pos_labels", ["B-NP", "I-NP", "E-VP", "O"]))
    with pytest.raises(ModelFileError, match=r"field 'pos_labels': a chunker's labels are IOB2 "
                                             r"chunk tags: item 2 of the tag list: tag 'E-VP'"):
        J.JointModel.load(path)
