"""``from fstchunk.sklearn import scorers``: sklearn_crfsuite.scorers's scorers for
``cross_val_score``, ``GridSearchCV``, ``RandomizedSearchCV`` (scikit-learn's
``make_scorer`` over :mod:`fstchunk.sklearn.metrics`), plus ``chunk_f1``: conlleval's
chunk F1 as a fraction."""

from __future__ import annotations

from sklearn.metrics import make_scorer

from . import metrics

__all__ = ["flat_accuracy", "sequence_accuracy", "chunk_f1"]

flat_accuracy = make_scorer(metrics.flat_accuracy_score)
sequence_accuracy = make_scorer(metrics.sequence_accuracy_score)
chunk_f1 = make_scorer(metrics.chunk_f1_score)
