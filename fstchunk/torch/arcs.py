"""The column space of the real-space expected-F DP (issue 21): each tag split by the
kind of arc that entered it.

A scheme's arcs are of two kinds (:class:`~fstchunk.schemes.tagspace.TagSpace` ``cont``): a
continuation arc keeps the open chunk; any other arc closes it (if one is open) and
opens a new chunk (into a chunk tag) or enters O.  The expected-F DP of
:mod:`fstchunk.torch.tilted` must know which kind a path took into its tag: an
opening is tilted by the node's z, a continuation keeps the match flag, and only a
closing arc completes a true positive.  So its states are indexed by **columns**
(tag, kind): the tags some continuation arc enters (kind 0) and the tags some other
arc or the sentence start enters (kind 1).  In IOB2, IOBES and BILOU every tag is
entered by one kind only (I-X by continuations; B-X, S-X and O by the rest), and the
columns are the tags; in IOB1, IOE1 and IOE2, I-X (and E-X) are entered by both and
have two columns.  One transfer matrix over columns,

    M[(i, ·), (j, κ)] = exp(K[i, j] − κ_max)   if an arc of kind κ leads from i to j,

carries every part of the DP with one product per token (over tags it would take
two, the continuation arcs and the others apart).

The continuation columns come first, so "the continuation columns" and "the
others" are slices.  The gold enters through :class:`GoldCols`: per token, where an
opening (a kind-1 column of a chunk tag) matches a gold start, and whether a gold
chunk ended at the token before (a continuation then loses the match, a closing arc
completes a true positive).

Pitfalls: a column's emission and end factors are its tag's, its start factor its
tag's on kind 1 only; gradients are folded back onto tags (:attr:`Arcs.fold`), a tag
with two columns summing both; tags that no arc and no start enter have no column (no
path reaches them, their gradients are 0).  The column axis is not padded: with the
states laid out (column, row, sentence) the product is (W, W) @ (W, rows) and a padded
width bought nothing (benchmarks/RESULTS.md, the torch section's ablation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .checks import Gold
from .semiring import NEG


class Arcs:
    """The columns of a :class:`~fstchunk.torch.crf.ChunkCRF` on one device (module
    doc): the continuation columns first (``Cc`` of them), then the others, ``W`` in
    all, the openings (kind 1, chunk tag) last, from ``Co`` on; ``tag`` (W,) each
    column's tag, ``opening`` (W,) 1 on the openings, ``start`` (W,) 1 on the kind-1
    columns of tags that may start, ``allowed`` (W, W) the arcs between columns."""

    def __init__(self, crf, device):
        np_ = crf._np
        L = len(crf.tags)
        into_c = np_["cont"].any(0)
        into_n = np_["non"].any(0) | np_["start"]
        chunk = crf.type_index >= 0
        # the other columns: non-chunk tags (O), then chunk tags, whose kind-1 columns
        # are the openings, a block [Co, W)
        tag = np.r_[np.flatnonzero(into_c), np.flatnonzero(into_n & ~chunk),
                    np.flatnonzero(into_n & chunk)].astype(np.int64)
        kind = np.r_[np.zeros(int(into_c.sum()), int), np.ones(int(into_n.sum()), int)]
        C = len(tag)
        self.W, self.Cc, self.L = C, int(into_c.sum()), L
        self.Co = C - int((into_n & chunk).sum())
        f64 = dict(dtype=torch.float64, device=device)
        self.tag = torch.as_tensor(tag, device=device)
        self.opening = torch.as_tensor((kind == 1) & (crf.type_index[tag] >= 0), **f64)
        self.start = torch.as_tensor((kind == 1) & np_["start"][tag], **f64)
        fold = np.zeros((C, L))
        fold[np.arange(C), tag] = 1.0
        self.fold = torch.as_tensor(fold, **f64)
        # the arcs between columns: a column's row is its tag's
        ok = np.stack([np_["cont"], np_["non"]])                   # (2, L, L)
        self.allowed = torch.as_tensor(ok[kind[None, :], tag[:, None], tag[None, :]],
                                       device=device)
        self._start0 = (kind == 1) & np_["start"][tag]
        self._reach: dict[int, tuple[torch.Tensor, int]] = {}

    @staticmethod
    def of(crf, device) -> "Arcs":
        key = ("arcs", str(device))
        if key not in crf._cache:
            crf._cache[key] = Arcs(crf, device)
        return crf._cache[key]

    def columns(self, x: torch.Tensor) -> torch.Tensor:
        """x (..., L) on the columns (..., W): each column its tag's entry."""
        return x[..., self.tag]

    def matrix(self, tr: torch.Tensor) -> torch.Tensor:
        """M (W, W) = exp(K − max) on the allowed column arcs, 0 elsewhere (module doc);
        ``tr`` (L, L) is unmasked (the scheme's forbidden arcs get no entry)."""
        K = tr[self.tag][:, self.tag]
        kap = torch.where(self.allowed, K, torch.full_like(K, NEG)).amax()
        return torch.where(self.allowed, torch.exp(K - kap), torch.zeros_like(K))

    def tags(self, g: torch.Tensor, dim: int = -1) -> torch.Tensor:
        """A gradient over columns (along ``dim``, W) summed onto the tags (L)."""
        shape = list(g.shape)
        shape[dim] = self.L
        return g.new_zeros(shape).index_add_(dim, self.tag, g)

    def pair_tags(self, g: torch.Tensor) -> torch.Tensor:
        """A gradient over column pairs (W, W) summed onto tag pairs (L, L)."""
        return self.fold.T @ g @ self.fold

    def reachable(self, n: int) -> tuple[torch.Tensor, int]:
        """(n, W) bool: the columns some valid prefix reaches at token u (the start's
        columns, then the allowed column arcs; the same for every sentence), and the
        first token from which every column is reachable (n if none); cached
        per length."""
        if n not in self._reach:
            ok = self.allowed.cpu().numpy().astype(np.float32)
            out = np.zeros((n, self.W), bool)
            out[0] = self._start0
            for u in range(1, n):
                out[u] = out[u - 1].astype(np.float32) @ ok > 0
            full = out.all(1)
            steady = n
            while steady > 0 and full[steady - 1]:
                steady -= 1
            self._reach[n] = (torch.as_tensor(out, device=self.allowed.device), steady)
        return self._reach[n]


