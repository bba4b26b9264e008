"""The public corpora the documentation uses: where they come from, fetching them
once into a cache folder, and finding them again.

``fetch("conll2000")`` (``fstchunk data get conll2000``) downloads CoNLL-2000's
``train.txt`` and ``test.txt`` from their canonical address, decompresses them (a
gzip file is recognised by its first bytes), decodes them from the encoding the site
serves (CoNLL-2000: ASCII; CoNLL-2002: ISO-8859-1), normalises them to the UTF-8
three-column text fstchunk reads (``\\n`` line ends, no trailing blanks, one blank
line between sentences and at the end), checks the SHA-256 of that normalised text,
and writes each file atomically into ``FOLDER/NAME/``.  A file already there is not
fetched again.

Where (:func:`default_dir`): ``$FSTCHUNK_CACHE`` if set, else
``$XDG_CACHE_HOME/fstchunk/data``, else ``~/.cache/fstchunk/data``.  A corpus that
``$FSTCHUNK_DATA`` already holds is used from there and nothing is written
(``$FSTCHUNK_DATA`` is read, never written, unless given as the folder).  From where:
the canonical addresses of :data:`CORPORA`, or a mirror — ``$FSTCHUNK_DATA_MIRROR``
or ``mirror=``, a base URL (``http://``, ``https://`` or ``file://``) under which
``NAME/FILE`` is the canonical file's name (``conll2000/train.txt.gz``,
``conll2002/ned.train``), served as the canonical site serves it.

The checksums are of the *normalised* files, computed from the project's reference
copies of the corpora; a download that normalises to other text (a changed or
damaged file, a wrong mirror) is one :class:`DownloadError` naming the URL and both
digests.  An unreachable server is one :class:`DownloadError` naming the URL and how
to use a local copy instead.  CoNLL-2000's ``dev.txt`` and GENIA are not public
downloads in this form: :data:`NOT_DOWNLOADABLE` says where to get them.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..core.errors import DownloadError, InputError
from ..core.outputs import atomic_write
from ..core.progress import is_terminal, progress

#: a base URL that replaces the canonical addresses (module doc)
MIRROR_ENV = "FSTCHUNK_DATA_MIRROR"
#: the folder that fetched corpora go to (module doc)
CACHE_ENV = "FSTCHUNK_CACHE"
#: the folder of corpora already on this machine (read first, never written)
DATA_ENV = "FSTCHUNK_DATA"
#: seconds without an answer before a download is given up
TIMEOUT = 30.0


@dataclass(frozen=True)
class Remote:
    """One file of a corpus: its name here, its canonical address, the encoding the
    site serves it in, the SHA-256 of the normalised UTF-8 file and its sentences."""
    name: str
    url: str
    encoding: str
    sha256: str
    sentences: int


@dataclass(frozen=True)
class Corpus:
    """A public corpus: its files, home page, licence and the paper to cite."""
    name: str
    title: str
    homepage: str
    licence: str
    cite: str
    files: tuple[Remote, ...]


_C2000 = "https://www.clips.uantwerpen.be/conll2000/chunking/"
_C2002 = "https://www.clips.uantwerpen.be/conll2002/ner/data/"

#: the corpora :func:`fetch` can get
CORPORA: dict[str, Corpus] = {c.name: c for c in (
    Corpus("conll2000", "CoNLL-2000 chunking (WSJ sections 15-18 train, 20 test)",
           _C2000, "distributed for research by the CoNLL-2000 shared task; the text is "
           "from the Penn Treebank's WSJ (LDC), no licence is stated on the site",
           "Tjong Kim Sang & Buchholz, Introduction to the CoNLL-2000 Shared Task: "
           "Chunking, CoNLL 2000",
           (Remote("train.txt", _C2000 + "train.txt.gz", "ascii",
                   "91a468bf9858eacaed720a4cd8aa3503c89cc81c4bcf5ac3159110d0b626deea", 8936),
            Remote("test.txt", _C2000 + "test.txt.gz", "ascii",
                   "55f3557ae56e40c754a2c98a8926c963632d9b991f61713257fb22848ad4a246", 2012))),
    Corpus("conll2002", "CoNLL-2002 Dutch named entities (train, testa = dev, testb = test)",
           "https://www.clips.uantwerpen.be/conll2002/ner/",
           "research use in the context of the CoNLL-2002 shared task only, no commercial "
           "use (the data's README)",
           "Tjong Kim Sang, Introduction to the CoNLL-2002 Shared Task: Language-"
           "Independent Named Entity Recognition, CoNLL 2002",
           (Remote("ned.train", _C2002 + "ned.train", "latin-1",
                   "0a419dcb356b62c8cff38515675550b3d5dbea9f45a1c4956328dbd5cc7fcdbc", 15806),
            Remote("ned.testa", _C2002 + "ned.testa", "latin-1",
                   "51259d4bfe52462f211d3d0b67173a7ecbfa296e199f6c6bd0895f4c78155057", 2895),
            Remote("ned.testb", _C2002 + "ned.testb", "latin-1",
                   "8a694e3b1bd809e8ed4b3fe9f4949aaaee04df9ee019f20cf06635112adf50db", 5195))),
)}

#: what the pages name but no public address serves in fstchunk's form: where to get it
NOT_DOWNLOADABLE: dict[str, str] = {
    "conll2000/dev.txt": "held-out WSJ text in CoNLL-2000's format, not part of the shared "
                         "task's release: make it from the Penn Treebank (LDC99T42) with "
                         "the CoNLL-2000 chunklink script, or tune on a slice of train.txt",
    "genia": "the GENIA term corpus 3.02 (http://www.geniaproject.org/genia-corpus/term-corpus,"
             " CC BY 3.0) is XML; fstchunk's genia/*.jsonl is the usual 8:1:1 document split "
             "of the nested-NER literature, converted by the project, not published",
}


def default_dir() -> Path:
    """The folder fetched corpora go to: ``$FSTCHUNK_CACHE``, else
    ``$XDG_CACHE_HOME/fstchunk/data``, else ``~/.cache/fstchunk/data``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fstchunk" / "data"


