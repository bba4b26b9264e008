"""The model protocol: what every fstchunk model offers the decoders, the CLI and the trainer.

A model (:class:`~fstchunk.models.crf.CRF`, :class:`~fstchunk.models.hmm.HMM`,
:class:`~fstchunk.models.joint.JointModel`) is a distribution over the valid tag
sequences of one chunk scheme for each sentence.  :class:`ChunkModel` names the
part everyone relies on: ``kind`` (the tag stored in its model file, the key of
:data:`fstchunk.models.MODELS`), the ``scheme_`` of its chunk lattices (their tags
are ``lattice.tags``; the joint model's ``tags`` is a method of its own),
``lattices(sentences)``, ``fit(...) -> self``, ``save(path)`` and
``load(path)``; the CRF and the HMM also have ``columns_`` (the
:class:`~fstchunk.io.columns.Columns` they read, stored in their files), and every model
that reads CoNLL columns says which it reads in ``reads`` (the CRF's POS only if its
template reads it; the joint model's fixed word 0, POS 1): :func:`reading_columns`.
Models trained by this version also carry ``layout_`` (their training layout,
:class:`~fstchunk.io.layout.Layout`, or None) and ``data_scheme_``.  What ``fit``
learns ends in ``_``; the constructor's arguments are hyper-parameters, never
rewritten by ``fit`` (:mod:`fstchunk.models.estimator`).  :class:`TrainableModel` adds what
:class:`fstchunk.learn.loop.Trainer` needs to run a solver over a differentiable
objective: a parameter vector θ, prepared training data, and the objective as
a function of θ.

Pitfalls:

* ``fit`` is an *instance* method returning ``self`` (sklearn style): the
  constructor takes the hyper-parameters, ``fit`` the data.  Its arguments
  differ per model (sentences for HMM and CRF, encoded layered sentences for the
  joint model); the protocol fixes only the return value.
* ``lattices`` takes many sentences at once: the CRF computes one feature
  transform and one sparse product for all of them, so a loop over a
  one-sentence method would be far slower.
* decoders read ``scheme_`` to convert predictions into the output scheme, so
  it must be the scheme the lattices' tags are written in, not the data's (nor the
  ``scheme`` hyper-parameter as the user spelled it).

Helpers every model's training uses: :func:`gold_tags` (the tag column of a
sentence, an invalid sequence refused at the offending tag's own line),
:func:`training_columns` (the reading columns resolved for a training set) and
:func:`check_training_set` (no chunk at all or a single tag is refused, naming the
file).
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, Sequence, runtime_checkable

from ..schemes import encodings as enc
from ..io.columns import Columns
from ..io.conll import Sentence
from ..core.errors import InputError, SchemeError
from ..decoding.batch import decode_sentences
from ..decoding.decoders import MAP
from ..learn.loop import Learnable
from ..evaluation.chunks import evaluate
from ..structures.lattice import Lattice



@runtime_checkable
class ChunkModel(Protocol):
    """Any fstchunk model: a chunk lattice per sentence, fitting, model files."""

    #: the model kind stored in its file ("crf", "hmm", "joint")
    kind: ClassVar[str]
    #: the (canonical) scheme the tags are written in
    scheme_: str
    #: hyper-parameters and training bookkeeping, stored in the model file
    settings_: dict

    def lattices(self, sentences: Sequence[Sentence]) -> list[Lattice]:
        """One :class:`~fstchunk.structures.lattice.Lattice` per sentence, in order."""
        ...

    def fit(self, *args: Any, **kwargs: Any) -> "ChunkModel":
        """Estimate the parameters from training data; returns ``self``."""
        ...

    def save(self, path) -> None:
        """Write the model file (atomically, see :mod:`fstchunk.models.io`)."""
        ...

    @classmethod
    def load(cls, path) -> "ChunkModel":
        """Read a model file of this kind; :class:`~fstchunk.core.errors.ModelFileError`
        naming the file if it cannot."""
        ...


@runtime_checkable
class TrainableModel(ChunkModel, Learnable, Protocol):
    """A chunk model :class:`fstchunk.learn.loop.Trainer` trains: a :class:`ChunkModel`
    that is the trainer's :class:`~fstchunk.learn.loop.Learnable` (the objectives it
    trains, θ as ``theta_``, prepared training data, a solver per objective, a dev F);
    the one protocol of training, declared once in the trainer."""


def chunk_dev_f(model: Any, sentences: Sequence[Sentence]) -> float:
    """conlleval F (percent) of MAP decoding against the gold tags read in the model's
    data scheme: the model's tag column (``model.columns_.tag``) if it has one, else
    the last column."""
    cols = getattr(model, "columns_", None)
    tag = getattr(cols, "tag", None)
    col = -1 if tag is None else tag
    scheme = getattr(model, "data_scheme_", None) or "IOB2"
    preds = decode_sentences(model, sentences, MAP(), output_scheme=scheme)
    return evaluate([s.column(col) for s in sentences], preds, scheme=scheme).overall.f


def gold_tags(sentence: Sentence, data_scheme: str, scheme: str,
              column: int | None = -1) -> list[str]:
    """The sentence's tag ``column`` (a :class:`~fstchunk.io.columns.Columns`' ``tag``),
    read in ``data_scheme`` and written in ``scheme``.  An invalid sequence raises
    :class:`SchemeError` at the offending tag's own ``file:line``, naming the tag and
    what it follows (models are strict: :mod:`fstchunk.io.gold` repairs or skips such
    sentences before they reach a model)."""
    width = len(sentence.rows[0]) if sentence.rows else 0
    if column is None or not -width <= column < width:
        raise InputError(f"{sentence.where(0)}: no tag column "
                         f"{'' if column is None else column} (the line has {width} "
                         f"column{'s' if width != 1 else ''}); gold tags are needed here")
    tags = sentence.column(column)
    try:
        return enc.convert(tags, data_scheme, scheme)
    except SchemeError as e:
        if e.position is None or not 0 <= e.position < len(tags):
            raise SchemeError(f"{sentence.where(0)}: {e}") from None
        head, sep, reason = str(e).partition(": ")
        reason = reason if sep and head.startswith("position ") else str(e)
        raise SchemeError(f"{sentence.where(e.position)}: {reason}", e.position) from None


def reading_columns(model: Any) -> Columns | None:
    """Where ``model`` reads the words and POS tags of the sentences it is given (its
    ``reads``: POS None when it reads none); None for a model that reads no CoNLL
    columns (the segment model)."""
    cols = getattr(model, "reads", None)
    return cols if isinstance(cols, Columns) else None


def training_columns(sentences: Sequence[Sentence], columns: Columns | None,
                     what: str) -> Columns:
    """``columns`` (default ``Columns()``, :mod:`fstchunk.io.columns`) resolved to absolute
    indices for training ``sentences``, whose lines must all have the same number of
    columns; InputError naming the file for no sentences, an empty sentence or columns
    that do not fit (``what``: the model, for the message)."""
    if not sentences:
        raise InputError(f"no training sentences: {what} needs at least one training "
                         f"sentence with chunks")
    columns = Columns() if columns is None else columns
    by_width: dict[int, Columns] = {}
    for s in sentences:
        if len(s) == 0 or not s.rows[0]:
            raise InputError(f"{s.where(0)}: a training sentence without tokens")
        width = len(s.rows[0])
        if width not in by_width:
            by_width[width] = columns.resolve(width, s.where(0), need_tag=True)
            if by_width[width] != next(iter(by_width.values())):
                raise InputError(f"{s.where(0)}: the line has {width} columns, unlike "
                                 f"{sentences[0].where(0)}; train on files of one layout")
    return next(iter(by_width.values()))


def check_training_set(sentences: Sequence[Sentence], gold: Sequence[Sequence[str]],
                       what: str) -> None:
    """Refuse gold tags a model cannot learn from: no chunk at all, or a single distinct
    tag; one InputError naming the file (``what``: the model, for the message)."""
    source = sentences[0].source if sentences else "<no sentences>"
    seen = {t for g in gold for t in g}
    if seen <= {enc.OUTSIDE}:
        raise InputError(f"{source}: no chunk in {len(sentences)} training sentence"
                         f"{'s' if len(sentences) != 1 else ''} (every tag is O): nothing "
                         f"for {what} to learn; is the tag column right?")
    if len(seen) == 1:
        raise InputError(f"{source}: every training tag is {next(iter(seen))!r}: {what} "
                         f"needs at least two distinct tags; is the tag column right?")
