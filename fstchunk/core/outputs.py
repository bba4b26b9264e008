"""Destinations checked before the work and written atomically.

Every file fstchunk writes (models, checkpoints, FARs, drawings, decode output)
goes through this module:

* :func:`check_output` runs *before* training or decoding starts: the folder
  exists and is a writable folder, the path is not a folder;
* :func:`atomic_path` / :func:`atomic_write` write to a temporary file in the
  target folder, ``.NAME.tmpPID`` (:func:`temp_path`), and rename it over ``NAME`` only once the
  whole file is written and flushed, so a reader never sees half a file and a
  failure (a full disk, an exception, a failing external tool) leaves the old
  file, if any, intact and no temporary behind;
* :func:`clean_stale` removes temporaries of the same destination left by a
  process that was killed (``kill -9`` cannot run clean-up code); a live
  process's temporary is never touched.

Every failure is one :class:`~fstchunk.core.errors.OutputError` naming the final path.
:func:`json_text` is how every JSON output is written (strict JSON: no NaN).

Pitfalls: the temporary must be in the target folder (``os.replace`` is atomic
only within one file system); root ignores permission bits, so ``os.access`` is
only a first check and the write itself can still fail.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
import sys
import tempfile
from typing import IO, Iterator

from .errors import OutputError


def _tidy(path: str) -> str:
    """``.//b.txt`` -> ``b.txt``; ``..`` is kept (it may cross a symlink)."""
    path = re.sub(r"/{2,}", "/", path)
    while path.startswith("./") and len(path) > 2:
        path = path[2:]
    return path


def check_output(path, what: str = "output") -> str:
    """The destination ``path`` can be written: its folder exists and is writable, it
    is not a folder, and an existing file there is a writable regular file; else one
    OutputError naming it.  Returns the path, tidied."""
    path = _tidy(os.fspath(path))
    if not path:
        raise OutputError(f"{what}: empty path")
    if os.path.isdir(path):
        raise OutputError(f"{path}: is a folder (the {what} needs a file name)")
    shown = os.path.dirname(path) or "."
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(folder):
        raise OutputError(f"{path}: folder {shown} does not exist")
    if not os.path.isdir(folder):
        raise OutputError(f"{path}: {shown} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: folder {shown} is not writable")
    if os.path.exists(path):
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise OutputError(f"{path}: exists and is not a regular file")
        if not os.access(path, os.W_OK):
            raise OutputError(f"{path}: file is not writable")
    return path


def temp_path(path, pid: int | None = None) -> str:
    """``DIR/.NAME.tmpPID``: the temporary an atomic write of ``path`` uses."""
    folder, name = os.path.split(os.fspath(path))
    return os.path.join(folder, f".{name}.tmp{os.getpid() if pid is None else pid}")


def _alive(pid: int) -> bool:
    if pid <= 0 or pid == os.getpid():
        return True                     # kill(0, 0) would probe our own process group
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True                     # another user's, or no pid at all: keep it
    return True


def clean_stale(path) -> list[str]:
    """Remove the temporaries of ``path`` (``.NAME.tmpPID``, and ``NAME.tmpPID`` of
    older versions) whose process is dead; the paths removed."""
    folder, name = os.path.split(os.path.abspath(os.fspath(path)))
    pattern = re.compile(rf"^\.?{re.escape(name)}\.tmp(\d+)$")
    removed = []
    try:
        entries = os.listdir(folder)
    except OSError:
        return removed
    for entry in entries:
        m = pattern.match(entry)
        if m and not _alive(int(m.group(1))):
            full = os.path.join(os.path.dirname(os.fspath(path)), entry)
            with contextlib.suppress(OSError):
                os.remove(full)
                removed.append(full)
    return removed


def disk_full(path) -> bool:
    """Whether the file system of ``path`` has no free block left."""
    try:
        st = os.statvfs(os.path.dirname(os.path.abspath(os.fspath(path))))
    except OSError:
        return False
    return st.f_bavail == 0


def _reason(e: OSError) -> str:
    return "no space left on device" if e.errno == errno.ENOSPC else (e.strerror or str(e))


def output_error(path, e: OSError, what: str = "cannot write") -> OutputError:
    """One-line OutputError for ``path`` from an OSError."""
    return OutputError(f"{os.fspath(path)}: {what} ({_reason(e)})")


def first_error_line(text: str | None) -> str:
    """The first non-empty line of a tool's complaint (OpenFst's ``ERROR: `` dropped)."""
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line.removeprefix("ERROR: ")
    return ""


class _Captured:
    text = ""


@contextlib.contextmanager
def captured_stderr() -> Iterator[_Captured]:
    """Capture what C++ code (OpenFst) writes to file descriptor 2 in the block;
    ``.text`` holds it afterwards."""
    got = _Captured()
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:                      # no descriptor 2: nothing to capture
        yield got
        return
    with tempfile.TemporaryFile() as buf:
        os.dup2(buf.fileno(), 2)
        try:
            yield got
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            buf.seek(0)
            got.text = buf.read().decode("utf-8", "replace")


def _is_ours(e: OSError, tmp: str) -> bool:
    """An OSError about the temporary (or about no file: a write, a flush)."""
    return e.filename in (None, tmp) or e.errno == errno.ENOSPC


def _fsync(name: str) -> None:
    """fsync a file or folder by name, where the system allows it (best effort:
    some file systems refuse it for folders)."""
    try:
        fd = os.open(name, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP, errno.EISDIR):
            raise
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path, what: str = "output") -> Iterator[str]:
    """A temporary path in the target folder for the block to write; renamed over
    ``path`` when the block ends normally, removed when it raises (see module doc).
    A symbolic link is written through (its target is replaced)."""
    path = check_output(path, what)
    final = os.path.realpath(path) if os.path.islink(path) else path
    clean_stale(final)
    tmp = temp_path(final)
    try:
        yield tmp
        if not os.path.isfile(tmp):
            raise OutputError(f"{path}: nothing was written")
        _fsync(tmp)                     # data on disk before the name points at it
        if os.path.exists(final):
            with contextlib.suppress(OSError):
                os.chmod(tmp, stat.S_IMODE(os.stat(final).st_mode))
        os.replace(tmp, final)
        _fsync(os.path.dirname(os.path.abspath(final)))   # and the rename itself
    except OSError as e:
        if not _is_ours(e, tmp):
            raise
        raise output_error(path, e) from None
    finally:
        with contextlib.suppress(OSError):
            os.remove(tmp)


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", encoding: str | None = "utf-8",
                 what: str = "output") -> Iterator[IO]:
    """An open file (``mode`` "w" or "wb") on the temporary of ``path``; flushed,
    synced and renamed when the block ends normally (see :func:`atomic_path`)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write writes whole files: mode 'w' or 'wb', not {mode!r}")
    with atomic_path(path, what) as tmp:
        fh = open(tmp, mode, encoding=None if "b" in mode else encoding)
        try:
            yield fh
            fh.flush()
            with contextlib.suppress(OSError, AttributeError, ValueError):
                os.fsync(fh.fileno())
        finally:
            with contextlib.suppress(OSError):
                fh.close()


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def json_text(value, **kwargs) -> str:
    """``json.dumps`` as every JSON output of fstchunk writes it: strict JSON, a NaN or
    an infinity (a figure with nothing to measure) written as ``null``, which every JSON
    reader takes (``NaN`` is no JSON)."""
    return json.dumps(_finite(value), allow_nan=False, **kwargs)
