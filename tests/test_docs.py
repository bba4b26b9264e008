"""The documentation site (``mkdocs.yml``, ``docs/``): it builds with ``mkdocs build
--strict`` (a broken link, anchor or cross-reference fails); every code block of every
page runs and prints what the page shows (:mod:`codeblocks`); the CLI reference holds
every command and option of :func:`fstchunk.cli.build_parser`; the drawings are what
the pages' commands draw; the results tables cite figures their sections hold."""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import codeblocks
from fstchunk.io.datasets import CORPORA
from codeblocks import blocks, output_matches, run_page

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
DOCS = os.path.join(ROOT, "docs")
RESULTS = os.path.join(ROOT, "benchmarks", "RESULTS.md")
PAGES = sorted(os.path.relpath(p, DOCS) for p in glob.glob(os.path.join(DOCS, "**", "*.md"),
                                                         recursive=True))
#: what a page needs beyond fstchunk itself: the corpora it reads, optional packages
NEEDS = {"howto/torch.md": ("torch",), "howto/scale-out.md": ("distributed",),
         "howto/pytorch-crf.md": ("torch", "torchcrf", "onnxruntime")}


def _ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> str:
    """The site, built once per session by ``mkdocs build --strict`` from this checkout
    (:mod:`test_docs_site` reads it too)."""
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NO_MKDOCS_2_WARNING="1")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                        "-f", os.path.join(ROOT, "mkdocs.yml"), "-d", str(out)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"mkdocs build --strict failed:\n{r.stdout[-3000:]}{r.stderr[-5000:]}"
    return str(out)


def _html(site: str, page: str) -> str:
    with open(os.path.join(site, page, "index.html"), encoding="utf-8") as fh:
        return fh.read()


def _text(html: str) -> str:
    import html as html_lib
    return html_lib.unescape(re.sub(r"<[^>]+>", "", html))


def test_site_builds_strict_with_every_page(site):
    for page in PAGES:
        name = page[:-3]
        name = name[:-len("index")] if name.endswith("index") else name + "/"
        assert os.path.exists(os.path.join(site, name, "index.html")), page
    results = _html(site, "benchmarks/RESULTS")          # imported from benchmarks/
    assert "Summary against the targets" in results


def test_cli_reference_holds_every_command_and_option(site):
    """Each command's section of the CLI page names each of its options, its help's
    first words and its default: generated, so an option added to a parser appears."""
    import importlib.util
    from fstchunk.cli import build_parser
    spec = importlib.util.spec_from_file_location("fstchunk_docs_hooks",
                                                  os.path.join(DOCS, "hooks.py"))
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    commands = hooks.commands
    html = _html(site, "cli")
    sections = re.split(r"<h[234] id=", html)
    by_prog = {}
    for sec in sections[1:]:
        m = re.search(r"<code>(fstchunk[^<]*)</code>", sec)
        if m:
            by_prog[m.group(1)] = _text(sec)
    progs = [p.prog for p, _ in commands(build_parser())]
    assert len(progs) >= 16 and set(progs) <= set(by_prog), set(progs) - set(by_prog)
    for parser, _ in commands(build_parser()):
        text = by_prog[parser.prog]
        assert parser.format_usage().split()[1] in text
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            for option in action.option_strings or [action.dest]:
                assert option in text, f"{parser.prog}: {option} missing"
            if action.help and "%(" not in action.help:
                words = " ".join(action.help.split()[:4])
                assert words in " ".join(text.split()), f"{parser.prog} {action.dest}: {words!r}"
            if action.default not in (None, argparse.SUPPRESS, False) and action.option_strings:
                assert str(action.default) in text, f"{parser.prog} {action.dest} default"


def test_api_reference_renders_docstring_roles_as_links(site):
    """No reST role is left as text; roles naming rendered objects are links."""
    for page in ("api/decoding", "api/models", "api/scoring", "api/structures",
                 "api/grammars", "api/torch"):
        html = _html(site, page)
        assert not re.search(r":(func|class|mod|meth|attr|data):<code>", html), page
        assert not re.search(r":(func|class|mod|meth|attr|data):`", html), page
    html = _html(site, "api/decoding")
    assert 'href="#fstchunk.decoding.decode.decode_meu"' in html            # a role, linked
    assert 'id="fstchunk.structures.lattice.Lattice.chunk_marginals"' in html


# ---------------------------------------------------------------- the pages' code

