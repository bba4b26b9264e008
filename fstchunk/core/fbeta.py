"""β of F_β: the standard β wherever a user meets it, the slides' weight β² inside.

Every ``beta`` a user gives or reads (API parameters, ``--beta``, reports, JSON, model
settings) is the standard β of van Rijsbergen (1979), conlleval, scikit-learn's
``fbeta_score`` and seqeval:

    F_β = (1+β²)·P·R / (β²·P + R) = (1+β²)·tp / (m(x) + β²·m(y)),

P = tp/m(x), R = tp/m(y); β > 1 weighs recall more, β = 1 is FB1, β = 0 is precision.
Jansche's slides (§2, §8) write F = (β'+1)·tp / (m(x) + β'·m(y)): the same measure with
β' = β² (their β = 2 is the standard β = √2, their toy example's β = 3 is β = √3).  The
engines keep the slides' short formulas with that weight under the name ``beta_sq``,
never ``beta``; :func:`to_beta_sq` converts once, at the front door.  Counts with
m(x) + β²·m(y) = 0 have F = 0/0 := 1 (the slides' convention; scikit-learn's
``zero_division=1``), so at β = 0 an empty hypothesis has F_0 = 1.

β must be 0 or lie in [:data:`BETA_MIN`, :data:`BETA_MAX`], so that β² is a finite normal
float (a β whose square underflows to 0 would silently turn into precision).

Model files (:func:`upgrade_settings`): files written before this convention stored
the slides' β' in ``settings["beta"]`` (and ``settings["run"]["beta"]``); files written
now carry ``settings["beta_convention"] = "standard"``, and an older file's β' is read
as β = √β' on load (its value kept as ``beta_slides``), so it keeps its meaning.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import InputError

#: the smallest β > 0 and the largest β accepted (β² stays a finite normal float)
BETA_MIN, BETA_MAX = 1e-150, 1e150
#: ``settings["beta_convention"]`` of a model file whose β is the standard one
STANDARD = "standard"


def check_beta(beta: Any, positive: bool = False) -> float:
    """``beta`` as a float: InputError unless it is a real number, 0 (unless
    ``positive``) or within [BETA_MIN, BETA_MAX]."""
    try:
        ok = not isinstance(beta, (bool, str, bytes)) and math.isfinite(float(beta))
    except (TypeError, ValueError):
        ok = False
    value = float(beta) if ok else math.nan
    if ok and (value == 0 and not positive or BETA_MIN <= value <= BETA_MAX):
        return value if value else 0.0                      # -0.0 too
    raise InputError(f"beta must be {beta_range(positive)}, got {beta!r}")


def beta_range(positive: bool = False) -> str:
    """What :func:`check_beta` accepts, in words (its error messages, ``--beta``'s)."""
    low = "> 0" if positive else ">= 0"
    zero = "" if positive else "0, or "
    return f"a finite number {low} ({zero}{BETA_MIN:g} to {BETA_MAX:g})"


def to_beta_sq(beta: Any, positive: bool = False) -> float:
    """The slides' weight β' = β² of the standard ``beta`` (checked by :func:`check_beta`)."""
    b = check_beta(beta, positive)
    return b * b


def f_rates(precision: float, recall: float, beta: float) -> float:
    """(1+β²)·P·R / (β²·P + R) of the standard ``beta`` and P, R (any scale); 0 where
    β²·P + R = 0 (conlleval)."""
    b2 = beta * beta
    den = b2 * precision + recall
    return (1 + b2) * precision * recall / den if den > 0 else 0.0


def upgrade_settings(settings: dict) -> dict:
    """A model file's ``settings`` with β standard (module doc): unchanged when it
    records ``beta_convention``; else a stored slides' β' (finite, >= 0) becomes √β'
    in ``beta`` and in ``run["beta"]`` (a checkpoint's identity, which a resume with
    the same standard β then matches), the old ``beta`` kept as ``beta_slides``."""
    if not isinstance(settings, dict) or settings.get("beta_convention") == STANDARD:
        return settings
    out = dict(settings)
    run = out.get("run")
    if isinstance(run, dict) and _slides_value(run.get("beta")):
        out["run"] = {**run, "beta": math.sqrt(run["beta"])}
    if _slides_value(out.get("beta")):
        out["beta_slides"] = out["beta"]
        out["beta"] = math.sqrt(out["beta"])
    if out != settings:
        out["beta_convention"] = STANDARD
    return out


def _slides_value(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and value >= 0


def parse_weights(text: str) -> dict[str, int]:
    """The per-type weights of the weighted F_β (``weighted:LOC=2,PER=3``,
    ``meu-weighted:LOC=2,PER=3``): ``LOC=2,PER=3`` → {"LOC": 2, "PER": 3}, whole
    weights ≥ 1 (InputError naming a bad item)."""
    out = {}
    for item in text.split(","):
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            raise InputError(f"utility weighted:{text}: {item!r} is not TYPE=WEIGHT with a "
                             f"whole weight >= 1 (e.g. weighted:LOC=2,PER=3)")
        out[name.strip()] = int(value)
    return out