def corpus(name: str) -> Corpus:
    """The corpus called ``name``; one DownloadError for what no public address
    serves, one InputError for a name that is not known."""
    if name in CORPORA:
        return CORPORA[name]
    if name in NOT_DOWNLOADABLE:
        raise DownloadError(f"{name}: not a public download: {NOT_DOWNLOADABLE[name]}")
    raise InputError(f"unknown corpus {name!r}: fstchunk can fetch "
                     f"{', '.join(CORPORA)} ({', '.join(NOT_DOWNLOADABLE)}: not public)")


def holds(folder: str | os.PathLike, name: str) -> bool:
    """Whether ``folder/name`` holds every file of the corpus ``name``."""
    return all(os.path.isfile(os.path.join(folder, name, f.name)) for f in corpus(name).files)


def locate(name: str) -> Path | None:
    """Where the corpus already is: ``$FSTCHUNK_DATA/NAME`` or the cache's, else None."""
    for root in (os.environ.get(DATA_ENV), default_dir()):
        if root and holds(root, name):
            return Path(root) / name
    return None


def url_of(name: str, remote: Remote, mirror: str | None = None) -> str:
    """The address ``remote`` is fetched from: the canonical one, or under ``mirror``
    (else ``$FSTCHUNK_DATA_MIRROR``) as ``MIRROR/NAME/FILE``."""
    mirror = mirror or os.environ.get(MIRROR_ENV)
    if not mirror:
        return remote.url
    return f"{mirror.rstrip('/')}/{name}/{os.path.basename(urlsplit(remote.url).path)}"


