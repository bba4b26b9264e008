"""Decoders: MAP, posterior, and maximum expected F_β (MEU), exact and k-best.

* :func:`decode_map` — argmax_x Pr(x): Viterbi over the lattice's layers, or the
  shortest path of the lattice machine in the tropical semiring (``method="fst"``).
* :func:`decode_posterior` — the valid sequence maximising Σ_i Pr(y_i = x_i).
* :func:`decode_meu` — argmax_x U(x), U(x) = E_y[F_β(x | y)] (Jansche §10, §21).

**Exact MEU in polynomial time.**  For a hypothesis with exactly k >= 1 chunks,

    U(x) = (β+1) Σ_{c ∈ chunks(x)} g_k(c),   g_k(c) = Σ_m Pr(c ∈ y, m(y) = m) / (k + β m),

so the best k-chunk hypothesis is a maximum-weight set of k non-overlapping typed
spans (a semi-Markov DP with a count dimension, the type of a span chosen freely),
and the answer is the best over k together with the empty hypothesis, whose
utility is Pr(m(y) = 0) (0/0 := 1).  Pr(c ∈ y, m(y) = m) comes from
:func:`fstchunk.engine.counting.chunk_count_marginals` (the lattice composed with the chunk
counter M, by forward-backward over counts).  Any set of non-overlapping chunks
is a valid sequence in every scheme, so the result is written in the lattice's
scheme.  This answers the slides' open problem for first-order lattices; nothing
is pruned.

* :func:`decode_meu_corpus` — conlleval scores micro F over a corpus.  We maximise
  the expected-count ratio (β+1) Σ_i E[tp_i] / (Σ_i m(x_i) + β Σ_i E[m(y_i)])
  exactly by Dinkelbach's method: for λ, keep the chunks with
  (β+1)·Pr(c) − λ > 0 under the non-overlap constraint (a per-sentence DP), set λ
  to the ratio reached, repeat until it stops rising.  The approximation is
  E[ratio] ≈ ratio of expectations, accurate for corpora of many sentences; with
  independent chunks the threshold is F*/(β+1) (Lipton et al. 2014 for β = 1).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
import pynini

from . import encodings as enc
from . import fsa
from .errors import InputError
from .evaluate import _check_beta
from .engine.chain import viterbi
from .engine.counting import chunk_count_marginals
from .engine.expectation import tp_count_table
from .engine.intervals import best_chunk_set, best_chunk_sets
from .expected import expected_f
from .lattice import Lattice


class Decoding(NamedTuple):
    """Decoded tags and the value the decoder maximised (log Pr, Σ marginals, E[F])."""
    tags: list[str]
    score: float


# ------------------------------------------------------------------------- MAP
def decode_map(lattice: Lattice, method: str = "viterbi") -> Decoding:
    """The most probable valid sequence and its log probability."""
    if method == "viterbi":
        idx, _ = viterbi(lattice.layers)
        tags = [lattice.tags[i] for i in idx]
    elif method == "fst":
        path = _shortest(lattice, 1)
        (labels, _, w), = fsa.paths(path)
        tags = [lattice.space.symbols.find(x) for x in labels]
    else:
        raise InputError(f"unknown method {method!r}; use 'viterbi' or 'fst'")
    return Decoding(tags, lattice.log_prob(tags))


def decode_posterior(lattice: Lattice) -> Decoding:
    """The valid sequence maximising the sum of token marginals."""
    marg = lattice.marginals()
    L = len(lattice.tags)
    post = Lattice.from_scores(lattice.tags, marg, np.zeros((L, L)), scheme=lattice.scheme)
    idx, best = viterbi(post.layers)
    return Decoding([lattice.tags[i] for i in idx], best)


# ------------------------------------------------------------------------- MEU
def meu_weights(lattice: Lattice, beta: float) -> np.ndarray:
    """g_k(c) for all k, spans and types, shape (n, n, n+1, T) ([k-1, s, e, type])."""
    n = lattice.n
    pcm = chunk_count_marginals(lattice)                     # (T, n, n+1, C)
    m = np.arange(n + 1, dtype=float)
    k = np.arange(1, n + 1, dtype=float)
    H = 1.0 / (k[None, :] + beta * m[:, None])                # (C, K)
    g = np.tensordot(pcm, H, axes=([3], [0]))                 # (T, n, n+1, K)
    g = np.moveaxis(g, (3, 0), (0, 3))                        # (K, n, n+1, T)
    valid = np.triu(np.ones((n, n + 1), bool), 1)             # e > s
    return np.where(valid[None, :, :, None], g, -np.inf)


def decode_meu(lattice: Lattice, beta: float = 1.0, method: str = "exact",
               k: int = 20) -> Decoding:
    """The hypothesis of maximum expected F_β against the lattice, and that E[F_β].

    ``method="exact"``: the polynomial algorithm of the module doc; ``"kbest"``:
    the ``k`` best paths of the lattice reranked by exact expected F.
    """
    _check_beta(beta)
    if method == "kbest":
        return _meu_kbest(lattice, beta, k)
    if method != "exact":
        raise InputError(f"unknown method {method!r}; use 'exact' or 'kbest'")
    n = lattice.n
    g = meu_weights(lattice, beta)
    z0, _ = tp_count_table(lattice, [])
    best_u, best_chunks = float(z0[0]), []                    # the empty hypothesis
    types = lattice.space.types
    for total, chunks in best_chunk_sets(g, n):
        u = (beta + 1) * total
        if u > best_u + 1e-15:
            best_u = u
            best_chunks = [(types[t], s, e) for t, s, e in chunks]
    tags = enc.chunks_to_tags(best_chunks, n, lattice.scheme)
    return Decoding(tags, best_u)


def _meu_kbest(lattice: Lattice, beta: float, k: int) -> Decoding:
    if not (isinstance(k, int) and k >= 1):
        raise InputError(f"k must be a positive integer, got {k!r}")
    paths = _shortest(lattice, k)
    best = None
    for labels, _, _ in fsa.paths(paths):
        tags = [lattice.space.symbols.find(x) for x in labels]
        u = expected_f(lattice, hypothesis=tags, beta=beta, method="fast").f
        if best is None or u > best.score:
            best = Decoding(tags, u)
    return best


def _shortest(lattice: Lattice, k: int) -> pynini.Fst:
    """The k best paths of the lattice's machine (tropical float32 arcs); InputError
    when OpenFst cannot search it (scores beyond float32's range become infinite)."""
    std = fsa.to_arc_type(fsa.bare(lattice.fst), "standard")
    try:
        return pynini.shortestpath(std, nshortest=k, unique=True) if k > 1 else \
            pynini.shortestpath(std)
    except pynini.FstOpError:
        raise InputError("OpenFst's shortest-path search failed on this lattice: its scores "
                         "exceed the float32 range of tropical arcs; use the numpy decoders "
                         "(map, meu)") from None


# ---------------------------------------------------------------- corpus MEU
def decode_meu_corpus(lattices: Sequence[Lattice], beta: float = 1.0,
                      max_iter: int = 50) -> tuple[list[list[str]], float]:
    """Jointly decode a corpus for the expected corpus F_β (Dinkelbach, see module doc).

    Returns the tag sequences and the expected-count ratio they reach.
    """
    _check_beta(beta)
    cms = [lat.chunk_marginals() for lat in lattices]
    m_ref = sum(float(np.arange(lat.n + 1) @ tp_count_table(lat, [])[0]) for lat in lattices)
    lam = 0.0
    decided: list[list] = [[] for _ in lattices]
    ratio = _corpus_ratio(cms, decided, m_ref, beta)
    for _ in range(max_iter):
        new = [best_chunk_set((beta + 1) * cm - lam) for cm in cms]
        r = _corpus_ratio(cms, new, m_ref, beta)
        if r <= ratio + 1e-12 and _ > 0:
            break
        decided, ratio, lam = new, r, r
    out = []
    for lat, chunks in zip(lattices, decided):
        types = lat.space.types
        out.append(enc.chunks_to_tags([(types[t], s, e) for t, s, e in chunks], lat.n,
                                      lat.scheme))
    return out, ratio


def _corpus_ratio(cms, decided, m_ref: float, beta: float) -> float:
    tp = sum(cm[t, s, e] for cm, ch in zip(cms, decided) for t, s, e in ch)
    m_hyp = sum(len(ch) for ch in decided)
    den = m_hyp + beta * m_ref
    return (beta + 1) * tp / den if den > 0 else 1.0


# ------------------------------------------------------------ many sentences
DECODERS = ("map", "posterior", "meu", "meu-kbest", "meu-corpus")


def decode_lattices(lattices: Sequence[Lattice], decoder: str = "map", beta: float = 1.0,
                    k: int = 20) -> list[list[str]]:
    """The tags each decoder of :data:`DECODERS` picks for each lattice (in the
    lattices' scheme); ``meu-corpus`` decides the whole sequence jointly."""
    if decoder not in DECODERS:
        raise InputError(f"unknown decoder {decoder!r}; use one of {', '.join(DECODERS)}")
    if decoder == "meu-corpus":
        return decode_meu_corpus(lattices, beta=beta)[0]
    if decoder == "map":
        return [decode_map(lat).tags for lat in lattices]
    if decoder == "posterior":
        return [decode_posterior(lat).tags for lat in lattices]
    method = "kbest" if decoder == "meu-kbest" else "exact"
    return [decode_meu(lat, beta=beta, method=method, k=k).tags for lat in lattices]


def decode_sentences(model, sentences, decoder: str = "map", beta: float = 1.0, k: int = 20,
                     output_scheme: str = "IOB2") -> list[list[str]]:
    """Predicted tags, in ``output_scheme``, for each sentence under any model of the
    model protocol (``model.lattices(sentences)``, ``model.scheme``)."""
    # a model whose scores are not probabilities (perceptron, MMVP) must be calibrated
    # before any decoder that reads the lattice as a distribution; MAP needs no
    # probabilities, so such a model's lattices are asked for without the check
    require = getattr(model, "require_probabilities", None)
    if require is None:
        lattices = model.lattices(sentences)
    elif decoder != "map":
        require()
        lattices = model.lattices(sentences)
    else:
        lattices = model.lattices(sentences, require_probabilities=False)
    preds = decode_lattices(lattices, decoder, beta, k)
    return [enc.convert(p, model.scheme, output_scheme) for p in preds]
