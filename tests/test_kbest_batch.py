"""Batched k-best (issue 44): the k best paths of a ragged batch equal the enumerated
top k of each sentence, and the batched k-best MEU decoder picks what the per-sentence
one (OpenFst's n-shortest, then exact E[F] of each path) picks."""

import numpy as np
import pytest

from fstchunk import Lattice, TagSet
from fstchunk.decoding import decode as dec
from fstchunk.decoding.decoders import decoder
from fstchunk.engine import inference
from fstchunk.structures.lattices import batches, groups
from oracles import stable_seed

SCHEMES = [("IOB2", ("A", "B")), ("IOBES", ("A",)), ("BILOU", ("A", "B")),
           ("IOE1", ("A", "B")), ("none", ("x", "y", "z"))]


def corpus(rng, scheme, types, scale, masked=False):
    tags = TagSet(scheme, types).tags if scheme != "none" else list(types)
    L = len(tags)
    trans, start, end = (rng.normal(size=s) * scale for s in ((L, L), L, L))
    out = []
    for n in (1, 3, 5, 2, 4, 1):
        lat = Lattice.from_scores(tags, rng.normal(size=(n, L)) * scale, trans, start, end,
                                  scheme=scheme)
        if masked:
            allowed = rng.random((n, L)) < 0.8
            allowed[:, tags.index("O") if "O" in tags else 0] = True
            lat = lat.constrained(allowed)
        out.append(lat)
    return out


@pytest.mark.parametrize("scheme,types", SCHEMES)
@pytest.mark.parametrize("scale", [0.5, 3.0, 1e5])
@pytest.mark.parametrize("masked", [False, True])
def test_kbest_paths_are_the_enumerated_top_k(scheme, types, scale, masked):
    rng = np.random.default_rng(stable_seed((scheme, scale, masked)))
    lats = corpus(rng, scheme, types, scale, masked)
    ids, others = groups(lats)
    assert not others
    for batch in batches(lats, ids[0]):
        for k in (1, 4, 9):
            paths, scores = inference.kbest(batch, k)
            for b, i in enumerate(batch.index):
                lat = lats[i]
                want = sorted((lp for _, lp in lat.enumerate()), reverse=True)[:k]
                got = scores[b][np.isfinite(scores[b])] - lat.log_partition()
                assert len(got) == len(want)
                assert np.allclose(got, want, rtol=1e-12, atol=1e-9 * max(1.0, scale))
                seqs = {tuple(paths[b, j, :lat.n]) for j in range(len(got))}
                assert len(seqs) == len(got)                     # distinct sequences
                for j, s in enumerate(got):
                    y = [lat.tags[t] for t in paths[b, j, :lat.n]]
                    assert abs(lat.log_prob(y) - s) <= 1e-9 * max(1.0, abs(s))


@pytest.mark.parametrize("scheme,types", SCHEMES[:4])
@pytest.mark.parametrize("scale", [0.5, 3.0, 30.0])
@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_batched_kbest_meu_is_the_per_sentence_decoder(scheme, types, scale, beta):
    rng = np.random.default_rng(stable_seed((scheme, scale, beta)))
    lats = corpus(rng, scheme, types, scale)
    for k in (1, 5):
        got = decoder("meu-kbest", beta=beta, k=k).decode_all(lats)
        for lat, g in zip(lats, got):
            want = dec.decode_meu(lat, beta=beta, method="kbest", k=k)
            assert g.gap == np.inf
            assert abs(g.score - want.score) <= 1e-12
            assert abs(lat.expected_f(hypothesis=g.tags, beta=beta).f - g.score) <= 1e-12
