"""Every file fstchunk reads is opened here (:func:`open_binary`).

A path that is not a regular file — a pipe or FIFO (``<(cat dev.txt)``, ``mkfifo``),
``/dev/stdin``, a terminal — can be read only once, yet a command reads an input more
than once (a sniff of its first lines, its layout checked, then the parse).  Inside
:func:`held` (every ``fstchunk`` command runs in one) what is read of such a path is
kept in memory, up to :data:`HOLD_BYTES`, and every opening is served from there, the
one at the front reading on from the pipe; so a pipe gives exactly what the file
would give.  Past :data:`HOLD_BYTES` the reader at the front streams on without
keeping what it reads (``decode`` of an endless stream holds a bounded amount), and
an opening that would need those bytes again is refused, naming the input (give a
file).  With ``stdin=True`` (the command line) the path ``-`` is standard input,
held the same way and named ``<stdin>`` in messages (:func:`name`).  Regular files
are never copied: they are opened anew each time.

Outside :func:`held` a path is opened as it is: a library caller's FIFO is read as
the call reads it, and nothing is kept between calls.

Pitfall: what is held stays in memory until the outermost :func:`held` ends (a
command's whole run).
"""

from __future__ import annotations

import io
import os
import stat
import sys
import threading
from contextlib import contextmanager
from typing import BinaryIO, Iterator

#: the command line's name for standard input
STDIN = "-"
#: how messages name it
STDIN_NAME = "<stdin>"

#: bytes of a pipe kept for a second reading; beyond them it is streamed once
HOLD_BYTES = 256 << 20

_lock = threading.RLock()
_state = {"depth": 0, "stdin": False}
_held: dict[object, "_Held"] = {}


class _Held:
    """A pipe read on demand and shared by its openings: ``kept``, its first bytes (at
    most :data:`HOLD_BYTES`), for any opening; beyond them ``tail``, the bytes from
    the slowest open reader on (a tee: decode's parser and its echo of the input read
    the same stream a block apart), dropped once every open reader is past them."""

    def __init__(self, raw: BinaryIO, name: str):
        self.raw, self.name = raw, name
        self.kept = bytearray()
        self.tail = bytearray()
        self.tail_start: int | None = None   # stream offset of tail[0] (None: no tail yet)
        self.done = False
        self.readers: set = set()

    def frontier(self) -> int:
        return len(self.kept) if self.tail_start is None else self.tail_start + len(self.tail)

    def read_at(self, pos: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``pos`` (b"" at the end); OSError naming the input
        for bytes no longer held."""
        with _lock:
            if pos < len(self.kept):
                return bytes(self.kept[pos:pos + size])
            end = self.frontier()
            if self.tail_start is not None and self.tail_start <= pos < end:
                return bytes(self.tail[pos - self.tail_start:pos - self.tail_start + size])
            if pos != end:
                raise OSError(f"{self.name}: a pipe or standard input larger than "
                              f"{_size(HOLD_BYTES)} is read more than once here; give a "
                              f"file instead")
            if self.done:
                return b""
            chunk = self.raw.read(max(size, 1 << 16))
            if not chunk:
                self.done = True
                return b""
            if self.tail_start is None and len(self.kept) + len(chunk) <= HOLD_BYTES:
                self.kept += chunk
            else:
                if self.tail_start is None:
                    self.tail_start = len(self.kept)
                self.tail += chunk
                self._trim(pos)
            return chunk[:size]

    def _trim(self, pos: int) -> None:
        """Drop the tail's bytes that every open reader has passed."""
        low = min([r.pos for r in self.readers] + [pos])
        cut = low - self.tail_start
        if cut > 0:
            del self.tail[:cut]
            self.tail_start = low


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


class _Reader(io.RawIOBase):
    """One opening of a held pipe, at its own position."""

    def __init__(self, held: _Held):
        self.held, self.pos = held, 0
        with _lock:
            held.readers.add(self)

    def close(self) -> None:
        with _lock:
            self.held.readers.discard(self)
        super().close()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Anywhere in the bytes held (a reader sniffs the head, then starts over);
        SEEK_END reads to the end first."""
        if whence == io.SEEK_END:
            pos = self.held.frontier()
            while True:
                chunk = self.held.read_at(pos, 1 << 20)
                if not chunk:
                    break
                pos += len(chunk)
            target = pos + offset
        else:
            target = offset if whence == io.SEEK_SET else self.pos + offset
        if target < 0:
            raise OSError(f"{self.held.name}: seek to {target}")
        self.pos = target
        return target

    def readinto(self, b) -> int:
        data = self.held.read_at(self.pos, len(b))
        n = len(data)
        b[:n] = data
        self.pos += n
        return n


@contextmanager
def held(stdin: bool = False) -> Iterator[None]:
    """Within it, every path that is not a regular file is read once and served from
    memory (module doc); ``stdin``: ``-`` is standard input (the outermost call
    decides).  Re-entrant; what is held is dropped when the outermost one ends."""
    with _lock:
        _state["depth"] += 1
        if _state["depth"] == 1:
            _state["stdin"] = stdin
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if not _state["depth"]:
                for h in _held.values():
                    if h.raw is not getattr(sys.stdin, "buffer", None):
                        h.raw.close()
                _held.clear()
                _state["stdin"] = False


def is_stdin(path) -> bool:
    """Whether ``path`` is ``-`` where it means standard input (a command's run)."""
    return _state["stdin"] and isinstance(path, str) and path == STDIN


def name(path) -> str:
    """How messages name ``path``: ``<stdin>`` for ``-`` in a command, else the path."""
    return STDIN_NAME if is_stdin(path) else os.fspath(path)


def _key(path: str) -> object | None:
    """What a held copy of ``path`` is filed under (the same pipe under any of its
    names: its device and inode), or None: opened as it is."""
    if is_stdin(path):
        return STDIN
    if not _state["depth"]:
        return None
    try:
        st = os.stat(path)
    except OSError:                     # open() raises the error that names the path
        return None
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None
    return (st.st_dev, st.st_ino)


def open_binary(path) -> BinaryIO:
    """A binary reader of ``path`` (module doc): a regular file opened anew; inside
    :func:`held`, a pipe, FIFO or device read whole at its first opening and served
    from memory; :class:`OSError` as :func:`open` raises it."""
    p = os.fspath(path)
    with _lock:
        key = _key(p)
        if key is None:
            return open(p, "rb")
        held = _held.get(key)
        if held is None:
            raw = sys.stdin.buffer if key == STDIN else open(p, "rb")
            held = _held[key] = _Held(raw, name(p))
    return io.BufferedReader(_Reader(held))


def read_bytes(path) -> bytes:
    """The whole content of ``path`` (:func:`open_binary`)."""
    with open_binary(path) as fh:
        return fh.read()


def is_readable(path) -> bool:
    """Whether ``path`` names something to read — a file, a pipe, a device, ``-`` in
    a command — and not a folder or nothing."""
    p = os.fspath(path)
    return is_stdin(p) or (os.path.exists(p) and not os.path.isdir(p))
