"""The ``y`` of an attribute CRF (:class:`~.attribute_crf.AttributeCRF`, the sklearn
drop-in): label sequences checked against ``X`` (:func:`check_labels`) and the chunk
scheme their labels are written in (:func:`detect_scheme`, ``scheme="auto"``).

Pitfall: detection tries the schemes of :data:`DETECT` in order, so labels valid under
several (``B-X I-X O`` is IOB2 and also IOBES-compatible) take the first.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..core.errors import InputError, SchemeError
from ..schemes import encodings as enc
from ..schemes.tagspace import UNCONSTRAINED
from . import partial_labels as pl

#: schemes tried by ``scheme="auto"``, in order
DETECT = ("IOB2", "IOBES", "BILOU", "IOB1", "IOE2", "IOE1", "IOBES2", "IOBES3")

def detect_scheme(labels: Sequence[str], gold: Sequence[Sequence[str]]) -> str:
    """The first scheme of :data:`DETECT` whose tags include every label and under which
    every sequence is valid; :data:`UNCONSTRAINED` when none is."""
    for scheme in DETECT:
        try:
            for t in labels:
                enc.tags_to_chunks([t], scheme, strict=False)
        except (SchemeError, InputError):
            continue                      # not tags of this scheme
        if all(enc.is_valid(list(g), scheme) for g in gold):
            return scheme
    return UNCONSTRAINED


def check_labels(X: Sequence[Any], y: Any, what: str = "y", open_ok: bool = False
                 ) -> list[list[Any]]:
    """``y`` (an iterator read once) as lists of label strings, one per token of the
    list ``X``'s sequences (``open_ok``: or sets of labels, :mod:`.partial_labels`)."""
    if isinstance(y, (str, bytes, dict)) or not hasattr(y, "__iter__"):
        raise InputError(f"{what} must be a list of label sequences, got {type(y).__name__}")
    y = y if hasattr(y, "__len__") else list(y)
    if len(y) != len(X):
        raise InputError(f"len(X) = {len(X)} but len({what}) = {len(y)}: one label sequence "
                         f"per sequence of X")
    out = []
    good: set[str] = set()                # labels already checked (few distinct ones)
    for i, (xs, ys) in enumerate(zip(X, y)):
        if isinstance(ys, (str, bytes)) or not hasattr(ys, "__len__"):
            raise InputError(f"{what}[{i}]: a label sequence must be a list of strings")
        if len(ys) != len(xs):
            raise InputError(f"{what}[{i}] has {len(ys)} labels but X[{i}] has {len(xs)} "
                             f"tokens")
        ys = list(ys)
        try:
            known = good.issuperset(ys)
        except TypeError:                 # unhashable labels (sets, lists): checked below
            known = False
        if not known:
            for t, lab in enumerate(ys):
                if open_ok and isinstance(lab, pl.SETS):
                    continue
                if not isinstance(lab, str) or not lab or any(c.isspace() for c in lab):
                    raise InputError(f"{what}[{i}][{t}]: label {lab!r} is not a non-empty "
                                     f"string without white space")
                good.add(lab)
        out.append(ys)
    return out
