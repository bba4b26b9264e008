"""``fstchunk.decoders``: the decoder registry (:mod:`fstchunk.decoding.decoders`) under
its short name, so that ``import fstchunk.decoders`` and ``from fstchunk.decoders import
MEU`` work as ``fstchunk.decoders`` does.  The name is the module itself: no second copy
of a class."""

import sys

from .decoding import decoders as _decoders

sys.modules[__name__] = _decoders
