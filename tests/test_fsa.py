"""fstchunk.grammars.fsa: the machine helpers, checked on small hand-made machines."""

import math
import os

import numpy as np
import pynini
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.grammars import fsa
from fstchunk.core import outputs
from fstchunk.core.errors import InputError, OutputError
from oracles import accepted_strings


def weighted_strings(pairs, arc_type="log64"):
    """Union of linear machines, one per (labels, -log weight)."""
    out = []
    for labels, w in pairs:
        f = fsa.string_fst(labels, arc_type)
        f.set_final(f.num_states() - 1, pynini.Weight(fsa.weight_type(arc_type), w))
        out.append(f)
    return pynini.union(*out)


def test_string_fst_and_union_of():
    f = fsa.string_fst([1, 2, 3], olabels=[4, 5, 6])
    assert fsa.paths(f) == [([1, 2, 3], [4, 5, 6], 0.0)]
    u = fsa.union_of([1, (2, 3)], "log64")
    assert sorted(fsa.paths(u)) == [([1], [1], 0.0), ([2], [3], 0.0)]
    with pytest.raises(InputError, match="differ in length .3 and 2"):
        fsa.string_fst([1, 2, 3], olabels=[1, 2])


def test_check_arc_type_and_weight_type():
    assert [fsa.weight_type(a) for a in fsa.ARC_TYPES] == ["tropical", "log", "log64"]
    with pytest.raises(InputError, match="unknown arc type 'tropical'"):
        fsa.check_arc_type("tropical")


def test_paths_of_acyclic_machine_and_refusals():
    f = weighted_strings([([1, 2], 0.5), ([3], 2.0), ([], 1.0)])
    got = sorted((tuple(i), tuple(o), round(w, 12)) for i, o, w in fsa.paths(f))
    assert got == [((), (), 1.0), ((1, 2), (1, 2), 0.5), ((3,), (3,), 2.0)]
    assert fsa.paths(pynini.Fst("log64")) == []
    with pytest.raises(InputError, match="acyclic"):
        fsa.paths(fsa.union_of([1]).closure())
    with pytest.raises(InputError, match="more than 2 paths"):
        fsa.paths(fsa.union_of([1, 2, 3]), limit=2)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 30.0), min_size=1, max_size=6))
def test_total_weight_sums_paths_exactly(ws):
    f = weighted_strings([([k + 1], w) for k, w in enumerate(ws)])
    want = -math.log(math.fsum(math.exp(-w) for w in ws))
    assert fsa.total_weight(f) == pytest.approx(want, abs=1e-12)


def test_total_weight_of_empty_machines():
    assert fsa.total_weight(pynini.Fst("log64")) == math.inf
    f = fsa.string_fst([1], "log64")
    f.set_final(1, pynini.Weight.zero("log64"))
    assert fsa.total_weight(f) == math.inf


def test_weight_value_has_full_precision():
    w = pynini.Weight("log64", 1.0 / 3.0)
    assert fsa.weight_value(w) == pytest.approx(1.0 / 3.0, abs=1e-15)
    assert fsa.weight_value(pynini.Weight.zero("log64")) == math.inf


@pytest.mark.parametrize("arc_type", fsa.ARC_TYPES)
def test_to_arc_type_keeps_weights(arc_type):
    f = weighted_strings([([1], 0.25), ([2], 1.5)], "standard")
    g = fsa.to_arc_type(f, arc_type)
    assert g.arc_type() == arc_type
    assert sorted(w for _, _, w in fsa.paths(g)) == pytest.approx([0.25, 1.5])
    assert g is not f                                   # always a copy


def test_is_functional():
    assert fsa.is_functional(fsa.union_of([1, 2])) is True                    # acceptor
    assert fsa.is_functional(fsa.union_of([(1, 2), (2, 2)])) is True
    assert fsa.is_functional(fsa.union_of([(1, 1), (1, 2)])) is False
    two = pynini.union(fsa.string_fst([1, 1], olabels=[1, 2]),
                       fsa.string_fst([1, 1], olabels=[1, 3])).rmepsilon()
    assert fsa.is_functional(two) is False
    eps = fsa.string_fst([1, 0], olabels=[0, 1])
    assert fsa.is_functional(eps) is None                                      # undecided
    assert fsa.is_functional(fsa.union_of([1]).closure()) is True      # acceptor, epsilons


