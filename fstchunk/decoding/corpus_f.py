"""How good is a fixed output on text without labels: the corpus P, R and F_β of the
model's own decisions, as random variables of the truth y ~ the model.

For each sentence s the output h_s is fixed (``P = Σ_s m(h_s)`` predicted chunks), and
the truth is drawn from the sentence's lattice, independently across sentences.  The
corpus counts are TP = Σ_s tp(h_s, y_s) and G = Σ_s m(y_s); the corpus figures are

    precision = TP / P,   recall = TP / G,   F_β = (1+β²)·TP / (P + β²·G)

(:mod:`fstchunk.core.fbeta`; 0/0 := 1).  Each sentence's exact joint law of
(tp, m) is :func:`count_laws` (the fast engine's :func:`~fstchunk.engine.inference.tp_count_laws`,
or composition with T⊠M for a lattice from a machine); the corpus law is their
convolution.  :func:`corpus_f` combines them:

* ``method="exact"`` (when the corpus law has at most ``exact_cells`` cells, a few
  hundred sentences): the convolution itself, so E[F], E[R] and the interval (the
  law's quantiles) are exact;
* ``method="normal"`` otherwise, or from the sentences' moments alone
  (:func:`count_moments`, a few times cheaper than their laws): the stated
  approximation — (TP, G) bivariate normal with the exact means, variances and
  covariance (sums of the sentences', exact),
  E[F] and the interval from ``draws`` seeded draws of it.  Over thousands of
  independent sentences the central limit theorem makes this close; tests check it
  against exact convolution and against corpora drawn by :meth:`Lattice.sample`.

Pitfall: the interval is for the corpus F under the model's own distribution; it is as
honest as the model is calibrated (``benchmarks/bench_unlabelled.py`` measures its
coverage on CoNLL-2000 and CoNLL-2002 Dutch, calibrated and not).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..core.errors import InputError
from ..core.fbeta import check_beta
from ..engine import inference
from ..structures.lattice import Lattice
from ..structures.lattices import apply
from .expected import joint_by_composition

#: the largest corpus law (cells of TP × G) that :func:`corpus_f` convolves exactly
EXACT_CELLS = 2_000_000


@dataclass(frozen=True)
class CorpusF:
    """The corpus figures of a fixed output under the model (module doc): expected
    values, F_β's standard deviation and its central ``level`` interval."""
    sentences: int
    predicted: int            # P, the output's chunks
    expected_tp: float        # E[TP]
    expected_gold: float      # E[G], the chunks of the truth
    precision: float          # E[TP / P]
    recall: float             # E[TP / G]
    f: float                  # E[F_β]
    sd_f: float
    interval: tuple[float, float]
    level: float
    beta: float
    method: str               # "exact" or "normal"


def _sweep(lattices: Sequence[Lattice], hypotheses: Sequence[Sequence[str]],
           fast: Callable, machine: Callable, errors: str) -> list:
    """``fast(ops, batch, fixed)`` over the ragged batches of the dense chains and
    ``machine(joint)`` of each other lattice's composed joint law, one result each."""
    lattices, hypotheses = list(lattices), list(hypotheses)
    if len(lattices) != len(hypotheses):
        raise InputError(f"{len(lattices)} lattices but {len(hypotheses)} hypotheses")

    def batched(batch) -> list:
        types = batch.space.types
        fixed = [[(types.index(t), s, e) for t, s, e in
                  lattices[i].check_chunking(hypotheses[i], "hypothesis")] for i in batch.index]
        return fast(inference.transfer_of(batch), batch, fixed)

    def single(i: int):
        chunks = lattices[i].check_chunking(hypotheses[i], "hypothesis")
        return machine(joint_by_composition(lattices[i], chunks)[:len(chunks) + 1])
    return apply(lattices, batched, single, errors)


def count_laws(lattices: Sequence[Lattice], hypotheses: Sequence[Sequence[str]],
               errors: str = "raise") -> list:
    """Per sentence the exact joint law J[t, c] = Pr(tp(h, y) = t, m(y) = c), y ~ its
    lattice, h its fixed hypothesis (tags in the lattice's scheme): dense chains in
    ragged batches (:func:`~fstchunk.engine.inference.tp_count_laws`), others by
    composition (:func:`joint_by_composition`).  Pitfall: a batch holds K·B·n·L complex
    numbers (K = 1 + its most hypothesis chunks); for a whole corpus take
    :func:`count_moments`, as ``expected --input`` does past a short text."""
    def fast(ops, batch, fixed) -> list:
        J = inference.tp_count_laws(ops, batch, fixed)
        return [J[b, :len(f) + 1, :n + 1] for b, (f, n) in enumerate(zip(fixed, batch.lengths))]
    return _sweep(lattices, hypotheses, fast, lambda J: J, errors)


