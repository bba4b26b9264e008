"""Oracles as one suite (issue 45): every fast path of every structure against its
``enumerate()``.

One family per structure, each over random small models:

* the chain lattice (:meth:`fstchunk.structures.lattice.Lattice.enumerate`): the eight schemes
  with two chunk types (and one untyped), the unconstrained chain (``scheme=None``),
  free or under a random tag mask (:meth:`Lattice.constrained`), ragged corpora of
  lengths 1, 4, 2, 5, score scales 1, 30 and 1e5.  Every quantity — log Z, token and chunk
  marginals, MAP, posterior decoding, exact MEU (value, maximality over every
  chunking, certificate), expected F in both directions, entropy, log Pr — on each
  fast path: the per-sentence :class:`Lattice` methods, the batched decoders and
  expectations (:func:`fstchunk.decoding.decoders.decoder` ``.decode_all``,
  :func:`fstchunk.decoding.expected.expected_f_all`) on the ragged list, the machine path
  (a lattice from the model's acceptor, the machine's total weight, expected F by
  composition) and the torch layer (:class:`fstchunk.torch.ChunkCRF`, if installed);
* the segment space (:func:`fstchunk.structures.segments.enumerate_segments`,
  :func:`fstchunk.decoding.segments.enumerate_sets`): k-best by DP and by machine, the
  MEU set over independent decisions and the registry's segment decoders;
* the joint POS+chunk structure (:meth:`fstchunk.models.joint.Parts.enumerate`):
  Figure 1's DP, inside-outside, the machine twin and the chunk-layer lattice.

Each enumeration is itself held to a definition first (tests/oracles.py: every
chunking, written in the scheme; the segment formula; the structures' scores).

Tolerances: 1e-12 plus the oracle's own rounding at score scale M (path scores
summed in float64 err by about (2n+2)·eps·M: :func:`oracles.path_score_bound`);
the composition path and the torch layer at 1e-9.  Scale 1e5 is run where the
engine promises exactness at any scale (the numpy engine; the torch layer promises
1e4 and runs at 30 here); the machine path runs at scales 1 and 30 (OpenFst's
shortest distance stops at a relative delta).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.decoding.decoders import decoder
from fstchunk.structures.enumeration import layer_paths
from fstchunk.core.errors import InputError, SchemeError
from fstchunk.decoding.expected import expected_f, expected_f_all
from fstchunk.structures.lattice import Lattice
from oracles import (all_chunkings, brute_chunk_marginals, brute_expectations,
                     brute_token_marginals, f_standard, path_score_bound, stable_seed,
                     utilities_of)

EPS = float(np.finfo(float).eps)
TOL = 1e-12
BETAS = (0.5, 1.0, 2.0)
LENGTHS = (1, 4, 2, 5)                        # a ragged corpus
SCHEMES = enc.SCHEMES + ("none",)
SCALES = (1.0, 30.0, 1e5)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


# ======================================================================= chains
def labels(scheme: str, untyped: bool = False) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(tags, types) of a case: two chunk types, one untyped, or free labels."""
    if scheme == "none":
        return ("sunny", "rainy", "fog"), ()
    types = ("",) if untyped else ("NP", "VP")
    return tuple(enc.scheme_tags(scheme, types)), types


class Sentence:
    """One lattice and everything its enumeration says: ``seqs`` [(tags, chunk set,
    Pr)] in oracles.py's form, log Z, the marginals, and U(x) of every chunking x."""

    def __init__(self, lat: Lattice, kappa: float, allowed=None):
        self.lat, self.kappa, self.allowed = lat, kappa, allowed
        self.n = lat.n
        listed = list(lat.enumerate())
        self.logp = {y: lp for y, lp in listed}
        chunked = lat.space.chunked
        self.seqs = [(y, frozenset(enc.tags_to_chunks(list(y), lat.scheme)) if chunked
                      else frozenset(), math.exp(lp)) for y, lp in listed]
        self.logz = layer_paths(lat.layers).log_partition
        self.token = brute_token_marginals(self.seqs, lat.tags, self.n)
        if chunked:
            self.chunk = brute_chunk_marginals(self.seqs, lat.space.types, self.n)
            self.hyps = [frozenset(c) for c in all_chunkings(self.n, lat.space.types)]
            self.U = {b: utilities_of(self.hyps, self.seqs, b) for b in BETAS}

    def prob_tol(self, p):
        p = np.clip(p, 0.0, 1.0)
        return TOL + 2 * self.kappa * p * (1 - p)

    def u(self, tags, beta) -> float:
        """U(tags) = E_y[F_β(tags | y)] from the enumerated law."""
        x = frozenset(enc.tags_to_chunks(list(tags), self.lat.scheme))
        return float(self.U[beta][self.hyps.index(x)])


