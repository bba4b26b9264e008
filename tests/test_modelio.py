"""Model files: npz + JSON metadata, no pickle, atomic writes, one clear error,
strict JSON, the checksum against edits."""

import json

import numpy as np
import pytest

from fstchunk.models import io as modelio
from fstchunk.core.errors import InputError, ModelFileError, OutputError
from fstchunk.models.io import Fields, load_model_file, read_metadata, save_model


def rewrite(path, edit, arrays=None):
    """Rewrite a model file's metadata with ``edit(meta)`` (and replace some arrays),
    the way a person editing the JSON would: nothing else changes."""
    with np.load(path) as z:
        out = {k: z[k] for k in z.files}
    meta = json.loads(str(out["__metadata__"]))
    edit(meta)
    out["__metadata__"] = np.array(json.dumps(meta))
    out.update(arrays or {})
    np.savez(path, **out)


def test_round_trip(tmp_path):
    p = tmp_path / "m.npz"
    save_model(p, "crf", {"theta": np.arange(5.0), "names": np.array(["a", "b"])},
               {"tags": ["B-NP", "O"]})
    meta, arrays = load_model_file(p, "crf")
    assert meta["tags"] == ["B-NP", "O"] and meta["kind"] == "crf"
    assert meta["version"] == modelio.VERSION
    np.testing.assert_array_equal(arrays["theta"], np.arange(5.0))
    assert list(arrays["names"]) == ["a", "b"]
    assert read_metadata(p) == meta
    with pytest.raises(ModelFileError, match="m.npz: a 'crf' model, not a 'hmm' model"):
        read_metadata(p, "hmm")


def test_object_arrays_are_refused(tmp_path):
    with pytest.raises(TypeError, match="'bad' has dtype object"):
        save_model(tmp_path / "m.npz", "crf", {"bad": np.array([{}, 1], dtype=object)}, {})
    assert not list(tmp_path.iterdir())


def test_newer_version_and_foreign_format(tmp_path):
    p = tmp_path / "m.npz"
    meta = {"format": modelio.FORMAT, "version": modelio.VERSION + 1, "kind": "crf"}
    np.savez(p, __metadata__=np.array(json.dumps(meta)))
    with pytest.raises(ModelFileError, match=f"m.npz: model version {modelio.VERSION + 1} "
                                             f"is newer"):
        load_model_file(p)
    np.savez(p, __metadata__=np.array(json.dumps({"format": "other"})))
    with pytest.raises(ModelFileError, match="not an fstchunk model \\(format 'other'\\)"):
        load_model_file(p)
    np.savez(p, __metadata__=np.array("{not json"))
    with pytest.raises(ModelFileError, match="corrupt model metadata"):
        load_model_file(p)
    np.savez(p, __metadata__=np.array("[1, 2]"))
    with pytest.raises(ModelFileError, match="not an fstchunk model \\(format None\\)"):
        read_metadata(p)


