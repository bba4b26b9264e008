"""The built site as a reader meets it: it loads nothing from elsewhere (fonts, scripts,
formulas), its formulas are MathML, the names ``import fstchunk`` gives have their own
entries with parameters, returns, errors and examples that run, signatures fit the
page, docstring mathematics is not read as emphasis, and the results page carries no
issue numbers or verdicts (its anchors kept)."""

from __future__ import annotations

import doctest
import glob
import importlib.util
import os
import re

import pytest

import fstchunk
from test_docs import DOCS, RESULTS, _html, _slug, _text, site  # noqa: F401  (the fixture)

#: the top-level names whose docstrings give Args, Returns, Raises and Examples
DOCUMENTED = ("tags_to_chunks", "read_conll",
              "write_conll", "evaluate", "decode_map", "decode_posterior", "decode_meu",
              "decode_meu_corpus", "expected_f", "scored_chunks", "decode_chunks",
              "decode_sentences", "load_model", "CRF", "decoder", "iter_conll",
              "decode_loss_augmented", "Lattice.from_scores", "Lattice", "AttributeCRF",
              "Trainer", "Decoding", "ExpectedF", "Decoder", "ScoredChunk",
              "evaluate_file", "conlleval_chunks", "TagSet", "HMM", "JointModel",
              "SegmentModel", "expected_utility", "utility")


#: names whose docstrings give an example only (fstchunk/schemes/encodings.py is at the
#: size limit of test_house_architecture)
EXAMPLES = DOCUMENTED + ("chunks_to_tags", "convert", "is_valid", "FstchunkError",
                         "InputError", "SchemeError", "CoNLLError", "ModelFileError",
                         "OutputError", "BudgetError", "FstchunkWarning", "NotFittedError",
                         "FstchunkDeprecationWarning", "Utility")

#: the error family and its warning: each says when it is raised
ERRORS = ("FstchunkError", "InputError", "SchemeError", "CoNLLError", "ModelFileError",
          "OutputError", "LayoutError", "BudgetError", "DownloadError",
          "TrainingInterrupted", "NotFittedError", "FstchunkWarning",
          "FstchunkDeprecationWarning")


#: module attributes documented by the string after their assignment (what the site
#: renders; a ``#:`` comment it does not): a table of what they hold and an example
DATA = ("SCHEMES", "OBJECTIVES")


def _attribute_doc(name: str) -> str | None:
    """The docstring of the top-level data ``name``: the string literal right after its
    assignment in the module that defines it."""
    import ast
    import importlib
    module = importlib.import_module(fstchunk._LAZY[name][0])
    with open(module.__file__, encoding="utf-8") as fh:
        body = ast.parse(fh.read()).body
    for node, after in zip(body, body[1:]):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(getattr(t, "id", None) == name for t in targets):
            is_doc = (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                      and isinstance(after.value.value, str))
            return after.value.value if is_doc else None
    return None


def _public(name: str):
    obj = fstchunk
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj
#: what a page may fetch from another host: nothing (a link the reader follows is fine)
FETCH = re.compile(r"<(?:link|script|img|source|iframe)\b[^>]*\b(?:href|src)=\"(https?:)?//"
                   r"|url\(\s*['\"]?(?:https?:)?//|@import\s+['\"](?:https?:)?//", re.I)


