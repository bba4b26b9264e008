"""fstchunk.grammars.registry: every grammar by name, FAR keys, the one FAR exporter, draw."""

import os
import shutil

import pynini
import pytest

from fstchunk.core.errors import FstchunkError, InputError, OutputError, SchemeError
from fstchunk.grammars import drawing as D
from fstchunk.grammars import fsa, validity
from fstchunk.grammars import registry as R
from fstchunk.schemes import encodings as enc
from fstchunk.schemes.tagspace import symbol_table

TYPESETS = [("",), ("NP", "VP")]


def options(types, **kw):
    """IOB1 options; a gold for the loss machines (I-NP O, or I O untyped); the type
    filter keeps the first type."""
    kw.setdefault("max_length", 2)
    kw.setdefault("gold", ("I-NP", "O") if types != ("",) else ("I", "O"))
    kw.setdefault("keep", types[:1])
    return R.Options(scheme="IOB1", types=types, target="IOE2", **kw)


@pytest.mark.parametrize("types", TYPESETS, ids=["untyped", "typed"])
@pytest.mark.parametrize("name", list(R.GRAMMARS))
def test_every_grammar_builds_with_the_shared_symbol_table(name, types):
    o = options(types)
    fst = R.build(name, o)
    assert isinstance(fst, pynini.Fst) and fst.num_states() > 0
    assert fst.arc_type() == "log64"
    # grammars that do not read the chunk types (the toy model) are untyped
    shared = symbol_table(o.types if "types" in R.GRAMMARS[name].reads else ("",))
    # the type eraser writes untyped tags: its output tape is the untyped table
    out = symbol_table(("",)) if name == "type-eraser" else \
        symbol_table(o.keep) if name == "type-filter" else shared
    for tab, want in ((fst.input_symbols(), shared), (fst.output_symbols(), out)):
        assert tab is not None
        for label, sym in want:
            assert tab.find(sym) == label, (name, sym)


@pytest.mark.parametrize("arc_type", ["standard", "log", "log64"])
def test_every_grammar_builds_in_every_arc_type(arc_type):
    for name in R.GRAMMARS:
        assert R.build(name, options(("NP",), arc_type=arc_type)).arc_type() == arc_type, name


def test_build_keyword_options_override():
    a = R.build("validity", R.Options(scheme="IOB2", types="NP"), scheme="IOE1")
    assert pynini.equal(a, validity.validity_acceptor("IOE1", "NP"))
    assert R.build("T", types="NP", max_length=1, arc_type="standard").arc_type() == "standard"


def test_far_key_names_the_options_read():
    o = R.Options(scheme="bio", types="NP", target="IOE1", max_length=3, theta=0.25)
    assert R.far_key("validity", o) == "validity.IOB2"          # alias made canonical
    assert R.far_key("encoder", o) == "encoder.IOB2"
    assert R.far_key("convert", o) == "convert.IOB2.IOE1"
    assert [R.far_key(n, o) for n in ("T", "M", "TM")] == ["T.n3", "M.n3", "TM.n3"]
    assert R.far_key("toy", o) == "toy.n3.theta0.25"


def read_far(path):
    with pynini.Far(path, "r") as far:
        assert far.arc_type() == "log64"
        return {k: f.copy() for k, f in far}


def test_export_far_default_writes_every_grammar_and_target(tmp_path):
    path = str(tmp_path / "all.far")
    o = options(("NP",))
    keys = R.export_far(path, None, o)
    want = sorted([R.far_key(n, o) for n in R.GRAMMARS if n != "convert"] +
                  [f"convert.IOB1.{t}" for t in enc.SCHEMES if t != "IOB1"])
    assert keys == want and "type-filter.IOB1.keep_NP" in keys
    assert "type-filter.IOB1.keep_NP" not in R.export_far(str(tmp_path / "no-keep.far"), None,
                                                         options(("NP",), keep=()))
    got = read_far(path)
    assert sorted(got) == want
    for key, fst in got.items():
        name = key.split(".")[0]
        o_k = R.Options(**{**o.__dict__, "target": key.split(".")[2]}) if name == "convert" else o
        assert pynini.equal(fst, R.build(name, o_k)), key
        if "types" in R.GRAMMARS[name].reads:
            assert fst.input_symbols().find("B-NP") == symbol_table(("NP",)).find("B-NP")


def test_export_far_named_grammars_read_back_by_paths(tmp_path):
    """Small machines compared by their paths: the FAR holds the same relation."""
    path = str(tmp_path / "some.far")
    o = options(("",), max_length=3)
    assert R.export_far(path, ["toy", "convert"], o) == ["convert.IOB1.IOE2", "toy.n3.theta0.5"]
    got = read_far(path)
    assert pynini.equal(got["toy.n3.theta0.5"], R.build("toy", o))
    labels = [symbol_table(("",)).find(t) for t in ("O", "B", "I")]
    bounded = pynini.union(*(pynini.closure(fsa.union_of(labels, "log64"), k, k)
                             for k in (1, 2, 3)))
    rel = {}
    for which, fst in (("far", got["convert.IOB1.IOE2"]), ("built", R.build("convert", o))):
        f = (bounded @ fst).connect()
        rel[which] = sorted((tuple(i), tuple(x)) for i, x, _ in fsa.paths(f))
    assert rel["far"] == rel["built"] and len(rel["far"]) > 5


