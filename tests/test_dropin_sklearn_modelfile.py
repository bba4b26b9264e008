"""fstchunk.sklearn.CRF's model file is a CRFsuite model file (issue 46 §1,
``model_filename``): python-crfsuite opens what ``fit`` writes and tags identically;
CRF(model_filename=...) loads a file CRFsuite wrote and predicts as sklearn-crfsuite;
``tagger_.info()``, ``tagger_.dump()``, ``state_features_`` and ``transition_features_``
as python-crfsuite and sklearn-crfsuite give them; the writer against CRFsuite's bytes."""

import gc
import os
import warnings

import numpy as np
import pytest

pycrfsuite = pytest.importorskip("pycrfsuite")          # the test extra installs both
sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")

from fstchunk.core.errors import FstchunkWarning, ModelFileError  # noqa: E402
from fstchunk.io.crfsuite.model import parse_model, read_model  # noqa: E402
from fstchunk.io.crfsuite.writer import encode_model, hashlittle, write_model  # noqa: E402
from fstchunk.sklearn import CRF  # noqa: E402
from fstchunk.sklearn.modelfile import FORBIDDEN, forbidden  # noqa: E402
from test_sklearn_crf import corpus_xy  # noqa: E402


@pytest.fixture(scope="module")
def ned(corpus):
    """300 training and 700 held-out sentences of CoNLL-2002 Dutch, the tutorial's
    features ('bias': 1.0 on every token)."""
    X, y = corpus_xy(corpus("conll2002", "ned.train"), 1000)
    return X[:300], y[:300], X[300:], y[300:]


@pytest.fixture(scope="module")
def theirs(ned, tmp_path_factory):
    """A model sklearn-crfsuite (CRFsuite) trained and wrote."""
    X, y, _, _ = ned
    path = str(tmp_path_factory.mktemp("crfsuite") / "theirs.crfsuite")
    crf = sklearn_crfsuite.CRF(c1=0.1, c2=0.1, max_iterations=30, model_filename=path)
    return crf.fit(X, y), path


def _tagger(path):
    t = pycrfsuite.Tagger()
    t.open(path)
    return t


def test_hashlittle_is_lookup3s():
    """Bob Jenkins' own check values (lookup3.c, driver5)."""
    assert hashlittle(b"") == 0xDEADBEEF
    assert hashlittle(b"", 0xDEADBEEF) == 0xBD5B7DDE
    assert hashlittle(b"Four score and seven years ago") == 0x17770551
    assert hashlittle(b"Four score and seven years ago", 1) == 0xCD628161


def test_writer_rewrites_crfsuites_file(theirs, tmp_path):
    """CRFsuite's file read and written again: the same string databases byte for
    byte, the same size, and python-crfsuite reads the same model from it."""
    crf, path = theirs
    m = read_model(path)
    data = encode_model(m)
    orig = open(path, "rb").read()
    back = parse_model(data)
    assert len(data) == len(orig) and back.header == m.header
    h = m.header
    assert data[h["off_labels"]:h["off_labelrefs"]] == orig[h["off_labels"]:h["off_labelrefs"]]
    assert back.labels == m.labels and back.attributes == m.attributes
    np.testing.assert_array_equal(back.state_weight, m.state_weight)
    np.testing.assert_array_equal(back.transitions, m.transitions)
    out = str(tmp_path / "again.crfsuite")
    write_model(m, out)
    a, b = _tagger(path).info(), _tagger(out).info()
    assert (a.header, a.labels, a.attributes) == (b.header, b.labels, b.attributes)
    assert a.state_features == b.state_features and a.transitions == b.transitions


@pytest.mark.parametrize("params", [{"c1": 0.1, "c2": 0.1},
                                    {"c2": 0.1, "all_possible_transitions": True},
                                    {"algorithm": "ap", "max_iterations": 10}],
                         ids=["lbfgs-l1", "lbfgs-all-transitions", "ap"])
