"""A weighted acceptor over a tag space as a lattice's numbers: relabelled to the
shared symbols of the :class:`~fstchunk.schemes.tagspace.TagSpace` (:func:`to_space_labels`),
layered by composing with the scheme's validity acceptor and a one-tag history
acceptor, then topologically sorted (:func:`layers_of`: each state knows the tag it
was entered by), and normalised so that its paths sum to one (:func:`normalise`); the
machine a lattice's distribution lives on, model ∘ validity (:func:`valid_machine`).
What :meth:`fstchunk.structures.lattice.Lattice.from_fst` and :attr:`~fstchunk.structures.lattice.Lattice.fst`
are built from.  A dense chain's numerical forms come from its score arrays instead:
its layers (:func:`chain_layers`: what :attr:`~fstchunk.structures.lattice.Lattice.layers`
is for :meth:`~fstchunk.structures.lattice.Lattice.from_scores`) and its ragged batch of
one (:func:`chain_batch`, :meth:`~fstchunk.structures.lattice.Lattice.batch`).

Pitfall: the machine's paths must all have the same length (one tag per token).
"""

from __future__ import annotations

import numpy as np
import pynini

from ..core.errors import InputError
from ..engine.chain import Layers, restrict
from ..engine.ragged import RaggedBatch, ragged_batches
from ..grammars import fsa
from ..grammars.validity import validity_acceptor
from ..schemes.tagspace import TagSpace


def to_space_labels(fst: pynini.Fst, ts: TagSpace) -> pynini.Fst:
    tags = ts.tags
    f = fst.copy()
    if f.arc_type() != "log64":
        f = fsa.to_arc_type(f, "log64")
    if f.properties(pynini.ACCEPTOR, True) != pynini.ACCEPTOR:
        f = f.project("input")
    syms = fst.input_symbols()
    if syms is not None:
        pairs = []
        used = None                          # the labels on arcs, read once if needed
        for k in range(syms.num_symbols()):
            key = syms.get_nth_key(k)
            name = syms.find(key)
            if key == 0:
                continue
            if name not in tags:
                if used is None:
                    used = set(fsa.arc_table(f).ilabel.tolist())
                if key in used:
                    raise InputError(f"the machine uses symbol {name!r}, which is not among "
                                     f"the tags {', '.join(tags)}")
                continue
            pairs.append((key, ts.label(name)))
        f.relabel_pairs(ipairs=pairs, opairs=pairs)
    else:
        allowed = [0] + [ts.label(t) for t in tags]
        labels = fsa.arc_table(f).ilabel
        stray = labels[~np.isin(labels, allowed)]
        if len(stray):
            raise InputError(f"the machine has label {stray[0]}, not the label of any "
                             f"tag in {', '.join(tags)}")
    f.rmepsilon(delta=fsa.DELTA)
    return fsa.attach(f, ts.symbols)


def with_validity(f: pynini.Fst, ts: TagSpace) -> pynini.Fst:
    """f ∘ the scheme's validity acceptor (f itself without a scheme: ``scheme=None``)."""
    return (pynini.compose(f.arcsort("olabel"), validity_acceptor(ts.scheme, ts.types))
            if ts.chunked else f)


def valid_machine(raw: pynini.Fst, ts: TagSpace, n: int) -> pynini.Fst:
    """The lattice's machine before normalisation: ``raw`` ∘ validity, connected, over the
    shared symbols (``raw`` is not changed without a scheme); InputError when no valid
    sequence of length ``n`` is left."""
    out = with_validity(raw if ts.chunked else raw.copy(), ts).connect()
    if out.num_states() == 0:
        raise InputError("the lattice gives no weight to any valid "
                         f"{ts.scheme} sequence of length {n}")
    return fsa.attach(out, ts.symbols)


