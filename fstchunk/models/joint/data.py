"""Joint models from a corpus and back: Table 6's templates, model_for, predict, scores.

:func:`model_for` builds a model of one variant and encodes its training data:
``joint`` (chunk types + O over the POS labels; the templates of Shimizu & Haas
2006, Table 6), ``tagger`` (the POS layer alone: the joint model with the single
chunk label O) or ``chunker`` (a cascade's chunker: the chunk tags as the label
layer of a linear chain, with the POS column as observations).  :func:`predict`
decodes (POS, chunk) tags, :func:`scores` gives POS accuracy, chunk-tag accuracy
and conlleval chunk F1 (Table 7's columns).

Pitfalls: a tagger predicts POS only (its chunks are copied from the input), a
chunker chunk tags only (its POS are the input's); MEU decoding needs the joint
variant's chunk layer.  A tagger's or chunker's gold labels unseen in training
are replaced by the first label when encoding training data.
"""

from __future__ import annotations

from typing import Sequence

from ... import encodings as enc
from ...decode import decode_meu
from ...errors import InputError
from ...evaluate import evaluate
from .corpus import Layered
from .model import Encoded, JointModel, encode, input_columns

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
KIND_TEMPLATES = {"joint": JOINT_TEMPLATES, "tagger": TAGGER_TEMPLATES,
                  "chunker": CHUNKER_TEMPLATES}
DECODERS = ("map", "meu")


def model_for(data: Sequence[Layered], kind: str = "joint", settings: dict | None = None
              ) -> tuple[JointModel, list[Encoded]]:
    """A model and its encoded training data.  ``joint``: chunk types + O over the
    POS labels; ``tagger``: the POS layer alone; ``chunker``: the chunk tags as
    the label layer of a linear chain, with the POS column as observations."""
    if kind not in KIND_TEMPLATES:
        raise InputError(f"unknown model kind {kind!r} ({', '.join(KIND_TEMPLATES)})")
    cols = [input_columns(kind, d) for d in data]
    if kind == "joint":
        types = sorted({t for d in data for t, _, _ in enc.tags_to_chunks(d.chunks, "IOB2",
                                                                            strict=False)})
        chunk_labels, labels = types + ["O"], sorted({t for d in data for t in d.pos})
    elif kind == "tagger":
        chunk_labels, labels = ["O"], sorted({t for d in data for t in d.pos})
    else:
        chunk_labels, labels = ["O"], sorted({t for d in data for t in d.chunks})
    model = JointModel.build(cols, chunk_labels, labels, KIND_TEMPLATES[kind],
                             dict(settings or {}, kind=kind))
    return model, [encode(model, d, cols_) for d, cols_ in zip(data, cols)]


def predict(model: JointModel, data: Sequence[Layered], decoder: str = "map",
            beta: float = 1.0) -> tuple[list[list[str]], list[list[str]]]:
    """Predicted (POS, chunk) tags of each sentence; a tagger predicts POS only
    (chunks copied from the input), a chunker chunk tags only.  ``decoder="meu"``
    decodes the joint model's chunk layer by exact MEU (POS from Viterbi)."""
    kind = model.variant
    pos_out, chunk_out = [], []
    for d in data:
        x = encode(model, d, gold=False)
        y, _ = model.decode(x)
        labels, chunk = model.tags(y)
        if kind == "tagger":
            labels, chunk = labels, list(d.chunks)
        elif kind == "chunker":
            labels, chunk = list(d.pos), labels
        if decoder == "meu":
            if kind != "joint":
                raise InputError("MEU decoding needs the joint model's chunk layer "
                                 f"(this is a {kind} model)")
            chunk = decode_meu(model.chunk_lattice(x), beta=beta).tags
        elif decoder != "map":
            raise InputError(f"unknown decoder {decoder!r} ({', '.join(DECODERS)})")
        pos_out.append(labels)
        chunk_out.append(chunk)
    return pos_out, chunk_out


def scores(gold: Sequence[Layered], pos: Sequence[Sequence[str]],
           chunks: Sequence[Sequence[str]]) -> dict[str, float]:
    """POS accuracy, chunk-tag accuracy and conlleval chunk F1, in percent."""
    n = sum(len(g.pos) for g in gold)
    pos_ok = sum(a == b for g, p in zip(gold, pos) for a, b in zip(g.pos, p))
    rep = evaluate([g.chunks for g in gold], chunks)
    return {"pos_accuracy": 100.0 * pos_ok / n, "np_accuracy": rep.accuracy,
            "np_f1": rep.overall.f}
