"""The constructor of :class:`fstchunk.sklearn.CRF` (sklearn_crfsuite.CRF 0.5's
parameters, fstchunk's after them) and :func:`resolve`, which turns them into one
training run: CRFsuite's defaults per algorithm (lib/crf/src/train_*.c), c1 and c2
converted to the per-sentence scale, every value checked (one InputError naming the
parameter)."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import InputError
from ..learn import objectives as lo

#: CRFsuite's training algorithms, all trained here
ALGORITHMS = ("lbfgs", "l2sgd", "ap", "pa", "arow")
#: the objectives ``objective=`` takes (``meu-weighted`` as ``meu-weighted:T=w,...``)
KNOWN = (lo.ML, lo.MEU, lo.MEU_EXACT, lo.MEU_MACRO, lo.MEU_PARTIAL, lo.MEU_TYPE,
         lo.MEU_WEIGHTED, lo.MEU_CORPUS, lo.MAX_MARGIN)

#: the parameters each algorithm takes, and CRFsuite's defaults
DEFAULTS: dict[str, dict[str, Any]] = {
    "lbfgs": {"c1": 0.0, "c2": 1.0, "max_iterations": None, "num_memories": 6,
              "epsilon": 1e-5, "period": 10, "delta": 1e-5, "linesearch": "MoreThuente",
              "max_linesearch": 20},
    "l2sgd": {"c2": 1.0, "max_iterations": 1000, "period": 10, "delta": 1e-6,
              "calibration_eta": 0.1, "calibration_rate": 2.0, "calibration_samples": 1000,
              "calibration_candidates": 10, "calibration_max_trials": 20},
    "ap": {"max_iterations": 100, "epsilon": 0.0},
    "pa": {"pa_type": 1, "c": 1.0, "error_sensitive": True, "averaging": True,
           "max_iterations": 100, "epsilon": 0.0},
    "arow": {"variance": 1.0, "gamma": 1.0, "max_iterations": 100, "epsilon": 0.0},
}
#: lbfgs runs until its stopping tests hold (CRFsuite: INT_MAX iterations)
UNLIMITED = 2 ** 31 - 1
LINESEARCHES = ("MoreThuente", "Backtracking", "StrongBacktracking")


class CRFParams:
    """The hyper-parameters, stored as given (scikit-learn's convention)."""

    def __init__(self, algorithm=None, min_freq=None, all_possible_states=None,
                 all_possible_transitions=None, c1=None, c2=None, max_iterations=None,
                 num_memories=None, epsilon=None, period=None, delta=None, linesearch=None,
                 max_linesearch=None, calibration_eta=None, calibration_rate=None,
                 calibration_samples=None, calibration_candidates=None,
                 calibration_max_trials=None, pa_type=None, c=None, error_sensitive=None,
                 averaging=None, variance=None, gamma=None, verbose=False,
                 model_filename=None, keep_tempfiles=False, trainer_cls=None,
                 scheme="auto", objective="ml", beta=1.0, workers=1, literal_labels=False):
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1, self.c2 = c1, c2
        self.max_iterations = max_iterations
        self.num_memories, self.epsilon, self.period, self.delta = (num_memories, epsilon,
                                                                    period, delta)
        self.linesearch, self.max_linesearch = linesearch, max_linesearch
        self.calibration_eta, self.calibration_rate = calibration_eta, calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type, self.c, self.error_sensitive = pa_type, c, error_sensitive
        self.averaging, self.variance, self.gamma = averaging, variance, gamma
        self.verbose, self.model_filename = verbose, model_filename
        self.keep_tempfiles, self.trainer_cls = keep_tempfiles, trainer_cls
        self.scheme, self.objective, self.beta = scheme, objective, beta
        self.workers, self.literal_labels = workers, literal_labels


class BaseEstimator:
    """get_params/set_params by the constructor's signature, when scikit-learn is
    not installed (scikit-learn's own BaseEstimator otherwise)."""

    @classmethod
    def _get_param_names(cls) -> list[str]:
        return sorted(p for p in inspect.signature(cls.__init__).parameters if p != "self")

    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in self._get_param_names()}

    def set_params(self, **params: Any) -> "BaseEstimator":
        names = self._get_param_names()
        for k, v in params.items():
            if k not in names:
                raise InputError(f"unknown parameter {k!r} of {type(self).__name__}")
            setattr(self, k, v)
        return self


@dataclass
class Run:
    """One training run resolved from the parameters (:func:`resolve`)."""
    algorithm: str
    objective: str
    l2: float | None
    l1: float
    max_iter: int
    tol: float | None
    min_freq: float
    all_possible_states: bool
    all_possible_transitions: bool
    options: dict = field(default_factory=dict)


