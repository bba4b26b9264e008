"""The brute-force oracles of the test suite, in one place.

Each enumerates the answer from a definition, independent of the code under test:

* :func:`accepted_strings` — the strings an acceptor accepts, up to a length;
* :func:`all_chunkings` — every set of non-overlapping typed chunks of a sentence,
  from the definition of a chunking (no scheme, no machine);
* :func:`brute_force` — every valid tag sequence of a linear-chain model with its
  probability, from the chunkings (no lattice code);
* :func:`brute_expectations` — E[tp], E[P], E[R], E[F_β], E[m] against a fixed chunk
  set, by summing over those sequences;
* :func:`all_utilities` — E[F_β(x | ·)] of every valid hypothesis x (MEU's oracle);
  :func:`all_utilities_by_count` — the same numbers in time linear in the number of
  sequences (from the enumerated law of (c ∈ y, m(y))), for lengths where the V x V
  matrix of :func:`all_utilities` does not fit; :func:`utilities_of` — the same for
  any list of hypotheses (chunkings outside the support too);
* :func:`brute_chunk_marginals`, :func:`brute_token_marginals` — Pr(c ∈ chunks(y)) and
  Pr(y_i = tag) by summing the enumerated sequences' probabilities;
* :func:`path_score_bound` — how much rounding the enumerated probabilities carry;
* :func:`brute_joint` — every label-chunk structure of the joint model with its score
  (the model's own enumerator :func:`fstchunk.models.joint.structure.scored_structures`).

The library's own enumerations (``Lattice.enumerate()``, ``enumerate_segments``,
``Parts.enumerate``) are checked against these definitions in
tests/test_house_oracles.py, which holds every fast path to them.
"""

import functools
import math

import numpy as np
import pytest

from fstchunk.schemes import encodings as enc


def accepted_strings(fst, symbols, max_len: int):
    """Input strings of length <= ``max_len`` accepted by ``fst``: an acceptor's
    language, enumerated (pynini imported here: most oracles do not need it)."""
    import pynini

    f = pynini.arcmap(fst.copy(), map_type="rmweight").project("input").rmepsilon()
    f = pynini.determinize(f)
    stack = [(f.start(), ())]
    while stack:
        s, seq = stack.pop()
        if f.final(s) != pynini.Weight.zero(f.weight_type()):
            yield seq
        if len(seq) < max_len:
            for a in f.arcs(s):
                stack.append((a.nextstate, seq + (symbols.find(a.ilabel),)))


@functools.lru_cache(maxsize=None)
def all_chunkings(n: int, types: tuple) -> tuple:
    """Every chunking of ``n`` tokens over ``types`` (tuples of (type, start, end))."""
    if n == 0:
        return ((),)
    out = []
    # the last token is O, or ends a chunk of length k and type t
    for rest in all_chunkings(n - 1, types):
        out.append(rest)
    for k in range(1, n + 1):
        for t in types:
            for rest in all_chunkings(n - k, types):
                out.append(rest + ((t, n - k, n),))
    return tuple(out)


def random_scores(rng, L, n, scale=1.0):
    """(emissions, transitions, start, end) of a random linear-chain model."""
    return (rng.normal(scale=scale, size=(n, L)), rng.normal(scale=scale, size=(L, L)),
            rng.normal(scale=scale, size=L), rng.normal(scale=scale, size=L))


def brute_force(tags, scheme, types, n, emissions, transitions, start, end):
    """[(tag sequence, chunk set, probability)] over ALL valid sequences, from the
    chunkings themselves (independent of the lattice code)."""
    out = []
    col = {t: i for i, t in enumerate(tags)}
    for c in all_chunkings(n, types):
        y = enc.chunks_to_tags(c, n, scheme)
        if any(t not in col for t in y):
            continue
        idx = [col[t] for t in y]
        s = start[idx[0]] + end[idx[-1]] + sum(emissions[i, idx[i]] for i in range(n))
        s += sum(transitions[idx[i - 1], idx[i]] for i in range(1, n))
        out.append((y, frozenset(c), s))
    scores = np.array([s for _, _, s in out])
    logz = np.logaddexp.reduce(scores)
    return [(y, c, float(np.exp(s - logz))) for y, c, s in out], float(logz)


