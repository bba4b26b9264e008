"""Model files written before the restructuring (fstchunk 0.1.0 at commit 70313ec,
format version 1) still load and decode exactly as they did then.

tests/data/v1/ holds a counting HMM, an ML CRF (tmpt1) and a joint perceptron model
trained by that code on synthetic sentences, and the tags the old code decoded
(expected.json); the new code must reproduce them."""

import json
import os

import pytest

from fstchunk.io.conll import Sentence
from fstchunk.decoding.batch import decode_sentences
from fstchunk.models import load_model
from fstchunk.models import joint as J

HERE = os.path.join(os.path.dirname(__file__), "data", "v1")


@pytest.fixture(scope="module")
def reference():
    with open(os.path.join(HERE, "expected.json"), encoding="utf-8") as fh:
        ref = json.load(fh)
    ref["sentences"] = [Sentence(rows, list(range(1, len(rows) + 1))) for rows in ref["train"]]
    return ref


@pytest.mark.parametrize("kind", ["hmm", "crf"])
@pytest.mark.parametrize("decoder", ["map", "meu"])
def test_old_chain_models_decode_as_before(reference, kind, decoder):
    model = load_model(os.path.join(HERE, f"{kind}.npz"))
    assert model.kind == kind
    got = decode_sentences(model, reference["sentences"], decoder, 1.0)
    assert got == reference["expect"][f"{kind}-{decoder}"]


def test_old_joint_model_decodes_as_before(reference):
    model = load_model(os.path.join(HERE, "joint.npz"))
    assert model.kind == "joint"
    _, chunks = J.predict(model, J.layered(reference["sentences"]), "map", 1.0)
    assert chunks == reference["expect"]["joint-map"]