def _number(name: str, value: Any, low: float = -math.inf, integer: bool = False,
            strict: bool = False) -> Any:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > low if strict else value >= low)
    if integer:
        ok = ok and float(value).is_integer()
    if not ok:
        kind = "an integer" if integer else "a finite number"
        raise InputError(f"{name} must be {kind} {'>' if strict else '>='} {low:g}, got "
                         f"{value!r}")
    return int(value) if integer else float(value)


def resolve(p: CRFParams, sentences: int) -> Run:
    """The run of parameters ``p`` over ``sentences`` training sequences (module doc)."""
    algorithm = "lbfgs" if p.algorithm is None else p.algorithm
    if algorithm not in ALGORITHMS:
        raise InputError(f"unknown algorithm {algorithm!r}; use one of {', '.join(ALGORITHMS)}")
    if p.trainer_cls is not None:
        raise InputError("trainer_cls: a pycrfsuite Trainer class has no counterpart in "
                         "fstchunk (training runs through fstchunk.learn); leave it None")
    defaults = DEFAULTS[algorithm]
    given = {k: getattr(p, k) for k in {k for d in DEFAULTS.values() for k in d}
             if getattr(p, k) is not None}
    alien = [k for k in given if k not in defaults]
    if alien:
        takers = [a for a in ALGORITHMS if alien[0] in DEFAULTS[a]]
        raise InputError(f"parameter {alien[0]}={given[alien[0]]!r} does not apply to "
                         f"algorithm {algorithm!r} (it is a parameter of "
                         f"{', '.join(takers)})")
    v = {**defaults, **given}
    n = max(int(sentences), 1)
    opts: dict[str, Any] = {}
    for name in ("epsilon", "delta", "c", "variance", "gamma", "calibration_eta",
                 "calibration_rate"):
        if name in v:
            opts[name] = _number(name, v[name], 0.0, strict=name in ("c", "variance",
                                                                      "calibration_eta"))
    for name in ("num_memories", "period", "max_linesearch", "calibration_samples",
                 "calibration_candidates", "calibration_max_trials"):
        if name in v:
            opts[name] = _number(name, v[name], 1, integer=True)
    if "pa_type" in v:
        if v["pa_type"] not in (0, 1, 2) or isinstance(v["pa_type"], bool):
            raise InputError(f"pa_type must be 0, 1 or 2, got {v['pa_type']!r}")
        opts["pa_type"] = int(v["pa_type"])
    for name in ("error_sensitive", "averaging"):
        if name in v:
            opts[name] = bool(v[name])
    if "linesearch" in v and v["linesearch"] not in LINESEARCHES:
        raise InputError(f"linesearch must be one of {', '.join(LINESEARCHES)}, got "
                         f"{v['linesearch']!r}")
    c1 = _number("c1", v.get("c1", 0.0), 0.0)
    c2 = _number("c2", v["c2"], 0.0) if "c2" in v else None
    max_it = v.get("max_iterations")
    max_iter = UNLIMITED if max_it is None else _number("max_iterations", max_it, 1,
                                                        integer=True)
    objective = p.objective
    if not isinstance(objective, str):
        raise InputError(f"unknown objective {objective!r}; use one of "
                         f"{', '.join(o.name for o in KNOWN)}")
    objective = lo.objective(objective, KNOWN).name       # meu-weighted:T=w in one form
    if algorithm in ("ap", "pa", "arow"):
        if objective != "ml":
            raise InputError(f"objective={objective!r} is trained by L-BFGS (or BCFW for "
                             f"max-margin); algorithm {algorithm!r} trains its own "
                             f"margin rule: leave objective='ml'")
        objective = {"ap": lo.PERCEPTRON.name, "pa": "pa", "arow": "arow"}[algorithm]
    elif algorithm == "l2sgd" and objective != "ml":
        raise InputError(f"algorithm 'l2sgd' trains objective='ml' only, not {objective!r}")
    elif objective == lo.MAX_MARGIN.name and (c1 or p.algorithm not in (None, "lbfgs")):
        raise InputError("objective='max-margin' is trained by BCFW (C = 1/(2·c2)); it "
                         "takes c2 only, not c1 or another algorithm")
    l2 = None if c2 is None else c2 / n
    if objective == lo.MAX_MARGIN.name and not l2:
        raise InputError("objective='max-margin' needs c2 > 0")
    min_freq = 0.0 if p.min_freq is None else _number("min_freq", p.min_freq)
    return Run(algorithm, objective, l2, c1 / n, max_iter, 0.0 if algorithm == "lbfgs"
               and objective != lo.MAX_MARGIN.name else None, min_freq,
               bool(p.all_possible_states), bool(p.all_possible_transitions), opts)
