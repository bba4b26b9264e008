"""Which column of a CoNLL file holds the word, the POS tag and the chunk tag.

:class:`Columns` names them by 0-based index (negative counts from the right, as
in :meth:`fstchunk.io.conll.Sentence.column`); ``pos`` is ``None`` for a file without
a POS column, ``tag`` is ``None`` for input without gold tags.  The default,
``Columns()``, is word 0, POS 1, tag last: the CoNLL-2000 layout.

    Columns.parse("word,tag")           # word 0, no POS, tag 1
    Columns.parse("word,_,pos,tag")     # "_" names a column that is not read
    Columns.parse("word=0,pos=1,tag=-1")   # explicit indices (what spec() writes
                                           # when an index is negative)
    cols.resolve(ncols, "train.txt:1")  # absolute indices for a file of ncols columns
    cols.spec()                         # the inverse of parse, for messages

A model stores the columns it was trained with *resolved* (absolute indices,
:meth:`Columns.to_json`), so decoding input without the gold column reads the same
word and POS columns.

Pitfalls:

* the default columns on a two-column (word, tag) file put POS and tag in the
  same column: the features would read the gold tag (dev F 100, real F near 0).
  :meth:`Columns.resolve` refuses any feature column equal to the tag column and
  suggests ``--columns word,tag``;
* a spec of names (``word,pos,tag``) must account for every column of the file,
  ``_`` for one not read: :meth:`Columns.resolve` refuses ``word,pos,tag`` on a
  four-column file (it would take the tag from the third, e.g. the chunk column of
  a CoNLL-2003 file, and ignore the NER column) and suggests ``word,pos,_,tag``.
  :attr:`Columns.named` is how many columns such a spec names.  An explicit
  spec (``word=0,pos=1,tag=3``) says where each column it names is and claims
  nothing about the others, so it is not checked for completeness: it is how one
  picks columns out of a wide file on purpose; the default columns (no spec)
  neither, the CLI warns when they leave columns unread;
* with ``need_tag=False`` (decoding) a tag column that is out of range, or that
  falls on a feature column (the default ``tag=-1`` on a word/POS file), is
  taken as absent: the resolved ``tag`` is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.errors import InputError, LayoutError

NAMES = ("word", "pos", "tag")
IGNORED = "_"


def _is_index(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@dataclass(frozen=True)
class Columns:
    """The word, POS and tag columns of a CoNLL file (see the module doc)."""
    word: int = 0
    pos: int | None = 1
    tag: int | None = -1
    #: how many columns a spec of names (``word,_,pos,tag``: 4) names; None for explicit
    #: indices, the default and resolved columns.  Not part of equality.
    named: int | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not _is_index(self.word):
            raise InputError(f"columns: the word column must be an integer, got {self.word!r}")
        for name in ("pos", "tag"):
            v = getattr(self, name)
            if v is not None and not _is_index(v):
                raise InputError(f"columns: the {name} column must be an integer or none, "
                                 f"got {v!r}")
        named = [(n, getattr(self, n)) for n in NAMES if getattr(self, n) is not None]
        for i, (a, va) in enumerate(named):
            for b, vb in named[i + 1:]:
                if va == vb:
                    raise InputError(f"columns: {a} and {b} are the same column ({va})")

    # ------------------------------------------------------------------ spec
    @classmethod
    def parse(cls, spec: str) -> "Columns":
        """The columns a spec names: ``"word,pos,tag"``, ``"word,tag"``,
        ``"word,_,pos,tag"`` (names in the file's order, ``_`` for a column not read)
        or ``"word=0,pos=1,tag=-1"`` (explicit indices); ``pos`` and ``tag`` may be
        left out (no POS column, no gold tags).  InputError naming the spec otherwise."""
        if not isinstance(spec, str):
            raise InputError(f"columns {spec!r}: expected a string such as 'word,pos,tag'")
        items = [x.strip() for x in spec.split(",")]
        explicit = any("=" in x for x in items)
        found: dict[str, int] = {}
        for i, item in enumerate(items):
            name, _, index = item.partition("=") if explicit else (item, "", str(i))
            name = name.strip().lower()
            if name == IGNORED:
                continue
            if name not in NAMES:
                raise InputError(f"columns {spec!r}: unknown column name {name or item!r}; "
                                 f"name each column word, pos, tag or _ (not read), e.g. "
                                 f"word,pos,tag or word,tag")
            if name in found:
                raise InputError(f"columns {spec!r}: {name} is named twice")
            try:
                found[name] = int(index.strip())
            except ValueError:
                raise InputError(f"columns {spec!r}: {item!r} needs an integer index, "
                                 f"e.g. {name}=0") from None
        if "word" not in found:
            raise InputError(f"columns {spec!r}: no word column; name it, e.g. word,pos,tag "
                             f"or word,tag")
        try:
            return cls(found["word"], found.get("pos"), found.get("tag"),
                       None if explicit else len(items))
        except InputError as e:
            raise InputError(f"columns {spec!r}: {str(e).removeprefix('columns: ')}") from None

    def spec(self) -> str:
        """The spec :meth:`parse` reads back to these columns (names in order when
        every index is >= 0, as many as :attr:`named`; ``name=index`` pairs otherwise)."""
        named = {n: getattr(self, n) for n in NAMES if getattr(self, n) is not None}
        if any(v < 0 for v in named.values()):
            return ",".join(f"{n}={v}" for n, v in named.items())
        row = [IGNORED] * max(max(named.values()) + 1, self.named or 0)
        for n, v in named.items():
            row[v] = n
        return ",".join(row)

    def __str__(self) -> str:
        return self.spec()

    # ------------------------------------------------------------------ files
    def resolve(self, ncols: int, where: str, need_tag: bool = True) -> "Columns":
        """The same columns as absolute indices for a file whose lines have ``ncols``
        columns; one InputError naming ``where`` (file:line) when a column is out of
        range or a feature column (word, POS) is the tag column.  With ``need_tag=False``
        a missing tag column resolves to ``tag=None``."""
        if self.named is not None and self.named < ncols:
            raise InputError(f"--columns {self.spec()} names {self.named} of the {ncols} "
                             f"columns of {where}; name each, with {IGNORED} for one not "
                             f"read: e.g. {self.completed(ncols)}")

        def absolute(name: str, v: int) -> int:
            a = v + ncols if v < 0 else v
            if not 0 <= a < ncols:
                have = f"{ncols} column{'s' if ncols != 1 else ''}"
                hint = (" (a file without POS tags: --columns word,tag)" if name == "pos"
                        else "")
                col = f"column {v + 1}" if v >= 0 else f"column {v} from the right"
                raise LayoutError(f"{where}: --columns {self.spec()} reads the {name} from "
                                 f"{col}, but the line has {have}{hint}")
            return a

        word = absolute("word", self.word)
        pos = None if self.pos is None else absolute("pos", self.pos)
        tag = self.tag
        if tag is not None:
            a = tag + ncols if tag < 0 else tag
            if not need_tag and (not 0 <= a < ncols or a in (word, pos)):
                tag = None
            else:
                tag = absolute("tag", tag)
        elif need_tag:
            raise LayoutError(f"{where}: --columns {self.spec()} names no tag column, and "
                             f"gold tags are needed here (e.g. --columns word,pos,tag)")
        for name, v in (("word", word), ("pos", pos)):
            if v is not None and v == tag:
                fix = ("--columns word,tag (a file without POS tags)" if ncols == 2
                       else "--columns naming each column, e.g. word,pos,tag or word,_,pos,tag")
                raise LayoutError(f"{where}: the {name} column would be the tag column "
                                 f"({tag + 1} of {ncols}) under --columns {self.spec()}: the "
                                 f"features would read the gold tags; use {fix}")
        if word == pos:
            raise LayoutError(f"{where}: word and pos are the same column ({word + 1} of "
                             f"{ncols}) under --columns {self.spec()}")
        return Columns(word, pos, tag)

    def completed(self, ncols: int) -> str:
        """A spec of ``ncols`` names with these columns, ``_`` for the others; a tag
        named last stays last (``word,pos,tag`` -> ``word,pos,_,tag``)."""
        row = [IGNORED] * ncols
        last = self.named - 1 if self.named else None
        for n in NAMES:
            v = getattr(self, n)
            if v is None:
                continue
            a = ncols - 1 if n == "tag" and v == last else (v + ncols if v < 0 else v)
            if 0 <= a < ncols and row[a] == IGNORED:
                row[a] = n
        return ",".join(row)

    def require(self, width: int, where: str, reader: str) -> None:
        """InputError naming ``where`` unless a line of ``width`` columns has the word
        and POS columns that ``reader`` (e.g. "the HMM") reads; the tag is not needed."""
        for name, col in (("word", self.word), ("POS", self.pos)):
            if col is not None and not -width <= col < width:
                at = f"column {col + 1}" if col >= 0 else f"column {col} from the right"
                fix = ("; give it a file with a POS column, or train a POS-free model "
                       "(--columns word,tag)" if name == "POS" else "")
                raise LayoutError(f"{where}: {reader} reads the {name} from {at}, but the "
                                 f"line has {width} column{'s' if width != 1 else ''}{fix}")

    # ------------------------------------------------------------------ model files
    def to_json(self) -> dict:
        """``{"word": 0, "pos": 1, "tag": 2}`` (``None`` for a missing pos or tag)."""
        return {"word": self.word, "pos": self.pos, "tag": self.tag}

    @classmethod
    def from_json(cls, d: Any) -> "Columns":
        """The columns :meth:`to_json` wrote; InputError if ``d`` is not such a record."""
        if not isinstance(d, dict) or set(d) != set(NAMES):
            raise InputError(f"columns must be a record with exactly the keys word, pos, "
                             f"tag; got {d!r}")
        return cls(d["word"], d["pos"], d["tag"])
