"""The joint model of one sentence as a weighted machine: the twin of Figure 1's DP.

:func:`joint_fst` compiles the part scores of one sentence into a weighted
acceptor over ``chunktag|POS`` symbols (weights −score) whose states are the
entries of the two tables of Shimizu & Haas (2006), Figure 1: label states
(q, e, C, P) and chunk states (e, C), joined by ε arcs that close a span.  Its
shortest path (:func:`fst_viterbi`), shortest distance (:func:`fst_log_partition`)
and arc posteriors (:func:`fst_token_marginals`) are the twins of
:func:`~.dp.viterbi`, log Z and the chain's token marginals;
:func:`chunk_fst` projects it to the chunk tags (the chunk layer's raw machine).

Pitfalls: the machine has O(n²·c·p) states: it is for checking and
inspection, not for speed.  The tropical shortest path runs in float32 weights
(compare scores to ~1e-5); log Z is read exactly (:func:`fstchunk.grammars.fsa.total_weight`).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pynini

from ...grammars import fsa
from .structure import Parts, chunk_tag_names


def pair_symbol(chunk_tag: str, pos: str) -> str:
    """The machine's symbol for a token with an IOB2 chunk tag and a POS label."""
    return f"{chunk_tag}|{pos}"


def joint_fst(parts: Parts, chunk_labels: Sequence[str], pos_labels: Sequence[str],
              outside: int, arc_type: str = "log64") -> pynini.Fst:
    """One sentence's model as a weighted acceptor over ``chunktag|POS`` symbols
    (weights −score).  States are the two tables' entries: label states
    (q, e, C, P) and chunk states (e, C), joined by ε arcs that close a span."""
    n, c, p = parts.shape
    syms = pynini.SymbolTable()
    syms.add_symbol("<eps>", 0)
    tag_of = chunk_tag_names(chunk_labels, outside)
    for s in (0, 1):
        for C in range(c):
            for P in range(p):
                syms.add_symbol(pair_symbol(tag_of[s][C], pos_labels[P]))
    f = pynini.Fst(arc_type)
    one = pynini.Weight.one(arc_type)

    def arc(src, lab, w, dst):
        if np.isfinite(w):
            f.add_arc(src, pynini.Arc(lab, lab, pynini.Weight(arc_type, -float(w)), dst))

    start = f.add_state()
    f.set_start(start)
    chunk = {(e, C): f.add_state() for e in range(1, n + 1) for C in range(c)}
    label = {(q, e, C, P): f.add_state() for q in range(n) for e in range(q + 1, n + 1)
             for C in range(c) for P in range(p)}
    for C in range(c):
        f.set_final(chunk[(n, C)], one)
        for P in range(p):
            sym0 = syms.find(pair_symbol(tag_of[1][C], pos_labels[P]))
            for q in range(n):
                w0 = parts.start[q, C] + parts.node[q, C, P]
                if q == 0:
                    arc(start, sym0, w0, label[(0, 1, C, P)])
                else:
                    for C2 in range(c):
                        arc(chunk[(q, C2)], sym0, w0 + parts.ctrans[q, C2, C],
                            label[(q, q + 1, C, P)])
                for e in range(q + 1, n + 1):
                    src = label[(q, e, C, P)]
                    arc(src, 0, parts.end[e - 1, C], chunk[(e, C)])
                    if e < n:
                        for P2 in range(p):
                            sym = syms.find(pair_symbol(tag_of[0][C], pos_labels[P2]))
                            arc(src, sym, parts.trans[e, C, P, P2] + parts.node[e, C, P2],
                                label[(q, e + 1, C, P2)])
    f.set_input_symbols(syms)
    f.set_output_symbols(syms)
    return f.connect()


def chunk_fst(parts: Parts, chunk_labels: Sequence[str], pos_labels: Sequence[str],
              outside: int, chunk_tags: Sequence[str]) -> pynini.Fst:
    """:func:`joint_fst` (log64) with each ``chunktag|POS`` symbol mapped to its
    chunk tag, over a symbol table of ``chunk_tags``."""
    f = joint_fst(parts, chunk_labels, pos_labels, outside)
    syms = f.input_symbols()
    tsyms = pynini.SymbolTable()
    tsyms.add_symbol("<eps>", 0)
    for t in chunk_tags:
        tsyms.add_symbol(t)
    pairs = []
    for k in range(1, syms.num_symbols()):
        key = syms.get_nth_key(k)
        pairs.append((key, tsyms.find(syms.find(key).split("|")[0])))
    f.relabel_pairs(ipairs=pairs, opairs=pairs)
    f.set_input_symbols(tsyms)
    f.set_output_symbols(tsyms)
    return f


def fst_viterbi(fst: pynini.Fst) -> tuple[list[str], float]:
    """The shortest path of :func:`joint_fst` in the tropical semiring: its
    ``chunktag|POS`` symbols and score (float32 weights: compare to ~1e-5)."""
    (labels, _, w), = fsa.paths(pynini.shortestpath(fsa.to_arc_type(fst, "standard")))
    syms = fst.input_symbols()
    return [syms.find(x) for x in labels], -w


def fst_token_marginals(fst: pynini.Fst) -> tuple[list[str], np.ndarray]:
    """Pr(token k carries symbol σ) read off the machine: arc posteriors
    exp(−(α[src] + w + β[dst] − α[final])) from shortest distances in log64,
    summed by the token an arc reads.  Returns (symbols, (n, #symbols))."""
    f = fsa.to_arc_type(fst, "log64").topsort()
    arcs, alpha, beta = _distances(f)
    total = beta[f.start()]
    syms = f.input_symbols()
    names = [syms.find(syms.get_nth_key(k)) for k in range(1, syms.num_symbols())]
    col = {syms.find(x): i for i, x in enumerate(names)}
    depth = {f.start(): 0}
    rows: list[tuple[int, int, float]] = []
    for s in f.states():                   # topological order: depths are known
        for label, w, q in arcs[s]:
            depth.setdefault(q, depth[s] + (1 if label else 0))
            if label:
                post = math.exp(-(alpha[s] + w + beta[q] - total))
                rows.append((depth[s], col[label], post))
    n = max(d for d, _, _ in rows) + 1
    out = np.zeros((n, len(names)))
    for d, j, p in rows:
        out[d, j] += p
    return names, out


def _distances(f: pynini.Fst) -> tuple[list, list[float], list[float]]:
    """(arcs, α, β) of a topologically sorted log64 machine: each state's arcs as
    (label, weight, next state), and the −log sums of its paths from the start and to
    a final state, at full double precision (:func:`pynini.shortestdistance` hands
    back 9 digits: at score scale 1e5 marginals off by 1e-3)."""
    N = f.num_states()
    arcs = [[(a.ilabel, fsa.weight_value(a.weight), a.nextstate) for a in f.arcs(s)]
            for s in range(N)]
    alpha = [math.inf] * N
    alpha[f.start()] = 0.0
    for s in range(N):                     # state ids are in topological order
        for _, w, q in arcs[s]:
            alpha[q] = -float(np.logaddexp(-alpha[q], -(alpha[s] + w)))
    beta = [fsa.weight_value(f.final(s)) for s in range(N)]
    for s in reversed(range(N)):
        for _, w, q in arcs[s]:
            beta[s] = -float(np.logaddexp(-beta[s], -(w + beta[q])))
    return arcs, alpha, beta


def fst_log_partition(fst: pynini.Fst) -> float:
    """log Z by shortest distance in log64 (the twin of :func:`~.dp.inside_outside`)."""
    return -fsa.total_weight(fsa.to_arc_type(fst, "log64"))
