"""Spans marked "not one chunk" (``~`` cells, issue 36): the machine (the annotation
acceptor minus the chunk's chain, composed with the lattice), the fast path (the
marginal likelihood over disjoint product masks) and brute force over the valid
sequences agree, value and gradient, for every scheme whose chunk boundaries show
on one tag; the others and contradictions are one error naming the token."""

import io

import numpy as np
import pynini
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.io.annotation import PartialSentence, check_allows, read_partial
from fstchunk.io.conll import Sentence
from fstchunk.core.errors import SchemeError
from fstchunk.grammars.annotation import annotation_acceptor, annotation_machine
from fstchunk.structures.lattice import Lattice
from fstchunk.models.crf import CRF
from fstchunk.models.objectives import Chain
from fstchunk.models.partial import PartialGold, partial_ml_statistics
from fstchunk.schemes.tagspace import TagSet
from oracles import all_chunkings

SCHEMES = ("IOB2", "IOE2", "IOBES", "BILOU", "IOBES2", "IOBES3")


def brute(ts, em, tr, s, e, mask, spans):
    """(log Z over valid y, log Z over valid y allowed by mask with no span exactly
    one chunk, token marginals of both, transition marginals of both), from the
    chunkings (no mask or span code)."""
    n, L = em.shape
    col = {t: i for i, t in enumerate(ts.tags)}
    rows = []
    for c in all_chunkings(n, ts.types):
        y = enc.chunks_to_tags(c, n, ts.scheme)
        if any(t not in col for t in y):
            continue
        idx = [col[t] for t in y]
        score = s[idx[0]] + e[idx[-1]] + sum(em[i, idx[i]] for i in range(n)) \
            + sum(tr[idx[i - 1], idx[i]] for i in range(1, n))
        ok = all(mask[i, k] for i, k in enumerate(idx)) and \
            not any((a, b) == (t, u + 1) for _, a, b in c for t, u in spans)
        rows.append((idx, score, ok))
    out = []
    for keep in (lambda ok: True, lambda ok: ok):
        sel = [(idx, sc) for idx, sc, ok in rows if keep(ok)]
        scores = np.array([sc for _, sc in sel])
        logz = np.logaddexp.reduce(scores)
        p = np.exp(scores - logz)
        tok, pair = np.zeros((n, L)), np.zeros((L, L))
        for (idx, _), q in zip(sel, p):
            tok[np.arange(n), idx] += q
            for i in range(1, n):
                pair[idx[i - 1], idx[i]] += q
        out.append((logz, tok, pair))
    return out


@st.composite
def cases(draw):
    scheme = draw(st.sampled_from(SCHEMES))
    ts = TagSet(scheme, draw(st.sampled_from([("A",), ("A", "B")])))
    n = draw(st.integers(1, 5))
    k = draw(st.integers(1, 2))
    spans = []
    for _ in range(k):
        t = draw(st.integers(0, n - 1))
        spans.append((t, draw(st.integers(t, n - 1))))
    return ts, n, sorted(set(spans)), draw(st.sampled_from([0.1, 1.0, 30.0])), \
        draw(st.integers(0, 2 ** 31))


def random_mask(rng, ts, n, spans):
    """A mask that allows some valid sequence with no span exactly one chunk."""
    seqs = []
    for c in all_chunkings(n, ts.types):
        if not any((a, b) == (t, u + 1) for _, a, b in c for t, u in spans):
            seqs.append(enc.chunks_to_tags(c, n, ts.scheme))
    y = seqs[rng.integers(len(seqs))]
    m = rng.random((n, len(ts.tags))) < 0.5
    m[np.arange(n), ts.indices(y)] = True
    return m


def sentence(n):
    return Sentence([["w", "?"] for _ in range(n)], list(range(1, n + 1)), "s.conll")


@settings(max_examples=80, deadline=None)
@given(cases())
def test_machine_fast_path_and_brute_force_agree(case):
    ts, n, spans, sc, seed = case
    rng = np.random.default_rng(seed)
    L = len(ts.tags)
    em, tr = rng.normal(scale=sc, size=(n, L)), rng.normal(scale=sc, size=(L, L))
    s, e = rng.normal(scale=sc, size=L), rng.normal(scale=sc, size=L)
    mask = random_mask(rng, ts, n, spans)
    (logz, tok, pair), (logz_a, tok_a, pair_a) = brute(ts, em, tr, s, e, mask, spans)
    ps = PartialSentence(sentence(n), [(("any", ""),)] * n, None, tuple(spans))
    terms = ps.terms(ts, check_allows(ps, ts, mask))
    chain = Chain(ts.tags, ts.scheme, em, tr, s, e)
    stats = partial_ml_statistics(chain, PartialGold([mask], ts.tags, ts.scheme, [terms]))
    tol = 1e-9 * max(1.0, sc)
    assert stats.values[0] == pytest.approx(logz - logz_a, rel=1e-9, abs=tol)
    g = stats.grads[0]
    np.testing.assert_allclose(g.emissions, tok - tok_a, atol=1e-8)
    np.testing.assert_allclose(g.trans, pair - pair_a, atol=1e-8)
    np.testing.assert_allclose(g.start, tok[0] - tok_a[0], atol=1e-8)
    np.testing.assert_allclose(g.end, tok[-1] - tok_a[-1], atol=1e-8)
    # the machine: lattice ∘ (A minus each span's chunk chain)
    lat = Lattice.from_scores(ts.tags, em, tr, s, e, scheme=ts.scheme)
    acc = annotation_acceptor(mask, spans, ts)
    composed = pynini.compose(lat.unnormalised_fst(), acc.arcsort("ilabel"))
    assert -fsa.total_weight(composed) == pytest.approx(logz_a, rel=1e-9, abs=tol)


