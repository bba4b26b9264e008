"""Joint POS tagging and chunking with label-chunk structures (Shimizu & Haas 2006).

A structure y of an n-token sentence is a segmentation into segments [q, e), each
with a chunk label C (a chunk type, or ``O`` for material outside chunks), and a
POS label P_r for every token.  Its parts (§2, Table 2) are

    POS node         ⟨C, P, r⟩            token r has POS P inside a segment labelled C
    POS transition   ⟨C, P′, P, r−1, r⟩   r−1 and r in the same segment
    chunk node       ⟨C, q, r⟩            a segment labelled C spans q..r
    chunk transition ⟨C′, C, q−1, q⟩      a C′ segment ends at q−1, a C segment starts at q

and score(x, y) = Σ_parts w·f(x, part), with the lexicalisations of Table 6 and the
token shape t_q of Table 5.  :func:`viterbi` is the two-table dynamic program of
Figure 1 (label table A[q, e, C, P], chunk table B[e, C], back-pointers),
O(n²·c²·p²); run in the log semiring with an outside pass (:func:`inside_outside`)
the same recursion gives log Z and the marginals of every part, which the paper
lacked (its stated future work) and which train the model as a CRF.

Pitfalls:

* ``O`` segments are maximal (an O→O chunk transition is forbidden), so that a
  structure and its (POS tags, IOB2 chunk tags) are one-to-one; the paper's
  Table 2 reads gold structures this way, and without the rule the sum over
  structures would count ``O O`` twice.
* The chunk node's features (x_q, x_{q−1}, x_r, x_{r+1}; Table 6) split its score
  into a start half and an end half.  This is why the chunk layer is also a
  first-order chain over token states (C, P, starts-a-segment), which
  :meth:`JointModel.chunk_lattice` uses to hand the chunk distribution to the
  exact MEU decoder; decoding itself follows Figure 1.
* No part links POS tags across a segment boundary (the paper's model).
* :func:`joint_fst` compiles one sentence as a weighted machine whose states
  are the entries of the two tables (label states (q, e, C, P), chunk states
  (e, C)); its shortest path and shortest distance are the twins of
  :func:`viterbi` and log Z.  Its size is O(n²·c·p) states: for checking and
  inspection, not for speed.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pynini

from .. import encodings as enc
from .. import fsa
from ..conll import Sentence
from .features import capital_class
from ..engine.chain import Layers, logsumexp, state_posteriors
from ..lattice import Lattice

KINDS = ("node", "trans", "start", "end", "ctrans")

# Table 6 (the joint model): per part kind, the lexicalisations; () is the
# unlexicalised part itself.  "start"/"end" are the two halves of the chunk node.
JOINT_TEMPLATES: dict[str, list[tuple]] = {
    "node": [(), (("w", -1),), (("w", 0),), (("w", 1),), (("t", 0),)],
    "trans": [(), (("w", -1),), (("w", 0),)],
    "start": [(), (("w", 0),), (("w", -1),)],
    "end": [(("w", 0),), (("w", 1),)],
    "ctrans": [(), (("w", -1),), (("w", 0),)],
}
# A linear-chain tagger is the joint model with the single chunk label O (one
# segment spanning the sentence): the POS layer carries the tags.
TAGGER_TEMPLATES: dict[str, list[tuple]] = {
    "node": JOINT_TEMPLATES["node"], "trans": JOINT_TEMPLATES["trans"],
    "start": [()], "end": [], "ctrans": [()],
}
# The cascade's chunker: the same word features plus the (predicted) POS column.
CHUNKER_TEMPLATES: dict[str, list[tuple]] = {
    "node": JOINT_TEMPLATES["node"] + [(("p", -1),), (("p", 0),), (("p", 1),),
                                       (("p", -1), ("p", 0)), (("p", 0), ("p", 1))],
    "trans": JOINT_TEMPLATES["trans"] + [(("p", 0),), (("p", -1), ("p", 0))],
    "start": [()], "end": [], "ctrans": [()],
}

# Table 3: the 45 Penn tags collapsed to 5 classes.
_COLLAPSE = [(re.compile(r"NN.*"), "NOUN"), (re.compile(r"VB.*"), "VERB"),
             (re.compile(r"JJ.*"), "JADJ"), (re.compile(r"RB.*"), "RBP")]
COLLAPSED_POS = ("NOUN", "VERB", "JADJ", "RBP", "OTHER")


def collapse_pos(tag: str) -> str:
    """Table 3: NN* → NOUN, VB* → VERB, JJ* → JADJ, RB* → RBP, else OTHER."""
    for rx, out in _COLLAPSE:
        if rx.fullmatch(tag):
            return out
    return "OTHER"


def np_only(tag: str) -> str:
    """Keep NP chunks (B-NP, I-NP); every other tag becomes O."""
    return tag if tag in ("B-NP", "I-NP") else "O"


# --------------------------------------------------------------------- parts
@dataclass
class Parts:
    """Scores (or marginals) of all parts of one sentence.

    node (n, c, p); trans (n, c, p, p) with trans[r] between r−1 and r (trans[0]
    unused); start (n, c) and end (n, c), the halves of the chunk node
    ⟨C, q, r⟩ = start[q] + end[r]; ctrans (n, c, c) with ctrans[q] between q−1
    and q (ctrans[0] unused; O→O is −inf in scores)."""
    node: np.ndarray
    trans: np.ndarray
    start: np.ndarray
    end: np.ndarray
    ctrans: np.ndarray

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.node.shape


@dataclass(frozen=True)
class Structure:
    """A label-chunk structure: POS label indices and segments (C, q, e), e exclusive."""
    pos: tuple[int, ...]
    segments: tuple[tuple[int, int, int], ...]


def structure_parts(y: Structure, c: int, p: int) -> Parts:
    """The one-hot part indicator of a structure (its f, before lexicalisation)."""
    n = len(y.pos)
    out = Parts(np.zeros((n, c, p)), np.zeros((n, c, p, p)), np.zeros((n, c)),
                np.zeros((n, c)), np.zeros((n, c, c)))
    prev = None
    for C, q, e in y.segments:
        out.start[q, C] += 1
        out.end[e - 1, C] += 1
        if prev is not None:
            out.ctrans[q, prev, C] += 1
        for r in range(q, e):
            out.node[r, C, y.pos[r]] += 1
            if r > q:
                out.trans[r, C, y.pos[r - 1], y.pos[r]] += 1
        prev = C
    return out


def structure_score(parts: Parts, y: Structure) -> float:
    """score(y) = Σ of the part scores of y (the oracle's definition)."""
    s, prev = 0.0, None
    for C, q, e in y.segments:
        s += parts.start[q, C] + parts.end[e - 1, C]
        if prev is not None:
            s += parts.ctrans[q, prev, C]
        for r in range(q, e):
            s += parts.node[r, C, y.pos[r]]
            if r > q:
                s += parts.trans[r, C, y.pos[r - 1], y.pos[r]]
        prev = C
    return float(s)


def all_structures(n: int, c: int, p: int, outside: int):
    """Every structure of n tokens (O→O transitions excluded): the brute-force oracle."""
    for cuts in itertools.product((0, 1), repeat=n - 1):
        bounds = [0] + [i + 1 for i, cut in enumerate(cuts) if cut] + [n]
        spans = list(zip(bounds, bounds[1:]))
        for labels in itertools.product(range(c), repeat=len(spans)):
            if any(a == b == outside for a, b in zip(labels, labels[1:])):
                continue
            segs = tuple((C, q, e) for C, (q, e) in zip(labels, spans))
            for pos in itertools.product(range(p), repeat=n):
                yield Structure(pos, segs)


# ------------------------------------------------------------- Figure 1's DP
def _reduce(a: np.ndarray, axis: int, mode: str):
    if mode == "max":
        return np.max(a, axis=axis)
    return logsumexp(a, axis=axis)


def _tables(parts: Parts, mode: str):
    """Label table A[q, e, C, P], segment scores S[q, e, C], chunk table B[e, C] and
    incoming scores G[q, C] (best/summed structure up to q, then a C segment starts),
    in the max or log semiring.  Vectorised over q: one step per end position e."""
    n, c, p = parts.shape
    neg = -np.inf
    A = np.full((n, n + 1, c, p), neg)
    S = np.full((n, n + 1, c), neg)
    B = np.full((n + 1, c), neg)
    G = np.full((n, c), neg)
    G[0] = 0.0
    for e in range(1, n + 1):
        r = e - 1                                   # the token this step adds
        A[r, e] = parts.node[r]
        if r > 0:
            cand = A[:r, r, :, :, None] + parts.trans[r][None]          # (q, C, P′, P)
            A[:r, e] = _reduce(cand, 2, mode) + parts.node[r][None]
        S[:e, e] = parts.start[:e] + _reduce(A[:e, e], 2, mode) + parts.end[r][None]
        B[e] = _reduce(G[:e] + S[:e, e], 0, mode)
        if e < n:
            G[e] = _reduce(B[e][:, None] + parts.ctrans[e], 0, mode)
    return A, S, B, G


def viterbi(parts: Parts) -> tuple[Structure, float]:
    """Figure 1: the best structure and its score (back-pointers recomputed by argmax)."""
    n, c, p = parts.shape
    if n == 0:
        raise ValueError("empty sentence: a structure needs at least one token")
    A, S, B, G = _tables(parts, "max")
    best = float(np.max(B[n]))
    if not np.isfinite(best):
        raise ValueError("no structure has a finite score")
    C, e = int(np.argmax(B[n])), n
    pos = [0] * n
    segs = []
    while e > 0:
        q = int(np.argmax(G[:e, C] + S[:e, e, C]))
        segs.append((C, q, e))
        P = int(np.argmax(A[q, e, C]))
        for r in range(e - 1, q, -1):                  # the label table's back-pointers
            pos[r] = P
            P = int(np.argmax(A[q, r, C] + parts.trans[r, C, :, P]))
        pos[q] = P
        if q > 0:
            C = int(np.argmax(B[q] + parts.ctrans[q][:, C]))
        e = q
    return Structure(tuple(pos), tuple(reversed(segs))), best


def inside_outside(parts: Parts) -> tuple[float, Parts]:
    """log Z and the marginal probability of every part (the outside pass is the
    adjoint of :func:`_tables` in the log semiring: ∂ log Z / ∂ part score)."""
    n, c, p = parts.shape
    if n == 0:
        raise ValueError("empty sentence: a structure needs at least one token")
    A, S, B, G = _tables(parts, "log")
    logZ = float(logsumexp(B[n], axis=0))
    if not np.isfinite(logZ):
        raise ValueError("no structure has a finite score")
    m = Parts(np.zeros((n, c, p)), np.zeros((n, c, p, p)), np.zeros((n, c)),
              np.zeros((n, c)), np.zeros((n, c, c)))
    dB = np.zeros((n + 1, c))
    dG = np.zeros((n, c))
    dS = np.zeros((n, n + 1, c))
    dB[n] = np.exp(B[n] - logZ)
    with np.errstate(invalid="ignore"):
        for e in range(n, 0, -1):
            if e < n:                                   # G[e] = ⊕_C′ B[e, C′] + ctrans[e, C′, C]
                v = dG[e][None, :] * np.exp(B[e][:, None] + parts.ctrans[e] - G[e][None, :])
                v = np.nan_to_num(v)
                m.ctrans[e] += v
                dB[e] += v.sum(axis=1)
            w = dB[e][None, :] * np.exp(G[:e] + S[:e, e] - B[e][None, :])   # (q, C)
            w = np.nan_to_num(w)
            dG[:e] += w
            dS[:e, e] = w
        dA = np.zeros_like(A)
        for e in range(1, n + 1):                       # S[q, e] = start + ⊕_P A + end
            seg = dS[:e, e]
            m.start[:e] += seg
            m.end[e - 1] += seg.sum(axis=0)
            dA[:e, e] = np.nan_to_num(seg[:, :, None] * np.exp(A[:e, e] - S[:e, e][:, :, None]
                                                               + parts.start[:e, :, None]
                                                               + parts.end[e - 1][None, :, None]))
        for e in range(n, 0, -1):
            r = e - 1
            m.node[r] += dA[:e, e].sum(axis=0)
            if r > 0:
                u = dA[:r, e][:, :, None, :] * np.exp(
                    A[:r, r][:, :, :, None] + parts.trans[r][None]
                    + parts.node[r][None, :, None, :] - A[:r, e][:, :, None, :])
                u = np.nan_to_num(u)
                m.trans[r] += u.sum(axis=0)
                dA[:r, r] += u.sum(axis=3)
    return logZ, m


# ------------------------------------------------------ the chain over tokens
def chain_layers(parts: Parts, chunk_tag_index: np.ndarray) -> Layers:
    """The model as a first-order chain over token states (C, P, s), s = 1 if the
    token starts a segment; each state is labelled by its chunk tag
    (``chunk_tag_index[s, C]``).  Used for the chunk-layer :class:`Lattice`."""
    n, c, p = parts.shape
    neg = -np.inf
    C_, P_, s_ = np.meshgrid(np.arange(c), np.arange(p), np.arange(2), indexing="ij")
    C_, P_, s_ = C_.ravel(), P_.ravel(), s_.ravel()
    labels = chunk_tag_index[s_, C_]
    first = np.where(s_ == 1, parts.start[0, C_] + parts.node[0, C_, P_], neg)
    weights = [first[None, :]]
    same = C_[:, None] == C_[None, :]
    for r in range(1, n):
        cont = np.where(same, parts.trans[r][C_[:, None], P_[:, None], P_[None, :]], neg)
        new = (parts.end[r - 1][C_][:, None] + parts.ctrans[r][C_[:, None], C_[None, :]]
               + parts.start[r][C_][None, :])
        w = np.where(s_[None, :] == 1, new, cont) + parts.node[r][C_, P_][None, :]
        weights.append(w)
    return Layers(weights, [labels] * n, parts.end[n - 1][C_])


# ------------------------------------------------------------------ machines
def _pair_symbol(chunk_tag: str, pos: str) -> str:
    return f"{chunk_tag}|{pos}"


def joint_fst(parts: Parts, chunk_labels: Sequence[str], pos_labels: Sequence[str],
              outside: int, arc_type: str = "log64") -> pynini.Fst:
    """One sentence's model as a weighted acceptor over ``chunktag|POS`` symbols
    (weights −score).  States are the two tables' entries: label states
    (q, e, C, P) and chunk states (e, C), joined by ε arcs that close a span."""
    n, c, p = parts.shape
    syms = pynini.SymbolTable()
    syms.add_symbol("<eps>", 0)
    tag_of = _chunk_tag_names(chunk_labels, outside)
    for s in (0, 1):
        for C in range(c):
            for P in range(p):
                syms.add_symbol(_pair_symbol(tag_of[s][C], pos_labels[P]))
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
            sym0 = syms.find(_pair_symbol(tag_of[1][C], pos_labels[P]))
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
                            sym = syms.find(_pair_symbol(tag_of[0][C], pos_labels[P2]))
                            arc(src, sym, parts.trans[e, C, P, P2] + parts.node[e, C, P2],
                                label[(q, e + 1, C, P2)])
    f.set_input_symbols(syms)
    f.set_output_symbols(syms)
    return f.connect()


def _chunk_tag_names(chunk_labels: Sequence[str], outside: int) -> list[list[str]]:
    """[s][C]: the IOB2 tag of a token in a C segment; s = 1 for the segment's first token."""
    out = [[], []]
    for C, name in enumerate(chunk_labels):
        for s, prefix in ((0, "I-"), (1, "B-")):
            out[s].append("O" if C == outside else prefix + name)
    return out


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
    alpha = [fsa.weight_value(w) for w in pynini.shortestdistance(f)]
    beta = [fsa.weight_value(w) for w in pynini.shortestdistance(f, reverse=True)]
    total = beta[f.start()]
    syms = f.input_symbols()
    names = [syms.find(syms.get_nth_key(k)) for k in range(1, syms.num_symbols())]
    col = {syms.find(x): i for i, x in enumerate(names)}
    depth = {f.start(): 0}
    rows: list[tuple[int, int, float]] = []
    for s in f.states():                   # topological order: depths are known
        for a in f.arcs(s):
            depth.setdefault(a.nextstate, depth[s] + (1 if a.ilabel else 0))
            if a.ilabel:
                post = math.exp(-(alpha[s] + fsa.weight_value(a.weight) + beta[a.nextstate]
                                  - total))
                rows.append((depth[s], col[a.ilabel], post))
    n = max(d for d, _, _ in rows) + 1
    out = np.zeros((n, len(names)))
    for d, j, p in rows:
        out[d, j] += p
    return names, out


def fst_log_partition(fst: pynini.Fst) -> float:
    """log Z by shortest distance in log64 (the twin of :func:`inside_outside`)."""
    return -fsa.total_weight(fsa.to_arc_type(fst, "log64"))


# --------------------------------------------------------------------- model
def _nll_shard(job, indices) -> tuple[float, np.ndarray]:
    """Σ_{i ∈ indices} log Z_i − score(gold_i), and Σ E[f] − f(gold); ``job`` is
    (model, w, data), the context :meth:`JointModel._objective` hands to the workers."""
    model, w, data = job
    val, grad = 0.0, np.zeros_like(w)
    for i in indices:
        x = data[i]
        parts = model.parts(x, w)
        logZ, marg = inside_outside(parts)
        val += logZ - structure_score(parts, x.gold)
        mi, mv = model.features(x, marg)
        gi, gv = model.features(x, structure_parts(x.gold, model.c, model.p))
        np.add.at(grad, mi, mv)
        np.add.at(grad, gi, -gv)
    return val, grad


class Encoded:
    """One sentence's observation ids per template (0 = unseen) and its gold structure."""

    def __init__(self, ids: list[np.ndarray], n: int, gold: Structure | None):
        self.ids, self.n, self.gold = ids, n, gold


class JointModel:
    """Label-chunk model: templates, vocabularies and one flat weight vector.

    ``chunk_labels`` are the segment labels (chunk types and ``"O"``); ``pos_labels``
    the token labels.  Parts' scores are Σ over templates of W_t[obs_t(x, anchor)],
    W_t of shape (V_t, *out) where out is (c, p), (c, p, p), (c,), (c,) or (c, c)."""

    def __init__(self, chunk_labels: Sequence[str], pos_labels: Sequence[str],
                 templates: dict[str, list[tuple]], vocabs: list[dict[str, int]],
                 w: np.ndarray | None = None, settings: dict | None = None):
        self.chunk_labels = tuple(chunk_labels)
        self.pos_labels = tuple(pos_labels)
        if "O" not in self.chunk_labels:
            raise ValueError("the chunk labels must include 'O'")
        self.outside = self.chunk_labels.index("O")
        self.templates = {k: [tuple(tuple(x) for x in t) for t in templates.get(k, [])]
                          for k in KINDS}
        self.flat = [(k, t) for k in KINDS for t in self.templates[k]]
        self.vocabs = vocabs
        self.c, self.p = c, p = len(self.chunk_labels), len(self.pos_labels)
        self.out_shape = {"node": (c, p), "trans": (c, p, p), "start": (c,), "end": (c,),
                          "ctrans": (c, c)}
        self.offsets, size = [], 0
        for (k, t), v in zip(self.flat, vocabs):
            self.offsets.append(size)
            size += (len(v) + 1) * math.prod(self.out_shape[k])
        self.size = size
        self.w = np.zeros(size) if w is None else np.asarray(w, dtype=float)
        if self.w.shape != (size,):
            raise ValueError(f"weight vector has shape {self.w.shape}, expected {(size,)}")
        self.lexical = np.zeros(size, dtype=bool)        # the first-iteration trick's mask
        for i, (k, t) in enumerate(self.flat):
            if t:
                self.lexical[self.offsets[i]:self._end(i)] = True
        self.settings = settings or {}
        tags = _chunk_tag_names(self.chunk_labels, self.outside)
        self.chunk_tags = tuple(dict.fromkeys(tags[1] + tags[0]))
        self._tag_index = np.array([[self.chunk_tags.index(t) for t in row] for row in tags])

    def _end(self, i: int) -> int:
        k = self.flat[i][0]
        return self.offsets[i] + (len(self.vocabs[i]) + 1) * math.prod(self.out_shape[k])

    # ----------------------------------------------------------- observations
    @staticmethod
    def columns(words: Sequence[str], pos: Sequence[str] | None = None) -> dict[str, list[str]]:
        """Observation columns: words ``w``, shapes ``t`` (Table 5), given POS ``p``."""
        cols = {"w": list(words), "t": [capital_class(x) for x in words]}
        if pos is not None:
            cols["p"] = list(pos)
        return cols

    @staticmethod
    def _obs(cols: dict[str, list[str]], template: tuple, n: int) -> list[str]:
        def at(col, i):
            if i < 0:
                return "<s>"
            if i >= n:
                return "</s>"
            return cols[col][i]
        return ["\x1f".join(f"{c}{o}={at(c, r + o)}" for c, o in template) for r in range(n)]

    @classmethod
    def build(cls, cols_list: Sequence[dict], chunk_labels, pos_labels, templates,
              settings=None) -> "JointModel":
        """Vocabularies from training observations (id 0 is kept for unseen ones)."""
        flat = [(k, tuple(t)) for k in KINDS for t in templates.get(k, [])]
        vocabs = [{} for _ in flat]
        for cols in cols_list:
            n = len(cols["w"])
            for v, (k, t) in zip(vocabs, flat):
                for o in cls._obs(cols, t, n):
                    v.setdefault(o, len(v) + 1)
        return cls(chunk_labels, pos_labels, templates, vocabs, settings=settings)

    def encode(self, cols: dict, pos: Sequence[str] | None = None,
               chunks: Sequence[str] | None = None, where: str = "") -> Encoded:
        n = len(cols["w"])
        if n == 0:
            raise ValueError(f"{where}: empty sentence")
        ids = [np.array([v.get(o, 0) for o in self._obs(cols, t, n)], dtype=np.int64)
               for v, (k, t) in zip(self.vocabs, self.flat)]
        gold = None
        if pos is not None and chunks is not None:
            gold = self.structure(pos, chunks, where)
        return Encoded(ids, n, gold)

    def structure(self, pos: Sequence[str], chunk_tags: Sequence[str], where: str = "") -> Structure:
        """Gold structure from POS labels and IOB2 chunk tags (O runs are one segment)."""
        pidx = []
        for i, t in enumerate(pos):
            if t not in self.pos_labels:
                raise ValueError(f"{where}: token {i + 1}: unknown POS label {t!r} "
                                 f"(the model has {', '.join(self.pos_labels)})")
            pidx.append(self.pos_labels.index(t))
        chunks = enc.tags_to_chunks(list(chunk_tags), "IOB2", strict=False)
        segs, i = [], 0
        for typ, q, e in chunks:
            if typ not in self.chunk_labels or typ == "O":
                raise ValueError(f"{where}: token {q + 1}: unknown chunk type {typ!r}")
            if q > i:
                segs.append((self.outside, i, q))
            segs.append((self.chunk_labels.index(typ), q, e))
            i = e
        if i < len(pos):
            segs.append((self.outside, i, len(pos)))
        return Structure(tuple(pidx), tuple(segs))

    def tags(self, y: Structure) -> tuple[list[str], list[str]]:
        """(POS tags, IOB2 chunk tags) of a structure."""
        pos = [self.pos_labels[i] for i in y.pos]
        chunk = [""] * len(y.pos)
        for C, q, e in y.segments:
            for r in range(q, e):
                chunk[r] = self.chunk_tags[self._tag_index[int(r == q), C]]
        return pos, chunk

    # ----------------------------------------------------------------- scores
    def _blocks(self, vec: np.ndarray):
        for i, (k, t) in enumerate(self.flat):
            shape = (len(self.vocabs[i]) + 1,) + self.out_shape[k]
            yield i, k, vec[self.offsets[i]:self._end(i)].reshape(shape)

    def parts(self, x: Encoded, w: np.ndarray | None = None) -> Parts:
        """Part scores of one sentence under ``w`` (default: the model's weights)."""
        w = self.w if w is None else w
        n = x.n
        out = {k: np.zeros((n,) + self.out_shape[k]) for k in KINDS}
        for i, k, W in self._blocks(w):
            out[k] += W[x.ids[i]]
        out["trans"][0] = 0.0
        out["ctrans"][0] = 0.0
        o = self.outside
        out["ctrans"][1:, o, o] = -np.inf
        return Parts(**out)

    def features(self, x: Encoded, parts: Parts) -> tuple[np.ndarray, np.ndarray]:
        """Σ_parts value·f(x, part) as a sparse (indices, values) vector; with a
        structure's one-hot parts this is f(x, y), with marginals E[f]."""
        idx, val = [], []
        for i, (k, t) in enumerate(self.flat):
            v = getattr(parts, k)
            if k in ("trans", "ctrans"):
                v = v[1:]
                ids = x.ids[i][1:]
            else:
                ids = x.ids[i]
            size = math.prod(self.out_shape[k])
            v = v.reshape(len(ids), size)
            nz = np.nonzero(v)
            if len(nz[0]):
                idx.append(self.offsets[i] + ids[nz[0]] * size + nz[1])
                val.append(v[nz])
        if not idx:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        idx, val = np.concatenate(idx), np.concatenate(val)
        u, inv = np.unique(idx, return_inverse=True)
        return u, np.bincount(inv, weights=val, minlength=len(u))

    # --------------------------------------------------------------- decoding
    def decode(self, x: Encoded, w: np.ndarray | None = None) -> tuple[Structure, float]:
        return viterbi(self.parts(x, w))

    def marginals(self, x: Encoded) -> tuple[float, Parts]:
        """log Z and part marginals (inside-outside over Figure 1's tables)."""
        return inside_outside(self.parts(x))

    def chunk_lattice(self, x: Encoded) -> Lattice:
        """The chunk layer's distribution (POS summed out) as a :class:`Lattice` over
        IOB2 chunk tags; its machine is :func:`joint_fst` projected to chunk tags."""
        parts = self.parts(x)
        return Lattice(self.chunk_tags, "IOB2", chain_layers(parts, self._tag_index),
                       raw_fst=lambda: self.chunk_fst(parts))

    def token_marginals(self, x: Encoded) -> tuple[list[str], np.ndarray]:
        """Pr(token k has ``chunktag|POS``), from the chain's state posteriors;
        the twin of :func:`fst_token_marginals` on :meth:`fst`."""
        names = [_pair_symbol(t, self.pos_labels[P])
                 for C in range(self.c) for P in range(self.p)
                 for t in (self.chunk_tags[self._tag_index[0, C]],
                           self.chunk_tags[self._tag_index[1, C]])]
        cols = list(dict.fromkeys(names))
        index = np.array([cols.index(x) for x in names])
        post = state_posteriors(chain_layers(self.parts(x), self._tag_index))
        out = np.zeros((x.n, len(cols)))
        for k, p in enumerate(post):
            np.add.at(out[k], index, p)
        return cols, out

    def fst(self, x: Encoded, arc_type: str = "log64") -> pynini.Fst:
        return joint_fst(self.parts(x), self.chunk_labels, self.pos_labels, self.outside,
                         arc_type)

    def chunk_fst(self, parts: Parts) -> pynini.Fst:
        """:func:`joint_fst` with each ``chunktag|POS`` symbol mapped to its chunk tag."""
        f = joint_fst(parts, self.chunk_labels, self.pos_labels, self.outside)
        syms = f.input_symbols()
        tsyms = pynini.SymbolTable()
        tsyms.add_symbol("<eps>", 0)
        for t in self.chunk_tags:
            tsyms.add_symbol(t)
        pairs = []
        for k in range(1, syms.num_symbols()):
            key = syms.get_nth_key(k)
            pairs.append((key, tsyms.find(syms.find(key).split("|")[0])))
        f.relabel_pairs(ipairs=pairs, opairs=pairs)
        f.set_input_symbols(tsyms)
        f.set_output_symbols(tsyms)
        return f

    # --------------------------------------------------------------- training
    def loss(self, gold: Structure, y: Structure) -> float:
        """Hamming loss over both layers: wrong POS labels + wrong chunk tags."""
        gp, gc = self.tags(gold)
        yp, yc = self.tags(y)
        return float(sum(a != b for a, b in zip(gp, yp)) + sum(a != b for a, b in zip(gc, yc)))

    def fit(self, data: Sequence[Encoded], algorithm: str = "perceptron", iterations: int = 10,
            l2: float = 0.5, progress: bool = False, callback=None) -> "JointModel":
        """Train: averaged perceptron (Algorithm 4.1 with Collins' averaging), MMVP
        (Algorithm 4.3: the perceptron with the max-margin step δ), both with the
        first-iteration trick (lexicalised weights frozen in iteration 1); or
        ``crf``: conditional likelihood + l2·‖w‖² by L-BFGS (``iterations`` = its
        maximum number of iterations), from the marginals of :meth:`marginals`."""
        if algorithm not in ("perceptron", "mmvp", "crf"):
            raise ValueError(f"unknown algorithm {algorithm!r} (perceptron, mmvp, crf)")
        if any(x.gold is None for x in data):
            raise ValueError("training sentences need gold POS and chunk tags")
        self.settings.update(algorithm=algorithm, iterations=iterations, sentences=len(data))
        if algorithm == "crf":
            self.settings["l2"] = l2
            return self._fit_crf(data, iterations, l2, progress)
        from tqdm import tqdm
        w = self.w.copy()
        u = np.zeros_like(w)                # Σ_t t·Δ_t, for the average w − u/t
        t = 1
        bar = tqdm(range(iterations), desc=f"joint {algorithm}", disable=not progress)
        for it in bar:
            mistakes = 0
            for x in data:
                y, _ = viterbi(self.parts(x, w))
                if y != x.gold:
                    mistakes += 1
                    idx, val = self._difference(x, x.gold, y)
                    step = 1.0
                    if algorithm == "mmvp":      # δ of Algorithm 4.3 (C = 1)
                        margin = float(w[idx] @ val)          # s(gold) − s(y)
                        norm = float(val @ val)
                        step = max(0.0, min((self.loss(x.gold, y) - margin) / norm, 1.0)) \
                            if norm > 0 else 0.0
                    if it == 0:                  # first-iteration trick
                        keep = ~self.lexical[idx]
                        idx, val = idx[keep], val[keep]
                    w[idx] += step * val
                    u[idx] += t * step * val
                t += 1
            bar.set_postfix(errors=mistakes)
            if callback is not None:
                self.w = w - u / t
                callback(it + 1, self)
        self.w = w - u / t
        return self

    def _difference(self, x: Encoded, gold: Structure, y: Structure):
        """f(x, gold) − f(x, y) as a sparse (indices, values) vector."""
        gi, gv = self.features(x, structure_parts(gold, self.c, self.p))
        pi, pv = self.features(x, structure_parts(y, self.c, self.p))
        idx, inv = np.unique(np.concatenate([gi, pi]), return_inverse=True)
        val = np.bincount(inv, weights=np.concatenate([gv, -pv]), minlength=len(idx))
        keep = val != 0
        return idx[keep], val[keep]

    def _objective(self, w: np.ndarray, data: Sequence[Encoded], l2: float):
        """−Σ log Pr(gold | x) + l2·‖w‖² and its gradient E[f] − f(gold) + 2·l2·w,
        the sentences split over processes."""
        from ..parallel import map_sentences, usable_cores
        k = max(1, min(usable_cores(), len(data) // 50))
        shards = [range(i, len(data), k) for i in range(k)]
        parts = map_sentences(_nll_shard, shards, context=(self, w, data), processes=k,
                              chunksize=1)
        val = l2 * float(w @ w) + sum(v for v, _ in parts)
        grad = 2.0 * l2 * w + sum(g for _, g in parts)
        return val, grad

    def _fit_crf(self, data, iterations, l2, progress):
        from scipy.optimize import minimize
        from tqdm import tqdm
        bar = tqdm(total=iterations, desc="joint crf", disable=not progress)

        def cb(_):
            bar.update(1)
        res = minimize(self._objective, self.w, args=(data, l2), jac=True, method="L-BFGS-B",
                       options={"maxiter": iterations}, callback=cb)
        bar.close()
        self.w = res.x
        self.settings["crf_iterations"] = int(res.nit)
        return self

    # -------------------------------------------------------------------- io
    def save(self, path) -> None:
        from .io import save_model
        meta = {"chunk_labels": list(self.chunk_labels), "pos_labels": list(self.pos_labels),
                "templates": {k: [list(map(list, t)) for t in v] for k, v in self.templates.items()},
                "vocabs": [sorted(v, key=v.get) for v in self.vocabs],
                "settings": self.settings}
        save_model(path, "joint", {"w": self.w}, meta)

    @classmethod
    def load(cls, path) -> "JointModel":
        from .io import ModelFileError, load_model_file
        meta, arrays = load_model_file(path, kind="joint")
        try:
            vocabs = [{o: i + 1 for i, o in enumerate(v)} for v in meta["vocabs"]]
            return cls(meta["chunk_labels"], meta["pos_labels"], meta["templates"], vocabs,
                       arrays["w"], meta.get("settings", {}))
        except (KeyError, ValueError, TypeError) as e:
            raise ModelFileError(f"{path}: corrupt joint model ({e})") from None


# ------------------------------------------------------------ data and scores
@dataclass
class Layered:
    """A sentence's words and, after the optional mappings, its POS and chunk tags."""
    sentence: Sentence
    pos: list[str]
    chunks: list[str]


def layered(sentences: Sequence[Sentence], collapse: bool = False,
            np_chunks: bool = False) -> list[Layered]:
    """Read word, POS (column 1) and chunk (last column) tags, with the POS
    collapsing of Table 3 and the NP-only mapping applied if asked."""
    out = []
    for s in sentences:
        if min(len(r) for r in s.rows) < 3:
            raise ValueError(f"{s.where(0)}: the joint model needs word, POS and chunk columns")
        pos = s.column(1)
        chunks = s.column(-1)
        if collapse:
            pos = [collapse_pos(t) for t in pos]
        if np_chunks:
            chunks = [np_only(t) for t in chunks]
        out.append(Layered(s, pos, chunks))
    return out


def scores(gold: Sequence[Layered], pos: Sequence[Sequence[str]],
           chunks: Sequence[Sequence[str]]) -> dict[str, float]:
    """POS accuracy, chunk-tag accuracy and conlleval chunk F1, in percent."""
    from ..evaluate import evaluate
    n = sum(len(g.pos) for g in gold)
    pos_ok = sum(a == b for g, p in zip(gold, pos) for a, b in zip(g.pos, p))
    rep = evaluate([g.chunks for g in gold], chunks)
    return {"pos_accuracy": 100.0 * pos_ok / n, "np_accuracy": rep.accuracy,
            "np_f1": rep.overall.f}


KIND_TEMPLATES = {"joint": JOINT_TEMPLATES, "tagger": TAGGER_TEMPLATES,
                  "chunker": CHUNKER_TEMPLATES}


def model_for(data: Sequence[Layered], kind: str = "joint", settings: dict | None = None
              ) -> tuple[JointModel, list[Encoded]]:
    """A model and its encoded training data.  ``joint``: chunk types + O over the
    POS labels; ``tagger``: the POS layer alone; ``chunker``: the chunk tags as
    the label layer of a linear chain, with the POS column as observations."""
    if kind not in KIND_TEMPLATES:
        raise ValueError(f"unknown model kind {kind!r} ({', '.join(KIND_TEMPLATES)})")
    cols = [_columns(kind, d) for d in data]
    if kind == "joint":
        types = sorted({t for d in data for t, _, _ in enc.tags_to_chunks(d.chunks, "IOB2",
                                                                            strict=False)})
        chunk_labels, labels = types + ["O"], sorted({t for d in data for t in d.pos})
    elif kind == "tagger":
        chunk_labels, labels = ["O"], sorted({t for d in data for t in d.pos})
    else:
        chunk_labels, labels = ["O"], sorted({t for d in data for t in d.chunks})
    model = JointModel.build(cols, chunk_labels, labels, KIND_TEMPLATES[kind],
                             dict(settings or {}, kind=kind))
    return model, [encode(model, d, cols_) for d, cols_ in zip(data, cols)]


def _columns(kind: str, d: Layered) -> dict:
    return JointModel.columns(d.sentence.column(0), d.pos if kind == "chunker" else None)


def encode(model: JointModel, d: Layered, cols: dict | None = None, gold: bool = True
           ) -> Encoded:
    """Encode one sentence for ``model`` (a chunker reads ``d.pos`` as input),
    with its gold structure if ``gold``."""
    kind = model.settings.get("kind", "joint")
    if cols is None:
        cols = _columns(kind, d)
    where = d.sentence.where(0)
    if not gold:
        return model.encode(cols, where=where)
    if kind == "joint":
        return model.encode(cols, d.pos, d.chunks, where)
    labels = d.pos if kind == "tagger" else d.chunks
    known = [t if t in model.pos_labels else model.pos_labels[0] for t in labels]
    return model.encode(cols, known, ["O"] * len(labels), where)


def predict(model: JointModel, data: Sequence[Layered], decoder: str = "map",
            beta: float = 1.0) -> tuple[list[list[str]], list[list[str]]]:
    """Predicted (POS, chunk) tags of each sentence; a tagger predicts POS only
    (chunks copied from the input), a chunker chunk tags only.  ``decoder="meu"``
    decodes the joint model's chunk layer by exact MEU (POS from Viterbi)."""
    from ..decode import decode_meu
    kind = model.settings.get("kind", "joint")
    pos_out, chunk_out = [], []
    for d in data:
        x = encode(model, d, gold=False)
        y, _ = model.decode(x)
        labels, chunk = model.tags(y)
        if kind == "tagger":
            labels, chunk = labels, list(d.chunks)
        elif kind == "chunker":
            labels, chunk = list(d.pos), labels
        if decoder == "meu":
            if kind != "joint":
                raise ValueError("MEU decoding needs the joint model's chunk layer")
            chunk = decode_meu(model.chunk_lattice(x), beta=beta).tags
        elif decoder != "map":
            raise ValueError(f"unknown decoder {decoder!r} (map, meu)")
        pos_out.append(labels)
        chunk_out.append(chunk)
    return pos_out, chunk_out
