"""The models, and loading any saved model file by its kind.

:data:`MODELS` is the one registry kind -> class; every class follows
:class:`~fstchunk.models.base.ChunkModel` and its ``kind`` is the tag its
files carry.  :func:`load_model` reads the file's metadata only
(:func:`~fstchunk.models.io.read_metadata`), then the class reads the file.

Every field a class reads from its file is validated (and version 2 files are
checked against the checksum written with them, :mod:`fstchunk.models.io`), so a
damaged, foreign or edited file is one :class:`~fstchunk.core.errors.ModelFileError`
naming the file and the field, never a traceback or a silently wrong model.  The
CRF and the HMM expose the columns they read as ``model.columns_``
(:class:`~fstchunk.io.columns.Columns`).

Pitfall: a new model class must be added to :data:`MODELS` (its kind and where its
class lives), or its files cannot be read by ``fstchunk decode`` / ``expected``; the
classes are imported when first asked for, so reading an HMM file does not load
scipy's sparse matrices.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..core.namespace import public_dir
from ..core.errors import ModelFileError
from .io import read_metadata

#: model kind -> (module, class): the registry; a class is imported when first needed
_KINDS: dict[str, tuple[str, str]] = {
    "crf": ("fstchunk.models.crf", "CRF"), "hmm": ("fstchunk.models.hmm", "HMM"),
    "attribute-crf": ("fstchunk.models.attribute_crf", "AttributeCRF"),
    "joint": ("fstchunk.models.joint", "JointModel"),
    "segment": ("fstchunk.models.segment", "SegmentModel")}
_NAMES = {cls: kind for kind, (_, cls) in _KINDS.items()}
_PROTOCOLS = {"ChunkModel": "fstchunk.models.base", "TrainableModel": "fstchunk.models.base"}

__all__ = ["AttributeCRF", "CRF", "HMM", "JointModel", "MODELS", "SegmentModel", "ChunkModel",
           "TrainableModel", "load_model", "model_class"]


def model_class(kind: str) -> type:
    """The class of model ``kind`` (:data:`MODELS`' keys)."""
    module, name = _KINDS[kind]
    return getattr(importlib.import_module(module), name)


def __getattr__(name: str) -> Any:
    """The model classes and :data:`MODELS` (kind -> class), loaded on first use."""
    if name == "MODELS":
        return {kind: model_class(kind) for kind in _KINDS}
    if name in _NAMES:
        return model_class(_NAMES[name])
    if name in _PROTOCOLS:
        return getattr(importlib.import_module(_PROTOCOLS[name]), name)
    raise AttributeError(f"module 'fstchunk.models' has no attribute {name!r}")


def load_model(path) -> Any:
    """The model saved at ``path``, of whichever kind its file says (CRF, HMM, joint,
    segment, ...).

    Args:
        path: a model file written by a model's ``save`` or ``fstchunk train``.

    Returns:
        The model, ready to decode (``.lattices(sentences)``).

    Raises:
        ModelFileError: a missing, unreadable or malformed file, naming it and the
            field at fault.

    Examples:
        >>> import fstchunk, os, tempfile
        >>> from fstchunk.io.conll import data_path
        >>> crf = fstchunk.CRF(max_iter=5).fit(fstchunk.read_conll(data_path("conll2000", "train.txt"))[:50])
        >>> path = os.path.join(tempfile.mkdtemp(), "crf.npz")
        >>> crf.save(path)
        >>> type(fstchunk.load_model(path)).__name__
        'CRF'
    """
    kind = read_metadata(path).get("kind")
    if not isinstance(kind, str) or kind not in _KINDS:
        raise ModelFileError(f"{path}: unknown model kind {kind!r}; this fstchunk reads "
                             f"{', '.join(_KINDS)}")
    return model_class(kind).load(path)


if TYPE_CHECKING:
    from .base import ChunkModel, TrainableModel
    from .attribute_crf import AttributeCRF
    from .crf import CRF
    from .hmm import HMM
    from .joint import JointModel
    from .segment import SegmentModel

    MODELS: dict[str, type]

__dir__ = public_dir(globals(), __all__)
