"""Model files: one ``.npz`` holding the arrays and a JSON metadata record.

The metadata (kind, version, tags, scheme, feature map, columns, training
settings) is stored as the 0-d string array ``__metadata__``; arrays are plain
numeric arrays, and lists of strings (feature and attribute names, vocabularies) UTF-8
byte arrays, any string kept as it is (:mod:`fstchunk.core.stringpack`: a line break in a
name, a trailing NUL, a lone surrogate; :meth:`Fields.packed_strings`).  ``np.load``
runs with ``allow_pickle=False``: no pickle, ever.

Writing (:func:`save_model`): the JSON is strict (``allow_nan=False``): a
non-finite number in ``settings`` (bookkeeping such as a dev F never measured) is
written as ``null``, one anywhere else is refused; numpy scalars are written as
numbers.  The file is written to a temporary name in the target folder and
renamed, so a reader never sees half a file; a missing folder, a folder given as
the file, or a failed write raise :class:`~fstchunk.core.errors.OutputError` naming
the path (the temporary file is removed).

Reading (:func:`load_model_file`, :func:`read_metadata`): a missing, truncated,
foreign or non-zip file (a ``.npy`` array, a text file), non-strict JSON (bare
``NaN``), a model of another kind or a newer version raise
:class:`~fstchunk.core.errors.ModelFileError` naming the file.  Each model's ``load``
then reads its fields through :class:`Fields`, which validates every one (type,
tags of the scheme, array dtype, shape, range, finiteness) and names the file and
the field: ``model.npz: field 'pairs': ...``.

Layout: models trained by this version record their training layout
(:class:`~fstchunk.io.layout.Layout`: columns, what each held, the data scheme, the
vocabularies) as the metadata field ``layout`` and the arrays ``layout_word`` and
``layout_pos`` (:meth:`Fields.layout`; the field is in the checksum).  Files
written before have none: ``Fields.layout()`` is None, and the CLI warns that their
inputs' layout cannot be checked.  Older readers ignore the new field and arrays.

Versions: version 1 files (fstchunk 0.1) have no checksum and still load.
Version 2 files carry ``checksum``: a digest of every metadata field but
``format``, ``version``, ``settings`` and the checksum itself, and of the arrays'
names, dtypes and shapes, written at save time.  Edits that stay valid (tags
reordered, another POS column or template) would decode silently wrong, so on
load a field whose digest differs is refused: "field(s) tags do not match the
checksum written with the model (the file was edited)".  ``settings`` is
bookkeeping and may be edited; a ``beta`` in it is read as the standard β
(:func:`fstchunk.core.fbeta.upgrade_settings`: a file without ``beta_convention`` stored the
slides' β' = β²).  :func:`read_metadata` reads (and checks) the
metadata record only, which is how :func:`fstchunk.models.load_model` learns the
kind before loading.

Pitfall: array *contents* are not in the checksum (the zip format's CRC guards
them against corruption, and the loaders check their range and finiteness).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any, Sequence

import numpy as np

from ..core import sources
from ..core.errors import FstchunkError, InputError, ModelFileError
from ..core.fbeta import upgrade_settings
from ..core.outputs import atomic_write
from ..core.stringpack import unpack
from ..io.columns import Columns
from ..io.layout import Layout
from ..schemes import encodings as enc
from ..schemes.tagspace import TagSet, check_expresses, check_tags

FORMAT = "fstchunk-model"
VERSION = 2
#: metadata fields outside the checksum
UNCHECKED = ("format", "version", "checksum", "settings")
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_NPY_MAGIC = b"\x93NUMPY"
#: where a model of each kind is used, named when a reader of another kind is given one
KIND_COMMANDS = {"joint": "the commands of a joint model are fstchunk joint train, calibrate "
                          "and decode",
                 "segment": "the commands of a segment model are fstchunk segment train, "
                            "decode and eval",
                 "attribute-crf": "an attribute CRF reads CRFsuite data: --format crfsuite"}
#: the first bytes of a CRFsuite model file (crfsuite learn, pycrfsuite, sklearn-crfsuite)
_CRFSUITE_MAGIC = b"lCRF"


# ---------------------------------------------------------------------- writing
def save_model(path, kind: str, arrays: dict[str, np.ndarray], metadata: dict,
               layout: Layout | None = None) -> None:
    """Write ``arrays`` and ``metadata`` (plus format, version, kind, checksum and the
    training ``layout`` if known) to ``path``, atomically (a temporary file in the same
    folder, renamed)."""
    path = os.fspath(path)
    if layout is not None:
        arrays = {**arrays, **layout.arrays()}
        metadata = {**metadata, "layout": layout.to_json()}
    out = {k: np.asarray(v) for k, v in arrays.items()}
    for k, v in out.items():
        if v.dtype == object:
            raise TypeError(f"array {k!r} has dtype object, which would need pickle")
    meta = {k: _strict(v, k, k == "settings") for k, v in metadata.items()}
    meta.update(format=FORMAT, version=VERSION, kind=kind)
    meta["checksum"] = checksum(meta, out)
    out["__metadata__"] = np.array(json.dumps(meta, sort_keys=True, allow_nan=False))
    with atomic_write(path, "wb", what="model file") as fh:   # np.savez would append .npz
        np.savez_compressed(fh, **out)


def _strict(value: Any, field: str, lenient: bool) -> Any:
    """``value`` as strict JSON data: numpy scalars as numbers, tuples as lists; a
    non-finite float is None where ``lenient`` (settings), an InputError elsewhere."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        if lenient:
            return None
        raise InputError(f"model field {field!r}: {value!r} is not a finite number")
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise InputError(f"model field {field!r}: keys must be strings")
        return {k: _strict(v, f"{field}.{k}", lenient) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v, field, lenient) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise InputError(f"model field {field!r}: {type(value).__name__} cannot be stored")


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def checksum(meta: dict, arrays: dict[str, np.ndarray] | None) -> dict[str, str]:
    """Field -> digest of every checked metadata field, and ``__arrays__`` -> digest of
    the arrays' names, dtypes and shapes (left out when ``arrays`` is None)."""
    out = {k: _digest(v) for k, v in meta.items() if k not in UNCHECKED}
    if arrays is not None:
        out["__arrays__"] = _digest({k: [v.dtype.str, list(v.shape)] for k, v in
                                     arrays.items() if k != "__metadata__"})
    return out