def chain_layers(ts: TagSpace, scores: tuple, allowed: np.ndarray | None = None) -> Layers:
    """The layers of a dense chain, ``scores`` = (emissions, transitions, start, end):
    w_0 = start + emissions[0], w_i = transitions + emissions[i] (−inf where the scheme
    forbids, or the (n, L) tag mask ``allowed`` does), final = end."""
    emissions, transitions, start, end = scores
    neg, n = -np.inf, len(emissions)
    w = [np.where(ts.start_ok, start + emissions[0], neg)[None, :]]
    masked = np.where(ts.trans_ok, transitions, neg)
    w += [masked + emissions[i][None, :] for i in range(1, n)]
    lay = Layers(w, [np.arange(len(ts))] * n, np.where(ts.end_ok, end, neg))
    return lay if allowed is None else restrict(lay, allowed)


def chain_batch(ts: TagSpace, scores: tuple, allowed: np.ndarray | None = None) -> RaggedBatch:
    """A dense chain, ``scores`` = (emissions, transitions, start, end), as a ragged batch
    of one (:mod:`fstchunk.engine.ragged`): the scores −inf where the scheme forbids,
    the (n, L) tag mask ``allowed`` kept as the batch's mask."""
    e, t, s, en = scores
    return ragged_batches([e], np.where(ts.trans_ok, t, -np.inf),
                          np.where(ts.start_ok, s, -np.inf), np.where(ts.end_ok, en, -np.inf),
                          ts, masks=None if allowed is None else [allowed])[0]


def layers_of(f: pynini.Fst, ts: TagSpace) -> Layers:
    """Layer a machine: compose with validity and a tag-history acceptor, topsort."""
    tags, scheme = ts.tags, ts.scheme
    hist = pynini.Fst("log64")
    h0 = hist.add_state()
    hist.set_start(h0)
    labels = [ts.label(t) for t in tags]
    hs = {lab: hist.add_state() for lab in labels}
    for q in [h0] + list(hs.values()):
        hist.set_final(q)
        for lab in labels:
            hist.add_arc(q, pynini.Arc(lab, lab, pynini.Weight.one("log64"), hs[lab]))
    g = pynini.compose(with_validity(f, ts).arcsort("olabel"), hist.arcsort()).connect()
    if g.num_states() == 0:
        raise InputError(f"the machine accepts no valid {scheme} sequence over the given tags")
    if g.properties(pynini.CYCLIC, True) == pynini.CYCLIC:
        raise InputError("the lattice machine is cyclic; a sentence lattice must be acyclic")
    t = fsa.arc_table(g)                       # every arc at once: no Python call per arc
    depth = np.full(len(t.final), -1)
    depth[t.start] = 0
    front, d = np.array([t.start]), 0
    while True:                                # layer by layer; checks equal path lengths
        out = np.isin(t.src, front)
        if not out.any():
            break
        d += 1
        nxt = t.dst[out]
        if ((depth[nxt] != -1) & (depth[nxt] != d)).any():
            raise InputError("the lattice machine accepts sequences of different lengths")
        depth[nxt] = d
        front = np.unique(nxt)
    n = d
    if (np.isfinite(t.final) & (depth != n)).any():
        raise InputError("the lattice machine accepts sequences of different lengths")
    pos = np.zeros(len(depth), dtype=np.int64)
    layer_states = [np.flatnonzero(depth == i) for i in range(n + 1)]
    for layer in layer_states:
        pos[layer] = np.arange(len(layer))
    index = np.full(max(labels) + 1, -1)
    index[labels] = np.arange(len(labels))
    weights, labs = [], []
    for i in range(n):
        sel = depth[t.src] == i
        w = np.full((len(layer_states[i]), len(layer_states[i + 1])), -np.inf)
        np.logaddexp.at(w, (pos[t.src[sel]], pos[t.dst[sel]]), -t.weight[sel])
        lab = np.full(len(layer_states[i + 1]), -1)
        lab[pos[t.dst[sel]]] = index[t.ilabel[sel]]
        weights.append(w)
        labs.append(lab)
    final = -t.final[layer_states[n]]
    return Layers(weights, labs, final)


def normalise(f: pynini.Fst) -> pynini.Fst:
    out = pynini.push(f, push_weights=True, remove_total_weight=True, delta=fsa.DELTA)
    return fsa.attach(out, f.input_symbols())
