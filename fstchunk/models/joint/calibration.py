"""Calibration of the joint model: its chunk layer as held-out chains for the
temperature fit of :mod:`fstchunk.engine.temperature` (p(y|x) ∝ exp(score(x, y)/T),
T by maximum likelihood of held-out gold structures; the formulas, the fit and its
pitfalls are there).

The averaged perceptron and MMVP (Shimizu & Haas 2006, Algorithms 4.1 and 4.3) learn
scores of arbitrary scale: MEU decoding of the raw scores gave NP F1 12.9 against
77.4 for MAP on CoNLL-2000.  A sentence's structures are the paths of its chunk
layer as a chain (:func:`.dp.chain_layers`, exact), 2·c·p states per token; the gold
structure's score is :func:`.structure.structure_score`.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ...engine import temperature as _t
from ...engine.temperature import TemperatureFit, fit_temperature, stack_layers
from .dp import chain_layers
from .structure import Parts, Structure, structure_score

__all__ = ["HeldOut", "TemperatureFit", "fit_temperature"]


def HeldOut(part_scores: Callable[[int], Parts], golds: Sequence[Structure],
            lengths: Sequence[int], states: int) -> _t.HeldOut:
    """Held-out joint sentences for :func:`fit_temperature`: ``part_scores(i)`` gives
    sentence i's :class:`Parts`, ``golds`` their gold structures, ``states`` the
    number of chain states per token (2·c·p)."""
    def build(idx: list[int]):
        parts = [part_scores(i) for i in idx]
        labels = np.zeros((2, parts[0].shape[1]), dtype=np.int64)   # labels unused
        gold = np.array([structure_score(p, golds[i]) for p, i in zip(parts, idx)])
        return stack_layers([chain_layers(p, labels) for p in parts]), gold

    if len(golds) != len(lengths):
        raise ValueError("one gold structure per held-out sentence")
    return _t.HeldOut(build, lengths, states)
