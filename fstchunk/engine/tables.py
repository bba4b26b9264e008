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
    W: list
    Wo: list
    Wn: list
    cont: list
    closes: list
    fin: np.ndarray


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def chain_arrays(lattice) -> ChainArrays:
    """The arrays of the module doc for ``lattice`` (cached while it lives)."""
    got = _CACHE.get(lattice)
    if got is not None:
        return got
    chain, space = lattice.chain, lattice.space
    srcs = [np.array([-1])] + list(chain.labels[:-1])
    cache: dict = {}
    W, Wo, Wn, cont, closes = [], [], [], [], []
    for w, src, dst in zip(chain.weights, srcs, chain.labels):
        key = (id(src), id(dst))
        if key not in cache:
            cache[key] = tuple(pair_table(tab, src, dst)
                               for tab in (space.opens, space.cont, space.closes))
        op, ct, cl = cache[key]
        e = np.exp(w)
        o = e * op
        W.append(e)
        Wo.append(o)
        Wn.append(e - o)
        cont.append(ct)
        closes.append(cl)
    got = ChainArrays(W, Wo, Wn, cont, closes, np.exp(chain.final))
    _CACHE[lattice] = got
    return got
