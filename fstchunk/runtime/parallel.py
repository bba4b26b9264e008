"""Running per-sentence work: one BLAS thread per process, processes over sentences.

:func:`map_sentences` computes ``[func(context, x) for x in items]``.  The
``context`` (a model, score arrays, gold chunks: often hundreds of MB) reaches
the workers by ``fork``, never by pickling and never through a module global:
each worker process is started with ``(func, context, items)`` as the
arguments of its target, which a forked child inherits as they are.  Only block
numbers (through a queue) and results (through a pipe per worker) travel.

Pitfalls:

* every recursion here multiplies small matrices (tags x tags).  A
  multithreaded BLAS spends more time waking threads than multiplying, and with
  several worker processes it oversubscribes the cores: exact MEU decoding ran
  16x slower that way.  So work is parallelised over sentences, and each
  process pins its BLAS to one thread (threadpoolctl; the public calls limit
  themselves too: :mod:`fstchunk.core.blas`).
* an exception in a worker is re-raised in the caller (same type and message);
  a worker that dies without answering (killed, out of memory) raises
  :class:`WorkerError` naming its exit code.  Nothing is silently dropped.
* Ctrl-C: the workers ignore SIGINT (the terminal sends it to the whole
  process group); the caller gets one KeyboardInterrupt, terminates the
  workers and re-raises it, so no worker prints a traceback.  SIGINT is
  blocked while the workers are forked, so none can catch it before it
  ignores it;
* where ``fork`` does not exist (Windows, macOS defaults), in a daemonic process (a
  worker of this pool, which may not have children), inside :func:`in_process` (a
  Dask worker: forking a threaded process can hang), or for a handful of items, the
  work runs in this process.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from contextlib import contextmanager
from contextvars import ContextVar
from multiprocessing.connection import wait as mp_wait
from typing import Any, Callable, Sequence

from threadpoolctl import threadpool_limits

from ..core.blas import ONE_THREAD, OneThread


class WorkerError(RuntimeError):
    """A worker process ended without returning its results."""


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


_IN_PROCESS: ContextVar[bool] = ContextVar("fstchunk_in_process", default=False)


@contextmanager
def in_process():
    """Within it, :func:`map_sentences` runs in this process: for code that already runs
    in a worker (a Dask worker has threads, and forking a threaded process can hang)."""
    token = _IN_PROCESS.set(True)
    try:
        yield
    finally:
        _IN_PROCESS.reset(token)


def single_threaded_blas() -> OneThread:
    """``with single_threaded_blas():`` one BLAS thread inside, the caller's count
    restored after (:data:`fstchunk.core.blas.ONE_THREAD`: re-entrant, ~1 µs when nested)."""
    return ONE_THREAD


def _worker(func: Callable, context: Any, items: list, blocks: list, tasks, conn) -> None:
    """Body of one forked worker: take block numbers from ``tasks`` until ``None``,
    send ("ok", block, results) per block, or ("error", exception) and stop.
    SIGINT is ignored here: the caller alone handles Ctrl-C and terminates us."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # terminate() ends us, quietly
    _unblock_sigint()
    threadpool_limits(limits=1, user_api="blas")
    try:
        for b in iter(tasks.get, None):
            out = [func(context, items[i]) for i in blocks[b]]
            try:
                conn.send(("ok", b, out))
            except Exception as e:      # an unpicklable result
                conn.send(("error", WorkerError(f"worker could not return its result: {e!r}")))
                return
    except BaseException as e:          # noqa: BLE001 - handed to the caller
        try:
            conn.send(("error", e))
        except Exception as e2:         # an unpicklable exception
            conn.send(("error", WorkerError(f"worker failed: {e!r} ({e2!r})")))
    finally:
        conn.close()


def _block_sigint() -> bool:
    """Block SIGINT in this thread (while forking); whether it was done."""
    if not hasattr(signal, "pthread_sigmask"):
        return False
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    return True


