"""Expected utilities with gradients from the numpy engine, for the torch layer's
losses ``meu-exact``, ``meu-macro``, ``meu-partial``, ``meu-type`` and ``meu-weighted``.

E[u(x | gold)] for x ~ the CRF and its gradient with respect to the emissions,
transitions, start and end scores come from the engine's count sweeps and their
reverse mode (:func:`fstchunk.engine.utility_grad.expected_utility_grad`), the same
code as the CRFs' objectives, wrapped as a ``torch.autograd.Function``: the scores
go to the CPU in float64, each sentence is a dense chain lattice
(:meth:`fstchunk.structures.lattice.Lattice.of_chain`), and the gradients come back
in the scores' dtype and device.

Pitfall: this runs sentence by sentence on the CPU, off the GPU, at the speed of the
numpy objective (about 15 ML evaluations per sentence, more per type for ``macro``);
``meu`` itself has the torch recursion of :mod:`.expected`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..engine.utility_grad import expected_utility_grad
from ..schemes.tagspace import TagSpace
from ..structures.lattice import Lattice


class _EngineUtility(torch.autograd.Function):
    """E[u] (B,) of each sentence's gold chunks; backward from the engine's gradients."""

    @staticmethod
    def forward(ctx, emissions, transitions, start, end, space, lengths, chunks, utility,
                beta_sq):
        em, tr, st, en = (x.detach().to("cpu", torch.float64).numpy()
                          for x in (emissions, transitions, start, end))
        B, n, L = em.shape
        values = np.zeros(B)
        gE, gT, gS, gEnd = np.zeros((B, n, L)), np.zeros((B, L, L)), np.zeros((B, L)), \
            np.zeros((B, L))
        for b, length in enumerate(lengths):
            lat = Lattice.of_chain(space, em[b, :length], tr, st, en)
            values[b], gE[b, :length], gT[b], gS[b], gEnd[b] = expected_utility_grad(
                lat, chunks[b], utility, beta_sq)
        like = dict(dtype=emissions.dtype, device=emissions.device)
        ctx.save_for_backward(*(torch.as_tensor(g, **like) for g in (gE, gT, gS, gEnd)))
        return torch.as_tensor(values, **like)

    @staticmethod
    def backward(ctx, grad):
        gE, gT, gS, gEnd = ctx.saved_tensors
        g = grad.view(-1, 1, 1)
        return (g * gE, (g * gT).sum(0), (g[:, 0] * gS).sum(0), (g[:, 0] * gEnd).sum(0),
                None, None, None, None, None)


def expected_utility(tags: Sequence[str], scheme: str, bt, chunks: list, utility: str,
                     beta_sq: float) -> torch.Tensor:
    """E[u(x | gold)] (B,) of the checked batch ``bt`` (:class:`.checks.Batch`), each
    sentence's gold ``chunks`` (type, start, end); differentiable in the scores."""
    space = TagSpace.of(tuple(tags), scheme)
    return _EngineUtility.apply(bt.emissions, bt.transitions, bt.start, bt.end, space,
                                bt.lengths_list, chunks, utility, beta_sq)