def test_fit_writes_a_file_pycrfsuite_tags_identically(ned, tmp_path, params):
    X, y, Xt, _ = ned
    path = str(tmp_path / "ours.crfsuite")
    crf = CRF(model_filename=path, **{"max_iterations": 30, **params}).fit(X, y)
    assert crf.scheme_ == "IOB2"
    tagger = _tagger(path)
    pred = crf.predict(Xt)
    assert [tagger.tag(x) for x in Xt] == [list(p) for p in pred]
    # the valid sequences' distribution too (an online model: its normalised scores)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FstchunkWarning)
        ours = crf.predict_marginals(Xt[:20])
    for x, m in zip(Xt[:20], ours):
        tagger.set(x)
        got = [[tagger.marginal(t, i) for t in crf.model_.tags_] for i in range(len(x))]
        want = [[row[t] for t in crf.model_.tags_] for row in m]
        np.testing.assert_allclose(got, want, atol=1e-5)
    # info(): the file's header, labels and ids as python-crfsuite reads them
    info, mine = tagger.info(), crf.tagger_.info()
    assert mine.header == info.header and mine.labels == info.labels
    assert mine.attributes == info.attributes
    assert crf.size_ == os.path.getsize(path)
    # read back: the scheme and the model's weights (the anchor's shifts undone)
    back = CRF(model_filename=path)
    assert back.scheme_ == "IOB2"
    np.testing.assert_allclose(back.model_.unpack(back.model_.theta_)[0][~forbidden(crf.model_)],
                               crf.model_.unpack(crf.model_.theta_)[0][~forbidden(crf.model_)],
                               atol=1e-8)
    assert back.state_features_.keys() == crf.state_features_.keys()
    assert max(abs(back.state_features_[k] - w) for k, w in crf.state_features_.items()) < 1e-8
    assert [list(p) for p in back.predict(Xt)] == [list(p) for p in pred]


def test_the_file_holds_forbidden_transitions_as_a_large_negative_weight(ned, tmp_path):
    X, y, _, _ = ned
    path = str(tmp_path / "ours.crfsuite")
    crf = CRF(c2=0.1, max_iterations=10, model_filename=path).fit(X, y)
    trans = _tagger(path).info().transitions
    assert trans[("O", "I-PER")] == FORBIDDEN
    assert crf.transition_features_[("O", "I-PER")] == float("-inf")
    assert crf.tagger_.info().transitions[("O", "I-PER")] == float("-inf")


def test_without_an_anchor_writing_warns(ned, tmp_path):
    """No attribute on every token: the file cannot keep I-X from opening a sentence
    in CRFsuite's tagger; fstchunk says so instead of writing a different model."""
    X, y, _, _ = ned
    X = [[{k: v for k, v in f.items() if k != "bias"} for f in s] for s in X]
    crf = CRF(c2=0.1, max_iterations=5).fit(X, y)
    with pytest.warns(FstchunkWarning, match="bias"):
        crf.set_params(model_filename=str(tmp_path / "m.crfsuite")).fit(X, y)


def test_a_file_crfsuite_wrote_predicts_as_sklearn_crfsuite(ned, theirs):
    _, _, Xt, _ = ned
    crf, path = theirs
    ours = CRF(model_filename=path)
    assert ours.scheme_ == "none" and ours.classes_ == crf.classes_
    assert [list(p) for p in ours.predict(Xt)] == [list(p) for p in crf.predict(Xt)]
    a, b = ours.predict_marginals(Xt[:10]), crf.predict_marginals(Xt[:10])
    for sa, sb in zip(a, b):
        for da, db in zip(sa, sb):
            assert da.keys() == db.keys()
            np.testing.assert_allclose([da[k] for k in db], [db[k] for k in db], atol=1e-6)
    assert ours.state_features_.keys() == crf.state_features_.keys()
    assert ours.transition_features_.keys() == crf.transition_features_.keys()
    assert ours.attributes_ == crf.attributes_ and ours.size_ == crf.size_


def test_dump_and_info_are_pycrfsuites(ned, tmp_path):
    X, y, _, _ = ned
    crf = CRF(c2=0.1, max_iterations=10).fit(X, y)
    name = crf.modelfile.name
    tagger = _tagger(name)
    a, b = str(tmp_path / "ours.txt"), str(tmp_path / "theirs.txt")
    crf.tagger_.dump(a)
    tagger.dump(b)
    assert open(a, encoding="utf-8").read() == open(b, encoding="utf-8").read()
    info = tagger.info()
    mine = crf.tagger_.info()
    assert set(mine.header) == set(info.header) and mine.labels == info.labels
    assert all(isinstance(v, str) for v in (*mine.labels.values(), *mine.attributes.values()))


