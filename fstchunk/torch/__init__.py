"""Differentiable chunk-level CRF quantities in torch (issue 21).

``from fstchunk.torch import ChunkCRF`` needs torch (``pip install
fstchunk[torch]``); nothing else in fstchunk imports torch.  See
:mod:`fstchunk.torch.crf` for the model and formulas, :mod:`fstchunk.torch.
expected` for the expected-F DP.
"""

from .crf import ChunkCRF

__all__ = ["ChunkCRF"]
