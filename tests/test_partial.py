"""Training on partial annotation (issue 36, part 2): the marginal likelihood
−log Σ_{y ∈ A(x) ∩ valid} Pr(y | x) as additive statistics, against brute force, finite
differences, ML on full annotation, partitions, and the CLI."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.runtime import scale
from fstchunk.io.annotation import read_partial
from fstchunk.cli import main
from fstchunk.io.conll import Sentence
from fstchunk.core.errors import InputError, SchemeError
from fstchunk.models.crf import CRF
from fstchunk.models.objectives import Chain, Gold, ml_statistics
from fstchunk.models.partial import PartialGold, partial_ml_statistics
from fstchunk.schemes.tagspace import TagSet
from fstchunk.schemes import encodings as enc
from oracles import all_chunkings, brute_log_partition, finite_difference_check

SCHEMES = ("IOB1", "IOB2", "IOE2", "IOBES", "BILOU", "IOBES3")

ROWS = [[("The", "DT", "B-NP"), ("dog", "NN", "I-NP"), ("barks", "VBZ", "B-VP")],
        [("A", "DT", "B-NP"), ("cat", "NN", "I-NP"), ("sleeps", "VBZ", "B-VP"), (".", ".", "O")],
        [("Dogs", "NNS", "B-NP"), ("run", "VBP", "B-VP")],
        [("He", "PRP", "B-NP"), ("saw", "VBD", "B-VP"), ("a", "DT", "B-NP"),
         ("dog", "NN", "I-NP")]]
#: the same sentences partially annotated (one cell per token; IOB2)
OPEN = [["B-NP", "?", "*-VP"], ["?", "I-NP|O", "B-*", "O"], ["B-NP", "?"],
        ["?", "?", "B-NP", "*-NP"]]


def sentences(cells=None):
    return [Sentence([[w, p, c if cells else t] for (w, p, t), c in
                      zip(r, cells[k] if cells else [None] * len(r))],
                     list(range(10 * k + 1, 10 * k + 1 + len(r))), "p.conll")
            for k, r in enumerate(ROWS)]


def random_chain(rng, ts, lengths, scale):
    L = len(ts.tags)
    return Chain(ts.tags, ts.scheme, rng.normal(scale=scale, size=(sum(lengths), L)),
                 rng.normal(scale=scale, size=(L, L)), rng.normal(scale=scale, size=L),
                 rng.normal(scale=scale, size=L))


@st.composite
def cases(draw):
    scheme = draw(st.sampled_from(SCHEMES))
    ts = TagSet(scheme, draw(st.sampled_from([("NP",), ("NP", "VP")])))
    lengths = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    return ts, lengths, draw(st.sampled_from([0.1, 1.0, 50.0, 800.0])), \
        draw(st.integers(0, 2 ** 31))


def random_masks(rng, ts, lengths):
    """Masks that each allow some valid sequence (a random valid path always allowed)."""
    out = []
    for n in lengths:
        seqs = [enc.chunks_to_tags(c, n, ts.scheme) for c in all_chunkings(n, ts.types)]
        y = seqs[rng.integers(len(seqs))]
        m = rng.random((n, len(ts.tags))) < 0.4
        m[np.arange(n), ts.indices(y)] = True
        out.append(m)
    return out


@settings(max_examples=60, deadline=None)
@given(cases())
def test_the_statistic_is_the_brute_force_marginal_likelihood(case):
    ts, lengths, sc, seed = case
    rng = np.random.default_rng(seed)
    chain = random_chain(rng, ts, lengths, sc)
    masks = random_masks(rng, ts, lengths)
    st_ = partial_ml_statistics(chain, PartialGold(masks, ts.tags, ts.scheme))
    want, k = 0.0, 0
    full = np.ones((1, len(ts.tags)), bool)
    for n, m in zip(lengths, masks):
        scores = (chain.emissions[k:k + n], chain.trans, chain.start, chain.end)
        want += (brute_log_partition(ts.tags, ts.scheme, ts.types, scores, full.repeat(n, 0))
                 - brute_log_partition(ts.tags, ts.scheme, ts.types, scores, m))
        k += n
    assert st_.values[0] == pytest.approx(want, rel=1e-9, abs=1e-9 * max(1.0, sc))


@settings(max_examples=40, deadline=None)
@given(cases())
def test_one_tag_per_token_is_exactly_the_ml_statistic(case):
    ts, lengths, sc, seed = case
    rng = np.random.default_rng(seed)
    chain = random_chain(rng, ts, lengths, sc)
    gold = []
    for n in lengths:
        seqs = [enc.chunks_to_tags(c, n, ts.scheme) for c in all_chunkings(n, ts.types)]
        gold.append(np.array(ts.indices(seqs[rng.integers(len(seqs))])))
    onehot = [np.eye(len(ts.tags), dtype=bool)[g] for g in gold]
    a = ml_statistics(chain, Gold(gold, ts.tags, ts.scheme))
    b = partial_ml_statistics(chain, PartialGold(onehot, ts.tags, ts.scheme))
    tol = 1e-9 * max(1.0, sc)
    assert b.values[0] == pytest.approx(a.values[0], rel=1e-9, abs=tol)
    for x, y in zip(a.grads[0], b.grads[0]):
        np.testing.assert_allclose(y, x, rtol=0, atol=1e-8)


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES"])
def test_crf_gradient_by_finite_differences_and_full_data_is_ml(scheme):
    crf = CRF("tmpt3", scheme, data_scheme="IOB2", partial=True)
    data = crf._prepare(sentences(OPEN if scheme == "IOB2" else None))
    rng = np.random.default_rng(2)
    theta = rng.normal(scale=0.5, size=crf.theta_.shape)
    finite_difference_check(crf.objective_function("ml", data, 0.1), theta, rng, k=30)
    # fully annotated data read with --partial: the ML objective, pairs and all
    ml = CRF("tmpt3", scheme, data_scheme="IOB2")
    mdata = ml._prepare(sentences())
    pcrf = CRF("tmpt3", scheme, data_scheme="IOB2", partial=True)
    pdata = pcrf._prepare(sentences())
    assert pcrf.tags_ == ml.tags_ and np.array_equal(pcrf.pairs_, ml.pairs_)
    theta = rng.normal(scale=0.5, size=ml.theta_.shape)
    a = ml.objective_function("ml", mdata, 0.01)(theta)
    b = pcrf.objective_function("ml", pdata, 0.01)(theta)
    assert b[0] == pytest.approx(a[0], rel=1e-12)
    np.testing.assert_allclose(b[1], a[1], rtol=0, atol=1e-12)


def test_partitions_sum_to_the_whole():
    crf = CRF("tmpt3", "IOB2", partial=True)
    data = crf._prepare(sentences(OPEN))
    theta = np.random.default_rng(4).normal(size=crf.theta_.shape)
    want = crf.objective_function("ml", data, 1e-3)(theta)
    ex = scale.LocalExecutor(2)
    try:
        got = crf.objective_function("ml", data, 1e-3, executor=ex)(theta)
    finally:
        ex.close()
    assert got[0] == pytest.approx(want[0], rel=1e-10)
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-10)


def test_refusals_name_what_and_where(tmp_path):
    crf = CRF("tmpt3", "IOB2", partial=True)
    data = crf._prepare(sentences(OPEN))
    for name in ("meu", "max-margin", "perceptron"):
        with pytest.raises(InputError, match="--partial trains --objective ml only"):
            crf.set_params(objective=name, max_iter=1).fit(data)
    bad = [r[:] for r in OPEN]
    bad[1] = ["O", "I-NP", "B-*", "O"]                  # O then I-NP: not IOB2
    with pytest.raises(SchemeError, match="p.conll:12: the annotation contradicts IOB2"):
        CRF("tmpt3", "IOB2", partial=True)._prepare(sentences(bad))
    with pytest.raises(SchemeError, match="p.conll:2: an open annotation is read in the "
                                          "model's scheme IOBES"):
        CRF("tmpt3", "IOBES", data_scheme="IOB2", partial=True)._prepare(sentences(OPEN))
    nothing = tmp_path / "q.conll"
    nothing.write_text("# annotated: NP\na X ?\nb X ?\n")
    with pytest.raises(InputError, match="rules out no tag"):
        CRF("tmpt3", "IOB2", partial=True)._prepare(read_partial(str(nothing)))


def test_cli_train_partial_with_declarations_and_workers(tmp_path, capsys):
    train = tmp_path / "t.conll"
    train.write_text("# annotated: NP\nThe DT B-NP\ndog NN I-NP\nbarks VBZ O\n\n"
                     "# annotated: VP\nA DT O\ncat NN O\nsleeps VBZ B-VP\n\n"
                     "# annotated: *\nHe PRP B-NP\nran VBD ?\n\n")
    out = tmp_path / "m.npz"
    assert main(["train", "--train", str(train), "--partial", "-o", str(out),
                 "--max-iter", "5", "--quiet", "--workers", "2"]) == 0
    model = CRF.load(str(out))
    assert model.tags_ == TagSet("IOB2", ("NP", "VP")).tags
    assert model.settings_["partial"] is True
    # the declared O of sentence 1 leaves VP open: a pair (feature, B-VP) exists there
    assert main(["train", "--train", str(train), "--partial", "-o", str(out),
                 "--objective", "meu"]) == 2
    assert "--partial trains a CRF by --objective ml" in capsys.readouterr().err
    bad = tmp_path / "bad.conll"
    bad.write_text("The DT O\ndog NN I-NP\n")
    assert main(["train", "--train", str(bad), "--partial", "-o", str(out)]) == 2
    assert f"{bad}:2: the annotation contradicts IOB2" in capsys.readouterr().err
