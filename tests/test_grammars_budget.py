"""Every machine family of the registry goes through the state budget (issue 32, item 8):
its estimate bounds the machine it builds on small parameters (scheme, chunk types,
length, gold), and a request far over the budget is one BudgetError, naming the estimate,
the budget and the option, before the work (a few CPU seconds at most: this thread's
CPU time, which other processes' load does not inflate, where building would take
minutes) — through the registry, the builders themselves and the command line."""

import itertools
import random
import time

import pynini
import pytest

from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.core.errors import BudgetError, InputError, SchemeError
from fstchunk.grammars import budget as B
from fstchunk.grammars import conversion, counting, loss, models, registry as R, validity
from fstchunk.schemes.tagspace import TagSet
from oracles import all_chunkings

HUGE_TYPES = tuple(f"T{i}" for i in range(10_000))
SCHEMES = ("IOB1", "IOE1", "IOBES", "BILOU", "IOBES3")
TYPE_SETS = (("",), ("NP", "VP"), ("A", "B", "C"))


@pytest.fixture(autouse=True)
def default_budget(monkeypatch):
    monkeypatch.delenv(B.ENV_VAR, raising=False)
    B.set_state_budget(None)
    yield
    B.set_state_budget(None)


def arcs(f: pynini.Fst) -> int:
    return sum(f.num_arcs(s) for s in f.states())


def small_options(name: str):
    """Options over several schemes, type sets and lengths; a random valid gold where the
    family reads one (1, 3 and 6 tokens; 5 for the type counter, whose states hold
    distances: 12,000 at 6 tokens over 3 types, seconds to build in each scheme)."""
    rng = random.Random(name)
    reads = R.grammar(name).reads
    lengths = (1, 3, 5) if name == "type" else (1, 3, 6)
    for scheme, types, n in itertools.product(SCHEMES, TYPE_SETS, lengths):
        gold = (tuple(enc.chunks_to_tags(rng.choice(all_chunkings(n, types)), n, scheme))
                if "gold" in reads else ())
        yield R.Options(scheme=scheme, types=types, max_length=n, gold=gold,
                        target="IOBES3" if scheme == "IOE1" else "IOE1",
                        keep=types[:1] if "keep" in reads else ())


@pytest.mark.parametrize("name", list(R.GRAMMARS))
def test_estimate_bounds_the_machine_built(name):
    """States and arcs of the machine <= the estimate (f-loss and annotation: the
    estimate is of their largest intermediates — A ∘ E; the validity acceptor and the
    chain of every tag — so only the bound); not absurdly above (10x)."""
    for o in small_options(name):
        f = R.build(name, o)
        est = R.size(name, o)
        assert f.num_states() <= est.states and arcs(f) <= est.arcs, (name, o)
        if name not in ("f-loss", "annotation"):
            assert est.states <= 10 * f.num_states() and est.arcs <= 10 * max(1, arcs(f))


def over_budget(name: str) -> list[tuple[R.Options, int | None]]:
    """Requests far over the budget (default, or the one given): 10⁴ chunk types, the
    largest length, a 10⁵-token gold — whichever the family reads."""
    reads = R.grammar(name).reads
    out = []
    if "types" in reads:
        gold = ("B-T0", "I-T0", "O") * 400 if "gold" in reads else ()
        out.append((R.Options(scheme="IOB2", types=HUGE_TYPES, target="IOE1", gold=gold), None))
    if "max_length" in reads:
        out.append((R.Options(max_length=R.MAX_LENGTH), 100_000))
    if "gold" in reads:
        out.append((R.Options(scheme="IOB2", gold=("B", "I", "O") * 33_334), 100_000))
    return out


@pytest.mark.parametrize("name", list(R.GRAMMARS))
def test_far_over_budget_is_refused_before_the_work(name):
    cases = over_budget(name)
    assert cases and R.grammar(name).estimate is not None
    for o, limit in cases:
        with B.use_state_budget(limit):
            t0 = time.thread_time()
            with pytest.raises(BudgetError) as e:
                R.build(name, o)
            assert time.thread_time() - t0 < 10.0, (name, o.max_length, len(o.types))
        msg = str(e.value)
        assert e.value.estimate > e.value.budget == (limit or B.DEFAULT_STATE_BUDGET)
        assert f"state budget of {e.value.budget:,}" in msg and "--state-budget" in msg
        assert f"{e.value.estimate:,} states" in msg and "\n" not in msg and len(msg) < 600


