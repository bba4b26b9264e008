import numpy as np
import pytest

from fstchunk import (Lattice, decode_map, decode_meu, decode_meu_corpus, decode_posterior,
                      expected_f)
from fstchunk.schemes import encodings as enc
from oracles import all_utilities, brute_force, random_scores


def random_case(rng, k):
    scheme = ["IOB2", "IOB1", "IOE1", "IOE2", "IOBES", "BILOU", "IOBES2", "IOBES3"][k % 8]
    typed = k % 3 != 0
    types = ("NP", "VP") if typed else ("",)
    n = int(rng.integers(1, 7 if typed else 9))       # typed up to 6, untyped up to 8
    tags = enc.scheme_tags(scheme, types)
    scores = random_scores(rng, len(tags), n, scale=float(rng.choice([0.5, 1.0, 3.0])))
    return scheme, types, n, tags, scores


def test_exact_meu_is_the_maximum_over_all_valid_sequences():
    """>= 500 random models: the exact decoder's E[F] equals the brute-force maximum
    (the standard β, F_0 = precision included)."""
    rng = np.random.default_rng(2024)
    for k in range(510):
        scheme, types, n, tags, scores = random_case(rng, k)
        beta = float([0.5, 1.0, 2.0, 0.0, 3.0][k % 5])
        lat = Lattice.from_scores(tags, *scores, scheme=scheme)
        seqs, _ = brute_force(tags, scheme, types, n, *scores)
        u = all_utilities(seqs, beta)
        dec = decode_meu(lat, beta=beta)
        assert dec.score == pytest.approx(u.max(), rel=1e-9, abs=1e-12), (k, scheme, n)
        assert enc.is_valid(dec.tags, scheme)
        got = expected_f(lat, hypothesis=dec.tags, beta=beta, method="fast").f
        assert got == pytest.approx(u.max(), rel=1e-9, abs=1e-12)


def test_typed_length_7_exhaustive_and_8_sampled():
    rng = np.random.default_rng(8)
    for n, scheme in ((7, "IOB2"), (8, "IOE2")):
        types = ("NP", "VP")
        tags = enc.scheme_tags(scheme, types)
        scores = random_scores(rng, len(tags), n)
        lat = Lattice.from_scores(tags, *scores, scheme=scheme)
        seqs, _ = brute_force(tags, scheme, types, n, *scores)
        if len(seqs) > 9000:                      # keep the V x V matrix small: sample x
            idx = rng.choice(len(seqs), 3000, replace=False)
            best_sampled = max(expected_f(lat, hypothesis=seqs[i][0], method="fast").f
                               for i in idx[:200])
            assert decode_meu(lat).score >= best_sampled - 1e-12
        else:
            assert decode_meu(lat).score == pytest.approx(all_utilities(seqs, 1.0).max(),
                                                          rel=1e-9)


def test_kbest_never_beats_exact_and_map_agrees_with_fst():
    rng = np.random.default_rng(5)
    for k in range(40):
        scheme, types, n, tags, scores = random_case(rng, k)
        lat = Lattice.from_scores(tags, *scores, scheme=scheme)
        exact = decode_meu(lat, beta=1.0)
        kb = decode_meu(lat, beta=1.0, method="kbest", k=5)
        assert kb.score <= exact.score + 1e-12
        assert kb.score == pytest.approx(expected_f(lat, hypothesis=kb.tags).f, rel=1e-9)
        a, b = decode_map(lat), decode_map(lat, method="fst")
        assert a.tags == b.tags
        seqs, _ = brute_force(tags, scheme, types, n, *scores)
        y, _, p = max(seqs, key=lambda t: t[2])
        assert a.tags == y and a.score == pytest.approx(np.log(p), rel=1e-9)


