"""Names moved between modules to keep modules under the size limit (issue 45) are still
importable from where users and the other rooms import them, as the same objects."""

from __future__ import annotations

import importlib

import pytest

MOVED = [
    # (old module, name, the module that defines it now)
    ("fstchunk.engine.expectation", "corpus_expectations", "fstchunk.engine.corpus_expectations"),
    ("fstchunk.evaluation.chunks", "UNDECODED", "fstchunk.evaluation.sentences"),
    ("fstchunk.evaluation.chunks", "check_chunk_tag", "fstchunk.evaluation.sentences"),
    ("fstchunk.evaluation.chunks", "documented", "fstchunk.evaluation.sentences"),
]


@pytest.mark.parametrize("old, name, new", MOVED)
def test_moved_names_stay_importable_from_their_old_module(old, name, new):
    moved = getattr(importlib.import_module(new), name)
    assert getattr(importlib.import_module(old), name) is moved
    if callable(moved):
        assert moved.__module__ == new
