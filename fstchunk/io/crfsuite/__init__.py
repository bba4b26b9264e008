"""CRFsuite's files, independent of fstchunk's models: model files (:mod:`.model`:
labels, attributes, state features, transitions, read in pure Python; :mod:`.writer`
writes them), the data
format (:mod:`.data`: ``LABEL<TAB>attr[:weight]...``, read and written) and CRFsuite's
evaluation of ``crfsuite tag -r`` output (:mod:`.evaluation`).  Names load on first
use, so that ``fstchunk eval`` imports no numpy."""

from __future__ import annotations

import importlib
from typing import Any

from ...core.namespace import public_dir

_WHERE = {"CRFsuiteModel": "model", "read_model": "model", "Sequence": "data",
          "escape": "data", "format_sequence": "data", "iter_data": "data",
          "read_data": "data", "write_data": "data", "evaluate": "evaluation",
          "read_reference": "evaluation", "Report": "evaluation",
          "parse_model": "model", "write_model": "writer", "encode_model": "writer",
          "dump": "writer"}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)

__dir__ = public_dir(globals(), __all__)