def test_a_batch_mixes_sentences_with_and_without_spans():
    """Spans in some sentences of a batch leave the others' statistics as they were."""
    ts = TagSet("IOB2", ("A", "B"))
    rng = np.random.default_rng(4)
    n, L = 4, len(ts.tags)
    masks = [np.ones((n, L), bool) for _ in range(3)]
    spans = [(), ((1, 2),), ()]
    chain = Chain(ts.tags, ts.scheme, rng.normal(size=(3 * n, L)), rng.normal(size=(L, L)),
                  rng.normal(size=L), rng.normal(size=L))
    terms = [PartialSentence(sentence(n), [(("any", ""),)] * n, None, sp).terms(ts, m)
             if sp else None for sp, m in zip(spans, masks)]
    whole = partial_ml_statistics(chain, PartialGold(masks, ts.tags, ts.scheme, terms))
    want = 0.0
    for k in range(3):
        part = Chain(ts.tags, ts.scheme, chain.emissions[k * n:(k + 1) * n], chain.trans,
                     chain.start, chain.end)
        (lz, _, _), (lz_a, _, _) = brute(ts, part.emissions, chain.trans, chain.start,
                                         chain.end, masks[k], spans[k])
        want += lz - lz_a
    assert whole.values[0] == pytest.approx(want, rel=1e-10)


def test_the_column_syntax_read_trained_and_shown(tmp_path, capsys):
    text = ("Jan N B-PER\nde Art O\nBank N ?~\nvan Prep ?~\nGent N ?\n\n"
            "Piet N B-PER\nwoont V O\nin Prep O\nGent N B-LOC\n\n")
    ps = read_partial(io.StringIO(text), -1, "IOB2")
    assert ps[0].not_chunks == ((2, 3),) and ps[1].not_chunks == ()
    assert not ps[0].full and ps[0].tags_or_none() is None
    crf = CRF("tmpt3-nopos", "IOB2", partial=True, max_iter=3)
    data = crf._prepare(ps)
    assert data.gold.terms[0] is not None and data.gold.terms[1] is None
    rng = np.random.default_rng(0)
    theta = rng.normal(scale=0.3, size=crf.theta_.shape)
    fun = crf.objective_function("ml", data, 0.0)
    f0, g = fun(theta)
    for i in rng.choice(len(theta), 15, replace=False):
        t = theta.copy()
        t[i] += 1e-6
        fp = fun(t)[0]
        t[i] -= 2e-6
        assert (fp - fun(t)[0]) / 2e-6 == pytest.approx(g[i], rel=1e-5, abs=1e-7)
    # the machine `fstchunk grammar print annotation` shows: B-PER I-PER on 3..4 is gone
    m = annotation_machine(["B-PER", "O", "?~", "?~", "?"], "IOB2", ["PER"])
    syms = m.input_symbols()
    strings = {tuple(syms.find(x) for x in p[0]) for p in fsa.paths(m)}
    assert ("B-PER", "O", "B-PER", "I-PER", "O") not in strings
    assert ("B-PER", "O", "B-PER", "I-PER", "I-PER") in strings
    assert ("B-PER", "O", "B-PER", "B-PER", "O") in strings


@pytest.mark.parametrize("scheme", ["IOB1", "IOE1"])
def test_schemes_whose_boundaries_need_two_tags_are_refused_at_the_line(scheme):
    ps = read_partial(io.StringIO("a ?\nb ?~\nc ?~\n"), -1, scheme)[0]
    with pytest.raises(SchemeError, match=r"<stream>:2: a span marked not a chunk .* "
                                          + scheme + " is not one"):
        ps.terms(TagSet(scheme, ("A",)))


def test_a_span_the_annotation_makes_one_chunk_is_a_contradiction_at_its_line():
    ps = read_partial(io.StringIO("a O\nb B-A~\nc I-A~\nd O\n"), -1, "IOB2")[0]
    with pytest.raises(SchemeError, match=r"<stream>:2: the annotation contradicts IOB2: "
                                          r"tokens 2\.\.3 are marked not one chunk"):
        ps.terms(TagSet("IOB2", ("A",)))


def test_cli_trains_on_spans_and_refuses_a_contradiction_in_one_line(tmp_path, capsys):
    from fstchunk.cli import main
    good = tmp_path / "t.txt"
    good.write_text("Jan N B-PER\nde Art O\nBank N ?~\nvan Prep ?~\nGent N ?\n\n"
                    "Piet N B-PER\nwoont V O\nin Prep O\nGent N B-LOC\n\n")
    assert main(["train", "--train", str(good), "--partial", "--max-iter", "3", "--quiet",
                 "--workers", "2", "-o", str(tmp_path / "m.npz")]) in (0, None)
    bad = tmp_path / "bad.txt"
    bad.write_text("Jan N B-PER\nde Art O\nBank N B-ORG~\nvan Prep I-ORG~\nGent N O\n\n")
    capsys.readouterr()
    assert main(["train", "--train", str(bad), "--partial", "-o", str(tmp_path / "b.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(
        "bad.txt:3: the annotation contradicts IOB2: tokens 3..4 are marked not one chunk "
        "(~), but the rest of the annotation makes them one")
