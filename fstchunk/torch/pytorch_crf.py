"""``fstchunk.torch.CRF``: a drop-in for pytorch-crf 0.7.2's ``torchcrf.CRF`` (issue 46).

Same constructor, parameters (``start_transitions``, ``end_transitions``,
``transitions``, initialised uniform(−0.1, 0.1)), state-dict keys, ``forward``
(the log-likelihood log Pr(tags) = score(tags) − log Z, reductions ``sum``, ``none``,
``mean``, ``token_mean``), ``decode`` (Viterbi, lists of tag indices) and the same
``ValueError`` messages (raised as :class:`~fstchunk.core.errors.InputError`, a
``ValueError``), so a pytorch-crf script or checkpoint runs with the import changed.
``forward`` and ``decode`` are plain tensor code: ``torch.jit.script(CRF(5))`` works,
and :func:`fstchunk.torch.export.export_onnx` exports Viterbi and marginals.

On top, with ``tags=`` (the tag names of the columns) and ``scheme=``: only the
scheme's valid sequences (the masks of :class:`~fstchunk.torch.crf.ChunkCRF`),
``marginals`` (token posteriors by forward-backward), ``chunk_confidences``
(the decoded entities with Pr(entity ∈ y)), ``decode(..., decoder="meu", beta=...)``
(any decoder of :mod:`fstchunk.decoding.decoders`) and ``expected_f_loss``; these
delegate to ``ChunkCRF`` on the same parameters.

Differences from pytorch-crf (all refusals where pytorch-crf gave a silent wrong
answer or a raw IndexError): a mask must be left-aligned (pytorch-crf scores a holed
mask inconsistently), a tag index must be in 0..num_tags−1, and with ``tags=`` a gold
sequence the scheme forbids is refused.  The recursions here (forward, backward,
Viterbi: the linear-chain CRF of Lafferty et al. 2001) are the drop-in's scriptable
path; tests hold them to ``ChunkCRF``'s and to brute force.
"""


import operator
from typing import List, Optional, Sequence, Tuple

import torch
from torch import nn

from ..core.errors import InputError

REDUCTIONS = ("none", "sum", "mean", "token_mean")


def _shape(a: int, b: int) -> str:
    return "(" + str(a) + ", " + str(b) + ")"


