"""Issue 47 §3: ``Lattice.sample(k)`` draws tag sequences from the model: the draws'
frequencies against the exact probabilities of ``Lattice.enumerate()`` (an exact
binomial test per sequence, and a chi-square test over all of them), for dense
chains of several schemes and score scales, a tag mask and a lattice from a machine."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from scipy import stats

from fstchunk import Lattice
from fstchunk.core.errors import InputError
from fstchunk.schemes import encodings as enc
from oracles import random_scores

DRAWS = 20000


def check_frequencies(lat: Lattice, draws: list[tuple[str, ...]]) -> None:
    exact = {seq: float(np.exp(lp)) for seq, lp in lat.enumerate()}
    counts: dict[tuple[str, ...], int] = {}
    for seq in draws:
        assert seq in exact, f"drew {seq}, which has probability 0"
        counts[seq] = counts.get(seq, 0) + 1
    N = len(draws)
    for seq, p in exact.items():                # exact binomial test per sequence
        c = counts.get(seq, 0)
        assert stats.binomtest(c, N, min(p, 1.0)).pvalue > 1e-6, (seq, c / N, p)
    # chi-square over the sequences expected 5 times or more, the others pooled in one
    # cell; that cell joins the test only if it too is expected 5 times or more (a cell
    # expected 0.5 times makes the statistic's law far from chi-square: 4 draws of a
    # pool of mass 2.7e-5 once gave p = 1.7e-5).  The pool's own count has an exact test.
    big = [s for s, p in exact.items() if p * N >= 5]
    rest_p = sum(p for s, p in exact.items() if p * N < 5)
    rest_c = N - sum(counts.get(s, 0) for s in big)
    assert stats.binomtest(rest_c, N, min(rest_p, 1.0)).pvalue > 1e-6, (rest_c, rest_p)
    obs = [counts.get(s, 0) for s in big]
    exp_ = [exact[s] * N for s in big]
    if rest_p * N >= 5:
        obs.append(rest_c)
        exp_.append(rest_p * N)
    if len(obs) >= 2:
        obs, exp_ = np.array(obs), np.array(exp_)
        assert stats.chisquare(obs, exp_ * obs.sum() / exp_.sum()).pvalue > 1e-4


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "IOE1"])
@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_draws_follow_the_exact_probabilities(scheme, scale):
    rng = np.random.default_rng(zlib.crc32(f"{scheme} {scale}".encode()))   # the same in every process
    tags = enc.scheme_tags(scheme, ("A", "B"))
    n = 4
    e, t, s, en = random_scores(rng, len(tags), n, scale=scale)
    lat = Lattice.from_scores(tags, e, t, s, en, scheme=scheme)
    check_frequencies(lat, lat.sample(DRAWS, seed=1))


def test_a_masked_lattice_and_a_machine_lattice_sample_the_same_law():
    rng = np.random.default_rng(3)
    tags = enc.scheme_tags("IOB2", ("NP",))
    e, t, s, en = random_scores(rng, len(tags), 5)
    allowed = np.ones((5, len(tags)), bool)
    allowed[2, tags.index("O")] = False
    lat = Lattice.from_scores(tags, e, t, s, en, scheme="IOB2").constrained(allowed)
    check_frequencies(lat, lat.sample(DRAWS, seed=2))
    machine = Lattice.from_fst(lat.fst, tags, "IOB2")
    check_frequencies(machine, machine.sample(DRAWS, seed=3))


def test_seeds_reproduce_and_k_is_checked():
    rng = np.random.default_rng(4)
    tags = enc.scheme_tags("IOB2", ("A",))
    lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), 6), scheme="IOB2")
    assert lat.sample(50, seed=7) == lat.sample(50, seed=7)
    assert lat.sample(50, seed=np.random.default_rng(7)) == lat.sample(50, seed=7)
    assert lat.sample(0) == []
    assert all(enc.is_valid(list(y), "IOB2") and len(y) == 6 for y in lat.sample(200))
    for bad in (-1, 2.5, True, "3"):
        with pytest.raises(InputError, match="k must be an integer >= 0"):
            lat.sample(bad)


def test_the_frequency_check_refuses_draws_from_another_law():
    """The check above can fail: draws of a lattice whose scores differ a little, or
    a rare pool drawn ten times too often, are refused."""
    rng = np.random.default_rng(5)
    tags = enc.scheme_tags("IOB2", ("A",))
    e, t, s, en = random_scores(rng, len(tags), 4)
    lat = Lattice.from_scores(tags, e, t, s, en, scheme="IOB2")
    other = Lattice.from_scores(tags, e + 0.3 * rng.normal(size=e.shape), t, s, en,
                                scheme="IOB2")
    with pytest.raises(AssertionError):
        check_frequencies(lat, other.sample(DRAWS, seed=1))
    draws = lat.sample(DRAWS, seed=1)
    best = max(lat.enumerate(), key=lambda x: x[1])[0]
    rare = min(lat.enumerate(), key=lambda x: x[1])[0]
    p_rare = float(np.exp(dict(lat.enumerate())[rare]))
    extra = max(20, int(10 * p_rare * DRAWS))      # the rare one drawn 10x too often
    at = [i for i, d in enumerate(draws) if d == best][:extra]
    swapped = list(draws)
    for i in at:
        swapped[i] = rare
    with pytest.raises(AssertionError):
        check_frequencies(lat, swapped)