def count_moments(lattices: Sequence[Lattice], hypotheses: Sequence[Sequence[str]],
                  errors: str = "raise") -> list:
    """Per sentence (E[tp], E[m], Var(tp), Var(m), Cov(tp, m)), exact, from the binomial
    moments of :func:`~fstchunk.engine.inference.tp_count_moments` (a few times cheaper
    than the law); lattices from machines from their composed law."""
    def fast(ops, batch, fixed) -> list:
        M = inference.tp_count_moments(ops, batch, fixed)
        c = np.arange(M.shape[2])
        out = []
        for b in range(batch.B):
            z, t1, t2 = M[0, b], M[1, b], M[2, b]
            et, ec = float(t1.sum()), float(c @ z)
            out.append((et, ec, float((2 * t2 + t1).sum()) - et * et,
                        float(c * c @ z) - ec * ec, float(c @ t1) - et * ec))
        return out
    return _sweep(lattices, hypotheses, fast, _moments, errors)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den with 0/0 := 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 1.0)


def _convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The 2-D convolution of two laws (the law of the sum of independent pairs), by
    FFT; rounding's tiny negatives set to 0."""
    shape = (a.shape[0] + b.shape[0] - 1, a.shape[1] + b.shape[1] - 1)
    out = np.fft.irfft2(np.fft.rfft2(a, shape) * np.fft.rfft2(b, shape), shape)
    return np.maximum(out, 0.0)


def _moments(J: np.ndarray) -> tuple[float, float, float, float, float]:
    """E[tp], E[m], Var(tp), Var(m), Cov(tp, m) of one sentence's law."""
    t = np.arange(J.shape[0])[:, None]
    c = np.arange(J.shape[1])[None, :]
    et, ec = float((J * t).sum()), float((J * c).sum())
    return (et, ec, float((J * t * t).sum()) - et * et, float((J * c * c).sum()) - ec * ec,
            float((J * t * c).sum()) - et * ec)


def _quantiles(values: np.ndarray, weights: np.ndarray, qs: Sequence[float]) -> list[float]:
    """The ``qs`` quantiles of the discrete law (values, weights)."""
    order = np.argsort(values, kind="stable")
    v, cum = values[order], np.cumsum(weights[order])
    cum /= cum[-1]
    return [float(v[min(np.searchsorted(cum, q, side="left"), len(v) - 1)]) for q in qs]


def cells(laws: Sequence[np.ndarray]) -> int:
    """The cells (TP values × G values) of the corpus law of these sentences' laws."""
    return (sum(J.shape[0] - 1 for J in laws) + 1) * (sum(J.shape[1] - 1 for J in laws) + 1)


def corpus_f(predicted: int, laws: Sequence[np.ndarray] | None = None,
             moments: Sequence[Sequence[float]] | None = None, beta: float = 1.0,
             level: float = 0.9, exact_cells: int = EXACT_CELLS, draws: int = 200_000,
             seed: int = 0) -> CorpusF:
    """The corpus figures (module doc) of an output of P = ``predicted`` chunks, from
    the sentences' ``laws`` (:func:`count_laws`: exact when their corpus law has at most
    ``exact_cells`` cells) or ``moments`` (:func:`count_moments`: the normal
    approximation); ``level`` the interval's coverage, ``draws`` and ``seed`` the
    approximation's draws."""
    b2 = check_beta(beta) ** 2
    if not 0 < level < 1:
        raise InputError(f"the interval's level must lie strictly between 0 and 1, got {level!r}")
    if (laws is None) == (moments is None):
        raise InputError("give the sentences' laws or their moments (one of the two)")
    if laws is not None:
        laws = [np.asarray(J, dtype=float) for J in laws]
        moments = [_moments(J) for J in laws]
    if not len(moments):
        raise InputError("no sentences: the corpus F of an empty corpus is undefined")
    P = int(predicted)
    qs = ((1 - level) / 2, (1 + level) / 2)
    mom = np.asarray(moments, dtype=float).sum(axis=0)
    e_tp, e_g = float(mom[0]), float(mom[1])
    if laws is not None and cells(laws) <= exact_cells:
        law = laws[0]
        for J in laws[1:]:
            law = _convolve(law, J)
        law /= law.sum()
        tp = np.arange(law.shape[0])[:, None] * np.ones((1, law.shape[1]))
        g = np.ones((law.shape[0], 1)) * np.arange(law.shape[1])[None, :]
        f = _ratio((1 + b2) * tp, P + b2 * g).ravel()
        w = law.ravel()
        mean_f = float(w @ f)
        recall = float(w @ _ratio(tp, g).ravel())
        sd = float(np.sqrt(max(w @ (f - mean_f) ** 2, 0.0)))
        lo, hi = _quantiles(f, w, qs)
        method = "exact"
    else:
        cov = np.array([[mom[2], mom[4]], [mom[4], mom[3]]])
        rng = np.random.default_rng(seed)
        x = rng.multivariate_normal([e_tp, e_g], cov, size=draws, method="eigh")
        tp, g = np.clip(x[:, 0], 0, None), np.clip(x[:, 1], 0, None)
        f = _ratio((1 + b2) * tp, P + b2 * g)
        mean_f, recall = float(f.mean()), float(_ratio(tp, g).mean())
        sd = float(f.std())
        lo, hi = (float(v) for v in np.quantile(f, qs))
        method = "normal"
    precision = e_tp / P if P else 1.0
    return CorpusF(len(moments), P, e_tp, e_g, precision, recall, mean_f, sd, (lo, hi),
                   float(level), float(np.sqrt(b2)), method)
