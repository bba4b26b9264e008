"""Reading a scored file exactly as conlleval.pl reads it.

conlleval.pl (Tjong Kim Sang, CoNLL-2000, version 2004-01-26) reads standard input
line by line; ``fstchunk eval`` reads a file by the same rules, so that on every file
conlleval.pl reads the two agree on every count:

* a line loses its ``\\n`` and is split at every match of the delimiter, a *regular
  expression* (default one space; ``-d '\\t'`` for tabs), with Perl's ``split``:
  a leading empty field is kept, trailing empty fields are dropped, so two spaces
  in a row make an empty column and trailing spaces make none;
* the first line with fields fixes the number of fields; a later line with fields
  and another number stops conlleval.pl ("unexpected number of features");
* a line without fields (empty, or only delimiters) and a line whose first field
  is ``-X-`` are sentence boundaries: an ``O``/``O`` token that is not counted;
* every other line is a token, ``-DOCSTART-`` lines included (they are counted
  as tokens and normally carry ``O O``); the last field is the predicted tag, the
  one before it the gold tag; a tag splits at its first hyphen
  (``/^([^-]*)-(.*)$/``: ``B-ORG-X`` is prefix ``B``, type ``ORG-X``);
* chunks are read over the whole stream by conlleval.pl's startOfChunk and
  endOfChunk (:func:`fstchunk.schemes.encodings.conlleval_chunks`); a chunk is correct when
  gold and predicted chunk have the same type, start and end.

Where fstchunk departs, it says so rather than differ silently:

* ``\\r\\n`` line ends: conlleval.pl keeps the ``\\r`` in the last tag and refuses
  the blank lines (one field: ``\\r``); the ``\\r`` is dropped here;
* a file whose first line with fields holds a tab is read with tabs as the
  delimiter (conlleval.pl needs ``-d '\\t'`` for it and reads it the same way);
* a delimiter that matches the empty string (``-d '|'`` splits every character
  in Perl) is refused, as are gold or predicted fields that are not chunk tags
  (:func:`fstchunk.evaluation.chunks.evaluate_file`).

Pitfall: conlleval.pl does not know IOBES (``S-X S-X`` is one chunk for it, and
``E-X B-X`` continues a chunk); :class:`SchemeTally` names such files (and refuses
gold and predicted columns of two schemes that it would read apart), and
``--scheme`` reads them in their scheme.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from ..core.errors import CoNLLError, InputError
from ..io.conll import iter_lines, source_name
from ..schemes import encodings as enc
from ..schemes.boundaries import chunk_ends, chunk_starts

#: the sentence boundary field of conlleval.pl
BOUNDARY = "-X-"
DOCSTART = "-DOCSTART-"



def delimiter_pattern(delimiter: str | None) -> re.Pattern | None:
    """The compiled delimiter of conlleval.pl's ``-d`` (a regular expression; a single
    character is taken literally; ``\\t`` written out is a tab); ``None``: its default,
    one space (tabs when the file's first line holds one).  InputError for a pattern
    that is not a regular expression or matches the empty string."""
    if delimiter is None:
        return None
    if delimiter == "":
        raise InputError("--delimiter: empty; give a character such as ' ' or '\\t'")
    text = re.escape(delimiter) if len(delimiter) == 1 else delimiter
    try:
        pattern = re.compile(text)
    except re.error as e:
        raise InputError(f"--delimiter {delimiter!r}: not a regular expression ({e}); "
                         f"conlleval.pl reads -d as one") from None
    if pattern.fullmatch(""):
        raise InputError(f"--delimiter {delimiter!r} matches the empty string, so every "
                         f"character would be a column (as in conlleval.pl); escape it, "
                         f"e.g. {re.escape(delimiter)!r}")
    return pattern


_SPACE = re.compile(" ")
_TAB = re.compile("\t")
#: patterns that are one literal character (split by str.split)
_LITERAL = {" ": " ", "\t": "\t", "\\t": "\t"}


def perl_split(pattern: re.Pattern, line: str) -> list[str]:
    """Perl's ``split(/pattern/, $line)``: trailing empty fields dropped (a one-space or
    one-tab pattern splits as :meth:`str.split` on it does, which is the same)."""
    if not line:
        return []
    literal = _LITERAL.get(pattern.pattern)
    fields = line.split(literal) if literal is not None else pattern.split(line)
    while fields and fields[-1] == "":
        fields.pop()
    return fields


@dataclass
class Row:
    """One line as conlleval.pl sees it: its number, its fields (empty for a
    boundary), and whether it is a boundary."""
    line: int
    fields: list[str]
    boundary: bool

    @property
    def docstart(self) -> bool:
        return bool(self.fields) and self.fields[0] == DOCSTART


@dataclass
class Reading:
    """What was noticed while reading: the delimiter used and the line ends."""
    delimiter: str = "one space"
    crlf: int = 0


def iter_rows(path, delimiter: str | None = None, reading: Reading | None = None
              ) -> Iterator[Row]:
    """The lines of ``path`` as conlleval.pl reads them (module doc); CoNLLError naming
    file:line where conlleval.pl would stop (a line with another number of fields,
    or a token line with fewer than two)."""
    name = source_name(path)
    pattern = delimiter_pattern(delimiter)
    reading = reading if reading is not None else Reading()
    if pattern is not None:
        reading.delimiter = repr(delimiter)
    width = None
    for lineno, raw in iter_lines(path):
        line = raw[:-1] if raw.endswith("\n") else raw
        if line.endswith("\r"):
            line = line[:-1]
            reading.crlf += 1
        if pattern is None:
            pattern = _TAB if "\t" in line else _SPACE if line.strip(" ") else None
            if pattern is None:
                yield Row(lineno, [], True)
                continue
            reading.delimiter = "tab" if pattern is _TAB else "one space"
        fields = perl_split(pattern, line)
        if not fields:
            yield Row(lineno, [], True)
            continue
        if width is None:
            width, first = len(fields), (lineno, fields[0] == DOCSTART)
        elif len(fields) != width:
            raise CoNLLError(
                f"{name}:{lineno}: expected {width} columns like the lines before, found "
                f"{len(fields)} (delimiter: {reading.delimiter}; conlleval.pl stops here: "
                f"'unexpected number of features'){_hint(fields, width, first)}")
        if fields[0] == BOUNDARY:
            yield Row(lineno, fields, True)
            continue
        if len(fields) < 2:
            raise CoNLLError(f"{name}:{lineno}: one column; eval reads the gold and the "
                             f"predicted tag from the last two")
        yield Row(lineno, fields, False)


def _hint(fields: list[str], width: int, first: tuple[int, bool]) -> str:
    docstart = ("a -DOCSTART- line without the predicted column: decode the file again "
                "(fstchunk decode writes O there), or add ' O' to it")
    if fields[0] == DOCSTART and len(fields) == width - 1:
        return "; " + docstart
    if first[1] and len(fields) == width + 1:
        return f"; line {first[0]} is {docstart}"
    if "" in fields:
        return "; two delimiters in a row make an empty column"
    return ""


#: the schemes conlleval.pl reads as they mean (its B/I/E rules); the IOBES family
#: (S, L, U, B2, ..., and E-X B-X) it reads otherwise
CONLLEVAL_SAFE = frozenset({"IOB1", "IOB2", "IOE1", "IOE2"})

#: schemes with one inventory of prefixes (B/I or I/E), which conlleval.pl reads alike
FAMILY = {"IOB1": "IOB", "IOB2": "IOB", "IOE1": "IOE", "IOE2": "IOE"}

#: the share of a side's sentences that may be invalid in a scheme it is read in
#: (annotation slips, a tagger's odd output) before the scheme is ruled out
INVALID_SHARE = 0.01


class SchemeTally:
    """For the gold and the predicted column: in how many sentences each scheme's
    validity is broken (:func:`fstchunk.schemes.encodings.is_valid`), to tell columns of two
    schemes apart (:meth:`verdict`)."""

    def __init__(self) -> None:
        self.sentences = 0
        self.invalid = ({s: 0 for s in enc.SCHEMES}, {s: 0 for s in enc.SCHEMES})
        self._ok: dict[str, dict[tuple[str, str], bool]] = {s: {} for s in enc.SCHEMES}

    def add(self, gold: list[str], pred: list[str]) -> None:
        self.sentences += 1
        for side, tags in zip(self.invalid, (gold, pred)):
            pairs = set(zip(["<s>"] + tags, tags + ["</s>"]))
            for scheme in enc.SCHEMES:
                ok = self._ok[scheme]
                side[scheme] += not all(ok[b] if b in ok else self._allowed(scheme, b)
                                        for b in pairs)

    def _allowed(self, scheme: str, pair: tuple[str, str]) -> bool:
        """Whether tag bigram ``pair`` (``<s>``/``</s>`` at the ends) is valid in
        ``scheme``: :func:`fstchunk.schemes.encodings.allowed`, remembered; a tag that is not
        the scheme's is not."""
        prev, cur = (None if t in ("<s>", "</s>") else t for t in pair)
        try:
            ok = enc.allowed(scheme, prev, cur)
        except ValueError:
            ok = False
        self._ok[scheme][pair] = ok
        return ok

    def schemes(self, side: int) -> set[str]:
        """The schemes side 0 (gold) or 1 (predicted) reads as, slips allowed."""
        limit = INVALID_SHARE * self.sentences
        return {s for s, k in self.invalid[side].items() if k <= limit}

    def verdict(self) -> str | None:
        """A refusal (``"refuse: ..."``) when the two columns are of different schemes
        with different prefixes (IOB2 against IOBES or IOE2; IOB1 against IOB2, one
        inventory of prefixes, passes), a warning when both are of the IOBES family, which
        conlleval.pl reads otherwise than the scheme means, else None."""
        g, p = self.schemes(0), self.schemes(1)
        if not g or not p:
            return None                         # not a scheme's sequences: as conlleval
        common = g & p
        if common:
            if common & CONLLEVAL_SAFE:
                return None
            return ("both columns are IOBES-family tags (" + ", ".join(sorted(common)) +
                    "), read as conlleval.pl reads them, which does not know IOBES (S-X "
                    "S-X is one chunk, E-X B-X continues one); give --scheme (e.g. IOBES) "
                    "to read them in their scheme")
        if {FAMILY.get(x, x) for x in g} & {FAMILY.get(x, x) for x in p}:
            return None                         # IOB1 against IOB2: one family, read alike
        return ("refuse: the gold column reads as " + " or ".join(sorted(g)) + " and the "
                "predicted column as " + " or ".join(sorted(p)) + ": two schemes, which "
                "conlleval.pl reads inconsistently; give --scheme to read both in one "
                "scheme (--scheme IOBES reads IOB and IOE tags too), or convert one column")


