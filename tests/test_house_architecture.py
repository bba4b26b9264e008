"""docs/architecture.md against the code: its room table's "reads" column is the real
import graph between rooms (both ways), every module has a row, no import cycle between
modules or rooms, no module over the size limit.

A room is a top-level module (``fstchunk/x.py``, named ``x``) or a subpackage
(``fstchunk/x/``, named ``x``); the package's own ``__init__.py`` and ``__main__.py`` are
the rooms ``__init__`` and ``__main__``.  A room reads another when one of its modules
imports one of the other's (every import statement: function-local and type-checking
ones included).
"""

from __future__ import annotations

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "fstchunk")
DOC = os.path.join(ROOT, "docs", "architecture.md")
MAX_LINES = 450


# ---------------------------------------------------------------- the code's graph

def modules() -> dict[str, str]:
    """Dotted module name -> path, for every module of fstchunk/."""
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                out[dotted.removesuffix(".__init__")] = path
    return out


def imports(mods: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the fstchunk modules it imports (``from .x import y`` counts as
    importing ``x.y`` where that is a module, else ``x``)."""
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in mods else base
                           for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in mods:        # `import a.b.c` of a name
                    target = target.rpartition(".")[0]
                if target and target != name:
                    found.add(target)
        graph[name] = found
    return graph


def room_of(module: str) -> str:
    """``fstchunk.engine.chain`` -> ``engine``; ``fstchunk`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def room_reads(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    reads: dict[str, set[str]] = {}
    for module, targets in graph.items():
        room = room_of(module)
        reads.setdefault(room, set()).update(
            room_of(t) for t in targets if room_of(t) != room)
    return reads


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


# ---------------------------------------------------------------- the document's table

def table() -> list[tuple[list[str], str, dict[str, set[str]]]]:
    """The rows of the ``| room | holds | reads |`` table: (rooms, holds, reads per room).

    The reads cell is ``—`` (nothing of ours), a comma-separated list of rooms (a row of
    one room), or ``room: a, b; other: —`` (a row of several)."""
    lines = open(DOC, encoding="utf-8").read().splitlines()
    start = next(i for i, line in enumerate(lines)
                 if re.fullmatch(r"\|\s*room\s*\|\s*holds\s*\|\s*reads\s*\|", line.strip()))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        assert len(cells) == 3, f"architecture.md: a row of {len(cells)} cells: {line[:60]}"
        room_cell, holds, reads_cell = cells
        rooms = [name.removesuffix(".py").removesuffix("/")
                 for name in re.findall(r"`([^`]+)`", room_cell)]
        assert rooms, f"architecture.md: a row names no room: {room_cell!r}"
        rows.append((rooms, holds, parse_reads(rooms, reads_cell)))
    return rows


def names(text: str) -> set[str]:
    text = text.replace("`", "").strip()
    if text in ("—", "-", ""):
        return set()
    return {n.strip().removesuffix(".py").removesuffix("/") for n in text.split(",")}


def parse_reads(rooms: list[str], cell: str) -> dict[str, set[str]]:
    if ":" not in cell:
        assert len(rooms) == 1, (f"architecture.md: row {rooms} reads {cell!r}: a row of "
                                 "several rooms gives each its reads (`room: a, b; ...`)")
        return {rooms[0]: names(cell)}
    out = {}
    for part in cell.split(";"):
        room, _, reads = part.partition(":")
        room = room.replace("`", "").strip().removesuffix(".py").removesuffix("/")
        assert room in rooms, f"architecture.md: reads of {room!r}, not a room of {rooms}"
        out[room] = names(reads)
    assert set(out) == set(rooms), f"architecture.md: row {rooms} gives reads of {sorted(out)}"
    return out


# ---------------------------------------------------------------- the tests

MODS = modules()
GRAPH = imports(MODS)
REAL = room_reads(GRAPH)


def documented() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for _, _, reads in table():
        for room, read in reads.items():
            assert room not in out, f"architecture.md: room {room!r} has two rows"
            out[room] = read
    return out


def test_every_room_has_a_row_and_every_row_is_a_room():
    doc = documented()
    assert not sorted(set(REAL) - set(doc)), "rooms with no row in docs/architecture.md"
    assert not sorted(set(doc) - set(REAL)), "rows of docs/architecture.md for no room"


def test_the_reads_column_is_the_import_graph():
    doc = documented()
    wrong = []
    for room in sorted(set(doc) & set(REAL)):
        listed, real = doc[room], REAL[room]
        if listed - real:
            wrong.append(f"{room} is said to read {sorted(listed - real)}, does not")
        if real - listed:
            wrong.append(f"{room} reads {sorted(real - listed)}, not listed")
    assert not wrong, "docs/architecture.md's reads column:\n" + "\n".join(wrong)


def test_every_module_of_a_subpackage_is_named_in_its_row():
    rows = {room: holds for rooms, holds, _ in table() for room in rooms}
    missing = []
    for module in sorted(MODS):
        parts = module.split(".")
        if len(parts) == 3 and parts[1] in rows and not re.search(
                rf"(?<![\w.]){re.escape(parts[2])}\b", rows[parts[1]]):
            missing.append(module)
    assert not missing, "modules that docs/architecture.md does not name in their row"


def _face(module: str, target: str) -> bool:
    """A package's __init__ importing its own submodules: its face, not a cycle."""
    return MODS[module].endswith("__init__.py") and target.startswith(module + ".")


def test_no_import_cycle_between_modules():
    graph = {m: {t for t in ts if not _face(m, t)} for m, ts in GRAPH.items()}
    assert cycles(graph) == []


def test_no_import_cycle_between_rooms():
    graph = {room: reads - {"__init__"} for room, reads in REAL.items() if room != "__init__"}
    assert cycles(graph) == []


def test_no_module_over_the_size_limit():
    sizes = {m: sum(1 for _ in open(p, encoding="utf-8")) for m, p in MODS.items()}
    assert not {m: n for m, n in sizes.items() if n > MAX_LINES}


@pytest.mark.parametrize("graph, found", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_the_cycle_finder_finds_cycles(graph, found):
    assert cycles(graph) == found


def test_the_reads_cell_forms(tmp_path):
    assert parse_reads(["x"], "—") == {"x": set()}
    assert parse_reads(["x"], "errors, `engine`") == {"x": {"errors", "engine"}}
    assert parse_reads(["a", "b"], "`a`: errors; `b`: —") == {"a": {"errors"}, "b": set()}
    with pytest.raises(AssertionError):
        parse_reads(["a", "b"], "errors")