class Case:
    """A ragged corpus of random chains for one (scheme, scale, mask) and its oracles."""

    def __init__(self, scheme: str, scale: float, masked: bool, untyped: bool = False):
        self.scheme, self.scale, self.masked, self.untyped = scheme, scale, masked, untyped
        rng = np.random.default_rng(stable_seed(scheme, scale, masked, untyped))
        self.beta = BETAS[int(rng.integers(3))]       # the β of the batched decoders
        self.tags, _ = labels(scheme, untyped)
        L = len(self.tags)
        self.trans, self.start, self.end = (rng.normal(scale=scale, size=s)
                                            for s in ((L, L), L, L))
        self.emissions, self.allowed, self.sentences = [], [], []
        for n in LENGTHS:
            em = rng.normal(scale=scale, size=(n, L))
            lat = Lattice.from_scores(self.tags, em, self.trans, self.start, self.end,
                                      scheme=None if scheme == "none" else scheme)
            allowed = None
            while masked and allowed is None:       # a mask that leaves some sequence
                allowed = rng.random((n, L)) < 0.7
                try:
                    if not any(True for _ in lat.constrained(allowed).enumerate()):
                        allowed = None
                except InputError:
                    allowed = None
            if allowed is not None:
                lat = lat.constrained(allowed)
            self.emissions.append(em)
            self.allowed.append(allowed)
            # the oracle's own rounding (path scores summed in float64)
            kappa = (2 * n + 2) * EPS * path_score_bound(em, self.trans, self.start, self.end)
            self.sentences.append(Sentence(lat, kappa, allowed))
        self.chunked = self.sentences[0].lat.space.chunked

    @property
    def lattices(self) -> list[Lattice]:
        return [s.lat for s in self.sentences]

    def __repr__(self) -> str:
        return (f"Case({self.scheme}, scale={self.scale:g}, "
                f"{'masked' if self.masked else 'free'}{', untyped' if self.untyped else ''})")


CASES = [(s, x, m, False) for s in SCHEMES for x in SCALES for m in (False, True)] + \
        [("IOBES", 1.0, False, True), ("BILOU", 30.0, True, True)]
PATHS = ("lattice", "batched", "machine", "torch")


@functools.lru_cache(maxsize=None)
def case(scheme, scale, masked, untyped) -> Case:
    return Case(scheme, scale, masked, untyped)


def case_id(c) -> str:
    s, x, m, u = c
    return f"{s}-{x:g}-{'masked' if m else 'free'}{'-untyped' if u else ''}"


# ------------------------------------------------------------ the oracle itself
@pytest.mark.parametrize("spec", CASES, ids=case_id)
def test_enumerate_is_the_definition(spec):
    """Lattice.enumerate() lists exactly the valid sequences allowed by the mask —
    every chunking written in the scheme (every label string for scheme=None) — each
    with log Pr = score(y) − log Σ exp(score), score by the chain formula."""
    c = case(*spec)
    for s, em in zip(c.sentences, c.emissions):
        tr, st, en = c.trans, c.start, c.end
        col = {t: i for i, t in enumerate(c.tags)}
        if c.chunked:
            ys = [tuple(enc.chunks_to_tags(list(ch), s.n, c.scheme))
                  for ch in all_chunkings(s.n, s.lat.space.types)]
            ys = [y for y in ys if all(t in col for t in y)]
        else:
            ys = list(itertools.product(c.tags, repeat=s.n))
        if s.allowed is not None:
            ys = [y for y in ys if all(s.allowed[i, col[t]] for i, t in enumerate(y))]
        score = {y: st[col[y[0]]] + en[col[y[-1]]] + sum(em[i, col[t]] for i, t in enumerate(y))
                 + sum(tr[col[a], col[b]] for a, b in zip(y, y[1:])) for y in ys}
        logz = float(np.logaddexp.reduce(list(score.values())))
        assert sorted(s.logp) == sorted(score), c
        assert s.logz == pytest.approx(logz, rel=1e-12, abs=s.kappa), c
        for y, lp in s.logp.items():
            assert lp == pytest.approx(score[y] - logz, rel=0, abs=TOL * max(1, abs(lp))
                                       + 2 * s.kappa), (c, y)


