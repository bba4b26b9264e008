"""A workspace of float64 buffers reused across calls of the expected-F DP (issue 21).

:class:`fstchunk.torch.recursion.Run` keeps its states n tokens deep for the
backward (n·W·R·B doubles: 19 MB at n = 200, W = 23 columns, R = 16 rows per sentence,
B = 32) and needs rings of state-sized scratch for its backward.  On CPU, memory fresh
from the system costs a page fault per 4 KiB on first touch: scratch allocated per
token made the DP's elementwise steps several times slower, and a temporary of a few
hundred kB per call still costs milliseconds on the benchmark machine
(benchmarks/RESULTS.md, the torch section's ablation: the workspace bypassed).  So
buffers are taken from and given back to a small pool on the
:class:`~fstchunk.torch.crf.ChunkCRF`:

* :func:`take` returns a free buffer that is large enough, or a new one;
* :func:`lend` records that a buffer holds the saved states of a graph node: it
  comes back to the pool once that node is gone or a backward without
  ``retain_graph`` freed its saved tensors (a retained graph keeps it, so a second
  backward reads intact states);
* :func:`give` returns a buffer; the :data:`POOL` largest free ones are kept;
* :func:`hooked`: saved-tensor hooks are active (``torch.utils.checkpoint`` without
  reentrance, ``save_on_cpu``, a user's ``saved_tensors_hooks``): the states are then
  not lent from the pool (the hooks may keep them beyond the graph node's life, and
  reading a hooked node's saved tensors would rerun a checkpointed forward).

Pitfalls: a buffer must never be given back while a graph can still read it (that
would be a silent wrong gradient: tested with interleaved graphs and retained
backwards, and with gradient checkpointing); the pool holds memory until the CRF is dropped or
:meth:`~fstchunk.torch.crf.ChunkCRF.free_workspace` releases it; on CUDA the
caching allocator would do the same, and the pool is harmless there.  A lock guards the pool: autograd runs CUDA backwards on its own
thread.
"""

from __future__ import annotations

import threading
import weakref

import torch

#: free buffers kept per CRF and device
POOL = 4
_LOCK = threading.RLock()       # autograd may run a backward on another thread (CUDA)


def _pool(crf, device) -> dict:
    return crf._cache.setdefault(("workspace", str(device)), {"free": [], "lent": []})


def take(crf, numel: int, device) -> torch.Tensor:
    """A float64 buffer of at least ``numel`` from the CRF's pool (the smallest free
    one that fits, else a new one), after taking back the lent buffers whose graph
    node is gone or whose saved tensors a backward freed (module doc)."""
    with _LOCK:
        pool = _pool(crf, device)
        lent = []
        for buf, ref in pool["lent"]:
            ctx = ref()
            try:
                if ctx is not None:
                    ctx.saved_tensors
                    lent.append((buf, ref))
                    continue
            except RuntimeError:      # freed by a backward without retain_graph
                pass
            give(crf, buf)
        pool["lent"] = lent
        free = pool["free"]
        for i, buf in enumerate(free):
            if buf.numel() >= numel:
                return free.pop(i)[:numel]
    return torch.empty(numel, dtype=torch.float64, device=device)


def lend(crf, buf: torch.Tensor, ctx) -> None:
    """Record that ``buf`` holds the saved states of the graph node ``ctx``."""
    with _LOCK:
        _pool(crf, buf.device)["lent"].append((buf, weakref.ref(ctx)))


def give(crf, buf: torch.Tensor) -> None:
    """Return a buffer of :func:`take` (the largest :data:`POOL` free ones are kept)."""
    with _LOCK:
        free = _pool(crf, buf.device)["free"]
        free.append(buf if buf._base is None else buf._base)
        free.sort(key=lambda t: t.numel())      # take finds the smallest that fits
        del free[:-POOL]


def hooked() -> bool:
    """Whether saved-tensor default hooks are active (module doc); True where this
    torch cannot tell, so that the states are never pooled blindly."""
    top = getattr(torch._C._autograd, "_top_saved_tensors_default_hooks", None)
    try:
        return top is None or top(False) is not None
    except (TypeError, RuntimeError):
        return True
