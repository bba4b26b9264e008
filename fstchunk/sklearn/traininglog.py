"""``training_log_`` of :class:`fstchunk.sklearn.CRF`: what sklearn-crfsuite's parser of
CRFsuite's training log (pycrfsuite's ``TrainLogParser``) gives, with CRFsuite's keys
for each algorithm (lib/crf/src/train_*.c):

=========  ====================================================================
lbfgs      ``num``, ``scores``, ``loss``, ``feature_norm``, ``error_norm``,
           ``active_features``, ``linesearch_trials``, ``linesearch_step``, ``time``
l2sgd      ``num``, ``scores``, ``loss``, ``time``
ap/pa/arow ``num``, ``scores``, ``loss``, ``feature_norm``, ``time``
=========  ====================================================================

and with held-out data (``fit(X_dev=, y_dev=)``) CRFsuite's holdout evaluation of the
Viterbi labels each iteration: ``scores`` ({label: :class:`LabelScore`}), ``avg_precision``,
``avg_recall``, ``avg_f1`` (macro averages over the labels, CRFsuite's: a label never
in the gold adds 0), ``item_accuracy`` and ``instance_accuracy`` (Fractions) and their
``_float``s — plus fstchunk's ``dev`` (conlleval F, or token accuracy without a scheme,
in percent).

Values are fstchunk's, on CRFsuite's scale: ``loss`` and ``error_norm`` are N times
fstchunk's per-sentence objective and its gradient (L1: the pseudo-gradient, as
OWL-QN's); ``linesearch_trials`` counts the objective's evaluations in the iteration,
``linesearch_step`` is the length ‖θ_k − θ_{k−1}‖ of the step taken (CRFsuite's is the
multiple of its search direction); ``time`` the solver's seconds for the iteration.
The run's ``featgen_percent`` (100), ``featgen_num_features`` (the features generated:
state features and transitions), ``featgen_seconds``, ``training_seconds`` and
``storing_seconds`` are there too.  pycrfsuite's raw ``log`` lines and ``events`` are
not (fstchunk's solvers do not print CRFsuite's log).
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from ..decoding.decoders import MAP
from ..io.crfsuite.evaluation import evaluate
from ..learn.owlqn import pseudo_gradient

#: pycrfsuite's per-label holdout figures (precision, recall, f1 None: not in the gold)
LabelScore = namedtuple("LabelScore", "match model ref precision recall f1")

#: the keys CRFsuite's log gives each iteration, per algorithm (module doc)
KEYS = {"lbfgs": ("num", "scores", "loss", "feature_norm", "error_norm", "active_features",
                  "linesearch_trials", "linesearch_step", "time"),
        "l2sgd": ("num", "scores", "loss", "time")}
ONLINE_KEYS = ("num", "scores", "loss", "feature_norm", "time")


@dataclass
class TrainingLog:
    """sklearn-crfsuite's ``training_log_`` (module doc): ``iterations`` (a dict per
    step), ``last_iteration``, the ``featgen_*`` figures, ``training_seconds``,
    ``storing_seconds``, and the run's outcome (``scheme``, ``converged``,
    ``stopped_by``)."""
    iterations: list = field(default_factory=list)
    scheme: str = ""
    converged: bool = False
    stopped_by: str = ""
    featgen_percent: int = 100
    featgen_num_features: int | None = None
    featgen_seconds: float | None = None
    training_seconds: float | None = None
    storing_seconds: float | None = None

    def record_fit(self, model: Any, seconds: float) -> None:
        """What a fit of ``model`` (an attribute CRF) that took ``seconds`` in all
        leaves in the log: the training time, the rest as feature generation, the
        features, the scheme, how it stopped."""
        settings = model.settings_
        self.training_seconds = float(settings.get("train_seconds", 0.0))
        self.featgen_seconds = max(seconds - self.training_seconds, 0.0)
        self.featgen_num_features = int(model.P + np.count_nonzero(model.transitions_))
        self.scheme, self.converged = model.scheme_, bool(settings.get("converged"))
        self.stopped_by = str(settings.get("stopped_by", ""))

    @property
    def last_iteration(self) -> dict:
        return self.iterations[-1] if self.iterations else {}


class Watch:
    """Counts the objective's evaluations and keeps the last gradient: wraps a smooth
    solver's ``fun`` (lbfgs) so that the log can tell trials and the error norm."""

    def __init__(self) -> None:
        self.calls, self.x, self.grad = 0, None, None

    def wrap(self, fun):
        def watched(theta: np.ndarray):
            value, grad = fun(theta)
            self.calls += 1
            self.x, self.grad = theta.copy(), grad
            return value, grad
        return watched

    def take(self) -> int:
        calls, self.calls = self.calls, 0
        return calls


