"""Issue 17: exact MEU decoding at any length and any score scale, against oracles.

The contract (``fstchunk.decoding.decode.decode_meu(lattice, beta, method="exact", k=20,
memory_budget=None) -> Decoding(tags, score, gap)``):

* ``tags`` is a valid sequence in the lattice's scheme, ``score`` its exact expected
  F_β, U(tags) = E_y[F_β(tags | y)], and ``gap`` a certified bound on what pruning or
  approximation could have cost: 0 <= gap < 1e-12, and max_x U(x) − U(tags) <= gap
  (+ 1e-12 float tolerance);
* ``Lattice.chunk_marginals()`` and ``Lattice.marginals()`` are probabilities at any
  score scale; ``decode_meu_corpus`` and ``decode_posterior`` keep their meaning;
* "the lattice gives no weight to any valid sequence" only when that is true.

Oracles: enumeration of every valid sequence (:mod:`oracles`: lengths 1–8, two
chunk types, five score scales from 0.1 to 3000 and 1e6), the fast expected-F engine
where enumeration cannot go (itself checked against enumeration), the machine-built
twin (expected F by composition) up to 40 tokens, and on long and real sentences the
identities that pin the answer: the certificate, the score recomputed as U(tags),
U(MEU) >= U of MAP, of posterior decoding and of k-best MEU's choice, no single chunk
added, removed or retyped raising U, and corpus MEU's ratio recomputed from expected
counts with Dinkelbach's certificate.

The test marked ``slow`` (every CoNLL-2000 test sentence, ~2 minutes) runs only when
asked for with ``-m slow``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from threadpoolctl import threadpool_limits

from fstchunk.schemes import encodings as enc
from fstchunk.io.conll import read_conll
from fstchunk.decoding.decode import (Decoding, decode_map, decode_meu, decode_meu_corpus,
                                      decode_posterior)
from fstchunk.engine.chain import Layers
from fstchunk.core.errors import InputError, SchemeError
from fstchunk.decoding.decoders import decoder
from fstchunk.decoding.expected import expected_f, expected_f_all
from fstchunk.structures.lattice import Lattice
from fstchunk.models.crf import CRF
from oracles import (all_utilities, all_utilities_by_count, best_chunking_value,
                     brute_chunk_marginals, brute_force, brute_token_marginals,
                     path_score_bound, random_scores, single_chunk_moves)

EPS = float(np.finfo(float).eps)
GAP_MAX = 1e-12          # the largest gap the contract allows
TOL = 1e-12              # float tolerance on top of the gap
NO_WEIGHT = "the lattice gives no weight to any valid sequence"

TYPES = ("NP", "VP")
SCHEMES = ("IOB2", "IOBES", "IOE1", "IOB1")
SCALES = (0.1, 1.0, 30.0, 300.0, 3000.0)
BETAS = (0.5, 1.0, 2.0)
#: (scheme, scale) of the enumeration tests: every scheme at every scale, and IOB2
#: at 1e6 (scores still finite; the distribution a point mass but for near-ties)
GRID = [(s, x) for s in SCHEMES for x in SCALES] + [("IOB2", 1e6)]


@pytest.fixture(autouse=True)
def _one_blas_thread_and_slow_on_request(request):
    """Two shared cores: BLAS threads only fight each other here (5x slower).  Tests
    marked slow are skipped unless the marker expression asks for them."""
    if request.node.get_closest_marker("slow") and \
            "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("slow: run with -m slow")
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def gap_of(d) -> float:
    """The decoding's gap.  A decoding without the field claims exactness (0);
    :func:`test_decoding_is_tags_score_gap` requires the field itself."""
    return float(getattr(d, "gap", 0.0))


# ------------------------------------------------------------- enumeration oracles
def lengths_and_seeds(scheme):
    """Lengths 1–6 with two seeds, 7 with one; 8 (29681 sequences) for IOB2 only."""
    out = [(n, seed) for n in range(1, 7) for seed in range(2)] + [(7, 0)]
    return out + [(8, 0)] if scheme == "IOB2" else out


class Case:
    """One random linear-chain model and everything enumeration says about it."""

    def __init__(self, scheme, scale, n, seed):
        self.scheme, self.scale, self.n, self.seed = scheme, scale, n, seed
        rng = np.random.default_rng([n, seed, SCHEMES.index(scheme), int(np.log10(scale) + 2)])
        self.tags = enc.scheme_tags(scheme, TYPES)
        self.scores = random_scores(rng, len(self.tags), n, scale)
        self.lat = Lattice.from_scores(self.tags, *self.scores, scheme=scheme)
        seqs, _ = brute_force(self.tags, scheme, TYPES, n, *self.scores)
        self.seqs = [y for y, _, _ in seqs]
        self.index = {tuple(y): i for i, y in enumerate(self.seqs)}
        self.U = {b: all_utilities_by_count(seqs, b) for b in BETAS}
        types = self.lat.space.types
        self.chunk_marginals = brute_chunk_marginals(seqs, types, n)
        self.token_marginals = brute_token_marginals(seqs, self.lat.tags, n)
        # rounding of the enumerated probabilities themselves (see path_score_bound)
        self.kappa = (2 * n + 2) * EPS * path_score_bound(*self.scores)

    def __repr__(self):
        return f"Case({self.scheme}, scale={self.scale}, n={self.n}, seed={self.seed})"

    def u(self, tags, beta) -> float:
        i = self.index.get(tuple(tags))
        assert i is not None, f"{self}: {tags} is not a valid {self.scheme} sequence of length {self.n}"
        return float(self.U[beta][i])

    def prob_tol(self, p):
        """Allowed difference from an enumerated probability p: 1e-12 plus the
        oracle's own rounding 2·κ·p(1−p)."""
        p = np.clip(p, 0.0, 1.0)
        return TOL + 2 * self.kappa * p * (1 - p)


