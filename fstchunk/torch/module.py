"""A CRF output layer for a neural tagger, and the sub-word pooling it usually needs.

:class:`CRFLayer` is a ``torch.nn.Module`` holding the transition (and start/end)
scores as parameters on top of :class:`~fstchunk.torch.crf.ChunkCRF`; the network in
front of it gives the emissions (B, n, L).  Its losses, all means over the batch's
sentences unless ``reduction="sum"``:

* ``"ml"``: log Z − score(gold), the negated log-likelihood (Lafferty et al. 2001);
  with ``allowed=`` (partial labels) log Z − log Z_A, the marginal likelihood of the
  sequences the mask allows (:mod:`fstchunk.models.partial` is its numpy twin);
* ``"meu"``: 1 − E[F_β(y | gold)] per sentence (minimum risk, Jansche 2005);
* ``"meu-corpus"``: 1 − (1+β²)·Σ E[tp] / (Σ E[m] + β²·Σ m(gold)), the batch's
  expected corpus F (one number for the batch; ``reduction`` does not apply);
* ``"meu-exact"``, ``"meu-macro"``, ``"meu-partial"``, ``"meu-type"``,
  ``"meu-weighted:T=w,..."``: 1 − E[u] per sentence for the exact-boundary,
  macro-averaged, partial-match, type-match and per-type weighted F_β of :mod:`fstchunk.decoding.utilities`, from the numpy engine on the CPU
  (:mod:`fstchunk.torch.engine_loss`: slower, exact, the same code as the CRFs').

These are the objectives of the same names everywhere in fstchunk
(:data:`fstchunk.learn.objectives.OBJECTIVES`: ``train --objective``, the CRFs'
``objective=``).  Their older torch names ``"nll"``, ``"expected-f"`` and
``"expected-corpus-f"`` are still accepted (:data:`OLD_NAMES`).

``beta`` is the standard β of F_β = (1+β²)PR/(β²P+R) (:mod:`fstchunk.core.fbeta`).

:func:`first_subword_pool` maps sub-word scores (the output of a token-classification
model over word pieces) to word scores: each word takes its first piece's scores, as
the ``word_ids()`` of a Hugging Face fast tokenizer describe them.

Pitfalls: an expected-F loss from a randomly initialised network has tiny gradients
(every chunk has probability near 0); start with ``"ml"`` and fine-tune with an
expected-F loss.  The parameters start at 0, which is a valid CRF (the scheme's masks
still forbid invalid arcs; their scores are not parameters that could learn them back).
"""

from __future__ import annotations

from typing import Sequence

import torch

from ..core.errors import InputError
from ..learn import objectives as lo
from .crf import ChunkCRF

#: the objectives :meth:`CRFLayer.loss` trains, named as everywhere in fstchunk
OBJECTIVES = (lo.ML.name, lo.MEU.name, lo.MEU_CORPUS.name, lo.MEU_EXACT.name,
              lo.MEU_MACRO.name, lo.MEU_PARTIAL.name, lo.MEU_TYPE.name, lo.MEU_WEIGHTED.name)
#: the objectives whose expectation and gradient come from the numpy engine, and their utility
ENGINE_UTILITIES = {lo.MEU_EXACT.name: "exact", lo.MEU_MACRO.name: "macro",
                    lo.MEU_PARTIAL.name: "partial", lo.MEU_TYPE.name: "type"}
#: the older torch names of the same objectives, still accepted
OLD_NAMES = {"nll": lo.ML.name, "expected-f": lo.MEU.name,
             "expected-corpus-f": lo.MEU_CORPUS.name}


