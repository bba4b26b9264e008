"""eli5 explains fstchunk.sklearn.CRF as it explains sklearn_crfsuite.CRF (issue 46 §1):
``explain_weights`` and ``show_weights`` (its HTML in IPython) with eli5 imported
before or after fstchunk, the same text for the same weights, forbidden transitions
shown as -inf."""

import subprocess
import sys
import textwrap

import pytest

eli5 = pytest.importorskip("eli5")                    # the test extra installs it
sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")

from fstchunk.sklearn import CRF  # noqa: E402
from fstchunk.sklearn.eli5 import register, sorted_for_ner  # noqa: E402
from test_sklearn_crf import corpus_xy  # noqa: E402


@pytest.fixture(scope="module")
def ned(corpus):
    return corpus_xy(corpus("conll2002", "ned.train"), 150)


def test_explains_the_same_weights_as_for_sklearn_crfsuite(ned, tmp_path):
    """fstchunk's CRF reading sklearn-crfsuite's model file: eli5's text is the same
    as for sklearn-crfsuite's estimator itself."""
    X, y = ned
    path = str(tmp_path / "m.crfsuite")
    theirs = sklearn_crfsuite.CRF(c1=0.1, c2=0.1, max_iterations=20,
                                  model_filename=path).fit(X, y)
    ours = CRF(model_filename=path)
    for kw in ({"top": 5}, {"top": 3, "targets": ["B-PER", "I-PER"]},
               {"top": 4, "feature_re": "^word"}):
        a = eli5.format_as_text(eli5.explain_weights(ours, **kw))
        b = eli5.format_as_text(eli5.explain_weights(theirs, **kw))
        assert "not supported" not in a
        assert a == b
        shown = eli5.show_weights(ours, **kw)             # IPython's HTML (test extra)
        assert shown.data == eli5.show_weights(theirs, **kw).data


def test_forbidden_transitions_show_as_minus_infinity(ned):
    X, y = ned
    crf = CRF(c2=0.1, max_iterations=10).fit(X, y)
    expl = eli5.explain_weights(crf, top=3)
    assert expl.error is None
    names = expl.transition_features.class_names
    coef = expl.transition_features.coef
    assert coef[names.index("O"), names.index("I-PER")] == float("-inf")
    assert coef[names.index("B-PER"), names.index("I-PER")] > float("-inf")
    assert names == sorted_for_ner(crf.classes_)
    html = eli5.show_weights(crf, top=3).data
    assert "-inf" in html and "B-PER" in html


@pytest.mark.parametrize("order", ["eli5-first", "fstchunk-first"])
def test_registered_whichever_is_imported_first(order):
    first, second = "import eli5", "from fstchunk.sklearn import CRF"
    if order == "fstchunk-first":
        first, second = second, first
    script = textwrap.dedent(f"""
        {first}
        {second}
        X = [[{{"w": "Jan"}}, {{"w": "loopt"}}], [{{"w": "in"}}, {{"w": "Den"}}, {{"w": "Haag"}}]]
        y = [["B-PER", "O"], ["O", "B-LOC", "I-LOC"]]
        crf = CRF(max_iterations=5).fit(X, y)
        e = eli5.explain_weights(crf)
        print(e.error, e.method, len(e.targets))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["None", "CRF", "4"]


def test_register_by_hand_says_eli5_is_there():
    assert register() is True