def brute_log_partition(tags, scheme, types, scores, allowed):
    """log Σ exp(score(y)) over the valid y with y_i allowed at every i (partial
    annotation's constraint, ``allowed`` (n, L)), enumerated from the chunkings (no
    lattice, no mask code); -inf when none."""
    em, tr, s, e = scores
    n = em.shape[0]
    col = {t: i for i, t in enumerate(tags)}
    vals = []
    for c in all_chunkings(n, types):
        y = enc.chunks_to_tags(c, n, scheme)
        if any(t not in col for t in y):
            continue
        idx = [col[t] for t in y]
        if not all(allowed[i, k] for i, k in enumerate(idx)):
            continue
        vals.append(s[idx[0]] + e[idx[-1]] + sum(em[i, idx[i]] for i in range(n))
                    + sum(tr[idx[i - 1], idx[i]] for i in range(1, n)))
    return float(np.logaddexp.reduce(vals)) if vals else -np.inf


def f_standard(tp, m_hyp, m_ref, beta):
    """The oracle F_β with the standard β (scikit-learn's ``fbeta_score`` arithmetic on
    counts, ``zero_division=1``): (1+β²)·tp / (m_hyp + β²·m_ref), 0/0 := 1."""
    den = m_hyp + beta ** 2 * m_ref
    return (1 + beta ** 2) * tp / den if den else 1.0


def brute_expectations(seqs, fixed, beta, direction):
    mf = len(fixed)
    out = dict(tp=0.0, precision=0.0, recall=0.0, f=0.0, m=0.0)
    for _, c, p in seqs:
        tp = len(fixed & c)
        mh, mr = (mf, len(c)) if direction == "decoding" else (len(c), mf)
        out["tp"] += p * tp
        out["m"] += p * len(c)
        out["precision"] += p * (tp / mh if mh else 1.0)
        out["recall"] += p * (tp / mr if mr else 1.0)
        out["f"] += p * f_standard(tp, mh, mr, beta)
    return out


def _chunk_bits(seqs):
    """(B, p): B[r, c] = 1 if sequence r holds chunk c (chunks sorted), p the probabilities."""
    spans = sorted({c for _, cs, _ in seqs for c in cs})
    col = {c: i for i, c in enumerate(spans)}
    B = np.zeros((len(seqs), len(spans)))
    for r, (_, cs, _) in enumerate(seqs):
        for c in cs:
            B[r, col[c]] = 1
    return B, np.array([q for _, _, q in seqs])


def all_utilities(seqs, beta):
    """E[F_β(x | ·)] for EVERY valid x, by enumeration (chunk sets as bit vectors);
    standard β: F_β = (1+β²)·tp / (m(x) + β²·m(y)), 0/0 := 1."""
    B, p = _chunk_bits(seqs)
    tp = B @ B.T                                     # tp[x, y]
    m = B.sum(axis=1)
    den = m[:, None] + beta ** 2 * m[None, :]
    F = np.where(den > 0, (1 + beta ** 2) * tp / np.where(den > 0, den, 1), 1.0)
    return F @ p


def all_utilities_by_count(seqs, beta):
    """E[F_β(x | ·)] for EVERY valid x, in the order of ``seqs``, without the V x V
    matrix: :func:`utilities_of` with the sequences' own chunk sets as hypotheses.
    Agrees with :func:`all_utilities` (the definition) wherever that one fits in memory."""
    return utilities_of([c for _, c, _ in seqs], seqs, beta)


