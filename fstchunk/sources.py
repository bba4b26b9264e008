"""Every file fstchunk reads is opened here (:func:`open_binary`).

A path that is not a regular file — a pipe or FIFO (``<(cat dev.txt)``, ``mkfifo``),
``/dev/stdin``, a terminal — can be read only once, yet a command reads an input more
than once (a sniff of its first lines, its layout checked, then the parse).  Inside
:func:`held` (every ``fstchunk`` command runs in one) such a path is read into memory
at its first opening and served from there at every later one, so a pipe gives
exactly what the file would give; with ``stdin=True`` (the command line) the path
``-`` is standard input, read once the same way and named ``<stdin>`` in messages
(:func:`name`).  Regular files are never copied: they are opened anew each time.

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

_lock = threading.RLock()
_state = {"depth": 0, "stdin": False}
_held: dict[object, bytes] = {}


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
        data = _held.get(key)
        if data is None:
            if key == STDIN:
                data = sys.stdin.buffer.read()
            else:
                with open(p, "rb") as fh:
                    data = fh.read()
            _held[key] = data
    return io.BytesIO(data)


def read_bytes(path) -> bytes:
    """The whole content of ``path`` (:func:`open_binary`)."""
    with open_binary(path) as fh:
        return fh.read()


def is_readable(path) -> bool:
    """Whether ``path`` names something to read — a file, a pipe, a device, ``-`` in
    a command — and not a folder or nothing."""
    p = os.fspath(path)
    return is_stdin(p) or (os.path.exists(p) and not os.path.isdir(p))
