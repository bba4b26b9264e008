"""Entity confidences: each chunk of a decision with its exact marginal probability.

For a lattice (a distribution over the valid tag sequences y of one sentence) and
a decided tag sequence x, the confidence of a chunk c = (type, start, end) of x is

    p(c) = Pr(c ∈ chunks(y)) = Σ_{valid y ∋ c} Pr(y),

the chunk marginal of :meth:`fstchunk.structures.lattice.Lattice.chunk_marginals` (Jansche
§18–19 on chunk boundaries) read at the chunks of x only: one forward pass of the
lattice's stochastic chain, then each chunk's own arcs
(:func:`fstchunk.engine.spans.chunk_probs`, O(n·S²) time and memory against the
O(T·n²) table of every chunk).  The marginal is of the *exact* chunk: a chunk
whose span or type differs in y does not count, as conlleval counts a match.

Chunks are 0-based with ``end`` exclusive.  The decision x may come from any
decoder (MAP, posterior, MEU, corpus MEU); MEU may decide a chunk the model gives
probability 0 (see :func:`fstchunk.decoding.decode.decode_meu`), and then p = 0.

:func:`decode_chunks` decodes one lattice and scores its chunks in one call;
:func:`keep_confident` is the ``--min-confidence`` threshold: dropping chunks of
low p trades recall for precision, as β < 1 does for MEU.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ..schemes import encodings as enc
from ..core.blas import one_blas_thread
from .decoders import Decoder, decoder as get_decoder
from ..engine import inference
from ..engine.spans import chunk_probs
from ..core.errors import InputError
from ..structures.lattice import Lattice
from ..structures.lattices import apply


class ScoredChunk(NamedTuple):
    """One chunk of a decision and its exact probability under the model, what
    :func:`fstchunk.scored_chunks` and :func:`fstchunk.decode_chunks` list: the chunk
    marginal $p = \\Pr(c \\in \\mathrm{chunks}(y) \\mid x)$, the probability
    that the gold holds this very chunk (type and both boundaries).  A tuple, so
    ``type, start, end, p = chunk`` works.

    Attributes:
        type: the chunk type (``PER``, ``NP``, ...).
        start: the first token, 0-based.
        end: one past the last token (exclusive).
        p: the chunk's marginal probability.

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> chunk = fstchunk.scored_chunks(lattice, ["B-PER", "I-PER", "O"])[0]
        >>> chunk.type, chunk.start, chunk.end, round(chunk.p, 3)
        ('PER', 0, 2, 0.531)
    """
    type: str
    start: int
    end: int
    p: float


@one_blas_thread
def scored_chunks(lattice: Lattice, tags: Sequence[str]) -> list[ScoredChunk]:
    """The chunks of ``tags``, each with its exact probability, in order of position:
    the chunk marginal $p(c) = \\sum_{y:\\ c \\in \\mathrm{chunks}(y)} p(y \\mid x)$.

    Args:
        lattice: the model's distribution over one sentence's valid tag sequences.
        tags: a decision, in the lattice's scheme, of its length.

    Returns:
        A list of :class:`ScoredChunk`: ``type``, ``start``, ``end`` (exclusive) and ``p``.

    Raises:
        InputError: ``tags`` of the wrong length, naming it.
        SchemeError: an invalid tag or a chunk type the lattice lacks, naming the position.

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> [(c.type, c.start, c.end, round(c.p, 3))
        ...  for c in fstchunk.scored_chunks(lattice, ["B-PER", "I-PER", "O"])]
        [('PER', 0, 2, 0.531)]
    """
    return scored_chunks_all([lattice], [tags])[0]


@one_blas_thread
def scored_chunks_all(lattices: Sequence[Lattice], decisions: Sequence[Sequence[str]],
                      errors: str = "raise") -> list:
    """:func:`scored_chunks` of many lattices and their decided tags at once: the dense
    chains in ragged batches (:func:`fstchunk.engine.inference.chunk_probs`), the
    others one at a time; ``errors="return"``: a failing sentence holds its error."""
    lattices, decisions = list(lattices), list(decisions)
    if len(lattices) != len(decisions):
        raise InputError(f"{len(lattices)} lattices but {len(decisions)} tag sequences")
    wanted: list = [None] * len(lattices)

    def chunks_of(i: int) -> list:
        if wanted[i] is None:
            wanted[i] = lattices[i].check_chunking(decisions[i], "tags")
        return wanted[i]

    def batched(batch) -> list:
        types = batch.space.types
        chunks = [chunks_of(int(i)) for i in batch.index]
        rows = [(b, types.index(t), s, e) for b, cs in enumerate(chunks) for t, s, e in cs]
        if not rows:
            return [[] for _ in chunks]
        sent, typ, start, end = (np.array(c) for c in zip(*rows))
        p = iter(inference.chunk_probs(inference.transfer_of(batch), batch, sent, typ,
                                       start, end))
        return [[ScoredChunk(t, s, e, float(next(p))) for t, s, e in cs] for cs in chunks]

    def single(i: int) -> list:
        lat, chunks = lattices[i], chunks_of(i)
        if not chunks:
            return []
        index = {t: k for k, t in enumerate(lat.space.types)}
        p = chunk_probs(lat, [(index[t], s, e) for t, s, e in chunks])
        return [ScoredChunk(t, s, e, float(min(max(q, 0.0), 1.0)))
                for (t, s, e), q in zip(chunks, p)]
    return apply(lattices, batched, single, errors)


@one_blas_thread
def marginals_all(lattices: Sequence[Lattice], errors: str = "raise") -> list:
    """The token marginals (n × tags) of each lattice (:meth:`Lattice.marginals`), the
    dense chains in ragged batches."""
    def batched(batch) -> list:
        m = inference.marginals(inference.transfer_of(batch), batch)
        return [m[b, :n] for b, n in enumerate(batch.lengths)]
    lattices = list(lattices)
    return apply(lattices, batched, lambda i: lattices[i].marginals(), errors)


@one_blas_thread
def decode_chunks(lattice: Lattice, decoder: "str | Decoder" = "map", beta: float | None = None,
                  k: int | None = None, memory_budget: int | None = None) -> list[ScoredChunk]:
    """Decode ``lattice``, then give each chunk of the decision its exact probability:
    ``scored_chunks(lattice, decoder.decode(lattice).tags)``.

    Args:
        lattice: the model's distribution over one sentence's valid tag sequences.
        decoder: a name of :data:`fstchunk.decoding.decoders.REGISTRY` (``map``,
            ``posterior``, ``meu``, ``meu-kbest``, ``meu-corpus`` on this one sentence)
            or a :class:`~fstchunk.decoding.decoders.Decoder`.
        beta: β of F_β, for the MEU decoders.
        k: the number of paths of ``meu-kbest``.
        memory_budget: the bytes exact MEU may take.

    Returns:
        A list of :class:`ScoredChunk`, in order of position.

    Raises:
        InputError: an unknown decoder, or a setting it does not take.

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> [(c.type, c.start, c.end, round(c.p, 3)) for c in fstchunk.decode_chunks(lattice, "meu")]
        [('PER', 0, 2, 0.531)]
    """
    dec = get_decoder(decoder, beta=beta, k=k, memory_budget=memory_budget)
    return scored_chunks(lattice, dec.decode(lattice).tags)


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
    valid in every scheme (:func:`fstchunk.schemes.encodings.chunks_to_tags`, which writes
    IOB1's B- and IOE1's E- where two kept chunks of a type touch, and only there)."""
    return enc.chunks_to_tags([(c.type, c.start, c.end) for c in chunks], n,
                              enc.canonical_scheme(scheme))
