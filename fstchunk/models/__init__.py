"""Loading any saved fstchunk model by its kind."""

from __future__ import annotations

from .io import ModelFileError, load_model_file


def load_model(path):
    """The model saved at ``path`` (an :class:`~fstchunk.hmm.HMM` or a CRF)."""
    meta, _ = load_model_file(path)
    kind = meta.get("kind")
    if kind == "hmm":
        from .hmm import HMM
        return HMM.load(path)
    if kind == "crf":
        from .crf import CRF
        return CRF.load(path)
    raise ModelFileError(f"{path}: unknown model kind {kind!r}")