@dataclass
class GoldCols:
    """The gold on the columns, token-major, for states laid out (column, row,
    sentence) (:mod:`fstchunk.torch.recursion`; module doc): ``match`` (n, W − Cc, 1,
    B) 1 on the other (kind-1) columns of the type of a gold chunk starting at u;
    ``ended`` (n, 1, 1, B): a gold chunk ended at u − 1 (a matched chunk that closes
    there is a true positive; a continuation loses the match); ``last_end`` (1, 1, B)
    whether a gold chunk ends at each sentence's last token."""
    match: torch.Tensor
    ended: torch.Tensor
    last_end: torch.Tensor


def gold_columns(arcs: Arcs, g: Gold, lengths: torch.Tensor, out: torch.Tensor) -> GoldCols:
    """:class:`GoldCols` of a batch's gold, vectorised; ``match`` written into ``out``
    (n·(W − Cc)·B float64)."""
    B, n = g.last.shape
    Cc, W = arcs.Cc, arcs.W
    match = out.view(n, W - Cc, 1, B)
    match.copy_(torch.index_select(g.match.permute(1, 2, 0), 1, arcs.tag[Cc:]).unsqueeze(2))
    ended = torch.zeros((n, 1, 1, B), dtype=torch.float64, device=g.last.device)
    ended[1:] = g.last.T[:-1].double().view(n - 1, 1, 1, B)
    last_end = g.last.gather(1, (lengths - 1).view(B, 1)).double().view(1, 1, B)
    return GoldCols(match, ended, last_end)
