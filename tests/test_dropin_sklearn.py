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
    assert "I-PER" not in crf.classes_ and "I-PER" in crf.model_.tags_
    marg = crf.predict_marginals_single(X[0])          # a distribution over every tag
    assert set(marg[0]) == set(crf.model_.tags_)
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
    model.settings_.pop("classes")
    assert model.classes == list(model.tags_)


# ---------------------------------------------------------------- metrics and scorers
from sklearn_crfsuite import metrics as their_metrics  # noqa: E402

from fstchunk.core.errors import InputError  # noqa: E402
from fstchunk.sklearn import metrics, scorers  # noqa: E402

GOLD = [["B-PER", "O"], ["O", "B-LOC", "I-LOC"], ["B-PER", "O", "B-PER", "O"]]
PRED = [["B-PER", "O"], ["O", "B-PER", "I-LOC"], ["O", "O", "B-PER", "O"]]
LABELS = ["B-PER", "B-LOC", "I-LOC"]


@pytest.mark.parametrize("name,kwargs", [
    ("flat_accuracy_score", {}),
    ("flat_f1_score", {"average": "weighted", "labels": LABELS}),
    ("flat_f1_score", {"average": "macro", "labels": LABELS, "zero_division": 0}),
    ("flat_precision_score", {"average": "micro", "labels": LABELS}),
    ("flat_recall_score", {"average": None, "labels": LABELS}),
    ("flat_fbeta_score", {"beta": 0.5, "average": "weighted", "labels": LABELS}),
    ("flat_classification_report", {"labels": LABELS, "digits": 3}),
    ("flat_classification_report", {"labels": LABELS, "output_dict": True}),
    ("sequence_accuracy_score", {}),
])
def test_metrics_give_sklearn_crfsuites_results(name, kwargs):
    ours = getattr(metrics, name)(GOLD, PRED, **kwargs)
    theirs = getattr(their_metrics, name)(GOLD, PRED, **kwargs)
    if isinstance(ours, (str, dict)):
        assert ours == theirs
    else:
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_metrics_read_predict_output_and_count_whole_sequences():
    crf = CRF(max_iterations=20).fit(X, Y)
    pred = crf.predict(X)                                  # an object array of lists
    assert metrics.flat_accuracy_score(Y, pred) == their_metrics.flat_accuracy_score(Y, pred)
    same = [["O", "O"], ["B-PER", "O"]]                    # one length: sequences, not tokens
    assert metrics.sequence_accuracy_score(same, [["O", "O"], ["O", "O"]]) == 0.5
    assert metrics.sequence_accuracy_score([], []) == 0


def test_metrics_refuse_sequences_that_do_not_pair_up():
    with pytest.raises(InputError, match="sequence 1: 3 gold labels"):
        metrics.flat_f1_score(GOLD, [PRED[0], PRED[1][:2], PRED[2]], average="micro")
    with pytest.raises(InputError, match="3 gold sequences"):
        metrics.flat_accuracy_score(GOLD, PRED[:2])


def test_chunk_scores_are_conllevals_as_fractions():
    from fstchunk.evaluation.chunks import evaluate
    report = evaluate(GOLD, PRED)
    assert metrics.chunk_f1_score(GOLD, PRED) == pytest.approx(report.overall.f / 100)
    # found PER, PER, LOC (a chunk opened by I-LOC, as conlleval), PER; 2 correct of 4 gold
    assert metrics.chunk_precision_score(GOLD, PRED) == pytest.approx(2 / 4)
    assert metrics.chunk_recall_score(GOLD, PRED) == pytest.approx(2 / 4)
    assert metrics.chunk_classification_report(GOLD, PRED) == report.conlleval()