@functools.lru_cache(maxsize=None)
def case(scheme, scale, n, seed) -> Case:
    return Case(scheme, scale, n, seed)


def cases(scheme, scale):
    return [case(scheme, scale, n, seed) for n, seed in lengths_and_seeds(scheme)]


def test_the_linear_utility_oracle_is_the_definition():
    """all_utilities_by_count (used where V x V does not fit) = all_utilities."""
    rng = np.random.default_rng(17)
    for scheme in SCHEMES:
        tags = enc.scheme_tags(scheme, TYPES)
        for n in (1, 2, 4, 5):
            for scale in (1.0, 3000.0):
                scores = random_scores(rng, len(tags), n, scale)
                seqs, _ = brute_force(tags, scheme, TYPES, n, *scores)
                for beta in BETAS:
                    np.testing.assert_allclose(all_utilities_by_count(seqs, beta),
                                               all_utilities(seqs, beta), rtol=0, atol=1e-13)


@pytest.mark.parametrize("scheme,scale", GRID)
def test_meu_reaches_the_enumerated_maximum(scheme, scale):
    """U(decode_meu's tags), by enumeration, is within gap + 1e-12 of the maximum over
    every valid sequence; gap < 1e-12; score = U(tags)."""
    for c in cases(scheme, scale):
        for beta in BETAS:
            where = f"{c}, beta={beta}"
            d = decode_meu(c.lat, beta=beta)
            tags, score = d[:2]
            assert len(tags) == c.n and enc.is_valid(tags, scheme), where
            u, best = c.u(tags, beta), float(c.U[beta].max())
            gap = gap_of(d)
            assert 0.0 <= gap < GAP_MAX, (where, gap)
            assert best - u <= gap + TOL, (where, tags, u, best)
            assert score == pytest.approx(u, rel=1e-9, abs=1e-9), (where, score, u)


