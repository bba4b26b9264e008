"""A sentence of :mod:`.corpus` encoded for a joint model (:class:`~.model.JointModel`):
the one way that training, :func:`~.data.predict` and ``JointModel.lattices`` read it."""

from __future__ import annotations

from typing import Any

from ...core.errors import InputError
from .corpus import Layered
from .scoring import Encoded, PartScorer


def input_columns(variant: str, d: Layered) -> dict[str, list[str]]:
    """The observation columns of a sentence for a model variant (a chunker
    also reads ``d.pos`` as input)."""
    return PartScorer.columns(d.sentence.column(0), d.pos if variant == "chunker" else None)


def encode(model: Any, d: Layered, cols: dict | None = None, gold: bool = True
           ) -> Encoded:
    """Encode one sentence for ``model`` (a chunker reads ``d.pos`` as input),
    with its gold structure if ``gold``."""
    if cols is None:
        cols = input_columns(model.variant_, d)
    where = d.sentence.where(0)
    if not gold:
        return model.encode(cols, where=where)
    if d.chunks is None and model.variant_ != "tagger":
        raise InputError(f"{where}: no chunk tag column; gold POS and chunk tags are needed "
                         f"here (columns word, POS, chunk tag)")
    if model.variant_ == "joint":
        return model.encode(cols, d.pos, d.chunks, where)
    labels = d.pos if model.variant_ == "tagger" else d.chunks
    known = [t if t in model.pos_labels_ else model.pos_labels_[0] for t in labels]
    return model.encode(cols, known, ["O"] * len(labels), where)
