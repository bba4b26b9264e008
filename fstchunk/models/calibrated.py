"""Reading a chain model's scores as probabilities: temperature scaling.

A model trained by likelihood or expected F (:mod:`fstchunk.learn.objectives`:
``probabilistic``) gives log-probabilities; one trained by a margin (max-margin, the
perceptron) gives scores of a margin's scale, which MEU decoding, marginals and
expectations may read as p(y|x) ∝ exp(score/T) only once T is fitted by maximum
likelihood on held-out sentences (Guo et al. 2017; :mod:`fstchunk.engine.temperature`).
:class:`Calibrated` gives a chain model (the CRF) ``temperature``, ``probabilistic``,
``require_probabilities`` and ``calibrate``; the settings record T, the held-out NLL at T
and at T = 1, and where T was fitted.

Pitfall: calibrate on sentences the model was not trained on (the training set's
margins are wider than new data's, so T would come out too small).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.errors import InputError
from ..engine.temperature import HeldOut, fit_temperature, stack_layers
from ..io.conll import Sentence
from ..learn import objectives as lo
from .maxmargin import sequence_score


class Calibrated:
    """Temperature scaling of a chain model with ``settings``, ``theta``, ``tags``,
    ``chain(θ, X)`` and ``training_data(sentences, data_scheme)`` (module doc)."""

    @property
    def temperature(self) -> float:
        """T of p(y|x) ∝ exp(score(x, y)/T): the calibrated one, else 1."""
        return float(self.settings_.get("temperature", 1.0))

    @property
    def probabilistic(self) -> bool:
        """Whether exp(score/T) is read as p(y|x): a likelihood- or risk-trained CRF, or a
        max-margin or perceptron one once calibrated (its scores have the scale of margins)."""
        name = self.settings_.get("objective", self.settings_.get("run", {}).get("objective"))
        trained = lo.OBJECTIVES.get(name)
        return trained is None or trained.probabilistic or "temperature" in self.settings_

    #: the Python call that calibrates this kind of model, for the advice of
    #: :meth:`require_probabilities`
    calibrate_call = "crf.calibrate(held_out_sentences)"

    def require_probabilities(self, fix: str | None = None) -> None:
        """InputError saying how to calibrate, unless :attr:`probabilistic`: ``fix`` (the
        command line names its command), else the Python call :attr:`calibrate_call`
        (on the command line: ``fstchunk calibrate``)."""
        if not self.probabilistic:
            objective = self.settings_.get("objective",
                                          self.settings_.get("run", {}).get("objective"))
            what = (f"this CRF was trained by {objective}; its scores are margins, not "
                    f"probabilities. Calibrate it on held-out sentences first: ")
            raise InputError(what + f"{fix or self.calibrate_call}; MAP decoding needs no "
                             f"calibration",
                             cli=what + (fix or "fstchunk calibrate --model MODEL --input "
                                         "HELDOUT -o MODEL (or fstchunk train --calibrate "
                                         "HELDOUT)") + "; MAP decoding needs no calibration")

    def calibrate(self, sentences: Sequence[Sentence], source: str | None = None,
                  data_scheme: str | None = None) -> float:
        """Fit T by maximum likelihood of the gold tags of held-out ``sentences`` (not
        the training set; :mod:`fstchunk.engine.temperature`), store it in the settings
        (``temperature``, ``calibration_nll`` and ``calibration_nll_t1``: mean NLL per
        sentence at T and at T = 1, ``calibrated_on``) and return it."""
        data = self.training_data(sentences, data_scheme)
        ch = self.chain(self.theta_, data.X)
        off, L = data.gold.offsets, len(self.tags_)

        def build(idx: list[int]):
            lats = [ch.lattice(off[i], off[i + 1]).layers for i in idx]
            gold = [sequence_score(ch.emissions[off[i]:off[i + 1]], ch.trans, ch.start,
                                   ch.end, data.gold.sequences[i]) for i in idx]
            return stack_layers(lats), np.array(gold)

        try:
            fit = fit_temperature(HeldOut(build, np.diff(off), L))
        except InputError as e:
            raise InputError(f"{source}: {e}" if source else str(e)) from None
        self.settings_.update(temperature=fit.temperature, calibration_nll=fit.nll,
                              calibration_nll_t1=fit.nll_untempered,
                              calibrated_on={"source": source or "<unnamed>",
                                             "sentences": fit.sentences})
        return fit.temperature
