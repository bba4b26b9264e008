"""fstchunk.models.scorefile: save_scores/load_lattices round trip, and every malformed file
raising ModelFileError with the file's name."""

import numpy as np
import pytest

from fstchunk import Lattice
from fstchunk.core.errors import FstchunkError, ModelFileError
from fstchunk.models.scorefile import load_lattices, save_scores

TAGS = ("O", "B-NP", "I-NP", "B-VP", "I-VP")


def arrays(seed=0, lengths=(1, 3, 6)):
    rng = np.random.default_rng(seed)
    L = len(TAGS)
    return ([rng.normal(size=(n, L)) for n in lengths], rng.normal(size=(L, L)),
            rng.normal(size=L), rng.normal(size=L))


def assert_same_lattice(a, b):
    assert a.tags == b.tags and a.scheme == b.scheme and a.n == b.n
    np.testing.assert_allclose(a.marginals(), b.marginals(), rtol=0, atol=1e-13)
    assert a.log_partition() == pytest.approx(b.log_partition(), abs=1e-12)


@pytest.mark.parametrize("with_ends", [True, False])
def test_round_trip(tmp_path, with_ends):
    emis, trans, start, end = arrays()
    if not with_ends:
        start = end = None
    path = tmp_path / "s.npz"
    save_scores(path, TAGS, emis, trans, start, end, scheme="IOB2")
    got = load_lattices(path)
    assert len(got) == len(emis)
    for lat, e in zip(got, emis):
        assert_same_lattice(lat, Lattice.from_scores(TAGS, e, trans, start, end, "IOB2"))


def test_round_trip_keeps_the_scheme(tmp_path):
    tags = ("O", "B-NP", "I-NP", "E-NP", "S-NP")
    rng = np.random.default_rng(1)
    emis, trans = [rng.normal(size=(4, 5))], rng.normal(size=(5, 5))
    save_scores(tmp_path / "s.npz", tags, emis, trans, scheme="IOBES")
    lat, = load_lattices(str(tmp_path / "s.npz"))
    assert lat.scheme == "IOBES"
    assert_same_lattice(lat, Lattice.from_scores(tags, emis[0], trans, scheme="IOBES"))


def write(path, **arrs):
    np.savez(path, **arrs)
    return path


def good(**over):
    emis, trans, _, _ = arrays(lengths=(2, 3))
    d = {"tags": np.array(TAGS), "scheme": np.array("IOB2"), "transitions": trans,
         "emissions_0": emis[0], "emissions_1": emis[1]}
    d.update(over)
    return {k: v for k, v in d.items() if v is not None}


@pytest.mark.parametrize("content, match", [
    (good(tags=None), "missing array 'tags'"),
    (good(transitions=None), "missing array 'transitions'"),
    (good(tags=np.arange(5.0)), "'tags' must be a 1-D string array"),
    (good(emissions_0=None, emissions_1=None), "no emissions_0 array"),
    (good(emissions_1=None, emissions_2=np.zeros((2, 5))),
     "emissions_2 present but emissions_1 missing"),
    (good(emissions_1=np.zeros((2, 4))), r"sentence 1 \(emissions_1\): emissions has 4 columns"),
    (good(emissions_0=np.zeros((0, 5))), r"sentence 0 .*empty sentence"),
    (good(transitions=np.zeros((5, 4))), r"sentence 0 .*transitions has shape"),
    (good(scheme=np.array("IOX")), r"arrays 'tags' and 'scheme': unknown chunk scheme 'IOX'"),
    (good(tags=np.array(("O", "B-NP", "X-NP", "B-VP", "I-VP"))),
     r"arrays 'tags' and 'scheme': item 2 of the tag list: tag 'X-NP'"),
])
def test_malformed_arrays_name_the_file(tmp_path, content, match):
    path = write(tmp_path / "bad.npz", **content)
    with pytest.raises(ModelFileError, match=r"bad\.npz: " + match):
        load_lattices(path)


def test_unreadable_files_name_the_file(tmp_path):
    missing = tmp_path / "missing.npz"
    with pytest.raises(ModelFileError, match=r"missing\.npz: not a readable score file"):
        load_lattices(missing)
    text = tmp_path / "text.npz"
    text.write_text("emissions_0 1 2 3\n")
    with pytest.raises(ModelFileError, match=r"text\.npz: not a readable score file"):
        load_lattices(text)
    whole = write(tmp_path / "whole.npz", **good())
    trunc = tmp_path / "trunc.npz"
    trunc.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(ModelFileError, match=r"trunc\.npz: not a readable score file"):
        load_lattices(trunc)
    single = tmp_path / "single.npy"
    np.save(single, np.zeros((2, 5)))
    with pytest.raises(ModelFileError, match=r"single\.npy: a single array"):
        load_lattices(single)


def test_pickled_arrays_are_refused_not_loaded(tmp_path):
    path = write(tmp_path / "pickled.npz", **good(tags=np.array(list(TAGS), dtype=object)))
    with pytest.raises(FstchunkError, match=r"pickled\.npz: not a readable score file.*pickle"):
        load_lattices(path)
