"""Part scores of the joint model: observations, vocabularies, one weight vector.

Part scores are Σ over templates of W_t[obs_t(x, anchor)]: each template is a
tuple of (column, offset) pairs read from the observation columns (words ``w``,
token shapes ``t`` of Table 5, given POS ``p``), the lexicalisations of
Shimizu & Haas (2006), Table 6; the unlexicalised template () is the part
itself.  :class:`PartScorer` holds the vocabularies and the flat weight vector,
encodes sentences (:class:`Encoded`), reads gold structures from (POS, IOB2)
tags and back, and gives a sentence's :class:`~.structure.Parts` and the
sparse feature vector Σ value·f(x, part); :class:`~.model.JointModel` adds
decoding, training and files on top.

Pitfalls:

* Observation id 0 is kept for observations unseen in training; the weight
  layout (template order, vocabulary order) is the model file's format.
* ``trans[0]`` and ``ctrans[0]`` are zeroed and O→O is −inf in every score
  (O segments are maximal), so structures and tag pairs are one-to-one.
* Unknown POS labels or chunk types in gold tags, and invalid IOB2 sequences,
  raise :class:`~fstchunk.core.errors.SchemeError` naming where and which token.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ...core.errors import InputError, SchemeError
from ...schemes import encodings as enc
from ..features import capital_class
from .structure import KINDS, Parts, Structure, chunk_tag_names


class Encoded:
    """One sentence's observation ids per template (0 = unseen) and its gold structure."""

    def __init__(self, ids: list[np.ndarray], n: int, gold: Structure | None):
        self.ids, self.n, self.gold = ids, n, gold


class PartScorer:
    """Templates, vocabularies and one flat weight vector: a sentence's part scores.

    ``chunk_labels`` are the segment labels (chunk types and ``"O"``); ``pos_labels``
    the token labels.  Parts' scores are Σ over templates of W_t[obs_t(x, anchor)],
    W_t of shape (V_t, *out) where out is (c, p), (c, p, p), (c,), (c,) or (c, c)."""

    def __init__(self, chunk_labels: Sequence[str], pos_labels: Sequence[str],
                 templates: dict[str, list[tuple]], vocabs: list[dict[str, int]],
                 w: np.ndarray | None = None, settings: dict | None = None):
        self.chunk_labels = tuple(chunk_labels)
        self.pos_labels = tuple(pos_labels)
        if "O" not in self.chunk_labels:
            raise InputError(f"the chunk labels must include 'O' (got "
                             f"{', '.join(self.chunk_labels) or 'none'})")
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
            raise InputError(f"weight vector has shape {self.w.shape}, expected {(size,)}")
        self.lexical = np.zeros(size, dtype=bool)        # the first-iteration trick's mask
        for i, (k, t) in enumerate(self.flat):
            if t:
                self.lexical[self.offsets[i]:self._end(i)] = True
        self.settings = settings or {}
        tags = chunk_tag_names(self.chunk_labels, self.outside)
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
    def build(cls, cols_list: Sequence[dict], chunk_labels: Sequence[str],
              pos_labels: Sequence[str], templates: dict[str, list[tuple]],
              settings: dict | None = None) -> "PartScorer":
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
        """Observation ids of one sentence's columns, with its gold structure if
        ``pos`` and ``chunks`` are given."""
        n = len(cols["w"])
        if n == 0:
            raise InputError(f"{where}: empty sentence")
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
                raise SchemeError(f"{where}: token {i + 1}: unknown POS label {t!r} "
                                  f"(the model has {', '.join(self.pos_labels)})")
            pidx.append(self.pos_labels.index(t))
        try:
            chunks = enc.tags_to_chunks(list(chunk_tags), "IOB2")
        except SchemeError as e:
            head, sep, reason = str(e).partition(": ")
            if e.position is None or not (sep and head.startswith("position ")):
                raise SchemeError(f"{where}: {e}", e.position) from None
            raise SchemeError(f"{where}: token {e.position + 1}: {reason}", e.position) from None
        segs, i = [], 0
        for typ, q, e in chunks:
            if typ not in self.chunk_labels or typ == "O":
                raise SchemeError(f"{where}: token {q + 1}: unknown chunk type {typ!r}")
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


class Size:
    """A vocabulary's size without its strings (:meth:`JointModel.scoring_copy`)."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n
