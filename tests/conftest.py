"""Shared fixtures: the corpora (``FSTCHUNK_DATA``).  The oracles are in
:mod:`oracles`."""

import os

import pytest

from fstchunk.conll import data_path


@pytest.fixture(scope="session")
def corpus():
    """corpus('conll2000', 'train.txt') -> path; missing data fails in CI, skips elsewhere."""
    def get(*parts):
        p = data_path(*parts)
        if not os.path.exists(p):
            msg = f"corpus {p} not found (set FSTCHUNK_DATA)"
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(msg)
            pytest.skip(msg)
        return p
    return get
