"""Score-array files (``.npz``) for models that live outside fstchunk.

A score file holds, without pickle:

* ``tags``: 1-D string array, the column order of all arrays;
* ``scheme``: 0-D string array (default IOB2 if absent);
* ``transitions`` (L x L), optional ``start`` and ``end`` (L,);
* ``emissions_0``, ``emissions_1``, ...: one (n_k x L) array per sentence, in the
  order of the CoNLL file they score.

Every file that cannot be used raises :class:`~fstchunk.errors.ModelFileError`
naming the file (and the sentence, for a bad ``emissions_k``).

Pitfalls:

* ``np.load`` is always called with ``allow_pickle=False``; a file that needs
  pickle, is truncated, is a single ``.npy`` array, or lacks a key is reported
  with its name, never unpickled.
* sentences are read ``emissions_0, emissions_1, ...`` up to the first missing
  index; an ``emissions_k`` beyond a gap would be silently dropped, so a gap is
  an error.
"""

from __future__ import annotations

import os
import re
import zipfile
from typing import Sequence

import numpy as np

from . import encodings as enc
from .errors import FstchunkError, ModelFileError
from .outputs import atomic_write
from .lattice import Lattice
from .tagspace import TagSpace

_EMISSIONS = re.compile(r"emissions_(\d+)$")


def save_scores(path: str | os.PathLike, tags: Sequence[str], emissions: Sequence[np.ndarray],
                transitions: np.ndarray, start: np.ndarray | None = None,
                end: np.ndarray | None = None, scheme: str = "IOB2") -> None:
    """Write a score file (see the module doc); ``emissions[k]`` scores sentence ``k``.
    Written atomically to exactly ``path`` (``np.savez`` alone would append ``.npz``).
    A tag list that cannot express ``scheme`` is refused before anything is written
    (:func:`fstchunk.tagspace.check_expresses`)."""
    TagSpace.of(tuple(tags), enc.canonical_scheme(scheme))
    arrays = {"tags": np.array(list(tags), dtype=str), "scheme": np.array(scheme),
              "transitions": np.asarray(transitions, float)}
    if start is not None:
        arrays["start"] = np.asarray(start, float)
    if end is not None:
        arrays["end"] = np.asarray(end, float)
    for k, e in enumerate(emissions):
        arrays[f"emissions_{k}"] = np.asarray(e, float)
    with atomic_write(path, "wb", what="score file") as fh:   # exactly PATH: no .npz added
        np.savez(fh, **arrays)


def _read_arrays(name: str) -> dict[str, np.ndarray]:
    try:
        z = np.load(name, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ModelFileError(f"{name}: a single array, not a score file (.npz)")
        with z:
            return {k: z[k] for k in z.files}
    except ModelFileError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise ModelFileError(f"{name}: not a readable score file (.npz without pickle): "
                             f"{e}") from None


def load_lattices(path: str | os.PathLike) -> list[Lattice]:
    """One :class:`Lattice` per sentence of a score file."""
    name = os.fspath(path)
    data = _read_arrays(name)
    for key in ("tags", "transitions"):
        if key not in data:
            raise ModelFileError(f"{name}: missing array {key!r} (see fstchunk.scorefile)")
    if data["tags"].ndim != 1 or data["tags"].dtype.kind not in "US":
        raise ModelFileError(f"{name}: 'tags' must be a 1-D string array, got dtype "
                             f"{data['tags'].dtype} and shape {data['tags'].shape}")
    tags = [str(t) for t in data["tags"].tolist()]
    scheme = str(data["scheme"]) if "scheme" in data else "IOB2"
    try:                       # once for the file, not per sentence
        TagSpace.of(tuple(tags), enc.canonical_scheme(scheme))
    except FstchunkError as e:
        raise ModelFileError(f"{name}: arrays 'tags' and 'scheme': {e}") from None
    indices = sorted(int(m.group(1)) for m in map(_EMISSIONS.match, data) if m)
    if not indices:
        raise ModelFileError(f"{name}: no emissions_0 array: the file scores no sentence")
    if indices != list(range(len(indices))):
        gap = next(k for k, i in enumerate(indices) if i != k)
        raise ModelFileError(f"{name}: emissions_{indices[-1]} present but emissions_{gap} "
                             "missing (sentences must be numbered 0, 1, 2, ...)")
    out = []
    for k in indices:
        try:
            out.append(Lattice.from_scores(tags, data[f"emissions_{k}"], data["transitions"],
                                           data.get("start"), data.get("end"), scheme=scheme))
        except ValueError as e:
            raise ModelFileError(f"{name}: sentence {k} (emissions_{k}): {e}") from None
    return out
