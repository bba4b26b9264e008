"""Running per-sentence work: one BLAS thread per process, processes over sentences.

Pitfall: every recursion here multiplies small matrices (tags x tags).  A
multithreaded BLAS spends more time waking threads than multiplying, and with
several worker processes it oversubscribes the cores: exact MEU decoding ran
16x slower that way.  So work is parallelised over sentences, and each process
pins its BLAS to one thread (threadpoolctl).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from contextlib import contextmanager
from typing import Callable, Sequence

from threadpoolctl import threadpool_limits


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@contextmanager
def single_threaded_blas():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _init_worker():
    threadpool_limits(limits=1, user_api="blas")


def map_sentences(func: Callable, items: Sequence, processes: int | None = None,
                  chunksize: int = 16) -> list:
    """``[func(x) for x in items]`` over ``processes`` forked workers (1 BLAS thread each).

    ``func`` must be a module-level function; state it needs should be set in a
    module global before the call (the workers are forked).
    """
    processes = processes or usable_cores()
    if processes <= 1 or len(items) < 2 * chunksize or "fork" not in mp.get_all_start_methods():
        with single_threaded_blas():
            return [func(x) for x in items]
    ctx = mp.get_context("fork")
    with ctx.Pool(processes, initializer=_init_worker) as pool:
        return pool.map(func, items, chunksize=chunksize)
