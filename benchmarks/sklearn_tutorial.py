"""sklearn-crfsuite's tutorial (its docs/CoNLL2002.ipynb, written afresh) on CoNLL-2002
Dutch, printing its figures as one JSON line: the tutorial's features and CRF, metrics,
RandomizedSearchCV, eli5, the model file read back by python-crfsuite, training_log_.

    python benchmarks/sklearn_tutorial.py CORPUS N_TRAIN N_TEST [N_ITER]

(N_ITER: the search's candidates, 3 by default; 0 leaves the search out.)

As written it runs sklearn-crfsuite; tests/test_dropin_sklearn_tutorial.py and
benchmarks/bench_sklearn_tutorial.py run it again with only the import changed
(``import fstchunk.sklearn as sklearn_crfsuite``, ``from fstchunk.sklearn import
metrics``)."""
import json
import sys
import time
from collections import Counter

import eli5
import pycrfsuite
import scipy.stats
from sklearn.metrics import make_scorer
from sklearn.model_selection import RandomizedSearchCV

import sklearn_crfsuite
from sklearn_crfsuite import metrics

PATH, N_TRAIN, N_TEST = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
N_ITER = int(sys.argv[4]) if len(sys.argv) > 4 else 3


def read(path):
    sents, cur = [], []
    for line in open(path, encoding="utf-8", errors="replace"):
        parts = line.split()
        if not parts:
            if cur:
                sents.append(cur)
            cur = []
        elif parts[0] != "-DOCSTART-":
            cur.append(tuple(parts))
    return sents + ([cur] if cur else [])


def word2features(sent, i):
    word, postag = sent[i][0], sent[i][1]
    features = {
        'bias': 1.0,
        'word.lower()': word.lower(),
        'word[-3:]': word[-3:],
        'word[-2:]': word[-2:],
        'word.isupper()': word.isupper(),
        'word.istitle()': word.istitle(),
        'word.isdigit()': word.isdigit(),
        'postag': postag,
        'postag[:2]': postag[:2],
    }
    if i > 0:
        word1, postag1 = sent[i-1][0], sent[i-1][1]
        features.update({
            '-1:word.lower()': word1.lower(),
            '-1:word.istitle()': word1.istitle(),
            '-1:word.isupper()': word1.isupper(),
            '-1:postag': postag1,
            '-1:postag[:2]': postag1[:2],
        })
    else:
        features['BOS'] = True
    if i < len(sent)-1:
        word1, postag1 = sent[i+1][0], sent[i+1][1]
        features.update({
            '+1:word.lower()': word1.lower(),
            '+1:word.istitle()': word1.istitle(),
            '+1:word.isupper()': word1.isupper(),
            '+1:postag': postag1,
            '+1:postag[:2]': postag1[:2],
        })
    else:
        features['EOS'] = True
    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]


def sent2labels(sent):
    return [label for token, postag, label in sent]


sents = read(PATH)
train_sents, test_sents = sents[:N_TRAIN], sents[N_TRAIN:N_TRAIN + N_TEST]
X_train = [sent2features(s) for s in train_sents]
y_train = [sent2labels(s) for s in train_sents]
X_test = [sent2features(s) for s in test_sents]
y_test = [sent2labels(s) for s in test_sents]

t0 = time.perf_counter()
crf = sklearn_crfsuite.CRF(
    algorithm='lbfgs',
    c1=0.1,
    c2=0.1,
    max_iterations=100,
    all_possible_transitions=True
)
crf.fit(X_train, y_train)
fit_seconds = time.perf_counter() - t0

labels = list(crf.classes_)
labels.remove('O')
t0 = time.perf_counter()
y_pred = crf.predict(X_test)
predict_seconds = time.perf_counter() - t0
f1 = metrics.flat_f1_score(y_test, y_pred, average='weighted', labels=labels)
sorted_labels = sorted(labels, key=lambda name: (name[1:], name[0]))
report = metrics.flat_classification_report(y_test, y_pred, labels=sorted_labels, digits=3)

# the model file, read back by python-crfsuite
tagger = pycrfsuite.Tagger()
tagger.open(crf.modelfile.name)
same = sum(tagger.tag(x) == list(p) for x, p in zip(X_test, y_pred)) / len(X_test)

# hyperparameter optimization
crf2 = sklearn_crfsuite.CRF(algorithm='lbfgs', max_iterations=100,
                            all_possible_transitions=True)
params_space = {'c1': scipy.stats.expon(scale=0.5), 'c2': scipy.stats.expon(scale=0.05)}
f1_scorer = make_scorer(metrics.flat_f1_score, average='weighted', labels=labels)
rs = RandomizedSearchCV(crf2, params_space, cv=2, verbose=0, n_jobs=1, n_iter=max(N_ITER, 1),
                        scoring=f1_scorer, random_state=0)
if N_ITER:                                   # 0: no search (the benchmark's timing runs)
    rs.fit(X_train, y_train)

# inspecting the model: eli5, transitions, state features
expl = eli5.explain_weights(crf, top=10)
text = eli5.format_as_text(expl)
trans = Counter(crf.transition_features_).most_common(5)
state = Counter(crf.state_features_).most_common(5)

log = crf.training_log_
print(json.dumps({
    "f1": f1, "report_rows": [line.split()[0] for line in report.splitlines()[2:2 + len(labels)]],
    "seq_accuracy": metrics.sequence_accuracy_score(y_test, y_pred),
    "pycrfsuite_agrees": same,
    "search_params": sorted(rs.best_params_) if N_ITER else [],
    "search_scores": list(rs.cv_results_["mean_test_score"]) if N_ITER else [],
    "eli5_error": expl.error, "eli5_targets": [t.target for t in expl.targets],
    "eli5_transition_labels": expl.transition_features.class_names,
    "top_transitions": [k for k, _ in trans], "top_state": [k for k, _ in state],
    "log_keys": sorted(log.last_iteration), "log_iterations": len(log.iterations),
    "featgen": [log.featgen_percent, log.featgen_num_features],
    "fit_seconds": fit_seconds, "predict_seconds": predict_seconds,
}))
