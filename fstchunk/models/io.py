"""Model files: one ``.npz`` holding the arrays and a JSON metadata record.

The metadata (kind, version, tags, scheme, feature map, training settings) is
stored as the 0-d string array ``__metadata__``; arrays are plain numeric or
string arrays.  ``np.load`` runs with ``allow_pickle=False``: no pickle, ever.
A truncated file, a foreign ``.npz`` or a model of another kind or a newer
version raises :class:`ModelFileError` naming the file.  Pitfall: a checkpoint
written in place can be read (or left, by a crash) half-written; files are
written to a temporary name and renamed.

Versions: every file so far has ``version`` 1; a reader refuses a newer version
by name rather than misreading it, and a future version 2 reader must keep
reading version 1 files.  :func:`read_metadata` reads the metadata record only
(``np.load`` is lazy), which is how :func:`fstchunk.models.load_model` learns
the kind before loading.
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
    """Write ``arrays`` and ``metadata`` (plus format, version and kind) to ``path``,
    atomically (a temporary file renamed)."""
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
    return _read(path, kind, arrays=True)


def read_metadata(path, kind: str | None = None) -> dict:
    """The metadata record of a model file (kind, tags, settings, ...), checked like
    :func:`load_model_file`'s, without reading the arrays."""
    return _read(path, kind, arrays=False)[0]


def _read(path, kind: str | None, arrays: bool) -> tuple[dict, dict[str, np.ndarray]]:
    name = os.fspath(path)
    try:
        with np.load(name, allow_pickle=False) as z:
            if "__metadata__" not in z.files:
                raise ModelFileError(f"{name}: an .npz file but not an fstchunk model "
                                     f"(no metadata)")
            raw = str(z["__metadata__"])
            out = {k: z[k] for k in z.files if k != "__metadata__"} if arrays else {}
    except ModelFileError:
        raise
    except FileNotFoundError:
        raise ModelFileError(f"{name}: no such model file") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as e:
        raise ModelFileError(f"{name}: not a readable fstchunk model file ({e})") from None
    try:
        meta = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ModelFileError(f"{name}: corrupt model metadata ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        fmt = meta.get("format") if isinstance(meta, dict) else None
        raise ModelFileError(f"{name}: not an fstchunk model (format {fmt!r})")
    try:
        version = int(meta.get("version", 0))
    except (TypeError, ValueError):
        raise ModelFileError(f"{name}: bad model version {meta.get('version')!r}") from None
    if version > VERSION:
        raise ModelFileError(f"{name}: model version {version} is newer than this "
                             f"fstchunk reads ({VERSION})")
    if kind is not None and meta.get("kind") != kind:
        raise ModelFileError(f"{name}: a {meta.get('kind')!r} model, not a {kind!r} model")
    return meta, out