def test_enumerate_refuses_a_large_lattice_naming_its_size():
    tags = enc.scheme_tags("IOB2", ("NP", "VP"))
    lat = Lattice.from_scores(tags, np.zeros((12, 5)), np.zeros((5, 5)))
    with pytest.raises(InputError, match=r"12 tokens and 5 tags: 5\.76e\+06 state paths, "
                                         r"above the limit of 1000000"):
        lat.enumerate()
    small = Lattice.from_scores(tags, np.zeros((3, 5)), np.zeros((5, 5)))
    with pytest.raises(InputError, match="above the limit of 10 "):
        small.enumerate(limit=10)


# --------------------------------------------------------------- the checks
def check_distribution(c: Case, s: Sentence, lat: Lattice, where, tol_scale=1.0,
                       entropy=True):
    """log Z, token and chunk marginals, entropy and log Pr of ``lat`` (a per-sentence
    path) against the enumeration ``s``."""
    assert lat.log_partition() == pytest.approx(s.logz, rel=TOL * tol_scale, abs=s.kappa), where
    got = lat.marginals()
    err = np.abs(got - s.token)
    assert np.all(err <= s.prob_tol(s.token) * tol_scale), (where, err.max())
    if c.chunked:
        got = lat.chunk_marginals()
        assert got.shape == s.chunk.shape, where
        err = np.abs(got - s.chunk)
        assert np.all(err <= s.prob_tol(s.chunk) * tol_scale), (where, err.max())
    p = np.array([q for _, _, q in s.seqs])
    lp = np.array([s.logp[y] for y, _, _ in s.seqs])
    H = -float(np.sum(np.where(p > 0, p * lp, 0.0)))
    assert not entropy or lat.entropy() == pytest.approx(H, rel=1e-9, abs=1e-12 * tol_scale
                                                         + 4 * s.kappa), where
    y = max(s.logp, key=s.logp.get)
    assert lat.log_prob(list(y)) == pytest.approx(s.logp[y], rel=1e-9, abs=1e-12
                                                  + 2 * s.kappa), where


def check_map(s: Sentence, d, where):
    best = max(s.logp, key=s.logp.get)
    assert tuple(d.tags) == best, (where, d.tags, best)
    assert d.score == pytest.approx(s.logp[best], rel=1e-9, abs=1e-12 + 2 * s.kappa), where


def check_posterior(s: Sentence, d, where):
    """The valid sequence (in or out of the mask) of largest summed marginals."""
    col = {t: i for i, t in enumerate(s.lat.tags)}
    mine = sum(s.token[i, col[t]] for i, t in enumerate(d.tags))
    zero = Lattice.from_scores(s.lat.tags, np.zeros((s.n, len(col))),
                               np.zeros((len(col), len(col))), scheme=s.lat.scheme)
    best = max(sum(s.token[i, col[t]] for i, t in enumerate(y)) for y, _ in zero.enumerate())
    assert enc.is_valid(d.tags, s.lat.scheme) if s.lat.space.chunked else True, where
    assert mine >= best - 1e-9 - s.n * s.kappa, (where, d.tags, mine, best)
    assert d.score == pytest.approx(mine, rel=1e-9, abs=1e-9), where


def check_meu(s: Sentence, d, beta, where, exact=True):
    """U(tags) by enumeration; the maximum over every chunking within the certified gap;
    the score is U(tags)."""
    u, best = s.u(d.tags, beta), float(s.U[beta].max())
    assert d.score == pytest.approx(u, rel=1e-9, abs=1e-9), (where, d.score, u)
    if exact:
        assert 0.0 <= d.gap < 1e-12, (where, d.gap)
        assert best - u <= d.gap + TOL, (where, d.tags, u, best)
    else:
        assert u <= best + TOL, where


