"""fstchunk.runtime.parallel.map_sentences: order, context, errors, dead workers, serial fallback.

The functions handed to map_sentences are module-level: a forked worker runs them
as they are, and only their results (or exceptions) are pickled back.
"""

import os
import signal
import time
from contextlib import contextmanager

import numpy as np
import pytest

from fstchunk.runtime.parallel import WorkerError, map_sentences, usable_cores


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


def sigint_ignored(context, x):
    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN, os.getpid()


def test_workers_ignore_sigint_and_the_caller_keeps_its_handler():
    before = signal.getsignal(signal.SIGINT)
    with time_limit(20):
        out = map_sentences(sigint_ignored, range(8), processes=2, chunksize=1)
    assert all(ignored for ignored, _ in out)
    assert len({pid for _, pid in out} - {os.getpid()}) >= 1       # really in workers
    assert signal.getsignal(signal.SIGINT) is before
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, set()) & {signal.SIGINT}


CTRL_C_SCRIPT = r'''
import os, signal, sys, time
from fstchunk.runtime.parallel import map_sentences

# as in a terminal, whatever the test runner left to inherit across exec: SIGINT
# handled (a background job inherits it ignored) and not blocked
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

def slow(marker, x):
    # a worker deep in a long C call reacts to no signal but SIGTERM/SIGKILL
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    open(os.path.join(marker, str(os.getpid())), "w").close()
    time.sleep(30)
    return x

def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True

try:
    map_sentences(slow, range(8), context=sys.argv[1], processes=2, chunksize=1)
except KeyboardInterrupt:
    pids = [int(p) for p in os.listdir(sys.argv[1])]
    print(f"interrupted once; workers alive: {sum(map(alive, pids))}", flush=True)
    sys.exit(130)
'''


def test_ctrl_c_stops_the_workers_without_their_tracebacks(tmp_path):
    """SIGINT to the whole process group (as a terminal's Ctrl-C): one
    KeyboardInterrupt in the caller, no traceback from the workers, none left."""
    import subprocess
    import sys
    script = tmp_path / "run.py"
    script.write_text(CTRL_C_SCRIPT)
    marker = tmp_path / "started"
    marker.mkdir()
    proc = subprocess.Popen([sys.executable, str(script), str(marker)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.time() + 20
        while len(os.listdir(marker)) < 2 and time.time() < deadline:
            time.sleep(0.05)
        assert len(os.listdir(marker)) == 2, "workers did not start"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=25)    # the workers would sleep 30 s
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    # the workers were stopped (and reaped) before map_sentences re-raised
    assert out == "interrupted once; workers alive: 0\n" and proc.returncode == 130
