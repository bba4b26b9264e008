"""A first-order linear-chain CRF over a chunk scheme's valid tag sequences.

    score(y | x) = start[y_1] + Σ_i w·φ(x, i, y_i) + Σ_i trans[y_{i-1}, y_i] + end[y_n]
    Pr(y | x) = exp(score) / Z(x),   Z over the *valid* sequences of the scheme

(Lafferty et al. 2001; the validity restriction is the scheme's acceptor,
:class:`fstchunk.tagspace.TagSpace`).  State weights exist only for
(attribute, label) pairs seen in training (as in CRFsuite), so the parameter
vector θ = (state weights, trans, start, end) stays small.

The estimator is apart from the training loop (sklearn-crfsuite style):
:meth:`CRF.prepare` builds a fresh model and its :class:`TrainingData`,
:meth:`CRF.objective` is objective ``ml``, ``meu`` or ``meu-corpus``
(:mod:`fstchunk.models.objectives`) as a function of θ, with the chain rule
∇W = Xᵀ·∇E and the penalty λ‖θ‖², and :meth:`CRF.fit` hands both to
:class:`fstchunk.training.Trainer`, the one L-BFGS loop.

    crf, data = CRF.prepare(sentences, "tmpt3", scheme="IOB2")
    crf.fit(data, objective="ml", l2=0.01)          # or Trainer(...).fit(crf, data)
    crf.lattices(test_sentences)

Pitfalls:

* a sentence's lattice for decoding is :meth:`CRF.lattices` over many sentences
  (one feature transform, one product); the dense weight matrix is cached for
  the last θ, since rebuilding it per sentence (180 MB for CoNLL-2000) made
  decoding a file take minutes;
* the model's tags are those seen in training: data for ``--init`` training
  with an unseen tag is refused (:class:`~fstchunk.errors.SchemeError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Sequence

import numpy as np
import scipy.sparse as sp

from .. import encodings as enc
from ..conll import Sentence
from ..errors import InputError, ModelFileError, SchemeError
from ..lattice import Lattice
from ..tagspace import TagSet
from ..training import Trainer
from .base import Objective, gold_tags
from .features import FeatureMap
from .io import load_model_file, save_model
from .objectives import OBJECTIVES, Chain, ChainGrad, Gold


@dataclass
class TrainingData:
    """A training set prepared for one CRF: token features X (tokens x features) and
    the gold tag indices."""
    X: sp.csr_matrix
    gold: Gold

    @cached_property
    def XT(self) -> sp.csr_matrix:
        """Xᵀ as CSR, for the chain rule ∇W = Xᵀ·∇E (built once)."""
        return self.X.T.tocsr()


class CRF:
    """Linear-chain CRF; see the module doc."""

    kind: ClassVar[str] = "crf"

    def __init__(self, fmap: FeatureMap, tags: Sequence[str], scheme: str, pairs: np.ndarray,
                 theta: np.ndarray | None = None, settings: dict | None = None):
        self.fmap, self.tags, self.scheme = fmap, tuple(tags), enc.canonical_scheme(scheme)
        self.L = len(self.tags)
        self.pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)   # (feature, label)
        self.P = len(self.pairs)
        size = self.P + self.L * self.L + 2 * self.L
        self.theta = np.zeros(size) if theta is None else np.asarray(theta, dtype=float)
        if self.theta.shape != (size,):
            raise InputError(f"{self.theta.size} parameters do not fit {self.P} state "
                             f"weights and {self.L} tags")
        self.settings = dict(settings or {})
        self._w_cache: tuple[int, np.ndarray] | None = None

    # --------------------------------------------------------------- parameters
    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(trans, start, end) of θ; the state weights are :meth:`emissions`'."""
        P, L = self.P, self.L
        return (theta[P:P + L * L].reshape(L, L), theta[P + L * L:P + L * L + L],
                theta[P + L * L + L:])

    def _dense_w(self, theta: np.ndarray) -> np.ndarray:
        """The state weights as a dense feature x tag matrix, cached for the last θ."""
        key = hash(theta.tobytes())
        if self._w_cache is not None and self._w_cache[0] == key:
            return self._w_cache[1]
        W = np.zeros((len(self.fmap), self.L))
        W[self.pairs[:, 0], self.pairs[:, 1]] = theta[:self.P]
        self._w_cache = (key, W)
        return W

    def emissions(self, X: sp.csr_matrix, theta: np.ndarray | None = None) -> np.ndarray:
        """X·W for the token rows of X."""
        return X @ self._dense_w(self.theta if theta is None else theta)

    def chain(self, theta: np.ndarray, X: sp.csr_matrix) -> Chain:
        """The score arrays of the tokens of X under θ."""
        return Chain(self.tags, self.scheme, self.emissions(X, theta), *self.unpack(theta))

    def lattice(self, sentence: Sentence) -> Lattice:
        return self.lattices([sentence])[0]

    def lattices(self, sentences: Sequence[Sentence]) -> list[Lattice]:
        """One lattice per sentence, with one feature transform and one product."""
        ch = self.chain(self.theta, self.fmap.transform(sentences))
        out, k = [], 0
        for s in sentences:
            out.append(ch.lattice(k, k + len(s)))
            k += len(s)
        return out

    # --------------------------------------------------------------- training data
    @classmethod
    def prepare(cls, sentences: Sequence[Sentence], template: str = "tmpt3",
                scheme: str = "IOB2", data_scheme: str = "IOB2",
                min_count: int = 1) -> tuple["CRF", TrainingData]:
        """A fresh CRF for ``sentences`` (feature map fitted with ``min_count``, the
        tags seen, the observed (attribute, tag) pairs, θ = 0) and its training data."""
        scheme = enc.canonical_scheme(scheme)
        gold = [gold_tags(s, data_scheme, scheme) for s in sentences]
        fmap = FeatureMap.fit(sentences, template, min_count)
        tags = TagSet.from_tags({t for g in gold for t in g}, scheme).tags
        data = _training_data(fmap, tags, scheme, sentences, gold)
        pairs = cls.observed_pairs(data.X, data.gold.sequences, len(tags))
        return cls(fmap, tags, scheme, pairs), data

    def training_data(self, train: Sequence[Sentence] | TrainingData,
                      data_scheme: str = "IOB2") -> TrainingData:
        """The training data of ``train`` (sentences whose last column holds tags in
        ``data_scheme``) under this model's feature map and tags; prepared data
        pass through unchanged."""
        if isinstance(train, TrainingData):
            return train
        return _training_data(self.fmap, self.tags, self.scheme, train,
                              [gold_tags(s, data_scheme, self.scheme) for s in train])

    @staticmethod
    def observed_pairs(X: sp.csr_matrix, gold: Sequence[np.ndarray], L: int) -> np.ndarray:
        """The (feature, tag) pairs that occur in the training data, (P, 2)."""
        y = np.concatenate(gold)
        Y = sp.csr_matrix((np.ones(len(y)), (np.arange(len(y)), y)), shape=(len(y), L))
        M = (X.T @ Y).tocoo()
        return np.stack([M.row, M.col], axis=1).astype(np.int64)

    # --------------------------------------------------------------- objectives
    def objective(self, name: str, data: TrainingData, l2: float, beta: float = 1.0
                  ) -> Objective:
        """θ -> (value, gradient) of objective ``name`` of
        :data:`~fstchunk.models.objectives.OBJECTIVES` (minimised: the negated
        log-likelihood or expected F) plus l2·‖θ‖²."""
        if name not in OBJECTIVES:
            raise InputError(f"unknown objective {name!r}; use one of {', '.join(OBJECTIVES)}")
        fun = OBJECTIVES[name]

        def value_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
            value, g = fun(self.chain(theta, data.X), data.gold, beta)
            return (value + l2 * float(theta @ theta),
                    self._chain_rule(data, g) + 2 * l2 * theta)

        return value_and_grad

    def _chain_rule(self, data: TrainingData, g: ChainGrad) -> np.ndarray:
        """∇θ from the gradient with respect to the score arrays: Xᵀ·∇E at the pairs."""
        gW = np.asarray(data.XT @ g.emissions)               # (F, L) dense
        return np.concatenate([gW[self.pairs[:, 0], self.pairs[:, 1]], g.trans.ravel(),
                               g.start, g.end])

    # --------------------------------------------------------------- training
    def fit(self, train: Sequence[Sentence] | TrainingData, objective: str = "ml",
            l2: float = 1.0, beta: float = 1.0, max_iter: int = 100, **options: Any) -> "CRF":
        """Optimise θ from its current value by :class:`fstchunk.training.Trainer`
        (``options``: its other arguments; no progress bar unless asked); ``self``."""
        options.setdefault("progress", False)
        return Trainer(objective=objective, l2=l2, beta=beta, max_iter=max_iter,
                       **options).fit(self, train)

    # --------------------------------------------------------------- files
    def save(self, path) -> None:
        arrays = dict(self.fmap.to_arrays(), theta=self.theta, pairs=self.pairs)
        save_model(path, "crf", arrays, {
            "tags": list(self.tags), "scheme": self.scheme, "template": self.fmap.template,
            "word_col": self.fmap.word_col, "pos_col": self.fmap.pos_col,
            "settings": self.settings})

    @classmethod
    def load(cls, path) -> "CRF":
        meta, a = load_model_file(path, "crf")
        try:
            fmap = FeatureMap.from_arrays(a, meta)
            m = cls(fmap, meta["tags"], meta["scheme"], a["pairs"], a["theta"],
                    meta.get("settings"))
        except (KeyError, UnicodeDecodeError, ValueError) as e:
            raise ModelFileError(f"{path}: corrupt CRF model file ({e})") from None
        if m.P and m.pairs[:, 0].max() >= len(fmap):
            raise ModelFileError(f"{path}: feature index out of range of the feature map")
        return m


def _training_data(fmap: FeatureMap, tags: tuple[str, ...], scheme: str,
                   sentences: Sequence[Sentence], gold: list[list[str]]) -> TrainingData:
    """X of the sentences under ``fmap`` and their gold tags (in ``scheme``) as indices."""
    ix = {t: i for i, t in enumerate(tags)}
    seqs = []
    for s, g in zip(sentences, gold):
        bad = [t for t in g if t not in ix]
        if bad:
            raise SchemeError(f"{s.where(0)}: tag {bad[0]!r} is not among the model's tags")
        seqs.append(np.array([ix[t] for t in g], dtype=np.int64))
    return TrainingData(fmap.transform(sentences), Gold(seqs, tags, scheme))
