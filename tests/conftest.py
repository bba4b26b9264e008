"""Shared oracles and fixtures.

The oracle for every encoding question is :func:`all_chunkings`: all sets of
non-overlapping typed chunks of a sentence, enumerated directly from the
definition of a chunking, independent of any scheme or machine.
"""

import functools
import os

import pytest


@functools.lru_cache(maxsize=None)
def all_chunkings(n: int, types: tuple) -> tuple:
    """Every chunking of ``n`` tokens over ``types`` (tuples of (type, start, end))."""
    if n == 0:
        return ((),)
    out = []
    # the last token is O, or ends a chunk of length k and type t
    for rest in all_chunkings(n - 1, types):
        out.append(rest)
    for k in range(1, n + 1):
        for t in types:
            for rest in all_chunkings(n - k, types):
                out.append(rest + ((t, n - k, n),))
    return tuple(out)


def data_path(*parts) -> str:
    return os.path.join(os.environ.get("FSTCHUNK_DATA", os.path.join("..", "shared", "data")),
                        *parts)


@pytest.fixture
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


def random_scores(rng, L, n, scale=1.0):
    """(emissions, transitions, start, end) of a random linear-chain model."""
    return (rng.normal(scale=scale, size=(n, L)), rng.normal(scale=scale, size=(L, L)),
            rng.normal(scale=scale, size=L), rng.normal(scale=scale, size=L))


def brute_force(tags, scheme, types, n, emissions, transitions, start, end):
    """[(tag sequence, chunk set, probability)] over ALL valid sequences, from the
    chunkings themselves (independent of the lattice code)."""
    import numpy as np
    from fstchunk import encodings as enc
    out = []
    col = {t: i for i, t in enumerate(tags)}
    for c in all_chunkings(n, types):
        y = enc.chunks_to_tags(c, n, scheme)
        if any(t not in col for t in y):
            continue
        idx = [col[t] for t in y]
        s = start[idx[0]] + end[idx[-1]] + sum(emissions[i, idx[i]] for i in range(n))
        s += sum(transitions[idx[i - 1], idx[i]] for i in range(1, n))
        out.append((y, frozenset(c), s))
    scores = np.array([s for _, _, s in out])
    logz = np.logaddexp.reduce(scores)
    return [(y, c, float(np.exp(s - logz))) for y, c, s in out], float(logz)
