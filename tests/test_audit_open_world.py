"""A new user's own features, labels and scores (audit B): what sklearn-crfsuite and
python-crfsuite accept gives the same model here, and what cannot be read is one
error naming where — never a plausible wrong number.

* ``fit``/``score``/``expected_f`` take iterators as sklearn-crfsuite does (read once:
  c2/N with N the real count, the dev figure taken on every iteration);
* ``score``/``expected_f`` refuse partial labels (they are no answer to count);
* numpy's bool is a feature value (python-crfsuite's reading), an int beyond float's
  range one error;
* :meth:`Lattice.from_scores` names the array it cannot read (ragged, strings,
  complex, a tensor that needs grad);
* JSONL score files with a byte-order mark and CRLF line ends read as plain ones,
  their marginals brute force;
* CRFsuite data for training: a label holding white space (a separator line with a
  stray space is one) refused at file:line.
"""

import itertools
import json

import numpy as np
import pytest

from fstchunk import Lattice
from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.core.errors import InputError
from fstchunk.models.scorefile import open_scores
from fstchunk.sklearn import CRF
from oracles import brute_force, brute_token_marginals, random_scores, stable_seed


def toy(scheme, n_seq=24, seed=0):
    """Sequences of word/length features and valid tags of ``scheme`` (None: labels)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_seq):
        n = int(rng.integers(1, 6))
        words = ["abcde"[k] * int(rng.integers(1, 3)) for k in rng.integers(0, 5, n)]
        X.append([{"w": w, "len": len(w), "first": i == 0} for i, w in enumerate(words)])
        if scheme is None:
            y.append([("N", "V", "D")[k] for k in rng.integers(0, 3, n)])
        else:
            chunks, t = [], 0
            while t < n:
                k = int(rng.integers(1, 3))
                if rng.random() < 0.6 and t + k <= n:
                    chunks.append((("X", "Y")[int(rng.integers(0, 2))], t, t + k))
                t += k
            y.append(enc.chunks_to_tags(chunks, n, scheme))
    return X, y


# ------------------------------------------------------------------ iterators
@pytest.mark.parametrize("scheme, params", [
    (None, {"c2": 1.0}),
    ("IOB2", {"c2": 0.5, "all_possible_transitions": True}),
    ("IOBES", {"c1": 0.2, "c2": 0.1}),
    ("BILOU", {"algorithm": "l2sgd", "c2": 1.0, "max_iterations": 5}),
])
def test_iterators_give_the_model_of_lists(scheme, params):
    """c2 and c1 are per N sequences: an iterator X must count them, not stand for 1."""
    X, y = toy(scheme)
    kw = dict(params, scheme=scheme or None, max_iterations=params.get("max_iterations", 60))
    a = CRF(**kw).fit(X, y)
    b = CRF(**kw).fit(iter(X), (ys for ys in y))
    np.testing.assert_allclose(b.model_.theta_, a.model_.theta_, rtol=1e-9, atol=1e-12)
    assert b.training_log_.last_iteration["loss"] == pytest.approx(
        a.training_log_.last_iteration["loss"], rel=1e-9)
    assert b.score(iter(X), iter(y)) == a.score(X, y)
    if scheme is not None:
        np.testing.assert_allclose(b.expected_f(iter(X), iter(y)), a.expected_f(X, y))


def test_iterator_loss_is_sklearn_crfsuites():
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    X, y = toy(None)
    ours = CRF(c2=1.0, scheme=None).fit(iter(X), y).training_log_.last_iteration
    theirs = sklearn_crfsuite.CRF(c2=1.0).fit(iter(X), iter(y)).training_log_.last_iteration
    assert ours["loss"] == pytest.approx(theirs["loss"], rel=1e-4)


@pytest.mark.parametrize("scheme", [None, "IOB2", "IOE2"])
def test_dev_iterators_are_read_once_for_every_iteration(scheme):
    """A dev figure per iteration, the same from an iterator as from lists (it used to
    be the figure of an exhausted iterator, 0, after the first)."""
    X, y = toy(scheme)
    Xd, yd = X[:10], y[:10]                       # held out or not, a figure above 0
    a = CRF(c2=0.5, scheme=scheme, max_iterations=6).fit(X, y, X_dev=Xd, y_dev=yd)
    b = CRF(c2=0.5, scheme=scheme, max_iterations=6).fit(X, y, X_dev=iter(Xd),
                                                          y_dev=iter(yd))
    dev_a = [e["dev"] for e in a.training_log_.iterations]
    assert [e["dev"] for e in b.training_log_.iterations] == dev_a
    assert max(dev_a[1:]) > 0                     # not a constant 0: the test can tell


@pytest.mark.parametrize("y_dev, match", [
    ([["O"]], r"len\(X\) = 2 but len\(y_dev\) = 1"),
    ([["O"], ["O", "O"]], r"y_dev\[0\] has 1 labels but X\[0\] has 2"),
])
def test_dev_labels_checked_naming_y_dev(y_dev, match):
    X, y = toy("IOB2")
    Xd = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}, {"w": "a"}]]
    with pytest.raises(InputError, match=match):
        CRF(max_iterations=2).fit(X, y, X_dev=Xd, y_dev=y_dev)


# ------------------------------------------------------------------ partial labels
@pytest.mark.parametrize("label", ["?", "B-X|O", "*-X", "O!", "B-*", "?~", {"B-X", "O"}])
@pytest.mark.parametrize("method", ["score", "expected_f"])
def test_scores_refuse_partial_labels(label, method):
    """A partial label allows several tags: token accuracy and expected F against it
    would be wrong numbers (score counted ``?`` as an error), so one error names it."""
    X, y = toy("IOB2")
    crf = CRF(c2=0.5, max_iterations=20).fit(X, y)
    i = next(k for k, ys in enumerate(y) if len(ys) >= 2)
    y_open = [list(ys) for ys in y]
    y_open[i][1] = label
    with pytest.raises(InputError, match=rf"y\[{i}\]\[1\].*partial label"):
        getattr(crf, method)(X, y_open)


# ------------------------------------------------------------------ feature values
@pytest.mark.parametrize("scheme", [None, "IOB2"])
def test_numpy_bools_are_feature_values(scheme):
    """python-crfsuite reads numpy's bool as 1.0 or 0.0 (its float); so does fstchunk:
    the same model as with Python's bool."""
    X, y = toy(scheme)
    Xn = [[{k: (np.bool_(v) if isinstance(v, bool) else v) for k, v in item.items()}
           for item in seq] for seq in X]
    a = CRF(c2=0.5, scheme=scheme, max_iterations=30).fit(X, y)
    b = CRF(c2=0.5, scheme=scheme, max_iterations=30).fit(Xn, y)
    np.testing.assert_array_equal(b.model_.theta_, a.model_.theta_)
    assert list(map(list, b.predict(Xn))) == list(map(list, a.predict(X)))


