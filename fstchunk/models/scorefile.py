"""Score-array files (``.npz``) for models that live outside fstchunk.

A score file holds, without pickle:

* ``tags``: 1-D string array, the column order of all arrays;
* ``scheme``: 0-D string array (if absent, the scheme given to the reader, else the
  one scheme the tags are of: :func:`scheme_of`);
* ``transitions`` (L x L), optional ``start`` and ``end`` (L,);
* ``emissions_0``, ``emissions_1``, ...: one (n_k x L) array per sentence, in the
  order of the CoNLL file they score.

Every file that cannot be used raises :class:`~fstchunk.core.errors.ModelFileError`
naming the file (and the sentence, for a bad ``emissions_k``).

``fstchunk decode --scores`` also reads a JSONL form (:func:`read_jsonl_scores`),
one sentence per line, tag lists free per line::

    {"tokens": ["He", "ran"], "tags": ["O", "B-NP", "I-NP"],
     "scores": [[0.1, 2.0, -1.0], [1.5, 0.2, 0.0]],
     "transitions": [[...], [...], [...]], "start": [...], "end": [...]}

``scores`` is n x len(tags) (log potentials, columns = ``tags``); ``tokens``,
``transitions`` (default 0: the scores alone, within the scheme), ``start`` and
``end`` are optional; UTF-8, a byte-order mark and ``\r\n`` line ends accepted.
A line that is not such an object is refused at its
``file:line``; numbers are checked when its lattice is built
(:meth:`Lattice.from_scores`), an error of that sentence alone.  Both forms become
:class:`ScoredSentence` items of one :class:`ScoreModel` (:func:`open_scores`),
which the decoders read as they read a model's sentences.

Pitfalls:

* ``np.load`` is always called with ``allow_pickle=False``; a file that needs
  pickle, is truncated, is a single ``.npy`` array, or lacks a key is reported
  with its name, never unpickled.
* sentences are read ``emissions_0, emissions_1, ...`` up to the first missing
  index; an ``emissions_k`` beyond a gap would be silently dropped, so a gap is
  an error.
* JSONL scores (and a ``.npz`` without ``scheme``) read without a scheme are read in
  the one scheme their tags are of (:func:`scheme_of`): IOBES tags as IOBES.  Tags that
  schemes share (``B-``, ``I-``: IOB1 and IOB2; ``I-``, ``E-``: IOE1 and IOE2) are
  refused, asking for the scheme: an IOB1 tagger's scores read as IOB2 silently lose
  the mass of every sequence that opens a chunk with ``I-``.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
import zipfile
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from ..schemes import encodings as enc
from ..core import sources
from ..io.conll import Sentence
from ..core.errors import FstchunkError, InputError, ModelFileError
from ..core.outputs import atomic_write
from ..structures.lattice import Lattice
from ..schemes.tagspace import TagSpace

_EMISSIONS = re.compile(r"emissions_(\d+)$")


def save_scores(path: str | os.PathLike, tags: Sequence[str], emissions: Sequence[np.ndarray],
                transitions: np.ndarray, start: np.ndarray | None = None,
                end: np.ndarray | None = None, scheme: str = "IOB2") -> None:
    """Write a score file (see the module doc); ``emissions[k]`` scores sentence ``k``.
    Written atomically to exactly ``path`` (``np.savez`` alone would append ``.npz``).
    A tag list that cannot express ``scheme`` is refused before anything is written
    (:func:`fstchunk.schemes.tagspace.check_expresses`)."""
    TagSpace.of(tags, enc.canonical_scheme(scheme))
    arrays = {"tags": np.array(list(tags), dtype=str), "scheme": np.array(scheme),
              "transitions": np.asarray(transitions, float)}
    if start is not None:
        arrays["start"] = np.asarray(start, float)
    if end is not None:
        arrays["end"] = np.asarray(end, float)
    for k, e in enumerate(emissions):
        arrays[f"emissions_{k}"] = np.asarray(e, float)
    with atomic_write(path, "wb", what="score file") as fh:   # exactly PATH: no .npz added
        np.savez(fh, **arrays)


def _read_arrays(name: str) -> dict[str, np.ndarray]:
    try:
        with sources.open_binary(name) as fh:
            _refuse_not_npz(name, fh.read(8))
            fh.seek(0)
            z = np.load(fh, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):
                raise ModelFileError(f"{name}: a single array, not a score file (.npz)")
            with z:
                return {k: z[k] for k in z.files}
    except ModelFileError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise ModelFileError(f"{name}: not a readable score file (.npz without pickle): "
                             f"{e}") from None


def _refuse_not_npz(name: str, head: bytes) -> None:
    """ModelFileError saying what the file is, unless ``head`` opens a zip (an .npz)."""
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return
    if head.startswith(b"\x93NUMPY"):
        raise ModelFileError(f"{name}: a single array, not a score file (.npz; "
                             f"fstchunk.models.scorefile.save_scores writes one)")
    if head.startswith(b"lCRF"):
        what = ("a CRFsuite model file (fstchunk import crfsuite makes it a model to give "
                "as --model)")
    elif not head:
        what = "an empty file"
    elif head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        what = ("JSON lines, the JSONL form of scores (which decode --scores and "
                "open_scores read)")
    else:
        try:
            head.decode("utf-8")
            what = "text (a CoNLL file?)"
        except UnicodeDecodeError:
            what = "not a zip archive"
    raise ModelFileError(f"{name}: not a readable score file: {what}; a score file here is "
                         f"the .npz of score arrays that fstchunk.models.scorefile.save_scores "
                         f"writes (tags, scheme, transitions, emissions_K)")


def load_lattices(path: str | os.PathLike, scheme: str | None = None,
                  option: str = "scheme=", fallback: str | None = None) -> list[Lattice]:
    """One :class:`Lattice` per sentence of a score file (``scheme``, ``option``,
    ``fallback``: as :func:`read_score_arrays`)."""
    name = os.fspath(path)
    tags, scheme, shared, emissions = read_score_arrays(name, scheme, option, fallback)
    out = []
    for k, e in enumerate(emissions):
        try:
            out.append(Lattice.from_scores(tags, e, *shared, scheme=scheme))
        except ValueError as e:
            raise ModelFileError(f"{name}: sentence {k} (emissions_{k}): {e}") from None
    return out


def read_score_arrays(name: str, scheme: str | None = None, option: str = "scheme=",
                      fallback: str | None = None
                      ) -> tuple[list[str], str, tuple, list[np.ndarray]]:
    """(tags, scheme, (transitions, start, end), [emissions_k]) of a score file,
    its structure checked (module doc); the numbers are checked by the lattices.
    ``scheme``: the scheme of a file without a ``scheme`` array (else ``fallback``,
    else the one its tags are of, :func:`scheme_of`); one other than the file's own is
    refused.  ``option`` is how errors name the scheme's option (``--scheme`` on the
    command line)."""
    data = _read_arrays(name)
    for key in ("tags", "transitions"):
        if key not in data:
            raise ModelFileError(f"{name}: missing array {key!r} (see fstchunk.models.scorefile)")
    if data["tags"].ndim != 1 or data["tags"].dtype.kind not in "US":
        raise ModelFileError(f"{name}: 'tags' must be a 1-D string array, got dtype "
                             f"{data['tags'].dtype} and shape {data['tags'].shape}")
    tags = [str(t) for t in data["tags"].tolist()]
    if "scheme" in data:
        own = str(data["scheme"])
        if scheme is not None and enc.canonical_scheme(scheme) != enc.canonical_scheme(own):
            raise InputError(f"{_ask(option, [scheme])}: {name} holds {own} scores (its "
                             f"'scheme' array): give the file's scheme, {_ask(option, [own])}"
                             f", or none")
        scheme = own
    elif scheme is None:
        scheme = fallback or scheme_of([tags], name, option)
    try:                       # once for the file, not per sentence
        TagSpace.of(tags, enc.canonical_scheme(scheme))
    except FstchunkError as e:
        raise ModelFileError(f"{name}: arrays 'tags' and 'scheme': {e}") from None
    indices = sorted(int(m.group(1)) for m in map(_EMISSIONS.match, data) if m)
    if not indices:
        raise ModelFileError(f"{name}: no emissions_0 array: the file scores no sentence")
    if indices != list(range(len(indices))):
        gap = next(k for k, i in enumerate(indices) if i != k)
        raise ModelFileError(f"{name}: emissions_{indices[-1]} present but emissions_{gap} "
                             "missing (sentences must be numbered 0, 1, 2, ...)")
    shared = (data["transitions"], data.get("start"), data.get("end"))
    return tags, scheme, shared, [data[f"emissions_{k}"] for k in indices]


# ------------------------------------------------------------ decode --scores
@dataclass
class ScoredSentence(Sentence):
    """A sentence whose lattice comes from score arrays: ``rows`` hold its tokens
    (one column; ``has_tokens`` False: a score file without tokens, rows of ``_``),
    ``scores`` = (tags, emissions, transitions, start, end)."""
    scores: tuple = ()
    has_tokens: bool = True
    name: str = ""

    def where(self, i: int) -> str:
        """``file:line``, or for a ``.npz`` sentence ``file (emissions_k)``."""
        return self.name or super().where(i)


class ScoreModel:
    """The model protocol's reading side over score arrays: ``lattices(items)`` of
    :class:`ScoredSentence` items, all in one scheme (``scheme_``, as a fitted model's).
    A bad array is the error of its sentence (named by file:line or file and index)."""
    kind = "scores"

    def __init__(self, scheme: str):
        self.scheme_ = enc.canonical_scheme(scheme)
        self.data_scheme_ = self.scheme_        # decode writes the scores' scheme

    def lattices(self, items: Sequence[ScoredSentence]) -> list[Lattice]:
        out = []
        for it in items:
            tags, e, t, start, end = it.scores
            try:
                out.append(Lattice.from_scores(tags, e, t, start, end, scheme=self.scheme_))
            except FstchunkError as err:
                raise InputError(f"{it.where(0)}: {err}") from None
        return out


def open_scores(path: str, scheme: str | None, sentences: list[Sentence] | None = None,
                option: str = "scheme=") -> tuple[ScoreModel, list]:
    """The :class:`ScoreModel` and :class:`ScoredSentence` items of a score file —
    ``.npz`` (by content: a zip archive) or JSONL — read in full.  ``scheme``: the
    JSONL's scheme (None: the one its tags are of, :func:`scheme_of`, which refuses
    tags that schemes share); an ``.npz`` says its own, and a different ``scheme`` is
    refused.  ``sentences`` (a CoNLL input read alongside) give the tokens: as many
    sentences as scored, each of its scores' length.  ``option`` is how errors name
    the scheme's option (``--scheme`` on the command line)."""
    try:
        with sources.open_binary(path) as fh:
            is_npz = fh.read(4) == b"PK\x03\x04"
    except OSError as e:
        raise InputError(f"{path}: cannot read the score file: {e.strerror}") from None
    if is_npz:
        tags, scheme, shared, emissions = read_score_arrays(path, scheme, option)
        items = [ScoredSentence([["_"]] * len(e), [], path, (tags, e, *shared),
                                has_tokens=False, name=f"{path} (emissions_{k})")
                 for k, e in enumerate(emissions)]
    else:
        items = read_jsonl_scores(path)
        if scheme is None:
            scheme = scheme_of((it.scores[0] for it in items), path, option)
    if sentences is not None:
        items = _with_tokens(items, sentences, path)
    return ScoreModel(scheme), items


