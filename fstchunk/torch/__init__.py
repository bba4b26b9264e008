"""Differentiable chunk-level CRF quantities in torch (issue 21).

``from fstchunk.torch import ChunkCRF`` needs torch (``pip install
fstchunk[torch]``); nothing else in fstchunk imports torch.  See
:mod:`fstchunk.torch.crf` for the model and formulas, :mod:`fstchunk.torch.
expected` for the expected-F DP, :mod:`fstchunk.torch.module` for the
``nn.Module`` layer and sub-word pooling, :mod:`fstchunk.torch.pytorch_crf` for
``CRF``, the pytorch-crf drop-in, :mod:`fstchunk.torch.export` for its ONNX export.
"""

from ..core.namespace import public_dir
from .crf import ChunkCRF
from .module import CRFLayer, first_subword_pool
from .pytorch_crf import CRF
from .export import export_onnx

__all__ = ["CRF", "ChunkCRF", "CRFLayer", "export_onnx", "first_subword_pool"]

__dir__ = public_dir(globals(), __all__)