def test_properties():
    p = fsa.properties(fsa.union_of([1, 2], "log64").closure())
    assert p["arc type"] == "log64" and p["acceptor"] and p["functional"]
    assert not p["acyclic"] and not p["epsilon-free"]          # closure adds epsilons
    q = fsa.properties(fsa.unweighted_optimize(fsa.union_of([(1, 2)]).closure()))
    assert q["epsilon-free"] and q["deterministic"] and not q["acceptor"]
    assert q["states"] == 1 and q["arcs"] == 1 and q["unweighted"]


def test_unweighted_optimize_and_accepted_strings():
    table = pynini.SymbolTable()
    for k, s in enumerate(["<epsilon>", "a", "b"]):
        table.add_symbol(s, k)
    f = pynini.union(fsa.string_fst([1, 2]), fsa.string_fst([1, 2]), fsa.string_fst([2]))
    g = fsa.unweighted_optimize(f)
    assert pynini.equivalent(pynini.determinize(f.copy().rmepsilon()), g)
    assert g.num_states() == pynini.minimize(g.copy()).num_states()
    assert sorted(accepted_strings(g, table, 5)) == [("a", "b"), ("b",)]
    assert sorted(accepted_strings(fsa.attach(fsa.union_of([1]).closure(), table),
                                       table, 2)) == [(), ("a",), ("a", "a")]


def test_attach_and_bare():
    table = pynini.SymbolTable()
    table.add_symbol("<epsilon>", 0)
    table.add_symbol("x", 1)
    f = fsa.attach(fsa.union_of([1]), table)
    assert f.input_symbols().find(1) == "x" and f.output_symbols().find("x") == 1
    b = fsa.bare(f)
    assert b.input_symbols() is None and f.input_symbols() is not None


def test_write_far_round_trip(tmp_path):
    machines = {"b": fsa.union_of([1, 2], "log64"), "a": fsa.string_fst([3, 4], "log64")}
    path = str(tmp_path / "m.far")
    assert fsa.write_far(path, machines, "log64") == ["a", "b"]
    with pynini.Far(path, "r") as far:
        got = [(k, f.copy()) for k, f in far]
    assert [k for k, _ in got] == ["a", "b"]                     # sorted, as FARs need
    for k, f in got:
        assert pynini.equal(f, machines[k])
    with pytest.raises(InputError, match="arc type 'tropical'"):
        fsa.write_far(path, machines, "tropical")
    other = str(tmp_path / "other.far")
    with pytest.raises(InputError, match="machine 'b' has standard arcs, the FAR log64"):
        fsa.write_far(other, {**machines, "b": fsa.union_of([1])}, "log64")
    assert not (tmp_path / "other.far").exists()


# ------------------------------------------------------------------ write_far: checked, atomic
def two_machines():
    return {"b": fsa.union_of([1, 2], "log64"), "a": fsa.string_fst([3, 4], "log64")}


def no_temporaries(folder):
    return [n for n in os.listdir(folder) if ".tmp" in n] == []


@pytest.mark.parametrize("where", ["missing folder", "a folder"])
def test_write_far_unwritable_destination_is_an_error(tmp_path, capfd, where):
    """Today: OpenFst prints ERROR lines, write_far returns the keys as if written."""
    path = str(tmp_path / "no" / "x.far") if where == "missing folder" else str(tmp_path)
    with pytest.raises(OutputError) as e:
        fsa.write_far(path, two_machines(), "log64")
    msg = str(e.value)
    assert msg.startswith(f"{path}: ") and "\n" not in msg
    assert ("does not exist" if where == "missing folder" else "is a folder") in msg
    assert "ERROR" not in capfd.readouterr().err      # refused before OpenFst is asked
    assert no_temporaries(tmp_path)


def test_write_far_replaces_atomically(tmp_path, capfd):
    path = tmp_path / "m.far"
    path.write_bytes(b"old")
    assert fsa.write_far(str(path), two_machines(), "log64") == ["a", "b"]
    with pynini.Far(str(path), "r") as far:
        assert [k for k, _ in far] == ["a", "b"]
    assert no_temporaries(tmp_path) and capfd.readouterr().err == ""