def scheme_of(tag_lists: Iterable[Sequence[str]], where: str, option: str = "scheme="
              ) -> str:
    """The one scheme whose tags every tag list is (:func:`fstchunk.schemes.tagspace.TagSpace.of`;
    a list of no scheme is left to its own sentence's error, one of ``O`` alone fits
    any); IOB2 when no list has a chunk tag.  InputError at ``where``, naming
    ``option``, when the tags are those of several schemes (IOB1 and IOB2 share ``B-``
    and ``I-``, IOE1 and IOE2 ``I-`` and ``E-``) or the lists are of different ones."""
    common: frozenset[str] | None = None
    for tags in tag_lists:
        fits = _schemes(tuple(tags))
        if fits and len(fits) < len(enc.SCHEMES):     # O alone: any scheme
            common = fits if common is None else common & fits
    if common is None:
        return "IOB2"
    if len(common) == 1:
        return next(iter(common))
    if not common:
        raise InputError(f"{where}: the sentences' tag lists are of different schemes; "
                         f"give the scheme ({option.rstrip('=')})")
    names = [s for s in enc.SCHEMES if s in common]
    raise InputError(f"{where}: the tags are those of {' and '.join(names)}, which read "
                     f"them apart: give the scheme, {_ask(option, names)}")


@functools.lru_cache(maxsize=256)
def _schemes(tags: tuple) -> frozenset[str]:
    """The schemes whose tag lists ``tags`` is."""
    out = []
    for s in enc.SCHEMES:
        try:
            TagSpace.of(tags, s)
        except (FstchunkError, TypeError):
            continue
        out.append(s)
    return frozenset(out)