class ChunkCounts:
    """conlleval.pl's counts over a stream of (gold, predicted) tags: chunks found
    (counted where they start), chunks correct (gold and predicted start together
    with one type and end together), tokens and correct tags, overall and per type.

    :meth:`push` takes one line's tags (a boundary pushes ``O``, ``O`` with
    ``token=False``); :meth:`close` ends the stream."""

    def __init__(self) -> None:
        self.correct = self.gold = self.found = self.tokens = self.correct_tags = 0
        self.per_type: dict[str, list[int]] = {}       # type -> [correct, gold, found]
        self._last_g = self._last_p = (enc.OUTSIDE, "")
        self._in_correct = False
        self._split: dict[str, tuple[str, str]] = {}       # tag -> (prefix, type)

    def _type(self, t: str) -> list[int]:
        return self.per_type.setdefault(t, [0, 0, 0])

    def push(self, gold: str, pred: str, token: bool = True) -> None:
        split = self._split
        g = split.get(gold) or split.setdefault(gold, enc.split_conlleval(gold))
        p = split.get(pred) or split.setdefault(pred, enc.split_conlleval(pred))
        lg, lp = self._last_g, self._last_p
        if self._in_correct:
            eg, ep = chunk_ends(lg, g), chunk_ends(lp, p)
            if eg and ep and lg[1] == lp[1]:
                self._in_correct = False
                self.correct += 1
                self._type(lg[1])[0] += 1
            elif eg != ep or g[1] != p[1]:
                self._in_correct = False
        sg, sp = chunk_starts(lg, g), chunk_starts(lp, p)
        if sg and sp and g[1] == p[1]:
            self._in_correct = True
        if sg:
            self.gold += 1
            self._type(g[1])[1] += 1
        if sp:
            self.found += 1
            self._type(p[1])[2] += 1
        if token:
            self.tokens += 1
            self.correct_tags += g == p
        self._last_g, self._last_p = g, p

    def close(self) -> None:
        if self._in_correct:
            self._in_correct = False
            self.correct += 1
            self._type(self._last_g[1])[0] += 1
