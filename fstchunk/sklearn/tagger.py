"""What a fitted :class:`fstchunk.sklearn.CRF` offers where sklearn-crfsuite offers
pycrfsuite's ``Tagger``: :class:`Tagger` (``labels``, ``set``, ``tag``, ``marginal``,
``probability``, ``info``, ``dump``); ``training_log_`` is :mod:`.traininglog`'s."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

import warnings

from ..core.errors import FstchunkWarning, InputError
from ..decoding.decode import decode_map
from ..io.crfsuite.model import CRFsuiteModel
from ..io.crfsuite.writer import dump
from ..models.attribute_crf import AttributeCRF
from ..schemes.encodings import is_valid
from ..schemes.tagseq import tag_list
from ..structures.lattice import Lattice
from .modelfile import encoded, forbidden, to_crfsuite


@dataclass
class ModelInfo:
    """pycrfsuite's ``Tagger.info()`` (its ``ParsedDump``) of the model's CRFsuite file
    (:mod:`.modelfile`): ``header`` (the file header's fields as strings, as ``crfsuite
    dump`` prints them), ``labels`` and ``attributes`` (name -> id as a string),
    ``state_features`` ``{(attribute, label): weight}`` and ``transitions``
    ``{(from, to): weight}`` — the non-zero weights, as a CRFsuite file keeps them,
    and each transition the chunk scheme forbids between labels of y (``classes_``) as
    ``-inf`` (the file holds :data:`.modelfile.FORBIDDEN` there)."""
    state_features: dict
    transitions: dict
    attributes: dict
    labels: dict
    header: dict


def model_info(model: AttributeCRF, m: CRFsuiteModel) -> ModelInfo:
    """The :class:`ModelInfo` of ``model`` from its CRFsuite model file ``m`` (read
    back: the header, the ids) and its own weights (not the anchor's shifts)."""
    header = {k: (f"0x{v:X}" if k.startswith("off_") else str(v)) for k, v in m.header.items()}
    own = to_crfsuite(model, anchored=False)
    trans = own.transition_features(nonzero=False)
    named = set(model.classes)              # the labels of y: classes_, as eli5 reads them
    for i, j in zip(*np.nonzero(forbidden(model))):
        key = (own.labels[i], own.labels[j])
        if key[0] in named and key[1] in named:
            trans[key] = float("-inf")
        else:
            del trans[key]
    return ModelInfo(own.state_features(), trans,
                     {a: str(i) for i, a in enumerate(m.attributes)},
                     {t: str(i) for i, t in enumerate(m.labels)}, header)


#: the advice of a refusal to read a margin-trained model's scores as probabilities
CALIBRATE = "crf.calibrate(X_held_out, y_held_out)"


#: CRFsuite's online algorithms, whose marginals sklearn-crfsuite returns uncalibrated
ONLINE = ("ap", "pa", "arow")


def normalised_scores(model: AttributeCRF) -> None:
    """Before marginals of a margin-trained model not yet calibrated.  After ap, pa or
    arow sklearn-crfsuite returns the scores normalised, exp(θ·φ)/Z; so does fstchunk,
    with one FstchunkWarning per model saying how to calibrate.  fstchunk's own
    max-margin objective has no such precedent: its marginals are refused until
    calibrated (:data:`CALIBRATE`)."""
    if model.probabilistic or model.__dict__.get("_warned_uncalibrated"):
        return
    if model.algorithm not in ONLINE:
        model.require_probabilities(CALIBRATE)
    model._warned_uncalibrated = True
    how = model.settings_.get("objective", model.algorithm)
    warnings.warn(f"this CRF was trained by {how}: its marginals are its scores "
                  f"normalised (as CRFsuite's), not calibrated probabilities; fit the "
                  f"temperature on held-out data with {CALIBRATE}", FstchunkWarning,
                  stacklevel=3)


class Tagger:
    """pycrfsuite.Tagger's methods over a fitted attribute CRF: :meth:`tag` (Viterbi)
    for any model, :meth:`marginal` and :meth:`probability` for one whose scores are
    probabilities (a margin-trained one once calibrated: :data:`CALIBRATE`)."""

    def __init__(self, model: AttributeCRF):
        self.model = model
        self._lattice: Lattice | None = None
        self._info: ModelInfo | None = None
        self._encoded: tuple[bytes, CRFsuiteModel] | None = None

    def labels(self) -> list[str]:
        """The model's labels, in CRFsuite's order (first appearance in training)."""
        return list(self.model.tags_)

    def set(self, xseq: Sequence[Any]) -> None:
        """The sequence :meth:`tag`, :meth:`marginal` and :meth:`probability` read."""
        self._lattice = self.model.lattices([xseq], require_probabilities=False)[0]

    def _current(self) -> Lattice:
        if self._lattice is None:
            raise InputError("no sequence set: call tagger.set(xseq) or tagger.tag(xseq) first")
        return self._lattice

    def tag(self, xseq: Sequence[Any] | None = None) -> list[str]:
        """The most probable label sequence (Viterbi) of ``xseq`` or the current one."""
        if xseq is not None:
            self.set(xseq)
        return decode_map(self._current()).tags

    def marginal(self, y: str, pos: int) -> float:
        """Pr(y_pos = y | x) of the current sequence."""
        normalised_scores(self.model)
        lat = self._current()
        if not isinstance(pos, (int, np.integer)) or not 0 <= pos < lat.n:
            raise InputError(f"position {pos!r} is outside the sequence of {lat.n} items")
        return float(lat.marginals()[pos, lat.space.index(y, f"position {pos}")])

    def probability(self, yseq: Sequence[str]) -> float:
        """Pr(yseq | x) of the current sequence (0 for a sequence the scheme rules out)."""
        normalised_scores(self.model)
        lat = self._current()
        yseq = tag_list(yseq, "yseq")
        if lat.space.chunked:
            if len(yseq) == lat.n and all(t in lat.tags for t in yseq) and \
                    not is_valid(list(yseq), lat.scheme):
                return 0.0
        return float(np.exp(lat.log_prob(list(yseq))))

    def _file(self) -> tuple[bytes, CRFsuiteModel]:
        if self._encoded is None:
            self._encoded = encoded(self.model)
        return self._encoded

    def info(self) -> ModelInfo:
        """The model's parameters by name, as python-crfsuite's ``Tagger.info()``
        (:class:`ModelInfo`)."""
        if self._info is None:
            self._info = model_info(self.model, self._file()[1])
        return self._info

    def dump(self, filename: str | os.PathLike | None = None) -> None:
        """``crfsuite dump``'s text of the model's CRFsuite file, to ``filename`` or
        standard output (python-crfsuite's ``Tagger.dump``)."""
        text = dump(self._file()[1])
        if filename is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            with open(filename, "w", encoding="utf-8") as fh:
                fh.write(text)

