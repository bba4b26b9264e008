"""The joint labeling-and-chunking model: Figure 1's DP, its log-semiring twin with
marginals, the machine twin, the chunk-layer lattice, training and model files."""

import math

import numpy as np
import pytest

from fstchunk.models import joint as J
from fstchunk.io.conll import Sentence, read_conll
from fstchunk.decoding.decode import decode_map, decode_meu
from fstchunk.core.errors import CoNLLError, InputError, SchemeError
from fstchunk.decoding.expected import expected_f
from fstchunk.structures.lattice import Lattice
from fstchunk.models.io import ModelFileError
from fstchunk.models.features import capital_class
from fstchunk.models.joint.train import feature_difference
from oracles import brute_joint as brute

CHUNKS, POS = ("A", "B", "O"), ("x", "y")


def random_parts(rng, n, c=3, p=2, outside=2, scale=1.0):
    parts = J.Parts(rng.normal(size=(n, c, p)) * scale, rng.normal(size=(n, c, p, p)) * scale,
                    rng.normal(size=(n, c)) * scale, rng.normal(size=(n, c)) * scale,
                    rng.normal(size=(n, c, c)) * scale)
    parts.trans[0] = 0.0
    parts.ctrans[0] = 0.0
    parts.ctrans[1:, outside, outside] = -np.inf
    return parts


CASES = [(n, c, p, seed) for n in range(1, 6) for (c, p) in ((3, 2), (2, 3)) for seed in range(3)]


@pytest.mark.parametrize("n,c,p,seed", CASES)
def test_viterbi_and_inside_outside_equal_brute_force(n, c, p, seed):
    rng = np.random.default_rng(100 * n + 10 * c + seed)
    outside = c - 1
    parts = random_parts(rng, n, c, p, outside)
    ys, sc = brute(parts, c, p, outside)
    y, best = J.viterbi(parts)
    assert best == pytest.approx(sc.max(), abs=1e-12)
    assert y == ys[int(np.argmax(sc))]
    logZ, marg = J.inside_outside(parts)
    Z = np.logaddexp.reduce(sc)
    assert logZ == pytest.approx(Z, rel=1e-12)
    pr = np.exp(sc - Z)
    for kind in J.KINDS:
        want = sum(pr[i] * getattr(J.structure_parts(ys[i], c, p), kind) for i in range(len(ys)))
        np.testing.assert_allclose(getattr(marg, kind), want, atol=1e-12)


def test_structures_are_tag_pairs_one_to_one():
    """With O→O forbidden, structures and (POS, IOB2 chunk) sequences correspond."""
    model = _tiny_model()
    seen = set()
    for y in J.all_structures(4, model.c, model.p, model.outside):
        pos, chunk = model.tags(y)
        key = (tuple(pos), tuple(chunk))
        assert key not in seen
        seen.add(key)
        assert model.structure(pos, chunk) == y
    assert len(seen) == model.p ** 4 * 3 ** 4 - model.p ** 4 * _invalid_iob2(4)


def _invalid_iob2(n):
    import itertools
    from fstchunk.schemes.encodings import is_valid
    return sum(not is_valid(list(t), "IOB2")
               for t in itertools.product(("B-NP", "I-NP", "O"), repeat=n))


@pytest.mark.parametrize("seed", range(4))
def test_machine_twin(seed):
    rng = np.random.default_rng(seed)
    n = 5
    parts = random_parts(rng, n)
    f = J.joint_fst(parts, CHUNKS, POS, 2)
    y, best = J.viterbi(parts)
    syms, score = J.fst_viterbi(f)
    model = J.JointModel.from_state(CHUNKS, POS, {}, [])
    pos, chunk = model.tags(y)
    assert syms == [f"{c}|{p}" for c, p in zip(chunk, pos)]
    assert score == pytest.approx(best, rel=1e-5)
    assert J.fst_log_partition(f) == pytest.approx(J.inside_outside(parts)[0], rel=1e-12)


def _chunk_tag_marginals(ys, sc, model, n):
    pr = np.exp(sc - np.logaddexp.reduce(sc))
    out = np.zeros((n, len(model.chunk_tags)))
    for y, q in zip(ys, pr):
        _, chunk = model.tags(y)
        for i, t in enumerate(chunk):
            out[i, model.chunk_tags.index(t)] += q
    return out


