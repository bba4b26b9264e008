"""Feature template files: CRF++'s syntax, Wapiti's commands, fstchunk's functions.

A template file has one template per line (CRF++, taku910/crfpp ``feature_index.cpp``;
Wapiti, Jekub/Wapiti ``pattern.c``)::

    # a comment; empty lines are skipped too (CRF++), an indented line is refused
    %pad __BOS{}__ __EOS+{}__       what a position outside the sentence reads
    U01:%x[-1,0]/%x[0,0]            CRF++: the attribute is the whole expanded line
    U:W-1W0=%x[-1,word]|%x[0,word]  the ``U:`` marker (Wapiti's form) is dropped
    U:pre3=%x[0,word:pre3]          fstchunk's functions
    B                               the label bigram

Macros, ``%c[ROW,COL]`` (white space inside the brackets is ignored):

* ``%x[r,c]``: column ``c`` of the token ``r`` positions away (CRF++); ``%t[r,c,"re"]``
  ``true``/``false`` whether the regular expression matches, ``%m[r,c,"re"]`` its
  first match, empty if none (Wapiti, whose regex subset — ``.``, ``^``, ``$``, ``*``,
  ``?``, classes ``\\d \\a \\w \\l \\u \\p \\s`` and their upper-case complements — is
  translated to Python's :mod:`re` so as to match what Wapiti's matcher matches, lazy
  ``*`` included: :func:`wapiti_regex`); an upper-case command (``%X``, ``%T``, ``%M``)
  lower-cases its result (Wapiti); ``@r`` is an absolute row (Wapiti: ``@1`` the first
  token, ``@-1`` the last).
* ``c`` is a column number, 0-based as in CRF++ (of the training file; it must be the
  column that ``--columns`` names ``word`` or ``pos``, which it is then bound to, so
  that decoding inputs are read by role), or the name ``word`` or ``pos`` itself.
* ``:f`` after the column applies functions left to right (fstchunk's extension):
  ``lower``, ``shape`` (:func:`word_shape`), ``cap`` (:func:`capital_class`), ``preK``
  and ``sufK`` (the first/last K characters; undefined for a shorter value),
  ``out`` (empty outside the sentence, undefined inside: ``U:first%x[-1,word:out]``
  fires on the first token only).  An attribute with an undefined part is not
  written for that token.  Outside the sentence the functions other than ``out``
  return the padding unchanged.

Padding: position ``k`` before the sentence (``k = -1, -2, ...``) reads BEFORE with
``{}`` replaced by ``k``, position ``k`` after it (``k = 1, 2, ...``) reads AFTER with
``{}`` replaced by ``k``; the default is CRF++'s ``%pad _B{} _B+{}`` (``_B-1``,
``_B+1``).

Bigram templates: fstchunk's CRF always has label-bigram weights (transitions, and
start/end weights), so a template file must say ``B`` (or Wapiti's bare ``*``); a
file without one is refused (CRF++ would train without transitions), and so is a
bigram template with observation context (``B01:%x[0,0]``, ``*:...%x[0,1]``): its
features are not label bigrams.  Every error names ``file:line:column``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from itertools import repeat
from pathlib import Path
from typing import Callable, Sequence

from ..io.columns import Columns
from ..core import sources
from ..core.errors import InputError
from .wapiti import REGEX_FLAVORS, wapiti_regex

#: the column roles a template may read by name
ROLES = ("word", "pos")
#: CRF++'s padding (``_B-1`` before the sentence, ``_B+1`` after it)
CRFPP_PAD = ("_B{}", "_B+{}")


def word_shape(word: str) -> str:
    """Collapsed character classes: 'Verwilghen' -> 'Xx', '1.8' -> 'd.d'
    (the HMM's unknown-word classes and the NER template's shape feature)."""
    s = re.sub(r"[A-Z]", "X", word)
    s = re.sub(r"[a-z]", "x", s)
    s = re.sub(r"[0-9]", "d", s)
    return re.sub(r"(.)\1+", r"\1", s)


def capital_class(word: str) -> str:
    """Shimizu & Haas Table 5, first rule that matches: CAPITAL, CAP_ONE, CAP_ALL, CAP_MIX, NUMBER."""
    if re.fullmatch(r"[A-Z][a-z]+", word):
        return "CAPITAL"
    if re.fullmatch(r"[A-Z]", word):
        return "CAP_ONE"
    if re.fullmatch(r"[A-Z]+", word):
        return "CAP_ALL"
    if re.match(r"[A-Z]+[a-z]+[A-Z]+[a-z]", word):
        return "CAP_MIX"
    if re.search(r"[0-9]", word):
        return "NUMBER"
    return "-"


@functools.lru_cache(maxsize=None)
def _function(name: str) -> Callable[[str], str | None] | None:
    """The value function ``name`` (None: no such function)."""
    simple = {"lower": str.lower, "shape": word_shape, "cap": capital_class}
    if name in simple:
        return simple[name]
    m = re.fullmatch(r"(pre|suf)([1-9][0-9]*)", name)
    if m is None:
        return None
    k = int(m.group(2))
    if m.group(1) == "pre":
        return lambda v: v[:k] if len(v) >= k else None
    return lambda v: v[-k:] if len(v) >= k else None


FUNCTIONS = ("lower", "shape", "cap", "preK", "sufK", "out")

@dataclass(frozen=True)
class Ref:
    """One macro: command (``x``, ``t``, ``m``), row (relative, or absolute), column
    (a role, or a file column number until :meth:`Template.bind`), functions, regex,
    whether the result is lower-cased, and where it stands (line, column)."""
    command: str
    row: int
    absolute: bool
    col: str | int
    functions: tuple[str, ...]
    regex: str | None
    caps: bool
    line: int
    column: int
    flavor: str = "wapiti"               # how ``regex`` reads (:data:`REGEX_FLAVORS`)

    def transform(self, v: str, inside: bool) -> str | None:
        """The macro's result for the value ``v`` at a position inside the sentence or
        (``inside`` False) for the padding ``v``; None: undefined."""
        for f in self.functions:
            if f == "out":
                v = None if inside else ""
            elif inside:
                v = _function(f)(v)
            if v is None:
                return None
        if self.command == "t":
            v = "true" if wapiti_regex(self.regex, self.flavor).search(v) else "false"
        elif self.command == "m":
            m = wapiti_regex(self.regex, self.flavor).search(v)
            v = m.group(0) if m else ""
        return v.lower() if self.caps else v

    def values(self, column: Sequence[str], pad: tuple[str, str], cache: dict
               ) -> list[str | None]:
        """The macro's result at every token of a sentence whose column is ``column``;
        ``cache`` holds the transformed column per macro kind, for the sentence."""
        key = (self.col, self.functions, self.command, self.regex, self.caps, self.flavor)
        whole = cache.get((key, self.row, self.absolute))
        if whole is None:
            whole = cache[key, self.row, self.absolute] = self._values(column, pad, cache, key)
        return whole

    def _values(self, column: Sequence[str], pad: tuple[str, str], cache: dict, key: tuple
                ) -> list[str | None]:
        n = len(column)
        inside = cache.get(key)
        if inside is None:
            inside = cache[key] = [self.transform(v, True) for v in column]

        def at(p: int) -> str | None:
            if 0 <= p < n:
                return inside[p]
            return self.transform(pad[0].format(p) if p < 0 else pad[1].format(p - n + 1),
                                  False)

        if self.absolute:
            return [at(self.row - 1 if self.row > 0 else n + self.row)] * n
        r = self.row
        lo, hi = max(0, -r), min(n, n - r)          # tokens i whose i + r is inside
        if lo >= hi:
            return [at(i + r) for i in range(n)]
        return ([at(i + r) for i in range(lo)] + inside[lo + r:hi + r]
                + [at(i + r) for i in range(hi, n)])


@dataclass(frozen=True)
class Line:
    """One unigram template: literal text and macros in order, and its line number."""
    parts: tuple[str | Ref, ...]
    line: int

    @property
    def may_drop(self) -> bool:
        """Whether a macro of the line may be undefined (``preK``, ``sufK``, ``out``)."""
        return any(f == "out" or f[:3] in ("pre", "suf") for p in self.parts
                   if isinstance(p, Ref) for f in p.functions)


@dataclass(frozen=True)
class Template:
    """A parsed template file: its unigram lines, padding, name (a built-in name or the
    file's path), text (what a model file stores) and how its regular expressions read
    (:data:`REGEX_FLAVORS`, stored as the model's ``template_regex``)."""
    name: str
    source: str
    lines: tuple[Line, ...]
    pad: tuple[str, str]
    flavor: str = "wapiti"

    @property
    def refs(self) -> list[Ref]:
        return [p for ln in self.lines for p in ln.parts if isinstance(p, Ref)]

    @property
    def reads_pos(self) -> bool:
        """Whether some macro reads the ``pos`` role (after :meth:`bind`; a column
        number counts as POS until bound)."""
        return any(r.col != "word" for r in self.refs)

    def where(self, ref_or_line: Ref | int, column: int = 1) -> str:
        if isinstance(ref_or_line, Ref):
            return f"{self.name}:{ref_or_line.line}:{ref_or_line.column}"
        return f"{self.name}:{ref_or_line}:{column}"

    def bind(self, columns: Columns, width: int | None = None, where: str = "the data"
             ) -> "Template":
        """The template with its column numbers bound to the roles ``columns`` (absolute
        indices) gives them; one InputError naming the template's file:line:column and
        the data for a column the data lacks, the gold tag column, a column ``columns``
        does not read, or ``pos`` without a POS column."""
        spec = columns.spec()
        role_of = {columns.word: "word"}
        if columns.pos is not None:
            role_of[columns.pos] = "pos"

        def bound(r: Ref) -> Ref:
            if isinstance(r.col, int):
                if width is not None and r.col >= width:
                    raise InputError(f"{self.where(r)}: reads column {r.col} (0-based), but "
                                     f"{where} has {width} column{'s' if width != 1 else ''}")
                if r.col == columns.tag:
                    raise InputError(f"{self.where(r)}: reads column {r.col} (0-based), the "
                                     f"gold tag column of --columns {spec} ({where}): a "
                                     f"feature must not read the answer")
                if r.col not in role_of:
                    raise InputError(f"{self.where(r)}: reads column {r.col} (0-based), which "
                                     f"--columns {spec} does not read ({where}); fstchunk "
                                     f"reads the word and POS columns: name it there")
                return replace(r, col=role_of[r.col])
            if r.col == "pos" and columns.pos is None:
                raise InputError(f"{self.where(r)}: reads the POS column, but --columns "
                                 f"{spec} has none ({where})")
            return r

        lines = tuple(Line(tuple(bound(p) if isinstance(p, Ref) else p for p in ln.parts),
                           ln.line) for ln in self.lines)
        return replace(self, lines=lines)

    def features(self, columns: dict[str, Sequence[str]]) -> list[list[str]]:
        """The attribute strings of every token of one sentence, its columns by role
        (``word``, and ``pos`` if the template reads it); a bound template only."""
        n = len(columns["word"])
        cache: dict = {}
        per_line, holes = [], False
        for ln in self.lines:
            parts = ln.parts
            if len(parts) == 2 and isinstance(parts[0], str) and not ln.may_drop:
                head = parts[0]
                strs = [head + v for v in parts[1].values(columns[parts[1].col], self.pad,
                                                           cache)]
            else:
                seqs = [repeat(p, n) if isinstance(p, str) else
                        p.values(columns[p.col], self.pad, cache) for p in parts]
                if ln.may_drop:
                    strs = [None if None in t else "".join(t) for t in zip(*seqs)]
                    holes = True
                else:
                    strs = ["".join(t) for t in zip(*seqs)]
            per_line.append(strs)
        if holes:
            return [[f for f in token if f is not None] for token in zip(*per_line)]
        return [list(token) for token in zip(*per_line)]


_MACRO = re.compile(r"%([xtmXTM])\[")
_ARGS = re.compile(r"\s*(@?)\s*([+-]?\d+)\s*,\s*([A-Za-z]+|\d+)\s*((?::[A-Za-z0-9]+)*)\s*")


def _parse_line(text: str, lineno: int, name: str, start: int, flavor: str) -> tuple:
    """The parts of a unigram line's body (from column ``start``)."""
    parts: list[str | Ref] = []
    pos = start
    while pos < len(text):
        m = _MACRO.search(text, pos)
        if m is None:
            parts.append(text[pos:])
            break
        if m.start() > pos:
            parts.append(text[pos:m.start()])
        col = m.start() + 1

        def bad(msg: str, at: int = col) -> InputError:
            return InputError(f"{name}:{lineno}:{at}: {msg}")

        a = _ARGS.match(text, m.end())
        if a is None:
            raise bad(f"{text[m.start():m.end()]} needs [ROW,COLUMN] (e.g. %x[-1,0], "
                      f"%x[0,word:lower])")
        command, caps = m.group(1).lower(), m.group(1).isupper()
        funcs = tuple(f for f in a.group(4).split(":") if f)
        for f in funcs:
            if f != "out" and _function(f) is None:
                raise bad(f"unknown function {f!r}; the functions are {', '.join(FUNCTIONS)} "
                          f"(K = 1, 2, ...)", text.index(":" + f, a.start()) + 2)
        c = a.group(3)
        if not c.isdigit() and c not in ROLES:
            raise bad(f"unknown column {c!r}: a 0-based column number or one of "
                      f"{', '.join(ROLES)}", a.start(3) + 1)
        end, regex = a.end(), None
        if command in "tm":
            r = re.compile(r',\s*"((?:[^"\\]|\\.)*)"\s*').match(text, end)
            if r is None:
                raise bad(f'%{m.group(1)}[ROW,COLUMN,"REGEX"] needs its quoted regular '
                          f'expression', end + 1)
            regex, end = r.group(1), r.end()
            try:
                wapiti_regex(regex, flavor)
            except InputError as e:
                raise bad(str(e), r.start(1) + 1) from None
        if end >= len(text) or text[end] != "]":
            raise bad("the macro is not closed by ']'", end + 1)
        row, absolute = int(a.group(2)), bool(a.group(1))
        if absolute and row == 0:
            raise bad("absolute row @0 does not exist (@1 is the first token, @-1 the last)")
        parts.append(Ref(command, row, absolute, int(c) if c.isdigit() else c, funcs, regex,
                         caps, lineno, col, flavor))
        pos = end + 1
    return tuple(parts)


def parse_template(text: str, name: str = "<template>", flavor: str = "wapiti",
                   saved: bool = False) -> Template:
    """The :class:`Template` of a template file's ``text``; ``name`` (the path) is what
    errors and models name it by; ``flavor``: how its regular expressions read
    (:data:`REGEX_FLAVORS`); ``saved``: a model file's text (its indented lines, skipped
    when it was trained, are skipped again).  InputError naming ``name:line:column``
    otherwise; a byte-order mark is dropped."""
    if flavor not in REGEX_FLAVORS:
        raise InputError(f"{name}: unknown regular-expression flavor {flavor!r} "
                         f"({', '.join(REGEX_FLAVORS)})")
    text = text.removeprefix("\ufeff")
    lines: list[Line] = []
    pad, bigram = CRFPP_PAD, False
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r\n\t ")
        if not line or line[0] == "#" or (saved and line[0] in " \t"):
            continue
        if line[0] in " \t":            # CRF++ refuses it ("unknown type"), never skips it
            raise InputError(f"{name}:{lineno}:1: the line starts with white space; a line "
                             f"starts in the first column (CRF++ refuses it too)")
        if line.startswith("%pad"):
            fields = line.split()
            if len(fields) != 3 or fields[0] != "%pad" or not all(
                    f.count("{}") == 1 for f in fields[1:]):
                raise InputError(f"{name}:{lineno}:1: write %pad BEFORE AFTER, each with one "
                                 f"{{}} for the distance (e.g. %pad _B{{}} _B+{{}})")
            pad = (fields[1], fields[2])
            continue
        kind = line[0]
        if kind in "B*":
            m = _MACRO.search(line)
            if m is not None:
                raise InputError(
                    f"{name}:{lineno}:{m.start() + 1}: a bigram template with observation "
                    f"context; fstchunk's transitions are label bigrams (a bare B): write the "
                    f"observation as a U line" + (" and a bare B" if kind == "*" else ""))
            if kind == "*" and line != "*" and not line.startswith("*:"):
                raise InputError(f"{name}:{lineno}:1: write Wapiti's bigram as a bare *")
            bigram = True
            continue
        if kind != "U":
            raise InputError(f"{name}:{lineno}:1: a template line starts with U (unigram), B "
                             f"(bigram), * (Wapiti's both), # (a comment) or %pad; got "
                             f"{line[:20]!r}")
        start = 2 if line.startswith("U:") else 0
        body = _parse_line(line, lineno, name, start, flavor)
        if not body:
            raise InputError(f"{name}:{lineno}:1: an empty unigram template")
        lines.append(Line(body, lineno))
    if not bigram:
        raise InputError(f"{name}: no B line: fstchunk's CRF always has label-bigram "
                         f"(transition) weights, which a CRF++ template without B would not "
                         f"have; add a line B")
    if not lines:
        raise InputError(f"{name}: no U line: the template writes no attribute")
    return Template(name, text, tuple(lines), pad, flavor)


def read_template(path: str | Path) -> Template:
    """The template file at ``path`` (UTF-8); InputError naming it if it cannot be read."""
    name = sources.name(path)
    try:
        text = sources.read_bytes(path).decode("utf-8")
    except OSError as e:
        raise InputError(f"{name}: cannot read the template file ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{name}: not UTF-8 ({e.reason} at byte {e.start})") from None
    return parse_template(text, name)
