"""Data-parallel training past one core and one machine: local processes or Dask.

Every smooth objective is built from additive statistics over sentences
(:class:`fstchunk.models.objectives.Statistics`: Σ −log p for ``ml``, Σ E[F] for
``meu``, (Σ E[tp], Σ E[m], Σ m(gold)) for ``meu-corpus``, Σ hinge for
``max-margin``), so the training set splits into partitions (the model's
:meth:`Partitionable.partitions`), each worker returns its partition's statistics and
their θ-gradients, and the driver adds them and applies
:meth:`fstchunk.learn.objectives.Objective.combine` (the ratio's quotient rule for the
corpus F).  The executors know no model: any model with ``partitions`` and
``statistics`` trains data-parallel.  There is no second implementation of any objective: one partition
in this process is exactly the single-process path.

Two backends behind one interface (:class:`Executor`: ``partitioned(model, data)``
then ``statistics(θ, ...)`` per L-BFGS step):

* :class:`LocalExecutor` (``--workers N``): N forked processes that live as long as
  the training (:class:`fstchunk.runtime.parallel.ResidentPool`); each partition (its
  features, gold and pair design matrix, built once by the driver) reaches its
  process by fork, copy-on-write, never pickled; per step θ goes out through a pipe
  and only the statistics come back.  Batch inference (:meth:`map_ordered`) forks a
  window of blocks at a time;
* :class:`DaskExecutor` (``--scheduler tcp://HOST:PORT``, or ``local:N`` for a
  ``LocalCluster`` of N single-threaded worker processes): the partitions (a
  :meth:`~fstchunk.models.crf.CRF.scoring_copy` of the model, without its feature
  dictionary, and the partition's rows) are scattered once and stay on their
  workers; per step each task gets θ (8·|θ| bytes) and returns its partition's
  (values, J x |θ| gradients).

Faults: a worker lost during a step (killed, out of memory) is survived by
recomputing the step, once: a local worker is forked again from the driver's copy; on Dask the lost
partitions are scattered again from the driver's copy; a second loss in the same step, or any error inside
a task, is one :class:`~fstchunk.core.errors.InputError` naming the step.  A
scheduler that cannot be reached fails at once with its address.

Pitfalls: Dask's nannies start workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which
pins glibc's mmap threshold, so every numpy temporary above 128 kB costs fresh page
faults (the ML statistics ran 1.5x slower in such a worker); ``local:N`` starts its
workers without it, and a cluster of your own should unset it
(``distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_: null`` in its Dask
config).  Sums in another order differ in the last bits (a partitioned value
equals the single-process one to ~1e-12 relative, not bit for bit); every worker
pins its BLAS to one thread, so give a Dask worker one thread per process.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

import numpy as np

from ..core.errors import FstchunkError, InputError
from .parallel import (ResidentPool, WorkerError, in_process, map_sentences,
                       single_threaded_blas, usable_cores)


#: items in flight per worker in ``map_ordered`` (bounds the driver's memory)
WINDOW = 4


class Partitionable(Protocol):
    """What a model offers the executors to train data-parallel: its training set cut
    into shards (each a scoring copy of the model and its part of the data, built once
    by the driver and placed on a worker) and a shard's additive statistics at θ."""

    def partitions(self, data: Any, parts: int) -> list:
        """``data`` in ``parts`` shards of about equal work (:func:`split`)."""
        ...

    def statistics(self, data: Any, theta: np.ndarray, loss: Any
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The summed statistics of ``loss`` (a :class:`fstchunk.learn.loss.Loss`: the
        objective, β, the margin) over ``data`` at θ: values (J,) and their gradients in
        θ-space (J', |θ|)."""
        ...


def split(lengths: Sequence[int], parts: int) -> list[list[int]]:
    """Sentence ids in ``parts`` contiguous runs of about equal token counts (none
    empty unless there are fewer sentences than parts)."""
    lengths = np.asarray(lengths)
    parts = max(1, min(parts, len(lengths)))
    cuts = np.searchsorted(np.cumsum(lengths), np.arange(1, parts) * lengths.sum() / parts)
    bounds = [0, *sorted(set(int(c) + 1 for c in cuts)), len(lengths)]
    runs = [list(range(a, b)) for a, b in zip(bounds, bounds[1:]) if b > a]
    return runs


def shard_statistics(shard: tuple, theta: np.ndarray, loss: Any
                     ) -> tuple[np.ndarray, np.ndarray]:
    """One partition's statistics: ``shard`` is (scoring copy of the model, its data), as
    :meth:`Partitionable.partitions` made it."""
    model, data = shard
    with single_threaded_blas(), in_process():
        return model.statistics(data, theta, loss)


def _add(results: list) -> tuple[np.ndarray, np.ndarray]:
    values = np.sum([r[0] for r in results], axis=0)
    return values, np.sum([r[1] for r in results], axis=0)


class LocalExecutor:
    """``workers`` local processes (module doc)."""

    def __init__(self, workers: int | None = None):
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                    or workers < 1):
            raise InputError(f"workers must be an integer >= 1, got {workers!r}")
        self.workers = workers or usable_cores()
        self._pools: list[ResidentPool] = []

    def partitioned(self, model: Partitionable, data: Any,
                    parts: int | None = None) -> "_LocalParts":
        """``model``'s shards of ``data``, one resident process each (built here once, so
        that every fork has them)."""
        shards = model.partitions(data, parts or self.workers)
        parts = _LocalParts(ResidentPool(shard_statistics, shards))
        self._pools.append(parts.pool)
        return parts

    def map_ordered(self, func: Callable[[Any, Any], Any], context: Any,
                    items: Iterable) -> Iterator[Any]:
        """``func(context, item)`` for each item, in order, :data:`WINDOW` items per
        worker forked at a time (``context`` reaches them by fork); items are read
        only as the window needs them."""
        window: list = []
        for item in items:
            window.append(item)
            if len(window) == WINDOW * self.workers:
                yield from self._round(func, context, window)
                window = []
        if window:
            yield from self._round(func, context, window)

    def _round(self, func, context, items: list) -> list:
        return _twice(lambda: map_sentences(func, items, context=context,
                                            processes=self.workers, chunksize=1))

    def close(self) -> None:
        for pool in self._pools:
            pool.close()
        self._pools.clear()


def _twice(work: Callable[[], Any]) -> Any:
    """``work()``, forked again once when a worker process is lost (killed)."""
    try:
        return work()
    except WorkerError:
        pass
    try:
        return work()
    except WorkerError as e:
        raise InputError(f"a worker process was lost twice in one step: {e}") from None


class _LocalParts:
    """Partitions resident in forked processes (:class:`~fstchunk.runtime.parallel.ResidentPool`)."""

    def __init__(self, pool: ResidentPool):
        self.pool = pool

    def statistics(self, theta, loss):
        try:
            return _add(self.pool.call(theta, loss))
        except WorkerError as e:
            raise InputError(f"a training worker process was lost twice in one step: "
                             f"{e}") from None


class DaskExecutor:
    """A Dask distributed client (module doc); ``scheduler``: ``tcp://HOST:PORT`` or
    ``local:N``."""

    def __init__(self, scheduler: str, timeout: float = 10.0):
        try:
            import distributed
        except ImportError:
            raise InputError("--scheduler needs Dask: pip install 'fstchunk[dask]'") from None
        self.cluster = None
        if scheduler.startswith("local:"):
            n = scheduler[len("local:"):]
            if not n.isdigit() or int(n) < 1:
                raise InputError(f"--scheduler local:N needs N >= 1 worker processes, got "
                                 f"{scheduler!r}")
            import dask
            # Dask's nannies set MALLOC_TRIM_THRESHOLD_, which also fixes glibc's mmap
            # threshold: every temporary above 128 kB is then mapped and unmapped, and
            # a worker ran the ML statistics 1.5x slower than a plain process
            with dask.config.set({"distributed.nanny.pre-spawn-environ."
                                  "MALLOC_TRIM_THRESHOLD_": None}):
                self.cluster = distributed.LocalCluster(
                    n_workers=int(n), threads_per_worker=1, processes=True,
                    dashboard_address=None, host="127.0.0.1")
            address = self.cluster.scheduler_address
        else:
            address = scheduler
        try:
            self.client = distributed.Client(address, timeout=timeout)
        except (OSError, TimeoutError) as e:
            if self.cluster is not None:
                self.cluster.close()
            raise InputError(f"cannot reach the Dask scheduler at {address}: {e}") from None
        self.address = address

    @property
    def workers(self) -> int:
        return max(1, len(self.client.scheduler_info()["workers"]))

    def partitioned(self, model: Partitionable, data: Any,
                    parts: int | None = None) -> "_DaskParts":
        """``model``'s shards of ``data``, scattered once to the workers."""
        return _DaskParts(self, model.partitions(data, parts or self.workers))

    def map_ordered(self, func: Callable[[Any, Any], Any], context: Any,
                    items: Iterable) -> Iterator[Any]:
        """``func(context, item)`` for each item, in order, on the cluster: ``context``
        scattered once to every worker, at most :data:`WINDOW` tasks per worker in
        flight, items read only as the window needs them.  Tasks lost with a worker
        are submitted again once (with ``context`` scattered again)."""
        client = self.client
        placed = [client.scatter(context, broadcast=True, hash=False)]
        pending: deque = deque()

        def submit(item):
            return client.submit(_in_worker, func, placed[0], item, pure=False)

        def take():
            item, fut = pending.popleft()
            try:
                return fut.result()
            except Exception as e:                 # noqa: BLE001 (sorted out below)
                self._failed(e)
            placed[0] = client.scatter(context, broadcast=True, hash=False)
            for j, (other, _) in enumerate(pending):
                pending[j] = (other, submit(other))
            try:
                return submit(item).result()
            except Exception as e:                 # noqa: BLE001
                self._failed(e, again=True)
        for item in items:
            pending.append((item, submit(item)))
            if len(pending) >= WINDOW * self.workers:
                yield take()
        while pending:
            yield take()

    def _failed(self, e: BaseException, again: bool = False) -> None:
        """Re-raise a task's user-level error as it is; anything else but a first
        lost worker as one InputError naming the scheduler."""
        if isinstance(e, FstchunkError):
            raise e
        if again or not _lost_worker(e):
            raise InputError(f"a Dask task on {self.address} failed"
                             f"{' again after a lost worker' if again else ''}: "
                             f"{type(e).__name__}: {e}") from None

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self) -> "DaskExecutor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _DaskParts:
    def __init__(self, ex: DaskExecutor, shards: list):
        self.ex, self.shards = ex, shards
        self.steps = 0
        self._place()

    def _place(self) -> None:
        self.futures = self.ex.client.scatter(self.shards, hash=False)

    def statistics(self, theta, loss):
        self.steps += 1
        for attempt in (1, 2):
            try:
                return _add(self._run(theta, loss))
            except Exception as e:                 # noqa: BLE001 (sorted out below)
                if attempt == 2 or not _lost_worker(e):
                    raise InputError(f"Dask step {self.steps} on {self.ex.address} failed: "
                                     f"{type(e).__name__}: {e}") from None
                self._place()                      # the lost partitions, scattered again

    def _run(self, theta, loss) -> list:
        client = self.ex.client
        futs = [client.submit(shard_statistics, f, theta, loss, pure=False)
                for f in self.futures]
        return client.gather(futs)


def _in_worker(func: Callable[[Any, Any], Any], context: Any, item: Any) -> Any:
    """A task on a Dask worker: one BLAS thread, no forking (worker threads)."""
    with single_threaded_blas(), in_process():
        return func(context, item)


def _lost_worker(e: BaseException) -> bool:
    """Whether ``e`` says a worker (and the data it held) was lost."""
    names = {type(e).__name__, *(c.__name__ for c in type(e).__mro__)}
    return bool(names & {"KilledWorker", "FutureCancelledError", "CancelledError",
                         "CommClosedError", "FuturesCancelledError"}) or \
        "lost" in str(e).lower()


def executor(workers: int | None = None, scheduler: str | None = None
             ) -> LocalExecutor | DaskExecutor | None:
    """The executor of ``--workers``/``--scheduler`` (None: this process only)."""
    if scheduler:
        if workers not in (None, 1):
            raise InputError("give --workers or --scheduler, not both (a Dask cluster has "
                             "its own workers)")
        return DaskExecutor(scheduler)
    if workers is None or workers == 1:
        return None
    return LocalExecutor(workers)