class CRFLayer(torch.nn.Module):
    """Transitions (L, L) and, with ``start_end``, start and end scores (L,) as
    parameters over the valid sequences of ``scheme`` for the columns ``tags``."""

    def __init__(self, tags: Sequence[str], scheme: str = "IOB2", start_end: bool = True,
                 dtype: torch.dtype = torch.float32):
        super().__init__()
        self.crf = ChunkCRF(tags, scheme)
        L = len(self.crf.tags)
        self.transitions = torch.nn.Parameter(torch.zeros(L, L, dtype=dtype))
        self.start = torch.nn.Parameter(torch.zeros(L, dtype=dtype)) if start_end else None
        self.end = torch.nn.Parameter(torch.zeros(L, dtype=dtype)) if start_end else None

    @property
    def tags(self) -> tuple[str, ...]:
        return self.crf.tags

    def _args(self, emissions: torch.Tensor, mask: torch.Tensor) -> tuple:
        return emissions, self.transitions, mask, self.start, self.end

    def forward(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Token marginals Pr(y_t = l) (B, n, L)."""
        return self.crf.marginals(*self._args(emissions, mask))

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.crf.log_partition(*self._args(emissions, mask))

    def chunk_marginals(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Entity confidences Pr(chunk (s, e) of type t) (B, n, n+1, T)."""
        return self.crf.chunk_marginals(*self._args(emissions, mask))

    def loss(self, emissions: torch.Tensor, mask: torch.Tensor,
             gold: Sequence[Sequence[str]] | None = None, objective: str = "ml",
             beta: float = 1.0, reduction: str = "mean",
             allowed: torch.Tensor | None = None) -> torch.Tensor:
        """The training loss ``objective`` of :data:`OBJECTIVES` (module doc); with
        ``allowed`` (B, n, L) bool instead of ``gold`` (``ml`` only), the partial-label
        NLL log Z − log Z_A = −log Σ_{y ∈ A} Pr(y) (:meth:`ChunkCRF.log_partition`)."""
        name = OLD_NAMES.get(objective, objective) if isinstance(objective, str) else objective
        if not isinstance(name, str) or name.partition(":")[0] not in OBJECTIVES:
            raise InputError(f"unknown objective {objective!r}; use one of "
                             f"{', '.join(OBJECTIVES)}:TYPE=W,... (older names: "
                             f"{', '.join(OLD_NAMES)})")
        objective = lo.objective(name).name          # meu-weighted's weights checked
        if reduction not in ("mean", "sum"):
            raise InputError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        if (gold is None) == (allowed is None):
            raise InputError("give the loss gold tag lists or an allowed (B, n, L) bool "
                             "mask of partial labels (one of the two)")
        if allowed is not None and objective != lo.ML.name:
            raise InputError(f"allowed (partial labels) trains objective 'ml' only, the "
                             f"marginal likelihood; {objective!r} needs one gold per sentence")
        a = self._args(emissions, mask)
        if allowed is not None:
            per = self.crf.log_partition(*a) - self.crf.log_partition(*a, allowed=allowed)
            return per.mean() if reduction == "mean" else per.sum()
        if objective == lo.MEU_CORPUS.name:
            return 1 - self.crf.expected_corpus_f(*a, gold=gold, beta=beta)
        if objective == lo.ML.name:
            per = self.crf.log_partition(*a) - self.crf.score(*a, gold=gold)
        elif objective.startswith(lo.MEU_WEIGHTED.name + ":"):
            per = 1 - self.crf.expected_utility(*a, gold=gold, beta=beta, utility="weighted:"
                                                + objective.partition(":")[2])
        elif objective in ENGINE_UTILITIES:
            per = 1 - self.crf.expected_utility(*a, gold=gold, beta=beta,
                                                utility=ENGINE_UTILITIES[objective])
        else:
            per = 1 - self.crf.expected_f(*a, gold=gold, beta=beta)
        return per.mean() if reduction == "mean" else per.sum()

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor, method: str = "map",
               beta: float = 1.0, utility: str = "conlleval") -> list[list[str]]:
        """Tag lists: MAP (constrained Viterbi) or exact MEU for F_β (``utility``:
        conlleval's F or ``"exact"``, the exact-boundary F)."""
        return self.crf.decode(*self._args(emissions, mask), method=method, beta=beta,
                               utility=utility)

    def decode_chunks(self, emissions: torch.Tensor, mask: torch.Tensor, method: str = "map",
                      beta: float = 1.0, utility: str = "conlleval"
                      ) -> list[list[tuple[str, int, int, float]]]:
        """The decoded chunks (type, start, end, Pr(chunk ∈ y)) of each sentence."""
        return self.crf.decode_chunks(*self._args(emissions, mask), method=method, beta=beta,
                                      utility=utility)


def first_subword_pool(scores: torch.Tensor, word_ids: Sequence[Sequence[int | None]]
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """Word-level scores from sub-word scores (B, p, L): word w of sentence b takes the
    scores of its first piece (``word_ids[b][j]`` is the word of piece j, None for
    special tokens).  Returns (B, n, L) scores, n the most words of a sentence, and
    the (B, n) word mask; differentiable (a gather)."""
    if not isinstance(scores, torch.Tensor) or scores.dim() != 3:
        raise InputError("scores must be a (B, pieces, L) tensor")
    B, p, L = scores.shape
    if len(word_ids) != B:
        raise InputError(f"word_ids has {len(word_ids)} sentences but scores has {B}")
    firsts: list[list[int]] = []
    for b, ids in enumerate(word_ids):
        if len(ids) > p:
            raise InputError(f"word_ids[{b}] has {len(ids)} pieces but scores has {p}")
        first: dict[int, int] = {}
        for j, w in enumerate(ids):
            if w is None:
                continue
            if not isinstance(w, int) or w < 0:
                raise InputError(f"word_ids[{b}][{j}] must be a word index >= 0 or None, "
                                 f"got {w!r}")
            first.setdefault(w, j)
        if sorted(first) != list(range(len(first))):
            raise InputError(f"word_ids[{b}]: the words are not numbered 0..n-1 "
                             f"(found {sorted(first)[:10]})")
        firsts.append([first[w] for w in range(len(first))])
    n = max((len(f) for f in firsts), default=0)
    if n == 0:
        raise InputError("word_ids: no word in the batch")
    index = torch.zeros((B, n), dtype=torch.long)
    mask = torch.zeros((B, n), dtype=torch.bool)
    for b, f in enumerate(firsts):
        index[b, :len(f)] = torch.tensor(f, dtype=torch.long)
        mask[b, :len(f)] = True
    index = index.to(scores.device)
    words = scores.gather(1, index.unsqueeze(-1).expand(B, n, L))
    return torch.where(mask.to(scores.device).unsqueeze(-1), words,
                       torch.zeros_like(words)), mask.to(scores.device)