@pytest.mark.parametrize("seed", range(4))
def test_chunk_lattice_is_the_chunk_marginal_of_the_joint_model(seed):
    rng = np.random.default_rng(seed)
    model = J.JointModel.from_state(CHUNKS, POS, {}, [])
    n = 4
    parts = random_parts(rng, n)
    lat = Lattice(model.chunk_tags, "IOB2", J.chain_layers(parts, model.scorer_._tag_index),
                  raw_fst=lambda: model.chunk_fst(parts))
    ys, sc = brute(parts, 3, 2, 2)
    assert lat.log_partition() == pytest.approx(np.logaddexp.reduce(sc), rel=1e-12)
    want = _chunk_tag_marginals(ys, sc, model, n)
    np.testing.assert_allclose(lat.marginals(), want, atol=1e-12)
    twin = Lattice.from_fst(model.chunk_fst(parts), model.chunk_tags, "IOB2")
    np.testing.assert_allclose(twin.marginals(), want, atol=1e-9)
    # the machine path of expected F agrees with the layered one
    hyp = decode_meu(lat).tags
    assert expected_f(lat, hypothesis=hyp, method="fst").f == pytest.approx(
        expected_f(lat, hypothesis=hyp, method="fast").f, rel=1e-9)


# --------------------------------------------------------------- tiny models
def _sent(rows):
    return Sentence([list(r) for r in rows], list(range(1, len(rows) + 1)), "<tiny>")


TINY = [_sent([("The", "DT", "B-NP"), ("cat", "NN", "I-NP"), ("sat", "VBD", "B-VP")]),
        _sent([("Dogs", "NNS", "B-NP"), ("run", "VBP", "B-VP"), ("fast", "RB", "B-ADVP")]),
        _sent([("A", "DT", "B-NP"), ("big", "JJ", "I-NP"), ("dog", "NN", "I-NP"),
               ("ran", "VBD", "B-VP"), ("home", "NN", "B-NP")])]


def _tiny_model():
    data = J.layered(TINY, collapse=True, np_chunks=True)
    return J.model_for(data, "joint")[0]


def test_table3_and_table5():
    assert [J.collapse_pos(t) for t in ("NNPS", "VBZ", "JJR", "RBS", "PRP$", "MD")] == \
        ["NOUN", "VERB", "JADJ", "RBP", "OTHER", "OTHER"]
    assert [capital_class(w) for w in ("Paris", "A", "IBM", "McDonald", "1.8", "the")] == \
        ["CAPITAL", "CAP_ONE", "CAP_ALL", "CAP_MIX", "NUMBER", "-"]
    assert J.np_only("B-VP") == "O" and J.np_only("I-NP") == "I-NP"


def test_gold_structure_reads_table2():
    """Table 1/2 of the paper: O runs are single segments, NP chunks are I segments."""
    model = _tiny_model()
    d = J.layered(TINY[2:], collapse=True, np_chunks=True)[0]
    x = J.encode(model, d)
    o, np_ = model.outside, model.chunk_labels_.index("NP")
    assert x.gold.segments == ((np_, 0, 3), (o, 3, 4), (np_, 4, 5))
    assert model.tags(x.gold) == (d.pos, d.chunks)


@pytest.mark.parametrize("algorithm", ["perceptron", "mmvp", "crf"])
def test_training_fits_the_tiny_set(algorithm):
    data = J.layered(TINY, collapse=True, np_chunks=True)
    model, enc_ = J.model_for(data, "joint")
    kw = {"max_iter": 30, "l2": 0.01} if algorithm == "crf" else {"max_iter": 8}
    assert model.set_params(algorithm=algorithm, **kw).fit(enc_) is model
    pos, chunk = J.predict(model, data)
    assert J.scores(data, pos, chunk) == {"pos_accuracy": 100.0, "np_accuracy": 100.0,
                                          "np_f1": 100.0}


def test_first_iteration_trick_freezes_lexicalised_weights():
    data = J.layered(TINY, collapse=True, np_chunks=True)
    model, enc_ = J.model_for(data, "joint")
    model.set_params(algorithm="perceptron", max_iter=1).fit(enc_)
    assert not model.theta_[model.lexical].any()
    assert model.theta_[~model.lexical].any()


