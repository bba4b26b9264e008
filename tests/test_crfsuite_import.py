"""``fstchunk import crfsuite`` and ``--format crfsuite`` against python-crfsuite itself:
a model trained by pycrfsuite.Trainer on CoNLL-2000, imported with --scheme none, gives
CRFsuite's Viterbi tags and its marginals (1e-6; its probabilities 1e-9); imported with
the chunk scheme, CRFsuite's Viterbi on every sentence where it is valid, and
otherwise CRFsuite's distribution restricted to valid sequences; the CLI's decode,
expected, eval and train on CRFsuite data; refusals naming the file and the label."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from fstchunk.core.errors import InputError, ModelFileError
from fstchunk.decoding.decode import decode_map
from fstchunk.io.conll import read_conll
from fstchunk.io.crfsuite import Sequence, read_reference, write_data
from fstchunk.models import load_model
from fstchunk.models.crfsuite_import import IMPOSSIBLE, from_crfsuite
from fstchunk.models.features import token_features
from fstchunk.schemes import encodings as enc

pycrfsuite = pytest.importorskip("pycrfsuite")
DATA = os.environ.get("FSTCHUNK_DATA", "/work/shared/data")
pytestmark = pytest.mark.skipif(not os.path.isdir(DATA), reason="FSTCHUNK_DATA not found")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the slices: big enough for CRFsuite's Viterbi to be invalid on some test sentences
TRAIN, TEST = 250, 300


def _items(s):
    return [dict.fromkeys(f, 1.0) for f in token_features(s.column(0), s.column(1), "tmpt1")]


def _train(path, sents, column=2, **params):
    trainer = pycrfsuite.Trainer(verbose=False)
    for s in sents:
        trainer.append(pycrfsuite.ItemSequence(_items(s)), s.column(column))
    trainer.set_params({"c1": 0.1, "c2": 0.01, "max_iterations": 50,
                        "feature.possible_transitions": True, **params})
    trainer.train(str(path))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    return tagger


@pytest.fixture(scope="module")
def chunker(tmp_path_factory):
    d = tmp_path_factory.mktemp("import")
    train = read_conll(os.path.join(DATA, "conll2000/train.txt"))[:TRAIN]
    test = read_conll(os.path.join(DATA, "conll2000/test.txt"))[:TEST]
    tagger = _train(d / "chunk.crfsuite", train)
    write_data(d / "test.crfsuite", [Sequence(s.column(2), _items(s)) for s in test])
    write_data(d / "train.crfsuite", [Sequence(s.column(2), _items(s)) for s in train])
    return d, tagger, test


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "fstchunk", *args], capture_output=True,
                          text=True, env=env)


def _imported(d, scheme):
    out = d / f"imported-{scheme}.npz"
    r = _cli("import", "crfsuite", str(d / "chunk.crfsuite"), "--scheme", scheme, "-o",
             str(out))
    assert r.returncode == 0, r.stderr
    return load_model(out)


def test_scheme_none_is_crfsuite_itself(chunker):
    """MAP = CRFsuite's Viterbi, token marginals to 1e-6, path probabilities to 1e-9."""
    d, tagger, test = chunker
    model = _imported(d, "none")
    assert model.kind == "attribute-crf" and model.scheme_ == "none"
    assert list(model.tags_) == tagger.labels()
    X = [_items(s) for s in test]
    worst = 0.0
    for x, lat in zip(X, model.lattices(X)):
        tagger.set(pycrfsuite.ItemSequence(x))
        viterbi = tagger.tag()
        assert list(decode_map(lat).tags) == viterbi
        theirs = np.array([[tagger.marginal(y, t) for y in model.tags_] for t in range(len(x))])
        worst = max(worst, float(np.abs(lat.marginals() - theirs).max()))
        assert math.isclose(math.exp(lat.log_prob(viterbi)), tagger.probability(viterbi),
                            rel_tol=1e-9)
    assert worst <= 1e-6


