"""The joint model's file: what :meth:`~.model.JointModel.save` writes and
:meth:`~.model.JointModel.load` reads, every field checked.

A joint model file (kind ``joint``, :mod:`fstchunk.models.io`) holds the metadata
fields ``chunk_labels`` (chunk types and ``O``), ``pos_labels``, ``templates`` (per
part kind, lists of (column, offset) pairs), ``vocabs`` (one list of observations in
id order per template) and ``settings``, and the array ``w``.  :func:`read_model`
validates each against the others (labels distinct, templates of known columns,
one vocabulary per template, ``w`` a finite float vector of exactly the size they
imply) and the settings that change what the model computes (``kind``,
``collapse_pos``, ``np_only``, ``algorithm``, ``temperature``, ``columns``), raising
:class:`~fstchunk.core.errors.ModelFileError` ``"<file>: field '<name>': ..."``.

Pitfall: ``settings`` are outside the file's checksum (bookkeeping may be edited),
which is why they are checked here value by value: a temperature of 0, ``NaN``
(written as null) or a string would otherwise reach the decoders.  The settings
that decide what the model is and how it reads a corpus (``kind``,
``collapse_pos``, ``np_only``) are also saved as the checksummed field ``reading``
(:func:`reading`), and an edit of them is refused; files without that field
(version 1) are checked for labels that fit the variant instead.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from ...core.errors import FstchunkError
from ...io.columns import Columns
from ...schemes.tagspace import check_tags
from ..io import Fields, load_model_file
from .structure import KINDS
from .train import ALGORITHMS

#: the model variants (``settings["kind"]``): see :mod:`.model`
VARIANTS = ("joint", "tagger", "chunker")
#: observation columns a template may read: words, shapes (Table 5), given POS
OBSERVATIONS = ("w", "t", "p")


def _labels(f: Fields, field: str) -> list[str]:
    labels = f.get(field, list)
    if not labels or not all(isinstance(t, str) and t and not any(ch.isspace() for ch in t)
                             for t in labels):
        raise f.error(field, "expected a non-empty list of labels (strings without spaces)")
    if len(set(labels)) != len(labels):
        raise f.error(field, "repeats a label")
    return labels


def _templates(f: Fields, variant: str) -> dict[str, list[tuple]]:
    raw = f.get("templates", dict)
    unknown = sorted(set(raw) - set(KINDS))
    if unknown:
        raise f.error("templates", f"unknown part kind {unknown[0]!r} ({', '.join(KINDS)})")
    out: dict[str, list[tuple]] = {}
    for k, ts in raw.items():
        if not isinstance(ts, list):
            raise f.error(f"templates.{k}", "expected a list of templates")
        out[k] = []
        for t in ts:
            ok = isinstance(t, list) and all(
                isinstance(x, list) and len(x) == 2 and x[0] in OBSERVATIONS
                and isinstance(x[1], int) and not isinstance(x[1], bool) for x in t)
            if not ok:
                raise f.error(f"templates.{k}", f"{t!r:.80}: a template is a list of "
                                                f"[column, offset] pairs, column one of "
                                                f"{', '.join(OBSERVATIONS)}")
            if any(x[0] == "p" for x in t) and variant != "chunker":
                raise f.error(f"templates.{k}", f"{t!r}: reads the given POS ('p'), which "
                                                f"only a chunker has (this is a {variant})")
            out[k].append(tuple(tuple(x) for x in t))
    return out


def _vocabs(f: Fields, templates: dict[str, list[tuple]]) -> list[dict[str, int]]:
    raw = f.get("vocabs", list)
    want = sum(len(templates.get(k, [])) for k in KINDS)
    if len(raw) != want:
        raise f.error("vocabs", f"expected one vocabulary per template ({want}), found "
                                f"{len(raw)}")
    out = []
    for i, v in enumerate(raw):
        if not isinstance(v, list) or not all(isinstance(o, str) for o in v):
            raise f.error(f"vocabs[{i}]", "expected a list of observation strings")
        if len(set(v)) != len(v):
            raise f.error(f"vocabs[{i}]", "repeats an observation")
        out.append({o: j + 1 for j, o in enumerate(v)})
    return out


def _settings(f: Fields) -> dict[str, Any]:
    s = dict(f.settings())

    def bad(key: str, problem: str):
        return f.error(f"settings.{key}", problem)

    if s.get("kind", "joint") not in VARIANTS:
        raise bad("kind", f"expected one of {', '.join(VARIANTS)}, found {s['kind']!r:.40}")
    for key in ("collapse_pos", "np_only"):
        if key in s and not isinstance(s[key], bool):
            raise bad(key, f"expected true or false, found {s[key]!r:.40}")
    if "algorithm" in s and (not isinstance(s["algorithm"], str)
                             or s["algorithm"] not in ALGORITHMS):
        raise bad("algorithm", f"expected one of {', '.join(ALGORITHMS)}, found "
                               f"{s['algorithm']!r:.40}")
    if "temperature" in s:
        t = s["temperature"]
        if not (isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t)
                and t > 0):
            raise bad("temperature", f"expected a finite number > 0, found {t!r:.40}")
        s["temperature"] = float(t)
    nll = s.get("calibration_nll")
    if nll is not None and not (isinstance(nll, (int, float)) and not isinstance(nll, bool)):
        raise bad("calibration_nll", f"expected a number, found {nll!r:.40}")
    if "columns" in s:
        try:
            Columns.from_json(s["columns"])
        except FstchunkError as e:
            raise bad("columns", str(e)) from None
    return s


def reading(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings that decide how a corpus is read and what the model is (variant,
    Table 3 POS collapsing, NP-only chunks): saved also as the metadata field
    ``reading``, which the file's checksum covers, so that an edit of these settings
    (which the checksum does not cover) is caught on load."""
    return {"kind": settings.get("kind", "joint"),
            "collapse_pos": bool(settings.get("collapse_pos", False)),
            "np_only": bool(settings.get("np_only", False))}