# ---------------------------------------------------------------------- reading
def load_model_file(path, kind: str | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """(metadata, arrays) of a model file; ``kind`` checks the model kind."""
    return _read(path, kind, arrays=True)


def read_metadata(path, kind: str | None = None) -> dict:
    """The metadata record of a model file (kind, tags, settings, ...), checked like
    :func:`load_model_file`'s, without reading the arrays."""
    return _read(path, kind, arrays=False)[0]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not strict JSON")


def _open(name: str, arrays: bool) -> tuple[str, dict[str, np.ndarray]]:
    """The raw metadata text and (if asked) the arrays of an .npz file (a pipe is read
    once, :mod:`fstchunk.core.sources`)."""
    with sources.held():
        return _open_held(name, arrays)


def _open_held(name: str, arrays: bool) -> tuple[str, dict[str, np.ndarray]]:
    try:
        with sources.open_binary(name) as fh:
            head = fh.read(8)
    except FileNotFoundError:
        raise ModelFileError(f"{name}: no such model file") from None
    except OSError as e:
        raise ModelFileError(f"{name}: cannot read the model file ({e.strerror or e})") from None
    if head.startswith(_NPY_MAGIC):
        raise ModelFileError(f"{name}: a .npy array file, not an fstchunk model "
                             f"(an .npz file written by fstchunk train)")
    if head.startswith(_CRFSUITE_MAGIC):
        raise ModelFileError(f"{name}: a CRFsuite model file, not an fstchunk model: convert "
                             f"it with fstchunk import crfsuite {name} -o MODEL.npz (Python: "
                             f"fstchunk.models.crfsuite_import.from_crfsuite({name!r}); "
                             f"docs/howto/crfsuite.md)")
    if not head.startswith(_ZIP_MAGIC):
        raise ModelFileError(f"{name}: not a readable fstchunk model file (not an .npz)")
    try:
        with sources.open_binary(name) as fh, np.load(fh, allow_pickle=False) as z:
            if "__metadata__" not in z.files:
                raise ModelFileError(f"{name}: an .npz file but not an fstchunk model "
                                     f"(no metadata)")
            raw = z["__metadata__"]
            out = {k: z[k] for k in z.files if k != "__metadata__"} if arrays else {}
    except ModelFileError:
        raise
    except Exception as e:          # a damaged zip or array header: any parser error
        raise ModelFileError(f"{name}: not a readable fstchunk model file "
                             f"({type(e).__name__}: {e})") from None
    if raw.shape != () or raw.dtype.kind != "U":
        raise ModelFileError(f"{name}: field '__metadata__': not a JSON string")
    return str(raw), out


def _read(path, kind: str | None, arrays: bool) -> tuple[dict, dict[str, np.ndarray]]:
    name = os.fspath(path)
    raw, out = _open(name, arrays)
    try:
        meta = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:
        raise ModelFileError(f"{name}: corrupt model metadata ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        fmt = meta.get("format") if isinstance(meta, dict) else None
        raise ModelFileError(f"{name}: not an fstchunk model (format {fmt!r})")
    version = meta.get("version")
    if not (isinstance(version, int) and not isinstance(version, bool) and version >= 1):
        raise ModelFileError(f"{name}: bad model version {version!r}")
    if version > VERSION:
        raise ModelFileError(f"{name}: model version {version} is newer than this "
                             f"fstchunk reads ({VERSION})")
    if kind is not None and meta.get("kind") != kind:
        got = meta.get("kind")
        hint = KIND_COMMANDS.get(got)
        article = "an" if str(got)[:1] in tuple("aeiou") else "a"
        raise ModelFileError(f"{name}: {article} {got!r} model, not a {kind!r} model"
                             + (f" ({hint})" if hint else ""))
    _verify(name, meta, out if arrays else None)
    if isinstance(meta.get("settings"), dict):      # β of older files read as standard
        meta["settings"] = upgrade_settings(meta["settings"])
    return meta, out


def _verify(name: str, meta: dict, arrays: dict[str, np.ndarray] | None) -> None:
    """Compare the checksum written with the model (version 2 on) with its fields."""
    written = meta.get("checksum")
    if written is None and meta["version"] < 2:
        return
    if not (isinstance(written, dict) and all(isinstance(v, str) for v in written.values())):
        raise ModelFileError(f"{name}: field 'checksum': missing or not a record of digests")
    now = checksum(meta, arrays)
    if arrays is None:
        written = {k: v for k, v in written.items() if k != "__arrays__"}
    bad = sorted(k for k in set(now) | set(written) if now.get(k) != written.get(k))
    if bad:
        shown = ", ".join("arrays (names, dtypes, shapes)" if k == "__arrays__" else repr(k)
                          for k in bad)
        raise ModelFileError(f"{name}: field(s) {shown} do not match the checksum written "
                             f"with the model (the file was edited)")


# ---------------------------------------------------------------------- fields
_REQUIRED = object()
_KINDS = {"float": "f", "int": "iu", "str": "U", "bytes": "u"}


class Fields:
    """The metadata and arrays of one model file, read field by field; every
    accessor validates and raises ModelFileError ``"<file>: field '<name>': ..."``."""

    def __init__(self, path, meta: dict, arrays: dict[str, np.ndarray]):
        self.name, self.meta, self.arrays = os.fspath(path), meta, arrays

    def error(self, field: str, problem: str) -> ModelFileError:
        return ModelFileError(f"{self.name}: field {field!r}: {problem}")

    def get(self, field: str, types: type | tuple[type, ...], default: Any = _REQUIRED
            ) -> Any:
        """Metadata ``field``, of one of ``types`` (bool is no int)."""
        if field not in self.meta:
            if default is _REQUIRED:
                raise self.error(field, "missing")
            return default
        value = self.meta[field]
        types = types if isinstance(types, tuple) else (types,)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            want = " or ".join("none" if t is type(None) else t.__name__ for t in types)
            raise self.error(field, f"expected {want}, found {value!r:.80}")
        return value

    def settings(self) -> dict:
        return self.get("settings", dict, {})

    def scheme(self, field: str = "scheme") -> str:
        """The scheme's canonical name."""
        try:
            return enc.canonical_scheme(self.get(field, str))
        except FstchunkError as e:
            raise self.error(field, str(e)) from None

    def tags(self, scheme: str, field: str = "tags") -> tuple[str, ...]:
        """The model's tags: strings of ``scheme``, all of the scheme's tags over their
        chunk types in the order :class:`~fstchunk.schemes.tagspace.TagSet` gives them (the
        order the CRF and the HMM write)."""
        tags = self.get(field, list)
        if not tags or not all(isinstance(t, str) for t in tags):
            raise self.error(field, "expected a non-empty list of tag strings")
        try:
            check_tags(tags, scheme)                # each a tag of the scheme, no repeats
        except FstchunkError as e:
            raise self.error(field, f"not tags of {scheme}: {e}") from None
        try:
            check_expresses(tags, scheme)           # all of the scheme's tags of each type
            want = TagSet.from_tags(tags, scheme).tags
        except FstchunkError as e:
            raise self.error(field, str(e)) from None
        if tuple(tags) != want:
            raise self.error(field, f"expected the {scheme} tags {', '.join(want)} in this "
                                    f"order, found {', '.join(tags)}")
        return want

    def array(self, field: str, kind: str, shape: Sequence[int | None],
              finite: bool = False) -> np.ndarray:
        """Array ``field`` of ``kind`` (float, int, str or bytes = uint8) and ``shape``
        (None: any length on that axis), with only finite values if ``finite``."""
        if field not in self.arrays:
            raise self.error(field, "array missing")
        a = self.arrays[field]
        if a.dtype.kind not in _KINDS[kind] or (kind == "bytes" and a.dtype != np.uint8):
            raise self.error(field, f"expected a {kind} array, found dtype {a.dtype}")
        if a.ndim != len(shape) or any(n is not None and n != m for n, m in zip(shape, a.shape)):
            axes = ["*" if n is None else str(n) for n in shape]
            want = "(" + ", ".join(axes) + ("," if len(axes) == 1 else "") + ")"
            raise self.error(field, f"expected shape {want}, found {a.shape}")
        if finite and not np.all(np.isfinite(a)):
            raise self.error(field, "has values that are not finite numbers")
        return a

    def columns(self, legacy: dict | None = None) -> Columns:
        """The reading columns: field ``columns``, or in files written before it the
        ``word_col``/``pos_col`` of ``legacy`` (default: the metadata) and the last
        column as the tag column."""
        if "columns" in self.meta:
            try:
                return Columns.from_json(self.meta["columns"])
            except FstchunkError as e:
                raise self.error("columns", str(e)) from None
        legacy = self.meta if legacy is None else legacy
        try:
            return Columns(legacy.get("word_col", 0), legacy.get("pos_col", 1), -1)
        except FstchunkError as e:
            raise self.error("word_col/pos_col", str(e)) from None

    def layout(self, columns: Columns | None = None) -> Layout | None:
        """The training layout (field ``layout``, arrays ``layout_word``/``layout_pos``),
        None in files written before it; its word and POS columns must be ``columns``'
        (the model's reading columns) where it records them."""
        if "layout" not in self.meta:
            return None
        try:
            layout = Layout.from_json(self.meta["layout"], self.arrays)
            if layout.data_scheme is not None:
                enc.canonical_scheme(layout.data_scheme)
        except FstchunkError as e:
            raise self.error("layout", str(e)) from None
        lc = layout.columns
        if columns is not None and (lc.word != columns.word or
                                    lc.pos not in (None, columns.pos)):
            raise self.error("layout", f"columns {layout.spec()} differ from the model's "
                                       f"reading columns {columns.spec()}")
        return layout

    def pairs(self, features: int, L: int, what: str = "feature") -> np.ndarray:
        """The (feature, tag) pairs with a state weight: in range of ``features`` names
        and ``L`` tags, none repeated (``what``: the features' name in messages)."""
        pairs = self.array("pairs", "int", (None, 2))
        if pairs.size and ((pairs < 0).any() or (pairs[:, 0] >= features).any()
                           or (pairs[:, 1] >= L).any()):
            raise self.error("pairs", f"({what}, tag) indices out of range of the "
                                      f"{features} {what}s and {L} tags")
        if len(np.unique(pairs[:, 0].astype(np.int64) * L + pairs[:, 1])) != len(pairs):
            raise self.error("pairs", f"repeats a ({what}, tag) pair")
        return pairs

    def unique_strings(self, field: str, what: str) -> list[str]:
        """A packed string list with no repeat (``what``: one entry, for the message)."""
        names = self.packed_strings(field)
        if len(set(names)) != len(names):
            raise self.error(field, f"repeats {what}")
        return names

    def packed_strings(self, field: str) -> list[str]:
        """The list of strings :func:`fstchunk.core.stringpack.pack` wrote as ``field``."""
        self.array(field, "bytes", (None,))
        try:
            return unpack(field, self.arrays)
        except InputError as e:
            raise self.error(field, str(e).removeprefix(f"{field}: ")) from None

    def strings(self, field: str) -> list[str]:
        """A list of distinct strings: packed (:meth:`packed_strings`), or a 1-d string
        array (files written before packing, which lost a trailing NUL)."""
        if field in self.arrays and self.arrays[field].dtype == np.uint8:
            values = self.packed_strings(field)
        else:
            values = self.array(field, "str", (None,)).tolist()
        if len(set(values)) != len(values):
            raise self.error(field, "repeats an entry")
        return values
