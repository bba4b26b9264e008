"""fstchunk.sklearn.CRF as a drop-in for sklearn_crfsuite.CRF: the same model as
CRFsuite where both converge, marginals against brute force, refusals, scikit-learn's
conventions, fstchunk's own methods."""

import itertools
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from fstchunk.core.errors import FstchunkError, InputError, SchemeError
from fstchunk.models.attributes import flatten_item
from fstchunk.sklearn import CRF

sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")


def word2features(sent, i):
    w, pos = sent[i][0], sent[i][1]
    f = {"bias": 1.0, "w.lower()": w.lower(), "w[-3:]": w[-3:], "w.istitle()": w.istitle(),
         "w.isdigit()": w.isdigit(), "pos": pos}
    if i > 0:
        f.update({"-1:w.lower()": sent[i - 1][0].lower(), "-1:pos": sent[i - 1][1]})
    else:
        f["BOS"] = True
    if i < len(sent) - 1:
        f.update({"+1:w.lower()": sent[i + 1][0].lower(), "+1:pos": sent[i + 1][1]})
    else:
        f["EOS"] = True
    return f


def corpus_xy(path, n, column=-1, start=0):
    from fstchunk.io.conll import read_conll
    sents = [s for s in read_conll(path) if s.rows[0][0] != "-DOCSTART-"][start:start + n]
    return ([[word2features(s.rows, i) for i in range(len(s.rows))] for s in sents],
            [[r[column] for r in s.rows] for s in sents])


@pytest.fixture(scope="module")
def pos_data(corpus):
    """CoNLL-2000 words with POS tags as labels: an unconstrained chain."""
    X, y = corpus_xy(corpus("conll2000", "train.txt"), 80, column=1)
    X = [[{k: v for k, v in f.items() if "pos" not in k} for f in s] for s in X]
    return X, y


@pytest.fixture(scope="module")
def ner_data(corpus):
    return corpus_xy(corpus("conll2002", "ned.train"), 150)


# ------------------------------------------------------------------ the same model as CRFsuite
@pytest.mark.parametrize("params", [
    {"c1": 0.0, "c2": 0.1},
    {"c1": 0.0, "c2": 1.0, "all_possible_transitions": True},
    {"c1": 0.0, "c2": 0.5, "min_freq": 2},
    {"c1": 0.05, "c2": 0.05, "epsilon": 1e-8, "delta": 1e-10, "max_iterations": 3000},
], ids=["c2", "all-transitions", "min-freq", "l1"])
def test_same_model_as_sklearn_crfsuite(pos_data, params):
    X, y = pos_data
    params = {"max_iterations": 1000, "epsilon": 1e-7, "delta": 1e-9, **params}
    a = sklearn_crfsuite.CRF(algorithm="lbfgs", **params).fit(X, y)
    b = CRF(algorithm="lbfgs", **params).fit(X, y)
    assert b.scheme_ == "none"
    assert b.classes_ == a.classes_
    assert set(b.attributes_) == set(a.attributes_)
    assert b.num_attributes_ == a.num_attributes_
    sa, sb = a.state_features_, b.state_features_
    assert set(sb) == set(sa)
    tol = 2e-3 if params["c1"] else 1e-4
    assert max(abs(sa[k] - sb[k]) for k in sa) < tol * max(1.0, max(map(abs, sa.values())))
    ta, tb = a.transition_features_, b.transition_features_
    assert set(tb) == set(ta) and max(abs(ta[k] - tb[k]) for k in ta) < tol * 10
    assert [list(p) for p in b.predict(X)] == [list(p) for p in a.predict(X)]
    la, lb = a.training_log_.last_iteration["loss"], b.training_log_.last_iteration["loss"]
    assert lb == pytest.approx(la, rel=1e-5)
    ma, mb = a.predict_marginals_single(X[0]), b.predict_marginals_single(X[0])
    assert max(abs(ma[i][t] - mb[i][t]) for i in range(len(ma)) for t in ma[i]) < 1e-3
    assert b.score(X, y) == pytest.approx(a.score(X, y))


def test_l1_is_sparse_and_reported(pos_data):
    X, y = pos_data
    dense = CRF(c1=0.0, c2=0.01, max_iterations=60).fit(X, y)
    sparse = CRF(c1=1.0, c2=0.01, max_iterations=60).fit(X, y)
    model = sparse.model_
    nonzero = int(np.count_nonzero(model.theta_))
    assert sparse.num_nonzero_ == nonzero
    assert sparse.training_log_.last_iteration["active_features"] == nonzero
    assert model.settings_["nonzero"] == nonzero and model.settings_["solver"] == "owlqn"
    assert nonzero < 0.5 * dense.num_nonzero_


