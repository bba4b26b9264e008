"""Model files: one ``.npz`` holding the arrays and a JSON metadata record.

The metadata (kind, version, tags, scheme, feature map, training settings) is
stored as the 0-d string array ``__metadata__``; arrays are plain numeric or
string arrays.  ``np.load`` runs with ``allow_pickle=False``: no pickle, ever.
A truncated file, a foreign ``.npz`` or a model of another kind or a newer
version raises :class:`ModelFileError` naming the file.  Pitfall: a checkpoint
written in place can be read (or left, by a crash) half-written; files are
written to a temporary name and renamed.
"""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np

from ..errors import ModelFileError

FORMAT = "fstchunk-model"
VERSION = 1


def save_model(path, kind: str, arrays: dict[str, np.ndarray], metadata: dict) -> None:
    meta = dict(metadata, format=FORMAT, version=VERSION, kind=kind)
    out = {k: np.asarray(v) for k, v in arrays.items()}
    for k, v in out.items():
        if v.dtype == object:
            raise TypeError(f"array {k!r} has dtype object, which would need pickle")
    out["__metadata__"] = np.array(json.dumps(meta, sort_keys=True))
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as fh:         # np.savez would append .npz to a bare name
            np.savez_compressed(fh, **out)
        os.replace(tmp, path)               # atomic: a reader never sees half a file
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_model_file(path, kind: str | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """(metadata, arrays) of a model file; ``kind`` checks the model kind."""
    name = os.fspath(path)
    try:
        with np.load(name, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise ModelFileError(f"{name}: no such model file") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as e:
        raise ModelFileError(f"{name}: not a readable fstchunk model file ({e})") from None
    if "__metadata__" not in arrays:
        raise ModelFileError(f"{name}: an .npz file but not an fstchunk model (no metadata)")
    try:
        meta = json.loads(str(arrays.pop("__metadata__")))
    except json.JSONDecodeError as e:
        raise ModelFileError(f"{name}: corrupt model metadata ({e})") from None
    if meta.get("format") != FORMAT:
        raise ModelFileError(f"{name}: not an fstchunk model (format {meta.get('format')!r})")
    if int(meta.get("version", 0)) > VERSION:
        raise ModelFileError(f"{name}: model version {meta['version']} is newer than this "
                             f"fstchunk reads ({VERSION})")
    if kind is not None and meta.get("kind") != kind:
        raise ModelFileError(f"{name}: a {meta.get('kind')!r} model, not a {kind!r} model")
    return meta, arrays