def test_chunk_scheme_is_crfsuite_restricted_to_valid_sequences(chunker):
    """With IOB2: MAP = CRFsuite's Viterbi wherever that is valid; everywhere the
    probability of a valid sequence is CRFsuite's divided by CRFsuite's mass on valid
    sequences (one constant per sentence), and fstchunk's MAP is valid."""
    d, tagger, test = chunker
    model = _imported(d, "IOB2")
    added = model.settings_["impossible_tags"]
    assert list(model.tags_) == tagger.labels() + added
    X = [_items(s) for s in test]
    invalid = 0
    for s, x, lat in zip(test, X, model.lattices(X)):
        tagger.set(pycrfsuite.ItemSequence(x))
        viterbi = tagger.tag()
        ours = list(decode_map(lat).tags)
        assert enc.is_valid(ours, "IOB2")
        if enc.is_valid(viterbi, "IOB2"):
            assert ours == viterbi, s.where(0)
        else:
            invalid += 1
            assert tagger.probability(ours) <= tagger.probability(viterbi)
        gold = s.column(2)
        shift = [lat.log_prob(y) - math.log(tagger.probability(y)) for y in (ours, gold)
                 if enc.is_valid(y, "IOB2")]
        assert max(shift) - min(shift) < 1e-9 and min(shift) >= -1e-12
        if added:                               # the impossible tags carry no mass
            cols = [model.tags_.index(t) for t in added]
            assert lat.marginals()[:, cols].max() == 0.0
    # the count the issue asks for (on the full test set: benchmarks/bench_crfsuite.py)
    print(f"CRFsuite's Viterbi invalid in IOB2 on {invalid} of {len(test)} sentences")


def test_restriction_against_brute_force(tmp_path):
    """A CRFsuite model trained on sequences that break IOB2 (so its Viterbi often does):
    on every short sentence, fstchunk's IOB2 probabilities are CRFsuite's renormalised
    over the valid sequences (all enumerated) and its MAP is their argmax."""
    import itertools
    rng = np.random.default_rng(7)
    labels = ["O", "B-X", "I-X", "B-Y", "I-Y"]
    trainer = pycrfsuite.Trainer(verbose=False)
    X = []
    for _ in range(60):
        n = int(rng.integers(1, 6))
        x = [{f"a{int(rng.integers(6))}": 1.0, f"b{int(rng.integers(3))}": float(
            rng.uniform(0.5, 2))} for _ in range(n)]
        trainer.append(pycrfsuite.ItemSequence(x), list(rng.choice(labels, n)))
        X.append(x)
    trainer.set_params({"c2": 0.1, "max_iterations": 30, "feature.possible_transitions": True})
    trainer.train(str(tmp_path / "noisy.crfsuite"))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "noisy.crfsuite"))
    model = from_crfsuite(tmp_path / "noisy.crfsuite", "IOB2")
    assert model.settings_["impossible_tags"] == []
    invalid = 0
    for x, lat in zip(X, model.lattices(X)):
        tagger.set(pycrfsuite.ItemSequence(x))
        invalid += not enc.is_valid(tagger.tag(), "IOB2")
        valid = [list(y) for y in itertools.product(model.tags_, repeat=len(x))
                 if enc.is_valid(list(y), "IOB2")]
        p = np.array([tagger.probability(y) for y in valid])
        ours = np.array([math.exp(lat.log_prob(y)) for y in valid])
        assert np.allclose(ours, p / p.sum(), rtol=1e-9, atol=1e-12)
        assert list(decode_map(lat).tags) == valid[int(np.argmax(p))]
    assert invalid >= 5, invalid           # the restriction is exercised


