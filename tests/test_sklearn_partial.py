"""Partial labels in y for fstchunk.sklearn.CRF (issue 36): sets of labels and the
tag-column syntax train the marginal likelihood log Z − log Z_A, checked against brute
force over every tag sequence (valid in the scheme, allowed by the labels); one label
per token is exactly ML; the refusals name y[i][t]."""

import itertools

import numpy as np
import pytest

from fstchunk.core.errors import InputError, SchemeError
from fstchunk.learn import objectives as lo
from fstchunk.learn.loss import Loss
from fstchunk.models.attribute_crf import AttributeCRF
from fstchunk.schemes import encodings as enc
from fstchunk.sklearn import CRF

WORDS = ["Jan", "Peeters", "zegt", "in", "Gent", "de", "bank", "Piet"]
TYPES = ("PER", "LOC")


def random_data(rng, scheme, k=6, longest=4):
    """X (a word and a random number attribute per token) and a valid y in ``scheme``."""
    X, y = [], []
    for _ in range(k):
        n = int(rng.integers(1, longest + 1))
        chunks, i = [], 0
        while i < n:
            if rng.random() < 0.5:
                j = int(rng.integers(i + 1, n + 1))
                chunks.append((TYPES[rng.integers(2)], i, j))
                i = j
            else:
                i += 1
        y.append(enc.chunks_to_tags(chunks, n, scheme))
        X.append([{"w": WORDS[rng.integers(len(WORDS))], "x": float(rng.normal()),
                   "bias": 1.0} for _ in range(n)])
    return X, y


def open_label(rng, tag, tags):
    """A constraint that allows the gold ``tag`` (a set, ?, a wildcard, an | string)."""
    kind = rng.integers(6)
    others = [t for t in tags if rng.random() < 0.3]
    if kind == 0:
        return tag
    if kind == 1:
        return "?"
    if kind == 2:
        return set([tag] + others)
    if kind == 3:
        return "|".join(dict.fromkeys([tag] + others))
    if tag == "O":
        return "O!" if kind == 4 else ("O", *others)
    prefix, ctype = tag.split("-", 1)
    return f"{prefix}-*" if kind == 4 else f"*-{ctype}"


def runs(ys):
    """The runs of labels ending in ~ (spans not one chunk), by hand."""
    flags = [isinstance(x, str) and len(x) > 1 and x.endswith("~") for x in ys] + [False]
    start = None
    for i, f in enumerate(flags):
        if f and start is None:
            start = i
        elif not f and start is not None:
            yield start, i - 1
            start = None


def mark_span(rng, ys, gold, scheme):
    """``ys`` with a random span marked ~ (sets become ?), where the gold is not
    exactly one chunk."""
    n = len(ys)
    chunks = {(a, b) for _, a, b in enc.tags_to_chunks(gold, scheme)}
    t = int(rng.integers(n))
    u = int(rng.integers(t, n))
    if (t, u + 1) in chunks:
        return ys
    return [(x if isinstance(x, str) else "?") + "~" if t <= i <= u else x
            for i, x in enumerate(ys)]


def oracle_allows(label, tag):
    """The constraint read by hand (no annotation code)."""
    if isinstance(label, (set, frozenset, tuple, list)):
        return tag in label
    label = label[:-1] if len(label) > 1 and label.endswith("~") else label
    if label == "?":
        return True
    for item in label.split("|"):
        if item in ("O!", "O") and tag == "O":
            return True
        if item.endswith("-*") and tag != "O" and tag.startswith(item[:-1]):
            return True
        if item.startswith("*-") and tag != "O" and tag.endswith(item[1:]):
            return True
        if item == tag:
            return True
    return False


