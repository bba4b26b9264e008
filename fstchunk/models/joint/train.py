"""Training the joint model: averaged perceptron, MMVP, and CRF by L-BFGS.

Shimizu & Haas (2006) train with the averaged perceptron (their Algorithm 4.1,
with Collins' averaging) and MMVP (Algorithm 4.3: the perceptron with the
max-margin step δ = clip((loss − margin) / ‖Δf‖², 0, 1), C = 1), both with the
first-iteration trick: lexicalised weights stay frozen in iteration 1.  Beyond
the paper, ``crf`` minimises −Σ log Pr(gold | x) + l2·‖w‖², with the gradient
E[f] − f(gold) + 2·l2·w from the part marginals of
:func:`~.dp.inside_outside`.

Pitfalls:

* The perceptron's returned weights are the average w − u/t, not the last w;
  ``callback(iteration, model)`` sees the average after each iteration.
* The NLL is split over forked processes by
  :func:`fstchunk.parallel.map_sentences`; each shard gets its context
  (model, w, data) explicitly (no module globals), so it works under any
  process start.
* Training sentences need gold structures (``Encoded.gold``); no sentence,
  ``iterations`` < 1 or ``l2`` negative or not finite raise
  :class:`~fstchunk.errors.InputError` naming the option.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

import numpy as np
import scipy.optimize

from ...errors import InputError
from ...parallel import map_sentences, usable_cores
from ...progress import progress as progress_bar
from .dp import inside_outside, viterbi
from .structure import Parts, Structure, structure_parts, structure_score

ALGORITHMS = ("perceptron", "mmvp", "crf")


class Trainable(Protocol):
    """What training needs of a model (:class:`~.model.JointModel` has it)."""
    w: np.ndarray
    lexical: np.ndarray
    settings: dict
    c: int
    p: int

    def parts(self, x: Any, w: np.ndarray | None = None) -> Parts: ...

    def features(self, x: Any, parts: Parts) -> tuple[np.ndarray, np.ndarray]: ...

    def loss(self, gold: Structure, y: Structure) -> float: ...

    def _difference(self, x: Any, gold: Structure, y: Structure
                    ) -> tuple[np.ndarray, np.ndarray]: ...


def fit(model: Trainable, data: Sequence[Any], algorithm: str = "perceptron",
        iterations: int = 10, l2: float = 0.5, progress: bool = False,
        callback: Callable[[int, Any], None] | None = None) -> Trainable:
    """Train ``model`` on encoded sentences in place and return it (see the module doc;
    for ``crf`` ``iterations`` is the L-BFGS maximum)."""
    if algorithm not in ALGORITHMS:
        raise InputError(f"unknown algorithm {algorithm!r} ({', '.join(ALGORITHMS)})")
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) \
            or iterations < 1:
        raise InputError(f"iterations must be an integer >= 1, got {iterations!r}")
    if isinstance(l2, bool) or not isinstance(l2, (int, float, np.floating, np.integer)) \
            or not np.isfinite(l2) or l2 < 0:
        raise InputError(f"l2 must be a finite number >= 0, got {l2!r}")
    if len(data) == 0:
        raise InputError("no training sentences: training needs at least one sentence with "
                         "gold POS and chunk tags")
    missing = [i for i, x in enumerate(data) if x.gold is None]
    if missing:
        raise InputError(f"training sentence {missing[0] + 1}: training sentences need "
                         f"gold POS and chunk tags")
    model.settings.update(algorithm=algorithm, iterations=iterations, sentences=len(data))
    if algorithm == "crf":
        model.settings["l2"] = l2
        return fit_crf(model, data, iterations, l2, progress)
    return fit_perceptron(model, data, algorithm, iterations, progress, callback)


def fit_perceptron(model: Trainable, data: Sequence[Any], algorithm: str, iterations: int,
                   progress: bool = False,
                   callback: Callable[[int, Any], None] | None = None) -> Trainable:
    """The averaged perceptron (``perceptron``) or MMVP (``mmvp``) with the
    first-iteration trick."""
    w = model.w.copy()
    u = np.zeros_like(w)                # Σ_t t·Δ_t, for the average w − u/t
    t = 1
    bar = progress_bar(iterations, f"joint {algorithm}", enabled=progress)
    for it in range(iterations):
        mistakes = 0
        for x in data:
            y, _ = viterbi(model.parts(x, w))
            if y != x.gold:
                mistakes += 1
                idx, val = model._difference(x, x.gold, y)
                step = 1.0
                if algorithm == "mmvp":      # δ of Algorithm 4.3 (C = 1)
                    margin = float(w[idx] @ val)          # s(gold) − s(y)
                    norm = float(val @ val)
                    step = max(0.0, min((model.loss(x.gold, y) - margin) / norm, 1.0)) \
                        if norm > 0 else 0.0
                if it == 0:                  # first-iteration trick
                    keep = ~model.lexical[idx]
                    idx, val = idx[keep], val[keep]
                w[idx] += step * val
                u[idx] += t * step * val
            t += 1
        bar.set_postfix(errors=mistakes, refresh=False)
        bar.update(1)
        if callback is not None:
            model.w = w - u / t
            callback(it + 1, model)
    bar.close()
    model.w = w - u / t
    return model


def objective(model: Trainable, w: np.ndarray, data: Sequence[Any], l2: float
              ) -> tuple[float, np.ndarray]:
    """−Σ log Pr(gold | x) + l2·‖w‖² and its gradient E[f] − f(gold) + 2·l2·w,
    the sentences split over processes."""
    k = max(1, min(usable_cores(), len(data) // 50))
    shards = [range(i, len(data), k) for i in range(k)]
    parts = map_sentences(_nll_shard, shards, context=(model, w, data), processes=k,
                          chunksize=1)
    val = l2 * float(w @ w) + sum(v for v, _ in parts)
    grad = 2.0 * l2 * w + sum(g for _, g in parts)
    return val, grad


def _nll_shard(job, indices) -> tuple[float, np.ndarray]:
    """Σ_{i ∈ indices} log Z_i − score(gold_i), and Σ E[f] − f(gold); ``job`` is
    (model, w, data), the context :func:`objective` hands to the workers."""
    model, w, data = job
    val, grad = 0.0, np.zeros_like(w)
    for i in indices:
        x = data[i]
        parts = model.parts(x, w)
        logZ, marg = inside_outside(parts)
        val += logZ - structure_score(parts, x.gold)
        mi, mv = model.features(x, marg)
        gi, gv = model.features(x, structure_parts(x.gold, model.c, model.p))
        np.add.at(grad, mi, mv)
        np.add.at(grad, gi, -gv)
    return val, grad


def fit_crf(model: Trainable, data: Sequence[Any], iterations: int, l2: float,
            progress: bool = False) -> Trainable:
    """Conditional likelihood + l2·‖w‖² by L-BFGS-B, at most ``iterations`` steps."""
    bar = progress_bar(iterations, "joint crf", enabled=progress, every=10)
    state = {"value": float("nan")}

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        state["value"], grad = objective(model, w, data, l2)
        return state["value"], grad

    def cb(_):
        bar.set_postfix(nll=f"{state['value']:.6g}", refresh=False)
        bar.update(1)
    res = scipy.optimize.minimize(fun, model.w, jac=True,
                                  method="L-BFGS-B", options={"maxiter": iterations},
                                  callback=cb)
    bar.close()
    model.w = res.x
    model.settings["crf_iterations"] = int(res.nit)
    return model