def test_unknown_grammar_names_it(tmp_path):
    with pytest.raises(FstchunkError, match=r"unknown grammar 'nosuch'; known: validity"):
        R.build("nosuch")
    path = tmp_path / "x.far"
    with pytest.raises(InputError, match="'nosuch'"):
        R.export_far(str(path), ["validity", "nosuch"], R.Options())
    assert not path.exists()
    with pytest.raises(InputError, match="'nosuch'"):
        R.far_key("nosuch", R.Options())


@pytest.mark.parametrize("bad, match", [
    (dict(max_length=0), "max_length"),
    (dict(max_length="3"), "max_length"),
    (dict(arc_type="tropical"), "arc type 'tropical'"),
    (dict(scheme="IOX"), "unknown chunk scheme 'IOX'"),
    (dict(target="XYZ"), "unknown chunk scheme 'XYZ'"),
    (dict(types="N P"), "chunk type 'N P' contains white space"),
    (dict(types=("NP", "A,B")), "chunk type 'A,B' contains ','"),
])
def test_bad_options_name_them(bad, match):
    with pytest.raises(FstchunkError, match=match):
        R.Options(**bad)


def test_bad_build_options_name_them():
    with pytest.raises(InputError, match="unknown option.*colour"):
        R.build("validity", colour="red")
    with pytest.raises(InputError, match="both IOB2"):
        R.build("convert", scheme="IOB2", target="IOB2")
    with pytest.raises(InputError, match="theta"):
        R.build("toy", theta=1.5)
    with pytest.raises(SchemeError):
        R.build("validity", scheme="nope")


def test_att_text_shows_tag_names():
    text = D.att_text(R.build("validity", types="NP"))
    rows = [r.split("\t") for r in text.splitlines()]
    assert {r[2] for r in rows if len(r) >= 3} == {"O", "B-NP", "I-NP"}


def test_draw_dot(tmp_path):
    fst = R.build("validity", types="NP,VP")
    path = str(tmp_path / "v.dot")
    assert D.draw(fst, path, title="validity.IOB2") == path
    text = open(path, encoding="utf-8").read()
    assert "digraph" in text and "B-NP" in text and "validity.IOB2" in text
    with pytest.raises(InputError, match=r"v\.gif"):
        D.draw(fst, str(tmp_path / "v.gif"))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' not installed")
def test_draw_svg(tmp_path):
    path = str(tmp_path / "v.svg")
    D.draw(R.build("validity", types="NP"), path)
    assert "<svg" in open(path, encoding="utf-8").read()
    assert os.path.exists(str(tmp_path / "v.dot"))
    assert leftovers(tmp_path) == []


# ------------------------------------------------------------------ checked, atomic outputs
def leftovers(folder):
    return sorted(n for n in os.listdir(folder) if ".tmp" in n)


def one_line_error(excinfo, path):
    msg = str(excinfo.value)
    assert "\n" not in msg and msg.startswith(f"{path}: "), msg
    return msg


@pytest.mark.parametrize("where", ["missing folder", "a folder"])
def test_export_far_checks_the_destination_before_building(tmp_path, monkeypatch, capfd, where):
    """Today: 'wrote 13 machines', OpenFst errors on stderr, nothing written."""
    path = str(tmp_path / "OUT" / "x.far") if where == "missing folder" else str(tmp_path)
    monkeypatch.setattr(R, "build", lambda *a, **k: pytest.fail("built a machine first"))
    with pytest.raises(OutputError) as e:
        R.export_far(path, None, R.Options())
    msg = one_line_error(e, path)
    assert msg == (f"{path}: folder {tmp_path / 'OUT'} does not exist"
                   if where == "missing folder" else
                   f"{path}: is a folder (the FAR needs a file name)")
    assert "ERROR" not in capfd.readouterr().err
    assert leftovers(tmp_path) == []


