"""eli5 explains :class:`fstchunk.sklearn.CRF` as it explains ``sklearn_crfsuite.CRF``:
``eli5.explain_weights(crf)``, ``eli5.show_weights(crf)`` (and ``format_as_text``,
``format_as_dataframes``, ...) give per label the ``top`` state features by weight and
the transition matrix over ``classes_`` — a transition the chunk scheme forbids
shown as ``-inf``, not as 0.  The same arguments as eli5's explainer of sklearn-crfsuite
(``top``, ``target_names``, ``targets``, ``feature_re``, ``feature_filter``); the
default label order is eli5's for NER (``O`` first, then the labels grouped by type).

Registration (eli5's ``explain_weights`` dispatches on the estimator's type): importing
:mod:`fstchunk.sklearn` registers the explainer when eli5 is imported already, or as
soon as eli5 is imported later (a one-shot import hook); :func:`register` does it by
hand and says whether eli5 is there.  eli5 is optional: nothing here imports it
unless it is installed and asked for.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any

import numpy as np

__all__ = ["register", "explain_weights_crf", "sorted_for_ner"]


def sorted_for_ner(labels: list[str]) -> list[str]:
    """eli5's default order of labels: ``O`` (untyped) first, then by chunk type, each
    type's tags in order (``B-ORG``, ``I-ORG``, ``B-PER``, ...)."""
    def key(label: str) -> tuple[str, str]:
        if len(label) > 2 and label[1] == "-":
            return label.split("-", 1)[1], label
        return "", label
    return sorted(labels, key=key)


def explain_weights_crf(crf: Any, top: int = 20, target_names: Any = None,
                        targets: list[str] | None = None, feature_re: Any = None,
                        feature_filter: Any = None) -> Any:
    """eli5's Explanation of a fitted :class:`fstchunk.sklearn.CRF` (module doc)."""
    from eli5._feature_names import FeatureNames
    from eli5._feature_weights import get_top_features
    from eli5.base import Explanation, TargetExplanation, TransitionFeatureWeights
    from eli5.utils import get_target_display_names

    classes = list(crf.classes_)
    names = np.array(crf.attributes_)
    col = {a: i for i, a in enumerate(crf.attributes_)}
    row = {c: i for i, c in enumerate(classes)}
    coef = np.zeros((len(classes), len(names)))
    for (attr, label), w in crf.state_features_.items():
        if label in row:                      # a tag the scheme added: no class
            coef[row[label], col[attr]] = w
    trans = crf.transition_features_
    tcoef = np.array([[trans.get((a, b), 0.0) for b in classes] for a in classes])
    if feature_filter is not None or feature_re is not None:
        kept, idx = FeatureNames(names).handle_filter(feature_filter, feature_re)
        names, coef = np.array(kept.feature_names), coef[:, idx]
    shown = get_target_display_names(classes, target_names,
                                     sorted_for_ner(classes) if targets is None else targets)
    indices, labels = zip(*shown)
    ix = np.array(indices)
    return Explanation(
        targets=[TargetExplanation(target=label,
                                   feature_weights=get_top_features(names, coef[i], top))
                 for i, label in zip(indices, labels)],
        transition_features=TransitionFeatureWeights(class_names=list(labels),
                                                     coef=tcoef[ix][:, ix]),
        estimator=repr(crf), method="CRF")


def register() -> bool:
    """Register :func:`explain_weights_crf` with eli5's ``explain_weights``; False when
    eli5 cannot be imported."""
    try:
        from eli5.explain import explain_weights
    except ImportError:
        return False
    from . import CRF
    explain_weights.register(CRF)(explain_weights_crf)
    return True


class _AfterImport(importlib.abc.MetaPathFinder):
    """Registers once eli5 has been imported (then leaves ``sys.meta_path``)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "eli5":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            register()
        loader.exec_module = exec_module
        return spec


def install() -> None:
    """Register now if eli5 is imported, else when it is (module doc)."""
    if "eli5" in sys.modules:
        register()
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())
