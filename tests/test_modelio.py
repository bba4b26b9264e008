"""Model files: npz + JSON metadata, no pickle, atomic writes, one clear error."""

import json

import numpy as np
import pytest

from fstchunk.models import io as modelio
from fstchunk.errors import ModelFileError
from fstchunk.models.io import load_model_file, read_metadata, save_model


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
    with pytest.raises(ModelFileError, match="m.npz: model version 2 is newer"):
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
