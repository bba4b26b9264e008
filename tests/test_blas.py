"""fstchunk.core.blas: the public calls run with one BLAS thread, and give the caller's
setting back.

Each check reads the BLAS libraries' thread counts (threadpoolctl) before a call,
inside it (a spy in place of a function the call runs) and after it, with the
caller's own setting at USER = 3 threads (not the machine's default, so that a
call that merely leaves the default in place is caught).
"""

import os
import signal
import sys
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import fstchunk.decoding.batch as batch
import fstchunk.core.blas as blas
import fstchunk.decoding.decode as dec
import fstchunk.decoding.decoders as decoders
import fstchunk.engine.inference as inference
import fstchunk.decoding.expected as expected
import fstchunk.structures.lattice as lattice_mod
import fstchunk.decoding.lossaug as lossaug
import fstchunk.models.objectives as obj
from fstchunk import Lattice, TagSet, decode_meu, decode_meu_corpus, expected_f
from fstchunk.core.blas import ONE_THREAD, limited_iter, one_blas_thread
from fstchunk.core.errors import InputError
from fstchunk.runtime.parallel import single_threaded_blas
from oracles import random_scores

USER = 3


def threads() -> list[int]:
    """Every BLAS library's thread count, as threadpoolctl reads it afresh."""
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


@pytest.fixture
def user_threads():
    """The caller's setting: USER threads in every BLAS library (checked, so that a
    test cannot pass because the setting never took)."""
    with threadpool_limits(limits=USER, user_api="blas"):
        assert threads() and set(threads()) == {USER}
        yield
    assert ONE_THREAD.depth == 0


def spy(monkeypatch, module, name, seen):
    """Replace ``module.name`` by a wrapper that records the thread counts inside."""
    real = getattr(module, name)

    def wrapper(*a, **k):
        seen.append(threads())
        return real(*a, **k)
    monkeypatch.setattr(module, name, wrapper)


def lattice(seed, scheme="IOB2", types=("NP", "VP"), n=12, scale=1.0):
    tags = TagSet(scheme, types).tags
    rng = np.random.default_rng(seed)
    return Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale), scheme=scheme)


def test_the_public_calls_run_with_one_thread_and_restore_the_callers(user_threads, monkeypatch):
    lat = lattice(0)
    hyp = dec.decode_map(lat).tags
    cases = [
        (lattice_mod, "tp_count_table", lambda: expected_f(lat, hypothesis=hyp, method="fast")),
        (expected, "joint_by_composition", lambda: expected_f(lat, reference=hyp, method="fst")),
        (lattice_mod, "exact_meu", lambda: decode_meu(lat)),
        (dec, "_shortest", lambda: decode_meu(lat, method="kbest", k=3)),
        (inference, "viterbi", lambda: dec.decode_map(lat)),
        (dec, "tilted_spans", lambda: decode_meu_corpus([lat, lattice(1)])),
        (dec, "tilted_spans", lambda: decoders.decode_lattices([lat], "meu-corpus")),
        (inference, "viterbi", lambda: dec.decode_posterior(lat)),
        (lattice_mod, "token_marginals", lat.marginals),
        (lattice_mod, "dense_marginals", lat.chunk_marginals),
        (lattice_mod, "forward", lat.log_partition),
        (lattice_mod, "forward", lambda: lat.log_prob(hyp)),
        (lossaug, "hamming_viterbi", lambda: lossaug.decode_loss_augmented(lat, hyp)),
        (lossaug, "f_loss_viterbi", lambda: lossaug.decode_loss_augmented(lat, hyp, loss="f")),
    ]
    for module, name, call in cases:
        seen: list = []
        with monkeypatch.context() as m:
            spy(m, module, name, seen)
            call()
        assert seen, f"{name} was not reached"
        assert all(set(s) == {1} for s in seen), (name, seen)
        assert set(threads()) == {USER}, name


def test_the_training_objectives_run_with_one_thread(user_threads, monkeypatch):
    lat = lattice(2, scheme="IOBES", n=9)
    gold_tags = dec.decode_map(lat).tags
    tags = lat.tags
    e, t, s, en = lat.scores
    chain = obj.Chain(tuple(tags), lat.scheme, e, t, s, en)
    gold = obj.Gold([np.array([tags.index(x) for x in gold_tags])], tags, lat.scheme)
    for name, inner in (("ml", "transfer"), ("meu", "expected_utility_grad"),
                        ("meu_corpus", "corpus_expectations")):
        seen: list = []
        with monkeypatch.context() as m:
            spy(m, obj, inner, seen)
            getattr(obj, name)(chain, gold)
        assert seen and all(set(x) == {1} for x in seen), (name, seen)
        assert set(threads()) == {USER}, name


def test_restored_after_an_error_inside():
    lat = lattice(3)
    with threadpool_limits(limits=USER, user_api="blas"):
        with pytest.raises(InputError):
            expected_f(lat, hypothesis=["O"] * (lat.n + 1), method="fast")
        with pytest.raises(InputError):
            decode_meu(lat, beta=-1.0)
        assert set(threads()) == {USER}
    assert ONE_THREAD.depth == 0


def test_nested_limits_hold_until_the_outermost_ends(user_threads):
    inner_seen = []

    @one_blas_thread
    def inner():
        inner_seen.append(threads())

    @one_blas_thread
    def outer():
        inner()
        inner_seen.append(threads())            # still limited after the inner exit
        with single_threaded_blas():
            inner()
        return threads()

    assert set(outer()) == {1}
    assert all(set(s) == {1} for s in inner_seen)
    assert set(threads()) == {USER}


