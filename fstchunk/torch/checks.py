"""Input checks of the torch CRF: every bad input is an
:class:`~fstchunk.core.errors.InputError` naming the problem (tensor, shape, row,
position, sentence), raised before any computation.

Pitfalls: the mask must be left-aligned (True on each row's first n >= 1 tokens,
then False on padding); a right-aligned mask (padding on the left) or one with a
hole is refused saying which it is; scores are checked for
NaN/inf on real tokens only (padding emissions are ignored, and replaced by 0
before any arithmetic so that garbage there cannot poison a gradient); all
tensors must share the emissions' dtype and device (no silent casts).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import torch

from ..core.errors import FstchunkError, InputError
from ..core.scorecheck import TOLERANCE, warn_probabilities
from ..schemes import encodings as enc


@dataclass
class Batch:
    """Checked inputs: emissions with padding zeroed, lengths (B,) long tensor
    and their Python list, start/end filled with zeros when None."""
    emissions: torch.Tensor
    transitions: torch.Tensor
    mask: torch.Tensor
    start: torch.Tensor
    end: torch.Tensor
    lengths: torch.Tensor
    lengths_list: list[int]

    def double(self) -> "Batch":
        """The same batch with float64 scores (autograd casts the gradients back)."""
        return replace(self, emissions=self.emissions.double(),
                       transitions=self.transitions.double(), start=self.start.double(),
                       end=self.end.double())


def _tensor(name: str, x, ndim: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise InputError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != ndim:
        raise InputError(f"{name} must be a {ndim}-D tensor, got shape {tuple(x.shape)}")
    return x


def _finite(name: str, x: torch.Tensor, ok: torch.Tensor | None = None) -> None:
    bad = ~torch.isfinite(x.detach())
    if ok is not None:
        bad = bad & ok
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise InputError(f"{name} has a non-finite score {float(x.detach()[where])} at "
                         f"index {where}")


def _probabilities(em: torch.Tensor, mk: torch.Tensor) -> None:
    """The warning of :mod:`fstchunk.core.scorecheck` when every real token's row sums to 1
    (within its tolerance, or float32's rounding of L terms) with entries in [0, 1]."""
    rows = em.detach()[mk]
    if rows.numel() == 0:
        return
    slack = max(TOLERANCE, 4 * rows.shape[-1] * torch.finfo(rows.dtype).eps)
    if bool((rows.min() >= 0) & (rows.max() <= 1)
            & ((rows.sum(-1) - 1).abs().max() <= slack)):
        warn_probabilities("emissions", "torch.log", stacklevel=4)


def check_batch(L: int, emissions, transitions, mask, start=None, end=None) -> Batch:
    """Check shapes, dtypes, devices, the mask and finiteness (see module doc)."""
    em = _tensor("emissions", emissions, 3)
    if em.dtype not in (torch.float32, torch.float64):
        raise InputError(f"emissions must be a float32 or float64 tensor, got {em.dtype}")
    B, n, Le = em.shape
    if B == 0 or n == 0:
        raise InputError(f"emissions has shape {tuple(em.shape)}: need at least one sentence "
                         "and one token")
    if Le != L:
        raise InputError(f"emissions has {Le} tag columns but there are {L} tags")
    tr = _tensor("transitions", transitions, 2)
    if tuple(tr.shape) != (L, L):
        raise InputError(f"transitions has shape {tuple(tr.shape)}, expected {(L, L)}")
    mk = _tensor("mask", mask, 2)
    if mk.dtype != torch.bool:
        raise InputError(f"mask must be a bool tensor, got {mk.dtype}")
    if tuple(mk.shape) != (B, n):
        raise InputError(f"mask has shape {tuple(mk.shape)}, expected {(B, n)} "
                         "(the emissions' batch and length)")
    zeros = torch.zeros(L, dtype=em.dtype, device=em.device)
    st = zeros if start is None else _tensor("start", start, 1)
    en = zeros if end is None else _tensor("end", end, 1)
    for name, x in (("start", st), ("end", en)):
        if tuple(x.shape) != (L,):
            raise InputError(f"{name} has shape {tuple(x.shape)}, expected {(L,)}")
    for name, x in (("transitions", tr), ("mask", mk), ("start", st), ("end", en)):
        if x.device != em.device:
            raise InputError(f"{name} is on {x.device} but emissions on {em.device}")
        if name != "mask" and x.dtype != em.dtype:
            raise InputError(f"{name} has dtype {x.dtype} but emissions {em.dtype}")
    _check_mask(mk)
    _finite("emissions", em, mk.unsqueeze(-1))
    _probabilities(em, mk)
    for name, x in (("transitions", tr), ("start", st), ("end", en)):
        _finite(name, x)
    lengths = mk.sum(1)
    em = torch.where(mk.unsqueeze(-1), em, torch.zeros((), dtype=em.dtype, device=em.device))
    return Batch(em, tr, mk, st, en, lengths, [int(v) for v in lengths.tolist()])


LEFT_ALIGNED = ("fstchunk.torch expects left-aligned masks: True for the first n tokens, "
                "then False")


def _check_mask(mk: torch.Tensor) -> None:
    """InputError for the first sentence whose mask is not left-aligned (True for its
    first n >= 1 tokens, then False), saying which way it is malformed: no token,
    right-aligned (padding on the left: ``[0, 0, 1, 1, 1]``), or a hole (a False
    between True positions), with the positions."""
    ok = mk[:, 0] & ~(mk[:, 1:] & ~mk[:, :-1]).any(1)         # a non-empty prefix
    if bool(ok.all()):
        return
    b = int((~ok).nonzero()[0, 0])
    row = mk[b].tolist()
    on = [i for i, v in enumerate(row) if v]
    if not on:
        raise InputError(f"mask of sentence {b} has no token (all False; every sentence "
                         f"needs at least one); {LEFT_ALIGNED}")
    first, last = on[0], on[-1]
    holes = [i for i in range(first, last + 1) if not row[i]]
    if not holes and last == len(row) - 1:       # one run of True, at the end
        raise InputError(f"mask of sentence {b} is right-aligned (padding on the left: "
                         f"positions 0..{first - 1} False, {first}..{last} True); "
                         f"{LEFT_ALIGNED}")
    if not holes:                                # one run of True, in the middle
        raise InputError(f"mask of sentence {b} has padding on both sides (positions "
                         f"0..{first - 1} and {last + 1}..{len(row) - 1} False); "
                         f"{LEFT_ALIGNED}")
    lead = (f"starts with padding (positions 0..{first - 1} False) and " if first else "")
    raise InputError(f"mask of sentence {b} {lead}has a hole: position {holes[0]} is "
                     f"False between True positions {first} and {last}; {LEFT_ALIGNED}")


@dataclass
class Gold:
    """Gold chunks as arrays over the batch: ``last[b, u]`` a gold chunk ends at
    token u (inclusive), ``match[b, u, c]`` a gold chunk of tag c's type starts at
    u, ``count[b]`` the number of gold chunks, ``chunks`` the (type index, s, e) per
    sentence (read from ``spans`` = (starts, ends, types) tensors when first asked:
    only the log-space paths need the list)."""
    last: torch.Tensor
    match: torch.Tensor
    count: torch.Tensor
    _chunks: list[list[tuple[int, int, int]]] | None = None
    spans: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    @property
    def chunks(self) -> list[list[tuple[int, int, int]]]:
        if self._chunks is None:
            start, last, kind = self.spans
            chunks: list[list[tuple[int, int, int]]] = [[] for _ in range(start.shape[0])]
            for (b, u), (_, v), t in zip(start.nonzero().tolist(), last.nonzero().tolist(),
                                         kind[start].tolist()):
                chunks[b].append((t, u, v + 1))
            self._chunks = chunks
        return self._chunks


def check_gold(gold, batch: Batch, scheme: str, types: Sequence[str],
               type_index: np.ndarray) -> Gold:
    """Check the gold sequences against the batch and encode their chunks."""
    B, n = batch.mask.shape
    if gold is None:
        raise InputError("gold is required: a list of tag lists, one per sentence")
    if isinstance(gold, (str, bytes)) or not isinstance(gold, Sequence):
        raise InputError("gold must be a list of tag lists, one per sentence")
    if len(gold) != B:
        raise InputError(f"gold has {len(gold)} sentences but the batch has {B}")
    last = np.zeros((B, n), bool)
    match = np.zeros((B, n, len(type_index)), bool)
    count = np.zeros(B)
    chunks = []
    for b, (seq, length) in enumerate(zip(gold, batch.lengths_list)):
        if isinstance(seq, str) or not isinstance(seq, Sequence):
            raise InputError(f"gold sentence {b} must be a list of tags, got {seq!r}")
        if len(seq) != length:
            raise InputError(f"gold sentence {b} has {len(seq)} tags but the mask gives it "
                             f"{length} tokens")
        try:
            found = enc.tags_to_chunks(list(seq), scheme)
        except FstchunkError as e:
            raise InputError(f"gold sentence {b}: invalid {scheme} sequence: {e}") from None
        row = []
        for t, s, e in found:
            if t not in types:
                raise InputError(f"gold sentence {b}: position {s}: chunk type {t!r} is not "
                                 f"among the tags' types {', '.join(types) or '(none)'}")
            k = types.index(t)
            last[b, e - 1] = True
            match[b, s] = type_index == k
            row.append((k, s, e))
        count[b] = len(row)
        chunks.append(row)
    dev, dt = batch.emissions.device, batch.emissions.dtype
    return Gold(torch.as_tensor(last, device=dev), torch.as_tensor(match, device=dev),
                torch.as_tensor(count, dtype=dt, device=dev), chunks)


def gold_index(gold, bt: Batch, tags: Sequence[str], scheme: str, start_ok: torch.Tensor,
               trans_ok: torch.Tensor, end_ok: torch.Tensor) -> torch.Tensor:
    """(B, n) column indices of the gold (0 on padding), checked: sizes, tags, and
    the scheme's start, transition and end constraints (``start_ok``, ``trans_ok``,
    ``end_ok`` on the emissions' device; vectorised).  ``gold``: tag lists, or a (B, n)
    integer tensor of column indices read where the mask is True."""
    B, n = bt.mask.shape
    dev = bt.emissions.device
    if isinstance(gold, torch.Tensor):
        if gold.shape != (B, n) or gold.dtype in (torch.bool,) or gold.is_floating_point():
            raise InputError(f"gold as a tensor must be (B, n) = {(B, n)} integer column "
                             f"indices, got {tuple(gold.shape)} {gold.dtype}")
        idx = torch.where(bt.mask, gold.to(dev).long(), torch.zeros((), dtype=torch.long,
                                                                    device=dev))
        bad = (idx < 0) | (idx >= len(tags))
        if bool(bad.any()):
            b, i = (int(v) for v in bad.nonzero()[0])
            raise InputError(f"gold sentence {b}: position {i}: column index "
                             f"{int(idx[b, i])} is not in 0..{len(tags) - 1}")
    else:
        if gold is None or isinstance(gold, (str, bytes)) or not isinstance(gold, Sequence):
            raise InputError("gold must be a list of tag lists or a (B, n) index tensor")
        if len(gold) != B:
            raise InputError(f"gold has {len(gold)} sentences but the batch has {B}")
        col = {t: i for i, t in enumerate(tags)}
        rows = torch.zeros((B, n), dtype=torch.long)
        for b, (seq, length) in enumerate(zip(gold, bt.lengths_list)):
            if isinstance(seq, str) or not isinstance(seq, Sequence) or len(seq) != length:
                raise InputError(f"gold sentence {b} must be a list of {length} tags "
                                 f"(the mask's length), got {seq!r:.80}")
            try:
                rows[b, :length] = torch.tensor([col[t] for t in seq], dtype=torch.long)
            except KeyError as e:
                raise InputError(f"gold sentence {b}: tag {e.args[0]!r} is not among "
                                 f"the tags {list(tags)}") from None
        idx = rows.to(dev)
    last = idx.gather(1, (bt.lengths - 1).unsqueeze(1)).squeeze(1)
    ok = torch.ones((B, n), dtype=torch.bool, device=dev)
    ok[:, 0] = start_ok[idx[:, 0]]
    ok[:, 1:] = trans_ok[idx[:, :-1], idx[:, 1:]] | ~bt.mask[:, 1:]
    ok[torch.arange(B, device=dev), bt.lengths - 1] &= end_ok[last]
    if not bool(ok.all()):
        b, i = (int(v) for v in (~ok).nonzero()[0])
        raise InputError(f"gold sentence {b}: position {i}: tag {tags[int(idx[b, i])]!r} "
                         f"makes an invalid {scheme} sequence")
    return idx


def encode_gold(idx: torch.Tensor, batch: Batch, tables: dict) -> Gold:
    """The :class:`Gold` of checked column indices ``idx`` (B, n), vectorised: a chunk
    opens at u where the arc into y_u opens one (``open0`` at u = 0, ``open`` after),
    ends at u where y_u is a chunk tag and the next arc does not continue it (``close``)
    or u is the last token; its type is y_u's.  Equal to :func:`check_gold` (tested),
    which reads every sequence in Python and is kept to explain a refusal."""
    B, n = idx.shape
    mask = batch.mask
    start = torch.zeros_like(mask)
    start[:, 0] = tables["open0"][idx[:, 0]]
    start[:, 1:] = tables["open"][idx[:, :-1], idx[:, 1:]] & mask[:, 1:]
    last = torch.zeros_like(mask)
    last[:, :-1] = tables["close"][idx[:, :-1], idx[:, 1:]] & mask[:, 1:]
    final = torch.arange(n, device=mask.device).view(1, n) == (batch.lengths - 1).view(B, 1)
    last = torch.where(final, tables["inchunk"][idx], last & mask)
    kind = tables["type_index"][idx]                                      # (B, n)
    match = start.unsqueeze(-1) & (tables["type_index"].view(1, 1, -1) == kind.unsqueeze(-1))
    return Gold(last, match, start.sum(1).to(batch.emissions.dtype), spans=(start, last, kind))


def check_allowed(allowed, bt: Batch, start_ok: torch.Tensor, trans_ok: torch.Tensor,
                  end_ok: torch.Tensor, scheme: str) -> torch.Tensor:
    """A partial-label mask ``allowed`` (B, n, L) bool — token t of sentence b may take
    tag l — checked: its shape and device, and that each sentence keeps some valid
    sequence of the scheme (InputError naming the sentence and the position where the
    valid prefixes run out).  Padding positions are not read.  Returns it on the
    emissions' device."""
    a = _tensor("allowed", allowed, 3)
    if a.dtype != torch.bool:
        raise InputError(f"allowed must be a bool tensor, got {a.dtype}")
    if tuple(a.shape) != tuple(bt.emissions.shape):
        raise InputError(f"allowed has shape {tuple(a.shape)}, expected "
                         f"{tuple(bt.emissions.shape)} (the emissions')")
    if a.device != bt.emissions.device:
        raise InputError(f"allowed is on {a.device} but emissions on {bt.emissions.device}")
    step = trans_ok.to(torch.float32)
    reach = start_ok & a[:, 0]
    dead = torch.zeros(bt.mask.shape, dtype=torch.bool, device=a.device)
    dead[:, 0] = ~reach.any(-1)
    ends = torch.zeros(a.shape[0], dtype=torch.bool, device=a.device)
    for t in range(a.shape[1]):
        if t:
            nxt = ((reach.to(torch.float32) @ step) > 0) & a[:, t]
            reach = torch.where(bt.mask[:, t, None], nxt, reach)
            dead[:, t] = bt.mask[:, t] & ~reach.any(-1)
        last = bt.lengths - 1 == t
        ends |= last & (reach & end_ok).any(-1)
    bad = dead.any(1) | ~ends
    if bool(bad.any()):
        b = int(bad.nonzero()[0, 0])
        where = (f"position {int(dead[b].nonzero()[0, 0])}: no valid {scheme} sequence "
                 f"reaches this token" if bool(dead[b].any()) else
                 f"position {bt.lengths_list[b] - 1}: no valid {scheme} sequence ends here")
        raise InputError(f"allowed: sentence {b}: {where} through the allowed tags")
    return a