def _check_labels(f: Fields, variant: str, chunk_labels: list[str],
                  pos_labels: list[str]) -> None:
    if "O" not in chunk_labels:
        raise f.error("chunk_labels", "must include 'O'")
    if variant != "joint" and chunk_labels != ["O"]:
        raise f.error("chunk_labels", f"a {variant} has the single chunk label O, found "
                                      f"{', '.join(chunk_labels)}")
    if variant == "joint" and chunk_labels == ["O"]:
        raise f.error("chunk_labels", "a joint model has at least one chunk type besides O")
    if variant == "chunker":
        try:   # the tags seen in training: a chain over them need not express IOB2
            check_tags(pos_labels, "IOB2")   # (CoNLL-2000 has B-LST but no I-LST)
        except FstchunkError as e:
            raise f.error("pos_labels", f"a chunker's labels are IOB2 chunk tags: {e}") from None


def read_model(path) -> dict[str, Any]:
    """The checked fields of a joint model file: keyword arguments of
    :class:`~.model.JointModel` (``chunk_labels``, ``pos_labels``, ``templates``,
    ``vocabs``, ``settings``) and ``w``, whose size the caller checks against the
    model's (``fields`` is the :class:`~fstchunk.models.io.Fields` reader, for
    that message)."""
    meta, arrays = load_model_file(path, kind="joint")
    f = Fields(path, meta, arrays)
    settings = _settings(f)
    variant = settings.get("kind", "joint")
    saved = f.get("reading", dict, None)
    if saved is not None and saved != reading(settings):
        edited = [k for k in reading(settings) if saved.get(k) != reading(settings)[k]]
        raise f.error(f"settings.{edited[0] if edited else 'kind'}",
                      f"the model was saved with {json.dumps(saved)} (the settings were "
                      f"edited)")
    chunk_labels = _labels(f, "chunk_labels")
    pos_labels = _labels(f, "pos_labels")
    _check_labels(f, variant, chunk_labels, pos_labels)
    templates = _templates(f, variant)
    vocabs = _vocabs(f, templates)
    w = f.array("w", "float", (None,), finite=True)
    return {"chunk_labels": chunk_labels, "pos_labels": pos_labels, "templates": templates,
            "vocabs": vocabs, "settings": settings, "w": np.asarray(w, dtype=float),
            "fields": f}