def test_mmvp_step_is_clipped_and_margin_based():
    """After one MMVP update the gold beats the runner-up by min(loss, margin+‖Δf‖²)."""
    data = J.layered(TINY[:1], collapse=True, np_chunks=True)
    model, enc_ = J.model_for(data, "joint")
    x = enc_[0]
    w0 = np.zeros(model.size)
    y, _ = J.viterbi(model.parts(x, w0))
    idx, val = feature_difference(model, x, x.gold, y)
    step = min(model.loss(x.gold, y) / float(val @ val), 1.0)
    w = w0.copy()
    w[idx] += step * val
    margin = J.structure_score(model.parts(x, w), x.gold) - J.structure_score(model.parts(x, w), y)
    assert margin == pytest.approx(min(model.loss(x.gold, y), float(val @ val)))


def test_tagger_and_chunker_kinds():
    data = J.layered(TINY, collapse=True, np_chunks=True)
    tagger, enc_t = J.model_for(data, "tagger")
    assert tagger.chunk_labels_ == ("O",)
    tagger.set_params(algorithm="perceptron", max_iter=5).fit(enc_t)
    pos, chunk = J.predict(tagger, data)
    assert pos == [d.pos for d in data] and chunk == [d.chunks for d in data]
    chunker, enc_c = J.model_for(data, "chunker")
    assert set(chunker.pos_labels_) == {"B-NP", "I-NP", "O"}
    chunker.set_params(algorithm="mmvp", max_iter=5).fit(enc_c)
    pos, chunk = J.predict(chunker, data)
    assert chunk == [d.chunks for d in data]
    with pytest.raises(ValueError, match="decodes the joint model's chunk layer"):
        J.predict(chunker, data, decoder="meu")


def test_save_load_roundtrip_and_corrupt_file(tmp_path):
    data = J.layered(TINY, collapse=True, np_chunks=True)
    model, enc_ = J.model_for(data, "joint")
    model.set_params(algorithm="mmvp", max_iter=3).fit(enc_)
    path = tmp_path / "joint.npz"
    model.save(path)
    back = J.JointModel.load(path)
    np.testing.assert_array_equal(back.theta_, model.theta_)
    assert J.predict(back, data) == J.predict(model, data)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ModelFileError, match="joint.npz"):
        J.JointModel.load(path)


def test_bad_input_errors():
    model = _tiny_model()
    with pytest.raises(InputError, match="empty sentence"):
        model.encode(J.JointModel.columns([]))
    with pytest.raises(SchemeError, match="f.txt:3: token 1: unknown POS label 'ADV'"):
        model.structure(["ADV"], ["O"], "f.txt:3")
    with pytest.raises(SchemeError, match="unknown chunk type 'VP'"):
        model.structure(["NOUN"], ["B-VP"])
    with pytest.raises(InputError, match="unknown algorithm"):
        model.set_params(algorithm="svm").fit([])
    with pytest.raises(InputError, match="need gold POS and chunk"):
        model.set_params(algorithm="perceptron").fit(
            [J.encode(model, J.layered(TINY[:1])[0], gold=False)])
    with pytest.raises(CoNLLError, match="<tiny>:1: the joint model needs word, POS and chunk"):
        J.layered([_sent([("a", "DT")])], gold=True)
    with pytest.raises(CoNLLError, match="<tiny>:2: the joint model needs word, POS and chunk"):
        J.layered([_sent([("a", "DT", "O"), ("b", "DT")])])
    with pytest.raises(CoNLLError, match="<tiny>:1: the joint model needs word and POS"):
        J.layered([_sent([("a",)])], gold=False)
    assert J.layered([_sent([("a", "DT")])])[0].chunks is None      # words and POS only
    with pytest.raises(InputError, match="unknown model kind"):
        J.model_for(J.layered(TINY), "svm")
    with pytest.raises(InputError, match="must include 'O'"):
        J.JointModel.from_state(("NP",), POS, {}, [])
    with pytest.raises(InputError, match="no structure has a finite score"):
        J.viterbi(J.Parts(*(np.full(a.shape, -np.inf) for a in
                            (np.zeros((1, 3, 2)), np.zeros((1, 3, 2, 2)), np.zeros((1, 3)),
                             np.zeros((1, 3)), np.zeros((1, 3, 3))))))


