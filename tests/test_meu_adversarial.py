"""Adversarial checks of exact MEU decoding (issue 17) beyond tests/test_meu_exact.py.

Failing tests here are real failures found by probing (kept failing on purpose, not
xfail); the others pin tricky cases that were checked and hold:

* lattices from machines with several states per tag (``Lattice.from_fst``) and the
  joint model's chunk layer, against enumeration of the lattice's own paths;
* every scheme of ``fstchunk.schemes.encodings.SCHEMES``, typed and untyped;
* the exact/quadrature switch (n = 12 / 13) against k-best MEU, MAP and local search;
* β² = 1e-3 and 1e3 (the standard β = √1e-3, √1e3); tiny memory budgets.

Brute force here is ``Lattice.enumerate()`` (the layers' state paths summed by tag
sequence; no engine recursion, no ``Lattice.log_prob``), and U(x) = E_y[F_β(x | y)] with the library's F_β
(``fstchunk.evaluation.chunks.f_beta``: 0/0 := 1).
"""

from __future__ import annotations

import warnings

import numpy as np
import pynini
import pytest
from threadpoolctl import threadpool_limits

from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.decoding.decode import decode_map, decode_meu, decode_meu_corpus, decode_posterior
from fstchunk.engine.quadrature import QUAD_TOL, exp_sum
from fstchunk.core.errors import BudgetError, InputError, SchemeError
from fstchunk.evaluation.chunks import f_beta
from fstchunk.decoding.expected import expected_f
from fstchunk.structures.lattice import Lattice
from fstchunk.schemes.tagspace import TagSet
from oracles import all_chunkings, random_scores, single_chunk_moves

GAP_MAX = 1e-12
TOL = 1e-12
#: standard β whose engine weights β² are 1e-3, 1 and 1e3
BETA_EXTREMES = (1e-3 ** 0.5, 1.0, 1e3 ** 0.5)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


# ------------------------------------------------------------------ brute force
def path_law(lat: Lattice) -> dict:
    """{tag tuple: probability}: :meth:`Lattice.enumerate` (the lattice's state paths
    summed by tag sequence; held to the definition in tests/test_house_oracles.py)."""
    return {y: float(np.exp(lp)) for y, lp in lat.enumerate()}


def utilities(lat: Lattice, beta: float) -> dict:
    """{tag tuple: U(x)} for every hypothesis x written with the lattice's tags."""
    law = path_law(lat)
    ys = [(frozenset(enc.tags_to_chunks(list(y), lat.scheme)), p) for y, p in law.items()]
    out = {}
    for c in all_chunkings(lat.n, tuple(lat.space.types)):
        x = tuple(enc.chunks_to_tags(c, lat.n, lat.scheme))
        if any(t not in lat.tags for t in x):
            continue
        cx = frozenset(c)
        out[x] = sum(p * f_beta(len(cx & cy), len(cx), len(cy), beta) for cy, p in ys)
    return out


def check_against_brute_force(lat: Lattice, beta: float, where) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = decode_meu(lat, beta)
    U = utilities(lat, beta)
    x = tuple(d.tags)
    assert x in U, (where, "tags not written with the lattice's tags", d.tags)
    assert d.score == pytest.approx(U[x], abs=TOL), where
    assert max(U.values()) - U[x] <= d.gap + TOL, where
    assert d.gap == 0.0 or lat.n > 12, where
    assert 0.0 <= d.gap < GAP_MAX, where


def random_machine(rng, scheme, types, n, states, scale, density):
    """A layered acceptor with ``states`` states per position and random arcs."""
    ts = TagSet(scheme, types)
    tags = enc.scheme_tags(scheme, types)
    f = pynini.Fst("log64")
    layers = [[f.add_state()]] + [[f.add_state() for _ in range(states)] for _ in range(n)]
    f.set_start(layers[0][0])
    for i in range(n):
        for s in layers[i]:
            for q in layers[i + 1]:
                for t in tags:
                    if rng.random() < density:
                        w = pynini.Weight("log64", float(rng.normal(scale=scale)))
                        f.add_arc(s, pynini.Arc(ts.label(t), ts.label(t), w, q))
    for q in layers[n]:
        f.set_final(q, pynini.Weight("log64", float(rng.normal(scale=scale))))
    return fsa.attach(f, ts.symbols), tags


