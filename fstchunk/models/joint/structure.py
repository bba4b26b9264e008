"""Label-chunk structures and their parts (Shimizu & Haas 2006, §2, Table 2).

A structure y of an n-token sentence is a segmentation into segments [q, e), each
with a chunk label C (a chunk type, or ``O`` for material outside chunks), and a
POS label P_r for every token.  Its parts are

    POS node         ⟨C, P, r⟩            token r has POS P inside a segment labelled C
    POS transition   ⟨C, P′, P, r−1, r⟩   r−1 and r in the same segment
    chunk node       ⟨C, q, r⟩            a segment labelled C spans q..r
    chunk transition ⟨C′, C, q−1, q⟩      a C′ segment ends at q−1, a C segment starts at q

and score(x, y) = Σ_parts w·f(x, part).  This module holds the structures, their
one-hot part indicators, the score of a structure given part scores, and the
brute-force enumerator that the tests use as an oracle.

Pitfalls:

* ``O`` segments are maximal (an O→O chunk transition is forbidden), so that a
  structure and its (POS tags, IOB2 chunk tags) are one-to-one; the paper's
  Table 2 reads gold structures this way, and without the rule the sum over
  structures would count ``O O`` twice.  :func:`all_structures` skips them; part
  scores carry −inf there.
* The chunk node ⟨C, q, r⟩ is stored as two halves, ``start[q, C]`` and
  ``end[r, C]`` (its features x_q, x_{q−1}, x_r, x_{r+1} of Table 6 split that
  way); ``trans[0]`` and ``ctrans[0]`` are unused.
* No part links POS tags across a segment boundary (the paper's model).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from ...engine.chain import logsumexp
from ...structures.enumeration import LIMIT, check_size

KINDS = ("node", "trans", "start", "end", "ctrans")


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

    @classmethod
    def zeros(cls, n: int, c: int, p: int) -> "Parts":
        """All parts of an n-token sentence with c chunk and p POS labels, zero."""
        return cls(np.zeros((n, c, p)), np.zeros((n, c, p, p)), np.zeros((n, c)),
                   np.zeros((n, c)), np.zeros((n, c, c)))

    def enumerate(self, outside: int, limit: int = LIMIT) -> Iterator[tuple["Structure", float]]:
        """Every structure y of non-zero weight (O→O excluded; ``outside`` the O
        label) with log Pr(y) = score(y) − log Z, score by :func:`structure_score`:
        the oracle of :mod:`.dp` and :mod:`.machine` for small sentences.
        InputError above ``limit`` structures."""
        ys, sc = scored_structures(self, outside, limit)
        logz = float(logsumexp(sc)) if len(sc) else -np.inf
        return ((y, float(s - logz)) for y, s in zip(ys, sc) if s > -np.inf)

    def scaled(self, factor: float) -> "Parts":
        """Every part score times ``factor`` > 0 (−inf stays −inf): the scores
        score/T of the tempered distribution p(y|x) ∝ exp(score(y)/T), factor = 1/T."""
        if factor == 1.0:
            return self
        return Parts(*(getattr(self, k) * factor for k in KINDS))


@dataclass(frozen=True)
class Structure:
    """A label-chunk structure: POS label indices and segments (C, q, e), e exclusive."""
    pos: tuple[int, ...]
    segments: tuple[tuple[int, int, int], ...]


def structure_parts(y: Structure, c: int, p: int) -> Parts:
    """The one-hot part indicator of a structure (its f, before lexicalisation)."""
    out = Parts.zeros(len(y.pos), c, p)
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


def all_structures(n: int, c: int, p: int, outside: int) -> Iterator[Structure]:
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


def structure_count(n: int, c: int, p: int, outside: int) -> float:
    """How many structures :func:`all_structures` lists: p^n times the labelled
    segmentations with no two adjacent O segments (a DP over the last segment's end)."""
    inner, out = np.zeros(n + 1), np.zeros(n + 1)  # ending at e in a non-O / O segment
    for e in range(1, n + 1):
        before = 1.0 + (inner[1:e] + out[1:e]).sum()             # the start, or any end q
        inner[e] = (c - (0 <= outside < c)) * before
        out[e] = (0 <= outside < c) * (1.0 + inner[1:e].sum())
    return float(p) ** n * (inner[n] + out[n])


def scored_structures(parts: Parts, outside: int, limit: int = LIMIT
                      ) -> tuple[list[Structure], np.ndarray]:
    """Every structure of ``parts``'s sentence and its score (−inf included):
    :func:`all_structures` and :func:`structure_score`, the size checked first."""
    n, c, p = parts.shape
    check_size(structure_count(n, c, p, outside), limit,
               f"the structures of {n} tokens, {c} chunk and {p} POS labels", "structures")
    ys = list(all_structures(n, c, p, outside))
    return ys, np.array([structure_score(parts, y) for y in ys])


def chunk_tag_names(chunk_labels: Sequence[str], outside: int) -> list[list[str]]:
    """[s][C]: the IOB2 tag of a token in a C segment; s = 1 for the segment's first token."""
    out: list[list[str]] = [[], []]
    for C, name in enumerate(chunk_labels):
        for s, prefix in ((0, "I-"), (1, "B-")):
            out[s].append("O" if C == outside else prefix + name)
    return out