@pytest.mark.parametrize("scheme,scale", GRID)
def test_chunk_marginals_are_the_enumerated_probabilities(scheme, scale):
    for c in cases(scheme, scale):
        got = c.lat.chunk_marginals()
        want = c.chunk_marginals
        assert got.shape == want.shape == (len(c.lat.space.types), c.n, c.n + 1), c
        assert np.all(np.isfinite(got)), c
        assert got.min() >= -TOL and got.max() <= 1 + TOL, (c, got.min(), got.max())
        err = np.abs(got - want) - c.prob_tol(want)
        assert err.max() <= 0, (c, np.unravel_index(np.argmax(err), err.shape),
                                float(np.abs(got - want).max()))


@pytest.mark.parametrize("scheme,scale", GRID)
def test_token_marginals_against_enumeration(scheme, scale):
    for c in cases(scheme, scale):
        got = c.lat.marginals()
        want = c.token_marginals
        assert got.shape == want.shape, c
        assert got.min() >= -TOL and got.max() <= 1 + TOL, c
        assert np.all(np.abs(got - want) <= c.prob_tol(want)), (c, float(np.abs(got - want).max()))


@pytest.mark.parametrize("scheme,scale", GRID)
def test_posterior_decoding_against_enumeration(scheme, scale):
    """decode_posterior: the valid sequence of maximum summed (enumerated) token marginals."""
    for c in cases(scheme, scale):
        want = c.token_marginals
        col = {t: i for i, t in enumerate(c.lat.tags)}
        summed = [sum(want[i, col[t]] for i, t in enumerate(y)) for y in c.seqs]
        d = decode_posterior(c.lat)
        assert enc.is_valid(d.tags, scheme), c
        mine = sum(want[i, col[t]] for i, t in enumerate(d.tags))
        assert mine >= max(summed) - 1e-9 - c.n * c.kappa, (c, d.tags, mine, max(summed))


@pytest.mark.parametrize("scheme,scale", GRID)
def test_fast_expected_f_is_the_enumerated_utility(scheme, scale):
    """The U that the property and long-sentence tests read (expected_f, fast path)
    is the enumerated one: for MAP's tags, the empty hypothesis and random sequences."""
    for c in cases(scheme, scale):
        rng = np.random.default_rng(c.n)
        hyps = [decode_map(c.lat).tags, c.seqs[0]]
        hyps += [c.seqs[int(i)] for i in rng.integers(0, len(c.seqs), size=2)]
        for j, y in enumerate(hyps):
            beta = BETAS[(j + c.seed) % 3]
            got = expected_f(c.lat, hypothesis=y, beta=beta, method="fast").f
            assert got == pytest.approx(c.u(y, beta), rel=1e-9, abs=1e-9), (c, y, beta)


# ------------------------------------------------------------------ the gap field
def test_decoding_is_tags_score_gap():
    """Decoding is the NamedTuple (tags, score, gap); old code that unpacks two
    fields keeps working; the gap is a float in [0, 1e-12) on short, peaked and
    longer lattices (where the span sweep may prune)."""
    assert Decoding._fields == ("tags", "score", "gap")
    lats = [c.lat for scheme, scale in [("IOB2", 1.0), ("IOBES", 30.0), ("IOE1", 3000.0),
                                        ("IOB2", 1e6)] for c in cases(scheme, scale)[::3]]
    lats += [long_lattice(150, 1.0), long_lattice(150, 5.0)]
    for lat in lats:
        d = decode_meu(lat, beta=1.0, method="exact", k=20, memory_budget=None)
        assert isinstance(d, Decoding) and len(d) == 3, lat
        tags, score = d[:2]
        assert (tags, score, d.gap) == tuple(d)
        assert isinstance(d.gap, float) and 0.0 <= d.gap < GAP_MAX, (lat, d.gap)