def _docs_module(name: str, file: str):
    """A module of docs/ (the site's hooks and extensions), loaded from its file."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(DOCS, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hooks():
    return _docs_module("fstchunk_docs_hooks", "hooks.py")


def _griffe_roles():
    return _docs_module("fstchunk_docs_roles", "griffe_roles.py")


def test_site_fetches_nothing_from_elsewhere(site):
    """Every page, style sheet and script of the site: no font service, no CDN."""
    files = [p for ext in ("html", "css", "js")
             for p in glob.glob(os.path.join(site, "**", f"*.{ext}"), recursive=True)]
    assert len(files) > 20
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        assert not FETCH.search(text), (path, FETCH.search(text).group(0))
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, path


def test_formulas_are_mathml(site):
    """``$...$`` in a docstring is MathML on the page: no script draws it, and no
    ``\\command`` is left as text."""
    page = _html(site, "api/fstchunk")
    assert page.count("<math") >= 5
    assert 'class="arithmatex"' not in page and "$F_" not in page
    assert not re.search(r"<mi>\\[A-Za-z]", page)
    hooks = _hooks()
    assert "<math" in hooks.mathml('<span class="arithmatex">\\(F_\\beta\\)</span>')
    with pytest.raises(ValueError, match="nosuchcommand"):
        hooks.mathml('<span class="arithmatex">\\(\\nosuchcommand x\\)</span>')


def test_top_level_names_have_entries_under_their_names(site):
    """``fstchunk.CRF``, ``fstchunk.decode_meu``, ...: each an entry (and a search
    target) of its own on the ``fstchunk`` page, under the name the README uses."""
    page = _html(site, "api/fstchunk")
    import types
    names = [n for n in fstchunk.__all__ if not isinstance(getattr(fstchunk, n), types.ModuleType)]
    missing = [n for n in names if f'id="fstchunk.{n}"' not in page]
    assert not missing, missing
    with open(os.path.join(site, "search", "search_index.json"), encoding="utf-8") as fh:
        index = fh.read()
    for name in ("fstchunk.CRF", "fstchunk.decode_meu", "fstchunk.expected_f"):
        assert f'"api/fstchunk/#{name}"' in index, name


def test_signatures_are_wrapped(site):
    """No signature of the API pages runs off the page (mkdocstrings formats them
    with ruff, which the docs and test extras install)."""
    sigs = []
    for path in glob.glob(os.path.join(site, "api", "**", "index.html"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            sigs += re.findall(r'<div class="doc-signature highlight"><pre>(.*?)</pre>',
                               fh.read(), re.S)
    assert len(sigs) > 100
    long = [s for s in (_text(s) for s in sigs) if max(map(len, s.split("\n"))) > 88]
    assert not long, long[:3]
    page = _text(_html(site, "api/fstchunk"))
    assert "max_iter: int = 100,\n" in page             # the CRF's, one parameter a line


def test_top_level_docstrings_give_parameters_returns_raises_examples(site):
    page = _html(site, "api/fstchunk")
    for name in DOCUMENTED:
        doc = _public(name).__doc__
        sections = {"Args:", "Returns:", "Raises:", "Examples:"}
        if isinstance(_public(name), type):
            sections -= {"Returns:"}               # a class: its constructor gives itself
        sections -= {"write_conll": {"Returns:"},                             # return None
                     "decode_posterior": {"Raises:"},                         # raises nothing
                     "ExpectedF": {"Raises:"},                # a dataclass: no checks
                     # named tuples: no checks, and their fields are Attributes
                     # (griffe gives them no constructor signature to match Args)
                     "Decoding": {"Args:", "Raises:"}, "ScoredChunk": {"Args:", "Raises:"},
                     "Decoder": {"Args:", "Raises:"},  # the base takes no settings: its
                     }.get(name, set())                # subclasses' are decoder()'s
        for section in sections:
            assert re.search(rf"\n {{4,8}}{section}\n", doc), (name, section)
        entry = page.split(f'id="fstchunk.{name}"', 1)[1].split(' id="fstchunk.', 1)[0]
        if "Args:" in sections:
            assert 'doc-section-title">Parameters:' in entry, name     # a table, not prose


@pytest.mark.parametrize("name", EXAMPLES)
def test_top_level_examples_run_as_shown(name, corpus):
    obj = _public(name)
    if "data_path(" in obj.__doc__:
        corpus("conll2000", "train.txt")
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(obj, f"fstchunk.{name}", globs={"fstchunk": fstchunk})
    assert tests and tests[0].examples, name
    for test in tests:
        runner.run(test)
    assert runner.failures == 0, f"fstchunk.{name}: an example does not print what it shows"


def test_docstring_stars_are_not_emphasis(site):
    """``y*`` and ``Γ*{OI}Γ*`` in docstrings stay stars; ``*every*`` stays emphasis."""
    roles = _griffe_roles()
    assert roles.escape_links("m(y*) and F(y, y*) with *every* chunk") == \
        "m(y\\*) and F(y, y\\*) with *every* chunk"
    assert roles.escape_links("Γ*{OI}Γ*, **bold words**, `x*y`, $a*b$") == \
        "Γ\\*{OI}Γ\\*, **bold words**, `x*y`, $a*b$"
    assert roles.escape_links("    >>> 2*3*4") == "    >>> 2*3*4"
    assert roles.escape_links("Args:\n    **settings: more y*") == "Args:\n    **settings: more y\\*"
    ems = []
    for path in glob.glob(os.path.join(site, "api", "**", "index.html"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            ems += re.findall(r"<em>([^<]*)</em>", fh.read())
    garbled = [e for e in ems if re.search(r"[()=|∘·]", e)]
    assert not garbled, garbled


def test_results_page_reads_for_users(site):
    """No issue number and no "verdict" in the site's RESULTS page, while every
    heading keeps the anchor that pages and the summary table link."""
    page = _html(site, "benchmarks/RESULTS")
    text = _text(page)
    assert not re.search(r"\b[Ii]ssues? \d", text), re.search(r".{40}[Ii]ssues? \d.{20}", text)
    assert "verdict" not in text.lower()
    with open(RESULTS, encoding="utf-8") as fh:
        headings = re.findall(r"^#{2,3} (.+)$", fh.read(), re.M)
    assert sum("issue" in h for h in headings) >= 50
    for path in glob.glob(os.path.join(site, "api", "**", "index.html"), recursive=True):
        with open(path, encoding="utf-8") as fh:       # docstrings, as the site shows them
            assert not re.search(r"\b[Ii]ssues? \d", _text(fh.read())), path
    for heading in headings:
        if "issue" in heading:
            assert f'id="{_slug(heading)}"' in page, heading


def test_user_pages_hold_no_maintainers_notes():
    """The docs' own pages (RESULTS.md is shown through the hook above): no issue
    numbers, no verdicts, no notes on how the site is built."""
    for path in glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True):
        if os.path.relpath(path, DOCS) in ("architecture.md", "scaling.md"):
            continue                     # design notes for contributors
        with open(path, encoding="utf-8") as fh:
            prose = re.sub(r"\]\([^)]*\)", "]", fh.read())      # link targets keep anchors
        for pattern in (r"\b[Ii]ssue \d", r"[Vv]erdict", r"\bSphinx\b", r"MkDocs rather"):
            assert not re.search(pattern, prose), (path, pattern)


def test_map_meu_plots_name_the_standard_beta():
    """The stored MAP-vs-MEU plots' axes were drawn at β' = β² and labelled β; they are
    relabelled (benchmarks/relabel_beta_axis.py), and RESULTS.md says so."""
    with open(RESULTS, encoding="utf-8") as fh:
        text = fh.read()
    assert "Its β axis is the slides' β'" not in text
    assert text.count("relabel_beta_axis.py") == 3


def test_console_copy_buttons_copy_the_commands_only(site):
    """Material copies a block's innerText while ``[data-md-copying]`` is set; the
    site's style sheet hides the console lexer's prompts (.gp) and output (.go) then."""
    page = _html(site, "getting-started")
    assert 'class="gp"' in page and 'class="go"' in page     # console blocks lexed so
    assert 'href="stylesheets/copy.css"' in page or 'href="../stylesheets/copy.css"' in page
    with open(os.path.join(site, "stylesheets", "copy.css"), encoding="utf-8") as fh:
        css = re.sub(r"/\*.*?\*/", "", fh.read(), flags=re.S)
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", css))
    hidden = [sel for sel, body in rules.items() if "display: none" in body]
    assert any("[data-md-copying] .gp" in s and "[data-md-copying] .go" in s for s in hidden)


def test_pages_with_several_python_blocks_say_they_run_in_one_session(site):
    for path in glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            if fh.read().count("```python") < 2:
                continue
        page = os.path.relpath(path, DOCS)[:-3]
        page = page[:-len("index")] if page.endswith("index") else page
        assert "in one session" in _text(_html(site, page)), page


#: page -> the pictures it shows (the figures the pages discuss)
PICTURES = {
    "": ["benchmarks/meu_precision_recall_vs_beta_crf_ml_tmpt3.png"],
    "howto/calibration": ["benchmarks/calibration_reliability.png"],
    "howto/partial": ["howto/img/annotation.svg", "benchmarks/active_learning_ned.png",
                      "benchmarks/active_learning_conll2000.png",
                      "benchmarks/active_learning_partial_ned.png"],
    "howto/segments": ["benchmarks/segment_threshold_genia.png"],
    "howto/max-margin": ["benchmarks/m3n_learning_curve.png"],
    "howto/python-api": ["benchmarks/lattice_sentence.png"],
}


def test_pages_show_their_pictures(site):
    for page, pictures in PICTURES.items():
        html = _html(site, page)
        shown = {os.path.normpath(os.path.join(site, page, src))
                 for src in re.findall(r'<img [^>]*src="([^"]+)"', html)}
        for picture in pictures:
            path = os.path.normpath(os.path.join(site, picture))
            assert path in shown and os.path.exists(path), (page, picture)
    results = _html(site, "benchmarks/RESULTS")
    for png in glob.glob(os.path.join(os.path.dirname(RESULTS), "*.png")):
        name = os.path.basename(png)
        assert os.path.getsize(png) < 200_000, name
        if name != "lattice_sentence.png":
            assert f'src="../{name}"' in results or f'src="{name}"' in results, name


def _docstrings():
    """(where, docstring) of every module, class and function of the package."""
    import ast
    root = os.path.dirname(fstchunk.__file__)
    for path in glob.glob(os.path.join(root, "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    yield f"{os.path.relpath(path, root)}:{getattr(node, 'lineno', 1)}", doc


def test_docstring_examples_are_one_block():
    """An ``Examples:`` section's ``>>>`` lines all sit one level below the title, at
    one indentation: a line at the title's own level ends the section (Google style),
    and the page then shows the example as prose with the rest as a code block."""
    ragged = []
    for where, doc in _docstrings():
        title = re.search(r"\n( *)Examples:\n", doc)
        if not title:
            continue
        section = doc[title.end():]
        indents = {len(line) - len(line.lstrip()) for line in section.splitlines()
                   if line.lstrip().startswith(">>>")}
        if len(indents) > 1 or min(indents, default=99) <= len(title.group(1)):
            ragged.append((where, sorted(indents)))
    assert not ragged, ragged


def test_top_level_examples_render_as_one_code_block(site):
    page = _html(site, "api/fstchunk")
    for name in DOCUMENTED:
        entry = page.split(f'id="fstchunk.{name}"', 1)[1].split(' id="fstchunk.', 1)[0]
        examples = entry.split('doc-section-title">Examples:', 1)
        assert len(examples) == 2, name
        section = examples[1].split('doc-section-title', 1)[0]
        assert section.count("<pre>") == 1, (name, section.count("<pre>"))
        assert entry.count("&gt;&gt;&gt;") == section.count('class="gp">&gt;&gt;&gt;'), name


@pytest.mark.parametrize("name", DATA)
def test_top_level_data_say_what_they_hold(name, site):
    """``SCHEMES`` and ``OBJECTIVES``: a table of what they hold and an example that
    prints what it shows, on the page under their names."""
    doc = _attribute_doc(name)
    assert doc and "\n|---|" in doc and "\nExamples:\n" in doc, name
    test = doctest.DocTestParser().get_doctest(doc, {"fstchunk": fstchunk}, name, None, 0)
    assert test.examples, name
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0, f"fstchunk.{name}: an example does not print what it shows"
    page = _html(site, "api/fstchunk")
    entry = page.split(f'id="fstchunk.{name}"', 1)[1].split(' id="fstchunk.', 1)[0]
    assert "<table>" in entry and 'doc-section-title">Examples:' in entry, name


def test_every_error_says_when_it_is_raised_and_what_it_holds():
    """Each class of the error family: a docstring of its own saying when it is
    raised, the attributes it adds listed under ``Attributes:``; the base says how to
    catch the family, with an example."""
    assert set(ERRORS) == {n for n in fstchunk.__all__
                           if isinstance(getattr(fstchunk, n), type)
                           and issubclass(getattr(fstchunk, n), Warning | fstchunk.FstchunkError)}
    base = set(vars(fstchunk.FstchunkError("m")))
    for name in ERRORS:
        cls = _public(name)
        doc = cls.__dict__.get("__doc__") or ""
        assert len(doc.split()) >= 25, name
        if issubclass(cls, fstchunk.FstchunkError):
            own = set(vars(cls("m"))) - (base if cls is not fstchunk.FstchunkError else set())
            for attr in own:
                assert re.search(rf"\n {{4}}Attributes:\n(?: {{8}}.*\n)*? {{8}}{attr}:", doc), \
                    (name, attr)
    doc = fstchunk.FstchunkError.__doc__
    assert "except fstchunk.FstchunkError" in doc and re.search(r"\n {4}Examples:\n", doc)
