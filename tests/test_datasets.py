"""Fetching the public corpora (:mod:`fstchunk.io.datasets`, ``fstchunk data``): a
loopback HTTP server serves the project's reference copies as the canonical site serves
them (CoNLL-2000 gzipped ASCII, CoNLL-2002 ISO-8859-1 text); the fetched files are the
reference copies again, checked, cached, and found by ``data_path``; a damaged file, a
missing one, a dead or silent server are one clear error; Getting started runs on a
machine with no ``FSTCHUNK_DATA`` and no ``../shared/data``."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fstchunk.core.errors import DownloadError, InputError
from fstchunk.io import datasets
from fstchunk.io.conll import data_path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))


def _served(remote: datasets.Remote, text: bytes) -> bytes:
    """The reference file's bytes as the canonical site serves them."""
    raw = text.decode("utf-8").encode(remote.encoding)
    return gzip.compress(raw) if remote.url.endswith(".gz") else raw


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A folder laid out as a mirror (``NAME/FILE`` as the site names it), built from
    the reference copies."""
    root = tmp_path_factory.mktemp("mirror")
    for spec in datasets.CORPORA.values():
        for remote in spec.files:
            ref = data_path(spec.name, remote.name)
            if not os.path.exists(ref):
                msg = f"corpus {ref} not found (set FSTCHUNK_DATA)"
                if os.environ.get("CI", "").lower() == "true":
                    pytest.fail(msg)
                pytest.skip(msg)
            out = root / spec.name / os.path.basename(remote.url)
            out.parent.mkdir(exist_ok=True)
            out.write_bytes(_served(remote, Path(ref).read_bytes()))
    return root


class _Server:
    """``http.server`` on 127.0.0.1 serving ``folder``; ``paths``: what was asked."""

    def __init__(self, folder: Path):
        self.paths: list[str] = []
        paths = self.paths

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=str(folder), **k)

            def do_GET(self):
                paths.append(self.path)
                super().do_GET()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(site):
    s = _Server(site)
    yield s
    s.close()


@pytest.fixture
def clean_env(tmp_path, monkeypatch):
    """No FSTCHUNK_DATA, no mirror, the cache in tmp, the working folder without
    ../shared/data."""
    monkeypatch.delenv("FSTCHUNK_DATA", raising=False)
    monkeypatch.delenv(datasets.MIRROR_ENV, raising=False)
    monkeypatch.setenv(datasets.CACHE_ENV, str(tmp_path / "cache"))
    work = tmp_path / "a" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    return tmp_path / "cache"


def _dead_url() -> str:
    """A loopback address where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def reference(site):
    """(corpus, file) -> the reference copy's bytes."""
    return {(c.name, r.name): Path(data_path(c.name, r.name)).read_bytes()
            for c in datasets.CORPORA.values() for r in c.files}


def test_fetch_gives_the_reference_files_in_utf8(server, clean_env, reference):
    for name in ("conll2000", "conll2002"):
        folder = datasets.fetch(name, mirror=server.url, quiet=True)
        assert folder == clean_env / name
        for remote in datasets.CORPORA[name].files:
            assert (folder / remote.name).read_bytes() == reference[name, remote.name]
    assert sorted(server.paths) == sorted(
        f"/{c.name}/{os.path.basename(r.url)}" for c in datasets.CORPORA.values()
        for r in c.files)
    assert "ë".encode("utf-8") in (clean_env / "conll2002" / "ned.train").read_bytes()
    assert not [p for p in clean_env.rglob("*") if ".tmp" in p.name]   # no temporaries


def test_a_second_fetch_asks_nothing(server, clean_env):
    first = datasets.fetch("conll2000", mirror=server.url, quiet=True)
    asked = len(server.paths)
    assert asked == 2
    assert datasets.fetch("conll2000", mirror=server.url, quiet=True) == first
    assert len(server.paths) == asked


def test_fstchunk_data_holding_the_corpus_is_used_and_not_written(server, clean_env,
                                                                   monkeypatch, site):
    held = clean_env.parent / "held"
    (held / "conll2000").mkdir(parents=True)
    for name in ("train.txt", "test.txt"):
        (held / "conll2000" / name).write_text("x X O\n\n")
    monkeypatch.setenv("FSTCHUNK_DATA", str(held))
    assert datasets.fetch("conll2000", mirror=server.url) == held / "conll2000"
    assert server.paths == [] and not clean_env.exists()
    assert data_path("conll2000", "train.txt") == str(held / "conll2000" / "train.txt")


