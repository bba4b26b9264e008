"""The attribute-feature CRF core: python-crfsuite's items, CRFsuite's feature
generation, the unconstrained chain against brute-force enumeration, files."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.decoding.decode import decode_map, decode_meu, decode_posterior
from fstchunk.core.errors import FstchunkError, InputError, ModelFileError, SchemeError
from fstchunk.decoding.expected import expected_f
from fstchunk.structures.lattice import Lattice
from fstchunk.models import load_model
from fstchunk.models.attribute_crf import AttributeCRF, detect_scheme
from fstchunk.models.attributes import AttributeMap, fit_attributes, flatten_item
from fstchunk.schemes.tagspace import TagSpace


# ------------------------------------------------------------------ items
@pytest.mark.parametrize("item, names, values", [
    ({"w": "the"}, ["w:the"], [1.0]),
    ({"bias": 1.0, "len": 3}, ["bias", "len"], [1.0, 3.0]),
    ({"up": True, "dig": False}, ["up", "dig"], [1.0, 0.0]),
    ({"w": {"lower": "x", "n": 2.5}}, ["w:lower:x", "w:n"], [1.0, 2.5]),
    ({"s": ["ab", "cd"]}, ["s:ab", "s:cd"], [1.0, 1.0]),
    ({"s": {"t": ["a"]}}, ["s:t:a"], [1.0]),
    (["a", "b", "a"], ["a", "b", "a"], [1.0, 1.0, 1.0]),
    ({b"k": b"v", "n": np.float32(0.5)}, ["k:v", "n"], [1.0, 0.5]),
])
def test_items_flatten_as_python_crfsuite(item, names, values):
    assert flatten_item(item) == (names, values)


@pytest.mark.parametrize("item, where", [
    ("word", "string"), ({"w": None}, "'w'"), ({"w": (1, 2)}, "'w'"),
    ({"w": float("nan")}, "'w'"), ({"w": float("inf")}, "'w'"), (3, "int"),
])
def test_bad_items_are_one_input_error(item, where):
    with pytest.raises(InputError, match=where):
        flatten_item(item, "X[2][1]")


def test_items_agree_with_python_crfsuite():
    pycrfsuite = pytest.importorskip("pycrfsuite")
    items = [{"w": "the", "n": 2.0, "b": True, "f": False, "d": {"x": 1.5, "l": ["p", "q"]}},
             ["a", "b"], {"s": {"t": "u"}}]
    seq = pycrfsuite.ItemSequence(items)
    for ours, theirs in zip(items, seq.items()):
        names, values = flatten_item(ours)
        assert dict(zip(names, values)) == theirs


# ------------------------------------------------------------------ feature generation
def test_feature_generation_as_crfsuite():
    X = [[{"a": 2.0, "b": "x"}, {"a": 1.0}], [{"c": True, "a": -0.5}]]
    gold = [np.array([0, 1]), np.array([1])]
    f = fit_attributes(X, gold, 2)
    assert f.attributes.names == ["a", "b:x", "c"]
    got = {(f.attributes.names[a], l) for a, l in f.pairs}
    assert got == {("a", 0), ("b:x", 0), ("a", 1), ("c", 1)}
    assert f.transitions.tolist() == [[False, True], [False, False]]
    assert f.X.toarray().tolist() == [[2.0, 1.0, 0.0], [1.0, 0.0, 0.0], [-0.5, 0.0, 1.0]]
    # min_freq: a state feature is kept when min_freq <= Σ of its values
    f = fit_attributes(X, gold, 2, min_freq=1.0)
    assert {(f.attributes.names[a], l) for a, l in f.pairs} == {("a", 0), ("b:x", 0), ("c", 1)}
    assert f.transitions.tolist() == [[False, True], [False, False]]
    f = fit_attributes(X, gold, 2, min_freq=1.5)
    assert not f.transitions.any()
    # all_possible_*: every pair at frequency 0 (kept with min_freq <= 0)
    f = fit_attributes(X, gold, 2, all_possible_states=True, all_possible_transitions=True)
    assert len(f.pairs) == 6 and f.transitions.all()
    f = fit_attributes(X, gold, 2, min_freq=0.5, all_possible_states=True,
                       all_possible_transitions=True)
    assert len(f.pairs) == 4 and f.transitions.sum() == 1      # (a, 1): 1 − 0.5


def test_transform_ignores_unknown_attributes_keeps_values():
    amap = AttributeMap(["a", "b:x"])
    M = amap.transform([[{"a": 3.0, "zz": 1.0}, ["b:x", "b:x"]]])
    assert M.toarray().tolist() == [[3.0, 0.0], [0.0, 2.0]]


# ------------------------------------------------------------------ the unconstrained chain
def brute(tags, E, T, S, En):
    """Every label sequence, its score; (log Z, marginals, argmax)."""
    n, L = E.shape
    seqs = list(itertools.product(range(L), repeat=n))
    sc = np.array([S[y[0]] + En[y[-1]] + sum(E[i, y[i]] for i in range(n)) +
                   sum(T[y[i - 1], y[i]] for i in range(1, n)) for y in seqs])
    logz = np.logaddexp.reduce(sc)
    p = np.exp(sc - logz)
    marg = np.zeros((n, L))
    for y, pi in zip(seqs, p):
        marg[np.arange(n), y] += pi
    return logz, marg, [tags[i] for i in seqs[int(np.argmax(sc))]]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 4), L=st.integers(1, 4), scale=st.sampled_from([0.1, 1.0, 30.0]),
       seed=st.integers(0, 10 ** 6))
def test_unconstrained_chain_against_brute_force(n, L, scale, seed):
    rng = np.random.default_rng(seed)
    tags = ["sunny", "rainy", "NN", "B-NP"][:L]         # a chunk tag is just a label here
    E, T = rng.normal(size=(n, L)) * scale, rng.normal(size=(L, L)) * scale
    S, En = rng.normal(size=L) * scale, rng.normal(size=L) * scale
    lat = Lattice.from_scores(tags, E, T, S, En, scheme=None)
    logz, marg, best = brute(tags, E, T, S, En)
    assert lat.log_partition() == pytest.approx(logz, rel=1e-10, abs=1e-9)
    np.testing.assert_allclose(lat.marginals(), marg, atol=1e-9)
    assert decode_map(lat).tags == best
    assert len(decode_posterior(lat).tags) == n
    fst_lat = Lattice.from_fst(lat.fst, tags, scheme="none")   # the machine path too
    assert fst_lat.log_partition() == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(fst_lat.marginals(), marg, atol=1e-6)


def test_chunk_operations_refuse_the_unconstrained_chain():
    lat = Lattice.from_scores(["a", "b"], np.zeros((2, 2)), np.zeros((2, 2)), scheme=None)
    for op in (lambda: decode_meu(lat), lambda: lat.chunk_marginals(),
               lambda: expected_f(lat, hypothesis=["a", "b"])):
        with pytest.raises(SchemeError, match="scheme=None"):
            op()
    assert TagSpace.of(("a", "b"), None) is TagSpace.of(("a", "b"), "none")
    with pytest.raises(InputError, match="repeats"):
        TagSpace.of(("a", "a"), None)


# ------------------------------------------------------------------ the model
def toy(n_sent=40, seed=0):
    """Sequences whose label is a function of the word and its left neighbour."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sent):
        words = rng.choice(["the", "cat", "sat", "on", "mat"], size=rng.integers(1, 7))
        X.append([{"w": w, "bias": 1.0, "prev": {"w": words[i - 1] if i else "BOS"}}
                  for i, w in enumerate(words)])
        y.append(["DT" if w == "the" else "NN" if w in ("cat", "mat") else "VB"
                  for w in words])
    return X, y


