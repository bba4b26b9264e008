"""``dir()`` of the public packages shows their public names and the module dunders
only, not the helpers they import (issue 43, item 9)."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = ["fstchunk", "fstchunk.sklearn", "fstchunk.models", "fstchunk.models.joint",
            "fstchunk.models.segment", "fstchunk.learn",
            "fstchunk.io.crfsuite", "fstchunk.torch"]


@pytest.mark.parametrize("name", PACKAGES)
def test_dir_lists_the_public_names_only(name):
    if name == "fstchunk.torch":
        pytest.importorskip("torch")
    mod = importlib.import_module(name)
    for public in mod.__all__:                      # loaded or not, every one is there
        getattr(mod, public)
    shown = dir(mod)
    plain = [n for n in shown if not (n.startswith("__") and n.endswith("__"))]
    assert sorted(plain) == sorted(mod.__all__), name
    for helper in ("Any", "TYPE_CHECKING", "importlib", "annotations", "np", "os"):
        assert helper not in shown, (name, helper)
    assert "__doc__" in shown and "__name__" in shown


def test_the_top_level_keeps_its_version_and_lazy_names():
    import fstchunk
    assert "__version__" in dir(fstchunk) and "CRF" in dir(fstchunk)
    assert "evaluate" in dir(fstchunk) and "joint" in dir(fstchunk)
    with pytest.raises(AttributeError):
        fstchunk.no_such_name