class CRF(nn.Module):
    """A linear-chain CRF layer with pytorch-crf's interface (module doc).

    ``num_tags``: number of tags; ``batch_first``: emissions (batch, seq, tags) instead
    of (seq, batch, tags); ``tags``: optional tag names of the columns, which with
    ``scheme`` (default IOB2) restrict the CRF to the scheme's valid sequences and
    enable the chunk-level extras."""

    tag_names: List[str]
    constrained: bool

    def __init__(self, num_tags: int, batch_first: bool = False,
                 tags: Optional[Sequence[str]] = None, scheme: str = "IOB2") -> None:
        try:
            num_tags = operator.index(num_tags)        # an int, or numpy's, as torch takes
        except TypeError:
            raise InputError(f"invalid number of tags: {num_tags!r}") from None
        if num_tags <= 0:
            raise InputError(f"invalid number of tags: {num_tags}")
        super().__init__()
        self.num_tags = num_tags
        self.batch_first = batch_first
        self.start_transitions = nn.Parameter(torch.empty(num_tags))
        self.end_transitions = nn.Parameter(torch.empty(num_tags))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))
        self.reset_parameters()
        self.constrained = tags is not None
        self.tag_names = []
        ok = [torch.ones(num_tags, dtype=torch.bool), torch.ones(num_tags, num_tags,
                                                                  dtype=torch.bool),
              torch.ones(num_tags, dtype=torch.bool)]
        self._chunk = None
        if tags is not None:
            from .crf import ChunkCRF
            if isinstance(tags, str) or len(tags) != num_tags:
                raise InputError(f"CRF(tags=...): give num_tags = {num_tags} tag names, one "
                                 f"per emission column, got {tags!r:.80}")
            self._chunk = ChunkCRF(list(tags), scheme)
            self.tag_names = list(self._chunk.tags)
            ok = [torch.as_tensor(self._chunk._np[k]) for k in ("start", "trans", "end")]
        # not in the state dict: pytorch-crf checkpoints load and ours load there
        self.register_buffer("start_ok", ok[0], persistent=False)
        self.register_buffer("trans_ok", ok[1], persistent=False)
        self.register_buffer("end_ok", ok[2], persistent=False)

    def reset_parameters(self) -> None:
        """uniform(−0.1, 0.1), as pytorch-crf."""
        nn.init.uniform_(self.start_transitions, -0.1, 0.1)
        nn.init.uniform_(self.end_transitions, -0.1, 0.1)
        nn.init.uniform_(self.transitions, -0.1, 0.1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(num_tags={self.num_tags})"

    # ------------------------------------------------------------ pytorch-crf API
    def forward(self, emissions: torch.Tensor, tags: torch.Tensor,
                mask: Optional[torch.Tensor] = None, reduction: str = "sum") -> torch.Tensor:
        """Log-likelihood of ``tags`` (seq, batch) given ``emissions`` (seq, batch,
        num_tags) (batch first with ``batch_first``), reduced by ``reduction``."""
        self._validate(emissions, tags, mask)
        if reduction not in ["none", "sum", "mean", "token_mean"]:
            raise InputError(f"invalid reduction: {reduction}")
        em, m = self._prepare(emissions, mask, tags)
        if self.batch_first:
            tags = tags.transpose(0, 1)
        tags = tags.long()
        self._check_tags(tags, m)
        tags = torch.where(m, tags, torch.zeros_like(tags))      # padding: any value
        start, trans, end = self._scores()
        llh = self._score(em, tags, m, start, trans, end) - self._log_z(em, m, start,
                                                                         trans, end)
        if reduction == "none":
            return llh
        if reduction == "sum":
            return llh.sum()
        if reduction == "mean":
            return llh.mean()
        return llh.sum() / m.to(llh.dtype).sum()

    @torch.jit.export
    def decode(self, emissions: torch.Tensor, mask: Optional[torch.Tensor] = None,
               decoder: str = "map", beta: float = 1.0,
               utility: str = "conlleval") -> List[List[int]]:
        """The best tag indices of each sentence (its own length).  ``decoder``:
        ``"map"`` (Viterbi, pytorch-crf's) or, with ``tags=``, any decoder of
        :mod:`fstchunk.decoding.decoders` (``"meu"``: maximal expected F_β, standard β;
        ``utility="exact"``: of the exact-boundary F)."""
        self._validate(emissions, None, mask)
        if decoder != "map":
            return self._decode_registry(emissions, mask, decoder, beta, utility)
        em, m = self._prepare(emissions, mask, None)
        path = self._viterbi(em, m)
        lens = m.sum(0)
        out: List[List[int]] = []
        for b in range(path.shape[1]):
            row: List[int] = path[: int(lens[b]), b].tolist()
            out.append(row)
        return out

    # ------------------------------------------------------------ checks
    def _validate(self, emissions: torch.Tensor, tags: Optional[torch.Tensor],
                  mask: Optional[torch.Tensor]) -> None:
        """pytorch-crf's checks and messages, then a left-aligned mask."""
        if emissions.dim() != 3:
            raise InputError(f"emissions must have dimension of 3, got {emissions.dim()}")
        if emissions.size(2) != self.num_tags:
            raise InputError(f"expected last dimension of emissions is {self.num_tags}, "
                             f"got {emissions.size(2)}")
        a, b = emissions.size(0), emissions.size(1)
        if a == 0 or b == 0:
            raise InputError("emissions of shape " + str(list(emissions.shape)) + " hold no "
                             + "token or no sentence; the batch and sequence axes must be >= 1")
        if tags is not None:
            if tags.dim() != 2 or tags.size(0) != a or tags.size(1) != b:
                raise InputError("the first two dimensions of emissions and tags must match, "
                                 "got " + _shape(a, b) + " and " + str(list(tags.shape))
                                 .replace("[", "(").replace("]", ")"))
        if mask is not None:
            if mask.dim() != 2 or mask.size(0) != a or mask.size(1) != b:
                raise InputError("the first two dimensions of emissions and mask must match, "
                                 "got " + _shape(a, b) + " and " + str(list(mask.shape))
                                 .replace("[", "(").replace("]", ")"))
            m = mask.to(torch.bool)
            if self.batch_first:
                m = m.transpose(0, 1)
            if not bool(m[0].all()):
                raise InputError("mask of the first timestep must all be on")
            holes = m[1:] & ~m[:-1]
            if bool(holes.any()):
                where = holes.nonzero()[0]
                raise InputError("mask of sentence " + str(int(where[1])) + " is on again at "
                                 "position " + str(int(where[0]) + 1) + " after an off "
                                 "position; the mask must be left-aligned (on, then off)")

    def _check_tags(self, tags: torch.Tensor, m: torch.Tensor) -> None:
        """Tag indices in range and, with ``tags=``, a sequence the scheme allows."""
        bad = ((tags < 0) | (tags >= self.num_tags)) & m
        if bool(bad.any()):
            w = bad.nonzero()[0]
            raise InputError("tags of sentence " + str(int(w[1])) + ", position "
                             + str(int(w[0])) + ": tag index " + str(int(tags[w[0], w[1]]))
                             + " is not in 0.." + str(self.num_tags - 1))
        if self.constrained:
            t = torch.where(m, tags, torch.zeros_like(tags))
            ok = torch.ones_like(m)
            ok[0] = self.start_ok[t[0]]
            ok[1:] = self.trans_ok[t[:-1], t[1:]] | ~m[1:]
            last = m.sum(0) - 1
            bs = torch.arange(t.shape[1], device=t.device)
            ok[last, bs] = ok[last, bs] & self.end_ok[t[last, bs]]
            if not bool(ok.all()):
                w = (~ok).nonzero()[0]
                raise InputError("tags of sentence " + str(int(w[1])) + ", position "
                                 + str(int(w[0])) + ": tag " + self.tag_names[int(t[w[0], w[1]])]
                                 + " makes a sequence the scheme forbids")

    def _prepare(self, emissions: torch.Tensor, mask: Optional[torch.Tensor],
                 tags: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        """Emissions (seq, batch, L) in the parameters' dtype (float16/bfloat16 are
        promoted, as pytorch-crf's arithmetic does) and a bool mask (seq, batch)."""
        dt = torch.promote_types(emissions.dtype, self.transitions.dtype)
        em = emissions.to(dt)
        if mask is None:
            m = torch.ones(emissions.shape[:2], dtype=torch.bool, device=emissions.device)
        else:
            m = mask.to(torch.bool)
        if self.batch_first:
            em, m = em.transpose(0, 1), m.transpose(0, 1)
        return em, m

    def _scores(self) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """start, transitions, end; forbidden arcs at NEG when ``tags=`` constrains."""
        if not self.constrained:
            return self.start_transitions, self.transitions, self.end_transitions
        neg = torch.full_like(self.transitions, -1e30)  # semiring.NEG (a literal: TorchScript)
        return (torch.where(self.start_ok, self.start_transitions, neg[0]),
                torch.where(self.trans_ok, self.transitions, neg),
                torch.where(self.end_ok, self.end_transitions, neg[0]))

    # ------------------------------------------------------------ recursions
    def _score(self, em: torch.Tensor, tags: torch.Tensor, m: torch.Tensor,
               start: torch.Tensor, trans: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
        """score(tags) (batch,): start + Σ emissions + Σ transitions + end."""
        e = em.gather(2, tags.unsqueeze(-1)).squeeze(-1)
        zero = torch.zeros_like(e)
        total = start[tags[0]] + torch.where(m, e, zero).sum(0)
        if tags.shape[0] > 1:
            total = total + torch.where(m[1:], trans[tags[:-1], tags[1:]], zero[1:]).sum(0)
        last = m.sum(0) - 1
        return total + end[tags.gather(0, last.unsqueeze(0)).squeeze(0)]

    def _alphas(self, em: torch.Tensor, m: torch.Tensor, start: torch.Tensor,
                trans: torch.Tensor) -> torch.Tensor:
        """Forward log-scores α_t (seq, batch, L); padding carries the last one on."""
        a = start + em[0]
        out = [a]
        for t in range(1, em.shape[0]):
            nxt = torch.logsumexp(a.unsqueeze(2) + trans, 1) + em[t]
            a = torch.where(m[t].unsqueeze(1), nxt, a)
            out.append(a)
        return torch.stack(out, 0)

    def _betas(self, em: torch.Tensor, m: torch.Tensor, trans: torch.Tensor,
               end: torch.Tensor) -> torch.Tensor:
        """Backward log-scores β_t (seq, batch, L), β at a sentence's last token = end."""
        n = em.shape[0]
        b = end.unsqueeze(0).expand(em.shape[1], self.num_tags)
        out = [b]
        for t in range(n - 2, -1, -1):
            nxt = torch.logsumexp(trans + (em[t + 1] + b).unsqueeze(1), 2)
            b = torch.where(m[t + 1].unsqueeze(1), nxt, b)
            out.append(b)
        out.reverse()
        return torch.stack(out, 0)

    def _log_z(self, em: torch.Tensor, m: torch.Tensor, start: torch.Tensor,
               trans: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
        """log Z (batch,)."""
        return torch.logsumexp(self._alphas(em, m, start, trans)[-1] + end, 1)

    def _viterbi(self, em: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """Best paths (seq, batch) of tag indices, 0 on padding (tensor code only: it
        scripts and exports to ONNX)."""
        start, trans, end = self._scores()
        n = em.shape[0]
        d = start + em[0]
        history: List[torch.Tensor] = []
        for t in range(1, n):
            best, bp = (d.unsqueeze(2) + trans).max(1)
            d = torch.where(m[t].unsqueeze(1), best + em[t], d)
            history.append(bp)
        best_last = (d + end).argmax(1)
        last = m.sum(0) - 1
        cur = best_last
        path = [best_last] * n
        zero = torch.zeros_like(best_last)
        for t in range(n - 1, -1, -1):
            if t < n - 1:
                back = history[t].gather(1, cur.unsqueeze(1)).squeeze(1)
                cur = torch.where(last == t, best_last, torch.where(last > t, back, zero))
            else:
                cur = torch.where(last == t, best_last, zero)
            path[t] = cur
        return torch.stack(path, 0)

    @torch.jit.export
    def marginals(self, emissions: torch.Tensor,
                  mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Pr(y_t = l), shaped as the emissions (0 on padding), by forward-backward."""
        self._validate(emissions, None, mask)
        em, m = self._prepare(emissions, mask, None)
        p = self._marginals(em, m)
        return p.transpose(0, 1) if self.batch_first else p

    def _marginals(self, em: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """Pr(y_t = l) (seq, batch, L) of prepared inputs (no checks: ONNX exports it)."""
        start, trans, end = self._scores()
        alpha = self._alphas(em, m, start, trans)
        beta = self._betas(em, m, trans, end)
        logz = torch.logsumexp(alpha[-1] + end, 1)
        p = torch.exp(alpha + beta - logz.view(1, -1, 1))
        return torch.where(m.unsqueeze(2), p, torch.zeros_like(p))

    # ------------------------------------------------------------ chunk extras
    @torch.jit.unused
    def _chunk_args(self, emissions: torch.Tensor, mask: Optional[torch.Tensor]):
        if self._chunk is None:
            raise InputError("this needs the tag names: build the layer as CRF(num_tags, "
                             "tags=[...], scheme=...) (chunks are read from the tags)")
        self._validate(emissions, None, mask)
        em, m = self._prepare(emissions, mask, None)
        dt = em.dtype
        return (em.transpose(0, 1), self.transitions.to(dt), m.transpose(0, 1),
                self.start_transitions.to(dt), self.end_transitions.to(dt))

    @torch.jit.unused
    def _decode_registry(self, emissions: torch.Tensor, mask: Optional[torch.Tensor],
                         decoder: str, beta: float, utility: str) -> List[List[int]]:
        tags = self._chunk_decode(emissions, mask, decoder, beta, utility)
        col = {t: i for i, t in enumerate(self.tag_names)}
        missing = sorted({t for row in tags for t in row if t not in col})
        if missing:
            raise InputError(f"decoder={decoder!r} chose tag(s) {missing} that are not "
                             f"among the columns {self.tag_names}; use decode_tags()")
        return [[col[t] for t in row] for row in tags]

    @torch.jit.unused
    def _chunk_decode(self, emissions, mask, decoder: str, beta: float,
                      utility: str = "conlleval") -> List[List[str]]:
        a = self._chunk_args(emissions, mask)
        return self._chunk.decode(*a, method=decoder, beta=beta, utility=utility)

    @torch.jit.unused
    def decode_tags(self, emissions: torch.Tensor, mask: Optional[torch.Tensor] = None,
                    decoder: str = "map", beta: float = 1.0,
                    utility: str = "conlleval") -> List[List[str]]:
        """Tag names of the decoded sequences (needs ``tags=``); MEU may choose a tag
        of the scheme that the columns lack."""
        return self._chunk_decode(emissions, mask, decoder, beta, utility)

    @torch.jit.unused
    def chunk_confidences(self, emissions: torch.Tensor, mask: Optional[torch.Tensor] = None,
                          decoder: str = "map", beta: float = 1.0,
                          utility: str = "conlleval"
                          ) -> List[List[Tuple[str, int, int, float]]]:
        """The decoded entities ``(type, start, end, Pr(entity ∈ y))`` of each sentence
        (end exclusive; Pr is the chunk marginal, an entity confidence); needs ``tags=``."""
        a = self._chunk_args(emissions, mask)
        return self._chunk.decode_chunks(*a, method=decoder, beta=beta, utility=utility)

    @torch.jit.unused
    def chunk_marginals(self, emissions: torch.Tensor,
                        mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Pr(chunk [s, e) of type k ∈ y) (batch, n, n+1, types) (:meth:`ChunkCRF.
        chunk_marginals`); needs ``tags=``."""
        a = self._chunk_args(emissions, mask)
        return self._chunk.chunk_marginals(*a)

    @torch.jit.unused
    def expected_f_loss(self, emissions: torch.Tensor, gold: Sequence[Sequence[str]],
                        mask: Optional[torch.Tensor] = None, beta: float = 1.0,
                        corpus: bool = False) -> torch.Tensor:
        """1 − E[F_β] averaged over the sentences, or with ``corpus`` 1 − the batch's
        expected corpus F_β (:class:`~fstchunk.torch.module.CRFLayer`'s losses);
        ``gold``: tag-name lists; needs ``tags=``."""
        a = self._chunk_args(emissions, mask)
        if corpus:
            return 1 - self._chunk.expected_corpus_f(*a, gold=gold, beta=beta)
        return (1 - self._chunk.expected_f(*a, gold=gold, beta=beta)).mean()
