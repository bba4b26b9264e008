"""What ``dir()`` shows of a public package: its public names (``__all__``, or the
names it loads on first use) and the module's own dunders (``__version__``,
``__doc__``, ...), not the helpers it imports (``Any``, ``importlib``), nor the
submodules that happen to be loaded (they stay importable by name)."""

from __future__ import annotations

from typing import Callable, Iterable


def public_dir(namespace: dict, public: Iterable[str]) -> Callable[[], list[str]]:
    """A package's ``__dir__`` (PEP 562): ``public`` and the dunders of ``namespace``
    (the package's ``globals()``)."""
    names = tuple(public)

    def __dir__() -> list[str]:
        return sorted(set(names) | {n for n in namespace
                                    if n.startswith("__") and n.endswith("__")})
    return __dir__
