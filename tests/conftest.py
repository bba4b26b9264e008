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


@pytest.fixture(scope="session")
def crf_document(corpus):
    """crf_document(n) -> (lattice, gold tags) of the first n tokens of CoNLL-2000 dev
    joined into one document, under a CRF fitted briefly on 200 training sentences
    (real long-sentence lattices for the cost rewrites' equivalence tests)."""
    import numpy as np

    from fstchunk.conll import Sentence, read_conll
    from fstchunk.models.crf import CRF

    train = read_conll(corpus("conll2000", "train.txt"))[:200]
    dev = read_conll(corpus("conll2000", "dev.txt"))
    crf, data = CRF.prepare(train, "tmpt1")
    crf.theta = np.zeros_like(crf.theta)
    crf.fit(data, "ml", l2=1e-4, max_iter=15)

    def get(n):
        rows, lines = [], []
        for s in dev:
            rows.extend(s.rows)
            lines.extend(s.lines)
            if len(rows) >= n:
                break
        doc = Sentence(rows[:n], lines[:n], dev[0].source)
        return crf.lattices([doc])[0], doc.column(-1)
    return get
