"""fstchunk: weighted finite-state machines for minimum-risk chunking.

The everyday names are here, loaded when first used (so ``import fstchunk`` costs
next to nothing, and ``fstchunk eval`` does not wait for scipy or pynini):

* encodings: :data:`SCHEMES`, :func:`tags_to_chunks`, :func:`chunks_to_tags`,
  :func:`convert`, :func:`is_valid`, :func:`conlleval_chunks`, :class:`TagSet`;
* files and scores: :func:`read_conll`, :func:`iter_conll`, :func:`write_conll`,
  :func:`evaluate` (tag sequences), :func:`evaluate_file` (conlleval.pl's reading);
* distributions and expectations: :class:`Lattice`, :func:`expected_f`,
  :class:`ExpectedF`; other utilities (exact-boundary, per-type, macro F, a type map
  of one's own) as machines: :class:`Utility`, :func:`utility`, :func:`expected_utility`;
* decoders as objects: :func:`decoder` (a name of the registry and its settings, e.g.
  ``fstchunk.decoder("meu", beta=0.5)``), :class:`Decoder`, the module :mod:`decoders`;
  as functions: :func:`decode_map`, :func:`decode_posterior`, :func:`decode_meu`,
  :func:`decode_meu_corpus`, :func:`decode_loss_augmented`, :class:`Decoding`,
  :func:`decode_sentences` (a model over sentences);
* entity confidences: :func:`scored_chunks` (a decision's chunks with their exact
  marginals, :class:`ScoredChunk`), :func:`decode_chunks` (decode and score);
* models and learning: :class:`CRF`, :class:`AttributeCRF` (CRFsuite's features over
  weighted attributes), :class:`HMM`, :class:`JointModel`, :class:`SegmentModel`,
  :func:`load_model`, :class:`Trainer`, :data:`OBJECTIVES`;
* the errors (:mod:`fstchunk.core.errors`): :class:`FstchunkError` and its kinds
  :class:`InputError`, :class:`LayoutError`, :class:`SchemeError`, :class:`CoNLLError`,
  :class:`ModelFileError`, :class:`OutputError`, :class:`BudgetError`,
  :class:`DownloadError`, :class:`TrainingInterrupted`, :class:`NotFittedError`; the warnings
  :class:`FstchunkWarning` and :class:`FstchunkDeprecationWarning`;
* the subpackage :mod:`joint` (Shimizu & Haas; ``import fstchunk.joint`` works too).

The tree follows the design: encodings (:mod:`fstchunk.schemes.encodings`) -> machines
(:mod:`fstchunk.grammars`) -> models and lattices -> expectations and gradients ->
decoders and trainers -> CLI (:mod:`fstchunk.cli`).

    import fstchunk
    crf = fstchunk.CRF("tmpt3").fit(fstchunk.read_conll("train.txt"))
    fstchunk.decode_sentences(crf, fstchunk.read_conll("test.txt"), "meu")
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING, Any as _Any

from .core.namespace import public_dir as _public_dir

__version__ = "0.1.0"

#: public name -> (module, attribute); attribute None: the module itself
_LAZY: dict[str, tuple[str, str | None]] = {
    **{n: ("fstchunk.schemes.encodings", n) for n in (
        "SCHEMES", "chunks_to_tags", "conlleval_chunks", "convert", "is_valid",
        "tags_to_chunks")},
    "TagSet": ("fstchunk.schemes.tagspace", "TagSet"),
    **{n: ("fstchunk.io.conll", n) for n in ("read_conll", "iter_conll", "write_conll")},
    **{n: ("fstchunk.evaluation.chunks", n) for n in ("evaluate", "evaluate_file")},
    "Lattice": ("fstchunk.structures.lattice", "Lattice"),
    **{n: ("fstchunk.decoding.expected", n) for n in ("ExpectedF", "expected_f")},
    **{n: ("fstchunk.decoding.utilities", n) for n in ("Utility", "utility",
                                                        "expected_utility")},
    **{n: ("fstchunk.decoding.decode", n) for n in (
        "Decoding", "decode_map", "decode_meu", "decode_meu_corpus", "decode_posterior")},
    "decode_loss_augmented": ("fstchunk.decoding.lossaug", "decode_loss_augmented"),
    "decode_sentences": ("fstchunk.decoding.batch", "decode_sentences"),
    **{n: ("fstchunk.decoding.decoders", n) for n in ("Decoder", "decoder")},
    "decoders": ("fstchunk.decoding.decoders", None),
    **{n: ("fstchunk.decoding.confidence", n) for n in ("ScoredChunk", "scored_chunks", "decode_chunks")},
    **{n: ("fstchunk.core.errors", n) for n in (
        "BudgetError", "CoNLLError", "DownloadError", "FstchunkDeprecationWarning", "FstchunkError",
        "FstchunkWarning", "InputError",
        "LayoutError", "ModelFileError", "NotFittedError", "OutputError", "SchemeError",
        "TrainingInterrupted")},
    "CRF": ("fstchunk.models.crf", "CRF"),
    "AttributeCRF": ("fstchunk.models.attribute_crf", "AttributeCRF"),
    "HMM": ("fstchunk.models.hmm", "HMM"),
    "JointModel": ("fstchunk.models.joint", "JointModel"),
    "SegmentModel": ("fstchunk.models.segment", "SegmentModel"),
    "load_model": ("fstchunk.models", "load_model"),
    "Trainer": ("fstchunk.learn", "Trainer"),
    "OBJECTIVES": ("fstchunk.learn.objectives", "OBJECTIVES"),
    "joint": ("fstchunk.joint", None),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> _Any:
    """Load a public name on first use (PEP 562)."""
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'fstchunk' has no attribute {name!r}") from None
    loaded = _importlib.import_module(module)
    value = loaded if attr is None else getattr(loaded, attr)
    globals()[name] = value
    return value


__dir__ = _public_dir(globals(), _LAZY)

if _TYPE_CHECKING:                      # what type checkers and editors see
    from .decoding.batch import decode_sentences
    from .decoding.confidence import ScoredChunk, decode_chunks, scored_chunks
    from .io.conll import iter_conll, read_conll, write_conll
    from .decoding.decode import (Decoding, decode_map, decode_meu, decode_meu_corpus,
                                  decode_posterior)
    from .decoding import decoders
    from .decoding.decoders import Decoder, decoder
    from .core.errors import (BudgetError, CoNLLError, DownloadError, FstchunkError,
                              FstchunkDeprecationWarning, FstchunkWarning,
                              InputError, LayoutError, ModelFileError, NotFittedError,
                              OutputError,
                              SchemeError, TrainingInterrupted)
    from .schemes.encodings import (SCHEMES, chunks_to_tags, conlleval_chunks, convert,
                                    is_valid, tags_to_chunks)
    from .evaluation.chunks import evaluate, evaluate_file
    from .decoding.expected import ExpectedF, expected_f
    from .decoding.utilities import Utility, expected_utility, utility
    from .structures.lattice import Lattice
    from .learn import Trainer
    from .learn.objectives import OBJECTIVES
    from .decoding.lossaug import decode_loss_augmented
    from .models import load_model
    from . import joint
    from .models.attribute_crf import AttributeCRF
    from .models.crf import CRF
    from .models.hmm import HMM
    from .models.joint import JointModel
    from .models.segment import SegmentModel
    from .schemes.tagspace import TagSet