# ------------------------------------------------- peaked scores, no valid sequence
def issue_lattices(scale):
    """Issue 17's report: Lattice.from_scores(tags, E*scale, T*scale), 12 tokens, the
    five IOB2 tags of two types, ten seeds."""
    tags = enc.scheme_tags("IOB2", TYPES)
    for seed in range(10):
        rng = np.random.default_rng(seed)
        yield seed, Lattice.from_scores(tags, rng.normal(size=(12, 5)) * scale,
                                        rng.normal(size=(5, 5)) * scale)


def huge_lattices(scheme, n, scale):
    tags = enc.scheme_tags(scheme, ("NP", "VP", "PP"))
    for seed in range(3):
        rng = np.random.default_rng([seed, n])
        yield seed, Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale),
                                        scheme=scheme)


HUGE = [(scheme, n, scale) for scheme, n in [("IOB2", 12), ("IOBES", 40), ("IOE1", 25)]
        for scale in (3000.0, 1e6)]


@pytest.mark.parametrize("scale", [300.0, 3000.0])
def test_peaked_12_token_lattices_of_the_issue(scale):
    """MEU's expected F never falls below MAP's or posterior's, and the score is the
    expected F of the tags (no false "no weight" error on the way)."""
    for seed, lat in issue_lattices(scale):
        check_against_fast_engine(lat, beta=1.0, where=(scale, seed))


@pytest.mark.parametrize("scheme,n,scale", HUGE)
def test_no_false_no_weight_error_at_huge_finite_scales(scheme, n, scale):
    for seed, lat in huge_lattices(scheme, n, scale):
        where = (scheme, n, scale, seed)
        check_against_fast_engine(lat, beta=BETAS[seed], where=where)
        out, ratio = decode_meu_corpus([lat, lat], beta=1.0)
        assert all(enc.is_valid(y, scheme) for y in out) and 0.0 <= ratio <= 1.0 + TOL, where


@pytest.mark.parametrize("what", ["chunk", "token"])
@pytest.mark.parametrize("scale", [300.0, 3000.0])
def test_peaked_marginals_are_probabilities(scale, what):
    for seed, lat in issue_lattices(scale):
        CHECK_MARGINALS[what](lat, where=(scale, seed))


@pytest.mark.parametrize("what", ["chunk", "token"])
@pytest.mark.parametrize("scheme,n,scale", HUGE)
def test_huge_scale_marginals_are_probabilities(scheme, n, scale, what):
    for seed, lat in huge_lattices(scheme, n, scale):
        CHECK_MARGINALS[what](lat, where=(scheme, n, scale, seed))


def check_against_fast_engine(lat, beta, where):
    d = decode_meu(lat, beta=beta)
    tags, score = d[:2]
    assert enc.is_valid(tags, lat.scheme) and len(tags) == lat.n, where
    gap = gap_of(d)
    assert 0.0 <= gap < GAP_MAX, (where, gap)
    u = expected_f(lat, hypothesis=tags, beta=beta, method="fast").f
    assert score == pytest.approx(u, rel=1e-12, abs=1e-12), (where, "score != U(tags)", score, u)
    for name, other in (("MAP", decode_map(lat).tags), ("posterior", decode_posterior(lat).tags)):
        uo = expected_f(lat, hypothesis=other, beta=beta, method="fast").f
        assert u >= uo - gap - TOL, (where, f"U(MEU) < U({name})", u, uo)
    return d, u


def check_chunk_marginals(lat, where, tol=1e-10):
    """Chunk marginals are probabilities, and a token lies inside at most one chunk:
    Σ_{t, s <= i < e} Pr(t, s, e) <= 1."""
    cm = lat.chunk_marginals()
    assert cm.shape == (len(lat.space.types), lat.n, lat.n + 1), where
    assert np.all(np.isfinite(cm)), (where, "chunk marginals not finite")
    assert -TOL <= cm.min() and cm.max() <= 1 + TOL, (where, "chunk marginals", cm.min(), cm.max())
    inside = chunk_coverage(cm)
    assert inside.max() <= 1 + tol, (where, "Pr(token inside a chunk) > 1", inside.max())