def test_builders_refuse_by_themselves():
    """Called directly (no registry): the same refusal before any work."""
    calls = [lambda: validity.validity_acceptor("IOBES3", HUGE_TYPES),
             lambda: conversion.encoder("IOB1", HUGE_TYPES),
             lambda: conversion.conversion_transducer("IOB1", "IOE1", HUGE_TYPES),
             lambda: counting.true_positive_transducer(HUGE_TYPES, 2),
             lambda: counting.chunk_counter(HUGE_TYPES, 2),
             lambda: counting.pair_machine(HUGE_TYPES, 2),
             lambda: counting.pair_machine(("NP",), 10_000),
             lambda: models.toy_bigram(0.5, 10 ** 6),
             lambda: B.encoder_shape("IOE1", HUGE_TYPES)]
    for call in calls:
        t0 = time.thread_time()
        with pytest.raises(BudgetError, match="state budget of 4,000,000"):
            call()
        assert time.thread_time() - t0 < 10.0


def test_command_line_refuses_quickly(capsys):
    types = ",".join(HUGE_TYPES)
    gold = ",".join(("B-NP", "I-NP", "O") * 2_000)
    for argv in (["grammar", "info", "validity", "--types", types],
                 ["grammar", "print", "convert", "--types", types, "--target", "IOE1"],
                 ["grammar", "info", "f-loss", "--gold", gold]):
        t0 = time.thread_time()
        code = main(argv)
        out, err = capsys.readouterr()
        assert time.thread_time() - t0 < 10.0
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
        assert "state budget of 4,000,000" in err and "--state-budget" in err


def test_max_length_is_up_to_the_budget(capsys):
    """No fixed cap of 64 any more: M with a bound of 100 is small and built; the
    markers' own limit is an InputError naming it."""
    assert R.build("M", max_length=100).num_states() == 102
    assert main(["grammar", "info", "toy", "--max-length", "1000"]) == 0
    assert "states: 3000" in capsys.readouterr().out          # 3n + 1, less I at the start
    with pytest.raises(InputError, match="1..99,999"):
        R.Options(max_length=R.MAX_LENGTH + 1)
    with pytest.raises(InputError, match="max_length"):
        R.Options(max_length=True)


def test_largest_fitting_bisects_like_a_scan():
    sizes = [lambda k: B.Estimate(k * k), lambda k: B.pair_machine(k, 3),
             lambda k: B.Estimate(1000), lambda k: B.Estimate(10 ** 9 + k)]
    for size, limit in itertools.product(sizes, (1, 999, 1000, 5000, 10 ** 6)):
        with B.use_state_budget(limit):
            for values in (range(1, 200), range(5, 6), range(1, 1)):
                scan = [v for v in values if B.fits(size(v))]
                assert B.largest_fitting(values, size) == (max(scan) if scan else None)


# ------------------------------------------------------------- the loss machines' tags
@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_scheme_tags_are_the_tag_set(scheme):
    """loss.SchemeTags (O(k)) has the TagSet's tags and labels, and both give the same
    loss machines."""
    rng = random.Random(scheme)
    for types in TYPE_SETS:
        full, light = TagSet(scheme, types), loss.SchemeTags.of(scheme, types)
        assert (light.tags, light.labels, light.types) == (full.tags, full.labels, full.types)
        assert len(light) == len(full) and all(light.label(t) == full.label(t) for t in full.tags)
        for n in (1, 4):
            gold = enc.chunks_to_tags(rng.choice(all_chunkings(n, types)), n, scheme)
            for build in (loss.hamming_loss_machine, loss.f_loss_machine):
                assert pynini.equal(build(gold, light), build(gold, full))
    with pytest.raises(SchemeError, match="'B-XX'"):
        loss.SchemeTags.of(scheme, ("NP",)).label("B-XX")
    assert "O" in light and "B-XX" not in light and 3 not in light
