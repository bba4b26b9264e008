"""CRFsuite's data format (``crfsuite learn``/``tag`` input), read and written.

One item per line, a blank line between sequences (CRFsuite ``frontend/iwa.c`` and
``frontend/reader.c``)::

    B-NP<TAB>w[0]=He<TAB>pos[0]=PRP<TAB>len:2.0
    B-VP<TAB>w[0]=reckons<TAB>pos[0]=VBZ

* fields are separated by tabs (runs of tabs are one separator); the first field is
  the label, the others are attributes ``NAME`` or ``NAME:VALUE`` (VALUE a float,
  1.0 when absent or empty);
* in a label or a name, ``\\:`` is a colon and ``\\\\`` a backslash (any other
  backslash stands for itself), as CRFsuite unescapes them; :func:`escape` writes
  them so;
* a first field ``@weight:W`` on a sequence's first line sets the sequence's weight
  (CRFsuite's only declaration; any other ``@...`` is refused, as CRFsuite does);
* files are UTF-8, read line by line (:func:`fstchunk.io.conll.iter_lines`: a bad byte is
  named at its line, a byte-order mark at the start is dropped), ``\r\n`` line ends
  are accepted.

Where CRFsuite reads something surprising, fstchunk refuses it with one
:class:`~fstchunk.core.errors.InputError` naming ``file:line`` (and the field): a label
or name with an unescaped second ``:`` (CRFsuite would split it silently), a
value that is not a number (CRFsuite's ``atof`` reads it as 0), a line of tabs only
(CRFsuite drops it without a word), a line starting with a tab (CRFsuite would take
its first attribute as the label), a line without a tab whose label holds a space
(space-separated columns, which CRFsuite would read as one label without attributes).  An attribute named
twice in one item counts twice (CRFsuite sums its items' values), so
:attr:`Sequence.items` holds the summed value.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import IO, ClassVar, Iterable, Iterator

from ...core.errors import InputError
from ...core.outputs import atomic_write
from ..conll import iter_lines, source_name


@dataclass
class Sequence:
    """One CRFsuite sequence: per item its label and attributes (name -> value), the
    1-based line of each item, the file, and the sequence's weight."""
    labels: list[str]
    items: list[dict[str, float]]
    lines: list[int] = field(default_factory=list)
    source: str = "<input>"
    weight: float = 1.0
    #: no words (fstchunk's JSONL and HTML outputs show positions instead)
    has_tokens: ClassVar[bool] = False

    def __len__(self) -> int:
        return len(self.items)

    def where(self, i: int) -> str:
        """``file:line`` of item ``i``."""
        return f"{self.source}:{self.lines[i] if i < len(self.lines) else '?'}"


def escape(text: str) -> str:
    """A label or attribute name as CRFsuite reads it back: ``\\`` -> ``\\\\``, ``:``
    -> ``\\:``; InputError for a tab or line break, which no escape can carry."""
    if any(c in text for c in "\t\n\r"):
        raise InputError(f"{text!r}: a label or attribute name with a tab or line break "
                         f"cannot be written in CRFsuite's data format")
    return text.replace("\\", "\\\\").replace(":", "\\:")


def _split(field_text: str, where: str) -> tuple[str, str | None]:
    """(name, value or None) of one field, unescaped as CRFsuite's ``iwa.c`` does."""
    name: list[str] = []
    value: list[str] | None = None
    out = name
    i, n = 0, len(field_text)
    while i < n:
        c = field_text[i]
        if c == "\\" and i + 1 < n and field_text[i + 1] in ":\\":
            out.append(field_text[i + 1])
            i += 2
            continue
        if c == ":":
            if value is not None:
                raise InputError(f"{where}: {field_text!r} has a second unescaped ':' "
                                 f"(CRFsuite would cut the field there); write a colon "
                                 f"in a name as \\:")
            value = out = []
        else:
            out.append(c)
        i += 1
    return "".join(name), None if value is None else "".join(value)


def _number(text: str | None, where: str, name: str) -> float:
    if text is None or text == "":
        return 1.0
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v):
        raise InputError(f"{where}: attribute {name!r} has the value {text!r}, not a finite "
                         f"number")
    return v