def check_expected(s: Sentence, got, fixed, beta, direction, where, tol=1e-9):
    want = brute_expectations(s.seqs, frozenset(enc.tags_to_chunks(list(fixed), s.lat.scheme)),
                              beta, direction)
    for key in ("tp", "precision", "recall", "f"):
        assert getattr(got, key) == pytest.approx(want[key], rel=tol, abs=tol), \
            (where, direction, key, getattr(got, key), want[key])


def fixed_sequences(s: Sentence) -> list[tuple[str, ...]]:
    """The MAP sequence, the least probable one and all-O (a chunking of no chunk)."""
    ys = sorted(s.logp, key=s.logp.get)
    out = [ys[-1], ys[0]]
    return out + [("O",) * s.n] if "O" in s.lat.tags else out


# ------------------------------------------------------------ the paths
def run_lattice(c: Case):
    for i, s in enumerate(c.sentences):
        where = (c, i)
        check_distribution(c, s, s.lat, where)
        check_map(s, s.lat.map(), where)
        check_posterior(s, s.lat.posterior(), where)
        if not c.chunked:
            continue
        beta = BETAS[i % 3]
        check_meu(s, s.lat.meu(beta), beta, where)
        for y in fixed_sequences(s):
            check_expected(s, s.lat.expected_f(hypothesis=y, beta=beta), y, beta,
                           "decoding", where)
            check_expected(s, s.lat.expected_f(reference=y, beta=beta), y, beta,
                           "training", where)


def run_batched(c: Case):
    lats = c.lattices
    for d, s in zip(decoder("map").decode_all(lats), c.sentences):
        check_map(s, d, c)
    for d, s in zip(decoder("posterior").decode_all(lats), c.sentences):
        check_posterior(s, d, c)
    if not c.chunked:
        with pytest.raises(SchemeError, match="scheme=None"):
            decoder("meu").decode_all(lats)
        return
    beta = c.beta
    for d, s in zip(decoder("meu", beta=beta).decode_all(lats), c.sentences):
        check_meu(s, d, beta, (c, beta))
    for d, s in zip(decoder("meu-kbest", beta=beta, k=5).decode_all(lats), c.sentences):
        check_meu(s, d, beta, (c, beta, "k-best"), exact=False)
    check_corpus(c, decoder("meu-corpus", beta=beta).decode_all(lats), beta)
    fixed = [fixed_sequences(s)[i % 2] for i, s in enumerate(c.sentences)]
    for direction in ("decoding", "training"):
        got = expected_f_all(lats, fixed, beta=beta, direction=direction)
        for s, g, y in zip(c.sentences, got, fixed):
            check_expected(s, g, y, beta, direction, c)


def check_corpus(c: Case, decided, beta):
    """Corpus MEU maximises R(x) = (1+β²) Σ E[tp_i] / (Σ m(x_i) + β² Σ E[m(y_i)]) over
    every product of chunkings: at the decision's ratio r, no chunking of any
    sentence has (1+β²) E[tp] − r·m(x) above the decision's (Dinkelbach's certificate,
    each sentence's term maximised over its enumerated chunkings)."""
    w = beta ** 2
    em = sum(np.sum(s.chunk) for s in c.sentences)

    def gain(s, x, r):
        return (1 + w) * sum(s.chunk[s.lat.space.types.index(t), a, b] for t, a, b in x) \
            - r * len(x)
    chosen = [enc.tags_to_chunks(list(d.tags), c.scheme) for d in decided]
    tp = sum(gain(s, x, 0.0) for s, x in zip(c.sentences, chosen)) / (1 + w)
    den = sum(len(x) for x in chosen) + w * em
    r = (1 + w) * tp / den if den > 0 else 1.0
    assert all(d.score == pytest.approx(r, rel=1e-9, abs=1e-12) for d in decided), (c, beta)
    slack = sum(max(gain(s, x, r) for x in s.hyps) - gain(s, x0, r)
                for s, x0 in zip(c.sentences, chosen))
    assert slack <= 1e-9, (c, beta, slack)


