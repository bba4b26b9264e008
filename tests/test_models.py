"""fstchunk.models: the registry, load_model for every kind, the model protocol."""

import numpy as np
import pytest

from fstchunk.core.errors import ModelFileError
from fstchunk.io.conll import Sentence
from fstchunk.models import MODELS, ChunkModel, TrainableModel, load_model
from fstchunk.models import joint as J
from fstchunk.models.crf import CRF
from fstchunk.models.hmm import HMM
from fstchunk.models.io import save_model
from fstchunk.structures.lattice import Lattice

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]])]


def crf_model():
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    return crf.set_params(objective="ml", l2=0.1, max_iter=5).fit(data)


def joint_model():
    data = J.layered(SENTS, collapse=True, np_chunks=True)
    model, encoded = J.model_for(data, "joint")
    model.set_params(algorithm="perceptron", max_iter=1).fit(encoded)
    return model


def test_registry_keys_are_the_kinds():
    assert set(MODELS) == {"crf", "hmm", "joint", "segment", "attribute-crf"}
    for kind, cls in MODELS.items():
        assert cls.kind == kind


@pytest.mark.parametrize("make", [crf_model, lambda: HMM(min_count=1).fit(SENTS)],
                         ids=["crf", "hmm"])
def test_load_model_chain_models(tmp_path, make):
    model = make()
    assert isinstance(model, ChunkModel)
    p = tmp_path / f"{model.kind}.npz"
    model.save(p)
    back = load_model(p)
    assert type(back) is type(model) and back.kind == model.kind
    assert back.tags_ == model.tags_ and back.scheme_ == model.scheme_
    lats = back.lattices(SENTS)
    assert len(lats) == len(SENTS) and all(isinstance(lat, Lattice) for lat in lats)
    for a, b in zip(lats, model.lattices(SENTS)):
        assert a.log_partition() == pytest.approx(b.log_partition(), rel=1e-12)


def test_load_model_joint(tmp_path):
    model = joint_model()
    p = tmp_path / "joint.npz"
    model.save(p)
    back = load_model(p)
    assert isinstance(back, J.JointModel)
    np.testing.assert_array_equal(back.theta_, model.theta_)


def test_only_the_crf_is_trainable():
    assert isinstance(crf_model(), TrainableModel)
    assert not isinstance(HMM(), TrainableModel)


def test_unknown_kind_and_unreadable_files(tmp_path):
    p = tmp_path / "svm.npz"
    save_model(p, "svm", {"w": np.zeros(3)}, {})
    with pytest.raises(ModelFileError, match="svm.npz: unknown model kind 'svm'"):
        load_model(p)
    good = tmp_path / "hmm.npz"
    HMM(min_count=1).fit(SENTS).save(good)
    raw = good.read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(raw[:len(raw) // 2])
    with pytest.raises(ModelFileError, match="cut.npz: not a readable fstchunk model file"):
        load_model(cut)
    with pytest.raises(ModelFileError, match="missing.npz: no such model file"):
        load_model(tmp_path / "missing.npz")


def test_truncated_arrays_of_a_known_kind(tmp_path):
    """Metadata intact, arrays missing: the class's own load names the file."""
    model = HMM(min_count=1).fit(SENTS)
    p = tmp_path / "hmm.npz"
    save_model(p, "hmm", {"vocab": np.array(["a"])},
               {"tags": list(model.tags_), "scheme": model.scheme_, "settings": model.settings_})
    with pytest.raises(ModelFileError, match="hmm.npz: field '.*': array missing"):
        load_model(p)
