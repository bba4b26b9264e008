"""A model's training layout, and whether an input file has it.

:class:`Layout` records what a model was trained on: the number of columns of its
training file (``width``), what each held (``held``: word, pos, tag or ``_`` for a
column the model did not read), the scheme of the tag column (``data_scheme``) and
the vocabulary of each feature column it read (:class:`Vocabulary`: the POS tags;
the words).  Models store it in their files (:mod:`fstchunk.models.io`).

Before a model reads a file (decode, expected, calibrate, ``--dev``), the CLI checks
the first :data:`HEAD_TOKENS` tokens against the record
(:meth:`Layout.mismatch`; :func:`fstchunk.cli.inputs.layout_input`):

* the file has the training width (its tag column included) or one column less (no
  tag column: :meth:`Layout.source`), else it says nothing about where the model's
  columns are;
* each feature column looks like that column in training (:func:`looks_like`,
  thresholds measured on real corpora, see the comments below and
  ``benchmarks/bench_layout.py``): a POS column holding chunk tags
  (a word/tag file under a word/POS/tag model: issue 32, item 2) or words, or a
  word column holding tags, is caught.

:class:`Arrangement` then moves the input's word and POS columns to where the model
reads them (``--columns`` of a decode input, or a file without a tag column that
stood left of them).

Pitfall: the vocabularies are the model's *training* values; a file that passes the
check may still be from another domain (GENIA words under a CoNLL-2000 model: 70 %
of tokens seen), which is allowed: the check is about columns, not about domains.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..core.errors import InputError
from ..core.stringpack import pack, unpack
from .columns import IGNORED, NAMES, Columns
from .conll import Sentence

#: tokens of an input that are checked (from its first sentences)
HEAD_TOKENS = 1000
#: at most this many types of a feature column are stored, the most frequent first.
#: CoNLL-2000 has 19,120 word types, CoNLL-2002 Dutch 27,803: both are stored whole.
#: Above the cap, the most frequent types carry almost every token, so the share of
#: an input's tokens seen in training hardly moves; the file stays a few hundred KB
#: (a UTF-8 blob in the compressed npz) whatever the corpus.
MAX_TYPES = 50_000

# Thresholds, from the first 1000 tokens (and every 1000-token window) of real files:
#   POS column, share in the training POS tags: CoNLL-2000 test vs train 1.000,
#   Dutch testa vs train 1.000 (every window); chunk or NER tags there 0.000; words
#   there 0.12-0.15 (punctuation is both); another tag set (Dutch tags under Penn) 0.000.
#   So a POS column needs half its tokens in the training POS tags.
POS_MIN_SEEN = 0.5
#   word column, share of tokens seen in training: CoNLL-2000 test 0.94 (worst window
#   0.87), Dutch testa 0.89 (0.85), GENIA under CoNLL-2000 0.70, another language
#   0.33-0.47 (Dutch/English); POS tags there 0.27-0.34, chunk tags 0.00.  Shares
#   overlap between another language and POS tags, so below WORD_MIN_SEEN a column
#   fails only if its values are also a tag set (:func:`tag_like`), or below
#   WORD_MIN_ANY at all.
WORD_MIN_SEEN = 0.5
WORD_MIN_ANY = 0.1
#   below WORD_MIN_TOKENS tokens a share says little (one new word of two is 50%), so a
#   word column fails there only when every value is a chunk tag (a word/tag swap)
WORD_MIN_TOKENS = 20
#   a tag set: at most TAGSET_MAX distinct values in at least TAGSET_TOKENS tokens.
#   Penn has 45 POS tags (43 in CoNLL-2000 test, at most 40 in any 1000 tokens), the
#   Dutch set 12, the chunk and NER sets 19 and 9; words show at least 92 distinct
#   values in every 200-token window of CoNLL-2000 test, ned.testa and GENIA dev.
TAGSET_MAX = 64
TAGSET_TOKENS = 200
#: a chunk tag of any scheme (B-NP, I-PER, E-X, S-X, L-X, U-X) or O
CHUNK_TAG = re.compile(r"O|[BIELSU]-\S+")

#: what a role's column holds, for messages
WHAT = {"word": "words", "pos": "POS tags", "tag": "chunk tags"}


@dataclass(frozen=True)
class Vocabulary:
    """The values of one feature column in training, most frequent first (at most
    :data:`MAX_TYPES`), and how many distinct values there were (``types``)."""
    values: tuple[str, ...]
    types: int

    @classmethod
    def of(cls, values: Iterable[str]) -> "Vocabulary":
        counts = Counter(values)
        top = sorted(counts, key=lambda v: (-counts[v], v))[:MAX_TYPES]
        return cls(tuple(top), len(counts))

    def seen(self, values: Sequence[str]) -> float:
        """The share of ``values`` that are in this vocabulary (1 for none)."""
        vocab = self._set()
        return sum(v in vocab for v in values) / len(values) if values else 1.0

    def _set(self) -> frozenset[str]:
        cached = self.__dict__.get("_cached")
        if cached is None:
            cached = frozenset(self.values)
            object.__setattr__(self, "_cached", cached)
        return cached

    def union(self, other: "Vocabulary") -> "Vocabulary":
        """Both vocabularies, this one's values first (the cap applies)."""
        values = tuple(dict.fromkeys(self.values + other.values))[:MAX_TYPES]
        return Vocabulary(values, max(self.types, other.types, len(values)))

    def to_arrays(self, name: str) -> dict[str, np.ndarray]:
        """The values as the arrays ``name`` (and ``name_lengths`` where needed), one
        UTF-8 byte array, no pickle, lossless (:mod:`fstchunk.core.stringpack`: a word read
        from a CoNLL file holds no line break, one given in Python may)."""
        return pack(name, self.values)

    @classmethod
    def from_arrays(cls, name: str, arrays: dict[str, np.ndarray], types: Any
                    ) -> "Vocabulary":
        """What :meth:`to_arrays` wrote; InputError naming ``name`` for arrays that are
        not such a list."""
        if name not in arrays:
            raise InputError(f"array {name} missing")
        values = tuple(unpack(name, arrays))
        if len(set(values)) != len(values) or not all(values):
            raise InputError(f"{name}: not a list of distinct non-empty values")
        if not (isinstance(types, int) and not isinstance(types, bool)
                and types >= len(values)):
            raise InputError(f"{name}: types must be an integer >= {len(values)}, found "
                             f"{types!r}")
        return cls(values, types)