def utilities_of(hyps, seqs, beta):
    """E_y[F_β(x | y)] of every chunk set x in ``hyps`` (any chunkings, in or out of the
    support), y ~ the law of ``seqs``: by linearity of F in tp for fixed chunk counts,

        U(x) = (1+β²) Σ_{c ∈ x} Σ_m Pr(c ∈ y, m(y) = m) / (m(x) + β² m)   (m(x) > 0),
        U(∅) = Pr(m(y) = 0), or 1 at β = 0                                (0/0 := 1),

    with Pr(c ∈ y, m(y) = m) summed over the enumerated sequences."""
    spans = sorted({c for _, cs, _ in seqs for c in cs} | {c for h in hyps for c in h})
    col = {c: i for i, c in enumerate(spans)}

    def bits(sets):
        B = np.zeros((len(sets), len(spans)))
        for r, cs in enumerate(sets):
            B[r, [col[c] for c in cs]] = 1
        return B
    By, Bx = bits([cs for _, cs, _ in seqs]), bits(hyps)
    p = np.array([q for _, _, q in seqs])
    my, mx = By.sum(axis=1).astype(int), Bx.sum(axis=1)
    C = int(my.max()) + 1 if len(my) else 1
    by_count = np.zeros((len(seqs), C))
    by_count[np.arange(len(seqs)), my] = p               # p(y) in column m(y)
    joint = By.T @ by_count                              # Pr(c ∈ y, m(y) = j)
    tp_by_count = Bx @ joint                             # E[tp(x, y) 1{m(y) = j}]
    j = np.arange(C, dtype=float)
    den = mx[:, None] + beta ** 2 * j[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(den > 0, (1 + beta ** 2) * tp_by_count / np.where(den > 0, den, 1),
                         0.0)
    u = terms.sum(axis=1)
    return np.where(mx == 0, p[my == 0].sum() if beta else 1.0, u)


def brute_chunk_marginals(seqs, types, n):
    """Pr((type, s, e) ∈ chunks(y)), shape (len(types), n, n+1) with ``types`` in the
    order given, by summing the enumerated probabilities (math.fsum per span)."""
    acc = {}
    for _, cs, p in seqs:
        for c in cs:
            acc.setdefault(c, []).append(p)
    out = np.zeros((len(types), n, n + 1))
    ti = {t: i for i, t in enumerate(types)}
    for (t, s, e), ps in acc.items():
        out[ti[t], s, e] = math.fsum(ps)
    return out


def brute_token_marginals(seqs, tags, n):
    """Pr(y_i = tag), shape (n, len(tags)) with ``tags`` in the order given."""
    col = {t: i for i, t in enumerate(tags)}
    acc = [[[] for _ in tags] for _ in range(n)]
    for y, _, p in seqs:
        for i, t in enumerate(y):
            acc[i][col[t]].append(p)
    return np.array([[math.fsum(a) for a in row] for row in acc]).reshape(n, len(tags))


def path_score_bound(emissions, transitions, start, end):
    """A bound M on |score(y)| of any sequence of a linear-chain model.  Summing a
    path score in floating point errs by about (2n+2)·eps·M, and a probability p that
    sums such paths moves by at most 2·p·(1−p) times that: the oracles' own rounding,
    which matters only at huge score scales and near-ties."""
    n = emissions.shape[0]
    return float(np.abs(emissions).max(axis=1).sum() + max(n - 1, 0) * np.abs(transitions).max()
                 + np.abs(start).max() + np.abs(end).max())


def brute_joint(parts, c, p, outside):
    from fstchunk.models.joint.structure import scored_structures
    assert parts.shape[1:] == (c, p)
    return scored_structures(parts, outside)


#: a tiny corpus (word, POS, IOB2 chunk tag) for command-line tests
TINY_CONLL = """The DT B-NP
dog NN I-NP
barks VBZ B-VP
. . O

A DT B-NP
cat NN I-NP
sleeps VBZ B-VP

Dogs NNS B-NP
run VBP B-VP
"""


def prepared(crf, sentences):
    """(crf, its training data): the CRF's feature map, tags and pairs fitted on
    ``sentences`` without training (θ = 0)."""
    return crf, crf._prepare(sentences)


def stable_seed(*parts) -> int:
    """A random seed fixed by ``parts`` (``hash()`` of a str differs from process to
    process, so seeds drawn from it made failures impossible to replay)."""
    import zlib
    return zlib.crc32(repr(parts if len(parts) != 1 else parts[0]).encode())


def finite_difference_check(fun, theta, rng, k=25, h=1e-6, rel=1e-5, abs_=1e-7):
    """Central differences of ``fun``'s value against its gradient on ``k`` random
    coordinates of θ (``fun`` returns (value, gradient))."""
    _, g = fun(theta)
    for i in rng.choice(len(theta), size=min(k, len(theta)), replace=False):
        t = theta.copy()
        t[i] += h
        fp = fun(t)[0]
        t[i] -= 2 * h
        fm = fun(t)[0]
        assert (fp - fm) / (2 * h) == pytest.approx(g[i], rel=rel, abs=abs_), i


def single_chunk_moves(chunks, n: int, types) -> list[list]:
    """Every chunking one move away from ``chunks`` (a list of (type, start, end)):
    one chunk removed, one chunk retyped, or one chunk added where no chunk lies —
    the neighbourhood of MEU's local-search check (no move may raise E[F_β])."""
    chunks = sorted(chunks, key=lambda c: c[1])
    out = [chunks[:i] + chunks[i + 1:] for i in range(len(chunks))]
    out += [chunks[:i] + [(t, s, e)] + chunks[i + 1:]
            for i, (u, s, e) in enumerate(chunks) for t in types if t != u]
    free = np.ones(n, bool)
    for _, s, e in chunks:
        free[s:e] = False
    for s in range(n):
        for e in range(s + 1, n + 1):
            if not free[e - 1]:
                break
            if free[s]:
                out += [sorted(chunks + [(t, s, e)], key=lambda c: c[1]) for t in types]
    return out


def best_chunking_value(weights) -> float:
    """max over every chunking x of Σ_{(t, s, e) ∈ x} weights[t, s, e] (the empty
    chunking: 0), ``weights`` (types, n, n+1): the weighted-interval DP
    best[e] = max(best[e−1], max_{s, t} best[s] + weights[t, s, e]), from the definition."""
    n = weights.shape[1]
    best = np.zeros(n + 1)
    for e in range(1, n + 1):
        best[e] = max(best[e - 1], float(np.max(best[:e] + weights[:, :e, e].max(axis=0))))
    return float(best[n])


def cli_trained_for(tmp_path, sentences, objective: str, utility_name: str) -> tuple:
    """(mean E[u] under an ML model, under one trained from it with ``objective``), both
    trained by the command line on ``sentences`` × 4, u the utility ``utility_name``
    with each sentence's own tags as the reference."""
    from fstchunk.cli import main
    from fstchunk.decoding.utilities import utility
    from fstchunk.io.conll import write_conll
    from fstchunk.models import load_model
    write_conll(list(sentences) * 4, tmp_path / "train.txt")
    t = str(tmp_path / "train.txt")
    assert main(["train", "--train", t, "--max-iter", "5", "--quiet",
                 "-o", str(tmp_path / "ml.npz")]) == 0
    assert main(["train", "--train", t, "--objective", objective, "--init",
                 str(tmp_path / "ml.npz"), "--max-iter", "3", "--quiet",
                 "-o", str(tmp_path / "trained.npz")]) == 0

    def mean_u(path):
        m = load_model(str(path))
        return float(np.mean([utility(utility_name).expected(
            m.lattice(s), reference=[r[-1] for r in s.rows]) for s in sentences]))
    return mean_u(tmp_path / "ml.npz"), mean_u(tmp_path / "trained.npz")


def attribute_models_take(objective: str, sentences) -> None:
    """The attribute CRF and the sklearn drop-in train ``objective`` on ``sentences``."""
    from fstchunk.models.attribute_crf import AttributeCRF
    from fstchunk.sklearn import CRF as SkCRF
    X = [[{"w": r[0].lower(), "pos": r[1]} for r in s.rows] for s in sentences] * 3
    y = [[r[-1] for r in s.rows] for s in sentences] * 3
    assert AttributeCRF(objective=objective, max_iter=5).fit(X, y).settings_["objective"] == \
        objective
    assert SkCRF(objective=objective, max_iterations=5).fit(X, y).model_.settings_[
        "objective"] == objective


def peaked_lattice(seq, types=("LOC", "PER"), floor=0.01, scheme="IOB2"):
    """A lattice whose mode is ``seq``: each token's own tag weighs 1, the others
    ``floor`` (no transition scores)."""
    from fstchunk import Lattice
    tags = enc.scheme_tags(scheme, types)
    p = np.full((len(seq), len(tags)), floor)
    for i, t in enumerate(seq):
        p[i, tags.index(t)] = 1.0
    return Lattice.from_scores(tags, np.log(p), np.zeros((len(tags), len(tags))),
                               scheme=scheme)


def match_utility_refusals(name, lat):
    """The refusals a SemEval matching utility shares, each one InputError or
    SchemeError naming what is wrong (``lat``: a 4-token lattice of a scheme)."""
    import fstchunk
    from fstchunk.core.errors import BudgetError, InputError, SchemeError
    u = fstchunk.utility(name)
    assert fstchunk.decoder("meu", utility=name).tags([lat])[0] == u.decode(lat).tags
    big = fstchunk.Lattice.from_scores(lat.space.tags, np.zeros((30, len(lat.space.tags))),
                                       np.zeros((len(lat.space.tags),) * 2), scheme=lat.scheme)
    with pytest.raises(BudgetError, match="memory budget"):
        u.decode(big, memory_budget=1000)
    with pytest.raises(InputError, match="no pushed lattice"):
        u.pushed(lat)
    with pytest.raises(InputError, match="exactly one"):
        u.expected(lat)
    with pytest.raises(InputError, match="unknown method 'exact'"):
        u.expected(lat, hypothesis=["O"] * lat.n, method="exact")
    with pytest.raises(InputError, match="differ in length"):
        u(["O"], ["O", "O"], lat.scheme)
    plain = fstchunk.Lattice.from_scores(["x", "y"], np.zeros((2, 2)), np.zeros((2, 2)),
                                         scheme=None)
    with pytest.raises(SchemeError, match="scheme=None"):
        u.expected(plain, hypothesis=["x", "y"])
