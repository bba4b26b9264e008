"""A first-order linear-chain CRF over a chunk scheme's valid tag sequences.

    score(y | x) = start[y_1] + Σ_i w·φ(x, i, y_i) + Σ_i trans[y_{i-1}, y_i] + end[y_n]
    Pr(y | x) = exp(score) / Z(x),   Z over the *valid* sequences of the scheme

State weights exist only for (attribute, label) pairs seen in training (as in
CRFsuite), so the parameter vector θ = (state weights, trans, start, end) stays
small.  Objectives (all maximised; the optimiser minimises their negation):

* ``ml``: Σ_i log Pr(y_i | x_i) − λ‖θ‖²;
* ``meu``: Σ_i E_{x~Pr(·|x_i)}[F_β(x | y_i)] − λ‖θ‖²  (Jansche §12, §20);
* ``meu-corpus``: (β+1) Σ_i E[tp_i] / (Σ_i m(y_i) + β Σ_i E[m(x_i)]) − λ‖θ‖², the
  expected-count form of the corpus F that conlleval reports.

Gradients: ML by forward-backward (E[φ] − φ(gold)); per-sentence MEU by
reverse-mode differentiation of the expectation-semiring recursion with the
reference-count dimension (:func:`fstchunk.fast.tp_count_table_grad`), per
sentence over processes; corpus MEU needs first-order expectations only, so
:func:`_corpus_batch` runs the expectation semiring batched over sentences of
one length like the ML objective (∇E[r] = E[r·φ] − E[r]·E[φ], r = tp or m).
All are checked by finite differences and against the machines in the tests.

Pitfall: the scores of a batch of sentences of equal length are processed
together; a sentence's lattice for decoding is :meth:`CRF.lattice`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import scipy.optimize
import scipy.sparse as sp

from .. import encodings as enc
from ..conll import Sentence
from ..engine.chain import scaled_forward_backward
from ..engine.expectation import corpus_expectations
from .features import FeatureMap
from ..lattice import Lattice, validity_masks
from .io import load_model_file, save_model
from ..tagspace import TagSet

OBJECTIVES = ("ml", "meu", "meu-corpus")


@dataclass
class Batch:
    """Sentences of one length: token rows of X, gold tag indices (B, n)."""
    n: int
    rows: np.ndarray            # (B, n) row indices into X
    gold: np.ndarray            # (B, n)
    sentence_ids: list[int] = field(default_factory=list)


class CRF:
    """Linear-chain CRF; see the module doc."""

    def __init__(self, fmap: FeatureMap, tags: Sequence[str], scheme: str,
                 pairs: np.ndarray, theta: np.ndarray | None = None, settings=None):
        self.fmap, self.tags, self.scheme = fmap, tuple(tags), enc.canonical_scheme(scheme)
        self.L = len(self.tags)
        self.pairs = pairs                          # (P, 2): (feature, label) with weights
        self.P = len(pairs)
        self.theta = np.zeros(self.P + self.L * self.L + 2 * self.L) if theta is None else theta
        self.settings = dict(settings or {})
        ok_s, ok_t, ok_e = validity_masks(self.tags, self.scheme)
        self.mask_start, self.mask_trans, self.mask_end = ok_s, ok_t, ok_e

    # --------------------------------------------------------------- parameters
    def unpack(self, theta: np.ndarray):
        P, L = self.P, self.L
        W = sp.csr_matrix((theta[:P], (self.pairs[:, 0], self.pairs[:, 1])),
                          shape=(len(self.fmap), L))
        trans = theta[P:P + L * L].reshape(L, L)
        start = theta[P + L * L:P + L * L + L]
        end = theta[P + L * L + L:]
        return W, trans, start, end

    def _dense_w(self, theta: np.ndarray) -> np.ndarray:
        """The state weights as a dense feature x tag matrix, cached for the last θ.

        Pitfall: rebuilding it per sentence (180 MB for CoNLL-2000) made decoding a
        file take minutes."""
        key = hash(theta.tobytes())
        cached = getattr(self, "_w_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        W = np.zeros((len(self.fmap), self.L))
        W[self.pairs[:, 0], self.pairs[:, 1]] = theta[:self.P]
        self._w_cache = (key, W)
        return W

    def emissions(self, X: sp.csr_matrix, theta: np.ndarray | None = None) -> np.ndarray:
        """X·W for the token rows of X."""
        return X @ self._dense_w(self.theta if theta is None else theta)

    def lattice(self, sentence: Sentence) -> Lattice:
        return self.lattices([sentence])[0]

    def lattices(self, sentences: Sequence[Sentence]) -> list[Lattice]:
        """One lattice per sentence, with one feature transform and one product."""
        X = self.fmap.transform(sentences)
        E = self.emissions(X)
        _, trans, start, end = self.unpack(self.theta)
        out, k = [], 0
        for s in sentences:
            out.append(Lattice.from_scores(self.tags, E[k:k + len(s)], trans, start, end,
                                           scheme=self.scheme))
            k += len(s)
        return out

    # --------------------------------------------------------------- training data
    @classmethod
    def prepare(cls, sentences: Sequence[Sentence], template: str, scheme: str = "IOB2",
                data_scheme: str = "IOB2", min_count: int = 1, fmap: FeatureMap | None = None,
                tags: Sequence[str] | None = None):
        """(feature map, tags, X, gold index sequences) for training."""
        scheme = enc.canonical_scheme(scheme)
        gold_tags = []
        for s in sentences:
            try:
                gold_tags.append(enc.convert(s.column(-1), data_scheme, scheme))
            except ValueError as e:
                raise ValueError(f"{s.where(0)}: {e}") from None
        fmap = fmap or FeatureMap.fit(sentences, template, min_count)
        tags = tuple(tags) if tags else TagSet.from_tags(
            {t for g in gold_tags for t in g}, scheme).tags
        ix = {t: i for i, t in enumerate(tags)}
        gold = []
        for s, g in zip(sentences, gold_tags):
            if any(t not in ix for t in g):
                bad = next(t for t in g if t not in ix)
                raise ValueError(f"{s.where(0)}: tag {bad!r} is not among the model's tags")
            gold.append(np.array([ix[t] for t in g]))
        X = fmap.transform(sentences)
        return fmap, tags, X, gold

    @staticmethod
    def observed_pairs(X: sp.csr_matrix, gold: Sequence[np.ndarray], L: int) -> np.ndarray:
        y = np.concatenate(gold)
        Y = sp.csr_matrix((np.ones(len(y)), (np.arange(len(y)), y)), shape=(len(y), L))
        M = (X.T @ Y).tocoo()
        return np.stack([M.row, M.col], axis=1).astype(np.int64)

    @staticmethod
    def batches(gold: Sequence[np.ndarray]) -> list[Batch]:
        offsets = np.concatenate([[0], np.cumsum([len(g) for g in gold])])
        by_len: dict[int, list[int]] = {}
        for k, g in enumerate(gold):
            by_len.setdefault(len(g), []).append(k)
        out = []
        for n, ids in sorted(by_len.items()):
            rows = np.stack([np.arange(offsets[k], offsets[k] + n) for k in ids])
            out.append(Batch(n, rows, np.stack([gold[k] for k in ids]), ids))
        return out

    # --------------------------------------------------------------- objectives
    def _masked(self, trans, start, end):
        neg = -np.inf
        return (np.where(self.mask_trans, trans, neg), np.where(self.mask_start, start, neg),
                np.where(self.mask_end, end, neg))

    def ml_objective(self, theta, X, batches, l2: float):
        """(negated) conditional log-likelihood + l2·‖θ‖², and its gradient.

        Scaled forward-backward in probability space, batched over sentences of one
        length: products of (batch, L) by (L, L), one normaliser per token, and the
        expected transition counts as one matrix product per batch.
        """
        _, trans, start, end = self.unpack(theta)
        mt, ms, me = self._masked(trans, start, end)
        E = self.emissions(X, theta)                          # (tokens, L)
        tmax, smax, emax = np.max(mt), np.max(ms), np.max(me)
        Mt, Ms, Me = np.exp(mt - tmax), np.exp(ms - smax), np.exp(me - emax)
        gE = np.zeros_like(E)
        gT, gS, gEnd = np.zeros_like(trans), np.zeros_like(start), np.zeros_like(end)
        nll = 0.0
        L = self.L
        for b in batches:
            em = E[b.rows]                                   # (B, n, L)
            B, n = b.rows.shape
            phi, rmax, a, c, c_end, bt = scaled_forward_backward(em, Mt, Ms, Me)
            logz = (np.log(c).sum(axis=1) + np.log(c_end) + rmax.sum(axis=1) + smax + emax
                    + (n - 1) * tmax)
            post = a * bt
            gold = b.gold
            gold_score = (ms[gold[:, 0]] + me[gold[:, -1]] +
                          np.take_along_axis(em, gold[..., None], 2)[..., 0].sum(axis=1) +
                          mt[gold[:, :-1], gold[:, 1:]].sum(axis=1))
            nll += float(np.sum(logz - gold_score))
            onehot = np.zeros((B, n, L))
            np.put_along_axis(onehot, gold[..., None], 1.0, axis=2)
            gE[b.rows.ravel()] = (post - onehot).reshape(-1, L)     # each token once
            gS += post[:, 0].sum(axis=0) - onehot[:, 0].sum(axis=0)
            gEnd += post[:, -1].sum(axis=0) - onehot[:, -1].sum(axis=0)
            if n > 1:
                right = (phi[:, 1:] * bt[:, 1:]) / c[:, 1:, None]   # (B, n-1, L)
                gT += Mt * (a[:, :-1].reshape(-1, L).T @ right.reshape(-1, L))
                np.add.at(gT, (gold[:, :-1].ravel(), gold[:, 1:].ravel()), -1.0)
        g = self._pack_grad(X, gE, gT, gS, gEnd)
        return nll + l2 * float(theta @ theta), g + 2 * l2 * theta

    def _pack_grad(self, X, gE, gT, gS, gEnd) -> np.ndarray:
        key = id(X)
        if getattr(self, "_xt_key", None) != key:           # X^T as CSR, once per X
            self._xt, self._xt_key = X.T.tocsr(), key
        gW = self._xt @ gE                                   # (F, L) dense
        return np.concatenate([np.asarray(gW)[self.pairs[:, 0], self.pairs[:, 1]],
                               gT.ravel(), gS, gEnd])

    def meu_objective(self, theta, X, gold: Sequence[np.ndarray], l2: float, beta: float,
                      corpus: bool):
        """(negated) MEU objective (per sentence or corpus) + l2·‖θ‖², and its gradient.

        Sentences are spread over processes (:func:`fstchunk.parallel.map_sentences`).
        The corpus objective needs the corpus totals first (a forward pass per
        sentence), then the per-sentence adjoints.
        """
        from ..parallel import map_sentences
        if corpus:
            return self._meu_corpus_objective(theta, X, gold, l2, beta)
        _, trans, start, end = self.unpack(theta)
        E = self.emissions(X, theta)
        offsets = np.concatenate([[0], np.cumsum([len(g) for g in gold])])
        fixed = [enc.tags_to_chunks([self.tags[i] for i in g], self.scheme) for g in gold]
        job = (self, E, trans, start, end, offsets, fixed, beta)
        chunks = np.array_split(np.arange(len(gold)), max(1, min(len(gold), 64)))
        parts = map_sentences(_meu_part, chunks, context=job, chunksize=1)
        gE = np.zeros_like(E)
        gT, gS, gEnd = np.zeros_like(trans), np.zeros_like(start), np.zeros_like(end)
        value = 0.0
        for ids, rows, f, pT, pS, pEnd in parts:
            value += f
            for k, r in zip(ids, rows):
                gE[offsets[k]:offsets[k + 1]] = r
            gT += pT
            gS += pS
            gEnd += pEnd
        g = self._pack_grad(X, gE, gT, gS, gEnd)
        return -value + l2 * float(theta @ theta), -g + 2 * l2 * theta

    def _corpus_batches(self, gold: Sequence[np.ndarray]):
        """Length batches with their gold chunks (sentence in batch, type, s, e) and
        the scheme's boundary tables, cached for the last ``gold``."""
        cached = getattr(self, "_corpus_cache", None)
        if cached is not None and cached[0] is gold:
            return cached[1], cached[2]
        from ..engine.expectation import boundary_tables
        cont, startT, endT, tix, types = boundary_tables(self.tags, self.scheme)
        out = []
        for b in self.batches(gold):
            rows = []
            for bi, g in enumerate(b.gold):
                for typ, s0, e0 in enc.tags_to_chunks([self.tags[i] for i in g], self.scheme):
                    rows.append((bi, types.index(typ), s0, e0))
            out.append((b, tuple(np.array(rows, dtype=np.int64).reshape(-1, 4).T)))
        self._corpus_cache = (gold, out, (cont, startT, endT, tix))
        return out, self._corpus_cache[2]

    def _meu_corpus_objective(self, theta, X, gold, l2: float, beta: float):
        """The corpus objective from :func:`_corpus_batch` over length batches
        (first-order expectations only, like :meth:`ml_objective`)."""
        _, trans, start, end = self.unpack(theta)
        mt, ms, me = self._masked(trans, start, end)
        E = self.emissions(X, theta)
        Mt, Ms, Me = np.exp(mt - np.max(mt)), np.exp(ms - np.max(ms)), np.exp(me - np.max(me))
        batches, tabs = self._corpus_batches(gold)
        gE = np.zeros((2,) + E.shape)
        gT, gS, gEnd = np.zeros((2, self.L, self.L)), np.zeros((2, self.L)), np.zeros((2, self.L))
        tp = m_hyp = 0.0
        m_gold = 0
        for b, ch in batches:
            Er, gtok, pT, pS, pEnd = corpus_expectations(E[b.rows], ch, Mt, Ms, Me, tabs)
            tp += Er[0].sum()
            m_hyp += Er[1].sum()
            m_gold += len(ch[0])
            gE[:, b.rows.ravel()] = gtok.reshape(2, -1, self.L)
            gT += pT
            gS += pS
            gEnd += pEnd
        den = m_gold + beta * m_hyp
        if den <= 0:
            value, d = 1.0, (0.0, 0.0)
        else:
            value = (beta + 1) * tp / den
            d = ((beta + 1) / den, -(beta + 1) * tp * beta / den ** 2)
        g = self._pack_grad(X, d[0] * gE[0] + d[1] * gE[1], d[0] * gT[0] + d[1] * gT[1],
                            d[0] * gS[0] + d[1] * gS[1], d[0] * gEnd[0] + d[1] * gEnd[1])
        return -value + l2 * float(theta @ theta), -g + 2 * l2 * theta

    # --------------------------------------------------------------- training
    def fit(self, X, gold, objective: str = "ml", l2: float = 1.0, beta: float = 1.0,
            max_iter: int = 100, callback: Callable | None = None, tol: float = 1e-5):
        """Optimise θ with L-BFGS, starting from the current θ."""
        if objective not in OBJECTIVES:
            raise ValueError(f"unknown objective {objective!r}; use one of {', '.join(OBJECTIVES)}")
        if not (l2 >= 0 and np.isfinite(l2)):
            raise ValueError(f"l2 must be a finite number >= 0, got {l2!r}")
        if objective == "ml":
            batches = self.batches(gold)
            fun = lambda th: self.ml_objective(th, X, batches, l2)      # noqa: E731
        else:
            fun = lambda th: self.meu_objective(th, X, gold, l2, beta,   # noqa: E731
                                                corpus=objective == "meu-corpus")
        it = [0]
        self._last_value = float("nan")

        def tracked(th):
            value, grad = fun(th)
            self._last_value = value
            return value, grad

        def cb(th):
            it[0] += 1
            self.theta = th.copy()
            if callback is not None:
                callback(it[0], th)

        res = scipy.optimize.minimize(tracked, self.theta, jac=True, method="L-BFGS-B",
                                      callback=cb, options={"maxiter": max_iter, "gtol": tol,
                                                            "maxcor": 10})
        self.theta = res.x
        self.settings.update(objective=objective, l2=l2, beta=beta,
                             iterations=int(res.nit), converged=bool(res.success),
                             final_objective=float(res.fun))
        return res

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
        except (KeyError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: corrupt CRF model file ({e})") from None
        if len(m.theta) != m.P + m.L * m.L + 2 * m.L:
            raise ValueError(f"{path}: {len(m.theta)} parameters do not fit {m.P} state "
                             f"weights and {m.L} tags")
        if m.P and m.pairs[:, 0].max() >= len(fmap):
            raise ValueError(f"{path}: feature index out of range of the feature map")
        return m


def _meu_lattice(job, k):
    crf, E, trans, start, end, offsets, fixed, beta = job
    return Lattice.from_scores(crf.tags, E[offsets[k]:offsets[k + 1]], trans, start, end,
                               scheme=crf.scheme)


def _meu_part(job, ids):
    """Value and gradient pieces of the MEU objective for sentences ``ids``; ``job``
    is the context :meth:`CRF.meu_objective` hands to the workers."""
    from ..expected import from_count_table
    from ..engine.expectation import tp_count_table_grad
    crf, E, trans, start, end, offsets, fixed, beta = job
    L = crf.L
    gT, gS, gEnd = np.zeros((L, L)), np.zeros(L), np.zeros(L)
    rows, value = [], 0.0
    for k in ids:
        lat = _meu_lattice(job, k)
        ch = fixed[k]
        c = np.arange(lat.n + 1, dtype=float)
        den = c + beta * len(ch)
        adj = (np.where(den > 0, 0.0, 1.0),
               np.where(den > 0, (beta + 1) / np.where(den > 0, den, 1), 0.0))
        gw, gfin, (Z, T) = tp_count_table_grad(lat, ch, *adj)
        value += from_count_table(Z, T, len(ch), beta, "training").f
        em_grad = np.zeros((lat.n, L))
        for i, gwi in enumerate(gw):
            em_grad[i] = gwi.sum(axis=0)
            if i == 0:
                gS += gwi[0]
            else:
                gT += gwi
        gEnd += gfin
        rows.append(em_grad)
    return list(ids), rows, value, gT, gS, gEnd
