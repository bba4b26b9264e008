"""The segment model's fields: the checks its constructor and its model files share, and
the files themselves (:mod:`fstchunk.models.io`, kind ``segment``).

A file holds the array ``W`` (D × T) and the fields ``types``, ``features`` (the
feature function's version, :func:`.features.feature_version` of the predicate set), ``D``, ``max_gap``, ``k``,
``restrictions`` (flags), ``threshold``, ``pos``, ``settings`` and optionally the
training layout; :func:`read_model` validates every one, naming file and field.

Pitfall: the learner's hyper-parameters (``average``, ``seed``, ``max_sweeps``) are
read from ``settings``, where training records them; a file without them (a model
never trained, or of an older version) gets the defaults.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.errors import InputError
from ...io.layout import Layout
from ...structures.segments import RESTRICTIONS, parse_restrictions
from ..io import Fields, load_model_file, save_model
from .features import PREDICATES, feature_version, predicates_of

#: the restriction flags (keywords of :func:`fstchunk.structures.segments.restrict`)
FLAGS = tuple(r.replace("-", "_") for r in RESTRICTIONS)


def check_int(value: Any, name: str, low: int, none: bool = False) -> int | None:
    """``value`` as an int >= ``low`` (or None where ``none``); InputError naming it."""
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise InputError(f"{name} must be {'None or ' if none else ''}an integer >= {low}, "
                         f"got {value!r}")
    return int(value)


def restriction_flags(restrictions: str | dict | None) -> dict[str, bool]:
    """The restriction keywords of :func:`~fstchunk.structures.segments.restrict` from a text
    (``"no-overlap,no-embedding"``), a dict of flags, or None (none)."""
    if restrictions is None or isinstance(restrictions, str):
        return parse_restrictions(restrictions)
    if isinstance(restrictions, dict):
        bad = [k for k, v in restrictions.items() if k not in FLAGS or not isinstance(v, bool)]
        if bad:
            raise InputError(f"restriction {bad[0]!r}: expected flags among {', '.join(FLAGS)} "
                             f"with true/false values")
        return {f: bool(restrictions.get(f, False)) for f in FLAGS}
    raise InputError(f"restrictions must be a text, a dict of flags or None, got "
                     f"{restrictions!r}")


def restriction_text(flags: dict[str, bool]) -> str:
    """The text of restriction flags (``"no-overlap,contiguous"``; "" for none)."""
    return ",".join(r for r, f in zip(RESTRICTIONS, FLAGS) if flags[f])


def write_model(path, model: Any) -> None:
    """Write a fitted segment model's file (atomically, :func:`.io.save_model`)."""
    save_model(path, model.kind, {"W": model.W}, {
        "types": model.types, "features": feature_version(model.predicates), "D": model.D,
        "max_gap": model.max_gap,
        "k": model.k, "restrictions": model.restrictions, "threshold": model.threshold,
        "pos": model.pos, "settings": model.settings}, model.layout)


@dataclass
class ModelFields:
    """What a segment model file holds, checked (:func:`read_model`)."""
    types: list[str]
    D: int
    max_gap: int | None
    k: int | None
    restrictions: dict[str, bool]
    threshold: float
    pos: bool
    W: np.ndarray
    settings: dict
    layout: Layout | None
    #: the predicate set of the step features (from the recorded feature version)
    predicates: str = "mcp05"
    #: the learner's hyper-parameters recorded in ``settings``
    learner: dict = field(default_factory=dict)


def read_model(path, kind: str) -> ModelFields:
    """The fields of the segment model file at ``path``, every one validated
    (ModelFileError naming the file and the field otherwise)."""
    f = Fields(path, *load_model_file(path, kind))
    types = f.get("types", list)
    if not types or not all(isinstance(t, str) and t for t in types) \
            or len(set(types)) != len(types):
        raise f.error("types", "expected a non-empty list of distinct type names")
    feats = f.get("features", str)
    predicates = predicates_of(feats)
    if predicates is None:
        raise f.error("features", f"feature function {feats!r}; this fstchunk computes "
                                  f"{', '.join(map(repr, map(feature_version, PREDICATES)))}")
    D = f.get("D", int)
    if D < 1:
        raise f.error("D", f"expected an integer >= 1, found {D}")
    max_gap = f.get("max_gap", (int, type(None)))
    if max_gap is not None and max_gap < 0:
        raise f.error("max_gap", f"expected none or an integer >= 0, found {max_gap}")
    k = f.get("k", (int, type(None)))
    if k is not None and k < 1:
        raise f.error("k", f"expected none or an integer >= 1, found {k}")
    flags = f.get("restrictions", dict)
    try:
        flags = restriction_flags(flags)
    except InputError as e:
        raise f.error("restrictions", str(e)) from None
    threshold = f.get("threshold", (float, int))
    pos = f.get("pos", bool)
    W = f.array("W", "float", (D, len(types)), finite=True)
    settings = f.settings()
    return ModelFields(types, D, max_gap, k, flags, float(threshold), pos, W, settings,
                       f.layout(), predicates, _learner_settings(settings))


def _learner_settings(settings: dict) -> dict:
    """The learner's hyper-parameters ``settings`` records (those it does not: the
    defaults)."""
    out: dict = {}
    if isinstance(settings.get("average"), bool):
        out["average"] = settings["average"]
    for key, low in (("seed", 0), ("max_sweeps", 1)):
        value = settings.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= low:
            out[key] = value
    return out
