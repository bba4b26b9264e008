"""``from fstchunk.sklearn import metrics``: sklearn_crfsuite.metrics's functions (same
names, signatures and results), with no python-crfsuite, plus chunk-level scores.

The ``flat_*`` functions join the sequences and call scikit-learn's function of the
same name on the tokens (``flat_f1_score(y_true, y_pred, average="weighted",
labels=...)``). Unlike sklearn-crfsuite's, a pair of sequences of different lengths is
one :class:`~fstchunk.core.errors.InputError` naming the sequence, not tokens silently
paired across sentence ends. ``sequence_accuracy_score`` counts whole sequences equal to
the gold (sklearn-crfsuite's counts tokens when every sequence has the same length).

The ``chunk_*`` functions score chunks as conlleval.pl does
(:func:`fstchunk.evaluation.chunks.evaluate`), as fractions in [0, 1] like scikit-learn's.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..core.errors import InputError
from ..evaluation.chunks import Report, evaluate

__all__ = ["flat_accuracy_score", "flat_precision_score", "flat_recall_score",
           "flat_f1_score", "flat_fbeta_score", "flat_classification_report",
           "sequence_accuracy_score", "chunk_report", "chunk_precision_score",
           "chunk_recall_score", "chunk_f1_score", "chunk_classification_report"]


def _sk_metrics():
    try:
        from sklearn import metrics
    except ImportError:                          # pragma: no cover - without the extra
        raise InputError("the flat_* metrics need scikit-learn: pip install "
                         "'fstchunk[sklearn]'") from None
    return metrics


def _flat(y_true: Sequence[Sequence[Any]], y_pred: Sequence[Sequence[Any]]
          ) -> tuple[list, list]:
    """Both label lists joined, after checking they pair up sequence by sequence."""
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise InputError(f"{len(y_true)} gold sequences (y_true) but {len(y_pred)} "
                         f"predicted (y_pred)")
    flat_t: list = []
    flat_p: list = []
    for i, (t, p) in enumerate(zip(y_true, y_pred)):
        if isinstance(t, str) or isinstance(p, str):
            raise InputError(f"sequence {i}: a string is not a sequence of labels "
                             f"(y_true and y_pred are lists of label lists)")
        t, p = list(t), list(p)
        if len(t) != len(p):
            raise InputError(f"sequence {i}: {len(t)} gold labels (y_true) but {len(p)} "
                             f"predicted (y_pred)")
        flat_t += t
        flat_p += p
    return flat_t, flat_p


def flat_accuracy_score(y_true, y_pred) -> float:
    """The fraction of tokens labelled as the gold."""
    return _sk_metrics().accuracy_score(*_flat(y_true, y_pred))


def flat_precision_score(y_true, y_pred, **kwargs: Any) -> float:
    """scikit-learn's ``precision_score`` over the tokens (its keyword arguments)."""
    return _sk_metrics().precision_score(*_flat(y_true, y_pred), **kwargs)


def flat_recall_score(y_true, y_pred, **kwargs: Any) -> float:
    """scikit-learn's ``recall_score`` over the tokens (its keyword arguments)."""
    return _sk_metrics().recall_score(*_flat(y_true, y_pred), **kwargs)


def flat_f1_score(y_true, y_pred, **kwargs: Any) -> float:
    """scikit-learn's ``f1_score`` over the tokens (its keyword arguments)."""
    return _sk_metrics().f1_score(*_flat(y_true, y_pred), **kwargs)


def flat_fbeta_score(y_true, y_pred, beta: float, **kwargs: Any) -> float:
    """scikit-learn's ``fbeta_score`` over the tokens (its keyword arguments)."""
    return _sk_metrics().fbeta_score(*_flat(y_true, y_pred), beta=beta, **kwargs)


def flat_classification_report(y_true, y_pred, labels=None, **kwargs: Any):
    """scikit-learn's ``classification_report`` over the tokens."""
    return _sk_metrics().classification_report(*_flat(y_true, y_pred), labels=labels,
                                               **kwargs)


def sequence_accuracy_score(y_true, y_pred) -> float:
    """The fraction of sequences whose labels all equal the gold (0 for no sequence)."""
    _flat(y_true, y_pred)                        # the same checks
    y_true, y_pred = list(y_true), list(y_pred)
    if not y_true:
        return 0
    return sum(list(t) == list(p) for t, p in zip(y_true, y_pred)) / len(y_true)


def chunk_report(y_true, y_pred, scheme: str | None = None, beta: float = 1.0) -> Report:
    """conlleval.pl's report of the chunks (``scheme=None``: tags read as conlleval.pl
    reads them; a scheme: leniently in it)."""
    return evaluate(list(y_true), list(y_pred), scheme=scheme, beta=beta)


def chunk_precision_score(y_true, y_pred, scheme: str | None = None) -> float:
    """Chunk precision: correct chunks / predicted chunks (conlleval.pl's, as a fraction)."""
    return chunk_report(y_true, y_pred, scheme).overall.precision / 100.0


def chunk_recall_score(y_true, y_pred, scheme: str | None = None) -> float:
    """Chunk recall: correct chunks / gold chunks (conlleval.pl's, as a fraction)."""
    return chunk_report(y_true, y_pred, scheme).overall.recall / 100.0


def chunk_f1_score(y_true, y_pred, scheme: str | None = None, beta: float = 1.0) -> float:
    """Chunk F_β = (1+β²)PR/(β²P+R), conlleval.pl's FB1 for β = 1, as a fraction."""
    return chunk_report(y_true, y_pred, scheme, beta).overall.f / 100.0


def chunk_classification_report(y_true, y_pred, scheme: str | None = None,
                                beta: float = 1.0) -> str:
    """The report in conlleval.pl's format (per type precision, recall, F)."""
    return chunk_report(y_true, y_pred, scheme, beta).conlleval()
