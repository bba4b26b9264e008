"""Griffe extension of the documentation build: the docstrings' reST roles as links.

fstchunk's docstrings name code with Sphinx roles (``:func:`decode_meu```,
``:class:`~fstchunk.core.errors.SchemeError```, ``:mod:`.objectives```).  Each is rewritten,
before mkdocstrings renders the docstring as Markdown, to an *optional* autorefs
cross-reference ``<autoref identifier="PATH" optional><code>TITLE</code></autoref>``:
a link where PATH is rendered on an API page, plain code elsewhere.  PATH is the role's
target resolved as Sphinx would: absolute (``fstchunk.x.y``), relative to the module
(``.spans``), in the object's scope (``Lattice``, then its imports), else the one object
of the package with that name.  A role naming an ``fstchunk`` object that does not exist
is a broken reference: it is logged as a warning, which fails ``mkdocs build --strict``.
The project's issue numbers ("(issue 21)") are left out (:func:`without_issues`).
``~`` shows the last component only; a trailing ``()`` is dropped.

The docstrings' mathematics is not Markdown: brackets followed by brackets or
parentheses (``[T](x, y)``, ``S_t[j][r]``) would read as links, and stars (``y*``,
``Γ*{OI}Γ*``) as emphasis, so outside code (code spans, indented blocks) and ``$...$``
formulas their ``[`` is escaped, and so is every ``*`` that does not open or close an
emphasis (``*word*``, ``**words**``: a star with no letter before it, its pair with no
letter after it).
"""

from __future__ import annotations

import html
import logging
import re
from collections import defaultdict
from typing import Any

import griffe

#: a role, its target possibly broken over lines by the docstring's wrapping
ROLE = re.compile(r":(?:py:)?(func|class|mod|meth|attr|data|exc|obj|const):`([^`]+)`")
#: a bracket pair that Markdown would read as a link or a reference
LINKISH = re.compile(r"\[([^\[\]`]*)\](?=[\[(])")
#: an emphasis the docstrings mean: ``*every*``, ``**bold words**`` (not ``y*`` or ``F*/2``)
EMPHASIS = re.compile(r"(?<![\w*\\])\*\*?[^\s*](?:[^*\n]*?[^\s*])?\*\*?(?![\w*])")
#: packages whose objects are never documented here: their roles become plain code
EXTERNAL = ("numpy", "np.", "scipy", "torch", "pynini", "dask", "distributed", "argparse",
            "os.", "sys.", "threadpoolctl", "tqdm", "concurrent", "multiprocessing")

#: the project's issue numbers as RESULTS.md and docstrings write them, and what the site says instead:
#: "(issue 17)" and "(issue 32, item 9)" left out, "(issue 32, not rerun)" -> "(not
#: rerun)", "issue 19's run" -> "the earlier run", "since issue 43" -> "since an
#: earlier change"
ISSUES = tuple((re.compile(a), b) for a, b in (
    (r" ?\(issues? \d+(?:,? (?:item|part) \d+|,? §\d+)?\)", ""),
    (r"[;,] issues? \d+\)", ")"),
    (r"\(issues? \d+(?:, (?:item|part) \d+)?[,;] ", "("),
    (r"\(issues? \d+: ", "(the earlier run: "),
    (r"\(issue \d+ example\)", "(the example)"),
    (r"\bthe issue \d+ sections", "the sections"),
    (r"\bissue \d+'s run\b", "the earlier run"),
    (r"\bissue \d+'s\b", "the earlier run's"),
    (r"\bissue \d+ had\b", "the earlier run had"),
    (r"\bissue 16\b", "the default-λ change"),
    (r"\b[Ii]ssues? \d+(?:, (?:item|part) \d+)?", "an earlier change"),
))


def without_issues(text: str) -> str:
    """``text`` without the project's issue numbers (:data:`ISSUES`): the site's pages
    and docstrings are for users."""
    for pattern, instead in ISSUES:
        text = pattern.sub(instead, text)
    return text


log = logging.getLogger("mkdocs.plugins.fstchunk.griffe_roles")