def check_token_marginals(lat, where, tol=1e-10):
    """Token marginals are probabilities, sum to 1 per token, and agree with the chunk
    marginals: Σ_{t, s <= i < e} Pr(t, s, e) = 1 − Pr(y_i = O)."""
    tm = lat.marginals()
    assert np.all(np.isfinite(tm)), (where, "token marginals not finite")
    assert -TOL <= tm.min() and tm.max() <= 1 + TOL, (where, "token marginals", tm.min(), tm.max())
    np.testing.assert_allclose(tm.sum(axis=1), 1.0, atol=tol, err_msg=str(where))
    if "O" in lat.tags:
        np.testing.assert_allclose(chunk_coverage(lat.chunk_marginals()),
                                   1.0 - tm[:, lat.tags.index("O")], atol=tol,
                                   err_msg=f"{where}: Pr(token inside a chunk) != 1 - Pr(O)")


def chunk_coverage(cm):
    """Pr(token i lies inside a chunk) = Σ_{t, s <= i < e} Pr(t, s, e), per token."""
    n = cm.shape[1]
    s, e = np.arange(n)[:, None], np.arange(n + 1)[None, :]
    return np.array([cm[:, (s <= i) & (i < e)].sum() for i in range(n)])


CHECK_MARGINALS = {"chunk": check_chunk_marginals, "token": check_token_marginals}


def no_sequence_lattice(name):
    """Lattices with no valid sequence of positive weight: layers whose weights rule
    every path out (the public Lattice constructor takes layers as they are;
    from_scores refuses -inf scores).  Tag lists the scheme forbids to complete are
    refused before (:func:`test_tag_lists_that_cannot_complete_are_refused`)."""
    tags = enc.scheme_tags("IOB2", TYPES)
    lay = Lattice.from_scores(tags, *random_scores(np.random.default_rng(1), len(tags), 6)).layers
    if name == "a layer of -inf":
        cut = [w.copy() for w in lay.weights]
        cut[3][:] = -np.inf
        return Lattice(tags, "IOB2", Layers(cut, lay.labels, lay.final))
    assert name == "every end -inf"
    return Lattice(tags, "IOB2", Layers(lay.weights, lay.labels, np.full_like(lay.final, -np.inf)))


@pytest.mark.parametrize("name", ["a layer of -inf", "every end -inf"])
def test_no_valid_sequence_is_an_input_error(name):
    """The one true "no weight" case: InputError with that message (from the lattice's
    construction or from decode_meu), not another error."""
    with pytest.raises(InputError, match=NO_WEIGHT):
        decode_meu(no_sequence_lattice(name))


@pytest.mark.parametrize("tags, scheme, missing", [
    (("I-NP",), "IOB2", "B-NP"), (("B-NP", "I-NP"), "IOBES", "E-NP, S-NP")])
def test_tag_lists_that_cannot_complete_are_refused(tags, scheme, missing):
    """They once made lattices with no valid sequence (every path masked); now the
    tag list is refused, naming what it lacks, before any lattice is built."""
    L = len(tags)
    with pytest.raises(SchemeError, match=f"cannot express {scheme}: missing {missing} "):
        Lattice.from_scores(tags, np.zeros((3, L)), np.zeros((L, L)), scheme=scheme)


# ------------------------------------------------------------------ properties
SCHEME_ST = st.sampled_from(["IOB2", "IOB1", "IOE1", "IOE2", "IOBES", "BILOU"])


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(scheme=SCHEME_ST, ntypes=st.integers(1, 3), untyped=st.booleans(),
       n=st.integers(1, 30), log_scale=st.floats(-2.0, 3.0), seed=st.integers(0, 2**32 - 1),
       beta=st.sampled_from(BETAS))
