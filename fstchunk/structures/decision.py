"""What a decoder returns for one lattice: :class:`Decoding`."""

from __future__ import annotations

from typing import NamedTuple


class Decoding(NamedTuple):
    """A decoder's decision for one lattice: the tags, the value the decoder
    maximised, and a certified bound on how far that value can lie below the
    decoder's own maximum.  A tuple, so ``tags, score, gap = decoding`` works.

    | decoder | ``score`` | ``gap`` |
    |---|---|---|
    | MAP (Viterbi) | log Pr(tags) | 0.0 (an exact DP) |
    | posterior | $\\sum_i \\Pr(y_i = x_i)$ | 0.0 (an exact DP) |
    | exact MEU | E[F_β] of the tags | its certificate, < 1e-12 |
    | k-best MEU | E[F_β] of the tags | inf (no certificate) |

    Attributes:
        tags: the decided tag sequence.
        score: the value the decoder maximised.
        gap: max − ``score`` is at most ``gap``.

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> fstchunk.decode_map(lattice)
        Decoding(tags=['B-PER', 'I-PER', 'O'], score=-0.750..., gap=0.0)
        >>> tags, score, gap = fstchunk.decode_meu(lattice, method="kbest")
        >>> round(score, 3), gap
        (0.512, inf)
    """
    tags: list[str]
    score: float
    gap: float = 0.0