def brute(model, X, y, theta):
    """(Σ_i log Z − log Z_A, its gradient over θ) by enumerating the tag sequences."""
    L, P, tags = model.L, model.P, model.tags_
    W = np.zeros((len(model.fmap_), L))
    W[model.pairs_[:, 0], model.pairs_[:, 1]] = theta[:P]
    trans = theta[P:P + L * L].reshape(L, L)
    value, grad = 0.0, np.zeros_like(theta)
    for xs, ys in zip(X, y):
        F = model.fmap_.transform([xs]).toarray()
        E = F @ W
        n = len(xs)
        scores, phis, ok = [], [], []
        spans = tuple(runs(ys))
        for seq in itertools.product(range(L), repeat=n):
            t = [tags[j] for j in seq]
            if model.space_.chunked and not enc.is_valid(t, model.scheme_):
                continue
            phi = np.zeros_like(theta)
            for k, (a, lab) in enumerate(model.pairs_):
                phi[k] = sum(F[i, a] for i in range(n) if seq[i] == lab)
            for i in range(1, n):
                phi[P + seq[i - 1] * L + seq[i]] += 1
            scores.append(sum(E[i, seq[i]] for i in range(n))
                          + sum(trans[seq[i - 1], seq[i]] for i in range(1, n)))
            phis.append(phi)
            chunks = enc.tags_to_chunks(t, model.scheme_) if model.space_.chunked else []
            ok.append(all(oracle_allows(lab, tg) for lab, tg in zip(ys, t)) and
                      not any((a, b) == (s0, s1 + 1) for _, a, b in chunks for s0, s1 in spans))
        s, phis, ok = np.array(scores), np.array(phis), np.array(ok)
        p = np.exp(s - np.logaddexp.reduce(s))
        pa = np.exp(s[ok] - np.logaddexp.reduce(s[ok]))
        value += np.logaddexp.reduce(s) - np.logaddexp.reduce(s[ok])
        grad += p @ phis - pa @ phis[ok]
    return value, grad


@pytest.mark.parametrize("scheme,seed", [("IOB2", 0), ("IOBES", 1), ("BILOU", 2),
                                         ("IOB2", 3)])