def test_meu_is_never_worse_than_map_or_posterior(scheme, ntypes, untyped, n, log_scale,
                                                  seed, beta):
    """Random lengths 1–30, 1–3 types (one untyped), six schemes, scales 0.01–1000:
    U(MEU) >= U(MAP) − 1e-12 and >= U(posterior) − 1e-12 (U by the fast engine), the
    score is U(tags); up to 5 tokens, U and the maximum by enumeration as well."""
    types = ("",) if ntypes == 1 and untyped else ("NP", "VP", "PP")[:ntypes]
    tags = enc.scheme_tags(scheme, types)
    rng = np.random.default_rng(seed)
    scores = random_scores(rng, len(tags), n, 10.0 ** log_scale)
    lat = Lattice.from_scores(tags, *scores, scheme=scheme)
    where = (scheme, types, n, 10.0 ** log_scale, seed, beta)
    d, u = check_against_fast_engine(lat, beta, where)
    if n <= 5:
        seqs, _ = brute_force(tags, scheme, types, n, *scores)
        U = all_utilities(seqs, beta)
        index = {tuple(y): i for i, (y, _, _) in enumerate(seqs)}
        assert u == pytest.approx(U[index[tuple(d.tags)]], rel=1e-9, abs=1e-9), where
        assert U.max() - U[index[tuple(d.tags)]] <= gap_of(d) + TOL, where
        y = decode_map(lat).tags
        assert expected_f(lat, hypothesis=y, beta=beta, method="fast").f == \
            pytest.approx(U[index[tuple(y)]], rel=1e-9, abs=1e-9), where


# ------------------------------------------------------------------ long sentences
LONG_TYPES = ("NP", "VP", "PP", "ADJP")          # nine IOB2 tags


def long_lattice(n, scale, seed=0):
    tags = enc.scheme_tags("IOB2", LONG_TYPES)
    rng = np.random.default_rng([n, seed, int(scale)])
    return Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale))


def check_long(n, scale):
    lat = long_lattice(n, scale)
    d, u = check_against_fast_engine(lat, beta=1.0, where=(n, scale))
    assert 0.0 < u <= 1.0
    check_chunk_marginals(lat, where=(n, scale))


@pytest.mark.parametrize("scale", [1.0, 5.0])
def test_300_token_lattice(scale):
    check_long(300, scale)


@pytest.mark.parametrize("scale", [1.0, 5.0])
def test_1000_token_lattice(scale):
    check_long(1000, scale)


def test_fast_expected_f_holds_on_long_sentences():
    """The fast engine that the long-sentence tests read: on a 40-token lattice it is
    the machine-built twin (expected F by composition, 1e-12), and on a 300-token one
    its E[tp] is Σ_{c ∈ x} Pr(c ∈ y) and its E[m(y)] Σ_c Pr(c ∈ y) (the chunk
    marginals' engine, 1e-12 relative), for MAP's and MEU's tags; U(MEU's tags) is
    MEU's score (another engine)."""
    for n in (40, 300):
        lat = long_lattice(n, 5.0)
        cm = lat.chunk_marginals()
        tix = {t: i for i, t in enumerate(lat.space.types)}
        meu = decode_meu(lat)
        for tags in (decode_map(lat).tags, meu.tags):
            got = expected_f(lat, hypothesis=tags, beta=1.0, method="fast")
            if n <= 40:
                twin = expected_f(lat, hypothesis=tags, beta=1.0, method="fst")
                assert got.f == pytest.approx(twin.f, rel=0, abs=1e-12), n
                assert got.tp == pytest.approx(twin.tp, rel=0, abs=1e-11), n
            chunks = enc.tags_to_chunks(tags, lat.scheme)
            assert got.tp == pytest.approx(sum(cm[tix[t], s, e] for t, s, e in chunks),
                                           rel=1e-12, abs=1e-12), n
            assert got.m_ref == pytest.approx(cm.sum(), rel=1e-12), n
        assert meu.score == pytest.approx(
            expected_f(lat, hypothesis=meu.tags, beta=1.0, method="fast").f, rel=0, abs=1e-12)


