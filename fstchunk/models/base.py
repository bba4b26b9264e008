"""The model protocol: what every fstchunk model offers the decoders, the CLI and the trainer.

A model (:class:`~fstchunk.models.crf.CRF`, :class:`~fstchunk.models.hmm.HMM`,
:class:`~fstchunk.models.joint.JointModel`) is a distribution over the valid tag
sequences of one chunk scheme for each sentence.  :class:`ChunkModel` names the
part everyone relies on: ``kind`` (the tag stored in its model file, the key of
:data:`fstchunk.models.MODELS`), the ``scheme`` of its chunk lattices (their tags
are ``lattice.tags``; the joint model's ``tags`` is a method of its own),
``lattices(sentences)``, ``fit(...) -> self``, ``save(path)`` and
``load(path)``.  :class:`TrainableModel` adds what
:class:`fstchunk.training.Trainer` needs to run L-BFGS over a differentiable
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
* decoders read ``scheme`` to convert predictions into the output scheme, so
  it must be the scheme the lattices' tags are written in, not the data's.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Protocol, Sequence, runtime_checkable

import numpy as np

from .. import encodings as enc
from ..conll import Sentence
from ..errors import SchemeError
from ..lattice import Lattice

#: the objective of a trainable model as a function of θ: (value, gradient), minimised
Objective = Callable[[np.ndarray], "tuple[float, np.ndarray]"]


@runtime_checkable
class ChunkModel(Protocol):
    """Any fstchunk model: a chunk lattice per sentence, fitting, model files."""

    #: the model kind stored in its file ("crf", "hmm", "joint")
    kind: ClassVar[str]
    #: the (canonical) scheme the tags are written in
    scheme: str
    #: hyper-parameters and training bookkeeping, stored in the model file
    settings: dict

    def lattices(self, sentences: Sequence[Sentence]) -> list[Lattice]:
        """One :class:`~fstchunk.lattice.Lattice` per sentence, in order."""
        ...

    def fit(self, *args: Any, **kwargs: Any) -> "ChunkModel":
        """Estimate the parameters from training data; returns ``self``."""
        ...

    def save(self, path) -> None:
        """Write the model file (atomically, see :mod:`fstchunk.models.io`)."""
        ...

    @classmethod
    def load(cls, path) -> "ChunkModel":
        """Read a model file of this kind; :class:`~fstchunk.errors.ModelFileError`
        naming the file if it cannot."""
        ...


@runtime_checkable
class TrainableModel(ChunkModel, Protocol):
    """A model trained by gradient-based optimisation of θ (the CRF)."""

    #: the parameter vector; the trainer reads the start and writes each iterate
    theta: np.ndarray

    def training_data(self, train: Any) -> Any:
        """The prepared training data (features, gold indices) of ``train``:
        sentences, or data this method returned before (passed through)."""
        ...

    def objective(self, name: str, data: Any, l2: float, beta: float) -> Objective:
        """θ -> (value, gradient) of objective ``name`` (negated where it is a
        utility, so always minimised) plus the penalty l2·‖θ‖²."""
        ...


def gold_tags(sentence: Sentence, data_scheme: str, scheme: str, column: int = -1) -> list[str]:
    """The sentence's tag column, read in ``data_scheme`` and written in ``scheme``;
    an invalid sequence raises :class:`SchemeError` naming file and line."""
    try:
        return enc.convert(sentence.column(column), data_scheme, scheme)
    except ValueError as e:
        raise SchemeError(f"{sentence.where(0)}: {e}") from None
