"""The models, and loading any saved model file by its kind.

:data:`MODELS` is the one registry kind -> class; every class follows
:class:`~fstchunk.models.base.ChunkModel` and its ``kind`` is the tag its
files carry.  :func:`load_model` reads the file's metadata only
(:func:`~fstchunk.models.io.read_metadata`), then the class reads the file.

Every field a class reads from its file is validated (and version 2 files are
checked against the checksum written with them, :mod:`fstchunk.models.io`), so a
damaged, foreign or edited file is one :class:`~fstchunk.errors.ModelFileError`
naming the file and the field, never a traceback or a silently wrong model.  The
CRF and the HMM expose the columns they read as ``model.columns``
(:class:`~fstchunk.columns.Columns`).

Pitfall: a new model class must be added to :data:`MODELS`, or its files cannot
be read by ``fstchunk decode`` / ``expected``.
"""

from __future__ import annotations

from ..errors import ModelFileError
from .segment import SegmentModel
from .base import ChunkModel, TrainableModel
from .crf import CRF
from .hmm import HMM
from .io import read_metadata
from .joint import JointModel

MODELS: dict[str, type] = {"crf": CRF, "hmm": HMM, "joint": JointModel, "segment": SegmentModel}

__all__ = ["CRF", "HMM", "JointModel", "MODELS", "ChunkModel", "TrainableModel", "load_model"]


def load_model(path) -> ChunkModel:
    """The model saved at ``path``, of whichever kind its file says
    (:class:`~fstchunk.errors.ModelFileError` naming the file, and the field where
    one is at fault, otherwise)."""
    kind = read_metadata(path).get("kind")
    cls = MODELS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ModelFileError(f"{path}: unknown model kind {kind!r}; this fstchunk reads "
                             f"{', '.join(MODELS)}")
    return cls.load(path)
