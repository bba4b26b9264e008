"""Progress of a long loop: a tqdm bar on a terminal, plain log lines elsewhere.

tqdm redraws its bar in place with carriage returns; written to a file or a pipe, those
frames pile up (megabytes in a training log).  :func:`progress` is the one place that
decides: a tqdm bar when the stream (standard error) is a terminal, else a
:class:`LineLog` — no carriage return, one line each ``every`` steps and one at the end,
with the figures the bar shows:

    DESC: N/TOTAL UNIT, ELAPSEDs, key=value, ...

Both answer ``update(n)``, ``set_postfix(...)``, ``close()`` and ``with``.  Callers set
the step's figures before ``update`` so that a line carries the figures of its step.

Pitfall: ``every=0`` writes a line at ``close`` only (one per epoch when each epoch has
its own reporter, as the segment learner's); the terminal test is :func:`is_terminal`,
which tests patch to force either branch.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from tqdm import tqdm


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is an open terminal (``isatty()``; False for anything else)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except (ValueError, OSError):              # a closed or detached stream
        return False


def _shown(value: Any) -> str:
    return f"{value:.5g}" if isinstance(value, float) else str(value)


class LineLog:
    """A progress reporter for a log: one plain line each ``every`` steps (0: none
    on the way) and one at :meth:`close` if anything changed since the last line."""

    def __init__(self, total: int | None, desc: str, unit: str = "it", initial: int = 0,
                 every: int = 1, stream: TextIO | None = None):
        if every < 0:
            raise ValueError(f"every must be >= 0, got {every}")
        self.total, self.desc, self.unit, self.every = total, desc, unit, every
        self.n = initial
        self.stream = stream
        self.postfix: dict[str, str] = {}
        self.start = time.perf_counter()
        self.lines = 0
        self._last: tuple = (initial, {})
        self._closed = False

    def set_postfix(self, ordered_dict: dict | None = None, refresh: bool = True,
                    **kwargs: Any) -> None:
        """The figures shown from now on (tqdm's signature; ``refresh`` is ignored)."""
        self.postfix = {k: _shown(v) for k, v in {**(ordered_dict or {}), **kwargs}.items()}

    def update(self, n: int = 1) -> None:
        """``n`` more steps done; a line if a multiple of ``every`` was passed."""
        before, self.n = self.n, self.n + n
        if self.every and self.n // self.every > before // self.every:
            self._write()

    def close(self) -> None:
        """The last line, unless the last line written already says it all."""
        if not self._closed and (self.n, self.postfix) != self._last:
            self._write()
        self._closed = True

    def line(self) -> str:
        """What the bar would show now, as one line."""
        count = f"{self.n}/{self.total}" if self.total is not None else f"{self.n}"
        parts = [f"{count} {self.unit}", f"{time.perf_counter() - self.start:.1f}s",
                 *(f"{k}={v}" for k, v in self.postfix.items())]
        return f"{self.desc}: {', '.join(parts)}"

    def _write(self) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        stream.write(self.line() + "\n")
        stream.flush()
        self.lines += 1
        self._last = (self.n, dict(self.postfix))

    def __enter__(self) -> "LineLog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def progress(total: int | None, desc: str, unit: str = "it", initial: int = 0,
             enabled: bool = True, every: int = 1, stream: TextIO | None = None,
             tty: bool | None = None) -> Any:
    """A tqdm bar on a terminal, a :class:`LineLog` (a line each ``every`` steps)
    otherwise, a silent tqdm when not ``enabled``.  ``stream``: standard error (read
    at the call); ``tty``: None to ask :func:`is_terminal` of the stream."""
    stream = stream if stream is not None else sys.stderr
    if not enabled:
        return tqdm(total=total, disable=True)
    if tty if tty is not None else is_terminal(stream):
        return tqdm(total=total, desc=desc, unit=unit, initial=initial, file=stream)
    return LineLog(total, desc, unit, initial, every, stream)
