"""Joint models from a corpus and back: Table 6's templates, model_for, predict,
calibrate (and :func:`~.corpus.scores`, re-exported).

:func:`model_for` builds a model of one variant and encodes its training data:
``joint`` (chunk types + O over the POS labels; the templates of Shimizu & Haas
2006, Table 6), ``tagger`` (the POS layer alone: the joint model with the single
chunk label O) or ``chunker`` (a cascade's chunker: the chunk tags as the label
layer of a linear chain, with the POS column as observations).  :func:`predict`
decodes (POS, chunk) tags, :func:`calibrate` fits the temperature of a model on
held-out sentences (:mod:`.calibration`), :func:`~.corpus.scores` gives POS accuracy,
chunk-tag accuracy and conlleval chunk F1 (Table 7's columns).

Pitfalls:

* A tagger predicts POS only (its chunks are copied from the input, ``_`` where
  the input has none), a chunker chunk tags only (its POS are the input's); MEU
  decoding needs the joint variant's chunk layer and probabilities (a ``crf``
  model, or a calibrated perceptron/MMVP one).
* A tagger's or chunker's gold labels unseen in training are replaced by the
  first label when encoding training data.
* Training data with no sentence, with no chunk (joint: every tag O, e.g. after
  ``np_only`` on a file without NP chunks; chunker: a single tag) or a tagger's with
  a single POS label raise :class:`~fstchunk.core.errors.InputError` naming the file.
"""

from __future__ import annotations

from typing import Sequence

from ...schemes import encodings as enc
from ...decoding.decoders import MAP, Decoder, decoder as get_decoder
from ...core.errors import InputError
from ..base import check_training_set
from .corpus import Layered
from .files import VARIANTS
from .encoding import encode, input_columns
from .model import Encoded, JointModel

# Table 6 (the joint model): per part kind, the lexicalisations; () is the
# unlexicalised part itself.  "start"/"end" are the two halves of the chunk node.
JOINT_TEMPLATES: dict[str, list[tuple]] = {
    "node": [(), (("w", -1),), (("w", 0),), (("w", 1),), (("t", 0),)],
    "trans": [(), (("w", -1),), (("w", 0),)],
    "start": [(), (("w", 0),), (("w", -1),)],
    "end": [(("w", 0),), (("w", 1),)],
    "ctrans": [(), (("w", -1),), (("w", 0),)],
}
# A linear-chain tagger is the joint model with the single chunk label O (one
# segment spanning the sentence): the POS layer carries the tags.
TAGGER_TEMPLATES: dict[str, list[tuple]] = {
    "node": JOINT_TEMPLATES["node"], "trans": JOINT_TEMPLATES["trans"],
    "start": [()], "end": [], "ctrans": [()],
}
# The cascade's chunker: the same word features plus the (predicted) POS column.
CHUNKER_TEMPLATES: dict[str, list[tuple]] = {
    "node": JOINT_TEMPLATES["node"] + [(("p", -1),), (("p", 0),), (("p", 1),),
                                       (("p", -1), ("p", 0)), (("p", 0), ("p", 1))],
    "trans": JOINT_TEMPLATES["trans"] + [(("p", 0),), (("p", -1), ("p", 0))],
    "start": [()], "end": [], "ctrans": [()],
}
KIND_TEMPLATES = dict(zip(VARIANTS, (JOINT_TEMPLATES, TAGGER_TEMPLATES, CHUNKER_TEMPLATES)))


def _check_training_data(data: Sequence[Layered], kind: str, source: str | None) -> None:
    """InputError naming the file for training data a ``kind`` model cannot learn from."""
    if not data:
        raise InputError(f"{source or '<no file>'}: no training sentences: the {kind} model "
                         f"needs at least one sentence with gold POS and chunk tags")
    missing = [d for d in data if d.chunks is None]
    if missing and kind != "tagger":
        raise InputError(f"{missing[0].sentence.where(0)}: no chunk tag column; training "
                         f"needs word, POS and chunk columns")
    sents = [d.sentence for d in data]
    if kind == "tagger":
        if len({t for d in data for t in d.pos}) < 2:
            raise InputError(f"{sents[0].source}: every training POS tag is "
                             f"{data[0].pos[0]!r}: a tagger needs at least two POS labels; "
                             f"is the POS column right?")
    else:
        check_training_set(sents, [d.chunks for d in data], f"the {kind} model")


def model_for(data: Sequence[Layered], kind: str = "joint", settings: dict | None = None,
              source: str | None = None) -> tuple[JointModel, list[Encoded]]:
    """A model and its encoded training data.  ``joint``: chunk types + O over the
    POS labels; ``tagger``: the POS layer alone; ``chunker``: the chunk tags as
    the label layer of a linear chain, with the POS column as observations.
    ``source`` names the training file in the error for no sentences (otherwise the
    sentences name it)."""
    if kind not in KIND_TEMPLATES:
        raise InputError(f"unknown model kind {kind!r} ({', '.join(KIND_TEMPLATES)})")
    _check_training_data(data, kind, source)
    cols = [input_columns(kind, d) for d in data]
    if kind == "joint":
        types = sorted({t for d in data for t, _, _ in enc.tags_to_chunks(d.chunks, "IOB2")})
        chunk_labels, labels = types + ["O"], sorted({t for d in data for t in d.pos})
    elif kind == "tagger":
        chunk_labels, labels = ["O"], sorted({t for d in data for t in d.pos})
    else:
        chunk_labels, labels = ["O"], sorted({t for d in data for t in d.chunks})
    model = JointModel.build(cols, chunk_labels, labels, KIND_TEMPLATES[kind],
                             dict(settings or {}, kind=kind))
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
        if model.variant != "joint":
            raise InputError(f"decoder {dec.name} decodes the joint model's chunk layer "
                             f"(this is a {model.variant} model): use map")
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
