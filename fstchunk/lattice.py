"""Lattices: distributions over the valid tag sequences of one sentence.

A :class:`Lattice` is built from score arrays of any first-order tagger
(:meth:`Lattice.from_scores`: a linear-chain CRF, an HMM's log-probabilities, a
neural network's emission scores plus a transition matrix) or from any weighted
acceptor over the tag alphabet (:meth:`Lattice.from_fst`).  Either way:

    Pr(y) = exp(score(y)) / Z   over the *valid* sequences y of the scheme,

which the machine path gets by composing with the scheme's validity acceptor and
pushing the weights (:attr:`Lattice.fst` is normalised: its paths sum to one).

Internally every lattice is a sequence of layers: layer i holds the states after
token i, each with the tag it was entered by, and a dense matrix of log weights
between consecutive layers.  For score arrays the states are the tags; for a
machine they are its states after composing with a one-tag history acceptor (so
that each state knows its tag).  All numerical algorithms in
:mod:`fstchunk.engine` run on these layers, in log space or scaled, so a 300-token
sentence neither underflows nor overflows.

With ``scheme=None`` (:data:`fstchunk.tagspace.UNCONSTRAINED`) the tags are any labels
and every sequence is valid: an ordinary linear chain (no validity machine is
composed; chunk operations refuse it, naming ``scheme=None``).

Pitfalls: score arrays are rejected if they contain NaN or ±inf (use the scheme,
not -inf, to forbid transitions); the tag list fixes the column order of the
arrays and of :meth:`marginals`; a machine's paths must all have the same length.
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np
import pynini

from . import encodings as enc
from .errors import InputError
from . import fsa
from .blas import one_blas_thread
from .engine.spans import dense_marginals
from .grammars.models import score_lattice
from .grammars.validity import validity_acceptor
from .engine.chain import Layers, forward, gauge, restrict, token_marginals
from .grammars.annotation import mask_acceptor
from .scorecheck import looks_like_probabilities, warn_probabilities
from .tagseq import tag_list
from .tagspace import TagSpace, canonical


class Lattice:
    """A distribution over valid tag sequences of length ``n`` (see module doc)."""

    def __init__(self, tags: Sequence[str], scheme: str, layers: Layers,
                 raw_fst: pynini.Fst | Callable[[], pynini.Fst] | None = None,
                 scores: tuple | None = None):
        """``layers`` are the numerical form; ``raw_fst`` the machine they came from
        (or a function that builds it on demand), composed with validity by :attr:`fst`."""
        self.space = TagSpace.of(tags, canonical(scheme))
        self.layers = layers
        self.n = len(layers.weights)
        self._raw_fst = raw_fst
        self.scores = scores            # (emissions, transitions, start, end) if from_scores

    @property
    def tags(self) -> tuple[str, ...]:
        """The tags, in the column order of score arrays and marginals."""
        return self.space.tags

    @property
    def scheme(self) -> str:
        return self.space.scheme

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_scores(cls, tags: Sequence[str], emissions, transitions, start=None, end=None,
                    scheme: str = "IOB2", warn: bool = True) -> "Lattice":
        """Linear-chain lattice: score(y) = start[y_1] + Σ emissions[i, y_i]
        + Σ transitions[y_{i-1}, y_i] + end[y_n] (log potentials, columns = ``tags``;
        rows that look like probabilities are warned of, :mod:`fstchunk.scorecheck`,
        unless ``warn=False``: scores of fstchunk's own making)."""
        space = TagSpace.of(tags, canonical(scheme))
        tags, L = space.tags, len(space)
        emissions = _array("emissions", emissions, 2)
        if warn and looks_like_probabilities(emissions):
            warn_probabilities("emissions")
        if emissions.shape[0] == 0:
            raise InputError("empty sentence: emissions has 0 rows (a sentence has >= 1 token)")
        if emissions.shape[1] != L:
            raise InputError(f"emissions has {emissions.shape[1]} columns but there are {L} tags")
        transitions = _array("transitions", transitions, 2)
        if transitions.shape != (L, L):
            raise InputError(f"transitions has shape {transitions.shape}, expected {(L, L)}")
        start = np.zeros(L) if start is None else _array("start", start, 1)
        end = np.zeros(L) if end is None else _array("end", end, 1)
        for name, a in (("start", start), ("end", end)):
            if a.shape != (L,):
                raise InputError(f"{name} has shape {a.shape}, expected {(L,)}")
        ok_start, ok_trans, ok_end = space.start_ok, space.trans_ok, space.end_ok
        neg = -np.inf
        n = emissions.shape[0]
        w = [np.where(ok_start, start + emissions[0], neg)[None, :]]
        masked = np.where(ok_trans, transitions, neg)
        w += [masked + emissions[i][None, :] for i in range(1, n)]
        labels = [np.arange(L)] * n
        final = np.where(ok_end, end, neg)
        lat = cls(tags, scheme, Layers(w, labels, final),
                  scores=(emissions, transitions, start, end))
        return lat

    @classmethod
    def from_fst(cls, fst: pynini.Fst, tags: Sequence[str], scheme: str = "IOB2") -> "Lattice":
        """Lattice from any weighted acceptor over ``tags`` (weights: -log score).

        Labels are matched by name if ``fst`` has an input symbol table, else they
        must be the labels of :class:`TagSet` (the shared symbol table).
        """
        space = TagSpace.of(tags, canonical(scheme))
        f = _to_space_labels(fst, space)
        return cls(space.tags, space.scheme, _layers_of(f, space), raw_fst=f)

    def constrained(self, allowed: np.ndarray) -> "Lattice":
        """This distribution conditioned on a product constraint A = Π_i allowed_i
        (allowed[i, l]: token i may take ``tags[l]``; :mod:`fstchunk.annotation`):
        Pr_A(y) ∝ exp(score(y)) on valid y ∈ A.  Fast path: the layers restricted
        (:func:`fstchunk.engine.chain.restrict`); machine: this lattice's machine ∘ the
        mask's acceptor (:func:`fstchunk.grammars.annotation.mask_acceptor`).  So
        ``constrained(a).log_partition()`` is log Σ_{y ∈ A ∩ valid} exp(score(y))."""
        allowed = np.asarray(allowed, dtype=bool)
        if allowed.shape != (self.n, len(self.tags)):
            raise InputError(f"allowed has shape {allowed.shape}, expected "
                             f"{(self.n, len(self.tags))} (tokens, tags)")

        def machine() -> pynini.Fst:
            acc = mask_acceptor(allowed, self.space)
            return pynini.compose(self.unnormalised_fst(), acc.arcsort("ilabel")).connect()
        return Lattice(self.tags, self.scheme, restrict(self.layers, allowed), raw_fst=machine)

    # ------------------------------------------------------------------ machines
    @functools.cached_property
    def fst(self) -> pynini.Fst:
        """The normalised lattice machine (log64): model ∘ validity, weights pushed."""
        return _normalise(self.unnormalised_fst())

    def unnormalised_fst(self) -> pynini.Fst:
        """model ∘ validity acceptor, before normalisation (weights -score)."""
        if callable(self._raw_fst):        # a builder, run on first use
            raw = _to_space_labels(self._raw_fst(), self.space)
        elif self._raw_fst is not None:
            raw = self._raw_fst
        else:
            e, t, s, en = self.scores
            raw = score_lattice(self.space.labels, e, t, s, en)
        out = (pynini.compose(raw.arcsort("olabel"),
                              validity_acceptor(self.scheme, self.space.types)).connect()
               if self.space.chunked else raw.copy().connect())
        if out.num_states() == 0:
            raise InputError("the lattice gives no weight to any valid "
                             f"{self.scheme} sequence of length {self.n}")
        return fsa.attach(out, self.space.symbols)

    # ------------------------------------------------------------------ inference
    @functools.cached_property
    def chain(self) -> Layers:
        """The layers as a stochastic chain (:func:`fstchunk.engine.chain.gauge`):
        the same distribution, each row a conditional distribution over next
        states; what the counting and expectation recursions run on."""
        return gauge(self.layers)

    @one_blas_thread
    def log_partition(self) -> float:
        """log Z = log Σ_{valid y} exp(score(y))."""
        return forward(self.layers)[1]

    @one_blas_thread
    def marginals(self) -> np.ndarray:
        """Token marginals Pr(y_i = tag), shape (n, len(tags)): forward-backward on the
        stochastic chain (:attr:`chain`), where the log forward is the log state
        distribution itself, so no α + β − log Z of size n·(score scale) is formed."""
        return token_marginals(self.chain, len(self.tags))

    @one_blas_thread
    def chunk_marginals(self) -> np.ndarray:
        """Pr((type, s, e) ∈ chunks(y)), shape (len(types), n, n+1), indexed [type, s, e]
        with types in ``self.space.types`` order and e exclusive (one sweep over open
        chunks, O(T·n²) memory: :func:`fstchunk.engine.spans.dense_marginals`)."""
        self.space.require_chunks("chunk marginals")
        return dense_marginals(self)

    @one_blas_thread
    def log_prob(self, seq: Sequence[str]) -> float:
        """log Pr(seq); -inf for a valid sequence the model excludes.

        Raises ValueError for a sequence of the wrong length, unknown tags, or an
        invalid sequence."""
        idx = self.check_sequence(seq, "sequence")
        lay = self.layers                      # the sub-chain of the states seq enters
        on = [np.flatnonzero(lab == t) for lab, t in zip(lay.labels, idx)]
        if any(len(o) == 0 for o in on):       # a machine with no state of that tag there
            return -np.inf
        prev = [np.array([0])] + on[:-1]
        sub = Layers([wi[np.ix_(p, o)] for wi, p, o in zip(lay.weights, prev, on)],
                     [lab[o] for lab, o in zip(lay.labels, on)], lay.final[on[-1]])
        _, score = forward(sub)
        return score - self.log_partition()

    def check_sequence(self, seq: Sequence[str], what: str) -> list[int]:
        if len(tag_list(seq, what)) != self.n:
            raise InputError(f"{what} has {len(seq)} tags but the lattice has {self.n} tokens")
        if self.space.chunked:
            enc.validate(list(seq), self.scheme)
        pos = {t: i for i, t in enumerate(self.tags)}
        out = []
        for i, t in enumerate(seq):
            if t not in pos:
                raise InputError(f"{what}: position {i}: tag {t!r} is not among the lattice's "
                                 f"tags {', '.join(self.tags)}")
            out.append(pos[t])
        return out

    def check_chunking(self, seq: Sequence[str], what: str) -> list[tuple[str, int, int]]:
        """The chunks of a fixed sequence compared against the lattice (a hypothesis or
        a reference): the lattice's length, valid in its scheme, chunk types among
        its types — but any tag of the scheme, since a decision need not be a
        sequence the model can produce (MEU may answer O where the lattice's tag
        list has no O; it lacks no other tag: :func:`.tagspace.check_expresses`)."""
        self.space.require_chunks(f"the chunks of a {what}")
        if len(tag_list(seq, what)) != self.n:
            raise InputError(f"{what} has {len(seq)} tags but the lattice has {self.n} tokens")
        seq = list(seq)
        enc.validate(seq, self.scheme)
        chunks = enc.tags_to_chunks(seq, self.scheme)
        for t, s, _ in chunks:
            if t not in self.space.types:
                raise InputError(f"{what}: position {s}: chunk type {t!r} is not among the "
                                 f"lattice's types {', '.join(self.space.types) or '(none)'}")
        return chunks

    def __repr__(self) -> str:
        return f"Lattice(n={self.n}, scheme={self.scheme!r}, tags={len(self.tags)})"


# ---------------------------------------------------------------------- helpers
def _array(name: str, a, ndim: int) -> np.ndarray:
    """``a`` as float64 of ``ndim`` dimensions and finite entries, else one InputError
    naming ``name`` (a ragged list, strings, a complex array, a tensor numpy cannot read)."""
    try:
        arr = np.asarray(a)
        if arr.dtype.kind == "c":
            raise InputError(f"{name} holds complex numbers; scores are real log potentials")
        arr = arr.astype(np.float64, copy=False)
    except (TypeError, ValueError, RuntimeError) as e:
        if isinstance(e, InputError):
            raise
        raise InputError(f"{name} is not an array of real numbers: {e}") from None
    if arr.ndim != ndim:
        raise InputError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        where = tuple(int(x) for x in np.argwhere(bad)[0])
        raise InputError(f"{name} has a non-finite score {float(arr[where])} at index {where}")
    return arr


def _to_space_labels(fst: pynini.Fst, ts: TagSpace) -> pynini.Fst:
    tags = ts.tags
    f = fst.copy()
    if f.arc_type() != "log64":
        f = fsa.to_arc_type(f, "log64")
    if f.properties(pynini.ACCEPTOR, True) != pynini.ACCEPTOR:
        f = f.project("input")
    syms = fst.input_symbols()
    if syms is not None:
        pairs = []
        for k in range(syms.num_symbols()):
            key = syms.get_nth_key(k)
            name = syms.find(key)
            if key == 0:
                continue
            if name not in tags:
                if any(a.ilabel == key for s in f.states() for a in f.arcs(s)):
                    raise InputError(f"the machine uses symbol {name!r}, which is not among "
                                     f"the tags {', '.join(tags)}")
                continue
            pairs.append((key, ts.label(name)))
        f.relabel_pairs(ipairs=pairs, opairs=pairs)
    else:
        allowed = {ts.label(t) for t in tags}
        for s in f.states():
            for a in f.arcs(s):
                if a.ilabel not in allowed and a.ilabel != 0:
                    raise InputError(f"the machine has label {a.ilabel}, not the label of any "
                                     f"tag in {', '.join(tags)}")
    f.rmepsilon(delta=fsa.DELTA)
    return fsa.attach(f, ts.symbols)


def _layers_of(f: pynini.Fst, ts: TagSpace) -> Layers:
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
    valid = (pynini.compose(f.arcsort("olabel"), validity_acceptor(scheme, ts.types))
             if ts.chunked else f)
    g = pynini.compose(valid.arcsort("olabel"), hist.arcsort()).connect()
    if g.num_states() == 0:
        raise InputError(f"the machine accepts no valid {scheme} sequence over the given tags")
    if g.properties(pynini.CYCLIC, True) == pynini.CYCLIC:
        raise InputError("the lattice machine is cyclic; a sentence lattice must be acyclic")
    index = {lab: i for i, lab in enumerate(labels)}
    depth = {g.start(): 0}
    order = [g.start()]
    for s in order:                        # breadth-first; checks equal path lengths
        for a in g.arcs(s):
            d = depth[s] + 1
            if a.nextstate not in depth:
                depth[a.nextstate] = d
                order.append(a.nextstate)
            elif depth[a.nextstate] != d:
                raise InputError("the lattice machine accepts sequences of different lengths")
    n = max(depth.values())
    layer_states = [[] for _ in range(n + 1)]
    for s in order:
        layer_states[depth[s]].append(s)
    pos = {s: k for layer in layer_states for k, s in enumerate(layer)}
    zero = pynini.Weight.zero("log64")
    for s in order:
        if g.final(s) != zero and depth[s] != n:
            raise InputError("the lattice machine accepts sequences of different lengths")
    weights, labs = [], []
    for i in range(n):
        src, dst = layer_states[i], layer_states[i + 1]
        w = np.full((len(src), len(dst)), -np.inf)
        lab = np.full(len(dst), -1)
        for s in src:
            for a in g.arcs(s):
                k = pos[a.nextstate]
                lab[k] = index[a.ilabel]
                w[pos[s], k] = np.logaddexp(w[pos[s], k], -fsa.weight_value(a.weight))
        weights.append(w)
        labs.append(lab)
    final = np.array([-fsa.weight_value(g.final(s)) for s in layer_states[n]])
    return Layers(weights, labs, final)


def _normalise(f: pynini.Fst) -> pynini.Fst:
    out = pynini.push(f, push_weights=True, remove_total_weight=True, delta=fsa.DELTA)
    return fsa.attach(out, f.input_symbols())