def test_model_protocol_lattices_and_fit():
    """``lattices(sentences)`` reads each sentence as predict does (the model's
    POS/NP settings) and gives the chunk lattice of :meth:`chunk_lattice`."""
    data = J.layered(TINY, collapse=True, np_chunks=True)
    model, enc_ = J.model_for(data, "joint", {"collapse_pos": True, "np_only": True})
    assert model.set_params(algorithm="perceptron", max_iter=3).fit(enc_) is model
    assert model.kind == "joint" and model.scheme_ == "IOB2"
    with pytest.raises(InputError, match="trained by perceptron; its scores are not "
                                         r"probabilities.*joint\.calibrate\(model, ") as e:
        model.lattices(TINY)
    assert "fstchunk joint calibrate" in e.value.cli_text()
    maps = [decode_map(lat).tags for lat in model.lattices(TINY, require_probabilities=False)]
    assert maps == J.predict(model, data)[1]              # MAP needs no calibration
    model.settings_["temperature"] = 0.7                    # as calibrate() would store it
    lats = model.lattices(TINY)
    assert len(lats) == len(TINY)
    for lat, d in zip(lats, data):
        want = model.chunk_lattice(J.encode(model, d, gold=False))
        assert lat.tags == want.tags and lat.scheme == want.scheme
        assert lat.log_partition() == pytest.approx(want.log_partition(), rel=1e-12)
        np.testing.assert_allclose(lat.marginals(), want.marginals(), atol=1e-12)
        assert decode_meu(lat).tags == J.predict(model, [d], "meu")[1][0]
    tagger, enc_t = J.model_for(data, "tagger")
    with pytest.raises(InputError, match="tagger model has no chunk layer"):
        tagger.lattices(TINY)


def test_long_sentence_log_space():
    """300 tokens with large scores: log Z finite, marginals sum to one per token."""
    rng = np.random.default_rng(1)
    parts = random_parts(rng, 300, scale=30.0)
    logZ, marg = J.inside_outside(parts)
    assert math.isfinite(logZ)
    np.testing.assert_allclose(marg.node.sum(axis=(1, 2)), 1.0, atol=1e-9)


# ------------------------------------------------------------ real sentences
def test_dp_matches_machine_on_real_sentences(corpus):
    train = read_conll(corpus("conll2000", "train.txt"))[:60]
    test = [s for s in read_conll(corpus("conll2000", "test.txt"))[:200] if len(s) <= 12][:6]
    data = J.layered(train, collapse=True, np_chunks=True)
    model, enc_ = J.model_for(data, "joint")
    model.set_params(algorithm="mmvp", max_iter=2).fit(enc_)
    model.settings_["temperature"] = T = 1.7               # every twin sees score/T
    for d in J.layered(test, collapse=True, np_chunks=True):
        x = J.encode(model, d, gold=False)
        y, best = model.decode(x)
        pos, chunk = model.tags(y)
        f = model.fst(x)
        syms, score = J.fst_viterbi(f)
        assert syms == [f"{c}|{p}" for c, p in zip(chunk, pos)]
        assert score == pytest.approx(best / T, rel=1e-5)
        logZ, marg = model.marginals(x)
        assert J.fst_log_partition(f) == pytest.approx(logZ, rel=1e-12)
        lat = model.chunk_lattice(x)
        twin = Lattice.from_fst(model.chunk_fst(model.calibrated_parts(x)), model.chunk_tags,
                                "IOB2")
        np.testing.assert_allclose(lat.marginals(), twin.marginals(), atol=1e-9)
        np.testing.assert_allclose(
            lat.marginals()[:, model.chunk_tags.index("O")],
            marg.node[:, model.outside].sum(axis=1), atol=1e-12)


def test_token_marginals_chain_equal_machine(corpus):
    """Pr(chunktag|POS at k) from the chain's state posteriors = the machine's
    arc posteriors (shortest distance in log64), on real sentences."""
    train = read_conll(corpus("conll2000", "train.txt"))[:40]
    data = J.layered(train, collapse=True, np_chunks=True)
    model, enc_ = J.model_for(data, "joint")
    model.set_params(algorithm="crf", max_iter=5).fit(enc_)
    short = [x for x in enc_ if x.n <= 14][:3]
    assert short
    for x in short:
        names, want = model.token_marginals(x)
        got_names, got = J.fst_token_marginals(model.fst(x))
        got = got[:, [got_names.index(n) for n in names]]
        np.testing.assert_allclose(got, want, atol=1e-7)
        np.testing.assert_allclose(want.sum(axis=1), 1.0, atol=1e-12)
