"""Differentiable chunk-level quantities of a linear-chain CRF (issue 21).

A neural tagger gives emission scores (B, n, L), a transition matrix (L, L) and
optional start/end scores; over the scheme's **valid** tag sequences y

    Pr(y) = exp(score(y)) / Z,   score(y) = start[y_1] + Σ_t emissions[t, y_t]
            + Σ_t transitions[y_{t-1}, y_t] + end[y_n]

(the linear-chain CRF of Lafferty, McCallum & Pereira 2001, restricted to the
scheme's 2-local language: :class:`fstchunk.schemes.tagspace.TagSpace` masks).
:class:`ChunkCRF` computes, batched and differentiable by autograd:

* ``log_partition``: log Z by the forward recursion;
* ``marginals``: Pr(y_t = l) by forward-backward;
* ``chunk_marginals``: Pr((t, s, e) ∈ chunks(y)) = Σ over paths of α at s-1,
  an opening arc into s (``opens``, or the sentence start), continuation arcs
  (``cont``) through e-1, then a closing arc into e (``closes``) and β at e, or
  the sentence end (e = n) — one small forward over the chunk tags per start,
  all starts at once (O(B·n²·L²) time), summed over the tags of each type;
* ``expected_f`` / ``expected_corpus_f``: see :mod:`fstchunk.torch.expected`;
* ``decode``: constrained Viterbi (MAP) or exact MEU via the numpy engine;
  ``decode_chunks``: the decoded chunks with their marginals (entity confidences).

The recursion runs in the **scaled log gauge**: α̂_t = α_t − Σ_{u≤t} c_u with
c_t the log-sum-exp of the unnormalised α at t, and β̂_t = β_t − Σ_{u>t} c_u −
c_end, so that α̂_t + β̂_t is the log marginal and log Z = Σ_t c_t + c_end.  Every
exponentiated quantity is a log probability (<= 0), so no α + β − log Z of
size n·(score scale) is formed and scores × 1e4 stay exact to rounding.

Pitfalls: padding (mask False) is handled by carrying the recursions through
with zeroed emissions and selecting each sentence's own end with ``torch.where``
(never by multiplying by the mask, which would turn an inf into a NaN); the
forbidden arcs are NEG = -1e30 (:mod:`fstchunk.torch.semiring`), so scores must
stay far below 1e30; chunk marginals are laid out (B, n, n+1, T) with the types
in order of first appearance in ``tags`` (:attr:`ChunkCRF.types`) — the numpy
:meth:`fstchunk.structures.lattice.Lattice.chunk_marginals` is (T, n, n+1) per sentence
with the sorted ``TagSpace.types``.  Only MEU decoding leaves torch (it needs no
gradient); everything differentiable is torch ops on the emissions' device and
dtype.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..schemes import encodings as enc
from ..decoding.decoders import MAP, Decoder, decoder as get_decoder
from ..core.errors import FstchunkError, InputError
from ..structures.lattice import Lattice
from ..schemes.tagspace import TagSpace
from . import chain as _chain
from . import engine_loss as _engine_loss
from . import expected as _expected
from . import tilted as _tilted
from ..core.fbeta import to_beta_sq
from .checks import (Batch, Gold, check_allowed, check_batch, check_gold, encode_gold,
                     gold_index)
from .semiring import NEG, logmatmul


class ChunkCRF:
    """Chunk-level CRF quantities over the valid sequences of ``scheme`` for the
    columns ``tags`` (see module doc).  Every method takes
    ``(emissions (B, n, L), transitions (L, L), mask (B, n) bool, start=None,
    end=None)`` first."""

    def __init__(self, tags: Sequence[str], scheme: str = "IOB2"):
        try:
            self.space = TagSpace.of(tags, enc.canonical_scheme(scheme))
        except FstchunkError as e:
            raise InputError(f"ChunkCRF(scheme={scheme!r}): {e}") from None
        sp = self.space
        self.tags, self.scheme = sp.tags, sp.scheme
        L = len(sp.tags)
        # chunk types in order of first appearance in ``tags`` (TagSpace sorts them)
        first = [enc.split_tag(t)[1] for t in sp.tags if t != enc.OUTSIDE]
        self.types: tuple[str, ...] = tuple(dict.fromkeys(first)) or sp.types
        self.type_index = np.array([-1 if i < 0 else self.types.index(sp.types[i])
                                    for i in sp.type_index])
        self._np = {"start": sp.start_ok, "trans": sp.trans_ok, "end": sp.end_ok,
                    "cont": sp.trans_ok & sp.cont[:L], "open": sp.trans_ok & sp.opens[:L],
                    "open0": sp.start_ok & sp.opens[L], "close": sp.trans_ok & sp.closes[:L],
                    "non": sp.trans_ok & ~sp.cont[:L], "inchunk": self.type_index >= 0,
                    "type": self.type_index[None, :] == np.arange(len(self.types))[:, None]}
        self._np = {k: np.array(v, dtype=bool) for k, v in self._np.items()}   # writable
        self._cache: dict = {}

    def __repr__(self) -> str:
        return f"ChunkCRF({list(self.tags)!r}, scheme={self.scheme!r})"

    def free_workspace(self) -> None:
        """Drop the buffers the expected-F DP keeps for its next call
        (:mod:`fstchunk.torch.workspace`; they are up to a few hundred MB for long,
        wide batches); graphs that still need theirs keep them."""
        for key in [k for k in self._cache if k[0] == "workspace"]:
            del self._cache[key]

    # ------------------------------------------------------------------ helpers
    def _mask(self, name: str, like: torch.Tensor) -> torch.Tensor:
        key = (name, like.device)
        if key not in self._cache:
            self._cache[key] = torch.as_tensor(self._np[name], device=like.device)
        return self._cache[key]

    def _masked(self, name: str, x: torch.Tensor) -> torch.Tensor:
        """x where the table ``name`` allows it, NEG elsewhere."""
        return torch.where(self._mask(name, x), x, torch.full_like(x, NEG))

    def _check(self, emissions, transitions, mask, start, end) -> Batch:
        return check_batch(len(self.tags), emissions, transitions, mask, start, end)

    def _forward(self, bt: Batch):
        """Scaled forward: α̂ (B, n, L), c (B, n), c_end (B,), log Z (B,)."""
        out = _chain.forward(bt.emissions, self._masked("trans", bt.transitions),
                             self._masked("start", bt.start), self._masked("end", bt.end),
                             bt.lengths, bt.mask)
        self._check_paths(out[3], bt)
        return out

    def _check_paths(self, score: torch.Tensor, bt: Batch) -> None:
        """InputError for the first sentence whose total (log) score is NEG-ish.  Tags
        that express their scheme have a valid sequence of every length (TagSpace), so
        only scores near NEG, which forbids arcs, can get there."""
        none = score.detach() < NEG / 2
        if bool(none.any()):
            b = int(none.nonzero()[0, 0])
            raise InputError(f"sentence {b}: every valid {self.scheme} sequence of length "
                             f"{bt.lengths_list[b]} scores below {NEG / 2:g}; scores must "
                             f"stay far above {NEG:g}, the score of a forbidden arc")

    def _backward(self, bt: Batch, c: torch.Tensor, c_end: torch.Tensor) -> torch.Tensor:
        """Scaled backward β̂ (B, n, L) in the forward's gauge (:mod:`.chain`)."""
        return _chain.backward(bt.emissions, self._masked("trans", bt.transitions),
                               self._masked("end", bt.end), bt.lengths, c, c_end)

    # ------------------------------------------------------------------ public
    def log_partition(self, emissions, transitions, mask, start=None, end=None,
                      allowed=None) -> torch.Tensor:
        """log Z (B,): log Σ over valid y of exp(score(y)), by the scaled forward; its
        gradient (the token and pair marginals) by one backward recursion, not by
        autograd through the n steps (:func:`fstchunk.torch.chain.log_partition`;
        differentiable once).  ``allowed`` (B, n, L) bool: log Z_A over the valid y
        with every y_t allowed (partial labels, :mod:`fstchunk.io.annotation`): the
        forbidden emissions set to NEG, so log Z − log Z_A is the partial-label NLL."""
        bt = self._check(emissions, transitions, mask, start, end)
        em = bt.emissions
        if allowed is not None:
            ok = check_allowed(allowed, bt, self._mask("start", em), self._mask("trans", em),
                               self._mask("end", em), self.scheme)
            em = torch.where(ok | ~bt.mask.unsqueeze(-1), em, torch.full_like(em, NEG))
        logz = _chain.log_partition(em, self._masked("trans", bt.transitions),
                                    self._masked("start", bt.start),
                                    self._masked("end", bt.end), bt.lengths, bt.mask)
        self._check_paths(logz, bt)
        return logz

    def score(self, emissions, transitions, mask, start=None, end=None,
              gold: Sequence[Sequence[str]] | torch.Tensor | None = None) -> torch.Tensor:
        """score(gold) (B,): start[y_1] + Σ emissions[t, y_t] + Σ transitions[y_{t−1}, y_t]
        + end[y_n] of each sentence's gold, so that log_partition − score is the negated
        log-likelihood.  ``gold``: tag lists, or a (B, n) integer tensor of column
        indices (read where ``mask`` is True: the fast form for a training loop); a
        sequence the scheme forbids is refused, naming sentence and position."""
        bt = self._check(emissions, transitions, mask, start, end)
        idx = self._gold_index(gold, bt)
        em = bt.emissions.gather(2, idx.unsqueeze(-1)).squeeze(-1)
        zero = torch.zeros_like(em)
        total = torch.where(bt.mask, em, zero).sum(1)
        tr = bt.transitions[idx[:, :-1], idx[:, 1:]]
        total = total + torch.where(bt.mask[:, 1:], tr, zero[:, 1:]).sum(1)
        last = idx.gather(1, (bt.lengths - 1).clamp(min=0).unsqueeze(1)).squeeze(1)
        return total + bt.start[idx[:, 0]] + bt.end[last]

    def _gold_index(self, gold, bt: Batch) -> torch.Tensor:
        """(B, n) column indices of the gold (:func:`~fstchunk.torch.checks.gold_index`)."""
        return gold_index(gold, bt, self.tags, self.scheme, self._mask("start", bt.start),
                          self._mask("trans", bt.transitions), self._mask("end", bt.end))

    def _gold(self, gold, bt: Batch) -> Gold:
        """The gold's chunks (:func:`~fstchunk.torch.checks.encode_gold`, vectorised);
        a tag list that is not a valid sequence over the columns goes to
        :func:`~fstchunk.torch.checks.check_gold`, which explains the refusal or reads a
        gold the columns cannot express (a tag the model lacks, such as O, in a valid
        sequence of the scheme)."""
        try:
            idx = self._gold_index(gold, bt)
        except InputError:
            if isinstance(gold, torch.Tensor):
                raise
            return check_gold(gold, bt, self.scheme, self.types, self.type_index)
        key = ("gold tables", bt.mask.device)
        if key not in self._cache:
            t = {k: self._mask(k, bt.mask) for k in ("open0", "open", "close", "inchunk")}
            t["type_index"] = torch.as_tensor(self.type_index, device=bt.mask.device)
            self._cache[key] = t
        return encode_gold(idx, bt, self._cache[key])

    def marginals(self, emissions, transitions, mask, start=None, end=None) -> torch.Tensor:
        """Pr(y_t = l) (B, n, L); 0 on padding."""
        bt = self._check(emissions, transitions, mask, start, end)
        alpha, c, c_end, _ = self._forward(bt)
        beta = self._backward(bt, c, c_end)
        p = torch.exp(alpha + beta)
        return torch.where(bt.mask.unsqueeze(-1), p, torch.zeros_like(p))

    def chunk_marginals(self, emissions, transitions, mask, start=None,
                        end=None) -> torch.Tensor:
        """Pr(chunk [s, e) of type t ∈ chunks(y)) (B, n, n+1, T), e exclusive,
        types in ``self.types`` order (first appearance in ``tags``; the numpy
        engine's (T, n, n+1) uses the sorted ``TagSpace.types``); 0 where
        impossible and on padding."""
        bt = self._check(emissions, transitions, mask, start, end)
        return self._chunk_marginals(bt)

    def _chunk_arcs(self, bt: Batch) -> tuple:
        """What every chunk-level sum starts from: α̂, c, β̂ of one forward-backward, the
        masked continuation, opening and (transposed) closing arcs, the start's opening
        scores and the type bias (T, L): 0 on the tags of type t, NEG elsewhere."""
        alpha, c, c_end, _ = self._forward(bt)
        beta = self._backward(bt, c, c_end)
        em, tr = bt.emissions, bt.transitions
        tbias = torch.where(self._mask("type", em), torch.zeros((), dtype=em.dtype,
                            device=em.device), torch.full((), NEG, dtype=em.dtype,
                                                          device=em.device))
        return (alpha, c, beta, self._masked("cont", tr), self._masked("open", tr),
                self._masked("close", tr).T, self._masked("open0", bt.start), tbias)

    def _chunk_marginals(self, bt: Batch) -> torch.Tensor:
        alpha, c, beta, Kcont, Kopen, KcloseT, open0, tbias = self._chunk_arcs(bt)
        em = bt.emissions
        B, n, L = em.shape
        zero = torch.zeros((B, n, len(self.types)), dtype=em.dtype, device=em.device)
        out = [zero]                                    # e = 0: no chunk ends there
        G = None
        for u in range(n):
            # chunks opening at u: from α̂_{u-1} through an opening arc (or the start)
            if u == 0:
                op = open0 + em[:, 0] - c[:, 0, None]
            else:
                op = logmatmul(alpha[:, u - 1], Kopen) + em[:, u] - c[:, u, None]
            if G is None:
                G = op.unsqueeze(1)
            else:                                       # open chunks continue into u
                G = logmatmul(G, Kcont) + (em[:, u] - c[:, u, None]).unsqueeze(1)
                G = torch.cat([G, op.unsqueeze(1)], 1)
            # ... and close after u: the end of the sentence, or a closing arc into u+1
            at_end = (bt.lengths - 1 == u).unsqueeze(-1)
            if u < n - 1:
                rec = logmatmul(beta[:, u + 1] + em[:, u + 1], KcloseT) - c[:, u + 1, None]
                cl = torch.where(at_end, beta[:, u], rec)
            else:
                cl = beta[:, u]
            logp = logmatmul(G + cl.unsqueeze(1), tbias.T)              # (B, u+1, T)
            p = torch.nn.functional.pad(torch.exp(logp), (0, 0, 0, n - u - 1))
            keep = (u < bt.lengths).view(B, 1, 1)
            out.append(torch.where(keep, p, zero))
        return torch.stack(out, 2)

    def expected_f(self, emissions, transitions, mask, start=None, end=None,
                   gold: Sequence[Sequence[str]] | None = None,
                   beta: float = 1.0) -> torch.Tensor:
        """E_y[F_β(y | gold)] (B,), standard β (:mod:`fstchunk.core.fbeta`): y ~ the CRF, gold
        fixed (the training direction), by the DP of :mod:`fstchunk.torch.expected`:
        tilted nodes in real space (relative error ≤ 1e-11, O(n·K) per sentence), the
        exact count axis or the log-space DP where those would lose precision; in
        float64 whatever the input dtype (float32 probabilities underflow at e^-87),
        cast back."""
        bt = self._check(emissions, transitions, mask, start, end)
        beta_sq = to_beta_sq(beta)
        b64 = bt.double()
        return _expected.expected_f(self, b64, self._gold(gold, b64), beta_sq).to(
            bt.emissions.dtype)

    def expected_utility(self, emissions, transitions, mask, start=None, end=None,
                         gold: Sequence[Sequence[str]] | None = None, utility: str = "exact",
                         beta: float = 1.0) -> torch.Tensor:
        """E_y[u(y | gold)] (B,) for ``utility`` ``conlleval``, ``exact``, ``macro``,
        ``partial``, ``type`` or ``weighted:T=w,...`` (:mod:`fstchunk.decoding.utilities`),
        differentiable, from the numpy engine on the CPU (:mod:`fstchunk.torch.engine_loss`)."""
        bt = self._check(emissions, transitions, mask, start, end)
        self._gold(gold, bt.double())                   # checked as every loss checks it
        rows = gold.tolist() if isinstance(gold, torch.Tensor) else gold
        chunks = [enc.tags_to_chunks([t if isinstance(t, str) else self.tags[t]
                                      for t in row[:length]], self.scheme)
                  for row, length in zip(rows, bt.lengths_list)]
        return _engine_loss.expected_utility(self.tags, self.scheme, bt, chunks, utility,
                                             to_beta_sq(beta))

    def expected_corpus_f(self, emissions, transitions, mask, start=None, end=None,
                          gold: Sequence[Sequence[str]] | None = None,
                          beta: float = 1.0) -> torch.Tensor:
        """(1+β²)·Σ E[tp_i] / (Σ E[m(y_i)] + β²·Σ m(g_i)), a scalar (0/0 := 1; standard
        β), exact: Σ E[tp] and Σ E[m] by one real-space forward in the expectation semiring
        (:func:`fstchunk.torch.tilted.corpus_counts_real`), or, where a state would
        underflow there, as sums of gold-chunk and opening-arc marginals from one
        log-space forward-backward (:func:`fstchunk.torch.expected.corpus_counts`); in
        float64 whatever the input dtype (a float32 Σ E[m] of e^-100 would read as 0 and
        turn F = 0 into 0/0 := 1), cast back."""
        bt = self._check(emissions, transitions, mask, start, end)
        beta_sq = to_beta_sq(beta)
        b64 = bt.double()
        g = self._gold(gold, b64)
        tp, m = _tilted.corpus_counts_real(self, b64, g) or _expected.corpus_counts(self, b64, g)
        den = m + beta_sq * g.count.sum()
        one = torch.ones((), dtype=m.dtype, device=m.device)
        f = torch.where(den > 0, (beta_sq + 1) * tp / torch.where(den > 0, den, one), one)
        return f.to(bt.emissions.dtype)

    # ------------------------------------------------------------------ decoding
    def decode(self, emissions, transitions, mask, start=None, end=None,
               method: "str | Decoder" = "map", beta: float = 1.0,
               utility: str = "conlleval") -> list[list[str]]:
        """Tag lists, one per sentence (its own length).

        ``method``: a decoder of :data:`fstchunk.decoding.decoders.REGISTRY` (a name or a
        :class:`~fstchunk.decoding.decoders.Decoder`).  ``"map"``: the most probable valid
        sequence, by constrained Viterbi in torch.  Any other (``"meu"``: the chunking
        of maximal expected F_β, standard β, exact) runs on the project's batched
        numpy engine over each sentence's detached float64 scores
        (:meth:`fstchunk.structures.lattice.Lattice.from_scores`) — decoding needs no gradient.
        MEU may use a tag of the scheme that ``tags`` lacks (see
        :func:`~fstchunk.decoding.decode.decode_meu`); ``utility``: what MEU maximises,
        conlleval's F or ``"exact"`` (:data:`fstchunk.decoding.decoders.UTILITIES`)."""
        dec = get_decoder(method, beta=beta, utility=utility)
        bt = self._check(emissions, transitions, mask, start, end)
        if not isinstance(dec, MAP):
            return self._decode_numpy(bt, dec)
        with torch.no_grad():
            return self._viterbi(bt)

    def decode_chunks(self, emissions, transitions, mask, start=None, end=None,
                      method: str = "map", beta: float = 1.0, utility: str = "conlleval"
                      ) -> list[list[tuple[str, int, int, float]]]:
        """The chunks of :meth:`decode`'s tags, one list per sentence, each chunk
        ``(type, start, end, Pr)``: end exclusive, Pr the model's probability that the
        chunk is in y (its chunk marginal: an entity confidence), no gradient."""
        tags = self.decode(emissions, transitions, mask, start, end, method=method, beta=beta,
                           utility=utility)
        bt = self._check(emissions, transitions, mask, start, end)
        found = [enc.tags_to_chunks(t, self.scheme) for t in tags]
        idx = [(b, s, e, self.types.index(t)) for b, row in enumerate(found) for t, s, e in row]
        if not idx:
            return [[] for _ in found]
        with torch.no_grad():
            p = _expected.span_probs(bt, self._chunk_arcs(bt), idx).tolist()
        out, j = [], 0
        for row in found:
            out.append([(t, s, e, p[j + i]) for i, (t, s, e) in enumerate(row)])
            j += len(row)
        return out

    def _viterbi(self, bt: Batch) -> list[list[str]]:
        em, n = bt.emissions, bt.emissions.shape[1]
        Kt = self._masked("trans", bt.transitions)
        d = self._masked("start", bt.start) + em[:, 0]
        back = []
        for u in range(1, n):
            best, bp = (d.unsqueeze(-1) + Kt).max(1)
            d = torch.where((u < bt.lengths).unsqueeze(-1), best + em[:, u], d)
            back.append(bp)
        score, last = (d + self._masked("end", bt.end)).max(-1)
        self._check_paths(score, bt)
        bps = torch.stack(back, 1).tolist() if back else [[] for _ in bt.lengths_list]
        out = []
        for b, length in enumerate(bt.lengths_list):
            path = [int(last[b])]
            for u in range(length - 1, 0, -1):
                path.append(bps[b][u - 1][path[-1]])
            out.append([self.tags[i] for i in reversed(path)])
        return out

    def _decode_numpy(self, bt: Batch, dec: Decoder) -> list[list[str]]:
        arr = [x.detach().to("cpu", torch.float64).numpy()
               for x in (bt.emissions, bt.transitions, bt.start, bt.end)]
        lats = [Lattice.from_scores(self.tags, arr[0][b, :length], arr[1], arr[2], arr[3],
                                    scheme=self.scheme, warn=False)     # checked: warned
                for b, length in enumerate(bt.lengths_list)]
        return [list(t) for t in dec.tags(lats)]