@pytest.mark.parametrize("labels, scheme", [
    (["NN", "VB"], "none"), (["B-NP", "I-NP", "O"], "IOB2"), (["S-NP", "O"], "IOBES"),
    (["sunny", "rainy"], "none")])
def test_scheme_detection(labels, scheme):
    assert detect_scheme(labels, [labels]) == scheme


def test_iob1_data_detected_as_iob1():
    assert detect_scheme(["I-NP", "O", "B-NP"], [["I-NP", "I-NP", "B-NP"]]) == "IOB1"


@pytest.mark.parametrize("scheme", ["auto", None])
def test_fit_save_load_round_trip(tmp_path, scheme):
    X, y = toy()
    m = AttributeCRF(scheme, l2=1e-3, max_iter=60).fit(X, y)
    first = tuple(dict.fromkeys(t for ys in y for t in ys))   # CRFsuite's label order
    assert m.scheme_ == "none" and m.tags_ == first and set(first) == {"DT", "NN", "VB"}
    pred = [decode_map(lat).tags for lat in m.lattices(X)]
    assert pred == y
    assert np.all(m.theta_[~m.free] == 0)                 # no start/end, only seen transitions
    m.save(tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz")
    assert isinstance(back, AttributeCRF)
    np.testing.assert_array_equal(back.theta_, m.theta_)
    np.testing.assert_allclose(back.lattices(X[:3])[0].marginals(),
                               m.lattices(X[:3])[0].marginals())


def test_chunk_labels_give_distribution_over_valid_sequences():
    X = [[{"w": "a"}, {"w": "b"}, {"w": "c"}], [{"w": "c"}, {"w": "a"}]]
    y = [["B-NP", "I-NP", "O"], ["O", "B-NP"]]
    m = AttributeCRF(max_iter=20, l2=1e-2).fit(X, y)
    assert m.scheme_ == "IOB2"
    lat = m.lattices(X)[0]
    assert lat.space.chunked
    # O -> I-NP is invalid in IOB2: no mass on it, although no feature forbids it
    marg = lat.marginals()
    assert marg[0, m.tags_.index("I-NP")] == 0.0
    forced = AttributeCRF(None, max_iter=5).fit(X, y)
    assert forced.scheme_ == "none" and forced.lattices(X)[0].marginals()[0, 1] > 0


def test_forced_scheme_refuses_invalid_sequence_naming_it():
    X = [[{"w": "a"}, {"w": "b"}]] * 2
    with pytest.raises(SchemeError, match=r"y\[1\]"):
        AttributeCRF("IOB2").fit(X, [["B-NP", "I-NP"], ["O", "I-NP"]])


@pytest.mark.parametrize("X, y, match", [
    ([[{"w": "a"}]], [["A"], ["B"]], "len"),
    ([[{"w": "a"}, {"w": "b"}]], [["A"]], r"y\[0\] has 1 labels"),
    ([["w"]], [[""]], r"y\[0\]\[0\]"),
    ([[]], [[]], r"X\[0\]: a sequence without tokens"),
    ([["ab", "cd"][0]], [["A", "B"]], r"X\[0\]"),
    ([[{"w": None}]], [["A"]], r"X\[0\]\[0\]"),
])
def test_bad_training_data_one_error_naming_where(X, y, match):
    with pytest.raises(FstchunkError, match=match):
        AttributeCRF().fit(X, y)


def test_load_refuses_weights_outside_features(tmp_path):
    X, y = toy(10)
    m = AttributeCRF(None, max_iter=3).fit(X, y)
    m.theta_[-1] = 1.0                                     # an end score: no such feature
    m.save(tmp_path / "bad.npz")
    with pytest.raises(ModelFileError, match="theta"):
        AttributeCRF.load(tmp_path / "bad.npz")


_values = st.one_of(st.text(max_size=3), st.booleans(), st.integers(-5, 5),
                    st.floats(-10, 10, allow_nan=False),
                    st.lists(st.text(max_size=2), max_size=2),
                    st.dictionaries(st.text(max_size=2), st.floats(-3, 3), max_size=2))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.one_of(st.dictionaries(st.text(max_size=3), _values, max_size=4),
                                   st.lists(st.text(max_size=3), max_size=3)),
                         min_size=1, max_size=3), min_size=1, max_size=3))
def test_transform_fast_path_equals_item_by_item(X):
    """The batch flattening (fast path for flat dicts) gives each token the attributes
    and values flatten_item gives it."""
    from fstchunk.models.attributes import _flatten_all
    names, values, offsets = _flatten_all(X, "X")
    items = [it for seq in X for it in seq]
    for k, item in enumerate(items):
        want = flatten_item(item)
        assert (names[offsets[k]:offsets[k + 1]], values[offsets[k]:offsets[k + 1]]) == want


@pytest.mark.parametrize("l1", [-1.0, float("nan"), float("inf"), "0.1", True])
def test_a_negative_or_non_number_l1_is_refused(l1):
    """A negative L1 penalty trained silently (OWL-QN rewarding large weights)."""
    X = [[{"w": "Jan"}, {"w": "loopt"}], [{"w": "Den"}, {"w": "Haag"}]]
    y = [["B-PER", "O"], ["B-LOC", "I-LOC"]]
    with pytest.raises(InputError, match="l1 must be a finite number >= 0"):
        AttributeCRF(l1=l1, max_iter=3).fit(X, y)