def fetch(name: str, folder: str | os.PathLike | None = None, mirror: str | None = None,
          quiet: bool = False, timeout: float = TIMEOUT) -> Path:
    """The folder holding the corpus ``name`` (``conll2000``, ``conll2002``), fetched
    first where needed (module doc): into ``folder/NAME`` when ``folder`` is given,
    else found under ``$FSTCHUNK_DATA`` or fetched into :func:`default_dir`.  A
    progress bar on standard error when it is a terminal, unless ``quiet``."""
    spec = corpus(name)
    if folder is None:
        found = locate(name)
        if found is not None:
            return found
        folder = default_dir()
    target = Path(folder) / name
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DownloadError(f"{target}: cannot create the corpus folder ({e.strerror}); "
                            f"give another folder (--dir, folder=) or set {CACHE_ENV}") from None
    for remote in spec.files:
        dest = target / remote.name
        if dest.is_file():
            continue                                   # fetched before: no request
        url = url_of(name, remote, mirror)
        text = normalise(download(url, timeout, quiet, f"{name}/{remote.name}"),
                         remote.encoding, url)
        check_digest(text, remote, url)
        with atomic_write(dest, "wb", what=f"{name} corpus file") as fh:
            fh.write(text)
    return target


def download(url: str, timeout: float = TIMEOUT, quiet: bool = False,
             desc: str | None = None) -> bytes:
    """The bytes at ``url``; one DownloadError naming it when they cannot be had."""
    hint = (f"without network, put the files in FOLDER/NAME/ and set {DATA_ENV}=FOLDER, or "
            f"point {MIRROR_ENV} (or --mirror) at a copy of the site")
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "fstchunk"})
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            size = answer.headers.get("Content-Length")
            total = int(size) if size and size.isdigit() else None
            show = not quiet and is_terminal(sys.stderr)
            chunks: list[bytes] = []
            with progress(total, desc or url, unit="B", enabled=show, tty=True) as bar:
                while chunk := answer.read(1 << 16):
                    chunks.append(chunk)
                    bar.update(len(chunk))
    except urllib.error.HTTPError as e:
        raise DownloadError(f"{url}: the server answered {e.code} {e.reason}; {hint}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", None) or e
        raise DownloadError(f"{url}: cannot download ({reason}); {hint}") from None
    data = b"".join(chunks)
    if total is not None and len(data) != total:
        raise DownloadError(f"{url}: the download stopped after {len(data)} of {total} bytes; "
                            f"try again, or {hint}")
    return data


def normalise(raw: bytes, encoding: str, url: str = "<data>") -> bytes:
    """``raw`` (gzip-compressed or not, in ``encoding``) as fstchunk's UTF-8 CoNLL
    text: ``\\n`` line ends, trailing spaces and tabs dropped, one blank line between
    sentences and one at the end; a file fstchunk wrote stays as it is."""
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise DownloadError(f"{url}: not a complete gzip file ({e})") from None
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise DownloadError(f"{url}: line {line}: not {encoding} text ({e.reason}); a wrong "
                            f"file or mirror?") from None
    out: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = line.rstrip(" \t")
        if line or (out and out[-1]):
            out.append(line)
    if out and out[-1]:
        out.append("")
    return ("\n".join(out) + "\n").encode("utf-8") if out else b""


def check_digest(text: bytes, remote: Remote, url: str) -> None:
    """One DownloadError unless ``text`` is the normalised file ``remote`` names."""
    actual = hashlib.sha256(text).hexdigest()
    if actual != remote.sha256:
        raise DownloadError(f"{url}: checksum mismatch: expected sha256 {remote.sha256} "
                            f"(of the normalised UTF-8 file), got {actual}; the download is "
                            f"damaged or not the CoNLL file {remote.name}")


def status() -> list[tuple[str, str, str, str]]:
    """``(corpus/file, source URL, where it is here or "", note)`` of every file known,
    then the ones that are not public downloads (URL "", the note saying where)."""
    rows = []
    for spec in CORPORA.values():
        found = locate(spec.name)
        for remote in spec.files:
            where = str(found / remote.name) if found is not None else ""
            rows.append((f"{spec.name}/{remote.name}", url_of(spec.name, remote), where,
                         f"{remote.sentences} sentences"))
    rows.extend((name, "", "", note) for name, note in NOT_DOWNLOADABLE.items())
    return rows
