"""fstchunk.parallel.map_sentences: order, context, errors, dead workers, serial fallback.

The functions handed to map_sentences are module-level: a forked worker runs them
as they are, and only their results (or exceptions) are pickled back.
"""

import os
import signal
import time
from contextlib import contextmanager

import numpy as np
import pytest

from fstchunk.parallel import WorkerError, map_sentences, usable_cores


def affine(context, x):
    a, b = context
    return a * x + b


def lookup(context, x):
    """A result that depends on the big context, and the process that computed it
    (a little slow, so that both workers take blocks from the queue)."""
    time.sleep(0.01)
    return float(context[x * 997 % len(context)]) + x, os.getpid()


def fails_on_seven(context, x):
    if x == 7:
        raise ZeroDivisionError(f"item {x} divides by zero")
    return x


def killed_on_five(context, x):
    if x == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    return x


def unpicklable(context, x):
    return lambda: x


def whoami(context, x):
    return os.getpid()


@contextmanager
def time_limit(seconds):
    """Fail, rather than hang, if the block takes longer than ``seconds``."""
    def expired(signum, frame):
        raise TimeoutError(f"map_sentences did not return within {seconds} s")
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("chunksize", [1, 2, 3, 5, 7, 16, 50])
def test_results_in_input_order_equal_the_serial_map(chunksize):
    items = list(range(103))
    ctx = (3, -1)
    want = [affine(ctx, x) for x in items]
    with time_limit(60):
        got = map_sentences(affine, items, context=ctx, processes=2, chunksize=chunksize)
    assert got == want


def test_context_reaches_the_workers():
    big = np.random.default_rng(0).normal(size=4_000_000)        # 32 MB, never pickled
    items = list(range(40))
    with time_limit(60):
        out = map_sentences(lookup, items, context=big, processes=2, chunksize=4)
    assert [v for v, _ in out] == [lookup(big, x)[0] for x in items]
    pids = {p for _, p in out}
    assert os.getpid() not in pids and len(pids) == 2       # really two forked workers


def test_worker_exception_is_reraised_with_type_and_message():
    with time_limit(60), pytest.raises(ZeroDivisionError, match="item 7 divides by zero"):
        map_sentences(fails_on_seven, range(30), processes=2, chunksize=2)


def test_killed_worker_raises_worker_error_and_does_not_hang():
    with time_limit(60), pytest.raises(WorkerError, match=r"died \(exit code -9\)"):
        map_sentences(killed_on_five, range(12), processes=2, chunksize=2)


def test_unpicklable_result_is_a_worker_error():
    with time_limit(60), pytest.raises(WorkerError, match="could not return its result"):
        map_sentences(unpicklable, range(8), processes=2, chunksize=2)


@pytest.mark.parametrize("kw", [dict(processes=1, chunksize=2),            # asked for
                                dict(processes=2, chunksize=16)])          # too few items
def test_serial_fallback_gives_the_same_results_in_this_process(kw):
    items = list(range(20))
    assert map_sentences(affine, items, context=(2, 5), **kw) == [2 * x + 5 for x in items]
    assert set(map_sentences(whoami, items, **kw)) == {os.getpid()}
    with pytest.raises(ZeroDivisionError, match="item 7"):
        map_sentences(fails_on_seven, items, **kw)


def test_empty_input_and_usable_cores():
    assert map_sentences(affine, [], context=(1, 0), processes=2) == []
    assert usable_cores() >= 1