def test_scorers_work_in_cross_validation():
    from sklearn.model_selection import cross_val_score
    from sklearn_crfsuite import scorers as their_scorers
    Xs, Ys = X * 2, Y * 2
    for name in ("flat_accuracy", "sequence_accuracy"):
        ours = cross_val_score(CRF(max_iterations=20), Xs, Ys, cv=2,
                               scoring=getattr(scorers, name))
        assert ours.shape == (2,) and ((0 <= ours) & (ours <= 1)).all()
        est = CRF(max_iterations=20).fit(X, Y)
        assert getattr(scorers, name)(est, Xs, Ys) == pytest.approx(   # ragged lengths
            getattr(their_scorers, name)(est, Xs, Ys), abs=1e-12)
    f = cross_val_score(CRF(max_iterations=20), Xs, Ys, cv=2, scoring=scorers.chunk_f1)
    assert ((0 <= f) & (f <= 1)).all()


# ---------------------------------------------------------------- ap, pa, arow
import warnings  # noqa: E402

from fstchunk.core.errors import FstchunkWarning  # noqa: E402


@pytest.mark.parametrize("algorithm,kwargs", [("ap", {}), ("ap", {"epsilon": 0.5}),
                                              ("pa", {})])
def test_ap_and_pa_stop_as_crfsuite(algorithm, kwargs):
    """CRFsuite stops ap and pa when loss/N < ε: never for ε = 0 (all 100 passes, where
    fstchunk stopped after a pass without mistakes), at once for a loose ε."""
    ours = CRF(algorithm=algorithm, **kwargs).fit(X, Y)
    theirs = sklearn_crfsuite.CRF(algorithm=algorithm, **kwargs).fit(X, Y)
    assert len(ours.training_log_.iterations) == len(theirs.training_log_.iterations)


def test_ap_logs_crfsuites_loss_the_sum_of_error_ratios(monkeypatch):
    """train_averaged_perceptron.c logs loss = Σ_i (wrong labels of ŷ_i) / len_i over
    the pass (ŷ_i by the weights of that moment), not the count of mistaken sentences."""
    from fstchunk.models import perceptron
    seen, run_pass = [], perceptron.AveragedPerceptron.run_pass

    def spy(self):
        report = run_pass(self)
        seen.append(report.error_ratio)
        return report
    monkeypatch.setattr(perceptron.AveragedPerceptron, "run_pass", spy)
    log = CRF(algorithm="ap", max_iterations=5).fit(X, Y).training_log_
    assert [e["loss"] for e in log.iterations] == pytest.approx(seen, rel=1e-12)
    assert any(0 < x != round(x) for x in seen)         # a ratio, not a count


def test_arow_stops_at_a_pass_without_loss_as_crfsuite():
    """train_arow.c tests sum_loss/N <= ε: a separable set stops early at ε = 0."""
    ours = CRF(algorithm="arow").fit(X, Y)
    theirs = sklearn_crfsuite.CRF(algorithm="arow").fit(X, Y)
    assert len(theirs.training_log_.iterations) < 100
    assert len(ours.training_log_.iterations) < 100


@pytest.mark.parametrize("algorithm", ["ap", "pa", "arow"])
def test_marginals_of_margin_trained_models_are_normalised_scores_with_one_warning(
        algorithm):
    crf = CRF(algorithm=algorithm, scheme=None).fit(X, Y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        marg = crf.predict_marginals(X)
        crf.predict_marginals_single(X[0])
        crf.tagger_.set(X[0])
        p = crf.tagger_.marginal("O", 1)
    assert [w.category for w in caught] == [FstchunkWarning]
    assert "crf.calibrate(" in str(caught[0].message)
    for seq in marg:
        for token in seq:
            assert sum(token.values()) == pytest.approx(1.0, abs=1e-9)
    assert p == pytest.approx(marg[0][1]["O"], abs=1e-12)
    lat = crf.model_.lattices([X[0]], require_probabilities=False)[0]   # exp(θ·φ)/Z, T = 1
    assert crf.model_.settings_.get("temperature", 1.0) == 1.0
    assert marg[0][0]["B-PER"] == pytest.approx(
        float(lat.marginals()[0, list(crf.model_.tags_).index("B-PER")]), abs=1e-12)
    assert crf.predict_single(X[1]) == crf.tagger_.tag(X[1]) == list(crf.predict(X)[1])
