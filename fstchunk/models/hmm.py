"""A first-order HMM chunker estimated by counting (relative frequencies, add-δ).

    Pr(w, x) = Π_i Pr(x_i | x_{i-1}) · Pr(pos_i | x_i) · Pr(word_i | x_i) · Pr(END | x_n)

Each token emits its POS tag and its (lower-cased) word; words seen fewer than
``min_count`` times are replaced by their shape class (``Xx``, ``d.d``, ...), so
unknown words at test time share the rare words' statistics.  The emission
factorisation (POS and word independent given the tag) is a naive-Bayes
simplification: a baseline, and the model the decoders are compared on before
the CRF.  Its lattice for a sentence is :meth:`HMM.lattice`; the same model as a
tags -> words transducer is :func:`fstchunk.grammars.models.hmm_transducer`.

    HMM(scheme="IOB2", delta=0.1, min_count=2).fit(sentences).save("hmm.npz")

Pitfalls: the HMM has no iterative training (``fit`` counts once; it is no
:class:`~fstchunk.models.base.TrainableModel`); the model file stores the
hyper-parameters in ``settings`` and the format is the one older versions wrote,
so their files still load; an unfitted HMM has no tags and no lattices.
"""

from __future__ import annotations

from collections import Counter
from typing import ClassVar, Sequence

import numpy as np

from .. import encodings as enc
from ..conll import Sentence
from ..errors import InputError, ModelFileError
from ..lattice import Lattice
from ..tagspace import TagSet
from .base import gold_tags
from .features import word_shape
from .io import load_model_file, save_model

UNKNOWN = "<unk>"


class HMM:
    """Counting HMM over a chunk scheme's tags; see the module doc.

    ``HMM(scheme="IOB2", delta=0.1).fit(sentences)``: the constructor takes the
    hyper-parameters (add-δ smoothing, the rare-word threshold, the columns and
    the data's scheme), :meth:`fit` the counts."""

    kind: ClassVar[str] = "hmm"

    def __init__(self, scheme: str = "IOB2", delta: float = 0.1, min_count: int = 2,
                 word_col: int = 0, pos_col: int = 1, tag_col: int = -1,
                 data_scheme: str = "IOB2"):
        if not (isinstance(delta, (int, float)) and np.isfinite(delta) and delta > 0):
            raise InputError(f"delta must be a finite number > 0, got {delta!r}")
        if not (isinstance(min_count, int) and min_count >= 1):
            raise InputError(f"min_count must be an integer >= 1, got {min_count!r}")
        self.scheme = enc.canonical_scheme(scheme)
        self.tag_col, self.data_scheme = tag_col, data_scheme
        self.settings = {"delta": delta, "min_count": min_count, "word_col": word_col,
                         "pos_col": pos_col}
        self._set_parameters((), [UNKNOWN], [UNKNOWN], np.zeros(0), np.zeros((0, 0)),
                             np.zeros(0), np.zeros((0, 1)), np.zeros((0, 1)))

    def _set_parameters(self, tags, vocab, pos_vocab, log_start, log_trans, log_end,
                        log_word, log_pos) -> None:
        self.tags = tuple(tags)
        self.vocab = {w: i for i, w in enumerate(vocab)}
        self.pos_vocab = {p: i for i, p in enumerate(pos_vocab)}
        self.log_start, self.log_trans, self.log_end = log_start, log_trans, log_end
        self.log_word, self.log_pos = log_word, log_pos

    def fit(self, sentences: Sequence[Sentence]) -> "HMM":
        """Relative frequencies (add-δ) of the sentences' tags, words and POS; ``self``."""
        if not sentences:
            raise InputError("the HMM needs at least one training sentence")
        delta, min_count = self.settings["delta"], self.settings["min_count"]
        wc, pc = self.settings["word_col"], self.settings["pos_col"]
        seqs = [(s.column(wc), s.column(pc), gold_tags(s, self.data_scheme, self.scheme,
                                                        self.tag_col)) for s in sentences]
        tags = TagSet.from_tags({t for _, _, ts in seqs for t in ts}, self.scheme).tags
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
        self._set_parameters(tags, vocab, pos_vocab, np.log(start / start.sum()),
                             log_te[:, :L], log_te[:, L],
                             np.log(word / word.sum(axis=1, keepdims=True)),
                             np.log(pos / pos.sum(axis=1, keepdims=True)))
        self.settings["sentences"] = len(seqs)
        return self

    def _word_index(self, w: str) -> int:
        lw = w.lower()
        if lw in self.vocab:
            return self.vocab[lw]
        return self.vocab.get(UNKNOWN + word_shape(w), self.vocab[UNKNOWN])

    def emissions(self, sentence: Sentence) -> np.ndarray:
        wc, pc = self.settings["word_col"], self.settings["pos_col"]
        if len(sentence.rows[0]) <= max(wc, pc):
            raise InputError(f"{sentence.where(0)}: the HMM reads columns {wc} (word) and "
                             f"{pc} (POS), but the line has {len(sentence.rows[0])} columns")
        if not self.tags:
            raise InputError("the HMM is not fitted: call fit(sentences) or HMM.load(path)")
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
            settings = meta["settings"]
            m = cls(meta["scheme"], **{k: settings[k] for k in
                                       ("delta", "min_count", "word_col", "pos_col")})
            m._set_parameters(meta["tags"], a["vocab"].tolist(), a["pos_vocab"].tolist(),
                              a["log_start"], a["log_trans"], a["log_end"], a["log_word"],
                              a["log_pos"])
        except KeyError as e:
            raise ModelFileError(f"{path}: model file lacks {e}") from None
        except (TypeError, ValueError) as e:
            raise ModelFileError(f"{path}: corrupt HMM model file ({e})") from None
        m.settings = dict(settings)
        L = len(m.tags)
        if (m.log_trans.shape != (L, L) or m.log_word.shape != (L, len(m.vocab))
                or m.log_pos.shape != (L, len(m.pos_vocab))
                or m.log_start.shape != (L,) or m.log_end.shape != (L,)):
            raise ModelFileError(f"{path}: array shapes do not match the {L} tags")
        return m
