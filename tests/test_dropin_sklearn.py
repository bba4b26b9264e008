"""fstchunk.sklearn.CRF against sklearn-crfsuite 0.5 itself (issue 46 §1): what a script
that swaps the import reads must be what sklearn-crfsuite gives."""

import pickle

import pytest
import sklearn_crfsuite                       # the test extra installs it (pyproject.toml)

from fstchunk.models.attribute_crf import AttributeCRF
from fstchunk.sklearn import CRF

X = [[{"w": "Jan"}, {"w": "loopt"}], [{"w": "in"}, {"w": "Den"}, {"w": "Haag"}],
     [{"w": "Piet"}, {"w": "en"}, {"w": "Marie"}]]
Y = [["B-PER", "O"], ["O", "B-LOC", "I-LOC"], ["B-PER", "O", "B-PER"]]


@pytest.mark.parametrize("y", [Y, [["NN", "VB"], ["IN", "NNP", "NNP"], ["NNP", "CC", "NNP"]]],
                         ids=["chunk-scheme", "plain-labels"])
def test_classes_are_the_labels_of_y_in_sklearn_crfsuites_order(y, tmp_path):
    ours = CRF(max_iterations=5).fit(X, y)
    theirs = sklearn_crfsuite.CRF(max_iterations=5).fit(X, y)
    assert ours.classes_ == theirs.classes_
    assert pickle.loads(pickle.dumps(ours)).classes_ == theirs.classes_
    path = str(tmp_path / "m.npz")
    ours.model_.save(path)
    assert CRF(model_filename=path).classes_ == theirs.classes_


def test_the_schemes_extra_tags_stay_internal():
    crf = CRF(max_iterations=5).fit(X, Y)
    assert "I-PER" not in crf.classes_ and "I-PER" in crf.model_.tags
    marg = crf.predict_marginals_single(X[0])          # a distribution over every tag
    assert set(marg[0]) == set(crf.model_.tags)
    assert sum(marg[0].values()) == pytest.approx(1.0, abs=1e-9)


def test_the_usual_report_counts_only_the_labels_of_y():
    """``labels = list(crf.classes_); labels.remove('O')``, macro F over them: a label
    y never had would add a 0 to the mean."""
    from sklearn.metrics import f1_score
    crf = CRF(max_iterations=20).fit(X, Y)
    theirs = sklearn_crfsuite.CRF(max_iterations=20).fit(X, Y)
    labels = list(crf.classes_)
    labels.remove("O")
    flat = [t for s in Y for t in s]
    ours_f = f1_score(flat, [t for s in crf.predict(X) for t in s], labels=labels,
                      average="macro", zero_division=0)
    their_f = f1_score(flat, [t for s in theirs.predict(X) for t in s], labels=labels,
                       average="macro", zero_division=0)
    assert ours_f == pytest.approx(their_f, abs=1e-9)


def test_a_model_saved_before_the_record_lists_all_its_tags(tmp_path):
    crf = CRF(max_iterations=5).fit(X, Y)
    model: AttributeCRF = crf.model_
    model.settings.pop("classes")
    assert model.classes == list(model.tags)
