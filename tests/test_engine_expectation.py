import numpy as np
import pytest

from fstchunk import Lattice, encodings as enc
from fstchunk.engine.expectation import tp_count_table
from oracles import brute_force, random_scores


@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_count_table_equals_brute_force(scheme):
    rng = np.random.default_rng(abs(hash(scheme)) % 2**32)
    types = ("NP", "VP")
    tags = enc.scheme_tags(scheme, types)
    for n in range(1, 7):
        scores = random_scores(rng, len(tags), n)
        lat = Lattice.from_scores(tags, *scores, scheme=scheme)
        seqs, _ = brute_force(tags, scheme, types, n, *scores)
        for _ in range(3):
            _, fixed, _ = seqs[rng.integers(len(seqs))]
            Z, T = tp_count_table(lat, sorted(fixed, key=lambda c: c[1]))
            Zb, Tb = np.zeros(n + 1), np.zeros(n + 1)
            for _, c, p in seqs:
                Zb[len(c)] += p
                Tb[len(c)] += p * len(fixed & c)
            np.testing.assert_allclose(Z, Zb, atol=1e-12)
            np.testing.assert_allclose(T, Tb, atol=1e-12)


def test_fixed_chunk_of_a_type_the_lattice_lacks():
    tags = ("O", "B-NP", "I-NP")
    lat = Lattice.from_scores(tags, np.zeros((3, 3)), np.zeros((3, 3)))
    Z, T = tp_count_table(lat, [("VP", 0, 2)])
    assert T.sum() == 0 and Z.sum() == pytest.approx(1.0)
