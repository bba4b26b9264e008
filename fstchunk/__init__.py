"""fstchunk: weighted finite-state machines for minimum-risk chunking.

The tree follows the design: encodings (:mod:`fstchunk.encodings`) -> machines
(:mod:`fstchunk.grammars`) -> models and lattices -> expectations and gradients ->
decoders and trainers -> CLI (:mod:`fstchunk.cli`).
"""

from .encodings import (SCHEMES, chunks_to_tags, conlleval_chunks, convert, is_valid,
                        tags_to_chunks)
from .tagspace import TagSet
from .lattice import Lattice
from .expected import ExpectedF, expected_f
from .decode import Decoding, decode_map, decode_meu, decode_meu_corpus, decode_posterior
from .lossaug import decode_loss_augmented
from .models import joint

__version__ = "0.1.0"

__all__ = ["SCHEMES", "Decoding", "decode_map", "decode_meu", "decode_meu_corpus",
           "decode_posterior", "decode_loss_augmented", "ExpectedF", "Lattice", "TagSet",
           "expected_f", "chunks_to_tags", "conlleval_chunks", "convert", "is_valid", "joint",
           "tags_to_chunks"]