def tag_like(values: Sequence[str]) -> bool:
    """Whether ``values`` look like a tag set: at most :data:`TAGSET_MAX` distinct
    values in at least :data:`TAGSET_TOKENS` tokens."""
    return len(values) >= TAGSET_TOKENS and len(set(values)) <= TAGSET_MAX


def looks_like(role: str, values: Sequence[str], vocab: Vocabulary) -> bool:
    """Whether a column holding ``values`` can be the ``role`` column (word, pos) whose
    training values are ``vocab`` (the thresholds above)."""
    seen = vocab.seen(values)
    if role == "pos":
        return seen >= POS_MIN_SEEN
    if len(values) < WORD_MIN_TOKENS:        # too few for a share: only chunk tags fail
        return not all(CHUNK_TAG.fullmatch(v) for v in values)
    return seen >= WORD_MIN_SEEN or (seen >= WORD_MIN_ANY and not tag_like(values))


def _shown(values: Sequence[str], k: int = 3) -> str:
    return ", ".join(repr(v) for v in values[:k]) + (", ..." if len(values) > k else "")


def holds(values: Sequence[str], vocab: dict[str, Vocabulary]) -> str:
    """What a column of ``values`` seems to hold, in words: chunk tags, POS tags or
    words (by the model's vocabularies), else a count of its distinct values."""
    if values and sum(bool(CHUNK_TAG.fullmatch(v)) for v in values) >= 0.9 * len(values):
        return "chunk tags"
    for role in ("pos", "word"):
        if role in vocab and looks_like(role, values, vocab[role]):
            return WHAT[role]
    n = len(set(values))
    return f"{n} distinct value{'s' if n != 1 else ''} in {len(values)} tokens"