def _ask(option: str, names: Sequence[str]) -> str:
    """``--scheme IOB1 or --scheme IOB2`` (an option), ``scheme='IOB1' or ...`` (a
    parameter)."""
    if option.startswith("-"):
        return " or ".join(f"{option} {n}" for n in names)
    return " or ".join(f"{option}{n!r}" for n in names)


def read_jsonl_scores(path: str) -> list[ScoredSentence]:
    """The JSONL form (module doc), each line's structure checked, refused at its
    ``file:line``."""
    out = []
    try:
        fh = io.TextIOWrapper(sources.open_binary(path), encoding="utf-8-sig")  # BOM dropped
    except OSError as e:
        raise InputError(f"{path}: cannot read the score file: {e.strerror}") from None
    with fh:
        try:
            lines = list(enumerate(fh, 1))
        except UnicodeDecodeError as e:
            raise InputError(f"{path}: not UTF-8 text nor a .npz score file ({e.reason})"
                             ) from None
    for lineno, text in lines:
        if not text.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            what = ("" if text.lstrip().startswith("{") else "; the score file is an .npz "
                    "or JSONL scores, one JSON object per sentence, and this line is text "
                    "(a CoNLL file? it is given as --input)")
            raise InputError(f"{where}: not a JSON object ({e.msg}, column {e.colno}){what}"
                             ) from None
        out.append(_jsonl_sentence(obj, where, path, lineno))
    if not out:
        raise InputError(f"{path}: no sentence (an empty score file)")
    return out


