"""A decision rule over lattices: the :class:`Decoder` protocol and its registry,
:data:`REGISTRY`, which every subclass with a ``name`` joins (the decoders themselves:
:mod:`fstchunk.decoding.decoders`)."""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

from ..core.blas import one_blas_thread
from ..engine.ragged import RaggedBatch
from ..structures.lattice import Decoding, Lattice
from ..structures.lattices import apply, of_batch

#: name -> decoder class, in the order the CLI lists them
REGISTRY: dict[str, type["Decoder"]] = {}


class Decoder:
    """A decision rule over lattices: what :func:`fstchunk.decoder` returns for a
    name of the registry (module doc's table).  :meth:`decode` decides one lattice
    (a :class:`Decoding`), :meth:`decode_all` many on the batched engine, :meth:`tags`
    their tags alone; its settings (β, k, ...) are its constructor's, checked there.

    Adding a decoder is one class: subclass it, set ``name`` and the flags below,
    implement :meth:`decode_one` (one lattice) and, for speed, :meth:`decode_batch`
    (a :class:`~fstchunk.engine.ragged.RaggedBatch`); the registry, the CLI's
    ``--decoder``, ``decode_sentences``, the sklearn estimator and the torch layer
    pick it up.

    Attributes:
        name: the registry's name (``--decoder``, ``decoder=``).
        scope: ``sentence`` (each on its own) or ``corpus`` (one joint decision).
        needs_probabilities: it reads the lattice as a distribution (a margin-trained
            model must be calibrated first).
        needs_chunks: it needs a chunk scheme.
        returns: what :attr:`Decoding.score` holds.
        settings: the constructor's settings, in order.

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> dec = fstchunk.decoder("posterior")
        >>> isinstance(dec, fstchunk.Decoder), dec.needs_probabilities, dec.returns
        (True, True, 'Σ_i Pr(y_i = x_i)')
        >>> dec.tags([lattice, lattice])
        [['B-PER', 'I-PER', 'O'], ['B-PER', 'I-PER', 'O']]
        >>> fstchunk.decoder("meu", beta=0.5)
        MEU(beta=0.5, memory_budget=None, utility='conlleval')
    """
    name: ClassVar[str] = ""
    scope: ClassVar[str] = "sentence"
    needs_probabilities: ClassVar[bool] = True
    needs_chunks: ClassVar[bool] = True
    returns: ClassVar[str] = ""
    settings: ClassVar[tuple[str, ...]] = ()
    #: the output structures it decodes: ``chain`` (tag sequences, lattices),
    #: ``segments`` (a segment model's scored candidates, :meth:`choose_segments`)
    structures: ClassVar[frozenset] = frozenset({"chain"})

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.name:
            REGISTRY[cls.name] = cls

    # ------------------------------------------------------------------ one and many
    def decode(self, lattice: Lattice) -> Decoding:
        """The decision for one lattice (a batch of one)."""
        return self.decode_all([lattice])[0]

    @one_blas_thread
    def decode_all(self, lattices: Sequence[Lattice], errors: str = "raise") -> list:
        """The :class:`~fstchunk.decoding.decode.Decoding` of each lattice, in order; dense
        chains in ragged batches.  ``errors="return"``: a sentence that fails holds
        its exception instead (:mod:`fstchunk.structures.lattices`)."""
        lattices = list(lattices)
        self.check(lattices)
        return apply(lattices, self.decode_batch, lambda i: self.decode_one(lattices[i]), errors)

    def tags(self, lattices: Sequence[Lattice], errors: str = "raise") -> list:
        """The decided tags of each lattice (what :meth:`decode_all` decides, without
        the scores where they cost extra work)."""
        return [d if isinstance(d, BaseException) else d.tags
                for d in self.decode_all(lattices, errors)]

    def check(self, lattices: Sequence[Lattice]) -> None:
        """Refuse lattices this decoder cannot read (before any work)."""
        if self.needs_chunks:
            for lat in lattices[:1]:
                lat.space.require_chunks(f"the {self.name} decoder")

    # ------------------------------------------------------------------ to implement
    def decode_one(self, lattice: Lattice) -> Decoding:
        raise NotImplementedError

    def choose_segments(self, scores: Sequence[float], probabilities: Sequence[float] | None,
                        threshold: float) -> list[int]:
        """The candidates (indices) a segment model keeps, given their scores, their
        calibrated probabilities (None without calibration) and the model's threshold
        (the ``segments`` structure)."""
        raise NotImplementedError

    def decode_batch(self, batch: RaggedBatch, value: bool = True) -> list[Decoding]:
        """The decisions of a ragged batch (one at a time unless overridden);
        ``value``: False when only the tags will be read (a decoder may then skip
        computing its scores)."""
        return [self.decode_one(lat) for lat in of_batch(batch)]

    # ------------------------------------------------------------------ plumbing
    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.settings)
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, k) == getattr(other, k) for k in self.settings)

    def __hash__(self) -> int:
        return hash((type(self), tuple(getattr(self, k) for k in self.settings)))