def run_machine(c: Case):
    for i, s in enumerate(c.sentences):
        where = (c, i, "machine")
        raw = s.lat.unnormalised_fst()
        assert -fsa.total_weight(fsa.to_arc_type(raw, "log64")) == pytest.approx(
            s.logz, rel=1e-9, abs=1e-9), where
        lat = Lattice.from_fst(raw, c.tags, s.lat.scheme)
        check_distribution(c, s, lat, where, tol_scale=1e3)
        check_map(s, lat.map(), where)
        if not c.chunked:
            continue
        beta = BETAS[i % 3]
        check_meu(s, lat.meu(beta), beta, where)
        for y in fixed_sequences(s)[:2]:
            for direction, kw in (("decoding", "hypothesis"), ("training", "reference")):
                got = expected_f(s.lat, beta=beta, method="fst", **{kw: y})
                check_expected(s, got, y, beta, direction, where)


def run_torch(c: Case):
    torch = pytest.importorskip("torch")
    from fstchunk.torch import ChunkCRF
    crf = ChunkCRF(c.tags, c.scheme)
    B, N, L = len(LENGTHS), max(LENGTHS), len(c.tags)
    em = torch.zeros((B, N, L), dtype=torch.float64)
    mask = torch.zeros((B, N), dtype=torch.bool)
    allowed = torch.ones((B, N, L), dtype=torch.bool)
    for b, (e, a) in enumerate(zip(c.emissions, c.allowed)):
        em[b, :len(e)] = torch.from_numpy(e)
        mask[b, :len(e)] = True
        if a is not None:
            allowed[b, :len(e)] = torch.from_numpy(a)
    args = (em, torch.from_numpy(c.trans), mask, torch.from_numpy(c.start),
            torch.from_numpy(c.end))
    logz = crf.log_partition(*args, allowed=allowed if c.masked else None)
    for s, z in zip(c.sentences, logz.tolist()):
        assert z == pytest.approx(s.logz, rel=1e-9, abs=1e-9), c
    if c.masked:
        return                              # the rest of the layer takes no tag mask
    marg, cm = crf.marginals(*args), crf.chunk_marginals(*args)
    order = [crf.types.index(t) for t in c.sentences[0].lat.space.types]
    for b, s in enumerate(c.sentences):
        np.testing.assert_allclose(marg[b, :s.n].numpy(), s.token, rtol=0, atol=1e-9)
        got = cm[b, :s.n, :s.n + 1].numpy()[..., order].transpose(2, 0, 1)
        np.testing.assert_allclose(got, s.chunk, rtol=0, atol=1e-9)
    for got, s in zip(crf.decode(*args, method="map"), c.sentences):
        assert tuple(got) == max(s.logp, key=s.logp.get), c
    gold = [list(fixed_sequences(s)[b % 2]) for b, s in enumerate(c.sentences)]
    for beta in (c.beta,):
        f = crf.expected_f(*args, gold=gold, beta=beta)
        for s, g, y in zip(c.sentences, f.tolist(), gold):
            want = brute_expectations(s.seqs, frozenset(enc.tags_to_chunks(y, c.scheme)),
                                      beta, "training")["f"]
            assert g == pytest.approx(want, rel=1e-9, abs=1e-9), (c, beta)
        corpus = float(crf.expected_corpus_f(*args, gold=gold, beta=beta))
        tp = sum(brute_expectations(s.seqs, frozenset(enc.tags_to_chunks(y, c.scheme)),
                                    beta, "training")["tp"] for s, y in zip(c.sentences, gold))
        em_ = sum(np.sum(s.chunk) for s in c.sentences)
        mg = sum(len(enc.tags_to_chunks(y, c.scheme)) for y in gold)
        assert corpus == pytest.approx(f_standard(tp, em_, mg, beta), rel=1e-9, abs=1e-12), c


RUN = {"lattice": run_lattice, "batched": run_batched, "machine": run_machine,
       "torch": run_torch}


def runs(c) -> bool:
    """Which (case, path) pairs run: the machine and torch paths at scales <= 30 (module
    doc), torch on chunk schemes (ChunkCRF is a chunk-scheme layer)."""
    (scheme, scale, _, _), path = c
    return path in ("lattice", "batched") or (scale <= 30 and (path == "machine"
                                                               or scheme != "none"))


@pytest.mark.parametrize("spec,path", [c for c in itertools.product(CASES, PATHS) if runs(c)],
                         ids=lambda x: case_id(x) if isinstance(x, tuple) else x)
def test_chain_fast_paths_against_enumeration(spec, path):
    RUN[path](case(*spec))