def holdout(model: Any, X_dev: Sequence[Any], y_dev: Sequence[Sequence[str]]) -> dict:
    """CRFsuite's holdout figures of the Viterbi labels of ``X_dev`` (module doc), over
    the model's labels of y in CRFsuite's order, then any other label of the data."""
    pred = MAP().tags(model.lattices(X_dev, require_probabilities=False))
    rep = evaluate([list(zip(g, p)) for g, p in zip(y_dev, pred)])
    labels = list(dict.fromkeys([*model.classes, *rep.labels]))
    scores, sums = {}, np.zeros(3)
    for y in labels:
        match, mod, ref = rep.match.get(y, 0), rep.model.get(y, 0), rep.ref.get(y, 0)
        prf = None
        if ref:
            rep.match[y], rep.model[y], rep.ref[y] = match, mod, ref
            prf = rep.prf(y)
            sums += prf
        scores[y] = LabelScore(match, mod, ref, *(prf or (None, None, None)))
    avg = sums / max(len(labels), 1)
    items = Fraction(rep.items_correct, rep.items) if rep.items else Fraction(0)
    inst = Fraction(rep.instances_correct, rep.instances) if rep.instances else Fraction(0)
    return {"scores": scores, "avg_precision": float(avg[0]), "avg_recall": float(avg[1]),
            "avg_f1": float(avg[2]), "item_accuracy": items,
            "item_accuracy_float": float(items), "instance_accuracy": inst,
            "instance_accuracy_float": float(inst)}


class Recorder:
    """The trainer's callback that fills a :class:`TrainingLog` (module doc)."""

    def __init__(self, log: TrainingLog, algorithm: str, N: int, l1: float,
                 dev: tuple | None, watch: Watch | None, verbose: bool):
        self.log, self.algorithm, self.N, self.l1 = log, algorithm, N, l1
        self.dev, self.watch, self.verbose = dev, watch, verbose
        self.keys = KEYS.get(algorithm, ONLINE_KEYS)
        self.seconds, self.theta = 0.0, None

    def __call__(self, p) -> None:
        free = p.model.free
        theta = p.theta
        entry: dict[str, Any] = {"num": p.iteration, "scores": {},
                                 "loss": self.N * p.objective,
                                 "feature_norm": float(np.linalg.norm(theta)),
                                 "active_features": int(np.count_nonzero(theta[free])),
                                 "time": p.seconds - self.seconds}
        self.seconds = p.seconds
        if self.watch is not None:
            entry["linesearch_trials"] = self.watch.take()
            grad = self.watch.grad
            if grad is not None and self.watch.x is not None and \
                    np.array_equal(self.watch.x, theta):
                if self.l1:
                    grad = pseudo_gradient(theta, grad, self.l1, free)
                entry["error_norm"] = self.N * float(np.linalg.norm(grad))
            before = self.theta if self.theta is not None else np.zeros_like(theta)
            entry["linesearch_step"] = float(np.linalg.norm(theta - before))
        self.theta = theta.copy()
        entry = {k: entry[k] for k in self.keys if k in entry}
        if self.dev is not None:
            entry.update(holdout(p.model, *self.dev))
            if np.isfinite(p.dev_f):
                entry["dev"] = p.dev_f
        self.log.iterations.append(entry)
        if self.verbose:
            print(line(entry), flush=True)


def line(e: dict) -> str:
    """One iteration as sklearn-crfsuite's verbose trainer prints it."""
    out = f"Iter {e['num']:<3} time={e['time']:<5.2f} loss={e['loss']:<8.2f} "
    if "active_features" in e:
        out += f"active={e['active_features']:<5} "
    if "avg_precision" in e:
        out += (f"precision={e['avg_precision']:0.3f}  recall={e['avg_recall']:0.3f}  "
                f"F1={e['avg_f1']:0.3f}  Acc(item/seq)={e['item_accuracy_float']:0.3f} "
                f"{e['instance_accuracy_float']:0.3f}  ")
    if "dev" in e:
        out += f"dev={e['dev']:.2f} "
    if "feature_norm" in e:
        out += f"feature_norm={e['feature_norm']:<8.2f}"
    return out.strip()