# ------------------------------------------------------------------ oracles
def brute_marginals(crf, xseq):
    """Token marginals from the fitted weights by name, over every label sequence (every
    valid one under a scheme)."""
    from fstchunk.schemes import encodings as enc
    labels, sf, tf = crf.classes_, crf.state_features_, crf.transition_features_
    items = [dict(zip(*flatten_item(x))) for x in xseq]
    n = len(xseq)
    seqs, scores = [], []
    for y in itertools.product(labels, repeat=n):
        if crf.scheme_ != "none" and not enc.is_valid(list(y), crf.scheme_):
            continue
        s = sum(v * sf.get((a, y[i]), 0.0) for i, it in enumerate(items) for a, v in it.items())
        s += sum(tf.get((y[i - 1], y[i]), 0.0) for i in range(1, n))
        seqs.append(y)
        scores.append(s)
    p = np.exp(np.array(scores) - np.logaddexp.reduce(scores))
    marg = [{t: 0.0 for t in labels} for _ in range(n)]
    for y, pi in zip(seqs, p):
        for i, t in enumerate(y):
            marg[i][t] += pi
    return marg, seqs[int(np.argmax(p))], dict(zip(seqs, p))


@pytest.mark.parametrize("scheme", [None, "auto"])
def test_marginals_tags_probability_against_brute_force(ner_data, scheme):
    X, y = ner_data
    crf = CRF(c2=0.1, max_iterations=40, scheme=scheme).fit(X, y)
    assert crf.scheme_ == ("none" if scheme is None else "IOB2")
    short = [x for x in X if len(x) <= 4][:4]
    for xseq in short:
        marg, best, probs = brute_marginals(crf, xseq)
        got = crf.predict_marginals_single(xseq)
        for m, g in zip(marg, got):
            assert set(g) == set(m)
            assert max(abs(m[t] - g[t]) for t in m) < 1e-9
        assert crf.predict_single(xseq) == list(best)
        tagger = crf.tagger_
        tagger.set(xseq)
        for yseq in list(probs)[:5]:
            assert tagger.probability(list(yseq)) == pytest.approx(probs[yseq], abs=1e-9)
    assert [list(p) for p in crf.predict(short)] == [crf.predict_single(x) for x in short]


# ------------------------------------------------------------------ fstchunk's own
def test_chunk_methods(ner_data):
    X, y = ner_data
    crf = CRF(c2=0.1, max_iterations=40).fit(X, y)
    meu = crf.predict(X[:20], decoder="meu", beta=1.0)
    assert all(len(p) == len(x) for p, x in zip(meu, X[:20]))
    chunks = crf.predict_chunks(X[:20])
    from fstchunk.schemes import encodings as enc
    for found, tags in zip(chunks, crf.predict(X[:20])):
        assert [(c.type, c.start, c.end) for c in found] == enc.tags_to_chunks(list(tags), "IOB2")
        assert all(0.0 <= c.p <= 1.0 + 1e-12 for c in found)
    ef = crf.expected_f(X[:20], y[:20])
    assert ef.shape == (20,) and np.all((ef >= 0) & (ef <= 1 + 1e-12))
    from fstchunk.decoding.exact_boundaries import decode_meu_exact
    exact = crf.predict(X[:5], decoder="meu", beta=0.5, utility="exact")     # issue 47
    lats = crf.model_.lattices(X[:5])
    assert [list(p) for p in exact] == [decode_meu_exact(lat, beta=0.5).tags for lat in lats]
    found = crf.predict_chunks(X[:5], decoder="meu", beta=0.5, utility="exact")
    assert [[(c.type, c.start, c.end) for c in f] for f in found] == \
        [enc.tags_to_chunks(list(p), "IOB2") for p in exact]
    from fstchunk.decoding.utilities import utility
    short = [x for x in X if len(x) <= 8][:3]       # type's MEU is slow on long chunks
    assert len(short) == 3
    for util, xs in [("macro", X[:3]), ("type:PER", X[:3]), ("partial", X[:3]),
                     ("weighted:PER=2", X[:3]), ("type", short)]:
        got = crf.predict(xs, decoder="meu", utility=util)
        assert [list(p) for p in got] == [utility(util).decode(lat).tags
                                          for lat in crf.model_.lattices(xs)]
    pos = CRF(scheme=None, c2=0.1, max_iterations=5).fit(X[:30], y[:30])
    for op in (lambda: pos.predict_chunks(X[:2]), lambda: pos.expected_f(X[:2], y[:2]),
               lambda: pos.predict(X[:2], decoder="meu")):
        with pytest.raises(SchemeError, match="scheme=None"):
            op()


