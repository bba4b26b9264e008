"""The segment model's fields: the checks of its hyper-parameters (:func:`check_hyper`,
which ``fit`` and ``load`` run; the constructor stores them as given) and of its model
files, and the files themselves (:mod:`fstchunk.models.io`, kind ``segment``).

A file holds the array ``W`` (D × T) and the fields ``types``, ``features`` (the
feature function's version, :func:`.features.feature_version` of the predicate set), ``D``, ``max_gap``, ``k``,
``restrictions`` (flags), ``threshold``, ``pos``, ``settings`` and optionally the
training layout; :func:`read_model` validates every one, naming file and field.

Pitfall: the learner's hyper-parameters (``average``, ``seed``, ``max_sweeps``, and
``max_iter`` as the epochs made: ``iteration``, or ``epochs`` in files from
before the training loop) are read from ``settings``, where
training records them; a file without them (a model never trained, or of an older
version) gets the defaults.
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
from .features import PREDICATES, check_predicates, feature_version, predicates_of

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


@dataclass(frozen=True)
class Hyper:
    """A segment model's hyper-parameters, checked and converted: what a fitted model
    works with (:func:`check_hyper`; ``max_gap`` may still be ``"auto"``, which fit
    resolves into the model's ``max_gap_``)."""
    D: int
    max_gap: int | None | str
    k: int | None
    restrictions: dict[str, bool]
    threshold: float
    average: bool
    seed: int
    max_sweeps: int
    predicates: str
    max_iter: int
    warm_start: bool


def check_hyper(p: dict[str, Any]) -> Hyper:
    """The hyper-parameters ``p`` (``get_params()``) checked; InputError naming the
    first out of range or of the wrong type."""
    D = check_int(p["D"], "D", 1)
    predicates = check_predicates(p["predicates"])
    max_gap = p["max_gap"]
    if max_gap != "auto":
        max_gap = check_int(max_gap, "max_gap", 0, none=True)
    k = check_int(p["k"], "k", 1, none=True)
    flags = restriction_flags(p["restrictions"])
    threshold = p["threshold"]
    if isinstance(threshold, bool) or not (isinstance(threshold, numbers.Real)
                                           and np.isfinite(threshold)):
        raise InputError(f"threshold must be a finite number, got {threshold!r}")
    for name in ("average", "warm_start"):
        if not isinstance(p[name], bool):
            raise InputError(f"{name} must be True or False, got {p[name]!r}")
    seed = check_int(p["seed"], "seed", 0)
    max_sweeps = check_int(p["max_sweeps"], "max_sweeps", 1)
    max_iter = p["max_iter"]         # the Trainer's check and message, before any work
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) \
            or max_iter < 1:
        raise InputError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    return Hyper(D, max_gap, k, flags, float(threshold), p["average"], seed, max_sweeps,
                 predicates, int(max_iter), p["warm_start"])


def restriction_text(flags: dict[str, bool]) -> str:
    """The text of restriction flags (``"no-overlap,contiguous"``; "" for none)."""
    return ",".join(r for r, f in zip(RESTRICTIONS, FLAGS) if flags[f])


def write_model(path, model: Any) -> None:
    """Write a fitted segment model's file (atomically, :func:`.io.save_model`): its
    fitted state and the hyper-parameters it was fitted with (``threshold``: the one in
    effect, ``threshold_``)."""
    hp = model._hp
    save_model(path, model.kind, {"W": model.W_}, {
        "types": model.types_, "features": feature_version(hp.predicates), "D": hp.D,
        "max_gap": model.max_gap_,
        "k": hp.k, "restrictions": model.restrictions_, "threshold": model.threshold_,
        "pos": model.pos_, "settings": model.settings_}, model.layout_)


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
    defaults); ``max_iter``: the epochs the run made (``iteration``, else ``epochs``)."""
    out: dict = {}
    if isinstance(settings.get("average"), bool):
        out["average"] = settings["average"]
    for key, name, low in (("seed", "seed", 0), ("max_sweeps", "max_sweeps", 1),
                           ("epochs", "max_iter", 1), ("iteration", "max_iter", 1)):
        value = settings.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= low:
            out[name] = value               # the loop's iteration over the older epochs
    return out