def test_posterior_decoder_maximises_summed_marginals():
    rng = np.random.default_rng(6)
    for k in range(30):
        scheme, types, n, tags, scores = random_case(rng, k)
        lat = Lattice.from_scores(tags, *scores, scheme=scheme)
        marg = lat.marginals()
        seqs, _ = brute_force(tags, scheme, types, n, *scores)
        val = [sum(marg[i, tags.index(t)] for i, t in enumerate(y)) for y, _, _ in seqs]
        dec = decode_posterior(lat)
        assert dec.score == pytest.approx(max(val), rel=1e-9)
        assert enc.is_valid(dec.tags, scheme)


def test_meu_on_the_toy_model_prefers_bbb():
    from fstchunk.cli.demo import toy_lattice
    lat = toy_lattice(0.35)
    assert "".join(decode_meu(lat, beta=3 ** 0.5).tags) == "BBB"   # the slides' β' = 3
    assert "".join(decode_map(lat).tags) == "BOB"


def test_corpus_decoder_reaches_a_fixed_point_and_beats_per_sentence_meu_on_its_objective():
    rng = np.random.default_rng(9)
    tags = enc.scheme_tags("IOB2", ["NP", "VP"])
    lats = [Lattice.from_scores(tags, *random_scores(rng, len(tags), int(n), 1.5))
            for n in rng.integers(1, 9, size=25)]
    out, ratio = decode_meu_corpus(lats, beta=1.0)

    def corpus_ratio(seqs):
        tp = sum(expected_f(l, hypothesis=s, method="fast").tp for l, s in zip(lats, seqs))
        mh = sum(len(enc.tags_to_chunks(s, "IOB2")) for s in seqs)
        mr = sum(expected_f(l, hypothesis=s, method="fast").m_ref for l, s in zip(lats, seqs))
        return 2 * tp / (mh + mr)
    assert ratio == pytest.approx(corpus_ratio(out), rel=1e-9)
    per_sentence = [decode_meu(l).tags for l in lats]
    maps = [decode_map(l).tags for l in lats]
    assert ratio >= corpus_ratio(per_sentence) - 1e-12
    assert ratio >= corpus_ratio(maps) - 1e-12
    assert all(enc.is_valid(s, "IOB2") for s in out)


def test_corpus_decoder_is_the_global_maximum_of_its_objective():
    """Tiny corpora: Dinkelbach's answer equals the maximum over ALL joint decisions."""
    import itertools
    from oracles import all_chunkings
    rng = np.random.default_rng(10)
    tags = enc.scheme_tags("IOB2", ["NP", "VP"])
    for trial in range(6):
        lens = rng.integers(1, 4, size=3)
        lats = [Lattice.from_scores(tags, *random_scores(rng, len(tags), int(n), 1.5))
                for n in lens]
        beta = [0.5, 1.0, 2.0, 0.0, 3.0, 0.0][trial]          # the standard β
        out, ratio = decode_meu_corpus(lats, beta=beta)
        cms = [l.chunk_marginals() for l in lats]
        m_ref = sum(expected_f(l, hypothesis=["O"] * l.n, method="fast").m_ref for l in lats)
        ti = {"NP": 0, "VP": 1}
        best = 0.0
        for combo in itertools.product(*(all_chunkings(int(n), ("NP", "VP")) for n in lens)):
            tp = sum(cm[ti[t], s, e] for cm, ch in zip(cms, combo) for t, s, e in ch)
            mh = sum(len(ch) for ch in combo)
            den = mh + beta ** 2 * m_ref
            best = max(best, (1 + beta ** 2) * tp / den if den else 1.0)
        assert ratio == pytest.approx(best, rel=1e-9)


def test_bad_arguments():
    lat = Lattice.from_scores(("O", "B", "I"), np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="unknown method"):
        decode_meu(lat, method="greedy")
    with pytest.raises(ValueError, match="unknown method"):
        decode_map(lat, method="beam")
    with pytest.raises(ValueError, match="beta"):
        decode_meu(lat, beta=float("inf"))
