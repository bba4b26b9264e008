"""``fstchunk.joint``: the joint model's package (:mod:`fstchunk.models.joint`) under
its short name, so that ``import fstchunk.joint`` and ``from fstchunk.joint import
JointModel`` work as ``fstchunk.joint`` does.  The name is the package itself, and its
modules are the package's (``fstchunk.joint.train is fstchunk.models.joint.train``):
no second copy of a class."""

import importlib
import pkgutil
import sys

from .models import joint as _joint

for _info in pkgutil.iter_modules(_joint.__path__):
    sys.modules[f"{__name__}.{_info.name}"] = importlib.import_module(
        f"{_joint.__name__}.{_info.name}")
sys.modules[__name__] = _joint