def _jsonl_sentence(obj: Any, where: str, path: str, lineno: int) -> ScoredSentence:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: a line must be a JSON object with 'tags' and 'scores'")
    for key in ("tags", "scores"):
        if key not in obj:
            raise InputError(f"{where}: missing key {key!r} (keys: tags, scores, and "
                             "optional tokens, transitions, start, end)")
    unknown = sorted(set(obj) - {"tokens", "tags", "scores", "transitions", "start", "end"})
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r} (keys: tokens, tags, scores, "
                         "transitions, start, end)")
    tags = obj["tags"]
    if not (isinstance(tags, list) and tags and all(isinstance(t, str) for t in tags)):
        raise InputError(f"{where}: 'tags' must be a non-empty list of strings")
    arrays = {}
    for key in ("scores", "transitions", "start", "end"):
        v = obj.get(key)
        if v is None and key != "scores":
            continue
        try:
            arrays[key] = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(f"{where}: {key!r} must be an array of numbers") from None
    n = arrays["scores"].shape[0] if arrays["scores"].ndim == 2 else None
    if n is None or n == 0:
        raise InputError(f"{where}: 'scores' must be a non-empty n x {len(tags)} array "
                         f"(one row per token), got shape {arrays['scores'].shape}")
    tokens = obj.get("tokens")
    if tokens is not None:
        if not (isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
            raise InputError(f"{where}: 'tokens' must be a list of strings")
        if len(tokens) != n:
            raise InputError(f"{where}: {len(tokens)} tokens but {n} rows of scores")
    L = len(tags)
    trans = arrays.get("transitions", np.zeros((L, L)))
    rows = [[t] for t in tokens] if tokens is not None else [["_"]] * n
    return ScoredSentence(rows, [lineno] * n, path,
                          (tags, arrays["scores"], trans, arrays.get("start"), arrays.get("end")),
                          has_tokens=tokens is not None)


def _with_tokens(items: list[ScoredSentence], sentences: list[Sentence], path: str
                 ) -> list[ScoredSentence]:
    """Each scored sentence given the CoNLL sentence's rows and lines."""
    if len(items) != len(sentences):
        raise InputError(f"{path} scores {len(items)} sentences but the input has "
                         f"{len(sentences)}")
    out = []
    for k, (it, s) in enumerate(zip(items, sentences)):
        if len(it) != len(s):
            raise InputError(f"{s.where(0)}: sentence {k} has {len(s)} tokens but "
                             f"{it.where(0)} scores {len(it)}")
        out.append(ScoredSentence(s.rows, s.lines, s.source, it.scores, has_tokens=True))
    return out