def machine_lattice(seed, scheme, types, n, scale=1.0):
    rng = np.random.default_rng(seed)
    for _ in range(20):                 # a machine with no valid sequence is redrawn
        f, tags = random_machine(rng, scheme, types, n, 2, scale, 0.6)
        try:
            lat = Lattice.from_fst(f, tags, scheme)
        except Exception:
            continue
        if max(len(lab) for lab in lat.layers.labels) > len(tags) // 2:
            return lat
    raise AssertionError("no machine drawn")


# =========================================================== FAILURES FOUND
def test_beta_zero_empty_hypothesis_has_utility_one():
    """β = 0 is legal (fbeta.check_beta) and F_0(∅ | y) = 0/0 := 1 for every y
    (evaluate.f_beta), so U(∅) = 1 is the maximum.  The decoder takes U(∅) =
    Pr(m(y) = 0) (meu._search: ``best_val = pm[0]``; the old decoder too), so here
    it returns a 1-chunk hypothesis, U = 0.67 at n = 3 (gap 0.0) and U = 0.986 at
    n = 13 (gap 1e-15), instead of all O (U = 1)."""
    tags = enc.scheme_tags("IOB2", ("NP",))
    for n in (3, 13):
        rng = np.random.default_rng(3 + n)
        lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), n, 1.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # see test_beta_zero_no_runtime_warning
            d = decode_meu(lat, 0.0)
        u = expected_f(lat, hypothesis=d.tags, beta=0.0, method="fast").f
        u_empty = expected_f(lat, hypothesis=["O"] * n, beta=0.0, method="fast").f
        assert u_empty == pytest.approx(1.0, abs=1e-12)
        assert d.score == pytest.approx(u, abs=TOL), n
        assert u_empty - u <= d.gap + TOL, (n, d.tags, u)