def test_overlapping_calls_from_two_threads_restore_the_callers_setting(user_threads):
    """A enters, B enters, A leaves, B leaves: the setting after is the caller's.
    (Limits that each save and restore on their own leave one thread behind here.)"""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with ONE_THREAD:
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def b():
        a_in.wait(10)
        with ONE_THREAD:
            b_in.set()
            a_out.wait(10)
            seen["b after a left"] = threads()

    ts = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    assert set(seen["b after a left"]) == {1}
    assert set(threads()) == {USER}


def test_limited_iter_limits_each_step_and_not_the_callers_loop(user_threads):
    def gen():
        for i in range(3):
            yield i, threads()

    for i, inside in limited_iter(gen()):
        assert set(inside) == {1}
        assert set(threads()) == {USER}          # the caller's body between items
    it = limited_iter(gen())
    next(it)                                       # abandoned half way
    del it
    assert set(threads()) == {USER}


class _Model:
    """The model protocol's least: lattices of sentences (one lattice per sentence)."""
    scheme_ = "IOB2"

    def __init__(self, seen):
        self.seen = seen

    def lattices(self, sentences):
        self.seen.append(threads())
        return [lattice(len(s), n=len(s)) for s in sentences]


@pytest.mark.parametrize("decoder", ["map", "meu", "meu-corpus"])
def test_iter_decode_sentences_limits_its_work_not_the_callers_loop(user_threads, decoder):
    seen: list = []
    model = _Model(seen)
    sentences = [list(range(n)) for n in (4, 6, 5)]
    out = []
    for d in batch.iter_decode_sentences(model, sentences, decoder=decoder):
        assert set(threads()) == {USER}
        out.append(d.tags)
    assert len(seen) >= 2 and all(set(s) == {1} for s in seen[1:]), seen   # seen[0]: read([])
    assert [len(t) for t in out] == [4, 6, 5]
    assert batch.decode_sentences(model, sentences, decoder=decoder) == out
    assert set(threads()) == {USER}


@pytest.mark.parametrize("scheme", ["IOB1", "IOB2", "IOE2", "IOBES", "BILOU"])
def test_the_limit_changes_no_number(scheme):
    """The decorated calls under the caller's threads give, bit for bit, what the
    undecorated bodies give under one thread (the CLI's setting); peaked scores too."""
    for seed, scale in ((4, 1.0), (5, 30.0)):
        lat = lattice(seed, scheme=scheme, n=15, scale=scale)
        hyp = dec.decode_map(lat).tags
        calls = [
            (expected_f, (lat,), dict(hypothesis=hyp, method="fast")),
            (expected_f, (lat,), dict(reference=hyp, method="fast", beta=0.5)),
            (decode_meu, (lat,), {}),
            (Lattice.marginals, (lat,), {}),
            (Lattice.chunk_marginals, (lat,), {}),
        ]
        for f, a, k in calls:
            with threadpool_limits(limits=USER, user_api="blas"):
                got = f(*a, **k)
            with threadpool_limits(limits=1, user_api="blas"):
                want = f.__wrapped__(*a, **k)
            for g, w in zip(_numbers(got), _numbers(want)):
                np.testing.assert_array_equal(g, w)


def _numbers(x):
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, expected.ExpectedF):
        return [np.array([x.tp, x.m_hyp, x.m_ref, x.precision, x.recall, x.f]),
                x.count_dist, x.tp_by_count]
    return [np.array(x.tags), np.array([x.score, x.gap])]


def test_libraries_are_found_again_after_an_import(monkeypatch):
    made = []
    real = blas.ThreadpoolController

    def counting():
        made.append(1)
        return real()
    monkeypatch.setattr(blas, "ThreadpoolController", counting)
    monkeypatch.setattr(ONE_THREAD, "seen", -1)
    with ONE_THREAD:
        pass
    with ONE_THREAD:
        pass
    assert len(made) == 1                               # found once, then cached
    monkeypatch.setitem(sys.modules, "fstchunk_test_new_module", object())
    with ONE_THREAD:
        pass
    assert len(made) == 2                               # a new module: found again


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_the_lock_is_held_can_still_enter():
    ONE_THREAD.lock.acquire()                           # as another thread would, mid-entry
    try:
        pid = os.fork()
        if pid == 0:                                    # the child: exit 3 if it hangs
            signal.signal(signal.SIGALRM, lambda *a: os._exit(3))
            signal.alarm(5)
            with ONE_THREAD:
                ok = {lib.num_threads for lib in ONE_THREAD.libraries()} == {1}
            os._exit(0 if ok else 4)
    finally:
        ONE_THREAD.lock.release()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_call_from_a_worker_thread_is_limited_too(user_threads, monkeypatch):
    """threadpoolctl lets only its "controlling thread" set OpenBLAS's count; a call from
    another thread (a Dask worker's) must still run with one thread."""
    lat = lattice(6, scheme="BILOU")
    seen: list = []
    spy(monkeypatch, lattice_mod, "exact_meu", seen)
    t = threading.Thread(target=decode_meu, args=(lat,))
    t.start()
    t.join(60)
    assert seen and all(set(s) == {1} for s in seen), seen
    assert set(threads()) == {USER}