def _unblock_sigint() -> None:
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def map_sentences(func: Callable[[Any, Any], Any], items: Sequence, context: Any = None,
                  processes: int | None = None, chunksize: int = 16) -> list:
    """``[func(context, x) for x in items]`` over ``processes`` forked workers.

    ``func`` takes the shared ``context`` and one item.  Items go out in blocks of
    ``chunksize``; each worker takes the next block number from a queue when it
    is free (long and short sentences balance out), and only block numbers and
    results cross between processes.  Results come back in input order.
    """
    items = list(items)
    processes = min(processes or usable_cores(), max(1, len(items) // max(chunksize, 1)))
    if processes <= 1 or "fork" not in mp.get_all_start_methods() or \
            mp.current_process().daemon or _IN_PROCESS.get():   # a worker has no children
        with single_threaded_blas():
            return [func(context, x) for x in items]
    blocks = [list(range(b, min(b + chunksize, len(items))))
              for b in range(0, len(items), chunksize)]
    ctx = mp.get_context("fork")
    tasks = ctx.SimpleQueue()
    for b in range(len(blocks)):
        tasks.put(b)
    for _ in range(processes):
        tasks.put(None)
    workers, conns = [], []
    blocked = _block_sigint()
    results: list = [None] * len(items)
    failure: BaseException | None = None
    done = 0
    try:
        for _ in range(processes):
            recv, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_worker, args=(func, context, items, blocks, tasks, send),
                            daemon=True)
            p.start()
            send.close()                  # a worker's death now reads as EOF on recv
            workers.append(p)
            conns.append(recv)
        if blocked:
            blocked = False
            _unblock_sigint()             # a Ctrl-C that came meanwhile is raised here
        open_conns = list(conns)
        while open_conns and failure is None:
            # a timeout, so that a Ctrl-C the kernel handed to another thread (BLAS
            # threads do not block SIGINT) is still raised here within half a second
            for conn in mp_wait(open_conns, timeout=0.5):
                try:
                    msg = conn.recv()
                except EOFError:          # finished (all its blocks sent) or died
                    open_conns.remove(conn)
                    continue
                if msg[0] == "error":
                    failure = msg[1]
                    break
                _, b, out = msg
                for i, r in zip(blocks[b], out):
                    results[i] = r
                done += 1
    except BaseException:                 # Ctrl-C (or any failure here): stop the workers
        _stop(workers, conns)
        if blocked:
            _unblock_sigint()
        raise
    if failure is not None:
        for p in workers:
            p.terminate()
    for p in workers:
        p.join()
    for conn in conns:
        conn.close()
    if failure is not None:
        raise failure
    if done != len(blocks):
        code = next((p.exitcode for p in workers if p.exitcode), None)
        raise WorkerError(f"a worker process died (exit code {code}) before returning "
                          f"its results ({len(blocks) - done} of {len(blocks)} blocks missing)")
    return results


def _stop(workers: list, conns: list) -> None:
    """Terminate and reap the workers, close their pipes (after a Ctrl-C)."""
    for p in workers:
        if p.is_alive():
            p.terminate()
    for p in workers:
        p.join()
    for conn in conns:
        conn.close()


class ResidentPool:
    """One long-lived forked process per context: ``call(*args)`` returns
    ``[func(context_k, *args) for each k]``, computed side by side.

    Each context (a partition of a training set: features, gold, design matrix)
    reaches its process once, by fork, and stays there; per call only ``args`` (θ)
    go out and the results come back, through one pipe per process.  A process that
    dies (killed, out of memory) is forked again from the caller's copy of its
    context and its part recomputed, once per call; a second loss, or an exception
    in ``func`` (re-raised here as it was), ends the call.  Where ``fork`` is not
    available (or inside a worker), the parts run in this process.  Ctrl-C stops
    the processes; :meth:`close` (or garbage collection) ends them.
    """

    def __init__(self, func: Callable[..., Any], contexts: Sequence[Any]):
        self.func, self.contexts = func, list(contexts)
        self.local = "fork" not in mp.get_all_start_methods() or mp.current_process().daemon \
            or _IN_PROCESS.get()
        self.procs: list = [None] * len(self.contexts)
        self.conns: list = [None] * len(self.contexts)
        if not self.local:
            for k in range(len(self.contexts)):
                self._start(k)

    def _start(self, k: int) -> None:
        ctx = mp.get_context("fork")
        here, there = ctx.Pipe()
        blocked = _block_sigint()
        try:
            p = ctx.Process(target=_resident, args=(self.func, self.contexts[k], there),
                            daemon=True)
            p.start()
        finally:
            if blocked:
                _unblock_sigint()
        there.close()
        self.procs[k], self.conns[k] = p, here

    def call(self, *args: Any) -> list:
        if self.local:
            with single_threaded_blas():
                return [self.func(c, *args) for c in self.contexts]
        try:
            for conn in self.conns:
                conn.send(args)
            out = [self._answer(k, args) for k in range(len(self.conns))]
        except BaseException:
            self.close()
            raise
        return out

    def _answer(self, k: int, args: tuple) -> Any:
        for attempt in (1, 2):
            try:
                status, value = self.conns[k].recv()
                break
            except (EOFError, OSError):
                code = self.procs[k].exitcode
                self.procs[k].join()
                if attempt == 2:
                    raise WorkerError(f"worker {k} died twice in one call (exit code "
                                      f"{code})") from None
                self._start(k)
                self.conns[k].send(args)
        if status == "error":
            raise value
        return value

    def close(self) -> None:
        for p, conn in zip(self.procs, self.conns):
            if conn is not None:
                conn.close()
            if p is not None and p.is_alive():
                p.terminate()
        for p in self.procs:
            if p is not None:
                p.join()
        self.procs = [None] * len(self.contexts)
        self.conns = [None] * len(self.contexts)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:       # noqa: BLE001 - interpreter shutdown
            pass


def _resident(func: Callable[..., Any], context: Any, conn) -> None:
    """Body of a resident process: answer each ``args`` until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # terminate() ends us, quietly
    _unblock_sigint()
    threadpool_limits(limits=1, user_api="blas")
    while True:
        try:
            args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            conn.send(("ok", func(context, *args)))
        except BaseException as e:      # noqa: BLE001 - handed to the caller
            try:
                conn.send(("error", e))
            except Exception as e2:     # an unpicklable exception
                conn.send(("error", WorkerError(f"worker failed: {e!r} ({e2!r})")))