def test_data_path_finds_fetched_corpora(server, clean_env):
    assert not os.path.isdir(os.path.join("..", "shared", "data"))
    assert data_path("conll2000", "train.txt") == str(clean_env / "conll2000" / "train.txt")
    datasets.fetch("conll2000", mirror=server.url, quiet=True)
    assert os.path.isfile(data_path("conll2000", "train.txt"))


def test_default_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(datasets.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert datasets.default_dir() == tmp_path / "xdg" / "fstchunk" / "data"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert datasets.default_dir() == tmp_path / "home" / ".cache" / "fstchunk" / "data"


def test_dir_writes_there(server, clean_env, tmp_path):
    folder = datasets.fetch("conll2000", tmp_path / "mine", mirror=server.url, quiet=True)
    assert folder == tmp_path / "mine" / "conll2000" and (folder / "test.txt").is_file()
    assert not clean_env.exists()


def test_a_damaged_file_is_one_error_naming_url_and_digests(site, clean_env, tmp_path):
    bad = tmp_path / "bad"
    (bad / "conll2000").mkdir(parents=True)
    good = gzip.decompress((site / "conll2000" / "train.txt.gz").read_bytes())
    damaged = good.replace(b"B-NP", b"B-VP", 1)
    (bad / "conll2000" / "train.txt.gz").write_bytes(gzip.compress(damaged))
    s = _Server(bad)
    try:
        with pytest.raises(DownloadError) as e:
            datasets.fetch("conll2000", mirror=s.url, quiet=True)
    finally:
        s.close()
    text = str(e.value)
    remote = datasets.CORPORA["conll2000"].files[0]
    actual = hashlib.sha256(datasets.normalise(damaged, "ascii")).hexdigest()
    assert f"{s.url}/conll2000/train.txt.gz" in text
    assert remote.sha256 in text and actual in text and "checksum mismatch" in text
    assert not (clean_env / "conll2000" / "train.txt").exists()
    assert not [p for p in clean_env.rglob("*") if p.is_file()]


def test_a_truncated_gzip_file_is_one_error(tmp_path):
    data = gzip.compress(b"a A O\n" * 1000)[:-20]
    with pytest.raises(DownloadError, match="u: not a complete gzip file"):
        datasets.normalise(data, "ascii", "u")


def test_a_missing_file_names_the_answer(tmp_path, clean_env):
    (tmp_path / "empty").mkdir()
    s = _Server(tmp_path / "empty")
    try:
        with pytest.raises(DownloadError, match=r"conll2000/train.txt.gz: the server "
                                                r"answered 404"):
            datasets.fetch("conll2000", mirror=s.url, quiet=True)
    finally:
        s.close()


def test_a_dead_server_is_one_error_naming_the_url_and_what_to_do(clean_env):
    url = _dead_url()
    with pytest.raises(DownloadError) as e:
        datasets.fetch("conll2002", mirror=url, quiet=True)
    text = str(e.value)
    assert text.startswith(f"{url}/conll2002/ned.train: cannot download")
    assert "FSTCHUNK_DATA" in text and datasets.MIRROR_ENV in text


def test_a_silent_server_times_out(clean_env):
    with socket.socket() as s:                  # accepts connections, never answers
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
        with pytest.raises(DownloadError, match="cannot download .*timed out"):
            datasets.fetch("conll2000", mirror=url, quiet=True, timeout=0.5)


def test_the_cli_error_is_one_line_without_traceback(clean_env):
    env = {k: v for k, v in os.environ.items() if k != "FSTCHUNK_DATA"}
    env.update({datasets.MIRROR_ENV: _dead_url(), "PYTHONPATH": ROOT,
                datasets.CACHE_ENV: str(clean_env)})
    r = subprocess.run([sys.executable, "-m", "fstchunk", "data", "get", "conll2000"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().split("\n")
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith(f"fstchunk data get: error: {env[datasets.MIRROR_ENV]}"
                               f"/conll2000/train.txt.gz: cannot download")


def test_the_cli_fetches_and_lists(server, clean_env, capsys):
    from fstchunk.cli import main
    assert main(["data", "list"]) == 0
    before = capsys.readouterr().out
    assert "conll2000/train.txt: 8936 sentences, from https://www.clips.uantwerpen.be/" \
           "conll2000/chunking/train.txt.gz; not fetched" in before
    assert "genia: not a public download" in before
    assert main(["data", "get", "conll2000", "--mirror", server.url]) == 0
    out = capsys.readouterr()
    assert out.out == f"conll2000: {clean_env / 'conll2000'} (train.txt, test.txt)\n"
    assert out.err == ""                        # no bar when stderr is not a terminal
    assert main(["data", "list"]) == 0
    assert f"; {clean_env / 'conll2000' / 'train.txt'}" in capsys.readouterr().out


@pytest.mark.parametrize("name, message", [
    ("genia", "genia: not a public download: the GENIA term corpus"),
    ("conll2000/dev.txt", "conll2000/dev.txt: not a public download"),
    ("conll2003", "unknown corpus 'conll2003': fstchunk can fetch conll2000, conll2002")])
def test_what_cannot_be_fetched_is_refused_by_name(name, message, capsys):
    from fstchunk.cli import main
    with pytest.raises(InputError, match=message):
        datasets.fetch(name)
    assert main(["data", "get", "conll2000", name]) == 2     # before any download
    err = capsys.readouterr().err
    assert err.startswith(f"fstchunk data get: error: {message}") and err.count("\n") == 1


def test_progress_bar_on_a_terminal_only(server, clean_env, monkeypatch, capsys):
    monkeypatch.setattr(datasets, "is_terminal", lambda stream: True)
    datasets.fetch("conll2000", mirror=server.url, quiet=True)
    assert capsys.readouterr().err == ""
    (clean_env / "conll2000" / "test.txt").unlink()
    datasets.fetch("conll2000", mirror=server.url)
    err = capsys.readouterr().err
    assert "conll2000/test.txt" in err and "100%" in err and "train.txt" not in err


def test_normalise():
    raw = "a A B-NP\r\nb B I-NP  \r\n\r\n\r\nc C O\t\n".encode("latin-1")
    assert datasets.normalise(raw, "latin-1") == b"a A B-NP\nb B I-NP\n\nc C O\n\n"
    assert datasets.normalise("\n\né E O\n".encode("latin-1"), "latin-1") == \
        "é E O\n\n".encode("utf-8")
    with pytest.raises(DownloadError, match=r"u: line 2: not ascii text"):
        datasets.normalise("a A O\né E O\n".encode("latin-1"), "ascii", "u")


def test_checksums_are_those_of_the_reference_copies(reference):
    for (name, file), text in reference.items():
        remote = next(r for r in datasets.CORPORA[name].files if r.name == file)
        assert datasets.normalise(text, "utf-8") == text            # already normal
        assert hashlib.sha256(text).hexdigest() == remote.sha256, (name, file)
        assert text.count(b"\n\n") == remote.sentences, (name, file)


def test_getting_started_without_fstchunk_data(server, tmp_path):
    """The page's blocks, in a fresh process with no FSTCHUNK_DATA, HOME and the cache
    in tmp, a working folder with no ../shared/data, the corpora from the loopback
    server (what a machine with only ``pip install`` has, offline)."""
    work = tmp_path / "x" / "work"
    work.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("FSTCHUNK_DATA", datasets.CACHE_ENV, "XDG_CACHE_HOME")}
    env.update({"HOME": str(tmp_path / "home"), datasets.MIRROR_ENV: server.url,
                "PYTHONPATH": ROOT + os.pathsep + os.path.join(ROOT, "tests")})
    code = ("from codeblocks import run_page; "
            f"run_page({os.path.join(ROOT, 'docs', 'getting-started.md')!r})")
    r = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cached = tmp_path / "home" / ".cache" / "fstchunk" / "data" / "conll2000"
    assert sorted(p.name for p in cached.iterdir()) == ["test.txt", "train.txt"]
    assert sorted(server.paths) == ["/conll2000/test.txt.gz", "/conll2000/train.txt.gz"]
