"""Lists of strings in model files, losslessly: one UTF-8 byte array (no pickle,
compact) of the strings joined by ``"\\n"``, and, when that join could not be split
back — a string holds a line break (spaCy's ``"\\n"`` tokens give attributes such as
``w=\\n``), or a string is empty —, the byte length of each string beside it (the array
``NAME_lengths``).  Lone surrogates (file names read with ``surrogateescape``) are
kept (UTF-8 with ``surrogatepass``).

Files written before the lengths existed, and every list without such a string,
have the blob alone and are split at ``"\\n"``, as they always were; a list that
needed the lengths is unreadable to a reader older than them, never misread by one
that has them."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .errors import InputError

SEPARATOR = "\n"
_UTF8 = ("utf-8", "surrogatepass")


def lengths_name(name: str) -> str:
    """The array beside ``name`` that holds its strings' byte lengths."""
    return f"{name}_lengths"


def pack(name: str, values: Sequence[str]) -> dict[str, np.ndarray]:
    """The arrays of ``values`` under ``name`` (module doc)."""
    values = list(values)
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise InputError(f"{name}[{i}]: {v!r:.40} is not a string")
    blob = SEPARATOR.join(values).encode(*_UTF8)
    out = {name: np.frombuffer(blob, dtype=np.uint8)}
    if any(SEPARATOR in v or not v for v in values):
        out[lengths_name(name)] = np.array([len(v.encode(*_UTF8)) for v in values],
                                           dtype=np.int64)
    return out


def unpack(name: str, arrays: dict[str, np.ndarray]) -> list[str]:
    """The strings :func:`pack` wrote under ``name`` into ``arrays`` (the blob split at
    ``"\\n"`` when there are no lengths); InputError naming the array otherwise."""
    blob = arrays[name]
    if not (isinstance(blob, np.ndarray) and blob.dtype == np.uint8 and blob.ndim == 1):
        raise InputError(f"{name}: expected a 1-d uint8 array, found "
                         f"{getattr(blob, 'dtype', '?')} of shape {getattr(blob, 'shape', '?')}")
    data = blob.tobytes()
    lengths = arrays.get(lengths_name(name))
    if lengths is None:
        try:
            text = data.decode(*_UTF8)
        except UnicodeDecodeError as e:
            raise InputError(f"{name}: not UTF-8 ({e.reason})") from None
        return text.split(SEPARATOR) if text else []
    if not (lengths.ndim == 1 and lengths.dtype.kind in "iu" and (lengths >= 0).all()):
        raise InputError(f"{lengths_name(name)}: expected a 1-d array of byte lengths >= 0")
    ends = np.cumsum(lengths) + np.arange(len(lengths))      # each string's end, separators
    if len(data) != (int(ends[-1]) if len(ends) else 0) or any(
            data[e:e + 1] != b"\n" for e in ends[:-1].tolist()):
        raise InputError(f"{lengths_name(name)}: the lengths do not fit the "
                         f"{len(data)} bytes of {name}")
    out = []
    for start, end in zip((ends - lengths).tolist(), ends.tolist()):
        try:
            out.append(data[start:end].decode(*_UTF8))
        except UnicodeDecodeError as e:
            raise InputError(f"{name}: string {len(out)} is not UTF-8 ({e.reason})") from None
    return out
