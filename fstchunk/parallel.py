"""Running per-sentence work: one BLAS thread per process, processes over sentences.

:func:`map_sentences` computes ``[func(context, x) for x in items]``.  The
``context`` (a model, score arrays, gold chunks: often hundreds of MB) reaches
the workers by ``fork``, never by pickling and never through a module global:
each worker process is started with ``(func, context, its items)`` as the
arguments of its target, which a forked child inherits as they are.  Only the
items' results travel back, through a pipe.

Pitfalls:

* every recursion here multiplies small matrices (tags x tags).  A
  multithreaded BLAS spends more time waking threads than multiplying, and with
  several worker processes it oversubscribes the cores: exact MEU decoding ran
  16x slower that way.  So work is parallelised over sentences, and each
  process pins its BLAS to one thread (threadpoolctl).
* an exception in a worker is re-raised in the caller (same type and message);
  a worker that dies without answering (killed, out of memory) raises
  :class:`WorkerError` naming its exit code.  Nothing is silently dropped.
* where ``fork`` does not exist (Windows, macOS defaults), or for a handful of
  items, the work runs in this process.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from contextlib import contextmanager
from typing import Any, Callable, Sequence

from threadpoolctl import threadpool_limits


class WorkerError(RuntimeError):
    """A worker process ended without returning its results."""


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@contextmanager
def single_threaded_blas():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _worker(func: Callable, context: Any, items: list, conn) -> None:
    """Body of one forked worker: run its items, send (ok, results or exception)."""
    threadpool_limits(limits=1, user_api="blas")
    try:
        out = (True, [func(context, x) for x in items])
    except BaseException as e:          # noqa: BLE001 - handed to the caller
        out = (False, e)
    try:
        conn.send(out)
    except Exception as e:              # an unpicklable result or exception
        conn.send((False, WorkerError(f"worker could not return its result: {e!r}")))
    finally:
        conn.close()


def map_sentences(func: Callable[[Any, Any], Any], items: Sequence, context: Any = None,
                  processes: int | None = None, chunksize: int = 16) -> list:
    """``[func(context, x) for x in items]`` over ``processes`` forked workers.

    ``func`` takes the shared ``context`` and one item.  Items are dealt out in
    blocks of ``chunksize``, round robin, so each worker gets a mix of the
    sequence (long and short sentences alike); results come back in input order.
    """
    items = list(items)
    processes = min(processes or usable_cores(), max(1, len(items) // max(chunksize, 1)))
    if processes <= 1 or "fork" not in mp.get_all_start_methods():
        with single_threaded_blas():
            return [func(context, x) for x in items]
    blocks = [list(range(b, min(b + chunksize, len(items))))
              for b in range(0, len(items), chunksize)]
    owned = [[i for blk in blocks[w::processes] for i in blk] for w in range(processes)]
    ctx = mp.get_context("fork")
    workers = []
    for ids in owned:
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_worker, args=(func, context, [items[i] for i in ids], send),
                        daemon=True)
        p.start()
        send.close()
        workers.append((p, recv, ids))
    results: list = [None] * len(items)
    failure: BaseException | None = None
    for p, recv, ids in workers:          # receive before joining: a full pipe blocks
        try:
            ok, out = recv.recv()
        except EOFError:
            p.join()
            ok, out = False, WorkerError(f"a worker process died (exit code {p.exitcode}) "
                                         f"before returning {len(ids)} results")
        recv.close()
        if not ok:
            failure = failure or out
            continue
        for i, r in zip(ids, out):
            results[i] = r
    for p, _, _ in workers:
        p.join()
    if failure is not None:
        raise failure
    return results
