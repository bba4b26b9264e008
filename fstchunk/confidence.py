"""Entity confidences: each chunk of a decision with its exact marginal probability.

For a lattice (a distribution over the valid tag sequences y of one sentence) and
a decided tag sequence x, the confidence of a chunk c = (type, start, end) of x is

    p(c) = Pr(c ∈ chunks(y)) = Σ_{valid y ∋ c} Pr(y),

the chunk marginal of :meth:`fstchunk.lattice.Lattice.chunk_marginals` (Jansche
§18–19 on chunk boundaries) read at the chunks of x only: one forward pass of the
lattice's stochastic chain, then each chunk's own arcs
(:func:`fstchunk.engine.spans.chunk_probs`, O(n·S²) time and memory against the
O(T·n²) table of every chunk).  The marginal is of the *exact* chunk: a chunk
whose span or type differs in y does not count, as conlleval counts a match.

Chunks are 0-based with ``end`` exclusive.  The decision x may come from any
decoder (MAP, posterior, MEU, corpus MEU); MEU may decide a chunk the model gives
probability 0 (see :func:`fstchunk.decode.decode_meu`), and then p = 0.

:func:`decode_chunks` decodes one lattice and scores its chunks in one call;
:func:`keep_confident` is the ``--min-confidence`` threshold: dropping chunks of
low p trades recall for precision, as β < 1 does for MEU.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from . import encodings as enc
from .blas import one_blas_thread
from .decode import decode_meu_corpus, decode_one
from .engine.spans import chunk_probs
from .errors import InputError
from .lattice import Lattice


class ScoredChunk(NamedTuple):
    """A chunk of type ``type`` over tokens ``start`` .. ``end - 1`` (0-based, end
    exclusive) and ``p`` = Pr(this chunk ∈ chunks(y)) under the lattice."""
    type: str
    start: int
    end: int
    p: float


@one_blas_thread
def scored_chunks(lattice: Lattice, tags: Sequence[str]) -> list[ScoredChunk]:
    """The chunks of ``tags`` (in the lattice's scheme, of its length, chunk types
    among its types; else one InputError/SchemeError naming the position) each with
    its exact marginal Pr(c ∈ chunks(y)) (module doc), in order of position."""
    chunks = lattice.check_chunking(tags, "tags")
    if not chunks:
        return []
    index = {t: i for i, t in enumerate(lattice.space.types)}
    p = chunk_probs(lattice, [(index[t], s, e) for t, s, e in chunks])
    return [ScoredChunk(t, s, e, float(min(max(q, 0.0), 1.0)))
            for (t, s, e), q in zip(chunks, p)]


@one_blas_thread
def decode_chunks(lattice: Lattice, decoder: str = "map", beta: float = 1.0, k: int = 20,
                  memory_budget: int | None = None) -> list[ScoredChunk]:
    """The chunks ``decoder`` (one of :data:`fstchunk.decode.DECODERS`, ``meu-corpus``
    on this one sentence) picks for ``lattice``, each with its probability:
    ``scored_chunks(lattice, decode_one(lattice, ...))``."""
    if decoder == "meu-corpus":
        tags = decode_meu_corpus([lattice], beta=beta)[0][0]
    else:
        tags = decode_one(lattice, decoder, beta, k, memory_budget)
    return scored_chunks(lattice, tags)


def check_min_confidence(p: float) -> float:
    """``--min-confidence`` / ``min_confidence``: a probability in [0, 1]."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise InputError(f"min_confidence must be a probability in [0, 1], got {p!r}")
    return float(p)


def keep_confident(chunks: Sequence[ScoredChunk], min_confidence: float
                   ) -> list[ScoredChunk]:
    """The chunks with p >= ``min_confidence`` (0 keeps all): a higher threshold keeps
    a subset, so precision tends up and recall down."""
    check_min_confidence(min_confidence)
    return [c for c in chunks if c.p >= min_confidence]


def tags_of(chunks: Sequence[ScoredChunk], n: int, scheme: str) -> list[str]:
    """The tags of ``chunks`` over ``n`` tokens in ``scheme``, every other token O:
    valid in every scheme (:func:`fstchunk.encodings.chunks_to_tags`, which writes
    IOB1's B- and IOE1's E- where two kept chunks of a type touch, and only there)."""
    return enc.chunks_to_tags([(c.type, c.start, c.end) for c in chunks], n,
                              enc.canonical_scheme(scheme))