def test_beta_zero_no_runtime_warning():
    """β = 0, n ≥ 13: 'divide by zero' RuntimeWarning from meu._search's ρ_k
    ((k0 + β·m_hi) / (k + β·m_hi) with k = 0, β = 0)."""
    tags = enc.scheme_tags("IOB2", ("NP",))
    lat = Lattice.from_scores(tags, *random_scores(np.random.default_rng(0), 3, 13, 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decode_meu(lat, 0.0)


@pytest.mark.parametrize("beta", [1e3, 1e7 ** 0.5])
def test_large_beta_gap_below_1e12(beta):
    """Any finite β ≥ 0 is legal (the standard β; the engine's weight is β²).  At
    β² = 1e6 on a 13-token lattice the certificate is 1.3e-11 (β² = 1e7: 1e-9, and the
    score is off U(tags) by ~1e-12; β² = 1e9: 2e-9 and overflow warnings).  Cause:
    :func:`meu.exp_sum` on [a, b] with large a (a = k + β²·m_lo): the double-exponential trapezoid grid is fixed in v, and
    t ≈ 1/a falls where t = exp(v − e^{−v}) is doubly compressed; no step h meets
    QUAD_TOL and the loop returns the last rule anyway (see the next test).  The
    rule for [1, b/a] rescaled (t/a, log W − log a) would be as accurate as for a = 1."""
    tags = enc.scheme_tags("IOB2", ("",))
    n = 13
    lat = Lattice.from_scores(tags, np.zeros((n, 3)), np.zeros((3, 3)))
    d = decode_meu(lat, beta)
    u = expected_f(lat, hypothesis=d.tags, beta=beta, method="fast").f
    assert d.tags == ["B"] * n
    assert 0.0 <= d.gap < GAP_MAX
    assert d.score == pytest.approx(u, abs=TOL)


@pytest.mark.parametrize("a,ratio", [(1e5, 20.0), (1e6, 2.0), (1e7, 1.3)])
def test_exp_sum_meets_its_tolerance_at_large_a(a, ratio):
    """exp_sum(a, b) promises relative error ≤ QUAD_TOL on [a, b]; for a ≥ 1e5 it
    returns rules with 4e-13 .. 3e-11 (it is 9e-16 on [1, 2] and [1, 20])."""
    t, lw = exp_sum(a, a * ratio)
    xs = np.geomspace(a, a * ratio, 1001)
    err = np.max(np.abs(xs * np.exp(lw[None, :] - np.outer(xs, t)).sum(axis=1) - 1))
    assert err <= 4 * QUAD_TOL


def test_large_beta_no_overflow_warning():
    """β² = 1e7, n = 20: 'overflow encountered in multiply' from meu._search's
    ``cand = rho * (beta_sq + 1) * (h + e)`` (ρ_0 = k0 / 1e-300 for k = 0)."""
    tags = enc.scheme_tags("IOB2", ("NP",))
    n = 20
    lat = Lattice.from_scores(tags, np.zeros((n, 3)), np.zeros((3, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decode_meu(lat, 1e7 ** 0.5)


def test_corpus_meu_with_a_ratio_below_1e12_is_the_enumerated_best():
    """Chunks of marginal ~e^-30 each: the best expected-count ratio is 1.9e-13 (the
    enumerated best takes both chunks); the decoder returned all O with ratio 0.
    Cause (decode._dinkelbach since e111ca1): it starts from λ = ratio of the >1/2
    set (here ∅: 0) and stops when ``r <= lam + 1e-12``, an absolute tolerance, so
    the first improvement (0 → 1.9e-13) is discarded; the old loop always took its
    first step (``and it > 0``).  (The pruned pass lists nothing; the unpruned retry
    then hits the same test.)"""
    tags = enc.scheme_tags("IOB2", ("NP",))
    e = np.zeros((2, 3))
    e[:, 0] = 30.0
    lat = Lattice.from_scores(tags, e, np.zeros((3, 3)))
    got, r = decode_meu_corpus([lat], 1.0)
    # the oracle: the expected-count ratio 2·E[tp] / (m(x) + E[m]) of every chunking x,
    # from the enumerated law
    law = [(frozenset(enc.tags_to_chunks(list(y), "IOB2")), p) for y, p in path_law(lat).items()]
    em = sum(p * len(c) for c, p in law)
    ratio = {}
    for c in all_chunkings(2, ("NP",)):
        tp = sum(p * len(set(c) & y) for y, p in law)
        ratio[tuple(enc.chunks_to_tags(c, 2, "IOB2"))] = 2 * tp / (len(c) + em)
    best = max(ratio, key=ratio.get)
    assert ratio[best] > 0 and list(best) == ["B-NP", "B-NP"]
    assert got == [list(best)]
    assert r == pytest.approx(ratio[best], rel=1e-9)


def test_meu_may_use_a_tag_the_lattice_all_but_excludes_and_expected_f_scores_it():
    """IOB1 with B-NP scored out (emission -50; a tag list without B-NP is refused,
    since it cannot express IOB1): the lattice has y ∈ {I-NP O, O I-NP} up to e^-50;
    the hypothesis of both one-token chunks (U = 2/3 at β = 1, vs 1/2 for either y)
    is written I-NP B-NP.  The contract: MEU decides among all chunkings over the
    lattice's types, written in its scheme (a sequence the model all but excludes),
    and expected_f scores any such hypothesis (it used to refuse the decoder's own
    answer)."""
    with pytest.raises(SchemeError, match="tags O, I-NP cannot express IOB1: missing B-NP"):
        Lattice.from_scores(("O", "I-NP"), np.zeros((2, 2)), np.zeros((2, 2)), scheme="IOB1")
    tags = ("O", "B-NP", "I-NP")
    e = np.array([[0.0, -50.0, 0.0], [0.0, -50.0, 0.0]])
    t = np.array([[-50.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, -50.0]])  # O O, I I out
    lat = Lattice.from_scores(tags, e, t, scheme="IOB1")
    d = decode_meu(lat, 1.0)
    assert d.tags == ["I-NP", "B-NP"] and enc.is_valid(d.tags, "IOB1")
    assert d.score == pytest.approx(2 / 3, abs=TOL)
    for method in ("fast", "fst"):
        assert expected_f(lat, hypothesis=d.tags, beta=1.0, method=method).f == \
            pytest.approx(d.score, abs=TOL)
    with pytest.raises(InputError, match="chunk type 'VP'"):
        expected_f(lat, hypothesis=["I-VP", "O"], method="fast")


def test_log_prob_of_a_sequence_a_machine_excludes_is_minus_inf():
    """Lattice.log_prob documents -inf for a valid sequence the model excludes; on a
    from_fst lattice whose layer has no state of that tag it raises numpy's
    'zero-size array to reduction operation maximum' ValueError (the sub-chain of
    log_prob has an empty layer)."""
    ts = TagSet("IOB2", ("NP",))
    f = pynini.Fst("log64")
    s = [f.add_state() for _ in range(3)]
    f.set_start(s[0])
    f.set_final(s[2])
    one = pynini.Weight.one("log64")
    f.add_arc(s[0], pynini.Arc(ts.label("O"), ts.label("O"), one, s[1]))   # first token: O
    for t in ("O", "B-NP"):
        f.add_arc(s[1], pynini.Arc(ts.label(t), ts.label(t), one, s[2]))
    lat = Lattice.from_fst(fsa.attach(f, ts.symbols), ts.tags, "IOB2")
    assert lat.log_prob(["B-NP", "O"]) == -np.inf


def test_memory_budget_bounds_the_peak():
    """decode_meu promises to work "in at most memory_budget bytes (BudgetError before
    more is taken)".  A 200-token sticky lattice (long chunks of 3 types) decodes
    under an 80 MB budget, but numpy's traced peak during the call is ~128 MiB
    (n = 400 under 300 MB: traced peak 476 MiB, RSS +679 MB).  Cause: spans.py counts
    ``kept_bytes + G.nbytes`` only, but the per-step ``out_lq`` / ``out_ratio`` lists
    are concatenated at the end (a second copy of the table), and meu._tilt_basis
    copies it once more (``tab.prob[sw.order]``, ``tab.ratio[sw.order]``)."""
    import tracemalloc
    n = 200
    tags = enc.scheme_tags("IOB2", ("NP", "VP", "PP"))
    L = len(tags)
    e = np.random.default_rng(0).normal(scale=0.01, size=(n, L))
    t = np.zeros((L, L))
    for i, x in enumerate(tags):
        if x.startswith("I-"):
            t[i, i] = t[tags.index("B-" + x[2:]), i] = 4.0
    lat = Lattice.from_scores(tags, e, t)
    decode_meu(Lattice.from_scores(tags, e[:20], t), 1.0)     # warm caches
    lat.chain
    budget = 8e7
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        try:
            decode_meu(lat, 1.0, memory_budget=budget)
        except BudgetError:
            return
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= budget, f"peak {peak / 2**20:.0f} MiB > budget {budget / 2**20:.0f} MiB"


def test_token_marginals_are_probabilities_at_huge_finite_scales():
    """Lattice.marginals() must be probabilities at any finite score scale (the
    contract of test_meu_exact.py).  At scale 1e18 (n = 20; 1e16 at n = 100) they are
    NaN, and decode_posterior then returns a sequence other than the MAP of a point
    mass.  Cause: chain.state_posteriors takes exp(α + β − log Z) on the raw layers;
    its rounding (≈ n·scale·1e-16) exceeds ~745 nats, every state underflows to 0 and
    the per-layer renormalisation is 0/0.  The gauged chain's forward (its state
    distribution, as spans.chunk_probs uses) is exact at any scale.  Chunk
    marginals, from the gauged chain, are fine here."""
    tags = enc.scheme_tags("IOB2", ("NP",))
    rng = np.random.default_rng(0)
    lat = Lattice.from_scores(tags, *random_scores(rng, 3, 20, 1e18))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = lat.marginals()
    assert np.isfinite(m).all()
    assert m.min() >= 0 and m.max() <= 1
    np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-12)
    cm = lat.chunk_marginals()
    assert np.isfinite(cm).all() and cm.min() >= 0 and cm.max() <= 1


# ============================================================ CHECKED, HOLD
@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_machine_lattices_with_several_states_per_tag(scheme):
    """from_fst lattices (two machine states per position, random arcs): exact MEU
    against enumeration of the lattice's paths, β extremes, typed and untyped."""
    for k, (types, n) in enumerate([(("NP", "VP"), 3), (("",), 4), (("NP",), 1)]):
        lat = machine_lattice(100 + k, scheme, types, n)
        for beta in BETA_EXTREMES:
            check_against_brute_force(lat, beta, (scheme, types, n, beta))
        np.testing.assert_array_less(-1e-15, lat.chunk_marginals())


def test_joint_model_lattice_against_enumeration():
    """The joint model's chunk layer (states (C, P, s): several per tag)."""
    from fstchunk.models.joint import chain_layers
    from fstchunk.models.joint.structure import Parts
    rng = np.random.default_rng(0)
    tags = ("O", "B-NP", "I-NP", "B-VP", "I-VP")
    index = np.array([[0, 2, 4], [0, 1, 3]])
    n, c, p = 4, 3, 2
    for scale in (0.3, 3.0):
        parts = Parts(*(rng.normal(scale=scale, size=s) for s in
                        ((n, c, p), (n, c, p, p), (n, c), (n, c), (n, c, c))))
        parts.ctrans[:, 0, 0] = -np.inf
        lat = Lattice(tags, "IOB2", chain_layers(parts, index))
        for beta in BETA_EXTREMES:
            check_against_brute_force(lat, beta, (scale, beta))


@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_every_scheme_small_lattices_beta_extremes(scheme):
    rng = np.random.default_rng(enc.SCHEMES.index(scheme))
    for types, n in ((("NP", "VP"), 3), (("",), 4)):
        tags = enc.scheme_tags(scheme, types)
        for scale in (0.01, 30.0, 1e6):
            lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale),
                                      scheme=scheme)
            for beta in BETA_EXTREMES[::2]:
                check_against_brute_force(lat, beta, (types, n, scale, beta))


@pytest.mark.parametrize("scheme", enc.SCHEMES)
def test_exact_quadrature_boundary_12_13(scheme):
    """n = 12 (count basis, gap exactly 0) and 13 (quadrature, gap < 1e-12), from_scores
    and from_fst: the score is U(tags) (the fast engine, and the machine-built twin at
    1e-10), U(tags) is at least U of MAP's, posterior's and k-best MEU's (k = 20) tags
    − gap, and no chunking one chunk added, removed or retyped away has a higher U
    (the twin, k-best and the moves at one β per lattice, in turn)."""
    rng = np.random.default_rng(7 + enc.SCHEMES.index(scheme))
    tags = enc.scheme_tags(scheme, ("NP", "VP"))
    for n in (12, 13):
        lats = [Lattice.from_scores(tags, *random_scores(rng, len(tags), n, 1.0),
                                    scheme=scheme),
                machine_lattice(n, scheme, ("",), n)]
        for j, lat in enumerate(lats):
            for b, beta in enumerate(BETA_EXTREMES):
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    d = decode_meu(lat, beta)
                u = expected_f(lat, hypothesis=d.tags, beta=beta, method="fast").f
                assert d.score == pytest.approx(u, abs=TOL)
                others = [decode_map(lat).tags, decode_posterior(lat).tags]
                if b == (j + n) % 3:
                    assert d.score == pytest.approx(expected_f(
                        lat, hypothesis=d.tags, beta=beta, method="fst").f, abs=1e-10)
                    others.append(decode_meu(lat, beta, method="kbest", k=20).tags)
                    others += [enc.chunks_to_tags(m, n, scheme) for m in single_chunk_moves(
                        enc.tags_to_chunks(d.tags, scheme), n, lat.space.types)]
                for y in others:
                    uo = expected_f(lat, hypothesis=y, beta=beta, method="fast").f
                    assert uo - u <= d.gap + TOL, (n, beta, y, uo, u)
                assert (d.gap == 0.0) if n <= 12 else (0.0 <= d.gap < GAP_MAX)


def test_tiny_memory_budget_is_a_budget_error():
    """A budget below the search's tables is refused — unless the MAP certificate
    decides the sentence, which takes no table (then the MAP chunking, gap 0)."""
    from fstchunk.engine.meu import map_certified
    tags = enc.scheme_tags("IOB2", ("NP", "VP"))
    rng = np.random.default_rng(0)
    refused = 0
    for n in (1, 12, 13, 50):
        for scale in (1.0, 3.0):
            lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale))
            best = lat.map()
            certified = map_certified(np.exp(best.score),
                                      len(enc.tags_to_chunks(best.tags, "IOB2")), 1.0)
            for budget in ((1, 32) if n == 1 else (1, 1000, 1e4)):
                if certified:
                    d = decode_meu(lat, 1.0, memory_budget=budget)
                    assert d.gap == 0.0 and enc.tags_to_chunks(d.tags, "IOB2") == \
                        enc.tags_to_chunks(best.tags, "IOB2")
                    continue
                refused += 1
                with pytest.raises(BudgetError):
                    decode_meu(lat, 1.0, memory_budget=budget)
    assert refused >= 8