def test_unreadable_files_name_themselves(tmp_path):
    """Truncated, foreign and missing files: one ModelFileError naming the file, with
    or without reading the arrays."""
    p = tmp_path / "m.npz"
    save_model(p, "hmm", {"a": np.arange(1000.0)}, {})
    (tmp_path / "cut.npz").write_bytes(p.read_bytes()[:100])
    np.savez(tmp_path / "foreign.npz", x=np.zeros(2))
    for read in (load_model_file, read_metadata):
        with pytest.raises(ModelFileError, match="cut.npz: not a readable fstchunk model"):
            read(tmp_path / "cut.npz")
        with pytest.raises(ModelFileError, match="foreign.npz: an .npz file but not"):
            read(tmp_path / "foreign.npz")
        with pytest.raises(ModelFileError, match="gone.npz: no such model file"):
            read(tmp_path / "gone.npz")


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    """A save that dies half-way leaves the previous model intact and no temporary file."""
    p = tmp_path / "m.npz"
    save_model(p, "crf", {"theta": np.ones(3)}, {})

    def dies(fh, **arrays):
        fh.write(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez_compressed", dies)
    with pytest.raises(KeyboardInterrupt):
        save_model(p, "crf", {"theta": np.zeros(3)}, {})
    assert [f.name for f in tmp_path.iterdir()] == ["m.npz"]
    np.testing.assert_array_equal(load_model_file(p)[1]["theta"], np.ones(3))


def test_round_trip_keeps_the_checksum_and_settings_may_change(tmp_path):
    p = tmp_path / "m.npz"
    save_model(p, "crf", {"theta": np.arange(3.0)}, {"tags": ["O", "B-NP"], "settings": {}})
    meta = read_metadata(p)
    assert meta["version"] == 2 and set(meta["checksum"]) == {"tags", "kind", "__arrays__"}
    rewrite(p, lambda m: m["settings"].update(note="edited by hand"))
    assert load_model_file(p)[0]["settings"] == {"note": "edited by hand"}


@pytest.mark.parametrize("edit, field", [
    (lambda m: m.update(tags=["B-NP", "O"]), "'tags'"),
    (lambda m: m.update(kind="crf", extra=1), "'extra'"),
    (lambda m: m.pop("tags"), "'tags'"),
    (lambda m: m["checksum"].pop("tags"), "'tags'"),
])
def test_edited_fields_do_not_match_the_checksum(tmp_path, edit, field):
    p = tmp_path / "m.npz"
    save_model(p, "crf", {"theta": np.arange(3.0)}, {"tags": ["O", "B-NP"], "settings": {}})
    rewrite(p, edit)
    for read in (load_model_file, read_metadata):
        with pytest.raises(ModelFileError, match=f"m.npz: field\\(s\\) {field} do not match "
                                                 f"the checksum written with the model \\(the "
                                                 f"file was edited\\)"):
            read(p)


def test_edited_arrays_and_missing_checksums(tmp_path):
    p = tmp_path / "m.npz"
    save_model(p, "crf", {"theta": np.arange(3.0)}, {"tags": ["O"]})
    rewrite(p, lambda m: None, {"theta": np.arange(4.0)})
    with pytest.raises(ModelFileError, match="field\\(s\\) arrays \\(names, dtypes, shapes\\)"):
        load_model_file(p)
    assert read_metadata(p)["tags"] == ["O"]         # the metadata alone still matches
    rewrite(p, lambda m: m.pop("checksum"))
    with pytest.raises(ModelFileError, match="m.npz: field 'checksum': missing"):
        read_metadata(p)
    rewrite(p, lambda m: m.update(version=1))        # a version 1 file has none
    assert load_model_file(p)[1]["theta"].shape == (4,)
    for bad in ("1", True, 0, None):
        rewrite(p, lambda m: m.update(version=bad))
        with pytest.raises(ModelFileError, match="bad model version"):
            read_metadata(p)


def test_metadata_is_written_as_strict_json(tmp_path):
    """Issue 16, item 8: β NaN was written as bare NaN (invalid JSON)."""
    p = tmp_path / "m.npz"
    save_model(p, "crf", {"theta": np.zeros(2)},
               {"tags": ["O"], "settings": {"beta": float("nan"), "dev_f": float("inf"),
                                            "sentences": np.int64(3), "l2": np.float32(0.5),
                                            "shape": (1, 2)}})
    with np.load(p) as z:
        raw = str(z["__metadata__"])
    assert "NaN" not in raw and "Infinity" not in raw
    meta = json.loads(raw, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    assert meta["settings"] == {"beta": None, "dev_f": None, "sentences": 3, "l2": 0.5,
                                "shape": [1, 2]}
    with pytest.raises(InputError, match="model field 'tags': nan is not a finite number"):
        save_model(tmp_path / "x.npz", "crf", {}, {"tags": [float("nan")]})
    with pytest.raises(InputError, match="model field 'settings.f': .* cannot be stored"):
        save_model(tmp_path / "x.npz", "crf", {}, {"settings": {"f": print}})
    assert not (tmp_path / "x.npz").exists()


def test_bare_nan_in_a_file_is_refused(tmp_path):
    p = tmp_path / "m.npz"
    meta = {"format": modelio.FORMAT, "version": 1, "kind": "crf", "settings": {"beta": 0}}
    np.savez(p, __metadata__=np.array(json.dumps(meta).replace("0}", "NaN}")))
    with pytest.raises(ModelFileError, match="m.npz: corrupt model metadata \\(NaN is not "
                                             "strict JSON"):
        read_metadata(p)


def test_files_that_are_not_npz(tmp_path):
    """Issue 16, item 8: a .npy given as a model ended in a TypeError traceback."""
    np.save(tmp_path / "theta.npy", np.zeros(3))
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "empty.npz").write_bytes(b"")
    (tmp_path / "folder.npz").mkdir()
    np.savez(tmp_path / "numbers.npz", __metadata__=np.arange(3))
    cases = [("theta.npy", "a .npy array file, not an fstchunk model"),
             ("notes.txt", "not a readable fstchunk model file \\(not an .npz\\)"),
             ("empty.npz", "not a readable fstchunk model file"),
             ("folder.npz", "cannot read the model file"),
             ("numbers.npz", "field '__metadata__': not a JSON string")]
    for name, match in cases:
        for read in (load_model_file, read_metadata):
            with pytest.raises(ModelFileError, match=f"{name}: {match}"):
                read(tmp_path / name)


def test_save_to_a_missing_folder_or_a_folder(tmp_path):
    """Issue 16, item 5: one OutputError naming the path, no file left behind."""
    with pytest.raises(OutputError, match="nowhere/m.npz: folder .*nowhere does not exist"):
        save_model(tmp_path / "nowhere" / "m.npz", "crf", {"theta": np.ones(2)}, {})
    (tmp_path / "d.npz").mkdir()
    with pytest.raises(OutputError, match=r"d.npz: is a folder \(the model file needs a file name\)"):
        save_model(tmp_path / "d.npz", "crf", {"theta": np.ones(2)}, {})
    assert [f.name for f in tmp_path.iterdir()] == ["d.npz"]


def test_a_failed_write_is_an_output_error(tmp_path, monkeypatch):
    p = tmp_path / "m.npz"

    def disk_full(fh, **arrays):
        fh.write(b"PK\x03\x04")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", disk_full)
    with pytest.raises(OutputError, match=r"m.npz: cannot write \(no space left on device\)"):
        save_model(p, "crf", {"theta": np.zeros(3)}, {})
    assert not list(tmp_path.iterdir())


def test_fields_validate_and_name_the_field(tmp_path):
    f = Fields("m.npz", {"tags": ["O", "B-NP", "I-NP"], "n": True, "scheme": "iob2"},
               {"a": np.zeros((2, 3)), "s": np.array(["x", "x"]), "i": np.array([np.nan])})
    assert f.scheme() == "IOB2" and f.tags("IOB2") == ("O", "B-NP", "I-NP")
    assert f.array("a", "float", (2, None)).shape == (2, 3)
    cases = [(lambda: f.get("n", int), "field 'n': expected int, found True"),
             (lambda: f.get("missing", str), "field 'missing': missing"),
             (lambda: f.tags("IOE1"), "field 'tags': not tags of IOE1: .*'B-NP'"),
             (lambda: f.array("a", "int", (2, 3)), "field 'a': expected a int array"),
             (lambda: f.array("a", "float", (3, None)), "field 'a': expected shape \\(3, \\*\\)"),
             (lambda: f.array("i", "float", (1,), finite=True), "field 'i': has values that"),
             (lambda: f.array("zz", "float", (1,)), "field 'zz': array missing"),
             (lambda: f.strings("s"), "field 's': repeats an entry")]
    for call, match in cases:
        with pytest.raises(ModelFileError, match="m.npz: " + match):
            call()
    g = Fields("m.npz", {"tags": ["O", "I-NP", "B-NP"], "scheme": "IOB9"}, {})
    with pytest.raises(ModelFileError, match="field 'tags': expected the IOB2 tags O, B-NP, "
                                             "I-NP in this order, found O, I-NP, B-NP"):
        g.tags("IOB2")
    with pytest.raises(ModelFileError, match="field 'scheme': unknown chunk scheme 'IOB9'"):
        g.scheme()
    with pytest.raises(ModelFileError, match="field 'tags': not tags of IOB2"):
        Fields("m.npz", {"tags": ["O", "X-NP"]}, {}).tags("IOB2")
