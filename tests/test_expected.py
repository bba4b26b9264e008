import numpy as np
import pytest

from fstchunk import Lattice, expected_f
from fstchunk.schemes import encodings as enc
from fstchunk.evaluation.chunks import f_beta
from fstchunk.grammars.models import toy_bigram_scores
from oracles import brute_expectations, brute_force, random_scores, stable_seed

CASES = [("IOB2", ("NP", "VP"), 6), ("IOB1", ("NP", "VP"), 5), ("IOE1", ("NP",), 6),
         ("IOE2", ("NP", "VP"), 5), ("IOBES", ("NP", "VP"), 5), ("BILOU", ("",), 7),
         ("IOBES2", ("NP", "VP"), 4), ("IOBES3", ("NP", "VP"), 4)]


@pytest.mark.parametrize("scheme,types,n", CASES)
@pytest.mark.parametrize("method", ["fst", "fast"])
def test_expectations_equal_brute_force(scheme, types, n, method):
    rng = np.random.default_rng(stable_seed((scheme, n, method)))
    tags = enc.scheme_tags(scheme, types)
    for length in sorted({1, 2, n}):
        scores = random_scores(rng, len(tags), length)
        lat = Lattice.from_scores(tags, *scores, scheme=scheme)
        seqs, _ = brute_force(tags, scheme, types, length, *scores)
        for beta in (0.0, 0.5, 1.0, 2.0):               # the standard β, F_0 = precision
            y, fixed, _ = seqs[rng.integers(len(seqs))]
            for direction in ("decoding", "training"):
                kw = {"hypothesis": y} if direction == "decoding" else {"reference": y}
                r = expected_f(lat, beta=beta, method=method, **kw)
                assert r.beta == beta
                b = brute_expectations(seqs, fixed, beta, direction)
                for k in ("tp", "precision", "recall", "f"):
                    assert getattr(r, k) == pytest.approx(b[k], rel=1e-9, abs=1e-12), k
                m_random = r.m_ref if direction == "decoding" else r.m_hyp
                assert m_random == pytest.approx(b["m"], rel=1e-9, abs=1e-12)
                if method == "fst":
                    joint = np.zeros((length + 1, length + 1))
                    for _, c, p in seqs:
                        joint[len(fixed & c), len(c)] += p
                    np.testing.assert_allclose(r.joint, joint, atol=1e-12)


def test_fast_equals_fst_on_real_sentences(corpus):
    """CoNLL-2000 sentences, the 23 training tags, a random CRF: both paths, 1e-9."""
    from fstchunk.io.conll import read_conll
    train = read_conll(corpus("conll2000", "train.txt"))
    from fstchunk import TagSet
    tags = TagSet.from_tags({t for s in train for t in s.column(-1)}, "IOB2").tags
    assert len(tags) == 23            # 11 types x {B, I} + O (I-LST never occurs)
    test = [s for s in read_conll(corpus("conll2000", "test.txt"))
            if 8 <= len(s) <= 20 and set(s.column(-1)) <= set(tags)][:6]
    rng = np.random.default_rng(0)
    for s in test:
        gold = s.column(-1)
        lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), len(s), 2.0))
        for kw in ({"hypothesis": gold}, {"reference": gold}):
            a = expected_f(lat, method="fast", **kw)
            b = expected_f(lat, method="fst", **kw)
            for k in ("tp", "m_hyp", "m_ref", "precision", "recall", "f"):
                assert getattr(a, k) == pytest.approx(getattr(b, k), rel=1e-9, abs=1e-12)


def test_toy_example_table_uses_beta_sqrt_3():
    """Jansche §11: F of BBB and BOB against gold OOB are 0.67 and 0.80 only for the
    slides' β' = 3, the standard β = √3."""
    rows = {"OOO": 0.0, "OBO": 0.0, "BOO": 0.0, "BBB": 0.67, "BOB": 0.80, "OOB": 1.00}
    gold = enc.tags_to_chunks(list("OOB"), "IOB2")
    for x, f in rows.items():
        hyp = enc.tags_to_chunks(list(x), "IOB2")
        tp = len(set(hyp) & set(gold))
        assert round(f_beta(tp, len(hyp), len(gold), beta=3 ** 0.5), 2) == f
    assert round(f_beta(1, 3, 1, beta=1.0), 2) != 0.67


def test_toy_model_expected_f_of_gold_sequence():
    from fstchunk.grammars.models import toy_bigram
    tags = toy_bigram_scores(0.5, 3)[0]
    lat = Lattice.from_fst(toy_bigram(0.5, 3), tags, "IOB2")
    # θ = 1/2: Pr(OOB) = b(O|O) b(O|O) b(B|O) = 1/2 · 1/2 · 1/2
    assert lat.log_prob(list("OOB")) == pytest.approx(np.log(0.125), rel=1e-12)
    r = expected_f(lat, reference=list("OOB"), beta=3.0, method="fst")
    r2 = expected_f(lat, reference=list("OOB"), beta=3.0, method="fast")
    assert r.f == pytest.approx(r2.f, rel=1e-12)


def test_bad_arguments():
    tags = ("O", "B-NP", "I-NP")
    lat = Lattice.from_scores(tags, np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="exactly one of"):
        expected_f(lat)
    with pytest.raises(ValueError, match="exactly one of"):
        expected_f(lat, hypothesis=["O", "O"], reference=["O", "O"])
    with pytest.raises(ValueError, match="unknown method"):
        expected_f(lat, hypothesis=["O", "O"], method="slow")
    with pytest.raises(ValueError, match="position 1: tag 'I-NP' cannot stand after 'O'"):
        expected_f(lat, hypothesis=["O", "I-NP"])
    with pytest.raises(ValueError, match="beta"):
        expected_f(lat, hypothesis=["O", "O"], beta=-1)


def test_long_sentence_is_finite_and_exact():
    rng = np.random.default_rng(1)
    tags = enc.scheme_tags("IOB2", ["NP", "VP"])
    lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), 300, scale=4.0))
    gold = enc.chunks_to_tags([("NP", i, i + 2) for i in range(0, 300, 5)], 300, "IOB2")
    r = expected_f(lat, reference=gold, method="fast")
    assert 0 <= r.f <= 1 and np.isfinite(r.tp) and r.count_dist.sum() == pytest.approx(1.0)
    # E[tp] also equals the sum of the gold chunks' marginals
    cm = lat.chunk_marginals()
    tp = sum(cm[lat.space.types.index(t), s, e] for t, s, e in enc.tags_to_chunks(gold, "IOB2"))
    assert r.tp == pytest.approx(tp, rel=1e-9)
