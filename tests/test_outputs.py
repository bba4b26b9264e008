"""fstchunk.core.outputs: checked destinations, atomic writes, stale temporaries."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from fstchunk.core import outputs
from fstchunk.core.errors import FstchunkError, OutputError
from fstchunk.core.outputs import (atomic_path, atomic_write, check_output, clean_stale,
                                   temp_path)

root = pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                          reason="root ignores file permissions")


def one_line(e: BaseException) -> str:
    msg = str(e)
    assert "\n" not in msg
    return msg


def leftovers(folder) -> list[str]:
    return sorted(n for n in os.listdir(folder) if ".tmp" in n)


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# ------------------------------------------------------------------ check_output
def test_missing_folder(tmp_path):
    dest = tmp_path / "OUT" / "x.far"
    with pytest.raises(OutputError) as e:
        check_output(dest)
    assert one_line(e.value) == f"{dest}: folder {tmp_path / 'OUT'} does not exist"
    assert isinstance(e.value, FstchunkError)


def test_folder_is_a_file(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match="is not a folder"):
        check_output(tmp_path / "f" / "x.far")


def test_path_is_a_directory(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(OutputError, match=r"d: is a folder \(the FAR needs a file name\)"):
        check_output(tmp_path / "d", "FAR")


def test_special_file_refused(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no fifos here")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OutputError, match="not a regular file"):
        check_output(tmp_path / "fifo")


def test_empty_name():
    with pytest.raises(OutputError, match="empty"):
        check_output("")


def test_relative_name_in_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert check_output(".//b.txt") == "b.txt"
    (tmp_path / "sub").mkdir()
    assert check_output("sub/../b.txt") == "sub/../b.txt"   # ".." kept: symlinks
    assert check_output("x.far") == "x.far"


@root
def test_read_only_folder(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="folder .*ro is not writable"):
            check_output(ro / "x.far")
    finally:
        ro.chmod(0o755)


@root
def test_read_only_file(tmp_path):
    f = tmp_path / "x.far"
    f.write_text("old")
    f.chmod(0o444)
    with pytest.raises(OutputError, match="x.far: file is not writable"):
        check_output(f)


def test_unwritable_folder_simulated(tmp_path, monkeypatch):
    """The permission check itself (runs as root too)."""
    real = os.access
    monkeypatch.setattr(outputs.os, "access",
                        lambda p, m: False if os.fspath(p) == str(tmp_path) else real(p, m))
    with pytest.raises(OutputError, match="is not writable"):
        check_output(tmp_path / "x.far")
    with pytest.raises(OutputError, match="is not writable"):
        with atomic_write(tmp_path / "x.far") as fh:
            fh.write("never")
    assert not (tmp_path / "x.far").exists()


def test_symlink_written_through(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "t.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    with atomic_write(link) as fh:
        fh.write("new")
    assert link.is_symlink() and target.read_text() == "new"
    assert leftovers(tmp_path / "real") == [] and leftovers(tmp_path) == []


# ------------------------------------------------------------------ atomic writes
def test_atomic_write_text_and_binary(tmp_path):
    dest = tmp_path / "x.txt"
    with atomic_write(dest) as fh:
        fh.write("héllo\tworld\n")
        assert not dest.exists()            # nothing at the destination until the end
    assert dest.read_text(encoding="utf-8") == "héllo\tworld\n"
    with atomic_write(dest, "wb") as fh:
        fh.write(b"\x00\x01")
    assert dest.read_bytes() == b"\x00\x01"
    assert leftovers(tmp_path) == []


def test_atomic_write_keeps_mode(tmp_path):
    dest = tmp_path / "x.txt"
    dest.write_text("old")
    dest.chmod(0o640)
    with atomic_write(dest) as fh:
        fh.write("new")
    assert dest.stat().st_mode & 0o777 == 0o640


def test_bad_mode():
    with pytest.raises(ValueError):
        with atomic_write("x", "a"):
            pass


def test_exception_inside_block_keeps_old_file(tmp_path):
    dest = tmp_path / "x.txt"
    dest.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(dest) as fh:
            fh.write("half")
            raise RuntimeError("boom")
    assert dest.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_exception_inside_atomic_path_removes_temporary(tmp_path):
    dest = tmp_path / "x.far"
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(dest) as tmp:
            open(tmp, "w").write("half")
            raise KeyboardInterrupt
    assert not dest.exists() and leftovers(tmp_path) == []


class FullDisk:
    """A file object whose data never fits: flush fails like a full disk."""

    def __init__(self, fh):
        self.fh = fh

    def write(self, data):
        return self.fh.write(data)

    def flush(self):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fileno(self):
        return self.fh.fileno()

    def close(self):
        self.fh.close()


def test_full_disk_keeps_old_file(tmp_path, monkeypatch):
    dest = tmp_path / "out.txt"
    dest.write_text("old contents\n")
    real_open = open
    monkeypatch.setattr("builtins.open",
                        lambda *a, **k: FullDisk(real_open(*a, **k)))
    with pytest.raises(OutputError) as e:
        with atomic_write(dest) as fh:
            fh.write("new contents that do not fit\n")
    monkeypatch.undo()
    assert one_line(e.value) == f"{dest}: cannot write (no space left on device)"
    assert dest.read_text() == "old contents\n"
    assert leftovers(tmp_path) == []


def test_full_disk_in_write(tmp_path):
    dest = tmp_path / "new.txt"
    with pytest.raises(OutputError, match=r"new.txt: cannot write \(no space left"):
        with atomic_write(dest) as fh:
            fh.write("a")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert not dest.exists() and leftovers(tmp_path) == []


def test_oserror_about_another_file_passes_through(tmp_path):
    with pytest.raises(FileNotFoundError):
        with atomic_write(tmp_path / "out.txt") as fh:
            fh.write(open(tmp_path / "missing-input.txt").read())
    assert leftovers(tmp_path) == []


def test_nothing_written(tmp_path):
    with pytest.raises(OutputError, match="nothing was written"):
        with atomic_path(tmp_path / "x.far"):
            pass
    assert not (tmp_path / "x.far").exists()


def test_atomic_path_checks_before_the_block(tmp_path):
    ran = []
    with pytest.raises(OutputError, match="does not exist"):
        with atomic_path(tmp_path / "no" / "x.far"):
            ran.append(1)
    assert ran == []


# ------------------------------------------------------------------ stale temporaries
def test_temp_pattern(tmp_path):
    assert temp_path(str(tmp_path / "m.npz"), 42) == str(tmp_path / ".m.npz.tmp42")


def test_stale_temporaries_of_dead_pid_removed(tmp_path):
    dest = tmp_path / "m.npz"
    pid = dead_pid()
    new = tmp_path / f".m.npz.tmp{pid}"
    old = tmp_path / f"m.npz.tmp{pid}"       # the pattern save_model used to write
    other = tmp_path / f".other.npz.tmp{pid}"
    for f in (new, old, other):
        f.write_text("half")
    assert sorted(clean_stale(dest)) == sorted([str(new), str(old)])
    assert not new.exists() and not old.exists() and other.exists()


def test_live_temporaries_kept(tmp_path):
    dest = tmp_path / "m.npz"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        live = tmp_path / f".m.npz.tmp{proc.pid}"
        mine = tmp_path / f".m.npz.tmp{os.getpid()}"
        zero = tmp_path / ".m.npz.tmp0"      # kill(0, 0) would probe our process group
        for f in (live, mine, zero):
            f.write_text("in progress")
        assert clean_stale(dest) == []
        assert live.exists() and mine.exists() and zero.exists()
    finally:
        proc.kill()
        proc.wait()


def test_atomic_write_cleans_stale(tmp_path):
    dest = tmp_path / "m.npz"
    stale = tmp_path / f".m.npz.tmp{dead_pid()}"
    stale.write_text("half")
    with atomic_write(dest, "wb") as fh:
        fh.write(b"ok")
    assert not stale.exists() and dest.read_bytes() == b"ok"


def test_clean_stale_keeps_impossible_pids(tmp_path):
    """A pid too large for kill() is not proof of a dead process (and no crash)."""
    odd = tmp_path / ".m.npz.tmp99999999999999999999999"
    odd.write_text("?")
    assert clean_stale(tmp_path / "m.npz") == []
    with atomic_write(tmp_path / "m.npz", "wb") as fh:
        fh.write(b"ok")
    assert odd.exists()


def test_atomic_path_syncs_before_the_rename(tmp_path, monkeypatch):
    """The data reaches the disk before the name points at it (else a crash right
    after the rename can leave an empty file under the final name)."""
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(outputs.os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(outputs.os, "replace",
                        lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    with atomic_path(tmp_path / "x.far") as tmp:
        with open(tmp, "wb") as fh:
            fh.write(b"data")
    assert events[:2] == ["fsync", "replace"]
    assert (tmp_path / "x.far").read_bytes() == b"data"