def _page_needs(page: str, corpus) -> None:
    text = open(os.path.join(DOCS, page), encoding="utf-8").read()
    for module in NEEDS.get(page, ()):
        pytest.importorskip(module)
    fetched = re.findall(r'fetch\("(\w+)"\)|data get (\w+)', text)
    for folder in sorted(set(re.findall(r'data_path\("([^"]+)"', text))
                         | {a or b for a, b in fetched} & set(CORPORA)):
        corpus(folder)                  # the corpora's folder: fails in CI, skips elsewhere
    if "grammar draw" in text and "svg" in text and not shutil.which("dot"):
        msg = f"{page} draws SVG pictures: Graphviz 'dot' is not installed"
        if _ci():
            pytest.fail(msg)
        pytest.skip(msg)


#: pages whose blocks a test of their own runs (checking what the commands wrote too)
OWN_TEST = {"howto/confidence.md": "test_howto_confidence.py",
            "howto/sklearn.md": "test_sklearn_docs.py"}
CODE_PAGES = [p for p in PAGES if blocks(os.path.join(DOCS, p)) and p not in OWN_TEST]


def test_pages_with_a_test_of_their_own_run_it():
    for page, test in OWN_TEST.items():
        text = open(os.path.join(os.path.dirname(__file__), test), encoding="utf-8").read()
        assert "run_page(" in text and page.split("/")[-1] in text, (page, test)


@pytest.mark.parametrize("page", CODE_PAGES)
def test_page_code_blocks_run_as_shown(page, tmp_path, monkeypatch, corpus):
    """Every block of the page, in order, in a fresh folder (``codeblocks`` says how
    outputs compare); the SVG pictures its commands draw are the ones the page shows."""
    _page_needs(page, corpus)
    monkeypatch.chdir(tmp_path)
    run_page(os.path.join(DOCS, page))
    for name in _pictures(page):
        drawn = tmp_path / os.path.basename(name)
        assert drawn.exists(), f"{page} shows {name}, which none of its commands draws"
        assert _svg_summary(str(drawn)) == _svg_summary(os.path.join(DOCS, os.path.dirname(page), name)), \
            f"{name} is not what the page's command draws today: python tests/codeblocks.py docs/{page} --update"


def test_every_block_of_every_page_is_run_or_text():
    """No page holds a block the runner would not run (other than shown text)."""
    kinds = {b.lang for p in PAGES for b in blocks(os.path.join(DOCS, p))}
    assert kinds <= {"python", "console", "bash", "sh"} | set(codeblocks.TEXT), kinds


def test_every_page_with_code_is_run():
    assert {"getting-started.md", "howto/objectives.md", "howto/max-margin.md",
            "howto/scale-out.md", "howto/torch.md", "howto/segments.md", "howto/joint.md",
            "howto/grammars.md"} <= set(CODE_PAGES)


def _pictures(page: str, kinds: str = "svg") -> list[str]:
    """The pictures ``img/NAME.svg`` a page shows (the drawings its commands draw);
    ``kinds="svg|png"``: screenshots too."""
    text = open(os.path.join(DOCS, page), encoding="utf-8").read()
    return re.findall(rf"!\[[^\]]*\]\((img/[^)\s]+\.(?:{kinds}))\)", text)


def _svg_summary(path: str) -> tuple:
    """What a drawing shows, whatever Graphviz version laid it out: its nodes, its
    edges and their labels."""
    root = ET.parse(path).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    kinds: dict[str, list[str]] = {"node": [], "edge": []}
    for g in root.iter(ns + "g"):
        kind = g.get("class")
        if kind in kinds:
            kinds[kind].append(" ".join(t.text or "" for t in g.iter(ns + "text")))
    return tuple(sorted(v) for v in kinds.values())


def test_pictures_are_small_and_shown():
    shown = {os.path.normpath(os.path.join(os.path.dirname(p), n)) for p in PAGES
             for n in _pictures(p, "svg|png")}
    on_disk = {os.path.relpath(p, DOCS) for p in glob.glob(os.path.join(DOCS, "**", "img", "*"),
                                                           recursive=True)}
    assert on_disk == shown, "every picture in docs/img is shown by a page, and exists"
    for name in on_disk:
        assert os.path.getsize(os.path.join(DOCS, name)) < 100_000, name


# ---------------------------------------------------------------- the results tables