@pytest.mark.parametrize("objective", ["meu", "meu-corpus", "max-margin"])
def test_fstchunk_objectives(ner_data, objective, tmp_path):
    X, y = ner_data
    crf = CRF(objective=objective, c2=0.1, max_iterations=8).fit(X[:60], y[:60])
    model = crf.model_
    assert model.settings_["objective"] == objective
    assert np.all(model.theta_[~model.free] == 0)          # CRFsuite's features only
    model.save(tmp_path / "m.npz")
    back = CRF(model_filename=str(tmp_path / "m.npz"))
    assert [list(p) for p in back.predict(X[:5])] == [list(p) for p in crf.predict(X[:5])]


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("X, y, match", [
    ([[{"w": "a"}]], [["A"], ["B"]], r"len\(X\) = 1 but len\(y\) = 2"),
    ([[{"w": "a"}, {"w": "b"}]], [["A"]], r"y\[0\] has 1 labels but X\[0\] has 2 tokens"),
    ([[{"w": "a"}], [{"w": [1]}]], [["A"], ["B"]], r"X\[1\]\[0\]"),
    ([[{"w": "a"}], "abc"], [["A"], ["B", "C", "D"]], r"X\[1\]"),
    ({"w": "a"}, [["A"]], "X must be a list"),
    ([[{"w": "a"}], [{"w": {"x": None}}]], [["A"], ["B"]], r"X\[1\]\[0\].*'w:x'"),
    ([[{"w": "a"}]], [[1]], r"y\[0\]\[0\]"),
], ids=["len", "tokens", "list-value", "string-sequence", "dict-X", "nested-none",
        "label-type"])
def test_bad_data_one_error_naming_where(X, y, match):
    with pytest.raises(FstchunkError, match=match):
        CRF(max_iterations=2).fit(X, y)


@pytest.mark.parametrize("params, match", [
    ({"algorithm": "sgd"}, "unknown algorithm 'sgd'"),
    ({"algorithm": "ap", "c2": 1.0}, "c2=1.0 does not apply to algorithm 'ap'"),
    ({"pa_type": 1}, "pa_type=1 does not apply to algorithm 'lbfgs'"),
    ({"algorithm": "pa", "pa_type": 3}, "pa_type must be 0, 1 or 2"),
    ({"c2": -1.0}, "c2 must be"), ({"max_iterations": 0}, "max_iterations must be"),
    ({"linesearch": "Wolfe"}, "linesearch must be"), ({"trainer_cls": object}, "trainer_cls"),
    ({"objective": "hinge"}, "unknown objective"),
    ({"algorithm": "ap", "objective": "meu"}, "objective='meu'"),
], ids=lambda p: str(p))
def test_bad_parameters_one_error(params, match):
    with pytest.raises(InputError, match=match):
        CRF(**params).fit([[{"w": "a"}, {"w": "b"}]], [["A", "B"]])


def test_unknown_parameter_is_refused():
    with pytest.raises((TypeError, ValueError)):
        CRF(c3=1.0)
    with pytest.raises(InputError, match="c3"):
        CRF().set_params(c3=1.0)


def test_not_fitted():
    crf = CRF()
    assert crf.classes_ is None and crf.tagger_ is None and crf.state_features_ is None
    with pytest.raises(InputError, match="not fitted"):
        crf.predict([[{"w": "a"}]])


# ------------------------------------------------------------------ scikit-learn conventions
def test_params_clone_pickle_files(tmp_path, pos_data):
    from sklearn.base import clone
    X, y = pos_data
    crf = CRF(c1=0.1, c2=0.01, max_iterations=20, all_possible_transitions=True)
    assert clone(crf).get_params() == crf.get_params()
    assert set(sklearn_crfsuite.CRF().get_params()) <= set(crf.get_params())
    crf.set_params(c2=0.02)
    assert crf.c2 == 0.02
    crf.fit(X, y)
    back = pickle.loads(pickle.dumps(crf))
    assert [list(p) for p in back.predict(X[:5])] == [list(p) for p in crf.predict(X[:5])]
    assert back.state_features_ == crf.state_features_
    path = str(tmp_path / "model.npz")
    crf.set_params(model_filename=path).fit(X, y)
    fresh = CRF(model_filename=path)
    assert fresh.classes_ == crf.classes_
    assert [list(p) for p in fresh.predict(X[:5])] == [list(p) for p in crf.predict(X[:5])]
    assert crf.size_ > 0


def test_cross_val_score_two_jobs(pos_data):
    from sklearn.model_selection import cross_val_score
    X, y = pos_data
    scores = cross_val_score(CRF(c2=0.1, max_iterations=15), X, y, cv=2, n_jobs=2)
    assert len(scores) == 2 and all(0.3 < s <= 1.0 for s in scores)


def test_sklearn_estimator_checks_that_apply():
    """check_estimator's checks feed 2-d numeric X, which is not a list of sequences;
    the ones about parameters and construction apply."""
    from sklearn.utils import estimator_checks as ec
    for check in (ec.check_no_attributes_set_in_init, ec.check_get_params_invariance,
                  ec.check_set_params, ec.check_parameters_default_constructible):
        check("CRF", CRF())


def test_dev_data_logged(ner_data):
    X, y = ner_data
    crf = CRF(c2=0.1, max_iterations=6).fit(X[:80], y[:80], X_dev=X[80:], y_dev=y[80:])
    log = crf.training_log_
    assert len(log.iterations) >= 1 and all("dev" in it for it in log.iterations)
    with pytest.raises(InputError, match="Pass both"):
        CRF().fit(X, y, X_dev=X)


# ------------------------------------------------------------------ a tutorial script
TUTORIAL = textwrap.dedent('''
    import sys
    sys.path.insert(0, {tests!r})
    from collections import Counter
    import sklearn_crfsuite
    from sklearn_crfsuite import metrics
    from test_sklearn_crf import corpus_xy
    X_train, y_train = corpus_xy({path!r}, 300)
    X_test, y_test = corpus_xy({path!r}, 100, start=300)
    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=50,
                               all_possible_transitions=True)
    crf.fit(X_train, y_train)
    labels = list(crf.classes_)
    labels.remove("O")
    y_pred = crf.predict(X_test)
    f = metrics.flat_f1_score(y_test, y_pred, average="weighted", labels=labels)
    top = Counter(crf.state_features_).most_common(5)
    trans = Counter(crf.transition_features_).most_common(3)
    print(round(f, 4), len(crf.attributes_), sorted(labels), len(top), len(trans))
''')


def test_tutorial_script_runs_with_only_the_import_changed(corpus, tmp_path):
    path = corpus("conll2002", "ned.train")
    import os
    tests = os.path.dirname(__file__)
    out = {}
    for name, line in (("crfsuite", "import sklearn_crfsuite"),
                       ("fstchunk", "import fstchunk.sklearn as sklearn_crfsuite")):
        script = TUTORIAL.format(tests=tests, path=path).replace("import sklearn_crfsuite",
                                                                  line, 1)
        p = tmp_path / f"tutorial_{name}.py"
        p.write_text(script)
        run = subprocess.run([sys.executable, str(p)], capture_output=True, text=True,
                             timeout=600)
        assert run.returncode == 0, run.stderr
        out[name] = run.stdout.split()
    f_a, f_b = float(out["crfsuite"][0]), float(out["fstchunk"][0])
    assert abs(f_a - f_b) < 0.05
    assert out["crfsuite"][2:] == out["fstchunk"][2:]


def test_verbose_prints_a_line_per_iteration(pos_data, capsys):
    X, y = pos_data
    crf = CRF(c2=0.1, max_iterations=4, verbose=True).fit(X, y)
    lines = [l for l in capsys.readouterr().out.splitlines() if l.startswith("Iter ")]
    assert len(lines) == len(crf.training_log_.iterations) == 4
    assert "loss=" in lines[0] and "active=" in lines[0]


def test_model_filename_of_a_crfsuite_file_is_loaded(pos_data, tmp_path):
    """A file CRFsuite wrote is CRFsuite's model (it was refused before issue 46;
    more in test_dropin_sklearn_modelfile.py)."""
    X, y = pos_data
    path = str(tmp_path / "model.crfsuite")
    theirs = sklearn_crfsuite.CRF(c2=0.1, max_iterations=3, model_filename=path).fit(X, y)
    assert [list(p) for p in CRF(model_filename=path).predict(X[:5])] == \
        [list(p) for p in theirs.predict(X[:5])]


def test_the_drop_ins_docstring_example_runs_as_shown():
    """fstchunk.sklearn.CRF's API entry (docs/api/sklearn.md): its example prints what
    it shows."""
    import doctest

    import fstchunk.sklearn as module
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = doctest.DocTestFinder(recurse=False).find(module.CRF, "fstchunk.sklearn.CRF")
    assert tests and tests[0].examples
    for test in tests:
        runner.run(test)
    assert runner.failures == 0
