"""Flexible segmentation (McDonald, Crammer & Pereira 2005; issue 19): a segment is a
typed set of token positions; segments may overlap, nest or skip tokens, and a
sentence's answer is a set of segments.

Modules, bottom up:

* :mod:`.space` — the segment space of a sentence: :func:`kbest` (the k best segments
  by a DP over member indices 0..n+1) and its machine twin;
* :mod:`.data` — segments, JSONL and CoNLL readers and writers;
* :mod:`.scoring` — P/R/F over exact (type, positions) matches;
* :mod:`.meu` — exact MEU decoding for F over independent segment decisions, and
  the Platt calibration that gives scores probabilities.

The model that scores segments (features g(j, i), the online large-margin multilabel
learner) is :mod:`fstchunk.models.segment`, above this package.
"""

from ..namespace import public_dir
from .space import (RESTRICTIONS, enumerate_segments, kbest, kbest_fst, parse_restrictions,
                    restrict, segment_score, segment_space_fst)

__all__ = ["RESTRICTIONS", "enumerate_segments", "kbest", "kbest_fst", "parse_restrictions",
           "restrict", "segment_score", "segment_space_fst"]

__dir__ = public_dir(globals(), __all__)