def _slug(heading: str) -> str:
    """The anchor of a heading, as the site (pymdownx slugify, lower) and GitHub make it."""
    text = re.sub(r"<[^>]+>", "", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _sections() -> dict[str, str]:
    """RESULTS.md's ``##`` sections by anchor: their text up to the next ``##``."""
    with open(RESULTS, encoding="utf-8") as fh:
        text = fh.read()
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {_slug(parts[i]): parts[i + 1] for i in range(1, len(parts), 2)}


def _figures(cell: str) -> list[str]:
    """The unsigned decimal figures of a cell (signed ones are differences)."""
    return [m.group(1) for m in re.finditer(r"(?<![\d.+\-−±])(\d+\.\d+)", cell)]


def _check_rows(rows: list[tuple[str, str, list[str]]], sections: dict[str, str]) -> int:
    """Each (where, text, anchors): every anchor is a section, and every unsigned figure
    of the text is in one of them.  The number of figures checked."""
    checked = 0
    for where, text, anchors in rows:
        for anchor in anchors:
            assert anchor in sections, f"{where}: no RESULTS.md section #{anchor}"
        for fig in _figures(text):
            pattern = rf"(?<![\d.]){re.escape(fig)}(?!\d)"
            assert any(re.search(pattern, sections[a]) for a in anchors), \
                f"{where}: {fig} is in none of the sections it links ({', '.join(anchors)})"
            checked += 1
    return checked


def test_results_summary_is_short_and_cites_its_sections():
    """The summary table of RESULTS.md: one short figure per target, linked to the
    section (or its note) that holds every figure of the cell."""
    with open(RESULTS, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    start = lines.index("| target | measured | verdict | section |")
    rows, i = [], start + 2
    while lines[i].startswith("| "):
        target, measured, verdict, link = [c.strip() for c in lines[i].strip()[2:-2].split(" | ")]
        assert len(measured.split()) <= 14 and len(verdict.split()) <= 10, lines[i]
        anchor = re.fullmatch(r"\[.+\]\(#([^)]+)\)", link).group(1)
        rows.append((f"RESULTS.md:{i + 1}", measured, [anchor]))
        i += 1
    assert len(rows) >= 40
    assert _check_rows(rows, _sections()) >= 60


def test_docs_figures_cite_their_results_sections():
    """Every table row and paragraph of the pages that links RESULTS.md sections quotes
    only figures those sections hold."""
    sections, rows = _sections(), []
    for page in PAGES:
        text = open(os.path.join(DOCS, page), encoding="utf-8").read()
        for para in re.split(r"\n\s*\n|\n(?=\|)", text):
            if "```" in para:
                continue
            anchors = re.findall(r"RESULTS\.md#([^)\s]+)\)", para)
            if anchors:
                rows.append((page, para, anchors))
    assert len(rows) >= 20
    assert _check_rows(rows, sections) >= 40


# ---------------------------------------------------------------- the machinery

def test_output_comparison_rules():
    """``...`` lines and ``...`` in a line; decimals within one unit of the last digit
    shown; integers and text exact."""
    assert output_matches(["a 1.25 b"], "a 1.26 b\n")
    assert not output_matches(["a 1.25 b"], "a 1.27 b")
    assert not output_matches(["found: 1089"], "found: 1090")
    assert output_matches(["x", "...", "z"], "x\nz") and output_matches(["x", "...", "z"], "x\n1\n2\nz")
    assert not output_matches(["x", "...", "z"], "x\n1\ny")
    assert output_matches(["it, ..., f=88.06"], "it, 1.6s, objective=3.3, f=88.06")
    assert not output_matches(["one"], "one\ntwo")
    assert output_matches([], "") and not output_matches([], "out")
    assert output_matches(["t 1.5e-03"], "t 1.6e-03") and not output_matches(["t 1.5e-03"], "t 1.7e-03")


@given(st.lists(st.tuples(st.sampled_from(["F1", "dev F =", "found:", "x"]),
                          st.integers(0, 10**4), st.integers(0, 99), st.integers(1, 4)),
                min_size=1, max_size=5),
       st.integers(0, 4), st.sampled_from([-3, -2, 2, 3]))
@settings(max_examples=200, deadline=None)
def test_output_comparison_property(rows, which, shift):
    """Any output matches itself; moving one decimal by two or more units of its last
    shown digit, or any integer by one, breaks the match."""
    def line(word, whole, frac, digits, delta=0):
        shown_value = round(whole + frac / 100, digits)        # the figure as the page shows it
        return f"{word} {shown_value + delta * 10.0 ** -digits:.{digits}f} {whole}"
    shown = [line(*r) for r in rows]
    assert output_matches(shown, "\n".join(shown) + "\n")
    k = which % len(rows)
    word, whole, frac, digits = rows[k]
    if round(whole + frac / 100, digits) + shift * 10.0 ** -digits >= 0:
        moved = shown[:k] + [line(word, whole, frac, digits, shift)] + shown[k + 1:]
        assert not output_matches(shown, "\n".join(moved))
    bumped = shown[:k] + [shown[k].rsplit(" ", 1)[0] + f" {whole + 1}"] + shown[k + 1:]
    assert not output_matches(shown, "\n".join(bumped))


def test_page_runner_catches_a_wrong_page(tmp_path, monkeypatch):
    """A page whose output, error or command is wrong fails, naming its line."""
    monkeypatch.chdir(tmp_path)
    cases = {
        "```python\nprint(1 + 1)\n```\n\n```text\n3\n```\n": "the page shows",
        "```python\nprint(2)\n```\n": "no ```text block",
        "```python\nint('x')  # ValueError: not this\n```\n": "says",
        "```python\nint('1')  # ValueError: invalid\n```\n": "did not raise",
        "```console\n$ fstchunk grammar list\nnothing\n```\n": "the page shows",
        "```console\n$ fstchunk eval missing.txt\n```\n": "exit status 2",
        "```bash\nrm -rf x\n```\n": "not a command",
        "```sh\nfstchunk demo\n```\n": "set-up lines only",
        "```ruby\nputs 1\n```\n": "cannot run",
    }
    for k, (page, message) in enumerate(cases.items()):
        path = tmp_path / f"p{k}.md"
        path.write_text(page)
        with pytest.raises(AssertionError, match=re.escape(message)):
            run_page(str(path))
    ok = tmp_path / "ok.md"
    ok.write_text("```python\nint('x')  # ValueError: invalid literal\nprint(2)\n```\n\n"
                  "```text\n2\n```\n\n```console\n$ fstchunk eval missing.txt\n"
                  "fstchunk eval: error: ...\n```\n")
    run_page(str(ok))


def test_update_rewrites_stale_outputs(tmp_path, monkeypatch):
    page = tmp_path / "p.md"
    page.write_text("# t\n\n```python\nprint('new')\n```\n\n```text\nSTALE-OUTPUT\n```\n\n"
                    "```console\n$ fstchunk grammar list --scheme IOB2\nSTALE-OUTPUT\n```\n")
    codeblocks._update(str(page))
    run_page(str(page))                 # matches now
    assert "STALE-OUTPUT" not in page.read_text()


def test_strict_build_refuses_a_broken_anchor_and_a_broken_role(tmp_path):
    """The configuration is strict where it matters: a link to a missing RESULTS.md
    anchor fails the build, and so does a docstring role naming no fstchunk object
    (the griffe extension's warning).  One build holds both mistakes (--strict reports
    every warning before it aborts), on a stand-in package so that it stays short."""
    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(ROOT, "mkdocs.yml"), tmp_path / "mkdocs.yml")
    shutil.copytree(os.path.join(ROOT, "benchmarks"), tmp_path / "benchmarks",
                    ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path) + os.pathsep + ROOT,
               NO_MKDOCS_2_WARNING="1")
    results = tmp_path / "docs" / "results.md"
    text = results.read_text(encoding="utf-8")
    results.write_text(text + "\n[gone](../benchmarks/RESULTS.md#no-such-section)\n",
                       encoding="utf-8")
    # a package of one module whose docstring names a missing fstchunk object
    (tmp_path / "fstchunk").mkdir()
    (tmp_path / "fstchunk" / "__init__.py").write_text(
        '"""A stand-in: see :func:`fstchunk.nowhere` and :func:`helper`."""\n\n\n'
        'def helper():\n    """Help."""\n')
    (tmp_path / "docs" / "api" / "decoding.md").write_text("# x\n\n::: fstchunk\n")
    for page in ("scoring", "models", "torch", "structures", "grammars", "fstchunk", "sklearn"):
        (tmp_path / "docs" / "api" / f"{page}.md").write_text("# x\n")
    (tmp_path / "docs" / "cli.md").write_text("# CLI\n")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                        "-d", str(tmp_path / "site")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    err = r.stderr + r.stdout
    assert r.returncode != 0 and "no-such-section" in err, err[-3000:]
    assert "fstchunk.nowhere" in err and "helper" not in err.split("fstchunk.nowhere")[1][:40]
