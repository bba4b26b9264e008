"""What a joint model learns from its training corpus before any weight: Table 6's
templates, the labels and the vocabularies (:func:`learn_scorer`), for
:meth:`~.model.JointModel.fit` and :func:`~.data.model_for`.

Three variants: ``joint`` (chunk types + O over the POS labels; the templates of
Shimizu & Haas 2006, Table 6), ``tagger`` (the POS layer alone: the joint model with
the single chunk label O) or ``chunker`` (a cascade's chunker: the chunk tags as the
label layer of a linear chain, with the POS column as observations).

Pitfall: training data with no sentence, with no chunk (joint: every tag O, e.g. after
``np_only`` on a file without NP chunks; chunker: a single tag) or a tagger's with a
single POS label raise :class:`~fstchunk.core.errors.InputError` naming the file.
"""

from __future__ import annotations

from typing import Sequence

from ...core.errors import InputError
from ...schemes import encodings as enc
from ..base import check_training_set
from .corpus import Layered
from .encoding import input_columns
from .files import VARIANTS
from .scoring import PartScorer

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


def check_variant(kind: str) -> None:
    """InputError for a variant that is not one of :data:`KIND_TEMPLATES`."""
    if not isinstance(kind, str) or kind not in KIND_TEMPLATES:
        raise InputError(f"unknown model kind {kind!r} ({', '.join(KIND_TEMPLATES)})")


def check_training_data(data: Sequence[Layered], kind: str, source: str | None) -> None:
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


def learn_scorer(data: Sequence[Layered], kind: str, source: str | None = None
                 ) -> tuple[PartScorer, list[dict[str, list[str]]]]:
    """The labels, templates and vocabularies of a ``kind`` model of ``data`` (weights
    zero) and each sentence's observation columns.  ``joint``: chunk types + O over the
    POS labels; ``tagger``: the POS layer alone; ``chunker``: the chunk tags as the
    label layer, the POS column as observations.  ``source`` names the training file in
    the error for no sentences (otherwise the sentences name it)."""
    check_variant(kind)
    check_training_data(data, kind, source)
    cols = [input_columns(kind, d) for d in data]
    if kind == "joint":
        types = sorted({t for d in data for t, _, _ in enc.tags_to_chunks(d.chunks, "IOB2")})
        chunk_labels, labels = types + ["O"], sorted({t for d in data for t in d.pos})
    elif kind == "tagger":
        chunk_labels, labels = ["O"], sorted({t for d in data for t in d.pos})
    else:
        chunk_labels, labels = ["O"], sorted({t for d in data for t in d.chunks})
    return PartScorer.build(cols, chunk_labels, labels, KIND_TEMPLATES[kind]), cols
