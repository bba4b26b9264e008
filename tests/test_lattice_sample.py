"""Issue 47 §3: ``Lattice.sample(k)`` draws tag sequences from the model: the draws'
frequencies against the exact probabilities of ``Lattice.enumerate()`` (an exact
binomial test per sequence, and a chi-square test over all of them), for dense
chains of several schemes and score scales, a tag mask and a lattice from a machine."""

from __future__ import annotations

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
    big = [s for s, p in exact.items() if p * N >= 5]           # chi-square's cells
    if len(big) >= 2:
        obs = np.array([counts.get(s, 0) for s in big] + [N - sum(counts.get(s, 0)
                                                                 for s in big)])
        exp_ = np.array([exact[s] * N for s in big] + [N * (1 - sum(exact[s] for s in big))])
        keep = exp_ > 0
        assert stats.chisquare(obs[keep], exp_[keep] * obs[keep].sum() / exp_[keep].sum()
                               ).pvalue > 1e-4


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "IOE1"])
@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_draws_follow_the_exact_probabilities(scheme, scale):
    rng = np.random.default_rng(hash((scheme, scale)) % 2**32)
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
