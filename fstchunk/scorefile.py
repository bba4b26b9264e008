"""Score-array files (``.npz``) for models that live outside fstchunk.

A score file holds, without pickle:

* ``tags``: 1-D string array, the column order of all arrays;
* ``scheme``: 0-D string array (default IOB2 if absent);
* ``transitions`` (L x L), optional ``start`` and ``end`` (L,);
* ``emissions_0``, ``emissions_1``, ...: one (n_k x L) array per sentence, in the
  order of the CoNLL file they score.

Pitfall: ``np.load`` is always called with ``allow_pickle=False``; a file that
needs pickle, is truncated, or lacks a key is reported with its name.
"""

from __future__ import annotations

import os
import zipfile
from typing import Sequence

import numpy as np

from .lattice import Lattice


def save_scores(path, tags: Sequence[str], emissions: Sequence[np.ndarray],
                transitions: np.ndarray, start=None, end=None, scheme: str = "IOB2") -> None:
    arrays = {"tags": np.array(list(tags), dtype=str), "scheme": np.array(scheme),
              "transitions": np.asarray(transitions, float)}
    if start is not None:
        arrays["start"] = np.asarray(start, float)
    if end is not None:
        arrays["end"] = np.asarray(end, float)
    for k, e in enumerate(emissions):
        arrays[f"emissions_{k}"] = np.asarray(e, float)
    np.savez(path, **arrays)


def load_lattices(path) -> list[Lattice]:
    """One :class:`Lattice` per sentence of a score file."""
    name = os.fspath(path)
    try:
        with np.load(name, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise ValueError(f"{name}: not a readable score file (.npz without pickle): {e}") from None
    for key in ("tags", "transitions"):
        if key not in data:
            raise ValueError(f"{name}: missing array {key!r} (see fstchunk.scorefile)")
    tags = [str(t) for t in data["tags"].tolist()]
    scheme = str(data["scheme"]) if "scheme" in data else "IOB2"
    k, out = 0, []
    while f"emissions_{k}" in data:
        try:
            out.append(Lattice.from_scores(tags, data[f"emissions_{k}"], data["transitions"],
                                           data.get("start"), data.get("end"), scheme=scheme))
        except ValueError as e:
            raise ValueError(f"{name}: sentence {k}: {e}") from None
        k += 1
    if not out:
        raise ValueError(f"{name}: no emissions_0 array: the file scores no sentence")
    return out