# ------------------------------------------- real data, identities that pin MEU
@functools.lru_cache(maxsize=None)
def conll_model(train_path, test_path):
    """A small ML CRF (400 CoNLL-2000 training sentences, tmpt1, 40 L-BFGS steps:
    a few seconds) and the CoNLL-2000 test sentences."""
    train = read_conll(train_path)[:400]
    crf = CRF("tmpt1")
    data = crf._prepare(train)
    with threadpool_limits(limits=1, user_api="blas"):
        crf.set_params(objective="ml", l2=0.05, max_iter=40).fit(data)
    return crf, read_conll(test_path)


def real(corpus):
    return conll_model(corpus("conll2000", "train.txt"), corpus("conll2000", "test.txt"))


def subset(sentences):
    """Every 10th test sentence and the 5 longest, in corpus order."""
    longest = sorted(range(len(sentences)), key=lambda i: (-len(sentences[i]), i))[:5]
    return sorted(set(range(0, len(sentences), 10)) | set(longest))


def utilities(lats, hyps, beta) -> np.ndarray:
    """U(x_i) = E[F_β(x_i | y_i)] of each hypothesis against its lattice (batched engine)."""
    return np.array([r.f for r in expected_f_all(lats, hyps, beta=beta, direction="decoding")])


def check_meu_identities(lats, beta, where, local=(), twin=()):
    """Exact MEU on each lattice, where enumeration cannot go: gap in [0, 1e-12), the
    score is U(tags) (another engine, 1e-12), U(tags) >= U of MAP's, posterior's and
    k-best MEU's (k = 20) tags − gap − 1e-12; for the indices in ``local`` no chunking
    one chunk added, removed or retyped away has U above U(tags) + gap + 1e-12; for
    those in ``twin`` the score is the machine-built twin's U (1e-10)."""
    ds = [decode_meu(lat, beta=beta) for lat in lats]
    u = utilities(lats, [d.tags for d in ds], beta)
    for i, (d, ui) in enumerate(zip(ds, u)):
        assert 0.0 <= gap_of(d) < GAP_MAX, (where, i, d.gap)
        assert d.score == pytest.approx(ui, rel=0, abs=1e-12), (where, i, d.score, ui)
    others = {"MAP": [d.tags for d in decoder("map").decode_all(lats)],
              "posterior": [d.tags for d in decoder("posterior").decode_all(lats)],
              "k-best": [d.tags for d in decoder("meu-kbest", beta=beta, k=20).decode_all(lats)]}
    for name, tags in others.items():
        uo = utilities(lats, tags, beta)
        bad = np.flatnonzero(u < uo - np.array([d.gap for d in ds]) - TOL)
        assert not len(bad), (where, f"U(MEU) < U({name})", bad, u[bad], uo[bad])
    for i in local:
        lat, d = lats[i], ds[i]
        moves = single_chunk_moves(enc.tags_to_chunks(d.tags, lat.scheme), lat.n,
                                   lat.space.types)
        um = utilities([lat] * len(moves),
                       [enc.chunks_to_tags(m, lat.n, lat.scheme) for m in moves], beta)
        j = int(np.argmax(um))
        assert um[j] <= u[i] + d.gap + TOL, (where, i, "a move raises U", moves[j], um[j], u[i])
    for i in twin:
        f = expected_f(lats[i], hypothesis=ds[i].tags, beta=beta, method="fst").f
        assert ds[i].score == pytest.approx(f, rel=0, abs=1e-10), (where, i, ds[i].score, f)


