"""The segment model of McDonald, Crammer & Pereira 2005 (issue 19): a linear score per
typed segment over the step features g(j, i), trained by the online large-margin
multilabel learner (Fig. 4, Hildreth's QP updates, averaged weights).

* :mod:`.features` — g(j, i): hashed step features (states start/end/next/skip
  conjoined with word, shape, affix, POS and window predicates, words in between,
  distance ranges);
* :mod:`.model` — :class:`SegmentModel`: arc scores, k-best candidates
  (:func:`fstchunk.segments.kbest`), threshold and MEU decoding, Platt calibration,
  model files (kind ``segment``);
* :mod:`.train` — ``train``, ``hildreth``, ``OnlineLearner`` (import them from the
  module: the package does not re-export them, so ``.train`` stays the module).

The segments themselves (files, the segment space and its machine, scoring, MEU over
independent segments) are in :mod:`fstchunk.segments`, below every model.
"""

from .model import DECODERS, SegmentModel, restriction_flags

__all__ = ["DECODERS", "SegmentModel", "restriction_flags"]