class ReSTRoles(griffe.Extension):
    """Rewrite every docstring's roles once the package is loaded (``on_package``)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        objects = list(_walk(pkg))
        by_name: dict[str, list[str]] = defaultdict(list)
        for obj in objects:
            by_name[obj.name].append(obj.path)
        for obj in objects:
            if obj.docstring is not None:
                text = escape_links(without_issues(obj.docstring.value))
                obj.docstring.value = ROLE.sub(
                    lambda m: _link(pkg, obj, by_name, m.group(2)), text)


def escape_links(text: str) -> str:
    """``text`` with every link-like ``[...]`` and every stray ``*`` of prose escaped;
    code and formulas left alone."""
    out, code, blank = [], False, True
    for line in text.split("\n"):
        indented = line.startswith("    ") and line.strip()
        code = bool(indented) and (blank or code)
        blank = not line.strip()
        if code or line.lstrip().startswith((">>>", "... ")):     # code, doctest lines
            out.append(line)
            continue
        # code spans, formulas, and a section's "**settings:" / "*args:" entry
        parts = re.split(r"(``.*?``|`[^`]*`|\$[^$]+\$|^\s*\*{1,2}\w+(?=:))", line)
        out.append("".join(p if i % 2 else _stars(LINKISH.sub(r"\\[\1\\]", p))
                           for i, p in enumerate(parts)))
    return "\n".join(out)


def _stars(prose: str) -> str:
    """``prose`` with each ``*`` outside an :data:`EMPHASIS` escaped."""
    parts = EMPHASIS.split(prose)
    spans = EMPHASIS.findall(prose)
    out = [re.sub(r"(?<!\\)\*", r"\\*", parts[0])]
    for span, rest in zip(spans, parts[1:]):
        out += [span, re.sub(r"(?<!\\)\*", r"\\*", rest)]
    return "".join(out)


def _walk(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


def _module(obj: griffe.Object) -> griffe.Object:
    while not obj.is_module:
        obj = obj.parent
    return obj


def _exists(pkg: griffe.Module, path: str) -> str | None:
    """The canonical path of ``path`` when it names an object of ``pkg``, else None."""
    parts = path.split(".")
    if parts[0] != pkg.name:
        return None
    obj: Any = pkg
    try:
        for part in parts[1:]:
            obj = obj.all_members[part] if obj.is_class else obj.members[part]
            if obj.is_alias:
                obj = obj.final_target
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    return obj.path


def _resolve(pkg: griffe.Module, obj: griffe.Object, by_name: dict[str, list[str]],
             target: str) -> str | None:
    """``target`` (no ``~``, no ``()``) as a canonical path of ``pkg``, or None."""
    if target.startswith("."):
        module = _module(obj)
        bases = [module.path] + ([module.parent.path] if module.parent else [])
        for base in bases:
            found = _exists(pkg, base + target)
            if found:
                return found
        target = target.lstrip(".")
    elif target.startswith(pkg.name + ".") or target == pkg.name:
        return _exists(pkg, target)
    head, _, rest = target.partition(".")
    scope = obj if obj.is_module or obj.is_class else obj.parent
    try:
        base = scope.resolve(head)
    except (griffe.NameResolutionError, AttributeError):
        base = None
    if base:
        found = _exists(pkg, base + ("." + rest if rest else ""))
        if found:
            return found
    last = target.rsplit(".", 1)[-1]
    candidates = [p for p in by_name.get(last, []) if p.endswith("." + target)]
    module = _module(obj).path
    near = [p for p in candidates if p.startswith(module + ".")]
    if len(near) == 1 or len(candidates) == 1:
        return (near or candidates)[0]
    return candidates[0] if candidates else None


def _link(pkg: griffe.Module, obj: griffe.Object, by_name: dict[str, list[str]],
          raw: str) -> str:
    """The role's replacement: an optional autoref, or plain code for other packages."""
    target = re.sub(r"\s+", "", raw)
    short = target.startswith("~")
    target = target.lstrip("~")
    if target.endswith("()"):
        target = target[:-2]
    title = target.rsplit(".", 1)[-1] if short else target.lstrip(".")
    code = f"<code>{html.escape(title)}</code>"
    if target.startswith(EXTERNAL):
        return code
    path = _resolve(pkg, obj, by_name, target)
    if path is None:
        if target.startswith(pkg.name + ".") or target.startswith("."):
            log.warning("%s: docstring names %s, which is not an object of %s",
                        obj.path, raw, pkg.name)
        return code
    return f'<autoref identifier="{path}" optional>{code}</autoref>'
