"""Work in blocks of sentences: the unit a command sends to an executor's workers
(:mod:`fstchunk.runtime.scale`) and gets back in input order.

:func:`blocks` cuts a stream of sentences into blocks of about :data:`BLOCK_TOKENS`
tokens; :func:`map_blocks` runs ``func(context, block)`` on each, here or on an
executor, a bounded window in flight (decode, expected, segment decode read it).
:func:`sentence_error` is how one sentence's failure travels back.

Pitfalls: a block's work must not depend on the block boundaries; errors travel back
pickled, so a sentence error is one of the picklable
:class:`~fstchunk.core.errors.FstchunkError` family or ``MemoryError``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from ..core.errors import LayoutError

def sentence_error(e: BaseException) -> BaseException:
    """``e`` as one sentence's outcome (its traceback dropped, so that it travels
    light): one of the errors that stop a sentence, not the run
    (:data:`fstchunk.structures.lattices.SENTENCE_ERRORS`); a LayoutError (the file's
    columns do not fit the model), a fault of the whole input, is raised again instead."""
    if isinstance(e, LayoutError):
        raise e
    return e.with_traceback(None)


#: sentences are turned into lattices and decoded in blocks of about this many
#: tokens (ragged batches of the batched engine within a block), so memory stays
#: bounded on a large file; the unit of work sent to an executor
BLOCK_TOKENS = 8000


def blocks(sentences: Iterable) -> Iterator[list]:
    """Consecutive sentences in blocks of about :data:`BLOCK_TOKENS` tokens."""
    block, size = [], 0
    for s in sentences:
        block.append(s)
        size += len(s)
        if size >= BLOCK_TOKENS:
            yield block
            block, size = [], 0
    if block:
        yield block


def map_blocks(func: Callable[[Any, list], Any], context: Any, sentences: Iterable,
               executor: Any = None) -> Iterator[tuple[list, Any]]:
    """(block, ``func(context, block)``) for each block of ``sentences``, in order:
    here, one block at a time, or on ``executor`` (its ``map_ordered``, a bounded
    window in flight)."""
    if executor is None:
        for block in blocks(sentences):
            yield block, func(context, block)
        return
    pending: list = []

    def tracked() -> Iterator[list]:
        for block in blocks(sentences):
            pending.append(block)
            yield block
    for result in executor.map_ordered(func, context, tracked()):
        yield pending.pop(0), result