@dataclass(frozen=True)
class Layout:
    """A model's training layout (see the module doc)."""
    width: int
    held: tuple[str, ...]
    data_scheme: str | None
    vocab: dict[str, Vocabulary]

    def __post_init__(self) -> None:
        if not (isinstance(self.width, int) and self.width >= 1
                and len(self.held) == self.width):
            raise InputError(f"layout: {self.width!r} columns but {len(self.held)} roles")
        for role in self.held:
            if role not in NAMES + (IGNORED,):
                raise InputError(f"layout: unknown role {role!r} (word, pos, tag or _)")
        if self.held.count("word") != 1 or any(self.held.count(r) > 1 for r in NAMES):
            raise InputError(f"layout: {', '.join(self.held)} must hold one word column "
                                 f"and at most one pos and one tag column")
        if "word" not in self.vocab or not set(self.vocab) <= {"word", "pos"} & set(self.held):
            raise InputError(f"layout: vocabularies of {', '.join(sorted(self.vocab))} for "
                             f"the columns {','.join(self.held)} (the word's, and the POS "
                             f"column's where it is read)")

    # ------------------------------------------------------------ building
    @classmethod
    def of(cls, sentences: Sequence[Sentence], columns: Columns, data_scheme: str | None,
           pos: str = "feature") -> "Layout":
        """The layout of training ``sentences`` read through resolved ``columns``.  The
        POS column is a ``"feature"`` (its vocabulary recorded and checked), ``"gold"``
        (the joint model's and the tagger's output: held, not checked) or ``"unread"``
        (a ``-nopos`` template: held as ``_``)."""
        width = len(sentences[0].rows[0])
        pos_col = columns.pos if pos != "unread" else None
        held = [IGNORED] * width
        for role, col in (("word", columns.word), ("pos", pos_col), ("tag", columns.tag)):
            if col is not None:
                held[col] = role
        features = (("word", columns.word),) + ((("pos", pos_col),) if pos == "feature"
                                                 else ())
        vocab = {role: Vocabulary.of(r[col] for s in sentences for r in s.rows)
                 for role, col in features if col is not None}
        return cls(width, tuple(held), data_scheme, vocab)

    def moved(self, columns: Columns, width: int) -> "Layout":
        """This layout's vocabularies with its roles at ``columns`` of a file of
        ``width`` columns: the record of a file whose columns a reader moved before
        this layout was taken (the joint model's CLI)."""
        held = [IGNORED] * width
        for role in NAMES:
            if role in self.held and getattr(columns, role) is not None:
                held[getattr(columns, role)] = role
        return Layout(width, tuple(held), self.data_scheme, self.vocab)

    def union(self, other: "Layout") -> "Layout":
        """This layout with ``other``'s data scheme and both vocabularies (training
        from an ``--init`` model on a file of the same layout)."""
        if other.held != self.held:
            raise InputError(f"layouts {self.spec()} and {other.spec()} differ")
        vocab = {r: v.union(other.vocab[r]) for r, v in self.vocab.items()}
        return Layout(self.width, self.held, other.data_scheme, vocab)

    @property
    def columns(self) -> Columns:
        """The columns of the training file (absolute)."""
        at = {r: self.held.index(r) for r in NAMES if r in self.held}
        return Columns(at["word"], at.get("pos"), at.get("tag"))

    def spec(self) -> str:
        """``word,pos,_,tag``: the roles of the training file's columns."""
        return ",".join(self.held)

    # ------------------------------------------------------------ files
    def to_json(self) -> dict:
        """The metadata record; the vocabularies go to :meth:`arrays`."""
        return {"width": self.width, "held": list(self.held), "data_scheme": self.data_scheme,
                "types": {r: v.types for r, v in self.vocab.items()}}

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: a for r, v in self.vocab.items() for k, a in v.to_arrays(f"layout_{r}").items()}

    @classmethod
    def from_json(cls, record: Any, arrays: dict[str, np.ndarray]) -> "Layout":
        """What :meth:`to_json` and :meth:`arrays` wrote; InputError naming the part
        that is not such a record."""
        keys = {"width", "held", "data_scheme", "types"}
        if not isinstance(record, dict) or set(record) != keys:
            raise InputError(f"expected a record with the keys {', '.join(sorted(keys))}")
        held, types, scheme = record["held"], record["types"], record["data_scheme"]
        if not (isinstance(held, list) and all(isinstance(h, str) for h in held)):
            raise InputError(f"held: expected a list of roles, found {held!r:.60}")
        if not (scheme is None or isinstance(scheme, str)):
            raise InputError(f"data_scheme: expected a scheme or none, found {scheme!r:.40}")
        if not isinstance(types, dict):
            raise InputError(f"types: expected a record, found {types!r:.60}")
        vocab = {}
        for role in ("word", "pos"):
            if role in types:
                vocab[role] = Vocabulary.from_arrays(f"layout_{role}", arrays, types.get(role))
        return cls(record["width"], tuple(held), scheme, vocab)

    # ------------------------------------------------------------ inputs
    def source(self, width: int) -> Columns | None:
        """Where the training columns are in an input of ``width`` columns: the same
        (``width`` = :attr:`width`), or without the tag column, those right of it one
        to the left (``width`` = :attr:`width` - 1); None for another width."""
        cols = self.columns
        if width == self.width:
            return cols
        if width != self.width - 1 or cols.tag is None:
            return None

        def shift(v: int | None) -> int | None:
            return v - 1 if v is not None and v > cols.tag else v
        return Columns(shift(cols.word), shift(cols.pos), None)

    def suggest(self, width: int) -> str:
        """A ``--columns`` spec for a file of ``width`` columns in this layout's spirit
        (``word,pos,tag`` -> ``word,pos,_,tag`` for four, ``word`` for one)."""
        if width >= self.width:
            return Columns(self.columns.word, self.columns.pos, self.columns.tag, self.width).completed(width)
        roles = [r for r in self.held if r != "tag"][:width]
        return ",".join(roles + [IGNORED] * (width - len(roles)))

    def describe(self) -> str:
        """``3 columns (word,pos,tag)`` and, with a tag column, the variant without it."""
        text = f"{self.width} column{'s' if self.width != 1 else ''} ({self.spec()})"
        if "tag" in self.held:
            text += f" or {self.width - 1} without the tag column"
        return text

    def mismatch(self, first: Sequence[Sentence], columns: Columns
                 ) -> tuple[str, str] | None:
        """(role, why) when the ``first`` sentences of an input, read through its (absolute)
        ``columns``, does not look like the training file's feature column ``role``
        (word or pos): the column, what it holds, what the model read there in
        training.  None if every feature column looks right."""
        for role in ("pos", "word"):                 # POS first: the sharper test
            col = getattr(columns, role)
            if role not in self.vocab or col is None:
                continue
            values = [r[col] for s in first for r in s.rows][:HEAD_TOKENS]
            if looks_like(role, values, self.vocab[role]):
                continue
            top = [v for v, _ in Counter(values).most_common()]
            return role, (f"column {col + 1} holds {_shown(top)} ({holds(values, self.vocab)}), "
                          f"but the model read {WHAT[role]} there in training "
                          f"({_shown(self.vocab[role].values)})")
        return None