def iter_data(path_or_file) -> Iterator[Sequence]:
    """The sequences of a CRFsuite data file or stream, read lazily."""
    source = source_name(path_or_file)
    seq = Sequence([], [], [], source)
    for lineno, raw in iter_lines(path_or_file):
        line = raw.rstrip("\r\n")
        where = f"{source}:{lineno}"
        if not line:
            if seq.items:
                yield seq
            seq = Sequence([], [], [], source)
            continue
        fields = [f for f in line.split("\t") if f]
        if not fields:
            raise InputError(f"{where}: a line of tabs only (no label); a blank line "
                             f"separates sequences")
        if line.startswith("\t"):
            raise InputError(f"{where}: the line starts with a tab: no label (CRFsuite "
                             f"would take {fields[0]!r} as the label)")
        if "\t" not in line and " " in line.strip():
            raise InputError(f"{where}: no tab on the line, and its label {line.strip()!r} "
                             f"holds spaces: CRFsuite data separates the label and each "
                             f"attribute by a tab (space-separated columns — a CoNLL file, "
                             f"or CRFsuite data whose tabs became spaces — would be read as "
                             f"one label without attributes)")
        label, value = _split(fields[0], where)
        if label.startswith("@"):
            if label != "@weight" or seq.items or len(fields) > 1:
                raise InputError(f"{where}: {fields[0]!r}: the one declaration is "
                                 f"@weight:W, alone on a sequence's first line")
            seq.weight = _number(value, where, label)
            continue
        if value is not None:
            raise InputError(f"{where}: the label field {fields[0]!r} has an unescaped ':' "
                             f"(CRFsuite would read the label {label!r}); write \\:")
        items: dict[str, float] = {}
        for k, f in enumerate(fields[1:], 2):
            if "\\" in f or f.count(":") > 1:          # escapes, or a second ':' refused
                name, value = _split(f, f"{where} (field {k})")
                v = _number(value, f"{where} (field {k})", name)
            else:                                    # the common field: no escape
                name, _, value = f.partition(":")
                try:
                    v = float(value) if value else 1.0
                except ValueError:
                    v = math.nan
                if not v - v == 0.0:                 # not a finite number: refused by name
                    v = _number(value, f"{where} (field {k})", name)
            items[name] = items.get(name, 0.0) + v
        seq.labels.append(label)
        seq.items.append(items)
        seq.lines.append(lineno)
    if seq.items:
        yield seq


def read_data(path_or_file) -> list[Sequence]:
    """Every sequence of a CRFsuite data file (:func:`iter_data`)."""
    return list(iter_data(path_or_file))


def format_sequence(labels: Iterable[str], items: Iterable[dict[str, float] | Iterable[str]],
                    weight: float = 1.0) -> str:
    """One sequence in CRFsuite's format, its blank line included: a value of 1 is
    left out, others are written exactly (``repr``); items may be lists of names. An
    item without attributes whose label holds a space ends in a tab, so that the
    reader does not take it for space-separated columns."""
    out = [] if weight == 1.0 else [f"@weight:{weight!r}\n"]
    for label, item in zip(labels, items, strict=True):
        pairs = item.items() if isinstance(item, dict) else ((n, 1.0) for n in item)
        fields = [escape(label)] + [escape(n) if v == 1.0 else f"{escape(n)}:{float(v)!r}"
                                    for n, v in pairs]
        tail = "\t" if len(fields) == 1 and " " in fields[0] else ""
        out.append("\t".join(fields) + tail + "\n")
    return "".join(out) + "\n"


def write_data(path_or_file: str | os.PathLike | IO[str], sequences: Iterable[Sequence]
               ) -> None:
    """Write ``sequences`` in CRFsuite's format to a path (atomically) or a text stream."""
    if hasattr(path_or_file, "write"):
        for s in sequences:
            path_or_file.write(format_sequence(s.labels, s.items, s.weight))
        return
    with atomic_write(path_or_file) as fh:
        for s in sequences:
            fh.write(format_sequence(s.labels, s.items, s.weight))