def test_real_sentences_meu_meets_its_identities(corpus):
    """Every 10th CoNLL-2000 test sentence and the 5 longest (70 tokens), β = 0.5, 1, 2
    in turn: the certificate, score = U(tags), U(MEU) above MAP, posterior and k-best;
    on the longest sentence of at most 30 tokens of each β no single-chunk move raises
    U, and its score is the machine-built twin's."""
    crf, test = real(corpus)
    idx = subset(test)
    lats = crf.lattices([test[i] for i in idx])
    for b, beta in enumerate(BETAS):
        part = [j for j, i in enumerate(idx) if i % 3 == b]
        one = max((k for k, j in enumerate(part) if lats[j].n <= 30),
                  key=lambda k: lats[part[k]].n)
        check_meu_identities([lats[j] for j in part], beta, where=beta, local=[one], twin=[one])


def test_real_sentences_corpus_and_posterior_decoders_certified(corpus):
    """Corpus MEU: its ratio is (1+β²) Σ E[tp_i] / (Σ m(x_i) + β² Σ E[m(y_i)]) from the
    expected counts (the expectation engine), and Dinkelbach's certificate holds at it
    (no sentence has a chunking x with Σ_{c ∈ x} ((1+β²)·Pr(c ∈ y) − r) above its
    decision's: the interval DP over the chunk marginals).  Posterior decoding: its
    score is Σ_i Pr(y_i = x_i) of its tags, the maximum over valid sequences (the
    layers' Viterbi on the marginals, not the batched engine), at most Σ_i max Pr."""
    crf, test = real(corpus)
    idx = subset(test)
    lats = crf.lattices([test[i] for i in idx])
    beta = 1.0
    got, ratio = decode_meu_corpus(lats, beta=beta)
    assert all(enc.is_valid(y, lat.scheme) and len(y) == lat.n for y, lat in zip(got, lats))
    ef = expected_f_all(lats, got, beta=beta, direction="decoding")
    m_hyp = sum(len(enc.tags_to_chunks(y, lat.scheme)) for y, lat in zip(got, lats))
    r = (1 + beta ** 2) * sum(e.tp for e in ef) / (m_hyp + beta ** 2 * sum(e.m_ref for e in ef))
    assert ratio == pytest.approx(r, rel=1e-12, abs=1e-12)
    for y, lat in zip(got, lats):
        cm = lat.chunk_marginals()
        tix = {t: i for i, t in enumerate(lat.space.types)}
        mine = sum((1 + beta ** 2) * cm[tix[t], s, e] - ratio
                   for t, s, e in enc.tags_to_chunks(y, lat.scheme))
        best = best_chunking_value(np.where(np.isfinite(np.log(cm + 1)),
                                            (1 + beta ** 2) * cm - ratio, -np.inf))
        assert best <= mine + 1e-9, (lat.n, best, mine)
    for i, lat in zip(idx, lats):
        d = decode_posterior(lat)
        marg = lat.marginals()
        col = {t: k for k, t in enumerate(lat.tags)}

        def summed(tags):
            return float(sum(marg[k, col[t]] for k, t in enumerate(tags)))
        assert enc.is_valid(d.tags, lat.scheme), i
        assert d.score == pytest.approx(summed(d.tags), rel=1e-12, abs=1e-12), i
        L = len(lat.tags)
        layers = Lattice.from_scores(lat.tags, marg, np.zeros((L, L)), scheme=lat.scheme,
                                     warn=False).layers
        best = Lattice(lat.tags, lat.scheme, layers).map().tags
        assert d.score == pytest.approx(summed(best), rel=1e-12, abs=1e-12), (i, d.tags, best)
        assert d.score <= marg.max(axis=1).sum() + 1e-12, i


@pytest.mark.slow
def test_every_real_sentence_meets_the_meu_identities(corpus):
    crf, test = real(corpus)
    for start in range(0, len(test), 200):
        lats = crf.lattices(test[start:start + 200])
        for b, beta in enumerate(BETAS):
            check_meu_identities(lats[b::3], beta, where=(start, beta))