def test_marginal_likelihood_value_and_gradient_are_brute_force(scheme, seed):
    rng = np.random.default_rng(seed)
    X, gold = random_data(rng, scheme)
    tags = enc.scheme_tags(scheme, TYPES)
    y = [[open_label(rng, t, tags) for t in g] for g in gold]
    y[0][0] = "?"                                           # some token is open
    y = [mark_span(rng, ys, g, scheme) if k % 2 else ys     # spans not one chunk
         for k, (ys, g) in enumerate(zip(y, gold))]
    assert any(next(runs(ys), None) for ys in y)
    model = AttributeCRF(scheme, all_possible_transitions=True)
    data = model._prepare((X, y))
    assert model.scheme_ == scheme and set(model.tags_) <= set(tags)
    for sc in (0.3, 3.0):
        theta = np.where(model.free, rng.normal(scale=sc, size=model.theta_.shape), 0.0)
        value, grad = model.objective_function("ml", data, 0.0)(theta)
        want, wgrad = brute(model, X, y, theta)
        assert value == pytest.approx(want / len(X), rel=1e-10, abs=1e-10)
        free = model.free
        np.testing.assert_allclose(grad[free], wgrad[free] / len(X), rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES"])
@pytest.mark.parametrize("params", [{"c2": 0.5}, {"c1": 0.2, "c2": 0.1},
                                    {"all_possible_transitions": True, "min_freq": 1}])
def test_every_label_a_singleton_set_is_full_supervision(scheme, params):
    rng = np.random.default_rng(7)
    X, y = random_data(rng, scheme, k=12)
    kinds = [set, frozenset, tuple, list, lambda t: t + "|" + t]
    sets = [[kinds[(i + j) % 5]([t]) if (i + j) % 5 < 4 else kinds[4](t)
             for j, t in enumerate(ys)] for i, ys in enumerate(y)]
    a = CRF(max_iterations=40, **params).fit(X, y)
    b = CRF(max_iterations=40, **params).fit(X, sets)
    assert b.classes_ == a.classes_ and b.scheme_ == a.scheme_ == scheme
    assert np.array_equal(a.model_.pairs_, b.model_.pairs_)
    assert np.array_equal(a.model_.transitions_, b.model_.transitions_)
    np.testing.assert_allclose(b.model_.theta_, a.model_.theta_, rtol=0, atol=1e-8)
    la, lb = a.training_log_.iterations, b.training_log_.iterations
    assert len(la) == len(lb)
    assert [e["loss"] for e in lb] == pytest.approx([e["loss"] for e in la], rel=1e-10)


@pytest.mark.parametrize("scheme", ["IOB2", None])
def test_a_sentence_of_question_marks_adds_zero_loss(scheme):
    rng = np.random.default_rng(3)
    X, y = random_data(rng, "IOB2", k=5)
    y = [list(ys) for ys in y]
    anything = "?" if scheme else {t for ys in y for t in ys}   # ? needs a chunk scheme
    y[2] = [anything] * len(y[2])
    model = AttributeCRF(scheme)
    data = model._prepare((X, y))
    theta = np.where(model.free, rng.normal(size=model.theta_.shape), 0.0)
    values, grads = model.statistics(data.subset([2]), theta, Loss(lo.ML))
    assert values[0] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(grads, 0.0, atol=1e-12)
    rest = model.statistics(data.subset([0, 1, 3, 4]), theta, Loss(lo.ML))[0]
    assert rest[0] > 0


def test_auto_detects_the_scheme_of_the_named_tags_and_labels_any_chain():
    X = [[{"w": w} for w in s] for s in (["Jan", "Peeters"], ["in", "Gent"], ["de"])]
    crf = CRF(max_iterations=5).fit(X, [["B-PER", "E-PER"], ["O", "*-LOC"], ["?"]])
    assert crf.scheme_ == "IOBES" and set(crf.model_.tags_) == set(enc.scheme_tags(
            "IOBES", ["PER", "LOC"]))
    # classes_: the labels y names ("?" names none, "*-LOC" every LOC tag)
    assert set(crf.classes_) == {"B-PER", "E-PER", "O"} | set(enc.scheme_tags(
            "IOBES", ["LOC"]))
    pos = CRF(max_iterations=5).fit(X, [["NNP", {"NNP", "NN"}], ["IN", {"NNP", "NN", "IN", "DT"}],
                                        [{"DT", "IN"}]])
    assert pos.scheme_ == "none" and pos.classes_ == ["NNP", "NN", "IN", "DT"]
    assert all(len(p) == len(x) for p, x in zip(pos.predict(X), X))


def test_a_fitted_model_reads_partial_labels_in_its_own_labels(tmp_path):
    rng = np.random.default_rng(5)
    X, y = random_data(rng, "IOB2", k=8)
    y = [["?" if rng.random() < 0.4 else t for t in ys] for ys in y]
    model = AttributeCRF("IOB2", max_iter=5)
    first = model._prepare((X, y))
    again = model.training_data((X, y))
    assert all(np.array_equal(a, b) for a, b in zip(first.gold.masks, again.gold.masks))
    model.fit(X, y)
    path = tmp_path / "m.npz"
    model.save(path)
    loaded = AttributeCRF.load(path)
    np.testing.assert_array_equal(loaded.theta_, model.theta_)
    with pytest.raises(SchemeError, match=r"y\[0\]\[0\]: 'B-ORG' is not among"):
        model.training_data((X[:1], [["B-ORG"] + ["?"] * (len(X[0]) - 1)]))


@pytest.mark.parametrize("y0,error,match", [
    ([{"I-PER"}, "O"], SchemeError, r"y\[0\]\[0\]: the annotation contradicts IOB2"),
    (["O", "I-LOC|I-PER"], SchemeError, r"y\[0\]\[1\]: the annotation contradicts IOB2"),
    (["B-PER", set()], InputError, r"y\[0\]\[1\]: an empty set"),
    (["B-PER", {"I-PER", 3}], InputError, r"y\[0\]\[1\]: label 3 of the set"),
    (["B-PER", {"E-PER"}], SchemeError, r"y\[0\]\[1\]: 'E-PER' is not a tag of IOB2"),
    (["B-PER", "X-*"], SchemeError, r"y\[0\]\[1\]: annotation item 'X-\*'"),
])
def test_labels_the_scheme_cannot_satisfy_are_named(y0, error, match):
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}]]
    with pytest.raises(error, match=match):
        CRF(scheme="IOB2").fit(X, [y0, ["B-LOC"]])


@pytest.mark.parametrize("params,name", [({"algorithm": "ap"}, "algorithm='ap'"),
                                         ({"algorithm": "pa"}, "algorithm='pa'"),
                                         ({"algorithm": "arow"}, "algorithm='arow'"),
                                         ({"algorithm": "l2sgd"}, "algorithm='l2sgd'"),
                                         ({"objective": "meu"}, "objective='meu'"),
                                         ({"objective": "max-margin", "c2": 1.0},
                                          "objective='max-margin'")])
def test_other_trainers_refuse_partial_labels_naming_the_option_and_position(params, name):
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}, {"w": "d"}]]
    y = [["B-PER", "I-PER"], ["O", {"B-LOC", "O"}]]
    with pytest.raises(InputError, match=rf"y\[1\]\[1\] = .* is a partial label.*{name}"):
        CRF(**params).fit(X, y)


def test_held_out_labels_must_be_full_and_wildcards_need_a_scheme():
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}]]
    y = [["B-PER", "?"], ["B-LOC"]]
    with pytest.raises(InputError, match=r"y_dev\[1\]\[0\] = 'B-\*' is a partial label"):
        CRF(max_iterations=2).fit(X, y, X_dev=X, y_dev=[["B-PER", "O"], ["B-*"]])
    with pytest.raises(SchemeError, match=r"'\*-x' needs a chunk scheme"):
        CRF(scheme=None).fit(X, [["a", "*-x"], ["b"]])
    with pytest.raises(InputError, match="name no label"):
        CRF().fit(X, [["?", "?"], ["?"]])
    with pytest.raises(InputError, match="rule out no label anywhere"):
        CRF().fit(X, [[{"a", "b"}, {"a", "b"}], [("b", "a")]])


def test_two_workers_sum_to_one_process():
    """The partial statistics are additive: workers=2 trains the same model."""
    rng = np.random.default_rng(11)
    X, gold = random_data(rng, "IOB2", k=16)
    tags = enc.scheme_tags("IOB2", TYPES)
    y = [[open_label(rng, t, tags) for t in g] for g in gold]
    y[1] = mark_span(rng, y[1], gold[1], "IOB2")
    a = CRF(c2=0.1, max_iterations=15).fit(X, y)
    b = CRF(c2=0.1, max_iterations=15, workers=2).fit(X, y)
    np.testing.assert_allclose(b.model_.theta_, a.model_.theta_, rtol=0, atol=1e-7)


@pytest.mark.parametrize("scheme", ["auto", None])
@pytest.mark.parametrize("label", ["Number=Sing|Person=3", "a|b", "O!", "Gender=Fem|Case=Nom~"])
def test_a_string_outside_a_chunk_scheme_is_refused_or_read_literally(scheme, label):
    """Outside a chunk scheme a column-syntax string is ambiguous (a morphological tag
    holds |): refused naming y[i][t], or with literal_labels one label, the model of
    the same data with that label renamed."""
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}, {"w": "a"}], [{"w": "b"}]]
    y = [[label, "POS=NOUN"], ["POS=NOUN", label], ["a"]]
    with pytest.raises((InputError, SchemeError), match=r"y\[0\]\[0\]: .* is ambiguous"):
        CRF(max_iterations=5, scheme=scheme).fit(X, y)
    lit = CRF(max_iterations=20, scheme=scheme, literal_labels=True).fit(X, y)
    plain = CRF(max_iterations=20, scheme=scheme).fit(
        X, [[t if t != label else "L" for t in ys] for ys in y])
    assert lit.classes_ == [label if t == "L" else t for t in plain.classes_]
    assert all(type(t) is str for t in lit.classes_)
    np.testing.assert_array_equal(lit.model_.theta_, plain.model_.theta_)
    assert [list(p) for p in lit.predict(X)] == [[label if t == "L" else t for t in p]
                                                 for p in plain.predict(X)]
    assert lit.score(X, y) == plain.score(X, [[t if t != label else "L" for t in ys]
                                              for ys in y])
    with pytest.raises(InputError, match="literal_labels must be True or False"):
        CRF(literal_labels="yes").fit(X, y)


def test_literal_labels_in_a_chunk_scheme_are_tags_of_their_own_type():
    X = [[{"w": "a"}, {"w": "b"}]]
    lit = CRF(max_iterations=5, scheme="IOB2", literal_labels=True).fit(X, [["B-PER|O", "O"]])
    assert lit.classes_ == ["B-PER|O", "O"]                          # the labels of y
    assert lit.model_.tags_ == ("B-PER|O", "O", "I-PER|O")           # the type 'PER|O'
    crf = CRF(max_iterations=5, scheme="IOB2").fit(X, [["B-PER|O", "O"]])
    assert crf.classes_ == ["B-PER", "O"]                           # the labels y names
    assert crf.model_.tags_ == ("B-PER", "O", "I-PER")                 # the column syntax