def head(sentences: Iterable[Sentence]) -> tuple[list[Sentence], Iterator[Sentence]]:
    """(the first sentences, up to :data:`HEAD_TOKENS` tokens; an iterator over the
    rest): what :meth:`Layout.mismatch` reads without holding a whole stream."""
    it = iter(sentences)
    out, n = [], 0
    for s in it:
        out.append(s)
        n += len(s)
        if n >= HEAD_TOKENS:
            break
    return out, it


@dataclass(frozen=True)
class Arrangement:
    """Moves the word and POS columns ``source`` of an input to where a model reads
    them (``target``); the rows get ``_`` elsewhere.  Identity when they coincide."""
    source: Columns
    target: Columns

    @property
    def identity(self) -> bool:
        return (self.source.word == self.target.word
                and (self.target.pos is None or self.source.pos == self.target.pos))

    def __call__(self, s: Sentence) -> Sentence:
        if self.identity:
            return s
        src, dst = self.source, self.target
        width = max(v for v in (dst.word, dst.pos) if v is not None) + 1
        rows = []
        for r in s.rows:
            row = [IGNORED] * width
            row[dst.word] = r[src.word]
            if dst.pos is not None:
                row[dst.pos] = r[src.pos]
            rows.append(row)
        return Sentence(rows, list(s.lines), s.source)
