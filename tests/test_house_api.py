"""The public API: what ``fstchunk`` exports resolves, every module attribute of a public
package is importable by its dotted name (``import fstchunk.joint``), and the API pages
under docs/api list the exports and render the modules they come from."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
import types

import pytest

import fstchunk
import fstchunk.core.errors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API = os.path.join(ROOT, "docs", "api")

#: what users reach for (issue 45), besides the everyday names that were there before
WANTED = ("AttributeCRF", "decoder", "Decoder", "decoders", "joint", "FstchunkError",
          "InputError", "LayoutError", "SchemeError", "ModelFileError", "OutputError",
          "BudgetError", "CoNLLError", "TrainingInterrupted", "FstchunkWarning")


def public_packages() -> list[str]:
    """fstchunk and its subpackages that declare a public API (``__all__``)."""
    out = []
    for name in ["fstchunk"] + [m.name for m in pkgutil.walk_packages(
            fstchunk.__path__, "fstchunk.") if m.ispkg and not m.name.startswith("fstchunk.torch")]:
        if hasattr(importlib.import_module(name), "__all__"):
            out.append(name)
    return out


def test_the_exports_users_reach_for_are_there():
    assert not [n for n in WANTED if n not in fstchunk.__all__]
    assert fstchunk.decoders.REGISTRY["meu"] is type(fstchunk.decoder("meu"))


def test_every_error_class_is_exported():
    classes = [n for n, v in vars(fstchunk.core.errors).items()
               if isinstance(v, type) and issubclass(v, (fstchunk.core.errors.FstchunkError,
                                                         fstchunk.core.errors.FstchunkWarning))]
    assert len(classes) >= 10
    assert not [n for n in classes if n not in fstchunk.__all__]
    for name in classes:
        assert getattr(fstchunk, name) is getattr(fstchunk.core.errors, name)


@pytest.mark.parametrize("name", fstchunk.__all__)
def test_every_public_name_resolves_to_its_module_s_object(name):
    module, attr = fstchunk._LAZY[name]
    want = importlib.import_module(module)
    if attr is not None:
        want = getattr(want, attr)
    assert getattr(fstchunk, name) is want
    assert name in dir(fstchunk)


@pytest.mark.parametrize("package", public_packages())
def test_every_module_attribute_is_importable_by_its_dotted_name(package):
    pkg = importlib.import_module(package)
    found = []
    for name in dir(pkg):
        value = getattr(pkg, name)
        if isinstance(value, types.ModuleType) and value.__name__.startswith("fstchunk."):
            found.append(name)
            assert importlib.import_module(f"{package}.{name}") is value, f"{package}.{name}"
    if package == "fstchunk":
        assert {"joint", "decoders"} <= set(found)


def test_import_fstchunk_joint_is_the_joint_package_and_its_modules_are_its_own():
    """In a fresh interpreter: no other test has loaded anything."""
    code = (
        "import fstchunk.joint, fstchunk.joint.train as t\n"
        "from fstchunk.joint import JointModel\n"
        "import fstchunk, fstchunk.models.joint as m\n"
        "assert fstchunk.joint is m and t is m.train and JointModel is m.JointModel\n"
        "from fstchunk.joint.dp import viterbi\n"
        "assert viterbi is m.dp.viterbi\n"
        "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_the_attribute_first_then_the_import_give_one_package():
    code = ("import fstchunk\nj = fstchunk.joint\nimport fstchunk.joint as k\n"
            "import fstchunk.models.joint as m\nassert j is k is m\nprint('ok')\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# ---------------------------------------------------------------- the API pages

def rendered() -> dict[str, set[str]]:
    """docs/api page -> the modules it renders (``::: module``)."""
    out = {}
    for page in sorted(os.listdir(API)):
        if page.endswith(".md") and page != "index.md":
            text = open(os.path.join(API, page), encoding="utf-8").read()
            out[page] = set(re.findall(r"^::: (\S+)\s*$", text, re.M))
    return out


def test_the_api_index_lists_every_export():
    text = open(os.path.join(API, "index.md"), encoding="utf-8").read()
    assert not [n for n in fstchunk.__all__ if f"`{n}`" not in text]


def test_the_module_of_every_export_is_rendered():
    pages = set().union(*rendered().values())
    missing = sorted({module for module, _ in fstchunk._LAZY.values()
                      if module not in pages and module != "fstchunk.joint"})
    assert not missing, "modules of fstchunk's exports that no docs/api page renders"
    assert "fstchunk.models.joint" in pages                 # what fstchunk.joint is


def test_the_api_index_table_lists_what_each_page_renders():
    text = open(os.path.join(API, "index.md"), encoding="utf-8").read()
    for page, modules in rendered().items():
        row = next((line for line in text.splitlines() if f"]({page})" in line), None)
        assert row is not None, f"docs/api/index.md has no row for {page}"
        listed = set(re.findall(r"`(fstchunk[\w.]*)`", row))
        unlisted = [m for m in modules                 # a listed package covers its modules
                    if not any(m == n or m.startswith(n + ".") for n in listed)]
        assert not unlisted, (page, sorted(unlisted))
        # a listed name is rendered itself or through its members (fstchunk.md: fstchunk.CRF, ...)
        stray = [n for n in listed if not any(m == n or m.startswith(n + ".") for m in modules)]
        assert not stray, (page, sorted(stray))