@pytest.mark.parametrize("item", [{"n": 10 ** 400}, {"n": -(10 ** 400)},
                                  {"w": "a", "n": 2 ** 1024}, {"g": {"n": 10 ** 309}}])
def test_int_beyond_float_is_one_error(item):
    with pytest.raises(InputError, match=r"X\[0\]\[0\]: attribute '(g:)?n'.*finite"):
        CRF().fit([[item]], [["O"]])


# ------------------------------------------------------------------ score arrays
def _bad(kind):
    if kind == "ragged":
        return lambda shape: [[0.0] * shape[-1], [0.0]] if len(shape) == 2 else [[0.0], 1.0]
    if kind == "strings":
        return lambda shape: np.full(shape, "a")
    if kind == "complex":
        return lambda shape: np.zeros(shape) + 1j
    torch = pytest.importorskip("torch")
    return lambda shape: torch.zeros(shape, requires_grad=True)


@pytest.mark.parametrize("kind", ["ragged", "strings", "complex", "tensor-with-grad"])
@pytest.mark.parametrize("name", ["emissions", "transitions", "start", "end"])
def test_from_scores_names_the_array_it_cannot_read(kind, name):
    """One InputError naming the array (complex scores lost their imaginary part
    silently; the others were numpy's or torch's own exceptions)."""
    tags, L, n = ("O", "B-X", "I-X"), 3, 2
    shapes = {"emissions": (n, L), "transitions": (L, L), "start": (L,), "end": (L,)}
    arrays = {k: np.zeros(s) for k, s in shapes.items()}
    arrays[name] = _bad(kind)(shapes[name])
    with pytest.raises(InputError, match=rf"^{name} "):
        Lattice.from_scores(tags, **arrays)


@pytest.mark.parametrize("scheme, types", [("IOB2", ("X",)), ("IOBES", ("X", "Y")),
                                           ("BILOU", ("X",)), ("IOE1", ("X", "Y"))])
def test_jsonl_with_bom_and_crlf_reads_as_plain(tmp_path, scheme, types):
    """A JSONL score file saved with a byte-order mark and CRLF line ends (Windows
    editors, PowerShell) is the same file: its lattices' token marginals are brute
    force, the tag list in a shuffled order."""
    rng = np.random.default_rng(stable_seed("bom", scheme))
    tags = list(enc.scheme_tags(scheme, types))
    rng.shuffle(tags)
    L, lines, models = len(tags), [], []
    for n in (1, 2, 4):
        em, tr, st, en = random_scores(rng, L, n, scale=2.0)
        models.append((n, em, tr, st, en))
        lines.append(json.dumps({"tags": tags, "scores": em.tolist(), "transitions": tr.tolist(),
                                 "start": st.tolist(), "end": en.tolist()}))
    path = tmp_path / "scores.jsonl"
    path.write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode("utf-8"))
    model, items = open_scores(str(path), scheme)
    lats = model.lattices(items)
    assert len(lats) == len(models)
    for lat, (n, em, tr, st, en) in zip(lats, models):
        seqs, _ = brute_force(tags, scheme, types, n, em, tr, st, en)
        want = brute_token_marginals(seqs, tags, n)
        got = lat.marginals()[:, [lat.tags.index(t) for t in tags]]
        np.testing.assert_allclose(got, want, atol=1e-12)


# ------------------------------------------------------------------ CRFsuite data
@pytest.mark.parametrize("line", ["O \tw=c", "B-NP\u00a0\tw=c", "B NP\tw=c", " \t \tw=c",
                                  " ", "  \t", "\u3000"])
@pytest.mark.parametrize("where", ["train", "dev"])
def test_crfsuite_label_with_white_space_named_at_its_line(tmp_path, capsys, line, where):
    """A label holding white space (a separator line with a stray space is one) is
    refused at its file:line, not as ``y[i][t]`` of lists the user never wrote."""
    good = tmp_path / "good.crfs"
    good.write_text("B-NP\tw=a\nO\tw=b\n\nO\tw=c\n\n", encoding="utf-8")
    bad = tmp_path / "bad.crfs"
    bad.write_text(f"B-NP\tw=a\nO\tw=b\n\nO\tw=a\n{line}\n\n", encoding="utf-8")
    train, dev = (bad, good) if where == "train" else (good, bad)
    code = main(["train", "--format", "crfsuite", "--train", str(train), "--dev", str(dev),
                 "--scheme", "none", "-o", str(tmp_path / "m.npz"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert "bad.crfs:5: label" in err and "white space" in err
    assert not (tmp_path / "m.npz").exists()
