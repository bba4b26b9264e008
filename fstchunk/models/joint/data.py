"""Joint models and a corpus: predict, calibrate, model_for (and Table 6's templates,
from :mod:`.build`).

:func:`predict` decodes (POS, chunk) tags, :func:`calibrate` fits the temperature of a
model on held-out sentences (:mod:`.calibration`), :func:`~.corpus.scores` gives POS
accuracy, chunk-tag accuracy and conlleval chunk F1 (Table 7's columns).
:func:`model_for` is the way before the estimator: a model of one variant with the
labels and vocabularies of its training data, and that data encoded (today
``JointModel(variant=...).fit(sentences)`` learns both).

Pitfalls:

* A tagger predicts POS only (its chunks are copied from the input, ``_`` where
  the input has none), a chunker chunk tags only (its POS are the input's); MEU
  decoding needs the joint variant's chunk layer and probabilities (a ``crf``
  model, or a calibrated perceptron/MMVP one).
* A tagger's or chunker's gold labels unseen in training are replaced by the
  first label when encoding training data.
* Training data a variant cannot learn from raise
  :class:`~fstchunk.core.errors.InputError` naming the file (:mod:`.build`).
"""

from __future__ import annotations

from typing import Sequence

from ...core.errors import InputError
from ...decoding.decoders import MAP, Decoder, decoder as get_decoder
from .build import (CHUNKER_TEMPLATES, JOINT_TEMPLATES, KIND_TEMPLATES, TAGGER_TEMPLATES,
                    learn_scorer)
from .corpus import Layered
from .encoding import encode
from .model import JointModel
from .scoring import Encoded

__all__ = ["CHUNKER_TEMPLATES", "JOINT_TEMPLATES", "KIND_TEMPLATES", "TAGGER_TEMPLATES",
           "calibrate", "model_for", "predict"]

def model_for(data: Sequence[Layered], kind: str = "joint", settings: dict | None = None,
              source: str | None = None) -> tuple[JointModel, list[Encoded]]:
    """A model with the labels and vocabularies of ``data`` (weights zero) and its
    encoded training data: the way before :meth:`JointModel.fit` learnt them itself
    (``JointModel(variant=kind, ...).fit(data)`` is the way now; a fit on the encoded
    data trains this model).  ``settings``: entries for its ``settings_``; ``source``
    names the training file in the error for no sentences."""
    scorer, cols = learn_scorer(data, kind, source)
    model = JointModel.from_state(scorer.chunk_labels, scorer.pos_labels, scorer.templates,
                                  scorer.vocabs, settings=dict(settings or {}, kind=kind))
    return model, [encode(model, d, cols_) for d, cols_ in zip(data, cols)]


def predict(model: JointModel, data: Sequence[Layered], decoder: "str | Decoder" = "map",
            beta: float = 1.0) -> tuple[list[list[str]], list[list[str]]]:
    """Predicted (POS, chunk) tags of each sentence; a tagger predicts POS only
    (chunks copied from the input), a chunker chunk tags only.  ``decoder`` (a name of
    :data:`fstchunk.decoding.decoders.REGISTRY` or a decoder): ``map`` is the joint Viterbi; any
    other decodes the joint model's chunk layer under p(y|x) ∝ exp(score/T) (``meu``:
    exact MEU; POS from the joint Viterbi); it needs a probabilistic model
    (:attr:`JointModel.probabilistic`: trained as a CRF, or calibrated), InputError
    saying how to calibrate otherwise."""
    dec = get_decoder(decoder, beta=beta)
    on_chunks = not isinstance(dec, MAP)
    if on_chunks:
        if model.variant_ != "joint":
            raise InputError(f"decoder {dec.name} decodes the joint model's chunk layer "
                             f"(this is a {model.variant_} model): use map")
        model.require_probabilities()
    pos_out, chunk_out, lats = [], [], []
    for d in data:
        x = encode(model, d, gold=False)
        labels, chunk = model.map_tags(d, x)
        if on_chunks and dec.scope == "sentence":
            chunk = dec.decode(model.chunk_lattice(x)).tags
        elif on_chunks:
            lats.append(model.chunk_lattice(x))
        pos_out.append(labels)
        chunk_out.append(chunk)
    if lats:                                           # one joint decision (meu-corpus)
        chunk_out = dec.tags(lats)
    return pos_out, chunk_out


def calibrate(model: JointModel, data: Sequence[Layered], source: str | None = None) -> float:
    """Fit ``model``'s temperature on held-out sentences with gold POS and chunk tags
    (read by :func:`~.corpus.layered` with the model's ``collapse_pos``/``np_only``
    settings; neither the training nor the test set), store it in the model's
    settings and return it (:meth:`JointModel.calibrate`; ``source`` names the file
    in the settings and in errors)."""
    if not data:
        raise InputError(f"{source or '<no file>'}: no held-out sentences to calibrate on")
    return model.calibrate([encode(model, d) for d in data], source)
