"""Decoding a stream of sentences under a model, in this process or on an executor.

:func:`iter_decode_sentences` reads sentences lazily, builds their lattices in
blocks of about :data:`~fstchunk.runtime.blocks.BLOCK_TOKENS` tokens (the CRF's feature transform is
batched) and yields one :class:`Decoded` per sentence, in input order: its tags,
or the error that stopped that sentence (:data:`SENTENCE_ERRORS`), after which
decoding goes on.  With an ``executor`` (:mod:`fstchunk.runtime.scale`: ``--workers N`` or
``--scheduler``) the blocks are decoded on its workers, a bounded window of them
at a time, and come back in input order (:func:`~fstchunk.runtime.blocks.map_blocks`); the model is placed
on the workers once.  The same per-block code runs in both cases, so the output
is byte-identical.

``meu-corpus`` is one decision over the whole corpus (:func:`fstchunk.decoding.decode.decide_corpus`,
maximising F_β of the corpus's expected counts, a ratio of expectations, not the
expected corpus F_β):
each block's lattices are reduced to their chunk tables where they are built (on the
workers), and only the tables (O(n · width) per sentence) and the sentences come
back to the driver, which decides.  So its driver memory grows with the corpus,
unlike every other decoder's.

Pitfalls: a block's work must not depend on the block boundaries (each sentence
is decoded on its own; a lattice that fails in a block is rebuilt alone so that
its error is its own); errors travel back pickled, so a sentence error is one of
the picklable :class:`~fstchunk.core.errors.FstchunkError` family or ``MemoryError``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, NamedTuple

import numpy as np

from ..schemes import encodings as enc
from ..core.blas import limited_iter, one_blas_thread
from .confidence import ScoredChunk, marginals_all, scored_chunks_all
from .decode import CORPUS_PRUNE, CorpusTable, corpus_table, decide_corpus
from .decoders import Decoder, decoder as get_decoder
from ..core.errors import InputError
from ..runtime.blocks import blocks, map_blocks, sentence_error
from ..structures.lattice import Lattice
from ..structures.lattices import SENTENCE_ERRORS
from ..schemes.tagspace import UNCONSTRAINED, canonical

class Decoded(NamedTuple):
    """One sentence's outcome in :func:`iter_decode_sentences`: its 0-based ``index``,
    its ``tags`` (in the output scheme), or the ``error`` that stopped it (tags None),
    and the ``sentence`` itself; when asked for (``confidences``, ``marginals``), the
    decided chunks with their probabilities (:func:`fstchunk.decoding.confidence.scored_chunks`)
    and the token marginals (n x ``marginal_tags``, the lattice's tags in the model's
    scheme)."""
    index: int
    tags: list[str] | None
    error: BaseException | None = None
    sentence: Any = None
    chunks: list[ScoredChunk] | None = None
    marginals: np.ndarray | None = None
    marginal_tags: tuple[str, ...] | None = None


def lattice_reader(model, decoder: Decoder, probabilities: bool = False
                   ) -> Callable[[list], list[Lattice]]:
    """``model.lattices`` as ``decoder`` needs it, asked once for no sentence so that a
    refusal of the model itself (no chunk layer) comes before any work, not once per
    sentence.  A model whose scores are not probabilities (perceptron, MMVP) must be
    calibrated before any decoder that reads the lattice as a distribution
    (``decoder.needs_probabilities``, refused here too); MAP needs no probabilities, so
    such a model's lattices are asked for without the check — unless
    ``probabilities`` (confidences, marginals) are read."""
    require = getattr(model, "require_probabilities", None)
    if require is None or decoder.needs_probabilities or probabilities:
        if require is not None:
            require()
        read = model.lattices
    else:
        def read(sents):
            return model.lattices(sents, require_probabilities=False)
    read([])
    return read


def block_lattices(read: Callable[[list], list[Lattice]], block: list) -> list:
    """The lattices of a block; when the block fails, each sentence on its own, so
    that a failing sentence is an error in its own place (a Lattice or an error each)."""
    try:
        lats = read(block)
        if len(lats) == len(block):
            return list(lats)
    except SENTENCE_ERRORS as e:
        if len(block) == 1:
            return [sentence_error(e)]
    out: list = []
    for s in block:
        try:
            out.append(read([s])[0])
        except SENTENCE_ERRORS as e:
            out.append(sentence_error(e))
    return out


def _convert(tags, source: str, target: str) -> list[str]:
    """``tags`` from scheme ``source`` to ``target`` (as they are when both are the
    unconstrained chain's)."""
    if source == target == UNCONSTRAINED:
        return list(tags)
    return enc.convert(tags, source, target)


class _Job(NamedTuple):
    """What a worker needs to decode a block: the model and the settings."""
    model: Any
    decoder: Decoder
    output_scheme: str
    confidences: bool = False
    marginals: bool = False


def check_chain_model(model: Any) -> None:
    """InputError unless ``model`` gives tag lattices (``lattices`` and ``scheme_``, the
    scheme they are written in): a segment model predicts segment sets, which its own
    ``decode`` gives; a model not fitted yet is a NotFittedError."""
    check = getattr(type(model), "_check_fitted", None)
    if check is not None:
        check(model)
    if callable(getattr(model, "lattices", None)) and \
            getattr(model, "scheme_", None) is not None:
        return
    kind = getattr(model, "kind", type(model).__name__)
    fix = ("a segment model predicts sets of segments, not tag sequences: call "
           "model.decode(sentences) (command line: fstchunk segment decode)"
           if kind == "segment" else "give a CRF, HMM, attribute CRF or joint model")
    if kind != "segment" and "scheme" in dir(model):
        fix += (" (a model of the protocol names the scheme of its lattices scheme_, as "
                "fitted models do)")
    raise InputError(f"a {kind} model has no tag lattices to decode; {fix}")


def iter_decode_sentences(model, sentences: Iterable, decoder: "str | Decoder" = "map",
                          beta: float = 1.0, k: int = 20, output_scheme: str = "IOB2",
                          memory_budget: int | None = None,
                          executor: Any = None, confidences: bool = False,
                          marginals: bool = False) -> Iterator[Decoded]:
    """Decode sentences under any model of the model protocol (``model.lattices(sentences)``,
    ``model.scheme_``), yielding a :class:`Decoded` per sentence, in order: its tags in
    ``output_scheme``, or the error (:data:`SENTENCE_ERRORS`) that stopped it, after
    which decoding goes on.  ``decoder``: a name of :data:`fstchunk.decoding.decoders.REGISTRY`
    (with ``beta``, ``k``, ``memory_budget`` as it takes them) or a
    :class:`~fstchunk.decoding.decoders.Decoder`.  Sentences are decoded a block at a time
    (:data:`~fstchunk.runtime.blocks.BLOCK_TOKENS`, ragged batches within it); with an executor
    (:mod:`fstchunk.runtime.scale`) the blocks go to its workers.
    ``confidences``: each :class:`Decoded` carries its chunks with their exact
    probabilities; ``marginals``: its token marginals (both computed where the lattice
    is; for ``meu-corpus``, whose lattices are reduced to chunk tables before the
    joint decision, by a second pass that builds each lattice again).

    Settings (decoder, β, k, ``memory_budget``, output scheme, an uncalibrated model,
    a model without tag lattices) are checked when this is called, before any work.
    ``meu-corpus`` yields after the joint decision (module doc).
    """
    check_chain_model(model)
    dec = get_decoder(decoder, beta=beta, k=k, memory_budget=memory_budget)
    output_scheme = canonical(output_scheme)
    check_model(model, dec, output_scheme, confidences)
    lattice_reader(model, dec, confidences or marginals)
    job = _Job(model, dec, output_scheme, confidences, marginals)
    if dec.scope == "corpus":
        it = _iter_corpus(job, sentences, executor)
    elif executor is None:
        it = _iter_each(job, sentences)
    else:
        it = _iter_blocks(job, sentences, executor)
    return limited_iter(it)        # one BLAS thread while computing, not between items


def check_model(model: Any, dec: Decoder, output_scheme: str, confidences: bool = False) -> None:
    """Refuse, before any work, what the model cannot give: labels that cannot be
    written in ``output_scheme``, chunks (MEU, confidences) of an unconstrained chain."""
    if (output_scheme == UNCONSTRAINED) != (canonical(model.scheme_) == UNCONSTRAINED):
        raise InputError(f"the model's labels are in scheme {model.scheme_}: they cannot be "
                         f"written in {output_scheme} (the unconstrained chain's labels are "
                         f"not chunk tags, and chunk tags are not written as such)")
    if output_scheme == UNCONSTRAINED and (dec.needs_chunks or confidences):
        what = f"decoder {dec.name}" if dec.needs_chunks else "chunk confidences"
        raise InputError(f"{what}: chunks are needed, and the model is an unconstrained chain "
                         f"(scheme none, labels {', '.join(model.tags_[:6])}"
                         f"{' ...' if len(model.tags_) > 6 else ''}): decode by map or "
                         f"posterior, or import it with its chunk scheme")


def _iter_each(job: _Job, sentences: Iterable, start: int = 0) -> Iterator[Decoded]:
    read = lattice_reader(job.model, job.decoder, job.confidences or job.marginals)
    index = start
    for block in blocks(sentences):
        lats = block_lattices(read, block)
        ok = [j for j, lat in enumerate(lats) if not isinstance(lat, BaseException)]
        good = [lats[j] for j in ok]
        got = job.decoder.tags(good, errors="return") if not (job.confidences or job.marginals) \
            else [d if isinstance(d, BaseException) else d.tags
                  for d in job.decoder.decode_all(good, errors="return")]
        outcome: list = list(lats)
        for j, d in zip(ok, got):
            outcome[j] = d
        extras = _extras(job, lats, outcome)
        del lats, good
        for j, s in enumerate(block):
            d, outcome[j] = outcome[j], None
            if isinstance(d, BaseException):
                yield Decoded(index, None, sentence_error(d), s)
            elif isinstance(extras[j], BaseException):
                yield Decoded(index, None, sentence_error(extras[j]), s)
            else:
                yield Decoded(index, _convert(d, job.model.scheme_, job.output_scheme), None, s,
                              *(extras[j] or ()))
            index += 1


def _extras(job: _Job, lats: list, decided: list) -> list:
    """Per sentence (chunks with p, token marginals, their tags) of its decision, those
    the job asks for (None each when it asks for none), or the error computing them."""
    if not (job.confidences or job.marginals):
        return [None] * len(lats)
    ok = [j for j, (lat, d) in enumerate(zip(lats, decided))
          if not isinstance(lat, BaseException) and not isinstance(d, BaseException)]
    good = [lats[j] for j in ok]
    chunks = scored_chunks_all(good, [decided[j] for j in ok], errors="return") \
        if job.confidences else [None] * len(ok)
    margs = marginals_all(good, errors="return") if job.marginals else [None] * len(ok)
    out: list = [None] * len(lats)
    for j, lat, c, m in zip(ok, good, chunks, margs):
        bad = next((x for x in (c, m) if isinstance(x, BaseException)), None)
        out[j] = bad if bad is not None else (c, m, lat.tags if job.marginals else None)
    return out


def _decode_block(job: _Job, block: list) -> list[tuple]:
    """A worker's part: each sentence's :class:`Decoded` but its index and sentence."""
    return [(d.tags, d.error, d.chunks, d.marginals, d.marginal_tags)
            for d in _iter_each(job, block)]


def _iter_blocks(job: _Job, sentences: Iterable, executor: Any) -> Iterator[Decoded]:
    index = 0
    for block, results in map_blocks(_decode_block, job, sentences, executor):
        for s, got in zip(block, results):
            yield Decoded(index, got[0], got[1], s, *got[2:])
            index += 1


class _Decided:
    """A sentence and its decided tags (model scheme), sized as the sentence: the
    unit of :func:`_block_extras`' blocks."""
    __slots__ = ("sentence", "tags")

    def __init__(self, sentence: Any, tags: list[str]):
        self.sentence, self.tags = sentence, tags

    def __len__(self) -> int:
        return len(self.sentence)


def _block_extras(job: _Job, block: list) -> list:
    """A worker's part of ``meu-corpus``'s second pass: each decided sentence's
    lattice built again, its (chunks, marginals), or the error."""
    read = lattice_reader(job.model, job.decoder, True)
    lats = block_lattices(read, [d.sentence for d in block])
    extras = _extras(job, lats, [d.tags for d in block])
    return [lat if isinstance(lat, BaseException) else x for lat, x in zip(lats, extras)]


def _block_tables(context: tuple, block: list) -> list:
    """A worker's part of ``meu-corpus``: the :class:`~fstchunk.decoding.decode.CorpusTable`
    (or the error) of each sentence of ``block``."""
    job, prune = context
    read = lattice_reader(job.model, job.decoder)
    out: list = []
    for lat in block_lattices(read, block):
        if not isinstance(lat, BaseException):
            try:
                lat = corpus_table(lat, prune)
            except SENTENCE_ERRORS as e:
                lat = sentence_error(e)
        out.append(lat)
    return out


def _iter_corpus(job: _Job, sentences: Iterable, executor: Any) -> Iterator[Decoded]:
    sents: list = []
    first: list = []
    for block, tabs in map_blocks(_block_tables, (job, CORPUS_PRUNE), sentences, executor):
        sents.extend(block)
        first.extend(tabs)

    def tables(prune: float) -> list[CorpusTable]:
        got = first
        if prune != CORPUS_PRUNE:                     # asked again, unpruned
            got = [t for _, tabs in map_blocks(_block_tables, (job, prune), sents, executor)
                   for t in tabs]
            if [isinstance(t, BaseException) for t in got] != \
                    [isinstance(t, BaseException) for t in first]:
                what = ("meu-corpus: a sentence failed when its chunks were listed again "
                        "unpruned; decode per sentence ")
                raise InputError(what + "(decoder='meu')", cli=what + "(--decoder meu)")
        return [t for t in got if not isinstance(t, BaseException)]
    try:
        preds = iter(decide_corpus(tables, job.decoder.beta, job.decoder.max_iter)[0]) \
            if sents else iter(())
    except MemoryError:
        what = (f"meu-corpus: out of memory deciding {len(sents)} sentences jointly; decode "
                f"them per sentence ")
        raise InputError(what + "(decoder='meu')", cli=what + "(--decoder meu)") from None
    decided = [None if isinstance(t, BaseException) else next(preds) for t in first]
    extras = iter(lambda: (), None)                  # () for ever: nothing asked for
    if job.confidences or job.marginals:
        extras = (x for _, xs in map_blocks(
            _block_extras, job, [_Decided(s, y) for s, y in zip(sents, decided)
                                 if y is not None], executor) for x in xs)
    for index, (s, t, y) in enumerate(zip(sents, first, decided)):
        if y is None:
            yield Decoded(index, None, t, s)
            continue
        extra = next(extras)
        if isinstance(extra, BaseException):
            yield Decoded(index, None, extra, s)
        else:
            yield Decoded(index, _convert(y, job.model.scheme_, job.output_scheme),
                          None, s, *extra)


@one_blas_thread
def decode_sentences(model, sentences, decoder: "str | Decoder" = "map", beta: float = 1.0,
                     k: int = 20,
                     output_scheme: str = "IOB2", memory_budget: int | None = None,
                     executor: Any = None) -> list[list[str]]:
    """Predicted tags for each sentence under a model, by ``decoder``; the first
    sentence that fails raises its error (:func:`iter_decode_sentences` goes on past it).

    Args:
        model: a fitted model (:class:`~fstchunk.models.crf.CRF`, ``HMM``, ...).
        sentences: what :func:`~fstchunk.io.conll.read_conll` returns.
        decoder: a name of :data:`fstchunk.decoding.decoders.REGISTRY` or a
            :class:`~fstchunk.decoding.decoders.Decoder`.
        beta: β of F_β, for the MEU decoders.
        k: the number of paths of ``meu-kbest``.
        output_scheme: the scheme of the tags returned.
        memory_budget: the bytes exact MEU may take per sentence.
        executor: a ``concurrent.futures`` executor to spread blocks of sentences over.

    Returns:
        One list of tags per sentence, in ``output_scheme``.

    Raises:
        InputError: an unknown decoder or setting, or a sentence the model cannot read.

    Examples:
        >>> import fstchunk
        >>> from fstchunk.io.conll import data_path
        >>> train = fstchunk.read_conll(data_path("conll2000", "train.txt"))[:50]
        >>> crf = fstchunk.CRF(max_iter=5).fit(train)
        >>> tags = fstchunk.decode_sentences(crf, train[:2], "meu", beta=0.5)
        >>> [len(t) for t in tags] == [len(s) for s in train[:2]]
        True
    """
    out = []
    for d in iter_decode_sentences(model, sentences, decoder, beta, k, output_scheme,
                                   memory_budget, executor):
        if d.error is not None:
            raise d.error
        out.append(d.tags)
    return out