def test_decode_expected_eval_on_crfsuite_data(chunker, tmp_path):
    d, tagger, test = chunker
    _imported(d, "none"), _imported(d, "IOB2")
    out = tmp_path / "tagged.txt"
    r = _cli("decode", "--model", str(d / "imported-none.npz"), "--input",
             str(d / "test.crfsuite"), "--format", "crfsuite", "-o", str(out))
    assert r.returncode == 0, r.stderr
    pairs = read_reference(out)
    assert len(pairs) == len(test)
    r = _cli("decode", "--model", str(d / "imported-none.npz"), "--input",
             str(d / "test.crfsuite"), "--format", "crfsuite", "--workers", "2")
    assert r.returncode == 0 and r.stdout == out.read_text(), r.stderr   # workers: same bytes
    for s, seq in zip(test, pairs):
        tagger.set(pycrfsuite.ItemSequence(_items(s)))
        assert [p for _, p in seq] == tagger.tag() and [g for g, _ in seq] == s.column(2)
    # eval --format crfsuite: CRFsuite's report, checked against a count by hand
    r = _cli("eval", "--format", "crfsuite", "--json", str(out))
    rep = json.loads(r.stdout)
    flat = [(g, p) for seq in pairs for g, p in seq]
    assert rep["items_correct"] == sum(g == p for g, p in flat) and rep["items"] == len(flat)
    assert rep["instances_correct"] == sum(all(g == p for g, p in seq) for seq in pairs)
    np_ = rep["labels"]["B-NP"]
    assert np_["match"] == sum(g == p == "B-NP" for g, p in flat)
    assert np_["model"] == sum(p == "B-NP" for _, p in flat)
    assert math.isclose(np_["precision"], np_["match"] / np_["model"])
    from sklearn.metrics import precision_recall_fscore_support
    labels = sorted({g for g, _ in flat})
    P, R, F1, _ = precision_recall_fscore_support([g for g, _ in flat], [p for _, p in flat],
                                                  labels=labels, zero_division=0)
    for y, p, r_, f in zip(labels, P, R, F1):
        assert np.allclose([rep["labels"][y]["precision"], rep["labels"][y]["recall"],
                            rep["labels"][y]["f1"]], [p, r_, f])
    light = subprocess.run([sys.executable, "-c", (
        "import sys; from fstchunk.cli import main; main(['eval', '--format', 'crfsuite', "
        f"{str(out)!r}]); assert not {{'numpy', 'pynini'}} & set(sys.modules)")],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    assert light.returncode == 0, light.stderr
    text = _cli("eval", "--format", "crfsuite", str(out)).stdout
    assert text.startswith("Performance by label (#match, #model, #ref) (precision, recall, F1):")
    assert f"Item accuracy: {rep['items_correct']} / {rep['items']}" in text
    # MEU and chunk confidences on the imported chunk model
    r = _cli("decode", "--model", str(d / "imported-IOB2.npz"), "--input",
             str(d / "test.crfsuite"), "--decoder", "meu", "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(rows) == len(test) and rows[0]["tokens"] is None
    assert all(enc.is_valid(row["tags"], "IOB2") for row in rows)
    assert all(0 < c["p"] <= 1 for row in rows for c in row["chunks"])
    r = _cli("expected", "--format", "crfsuite", "--model", str(d / "imported-IOB2.npz"),
             str(d / "test.crfsuite"), "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)["summary"]
    assert summary["sentences"] == len(test) and 0.5 < summary["corpus_f_of_expectations"] < 1


def test_cli_refusals_name_what_and_where(chunker, tmp_path):
    d, _, _ = chunker
    _imported(d, "none")
    conll = tmp_path / "t.txt"
    conll.write_text("He PRP B-NP\n")
    for args, what in [
        (("decode", "--model", str(d / "imported-none.npz"), "--input",
          str(d / "test.crfsuite"), "--decoder", "meu", "--format", "crfsuite"),
         "decoder meu: chunks are needed, and the model is an unconstrained chain"),
        (("decode", "--model", str(d / "imported-none.npz"), "--input", str(conll)),
         "an attribute CRF reads CRFsuite data, not CoNLL columns"),
        (("expected", "--model", str(d / "imported-none.npz"), "--format", "crfsuite",
          str(d / "test.crfsuite")), "an unconstrained chain (scheme none) has no chunks"),
        (("import", "crfsuite", str(conll), "-o", str(tmp_path / "x.npz")),
         f"{conll}: byte offset 0: the file header needs 48 bytes"),
        (("train", "--format", "crfsuite", "--train", str(d / "train.crfsuite"),
          "--columns", "word,tag", "-o", str(tmp_path / "y.npz")), "--columns is for CoNLL"),
        (("eval", "--format", "crfsuite", str(conll)), f"{conll}:1: expected GOLD<TAB>"),
    ]:
        r = _cli(*args)
        assert r.returncode == 2 and what in r.stderr and "Traceback" not in r.stderr, \
            (args, r.stderr)


def test_train_format_crfsuite_then_decode(chunker, tmp_path):
    """An attribute CRF trained on CRFsuite data, scheme detected (IOB2), goes through
    decode --decoder meu; --init from an imported model trains on from its weights."""
    d, _, test = chunker
    out = tmp_path / "a.npz"
    r = _cli("train", "--format", "crfsuite", "--train", str(d / "train.crfsuite"), "-o",
             str(out), "--max-iter", "15", "--quiet")
    assert r.returncode == 0, r.stderr
    assert load_model(out).scheme_ == "IOB2"
    r = _cli("decode", "--model", str(out), "--input", str(d / "test.crfsuite"),
             "--format", "crfsuite", "--decoder", "meu")
    assert r.returncode == 0 and len(r.stdout.split("\n\n")) >= len(test)
    _imported(d, "IOB2")
    r = _cli("train", "--format", "crfsuite", "--train", str(d / "train.crfsuite"), "-o",
             str(tmp_path / "b.npz"), "--max-iter", "2", "--quiet", "--init",
             str(d / "imported-IOB2.npz"))
    assert r.returncode == 0, r.stderr
    weighted = tmp_path / "w.crfsuite"
    weighted.write_text("@weight:2\nB-NP\tw=a\n\n")
    r = _cli("train", "--format", "crfsuite", "--train", str(weighted), "-o",
             str(tmp_path / "c.npz"))
    assert r.returncode == 2 and f"{weighted}:2: @weight:2" in r.stderr


def test_labels_that_are_not_chunk_tags(tmp_path):
    """A POS tagger imports as an unconstrained chain (its Viterbi), and is refused
    under a chunk scheme naming the label."""
    train = read_conll(os.path.join(DATA, "conll2000/train.txt"))[:60]
    tagger = _train(tmp_path / "pos.crfsuite", train, column=1, max_iterations=20)
    with pytest.raises(InputError, match=r"pos.crfsuite: label '\w+' is not a tag of IOB2"):
        from_crfsuite(tmp_path / "pos.crfsuite", "IOB2")
    model = from_crfsuite(tmp_path / "pos.crfsuite", None)
    x = _items(train[0])
    tagger.set(pycrfsuite.ItemSequence(x))
    assert list(decode_map(model.lattices([x])[0]).tags) == tagger.tag()


def test_missing_tags_made_impossible_or_refused(tmp_path):
    """IOB2 labels without I-LST: I-LST added with every transition at IMPOSSIBLE.
    IOBES labels where type X never has a one-token chunk: S-X could tag a one-token
    sentence alone, so the import is refused naming it."""
    sents = read_conll(os.path.join(DATA, "conll2000/train.txt"))[:40]
    _train(tmp_path / "m.crfsuite", sents, max_iterations=5)
    model = from_crfsuite(tmp_path / "m.crfsuite", "IOB2")
    for t in model.settings_["impossible_tags"]:
        k = model.tags_.index(t)
        trans = model.unpack(model.theta_)[0]
        assert (trans[k, :] == IMPOSSIBLE).all() and (trans[:, k] == IMPOSSIBLE).all()
    trainer = pycrfsuite.Trainer(verbose=False)
    trainer.append(pycrfsuite.ItemSequence([{"a": 1.0}, {"b": 1.0}, {"c": 1.0}]),
                   ["B-X", "E-X", "O"])
    trainer.append(pycrfsuite.ItemSequence([{"c": 1.0}, {"a": 1.0}]), ["O", "S-Y"])
    trainer.set_params({"max_iterations": 5})
    trainer.train(str(tmp_path / "iobes.crfsuite"))
    with pytest.raises(InputError, match=r"iobes.crfsuite: the model has no label S-X"):
        from_crfsuite(tmp_path / "iobes.crfsuite", "IOBES")
    with pytest.raises(ModelFileError, match="cannot read the CRFsuite model"):
        from_crfsuite(tmp_path / "absent.crfsuite", None)
