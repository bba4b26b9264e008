"""BLAS threads inside fstchunk's calls: one thread, set once per public call.

Every recursion here multiplies small matrices (states × states, by states × counts
at most); a multithreaded BLAS (OpenBLAS starts one thread per core) spends more
time waking its threads than multiplying, and the library was 10–25x slower from
Python than from the CLI, which limited the threads for the whole command.  So the
public entry points (``expected_f``, the decoders, ``Lattice.marginals`` and its
kin, the training objectives, the batch decoders) run their body under
:data:`ONE_THREAD` through the decorator :func:`one_blas_thread`; generators are
stepped under it by :func:`limited_iter`, so that the limit never reaches the
caller's code between two items.  Parallelism comes from processes over sentences
(:mod:`fstchunk.runtime.parallel`, ``--workers``), never from BLAS threads.  Why one
(benchmarks/RESULTS.md, "Library threads: API against CLI"): with the default
thread count ``expected_f`` on a 2000-token sentence took 5–27x the CLI's time on a
2-core machine (the more, the busier it was; 10–25x on the issue's many-core one),
while a limit of two threads instead of one moved it by under ±20% either way.

Mechanism: a process-wide depth counter under a lock.  The outermost entry saves
each BLAS library's thread count and sets it to 1; the last exit restores the
saved counts, so the caller's setting (``threadpool_limits``, OPENBLAS_NUM_THREADS)
is back after every call, error or not.  Nested entries, and calls from other
threads meanwhile, cost a lock and an increment (well under a microsecond); the
outermost one sets the count through threadpoolctl's per-library controllers,
found once by :class:`threadpoolctl.ThreadpoolController` (≈0.1–0.3 ms, more with
many libraries: too slow per call, which is what ``threadpool_limits`` does) and
found again only after new modules have been imported (a BLAS library comes with
its Python module: numpy, scipy.linalg, torch).

Pitfalls:

* the BLAS setting is per process, not per thread: while one thread is inside an
  fstchunk call, another thread's own matrix products also get one BLAS thread.
  Big products of the caller's belong outside fstchunk's calls.
* threadpoolctl (≥ 3.6) lets only one thread set OpenBLAS's count and silently
  ignores the others; the limit here calls the library's own setter, so that a
  call from a worker thread (Dask's) is limited too.
* a child forked inside a call inherits the depth and the single thread; the lock
  is made anew in the child (a lock held by another thread at the fork would never
  be released there).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from typing import Callable, Iterable, Iterator, TypeVar

from threadpoolctl import ThreadpoolController

#: BLAS threads inside a limited call
LIMIT = 1

F = TypeVar("F", bound=Callable)
T = TypeVar("T")


class OneThread:
    """The re-entrant, process-wide limit (module doc); the one instance is :data:`ONE_THREAD`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.saved: list = []          # (library controller, its thread count) at entry
        self.libs: list = []           # the BLAS libraries' controllers
        self.seen = -1                 # len(sys.modules) when they were found

    def libraries(self) -> list:
        """The BLAS libraries' threadpoolctl controllers, found again after imports."""
        if len(sys.modules) != self.seen:
            self.libs = list(ThreadpoolController().select(user_api="blas").lib_controllers)
            self.seen = len(sys.modules)
        return self.libs

    def __enter__(self) -> "OneThread":
        with self.lock:
            if self.depth == 0:
                saved = []
                for lib in self.libraries():
                    n = lib.get_num_threads()
                    if n is not None and n != LIMIT:
                        _set_threads(lib, LIMIT)
                        saved.append((lib, n))
                self.saved = saved
            self.depth += 1
        return self

    def __exit__(self, *exc) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                saved, self.saved = self.saved, []
                for lib, n in saved:
                    _set_threads(lib, n)

    def reset_lock(self) -> None:
        self.lock = threading.Lock()


def _set_threads(lib, n: int) -> None:
    """Set a library's thread count from whichever thread we are in.  threadpoolctl's
    OpenBLAS controller ignores a setting from any thread but the first one that set
    a limit (its "controlling thread", ≥ 3.6), which would leave a call from a worker
    thread (a Dask worker's) multithreaded; the depth counter above already serialises
    our settings, so the library's own setter is called (threadpoolctl's
    ``_real_set_num_threads`` where it exists)."""
    getattr(lib, "_real_set_num_threads", lib.set_num_threads)(n)


#: ``with ONE_THREAD:`` runs its body with one BLAS thread (re-entrant, module doc)
ONE_THREAD = OneThread()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=ONE_THREAD.reset_lock)


def one_blas_thread(func: F) -> F:
    """Decorator: ``func``'s body runs under :data:`ONE_THREAD` (module doc)."""
    @functools.wraps(func)
    def limited(*args, **kwargs):
        with ONE_THREAD:
            return func(*args, **kwargs)
    return limited  # type: ignore[return-value]


def limited_iter(items: Iterable[T]) -> Iterator[T]:
    """The items of ``items``, each one computed under :data:`ONE_THREAD`; between two
    items (in the caller's code) the caller's own thread setting holds."""
    it = iter(items)
    while True:
        with ONE_THREAD:
            try:
                item = next(it)
            except StopIteration:
                return
        yield item