def truncating_writer(keep):
    """The real FAR writer, then the file cut to ``keep`` of its size: what a full disk
    or a killed writer leaves, with OpenFst's writer reporting no error."""
    real = fsa._write_far_file

    def write(tmp, machines, keys, arc_type):
        out = real(tmp, machines, keys, arc_type)
        size = os.path.getsize(tmp)
        with open(tmp, "r+b") as fh:
            fh.truncate(int(size * keep))
        return out
    return write


@pytest.mark.parametrize("keep", [0.0, 0.5, 0.95])
def test_write_far_truncated_file_is_caught_and_old_kept(tmp_path, monkeypatch, keep):
    path = tmp_path / "m.far"
    path.write_bytes(b"old FAR")
    monkeypatch.setattr(fsa, "_write_far_file", truncating_writer(keep))
    with pytest.raises(OutputError, match=r"m\.far: cannot write the FAR \(") as e:
        fsa.write_far(str(path), two_machines(), "log64")
    assert "\n" not in str(e.value)
    assert path.read_bytes() == b"old FAR"
    assert no_temporaries(tmp_path)


def test_write_far_full_disk_named(tmp_path, monkeypatch):
    monkeypatch.setattr(fsa, "_write_far_file", truncating_writer(0.5))
    monkeypatch.setattr(outputs, "disk_full", lambda path: True)
    path = str(tmp_path / "m.far")
    with pytest.raises(OutputError) as e:
        fsa.write_far(path, two_machines(), "log64")
    assert str(e.value) == f"{path}: cannot write the FAR (no space left on device)"
    assert os.listdir(tmp_path) == []


def test_write_far_writer_error_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(fsa, "_write_far_file", lambda *a: "writing machine 'a' failed")
    with pytest.raises(OutputError, match="writing machine 'a' failed"):
        fsa.write_far(str(tmp_path / "m.far"), two_machines(), "log64")
    assert os.listdir(tmp_path) == []


def test_write_far_refuses_nothing(tmp_path):
    with pytest.raises(InputError, match="no machines"):
        fsa.write_far(str(tmp_path / "m.far"), {}, "log64")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("arc_type", ["log64", "log", "standard"])
def test_arc_table_reads_every_arc_as_the_arc_iterator_does(arc_type):
    """fsa.arc_table (OpenFst's binary form read at once) against pynini's own arc
    iterator and weight_value, on a random machine with symbol tables, epsilons, zero
    and negative weights, parallel arcs and states without arcs."""
    rng = np.random.default_rng(7)
    f = pynini.Fst(arc_type)
    wt = fsa.weight_type(arc_type)
    states = [f.add_state() for _ in range(30)]
    f.set_start(states[3])
    for q in states:
        if rng.random() < 0.3:
            f.set_final(q, pynini.Weight(wt, float(rng.normal())))
        for _ in range(rng.integers(0, 5)):
            w = pynini.Weight.zero(wt) if rng.random() < 0.1 else \
                pynini.Weight(wt, float(rng.normal() * 10))
            f.add_arc(q, pynini.Arc(int(rng.integers(0, 9)), int(rng.integers(0, 9)), w,
                                    states[int(rng.integers(0, 30))]))
    table = pynini.SymbolTable()
    for k in range(9):
        table.add_symbol(f"s{k}", k)
    f.set_input_symbols(table)
    f.set_output_symbols(table)
    t = fsa.arc_table(f)
    want = [(q, a.ilabel, a.olabel, fsa.weight_value(a.weight), a.nextstate)
            for q in f.states() for a in f.arcs(q)]
    got = list(zip(t.src.tolist(), t.ilabel.tolist(), t.olabel.tolist(), t.weight.tolist(),
                   t.dst.tolist()))
    assert [g[:3] + g[4:] for g in got] == [w[:3] + w[4:] for w in want]
    tol = 1e-15 if arc_type == "log64" else 1e-6
    np.testing.assert_allclose(t.weight, [w[3] for w in want], rtol=tol)
    np.testing.assert_allclose(t.final, [fsa.weight_value(f.final(q)) for q in f.states()],
                               rtol=tol)
    assert t.start == f.start()
