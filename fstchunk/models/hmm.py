"""A first-order HMM chunker estimated by counting (relative frequencies, add-δ).

    Pr(w, x) = Π_i Pr(x_i | x_{i-1}) · Pr(pos_i | x_i) · Pr(word_i | x_i) · Pr(END | x_n)

Each token emits its POS tag and its (lower-cased) word; words seen fewer than
``min_count`` times are replaced by their shape class (``Xx``, ``d.d``, ...), so
unknown words at test time share the rare words' statistics.  The emission
factorisation (POS and word independent given the tag) is a naive-Bayes
simplification: a baseline, and the model the decoders are compared on before
the CRF.  Its lattice for a sentence is :meth:`HMM.lattice`; the same model as a
tags -> words transducer is :func:`fstchunk.grammars.models.hmm_transducer`.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from .. import encodings as enc
from ..conll import Sentence
from ..lattice import Lattice
from .io import load_model_file, save_model
from ..tagspace import TagSet
from .features import word_shape

UNKNOWN = "<unk>"


class HMM:
    """Counting HMM over a chunk scheme's tags; see the module doc."""

    def __init__(self, tags, scheme, vocab, pos_vocab, log_start, log_trans, log_end,
                 log_word, log_pos, settings):
        self.tags, self.scheme = tuple(tags), scheme
        self.vocab = {w: i for i, w in enumerate(vocab)}
        self.pos_vocab = {p: i for i, p in enumerate(pos_vocab)}
        self.log_start, self.log_trans, self.log_end = log_start, log_trans, log_end
        self.log_word, self.log_pos = log_word, log_pos
        self.settings = settings

    @classmethod
    def fit(cls, sentences: Sequence[Sentence], scheme: str = "IOB2", delta: float = 0.1,
            min_count: int = 2, word_col: int = 0, pos_col: int = 1, tag_col: int = -1,
            data_scheme: str = "IOB2") -> "HMM":
        scheme = enc.canonical_scheme(scheme)
        seqs = []
        for s in sentences:
            try:
                tags = enc.convert(s.column(tag_col), data_scheme, scheme)
            except ValueError as e:
                raise ValueError(f"{s.where(0)}: {e}") from None
            seqs.append((s.column(word_col), s.column(pos_col), tags))
        tags = TagSet.from_tags({t for _, _, ts in seqs for t in ts}, scheme).tags
        ix = {t: i for i, t in enumerate(tags)}
        L = len(tags)
        counts = Counter(w.lower() for ws, _, _ in seqs for w in ws)
        vocab = sorted(w for w, c in counts.items() if c >= min_count)
        vocab += sorted({UNKNOWN + word_shape(w) for ws, _, _ in seqs for w in ws
                         if counts[w.lower()] < min_count})
        vocab.append(UNKNOWN)
        vix = {w: i for i, w in enumerate(vocab)}
        pos_vocab = sorted({p for _, ps, _ in seqs for p in ps}) + [UNKNOWN]
        pix = {p: i for i, p in enumerate(pos_vocab)}
        start, end = np.full(L, delta), np.full(L, delta)
        trans = np.full((L, L), delta)
        word = np.full((L, len(vocab)), delta)
        pos = np.full((L, len(pos_vocab)), delta)
        for ws, ps, ts in seqs:
            t = [ix[x] for x in ts]
            start[t[0]] += 1
            end[t[-1]] += 1
            for a, b in zip(t, t[1:]):
                trans[a, b] += 1
            for w, p, x in zip(ws, ps, t):
                lw = w.lower()
                key = lw if counts[lw] >= min_count else UNKNOWN + word_shape(w)
                word[x, vix[key]] += 1
                pos[x, pix[p]] += 1
        trans_end = np.concatenate([trans, end[:, None]], axis=1)
        log_te = np.log(trans_end / trans_end.sum(axis=1, keepdims=True))
        return cls(tags, scheme, vocab, pos_vocab, np.log(start / start.sum()),
                   log_te[:, :L], log_te[:, L], np.log(word / word.sum(axis=1, keepdims=True)),
                   np.log(pos / pos.sum(axis=1, keepdims=True)),
                   {"delta": delta, "min_count": min_count, "word_col": word_col,
                    "pos_col": pos_col, "sentences": len(seqs)})

    def _word_index(self, w: str) -> int:
        lw = w.lower()
        if lw in self.vocab:
            return self.vocab[lw]
        return self.vocab.get(UNKNOWN + word_shape(w), self.vocab[UNKNOWN])

    def emissions(self, sentence: Sentence) -> np.ndarray:
        wc, pc = self.settings["word_col"], self.settings["pos_col"]
        if len(sentence.rows[0]) <= max(wc, pc):
            raise ValueError(f"{sentence.where(0)}: the HMM reads columns {wc} (word) and "
                             f"{pc} (POS), but the line has {len(sentence.rows[0])} columns")
        w = [self._word_index(x) for x in sentence.column(wc)]
        p = [self.pos_vocab.get(x, self.pos_vocab[UNKNOWN]) for x in sentence.column(pc)]
        return (self.log_word[:, w] + self.log_pos[:, p]).T

    def lattice(self, sentence: Sentence) -> Lattice:
        """Pr(x | w) as a lattice (the joint Pr(w, x), renormalised over valid x)."""
        return Lattice.from_scores(self.tags, self.emissions(sentence), self.log_trans,
                                   self.log_start, self.log_end, scheme=self.scheme)


    def lattices(self, sentences: Sequence[Sentence]) -> list[Lattice]:
        """One lattice per sentence (the model protocol)."""
        return [self.lattice(s) for s in sentences]
    def save(self, path) -> None:
        inv = sorted(self.vocab, key=self.vocab.get)
        pinv = sorted(self.pos_vocab, key=self.pos_vocab.get)
        save_model(path, "hmm", {
            "vocab": np.array(inv, dtype=str), "pos_vocab": np.array(pinv, dtype=str),
            "log_start": self.log_start, "log_trans": self.log_trans, "log_end": self.log_end,
            "log_word": self.log_word, "log_pos": self.log_pos},
            {"tags": list(self.tags), "scheme": self.scheme, "settings": self.settings})

    @classmethod
    def load(cls, path) -> "HMM":
        meta, a = load_model_file(path, "hmm")
        try:
            m = cls(meta["tags"], meta["scheme"], a["vocab"].tolist(), a["pos_vocab"].tolist(),
                    a["log_start"], a["log_trans"], a["log_end"], a["log_word"], a["log_pos"],
                    meta["settings"])
        except KeyError as e:
            raise ValueError(f"{path}: model file lacks {e}") from None
        L = len(m.tags)
        if m.log_trans.shape != (L, L) or m.log_word.shape[0] != L:
            raise ValueError(f"{path}: array shapes do not match the {L} tags")
        return m
