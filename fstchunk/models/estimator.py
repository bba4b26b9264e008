"""The estimator contract every fstchunk model keeps (scikit-learn's convention).

* The constructor takes the hyper-parameters, by name, and stores each under its own
  name exactly as given: no check, no conversion (checks happen in ``fit``, so
  ``set_params`` and ``clone`` see what the user wrote).  :meth:`Estimator.get_params`
  returns them; ``type(m)(**m.get_params())`` is the same unfitted model.
* ``fit(X, y=None, *, dev=None, **options)`` learns and returns ``self``; it never
  rewrites a hyper-parameter.  ``X`` is the training set: sentences, whose tag column
  holds the tags (``y`` stays None), or the attribute CRF's sequences with their labels
  in ``y``; ``dev`` is held-out data of the same kind.  ``options`` are how to run (checkpoint, callbacks, executor,
  progress), never what to learn: a hyper-parameter given to ``fit`` is one
  :class:`~fstchunk.core.errors.InputError` naming ``set_params``.
* Everything ``fit`` (or ``load``) learns is an attribute whose name ends in ``_``
  (``theta_``, ``tags_``, ``scheme_``, ``settings_``, ``layout_``); an unfitted model
  has none of them (:attr:`Estimator.fitted`), and reading one is a
  :class:`~fstchunk.core.errors.NotFittedError`.
* ``warm_start=True``: ``fit`` on a fitted model trains on from its θ with its
  features and tags (the CLI's ``--init``); ``False``: every ``fit`` starts afresh.

Pitfalls:

* the old names of fitted state (``crf.theta``, ``crf.tags``) still read and write the
  new ones through :class:`FittedAlias`, with a
  :class:`~fstchunk.core.errors.FstchunkDeprecationWarning`; fstchunk's own code reads
  only the new names (the test suite turns that warning into an error);
* a hyper-parameter and a fitted attribute may share a stem: ``scheme`` is what the
  user asked for (``"bio"``), ``scheme_`` the canonical scheme the model's lattices
  are written in (``"IOB2"``); decoders read ``scheme_``.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, ClassVar

from ..core.errors import FstchunkDeprecationWarning, InputError, NotFittedError


class FittedAlias:
    """The pre-``_`` name of a fitted attribute: reads and writes ``target``, warning
    :class:`~fstchunk.core.errors.FstchunkDeprecationWarning` with the new name."""

    def __init__(self, target: str):
        self.target = target

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def _warn(self, owner: type) -> None:
        warnings.warn(f"{owner.__name__}.{self.name} is {owner.__name__}.{self.target} "
                      f"(fitted state ends in '_'); the old name will go",
                      FstchunkDeprecationWarning, stacklevel=3)

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        self._warn(type(obj))
        return getattr(obj, self.target)

    def __set__(self, obj: Any, value: Any) -> None:
        self._warn(type(obj))
        setattr(obj, self.target, value)


def renamed_state(state: dict, cls: type) -> dict:
    """A pickled ``__dict__`` with the old names of fitted state (those ``cls`` keeps
    as :class:`FittedAlias`) under their new names: models pickled before the rename
    unpickle as fitted models."""
    aliases = {name: a.target for klass in reversed(cls.__mro__)
               for name, a in vars(klass).items() if isinstance(a, FittedAlias)}
    return {aliases.get(k, k) if aliases.get(k, k) not in state else k: v
            for k, v in state.items()}


class Estimator:
    """Hyper-parameters in ``__init__``, fitted state in ``*_`` attributes (module doc).

    Subclasses store every constructor argument under its own name; the parameter
    names are read from the constructor's signature.  ``_fitted_attribute`` names the
    attribute whose presence means fitted (``theta_`` for the chain models)."""

    #: the fitted attribute whose presence means the model is fitted
    _fitted_attribute: ClassVar[str] = "theta_"

    @classmethod
    def _parameter_names(cls) -> tuple[str, ...]:
        """The constructor's arguments, in order (scikit-learn's ``_get_param_names``)."""
        sig = inspect.signature(cls.__init__)
        return tuple(p.name for p in sig.parameters.values()
                     if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The hyper-parameters, exactly as the constructor or :meth:`set_params` took them."""
        return {name: getattr(self, name) for name in self._parameter_names()}

    def set_params(self, **params: Any) -> "Estimator":
        """Set hyper-parameters by name (``self``); one InputError naming an unknown one."""
        names = self._parameter_names()
        for name, value in params.items():
            if name not in names:
                raise InputError(f"unknown {type(self).__name__} parameter {name!r}; the "
                                 f"parameters are {', '.join(names)}")
            setattr(self, name, value)
        return self

    def clone(self) -> "Estimator":
        """An unfitted model with the same hyper-parameters."""
        return type(self)(**self.get_params())

    @property
    def fitted(self) -> bool:
        """Whether ``fit`` or ``load`` has given the model its fitted state."""
        return self._fitted_attribute in vars(self)

    def _not_fitted(self, name: str | None = None) -> NotFittedError:
        cls = type(self).__name__
        what = f" ({name} is what fit learns)" if name else ""
        return NotFittedError(f"this {cls} is not fitted{what}: call fit(...) or "
                              f"{cls}.load(path) first")

    def _check_fitted(self) -> None:
        """One NotFittedError if the model is not fitted."""
        if not self.fitted:
            raise self._not_fitted()

    def __getattr__(self, name: str) -> Any:
        """A fitted attribute (``*_``, or a view or old name of one) of a model not
        fitted yet: NotFittedError (an AttributeError too)."""
        if not name.startswith("__") and (name.endswith("_") or isinstance(
                getattr(type(self), name, None), (property, FittedAlias))) and not self.fitted:
            raise self._not_fitted(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _no_labels(self, y: Any) -> None:
        """One InputError if ``y`` is given to a model that reads its tags from the
        sentences: every ``fit`` is ``fit(X, y=None, *, dev=None, **options)``
        (scikit-learn's), and only a model over separate labels takes ``y``."""
        if y is not None:
            cls = type(self).__name__
            got = repr(y) if isinstance(y, (str, bytes, int, float)) else type(y).__name__
            raise InputError(f"{cls}.fit(X, y=None, *, dev=None): a {cls} reads the tags "
                             f"from the sentences' tag column, so y must be None, got "
                             f"{got:.40}; held-out sentences go in dev=..., hyper-parameters "
                             f"in set_params(...)")

    def _refuse_parameters(self, options: dict[str, Any], call: str = "fit") -> None:
        """One InputError if ``options`` (of ``call``) hold a hyper-parameter."""
        given = [k for k in options if k in self._parameter_names()]
        if given:
            settings = ", ".join(f"{k}={options[k]!r}" for k in given)
            raise InputError(f"{type(self).__name__}.{call}() takes no hyper-parameter "
                             f"({', '.join(given)}): set it with model.set_params({settings}) "
                             f"or the constructor, then call {call}()")

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        shown = [f"{n}={v!r}" for n, v in self.get_params().items()
                 if sig.parameters[n].default is inspect.Parameter.empty
                 or not _same(v, sig.parameters[n].default)]
        return f"{type(self).__name__}({', '.join(shown)})"


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:       # arrays and the like: shown
        return False
