"""sklearn-crfsuite's tutorial in its own style (benchmarks/sklearn_tutorial.py: the
tutorial's features and CRF, metrics, RandomizedSearchCV, eli5, the model file read
back by python-crfsuite, training_log_), run with sklearn-crfsuite and again with only
the import changed (issue 46 §1: "done when").

F is compared on the 0-100 scale.  With only the import changed fstchunk trains the
IOB2-constrained CRF (``scheme="auto"``): another model, whose F on a slice this small
moved up to 4.5 points from CRFsuite's (46.4 vs 41.9 on 400 + 400 sentences; on the
whole corpus 75.08 vs 75.17, benchmarks/RESULTS.md, issue 35); so that run is checked
for everything but F's value, and a third run, whose CRF(...) calls also say
``scheme=None`` (CRFsuite's model), must give F within 0.2 points — and the same
search scores."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("sklearn_crfsuite")                 # the test extra installs these
pytest.importorskip("pycrfsuite")
pytest.importorskip("eli5")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "sklearn_tutorial.py")
IMPORTS = ("import sklearn_crfsuite\nfrom sklearn_crfsuite import metrics\n",
           "import fstchunk.sklearn as sklearn_crfsuite\nfrom fstchunk.sklearn import metrics\n")


def _run(tmp_path, name, text, corpus_path):
    path = tmp_path / f"tutorial_{name}.py"
    path.write_text(text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    run = subprocess.run([sys.executable, str(path), corpus_path, "400", "400", "2"],
                         capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(corpus, tmp_path_factory):
    corpus_path = corpus("conll2002", "ned.train")
    tmp = tmp_path_factory.mktemp("tutorial")
    text = open(SCRIPT, encoding="utf-8").read()
    assert text.count(IMPORTS[0]) == 1
    ours = text.replace(*IMPORTS)
    assert ours.count("all_possible_transitions=True") == 2
    unconstrained = ours.replace("all_possible_transitions=True",
                                 "all_possible_transitions=True, scheme=None")
    return {name: _run(tmp, name, t, corpus_path) for name, t in
            (("crfsuite", text), ("fstchunk", ours), ("fstchunk-none", unconstrained))}


def test_only_the_import_changed_gives_the_same_outputs(runs):
    a, b = runs["crfsuite"], runs["fstchunk"]
    assert b["pycrfsuite_agrees"] == a["pycrfsuite_agrees"] == 1.0
    for key in ("report_rows", "search_params", "eli5_error", "eli5_targets",
                "eli5_transition_labels", "log_keys", "log_iterations", "featgen"):
        assert b[key] == a[key], key
    assert len(b["search_scores"]) == len(a["search_scores"])
    assert len(b["top_transitions"]) == len(a["top_transitions"]) == 5
    assert b["top_state"][:2] == a["top_state"][:2]          # bias and BOS for O
    assert abs(100 * (b["f1"] - a["f1"])) <= 6.0            # another model (module doc)


def test_crfsuites_model_gives_crfsuites_numbers(runs):
    a, c = runs["crfsuite"], runs["fstchunk-none"]
    assert abs(100 * (c["f1"] - a["f1"])) <= 0.2
    assert abs(100 * (c["seq_accuracy"] - a["seq_accuracy"])) <= 0.2
    for x, y in zip(c["search_scores"], a["search_scores"]):
        assert abs(100 * (x - y)) <= 0.2
    assert c["pycrfsuite_agrees"] == 1.0 and c["log_keys"] == a["log_keys"]
    assert c["top_transitions"] == a["top_transitions"]