def test_state_and_transition_keys_are_sklearn_crfsuites(ned):
    """c1 = 0 (no weight exactly 0): the same keys, plus the transitions the scheme
    forbids, as -inf."""
    X, y, _, _ = ned
    for params in ({}, {"all_possible_transitions": True}):
        ours = CRF(c2=0.1, max_iterations=10, **params).fit(X, y)
        crf = sklearn_crfsuite.CRF(c2=0.1, max_iterations=10, **params).fit(X, y)
        assert ours.state_features_.keys() == crf.state_features_.keys()
        assert set(ours.attributes_) == set(crf.attributes_)
        bad = {k for k, w in ours.transition_features_.items() if w == float("-inf")}
        assert bad and all(k[1].startswith("I-") for k in bad)
        if params:
            assert ours.transition_features_.keys() == crf.transition_features_.keys()
        else:
            assert ours.transition_features_.keys() - bad == crf.transition_features_.keys()


def test_modelfile_name_is_a_temporary_crfsuite_file(ned):
    X, y, Xt, _ = ned
    crf = CRF(c2=0.1, max_iterations=5)
    assert crf.modelfile.name is None
    crf.fit(X[:50], y[:50])
    name = crf.modelfile.name
    assert name.endswith(".crfsuite") and crf.modelfile.name == name
    assert _tagger(name).tag(Xt[0]) == crf.predict_single(Xt[0])
    crf.fit(X[:60], y[:60])                       # a new fit: the old file goes
    assert not os.path.exists(name)
    name = crf.modelfile.name
    del crf
    gc.collect()
    assert not os.path.exists(name)
    kept = CRF(c2=0.1, max_iterations=5, keep_tempfiles=True).fit(X[:50], y[:50])
    name = kept.modelfile.name
    del kept
    gc.collect()
    assert os.path.exists(name)
    os.remove(name)


def test_npz_names_keep_fstchunks_format(ned, tmp_path):
    X, y, Xt, _ = ned
    path = str(tmp_path / "model.npz")
    crf = CRF(c2=0.1, max_iterations=5, model_filename=path).fit(X[:50], y[:50])
    assert open(path, "rb").read(2) == b"PK"
    back = CRF(model_filename=path)
    assert back.scheme_ == "IOB2"
    np.testing.assert_array_equal(back.model_.theta_, crf.model_.theta_)


def test_a_damaged_crfsuite_file_is_one_error(theirs, tmp_path):
    _, path = theirs
    bad = tmp_path / "cut.crfsuite"
    bad.write_bytes(open(path, "rb").read()[:500])
    with pytest.raises(ModelFileError, match="cut.crfsuite"):
        CRF(model_filename=str(bad)).predict([[{"w": "a"}]])


@pytest.mark.parametrize("scheme", ["IOBES", "IOE2", "BILOU"])
def test_schemes_with_forbidden_last_tags(ned, tmp_path, scheme):
    """Tags that may not close a sentence (IOE2's I-X, IOBES's B-X and I-X): CRFsuite's
    tagger of the written file still gives fstchunk's valid paths."""
    from fstchunk.schemes.encodings import convert
    X, y, Xt, _ = ned
    y = [convert(s, "IOB2", scheme) for s in y]
    path = str(tmp_path / "ours.crfsuite")
    crf = CRF(c2=0.1, max_iterations=20, scheme=scheme, model_filename=path).fit(X, y)
    tagger = _tagger(path)
    assert [tagger.tag(x) for x in Xt] == [list(p) for p in crf.predict(Xt)]
    back = CRF(model_filename=path)
    assert back.scheme_ == scheme
    assert [list(p) for p in back.predict(Xt[:100])] == [list(p) for p in crf.predict(Xt[:100])]


def test_forbidden_transitions_shown_are_between_classes():
    """A tag the scheme adds (I-PER when y has one-token PER chunks only) is no class:
    transition_features_ keys stay within classes_, as sklearn-crfsuite's (and its own
    suite's test_attributes) expect."""
    X = [[{"w": "Jan"}, {"w": "loopt"}], [{"w": "in"}, {"w": "Den"}, {"w": "Haag"}]]
    y = [["B-PER", "O"], ["O", "B-LOC", "I-LOC"]]
    crf = CRF(max_iterations=5).fit(X, y)
    assert "I-PER" in crf.model_.tags_ and "I-PER" not in crf.classes_
    keys = crf.transition_features_
    assert ("O", "I-LOC") in keys and keys[("O", "I-LOC")] == float("-inf")
    assert all(a in crf.classes_ and b in crf.classes_ for a, b in keys)
