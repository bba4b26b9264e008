"""The segment model of McDonald, Crammer & Pereira 2005 (issue 19): a linear score per
typed segment over the step features g(j, i), trained by the online large-margin
multilabel learner (Fig. 4, Hildreth's QP updates, averaged weights) through the one
training loop.

* :mod:`.features` — g(j, i): hashed step features (states start/end/next/skip
  conjoined with word, shape, affix, POS and window predicates, words in between,
  distance ranges);
* :mod:`.model` — :class:`SegmentModel`: arc scores, k-best candidates
  (:func:`fstchunk.structures.segments.kbest`), threshold and MEU decoding, Platt calibration,
  model files (kind ``segment``);
* :mod:`.fitting` — how :class:`SegmentModel` learns (the estimator contract: the
  hyper-parameters, the run options of ``fit``, the fitted ``*_`` state);
* :mod:`.train` — ``hildreth``, ``OnlineLearner`` and ``HildrethSolver``, the learner as a
  solver of :class:`fstchunk.learn.loop.Trainer` (:meth:`SegmentModel.fit` runs it);
* :mod:`.files` — the fields' checks and the model files.

The segments themselves (files, the segment space and its machine, scoring, MEU over
independent segments) are in :mod:`fstchunk.structures.segments`, below every model.
"""

from ...core.namespace import public_dir
from .model import DECODERS, SegmentModel, restriction_flags

__all__ = ["DECODERS", "SegmentModel", "restriction_flags"]

__dir__ = public_dir(globals(), __all__)
