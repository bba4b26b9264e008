"""Probability models as weighted machines over tags (log64: weight = -log score).

* :func:`score_lattice` — a linear-chain (CRF) lattice from score arrays: states
  (position, last tag), arc weight -(transition + emission), start/end scores.
  Any first-order tagger (CRF, HMM, MEMM, a neural network's emission scores plus
  a transition matrix) becomes a machine this way.
* :func:`hmm_transducer` — an HMM Pr(w, x) = Π Pr(w_i | x_i) Pr(x_i | x_{i-1}) as a
  transducer from tags to words (states: last tag); composing it with a sentence
  and projecting onto the tags gives the joint Pr(w, x) as a lattice over x.
* :func:`toy_bigram` — the bigram model b(·|·; θ) of the Jansche slides (§11) over
  untyped IOB2, for sentences of length n.

Pitfall: these machines are not normalised and may give weight to invalid
sequences; :class:`fstchunk.Lattice` composes them with the scheme's validity
acceptor and renormalises (weights sum to one over valid sequences).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pynini

from ..core.errors import InputError
from ..schemes.tagspace import TagSet
from . import budget, fsa


def score_lattice(labels: Sequence[int], emissions: np.ndarray, transitions: np.ndarray,
                  start: np.ndarray | None = None, end: np.ndarray | None = None,
                  arc_type: str = "log64") -> pynini.Fst:
    """Acceptor of all tag sequences of length n with weight -score(y).

    score(y) = start[y_1] + Σ_i emissions[i, y_i] + Σ_i transitions[y_{i-1}, y_i] + end[y_n].
    Entries equal to -inf get no arc.
    """
    emissions = np.asarray(emissions, dtype=np.float64)
    if emissions.ndim != 2 or emissions.shape[1] != len(labels):
        raise InputError(f"emissions has shape {emissions.shape}, expected (n, {len(labels)}) "
                         f"for {len(labels)} labels")
    n, L = emissions.shape
    start = np.zeros(L) if start is None else np.asarray(start, dtype=np.float64)
    end = np.zeros(L) if end is None else np.asarray(end, dtype=np.float64)
    transitions = np.asarray(transitions, dtype=np.float64)
    for name, a, shape in (("transitions", transitions, (L, L)), ("start", start, (L,)),
                           ("end", end, (L,))):
        if a.shape != shape:
            raise InputError(f"{name} has shape {a.shape}, expected {shape}")
    f = pynini.Fst(arc_type)
    wt = f.weight_type()
    q0 = f.add_state()
    f.set_start(q0)
    layer = [q0]
    for i in range(n):
        nxt = [f.add_state() for _ in range(L)]
        for a, src in enumerate(layer):
            w = (start if i == 0 else transitions[a]) + emissions[i]
            for b in range(L):
                if w[b] > -math.inf:
                    f.add_arc(src, pynini.Arc(labels[b], labels[b],
                                              pynini.Weight(wt, -float(w[b])), nxt[b]))
        layer = nxt
    for b, q in enumerate(layer):
        if end[b] > -math.inf:
            f.set_final(q, pynini.Weight(wt, -float(end[b])))
    return f.connect()


def toy_bigram_scores(theta: float, n: int) -> tuple[tuple[str, ...], np.ndarray, np.ndarray,
                                                     np.ndarray]:
    """The slides' b(y_i | y_{i-1}; θ) over untyped IOB2 as log-score arrays.

    b(I|I) = b(I|O) = 0, b(I|B) = θ², b(O|I) = b(O|O) = θ, b(O|B) = 1 − θ²,
    b(B|I) = b(B|O) = 1 − θ, b(B|B) = 0; y_0 = O.  Returns (tags, emissions,
    transitions, start) with zero emissions.
    """
    if not (0.0 < theta < 1.0):
        raise InputError(f"theta must lie in (0, 1), got {theta!r}")
    tags = ("O", "B", "I")
    b = {("O", "O"): theta, ("O", "B"): 1 - theta, ("O", "I"): 0.0,
         ("B", "O"): 1 - theta ** 2, ("B", "B"): 0.0, ("B", "I"): theta ** 2,
         ("I", "O"): theta, ("I", "B"): 1 - theta, ("I", "I"): 0.0}
    with np.errstate(divide="ignore"):
        trans = np.log(np.array([[b[(p, c)] for c in tags] for p in tags]))
    return tags, np.zeros((n, 3)), trans, trans[0].copy()


def toy_bigram(theta: float, n: int, arc_type: str = "log64") -> pynini.Fst:
    """The toy bigram model of the slides as a machine over untyped IOB2 tags;
    BudgetError before building when its 3n + 1 states do not fit."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"the toy model needs a length n >= 1, got {n!r}")
    budget.check(f"the toy bigram model of {n:,} tokens", budget.score_lattice(n, 3),
                 "use a smaller --max-length")
    tags, emis, trans, start = toy_bigram_scores(theta, n)
    ts = TagSet("IOB2")
    f = score_lattice([ts.label(t) for t in tags], emis, trans, start, None, arc_type)
    return fsa.attach(f, ts.symbols)


def hmm_transducer(tagset: TagSet, tags: Sequence[str], vocab: Sequence[str],
                   log_start: np.ndarray, log_trans: np.ndarray, log_emit: np.ndarray,
                   arc_type: str = "log64") -> tuple[pynini.Fst, pynini.SymbolTable]:
    """HMM as a transducer tags -> words: states = last tag (plus a start state).

    ``log_emit[t, v]`` = log Pr(vocab[v] | tags[t]); the word symbol table is returned.
    """
    words = pynini.SymbolTable(name="words")
    words.add_symbol("<epsilon>", 0)
    wl = [words.add_symbol(w) for w in vocab]
    L = len(tags)
    labels = [tagset.label(t) for t in tags]
    f = pynini.Fst(arc_type)
    wt = f.weight_type()
    q0 = f.add_state()
    f.set_start(q0)
    qs = [f.add_state() for _ in range(L)]
    for src, lt in [(q0, log_start)] + [(qs[a], log_trans[a]) for a in range(L)]:
        for b in range(L):
            if lt[b] == -math.inf:
                continue
            for v, lab in enumerate(wl):
                w = lt[b] + log_emit[b, v]
                if w > -math.inf:
                    f.add_arc(src, pynini.Arc(labels[b], lab,
                                              pynini.Weight(wt, -float(w)), qs[b]))
    for q in qs:
        f.set_final(q)
    f.set_input_symbols(tagset.symbols)
    f.set_output_symbols(words)
    return f, words
