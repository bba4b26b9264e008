"""The lattice's stochastic chain as arrays, with its chunk-boundary tables, built
once per lattice and shared by the recursions of :mod:`.counting`, :mod:`.spans` and
:mod:`.meu`.

For layer i (the arcs into token i): ``W[i] = exp(w̃_i)`` (the rows of the stochastic
chain, :func:`.chain.gauge`), ``Wo[i]`` its arcs that open a chunk, ``Wn[i]`` the
others, and the ``cont`` / ``closes`` tables indexed by the states of the two layers
(:func:`.chain.pair_table`); ``fin`` the final weights (1 on live states).

Pitfall: a lattice from score arrays shares one label array across its layers, so
the boundary tables are computed once per distinct pair of label arrays, not once
per token — at 23 tags and 24 tokens that is most of a short sentence's work.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from .chain import pair_table


@dataclass
class ChainArrays:
    """Per layer i: W, its opening arcs Wo and the others Wn; ``Wct`` = W on continue
    arcs, ``Wnc`` / ``Woc`` = Wn / Wo on closing arcs; the boolean ``cont`` and
    ``closes`` tables; ``fin`` the final weights."""
    W: list
    Wo: list
    Wn: list
    Wct: list
    Wnc: list
    Woc: list
    cont: list
    closes: list
    fin: np.ndarray


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def chain_arrays(lattice) -> ChainArrays:
    """The arrays of the module doc for ``lattice`` (cached while it lives).  Runs of
    layers that share their label arrays (all but the first of a score-array
    lattice) are computed as one stacked array."""
    got = _CACHE.get(lattice)
    if got is not None:
        return got
    chain, space = lattice.chain, lattice.space
    srcs = [np.array([-1])] + list(chain.labels[:-1])
    keys = [(id(s), id(d)) for s, d in zip(srcs, chain.labels)]
    tabs: dict = {}
    out: dict = {k: [] for k in ("W", "Wo", "Wn", "Wct", "Wnc", "Woc", "cont", "closes")}
    i, n = 0, len(keys)
    while i < n:
        j = i + 1
        while j < n and keys[j] == keys[i] and chain.weights[j].shape == chain.weights[i].shape:
            j += 1
        if keys[i] not in tabs:
            tabs[keys[i]] = tuple(pair_table(t, srcs[i], chain.labels[i])
                                  for t in (space.opens, space.cont, space.closes))
        op, ct, cl = tabs[keys[i]]
        e = np.exp(np.stack(chain.weights[i:j]))            # (layers, S, S')
        o = e * op
        nn = e - o
        for name, arr in (("W", e), ("Wo", o), ("Wn", nn), ("Wct", e * ct),
                          ("Wnc", nn * cl), ("Woc", o * cl)):
            out[name].extend(arr)
        out["cont"].extend([ct] * (j - i))
        out["closes"].extend([cl] * (j - i))
        i = j
    got = ChainArrays(fin=np.exp(chain.final), **out)
    _CACHE[lattice] = got
    return got
