"""The front door (issue 34): ``import fstchunk`` loads no heavy module, the public
names load on first use, and ``fstchunk eval`` runs without numpy, pynini or scipy."""

import subprocess
import sys

import pytest

import fstchunk

HEAVY = ("numpy", "pynini", "scipy", "torch", "dask", "matplotlib")


def loaded_after(code: str) -> set[str]:
    """The heavy top-level modules a fresh interpreter has loaded after ``code``."""
    probe = (f"{code}\nimport sys\n"
             f"print('HEAVY:', *sorted({{m.split('.')[0] for m in sys.modules}} & "
             f"set({HEAVY!r})))")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    line = [x for x in r.stdout.splitlines() if x.startswith("HEAVY:")][-1]
    return set(line.split()[1:])


def test_import_fstchunk_loads_nothing_heavy():
    assert loaded_after("import fstchunk") == set()


def test_fstchunk_eval_runs_without_numpy_pynini_or_scipy(tmp_path):
    f = tmp_path / "out.txt"
    f.write_text("The DT B-NP B-NP\ndog NN I-NP I-NP\n\n")
    got = loaded_after(f"from fstchunk.cli import main\nassert main(['eval', {str(f)!r}]) == 0")
    assert got == set()


@pytest.mark.parametrize("name", sorted(fstchunk.__all__))
def test_every_public_name_loads(name):
    assert getattr(fstchunk, name) is not None
    assert name in dir(fstchunk)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        fstchunk.nothing                                 # noqa: B018


def test_heavy_modules_load_where_used():
    assert "scipy" not in loaded_after("from fstchunk import Lattice, expected_f, decode_meu")
    assert "torch" not in loaded_after("from fstchunk import CRF, load_model")


def test_public_names_survive_every_submodule_import():
    """A public name is never shadowed by a submodule of the same name (importing
    ``fstchunk.X`` sets the package's attribute ``X`` to the module): after every module
    of the package is imported, each public name is still the object it names."""
    code = (
        "import importlib, pkgutil, fstchunk\n"
        "for m in pkgutil.walk_packages(fstchunk.__path__, 'fstchunk.'):\n"
        "    if '.torch' not in m.name and not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "bad = []\n"
        "for name, (module, attr) in fstchunk._LAZY.items():\n"
        "    want = importlib.import_module(module)\n"
        "    want = want if attr is None else getattr(want, attr)\n"
        "    if getattr(fstchunk, name) is not want:\n"
        "        bad.append(name)\n"
        "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout
