"""MkDocs hooks of the documentation site (``mkdocs.yml``: ``hooks``).

* every page with several Python blocks: a note that they run in one session;
* ``cli.md``'s marker ``<!-- cli-reference -->`` becomes the CLI reference, generated
  from :func:`fstchunk.cli.build_parser`: every command, its usage line as argparse
  prints it, and every argument with its help and default (no hand-copied option
  lists);
* ``benchmarks/RESULTS.md`` and its plots become pages of the site at the same path, so
  that a page's link ``../benchmarks/RESULTS.md#section`` (right on GitHub, from
  ``docs/``) is rewritten to the site's copy and its anchor checked by ``--strict``;
  on the site, RESULTS.md reads for users: the project's issue numbers and the word
  "verdict" are left out (:func:`for_users`), every heading keeping its anchor;
* the HTML of every page: ``$...$`` formulas (pymdownx.arithmatex) become MathML, which
  browsers draw without scripts or fonts from elsewhere (:func:`mathml`).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys
from collections.abc import Iterator

from mkdocs.structure.files import File, Files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:            # document this checkout, not an installed copy
    sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from griffe_roles import without_issues  # noqa: E402  (docs/, beside this file)
MARKER = "<!-- cli-reference -->"
#: files of the repository outside docs/ that the site carries, at the same path
IMPORTED = ("benchmarks/RESULTS.md", "benchmarks/*.png")
LINK = re.compile(r"(\]\()([^)\s#]+)((?:#[^)\s]*)?\))")


def imported_files() -> list[str]:
    """The repository paths of :data:`IMPORTED`, sorted."""
    out: list[str] = []
    for pattern in IMPORTED:
        out.extend(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, pattern)))
    return sorted(p.replace(os.sep, "/") for p in out)


def on_files(files: Files, config) -> Files:
    for rel in imported_files():
        with open(os.path.join(ROOT, rel), "rb") as fh:
            files.append(File.generated(config, rel, content=fh.read()))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    markdown = _repoint_links(markdown, page.file.src_uri)
    if page.file.src_uri == "benchmarks/RESULTS.md":
        markdown = for_users(markdown)
    markdown = one_session_note(markdown)
    if MARKER in markdown:
        from fstchunk.cli import build_parser
        markdown = markdown.replace(MARKER, cli_reference(build_parser()))
    return markdown


def _repoint_links(markdown: str, src_uri: str) -> str:
    """Links from ``docs/PAGE`` to an imported repository file, pointed at the site's
    copy (a relative link that reads right both on GitHub and on the site)."""
    if src_uri.startswith("benchmarks/"):
        return markdown
    page_dir = os.path.dirname(src_uri)
    imported = set(imported_files())

    def repoint(m: re.Match) -> str:
        target = os.path.normpath(os.path.join("docs", page_dir, m.group(2))).replace(os.sep, "/")
        if target not in imported:
            return m.group(0)
        return m.group(1) + os.path.relpath(target, page_dir or ".").replace(os.sep, "/") + m.group(3)
    return LINK.sub(repoint, markdown)


def on_page_content(html: str, page, config, files) -> str:
    return mathml(html)


SESSION_NOTE = ('!!! note "One Python session"\n    The Python blocks of this page run '
                'in one session, in order, as the test suite runs them: a block uses what '
                'the blocks before it defined.\n')


def one_session_note(markdown: str) -> str:
    """A page with several Python blocks says, under its title, that they run in one
    session (unless it says so itself)."""
    if markdown.count("```python") < 2 or "in one session" in markdown:
        return markdown
    return re.sub(r"^(# .+\n)", lambda m: m.group(1) + "\n" + SESSION_NOTE, markdown,
                  count=1, flags=re.M)


# ---------------------------------------------------------------- formulas

MATH = re.compile(r'<(span|div) class="arithmatex">\s*\\([(\[])(.*?)\\[)\]]\s*</\1>', re.S)


def mathml(html: str) -> str:
    """Every formula pymdownx.arithmatex marked (``generic: true``: ``\\(...\\)`` in a
    span, ``\\[...\\]`` in a div) as MathML, drawn by the browser itself: no script,
    no font or CDN to fetch.  A formula latex2mathml cannot read fails the build,
    naming it."""
    import html as html_lib

    from latex2mathml.converter import convert

    def one(m: re.Match) -> str:
        tex = html_lib.unescape(m.group(3))
        try:
            out = convert(tex, display="block" if m.group(2) == "[" else "inline")
        except Exception as exc:            # latex2mathml raises its own kinds
            raise ValueError(f"formula {tex!r}: {exc}") from exc
        if re.search(r">\\[A-Za-z]", out):     # a command it copied as text
            raise ValueError(f"formula {tex!r}: latex2mathml does not know {out!r}")
        return out
    return MATH.sub(one, html)


# ---------------------------------------------------------------- RESULTS.md for users

HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$", re.M)


def _slug(heading: str) -> str:
    from pymdownx.slugs import slugify
    return slugify(case="lower")(heading, "-")


def for_users(markdown: str) -> str:
    """RESULTS.md as the site shows it: the project's issue numbers left out of the
    text (a heading keeps its anchor, ``{#...}``, so every link to it still holds)
    and "verdict" read as "outcome"; code blocks and spans unchanged."""
    def heading(m: re.Match) -> str:
        text = _plain(m.group(2))
        return m.group(0) if text == m.group(2) else f"{m.group(1)} {text} {{#{_slug(m.group(2))}}}"

    markdown = PLOT.sub(_show_plot, markdown)
    parts = re.split(r"(```.*?```|`[^`\n]*`)", markdown, flags=re.S)
    for i in range(0, len(parts), 2):
        parts[i] = _plain(HEADING.sub(heading, parts[i]))
    return "".join(parts)


#: a section's "Plot: `NAME.png`" line (a paragraph of its own or its last sentence)
PLOT = re.compile(r"^(?!>)(.*\bPlot: `(?:benchmarks/)?([\w.-]+\.png)`.*)$", re.M)


def _show_plot(m: re.Match) -> str:
    """The line, then the plot it names as a picture (unless the page shows it already)."""
    return m.group(1) + (f"\n\n![{m.group(2)}]({m.group(2)})"
                         if os.path.exists(os.path.join(ROOT, "benchmarks", m.group(2))) else "")


def _plain(text: str) -> str:
    text = without_issues(text)
    text = re.sub(r"\*Verdict:\*", "*Outcome:*", text).replace("the verdict", "the result")
    text = re.sub(r"\| verdict \|", "| outcome |", text)
    return text.replace("against the issues' targets", "against the targets")


# ---------------------------------------------------------------- the CLI reference

def commands(parser: argparse.ArgumentParser, help_text: str = "",
             ) -> Iterator[tuple[argparse.ArgumentParser, str]]:
    """``(parser, one-line help)`` of ``parser`` and every subcommand below it, depth first."""
    yield parser, help_text
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield from commands(sub, helps.get(name, ""))


def _cell(text: str) -> str:
    """Plain text as one Markdown table cell."""
    text = " ".join(str(text).split())
    text = re.sub(r"([\\`*_\[\]|])", r"\\\1", text)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _argument(action: argparse.Action) -> str:
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return " \\| ".join(f"`{c}`" for c in action.choices)
    if action.nargs == 0:
        return ""
    metavar = action.metavar or (action.dest if not action.option_strings else action.dest.upper())
    suffix = {"*": " ...", "+": " ...", "?": " (optional)"}.get(action.nargs, "")
    return f"`{metavar}`{suffix}"


def _default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.default is argparse.SUPPRESS or isinstance(
            action, (argparse._HelpAction, argparse._VersionAction)):
        return ""
    return f"`{action.default}`"


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if action.help is None or action.help is argparse.SUPPRESS:
        return ""
    params = dict(vars(action), prog=parser.prog)
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    return action.help % params


def _usage(parser: argparse.ArgumentParser, width: int = 88) -> str:
    """The usage line as argparse prints it, wrapped at ``width`` whatever the terminal."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        return parser.format_usage().strip()
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def cli_reference(parser: argparse.ArgumentParser) -> str:
    """Markdown of every command of ``parser``: a heading, its help, its usage as
    argparse prints it, and a table of its arguments (help and default)."""
    out = []
    for p, help_text in commands(parser):
        depth = len(p.prog.split())
        out.append(f"{'#' * min(depth + 1, 4)} `{p.prog}`\n")
        if help_text:
            out.append(_cell(help_text) + "\n")
        if p.description:
            out.append(_cell(p.description) + "\n")
        usage = _usage(p)
        out.append("```text\n" + usage + "\n```\n")
        rows = []
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                names = ", ".join(f"`{p.prog} {n}`" for n in action.choices)
                rows.append(f"| `{action.metavar or action.dest}` | subcommand | | {names} |")
                continue
            name = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}`"
            rows.append(f"| {name} | {_argument(action)} | {_default(action)} "
                        f"| {_cell(_help(p, action))} |")
        out.append("| argument | value | default | help |\n|---|---|---|---|\n"
                   + "\n".join(rows) + "\n")
    return "\n".join(out)
