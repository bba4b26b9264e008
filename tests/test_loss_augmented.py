"""Loss-augmented decoding (issue 18): argmax_y score(y) + Δ(y, gold), Hamming and chunk-F loss.

Oracles: enumeration of every valid sequence (:func:`oracles.brute_force`, lengths
1–7, two chunk types and untyped, IOB2 / IOBES / IOE1, score scales 0.1–300,
β ∈ {0.5, 1, 2}); the loss machines' path weights against the loss computed from
the definition; machine path against fast path on real CoNLL-2000 sentences under a
small CRF and on random and ambiguous machine lattices.  Values are compared, not
tags (ties).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pynini
import pytest
from threadpoolctl import threadpool_limits

import fstchunk
from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.io.conll import read_conll
from fstchunk.core.errors import BudgetError, InputError
from fstchunk.grammars.budget import use_state_budget
from fstchunk.grammars.loss import f_loss_machine, hamming_loss_machine
from fstchunk.grammars.models import score_lattice
from fstchunk.structures.lattice import Lattice
from fstchunk.decoding.lossaug import decode_loss_augmented, loss_value
from fstchunk.models.crf import CRF
from oracles import brute_force, f_standard, path_score_bound, random_scores

EPS = float(np.finfo(float).eps)
F32 = 2.0 ** -24
BETAS = (0.0, 0.5, 1.0, 2.0)            # the standard β (0: Δ = 1 − precision)
SCALES = (0.1, 1.0, 30.0, 300.0)
#: (scheme, types) of the enumeration grid
SPACES = [("IOB2", ("NP", "VP")), ("IOBES", ("NP", "VP")), ("IOE1", ("NP", "VP")),
          ("IOB2", ("",)), ("IOBES", ("",))]


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def delta(y, gold, scheme, loss, beta):
    """Δ from the definitions: Hamming on tags; 1 − F_β(y | gold) on chunk sets."""
    if loss == "hamming":
        return float(sum(a != b for a, b in zip(y, gold)))
    h = set(enc.tags_to_chunks(list(y), scheme))
    r = set(enc.tags_to_chunks(list(gold), scheme))
    return 1.0 - f_standard(len(h & r), len(h), len(r), beta)


def raw_score(y, tags, em, tr, st, en):
    """score(y) from the arrays (no lattice code)."""
    col = {t: i for i, t in enumerate(tags)}
    idx = [col[t] for t in y]
    return float(st[idx[0]] + en[idx[-1]] + sum(em[i, k] for i, k in enumerate(idx))
                 + sum(tr[a, b] for a, b in zip(idx, idx[1:])))


class Case:
    """One random model, its lattice and every valid sequence with its score."""

    def __init__(self, scheme, types, n, scale, seed):
        rng = np.random.default_rng([n, seed, int(10 * scale), len(scheme), len(types)])
        self.scheme, self.n = scheme, n
        self.tags = enc.scheme_tags(scheme, types)
        self.scores = random_scores(rng, len(self.tags), n, scale)
        self.lat = Lattice.from_scores(self.tags, *self.scores, scheme=scheme)
        seqs, logz = brute_force(self.tags, scheme, types, n, *self.scores)
        self.seqs = [y for y, _, _ in seqs]
        self.Y = np.array(self.seqs, dtype=object).reshape(len(seqs), n)
        self.chunks = [c for _, c, _ in seqs]
        self.m = np.array([len(c) for c in self.chunks], dtype=float)
        self.score = np.array([raw_score(y, self.tags, *self.scores) for y in self.seqs])
        # log p + log Z as the brief reads it, where p does not underflow
        p = np.array([q for _, _, q in seqs])
        ok = p > 1e-300
        assert np.allclose(np.log(p[ok]) + logz, self.score[ok], rtol=0,
                           atol=1e-9 * max(1.0, abs(logz)))
        self.golds = [self.seqs[int(rng.integers(len(self.seqs)))], ["O"] * n]
        self.bound = path_score_bound(*self.scores)

    def best(self, gold, loss, beta) -> float:
        """max_y score(y) + Δ(y, gold) over the enumerated sequences (Δ as in
        :func:`delta`, vectorised over the sequences)."""
        if loss == "hamming":
            return float(np.max(self.score + (self.Y != np.array(gold)[None, :]).sum(axis=1)))
        ref = frozenset(enc.tags_to_chunks(list(gold), self.scheme))
        tp = np.array([len(c & ref) for c in self.chunks], dtype=float)
        den = self.m + beta ** 2 * len(ref)
        f = np.where(den > 0, (1 + beta ** 2) * tp / np.where(den > 0, den, 1.0), 1.0)
        return float(np.max(self.score + 1.0 - f))

    def value(self, tags, gold, loss, beta) -> float:
        return raw_score(tags, self.tags, *self.scores) + delta(tags, gold, self.scheme, loss, beta)


@functools.lru_cache(maxsize=None)
def case(scheme, types, n, scale, seed=0) -> Case:
    return Case(scheme, types, n, scale, seed)


def grid():
    for (scheme, types), scale in itertools.product(SPACES, SCALES):
        for n in range(1, 8):
            yield case(scheme, types, n, scale)


@pytest.mark.parametrize("loss", ["hamming", "f"])
def test_fast_path_reaches_the_enumerated_maximum(loss):
    """Every (scheme, types, length, scale), a random gold and the all-O gold, every β:
    the returned value is max_y score(y) + Δ(y, gold) by enumeration, and it is the
    value of the returned tags."""
    for c in grid():
        for gold in c.golds:
            for beta in (BETAS if loss == "f" else (1.0,)):
                d = decode_loss_augmented(c.lat, gold, loss, beta)
                want = c.best(gold, loss, beta)
                tol = 1e-12 + 8 * (c.n + 2) * EPS * c.bound
                where = (c.scheme, c.n, c.bound, gold, beta)
                assert d.score == pytest.approx(want, rel=0, abs=tol), where
                assert c.value(d.tags, gold, loss, beta) == pytest.approx(want, rel=0, abs=tol)
                assert enc.is_valid(d.tags, c.scheme) and d.gap == 0.0


@pytest.mark.parametrize("scheme,types", [("IOB2", ("NP", "VP")), ("IOBES", ("NP", "VP")),
                                          ("IOE1", ("NP", "VP")), ("IOB2", ("",))])
def test_batched_hamming_oracle_reaches_the_enumerated_maximum(scheme, types):
    """The padded batch of the M3N solver (:func:`hamming_viterbi_batch`, lengths 1–7 and
    every scale in one batch, in shuffled order): each sentence's value is the
    enumerated maximum and the value of its own tags."""
    from fstchunk.engine.lossaug import hamming_viterbi_batch
    cases = [case(scheme, types, n, scale) for n in range(1, 8) for scale in SCALES]
    cases = [cases[i] for i in np.random.default_rng(7).permutation(len(cases))]
    col = {t: i for i, t in enumerate(cases[0].tags)}
    ems = [c.scores[0] for c in cases]
    space = cases[0].lat.space
    tr, st, en = cases[0].scores[1:]       # the batch shares one chain's transitions
    for pick in (0, 1):
        golds = [np.array([col[t] for t in c.golds[pick]]) for c in cases]
        ys, vals = hamming_viterbi_batch(ems, golds, tr, st, en, space)
        for c, e, g, y, v in zip(cases, ems, golds, ys, vals):
            score = np.array([raw_score(z, c.tags, e, tr, st, en) for z in c.seqs])
            want = float(np.max(score + (c.Y != np.array(c.golds[pick])[None, :]).sum(axis=1)))
            tags = [c.tags[k] for k in y]
            got = raw_score(tags, c.tags, e, tr, st, en) + float(np.sum(y != g))
            tol = 1e-9 * max(1.0, path_score_bound(e, tr, st, en))
            assert enc.is_valid(tags, scheme) and len(tags) == c.n
            assert v == pytest.approx(want, abs=tol) and got == pytest.approx(want, abs=tol)


@pytest.mark.parametrize("loss", ["hamming", "f"])
def test_machine_path_reaches_the_enumerated_maximum(loss):
    """The shortest path of lattice ∘ loss machine, lengths 1–4, every scheme and
    scale: its value is the maximum up to the float32 rounding of tropical arcs."""
    for c in grid():
        if c.n > 4:
            continue
        gold = c.golds[0]
        for beta in ((0.0, 0.5, 2.0) if loss == "f" else (1.0,)):
            d = decode_loss_augmented(c.lat, gold, loss, beta, method="fst")
            want = c.best(gold, loss, beta)
            tol = 1e-12 + 4 * (c.n + 2) * F32 * (c.bound + c.n)
            assert d.score <= want + 1e-9 * max(1.0, c.bound)
            assert d.score == pytest.approx(want, rel=0, abs=tol), (c.scheme, c.n, gold, beta)


def machine_weight(machine, tags, space) -> float:
    """The weight the acceptor gives ``tags`` (tropical: the best path; inf: none)."""
    s = fsa.string_fst([space.label(t) for t in tags], "standard")
    r = pynini.compose(s, fsa.bare(machine).arcsort())
    return fsa.weight_value(pynini.shortestdistance(r, reverse=True)[r.start()]) \
        if r.num_states() else float("inf")


@pytest.mark.parametrize("scheme,types", [("IOB2", ("NP", "VP")), ("IOE1", ("NP",)),
                                          ("IOBES", ("",))])
def test_loss_machines_weigh_every_sequence_by_minus_delta(scheme, types):
    c = case(scheme, types, 4, 1.0)
    space = c.lat.space
    for gold in c.golds:
        ham = hamming_loss_machine(gold, space)
        f_machines = {b: f_loss_machine(gold, space, b) for b in (0.5, 2.0)}
        for y in c.seqs:
            assert machine_weight(ham, y, space) == -delta(y, gold, scheme, "hamming", 1)
            for b, m in f_machines.items():
                assert machine_weight(m, y, space) == pytest.approx(
                    -delta(y, gold, scheme, "f", b), abs=1e-6), (y, gold, b)


# ------------------------------------------------------------- real sentences
@functools.lru_cache(maxsize=None)
def conll_model(train_path, test_path):
    """A small ML CRF (200 CoNLL-2000 training sentences, tmpt1, 20 L-BFGS steps: ~2 s)
    and 20 test sentences of at most 25 tokens."""
    crf = CRF("tmpt1")
    data = crf._prepare(read_conll(train_path)[:200])
    with threadpool_limits(limits=1, user_api="blas"):
        crf.set_params(objective="ml", l2=0.05, max_iter=20).fit(data)
    test = [s for s in read_conll(test_path) if len(s) <= 25][:20]
    return crf, test


def check_twins(lat, gold, loss, beta, where):
    fast = decode_loss_augmented(lat, gold, loss, beta, method="fast")
    fst = decode_loss_augmented(lat, gold, loss, beta, method="fst")
    bound = sum(float(np.max(np.abs(w[np.isfinite(w)]))) for w in lat.layers.weights)
    tol = 1e-9 + 4 * (lat.n + 2) * F32 * (bound + lat.n)
    assert fst.score <= fast.score + 1e-9 * max(1.0, bound), where
    assert fst.score == pytest.approx(fast.score, rel=0, abs=tol), where
    if fst.tags != fast.tags:               # only a near-tie may pick other tags
        assert abs(fst.score - fast.score) <= tol, where
    # the most violating sequence beats the gold itself and the MAP sequence
    map_tags = fstchunk.decode_map(lat).tags
    for other in (gold, map_tags):
        v = lat.log_prob(other) + lat.log_partition()
        v += loss_value(other, gold, lat.scheme, loss, beta)
        assert fast.score >= v - 1e-9 * max(1.0, abs(v)), where
    return fast.tags == fst.tags


def test_machine_path_equals_fast_path_on_real_sentences(corpus):
    crf, test = conll_model(corpus("conll2000", "train.txt"), corpus("conll2000", "test.txt"))
    same = 0
    for i, (s, lat) in enumerate(zip(test, crf.lattices(test))):
        gold = s.column(-1)
        for loss in ("hamming", "f"):
            same += check_twins(lat, gold, loss, BETAS[i % 3], (i, len(s), loss))
    assert same >= 38                       # ties are rare on real scores


def test_machine_path_equals_fast_path_on_random_lattices():
    rng = np.random.default_rng(18)
    for k in range(12):
        scheme = ("IOB2", "IOBES", "IOE1", "IOB1")[k % 4]
        tags = enc.scheme_tags(scheme, ("NP", "VP", "PP")[: 1 + k % 3])
        n = int(rng.integers(1, 12))
        lat = Lattice.from_scores(tags, *random_scores(rng, len(tags), n, (0.5, 3.0, 20.0)[k % 3]),
                                  scheme=scheme)
        gold = fstchunk.decode_map(Lattice.from_scores(
            tags, *random_scores(rng, len(tags), n), scheme=scheme)).tags
        for loss in ("hamming", "f"):
            check_twins(lat, gold, loss, BETAS[k % 3], (k, scheme, n, loss))


def test_ambiguous_machine_lattice_maximises_over_sequences():
    """A lattice from the union of two score machines gives a sequence two paths:
    score(y) = log(e^{s1(y)} + e^{s2(y)}); both methods maximise it over sequences."""
    scheme, types = "IOB2", ("NP",)
    tags = enc.scheme_tags(scheme, types)
    rng = np.random.default_rng(5)
    n = 4
    s1, s2 = random_scores(rng, len(tags), n), random_scores(rng, len(tags), n)
    space = fstchunk.TagSet(scheme, types)
    labels = [space.label(t) for t in tags]
    fst = pynini.union(score_lattice(labels, *s1), score_lattice(labels, *s2))
    lat = Lattice.from_fst(fst, tags, scheme)
    assert any(len(set(lab)) < len(lab) for lab in lat.layers.labels)   # paths > sequences
    seqs, _ = brute_force(tags, scheme, types, n, *s1)
    gold = seqs[3][0]
    for loss in ("hamming", "f"):
        want = max(np.logaddexp(raw_score(y, tags, *s1), raw_score(y, tags, *s2))
                   + delta(y, gold, scheme, loss, 1.0) for y, _, _ in seqs)
        for method in ("fast", "fst"):
            d = decode_loss_augmented(lat, gold, loss, method=method)
            assert d.score == pytest.approx(want, rel=0, abs=1e-6 if method == "fst" else 1e-10)


# ------------------------------------------------------------- inputs and budget
def test_input_errors():
    tags = enc.scheme_tags("IOB2", ("NP",))
    lat = Lattice.from_scores(tags, *random_scores(np.random.default_rng(0), len(tags), 3))
    good = ["B-NP", "I-NP", "O"]
    bad = [(dict(gold=good[:2]), "2 tags"),
           (dict(gold=["B-NP", "I-VP", "O"]), "I-VP"),
           (dict(gold=["B-VP", "I-VP", "O"]), "not among"),
           (dict(gold=good, memory_budget=0), "memory_budget"),
           (dict(gold=["O", "I-NP", "O"]), "position 1"),
           (dict(gold="BIO"), "not a string"),
           (dict(gold=good, loss="hinge"), "unknown loss"),
           (dict(gold=good, method="viterbi"), "unknown method")]
    bad += [(dict(gold=good, loss="f", beta=b), "beta") for b in
            (-1.0, float("inf"), float("nan"), True, "1", 1e-200)]
    for kw, msg in bad:
        with pytest.raises(InputError, match=msg):
            decode_loss_augmented(lat, **kw)


def test_the_f_machine_is_refused_over_the_state_budget():
    c = case("IOB2", ("NP", "VP"), 5, 1.0)
    with use_state_budget(50):
        with pytest.raises(BudgetError, match='method="fast"'):
            decode_loss_augmented(c.lat, c.golds[0], "f", method="fst")
        with pytest.raises(BudgetError):
            f_loss_machine(c.golds[0], c.lat.space)
        decode_loss_augmented(c.lat, c.golds[0], "f")          # the fast path needs none
    with pytest.raises(BudgetError, match="memory budget"):
        decode_loss_augmented(c.lat, c.golds[0], "f", memory_budget=1000)


def test_exported_from_the_package():
    assert fstchunk.decode_loss_augmented is decode_loss_augmented
    assert "decode_loss_augmented" in fstchunk.__all__


# ------------------------------------------------------------- the grammar registry
@pytest.mark.parametrize("scheme,types", [("IOB2", ("NP", "VP")), ("IOBES", ("",))])
def test_registered_loss_machines_weigh_like_the_builders(scheme, types):
    from fstchunk.grammars import registry
    c = case(scheme, types, 3, 1.0)
    space = c.lat.space
    gold = c.golds[0]
    ham = registry.build("hamming-loss", scheme=scheme, types=types, gold=tuple(gold),
                         arc_type="standard")
    fs = {b: registry.build("f-loss", scheme=scheme, types=types, gold=tuple(gold), beta=b,
                            arc_type="standard") for b in (0.0, 2.0)}      # standard β
    for y in c.seqs:
        assert machine_weight(ham, y, space) == -delta(y, gold, scheme, "hamming", 1)
        for b, f in fs.items():
            assert machine_weight(f, y, space) == pytest.approx(
                -delta(y, gold, scheme, "f", b), abs=1e-6)
    key = registry.far_key("f-loss", registry.Options(scheme=scheme, types=types,
                                                      gold=tuple(gold), beta=2.0))
    assert key == f"f-loss.{scheme}.gold_{'_'.join(gold)}.beta2"


def test_grammar_cli_prints_draws_and_exports_the_loss_machines(capsys, tmp_path):
    from fstchunk.cli import main
    assert main(["grammar", "info", "hamming-loss", "--gold", "B-NP,I-NP,O"]) == 0
    out = capsys.readouterr().out
    assert "hamming-loss.IOB2.gold_B-NP_I-NP_O" in out and "states: 4" in out
    assert main(["grammar", "print", "f-loss", "--gold", "B-NP,O,B-VP", "--beta", "0.5"]) == 0
    assert capsys.readouterr().out.count("\n") > 10
    assert main(["grammar", "draw", "f-loss", "--gold", "B-NP", "-o",
                 str(tmp_path / "f.dot")]) == 0
    far = str(tmp_path / "all.far")
    assert main(["grammar", "export", "-o", far]) == 0                    # no gold: left out
    assert "loss" not in capsys.readouterr().out
    assert main(["grammar", "export", "-o", far, "--gold", "B-NP,O"]) == 0
    out = capsys.readouterr().out
    assert "hamming-loss.IOB2.gold_B-NP_O" in out and "f-loss.IOB2.gold_B-NP_O.beta1" in out
    assert main(["grammar", "print", "f-loss"]) == 2
    assert "give one (--gold" in capsys.readouterr().err
    assert main(["grammar", "print", "hamming-loss", "--gold", "B-NP,I-XX", "--types", "NP"]) == 2
    assert "gold tag 'I-XX' is not a tag of IOB2" in capsys.readouterr().err
    assert main(["grammar", "print", "hamming-loss", "--gold", "I-NP,O"]) == 2   # invalid
    assert "I-NP" in capsys.readouterr().err