def test_export_far_truncated_write_keeps_old_far(tmp_path, monkeypatch):
    """A FAR cut short (full disk: OpenFst reports no error) is caught on reading
    back; the FAR already there stays as it was."""
    path = tmp_path / "x.far"
    R.export_far(str(path), ["validity"], R.Options())
    before = path.read_bytes()
    real = fsa._write_far_file

    def short(tmp, machines, keys, arc_type):
        out = real(tmp, machines, keys, arc_type)
        with open(tmp, "r+b") as fh:
            fh.truncate(os.path.getsize(tmp) // 2)
        return out
    monkeypatch.setattr(fsa, "_write_far_file", short)
    with pytest.raises(OutputError) as e:
        R.export_far(str(path), None, R.Options())
    assert "cannot write the FAR" in one_line_error(e, str(path))
    assert path.read_bytes() == before
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("name", ["v.dot", "v.svg", "v.png"])
def test_draw_to_missing_folder_is_an_error(tmp_path, capfd, name):
    """Today: exit 0 with nothing written (.dot), CalledProcessError (.svg)."""
    path = str(tmp_path / "OUT" / name)
    with pytest.raises(OutputError) as e:
        D.draw(R.build("validity", types="NP"), path)
    assert one_line_error(e, path).endswith("does not exist")
    assert "ERROR" not in capfd.readouterr().err
    assert os.listdir(tmp_path) == []
    with pytest.raises(OutputError):
        D.check_drawing(path)


def test_draw_to_a_folder_is_an_error(tmp_path):
    (tmp_path / "v.dot").mkdir()
    with pytest.raises(OutputError, match=r"v\.dot: is a folder"):
        D.draw(R.build("validity"), str(tmp_path / "v.dot"))
    with pytest.raises(OutputError, match=r"v\.dot: is a folder"):   # the .dot beside an SVG
        D.draw(R.build("validity"), str(tmp_path / "v.svg"))
    assert not (tmp_path / "v.svg").exists()


class HalfDrawn:
    """Stands for a machine whose ``draw`` stops half way (full disk: OpenFst only
    prints the error)."""

    def properties(self, mask, test):
        return 0

    def draw(self, path, **kw):
        with open(path, "w") as fh:
            fh.write("digraph FST {\n0 -> 1")


def test_draw_incomplete_dot_is_caught_and_old_kept(tmp_path):
    path = tmp_path / "v.dot"
    path.write_text("old")
    with pytest.raises(OutputError) as e:
        D.draw(HalfDrawn(), str(path))
    assert "incomplete" in one_line_error(e, str(path))
    assert path.read_text() == "old" and leftovers(tmp_path) == []


def fake_graphviz(folder, script):
    """A 'dot' executable in ``folder`` running the shell ``script``."""
    folder.mkdir()
    exe = folder / "dot"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    return str(folder)


def test_draw_svg_without_graphviz_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    path = str(tmp_path / "v.svg")
    with pytest.raises(OutputError) as e:
        D.draw(R.build("validity", types="NP"), path)
    assert "apt-get install graphviz" in one_line_error(e, path)
    assert (tmp_path / "v.dot").exists()          # the .dot is written all the same
    assert not (tmp_path / "v.svg").exists() and leftovers(tmp_path) == []


def test_draw_svg_through_dot_into_a_temporary(tmp_path, monkeypatch):
    # the fake dot records its arguments and writes "<svg/>" to the file after -o
    bin_ = fake_graphviz(tmp_path / "bin", 'echo "$@" > "${0%/*}/args"\n'
                         'while [ "$1" != "-o" ]; do shift; done; echo "<svg/>" > "$2"\n')
    monkeypatch.setenv("PATH", bin_)
    out = tmp_path / "out"
    out.mkdir()
    path = str(out / "v.svg")
    assert D.draw(R.build("validity", types="NP"), path) == path
    assert open(path).read() == "<svg/>\n"
    args = open(os.path.join(bin_, "args")).read().split()
    assert args[0] == "-Tsvg" and args[1] == str(out / "v.dot")
    assert os.path.dirname(args[3]) == str(out) and args[3] != path   # temporary, same folder
    assert sorted(os.listdir(out)) == ["v.dot", "v.svg"]


@pytest.mark.parametrize("script, said", [
    ('echo "Error: v.dot: syntax error in line 3" >&2\necho "more" >&2\nexit 1\n',
     "(Error: v.dot: syntax error in line 3)"),
    ("exit 3\n", "(exit code 3)"),
])
def test_draw_svg_failing_dot_is_an_error_naming_the_path(tmp_path, monkeypatch, script, said):
    """Today: subprocess.CalledProcessError / RuntimeError traceback."""
    monkeypatch.setenv("PATH", fake_graphviz(tmp_path / "bin", 'echo half > "$4"\n' + script))
    out = tmp_path / "out"
    out.mkdir()
    (out / "v.svg").write_text("old")
    path = str(out / "v.svg")
    with pytest.raises(OutputError) as e:
        D.draw(R.build("validity", types="NP"), path)
    assert one_line_error(e, path) == f"{path}: Graphviz's 'dot' could not render it {said}"
    assert (out / "v.svg").read_text() == "old" and leftovers(out) == []


def test_draw_svg_dot_writing_nothing_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", fake_graphviz(tmp_path / "bin", "exit 0\n"))
    path = str(tmp_path / "v.svg")
    with pytest.raises(OutputError, match="nothing was written|wrote nothing"):
        D.draw(R.build("validity", types="NP"), path)
    assert not os.path.exists(path) and leftovers(tmp_path) == []
