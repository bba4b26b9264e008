"""Decoding, expected F and segment decoding over local processes and a real Dask
LocalCluster (issue 20).

Oracle: the single-process run.  The library gives the same Decoded per sentence;
``decode``, ``expected`` and ``segment decode`` with ``--workers 2`` or
``--scheduler`` write byte-identical output; sentence errors cross the processes
and land on their own lines; a worker killed during decoding (a forked one, and a
Dask worker SIGKILLed mid-stream) costs nothing: no sentence lost or duplicated.
Input is read lazily: the driver holds only the blocks in flight.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

import fstchunk.decoding.batch as batch
import fstchunk.runtime.blocks as blocks
from fstchunk.cli import main
from fstchunk.io.conll import read_conll
from fstchunk.models.crf import CRF
from fstchunk.models.segment import SegmentModel
from fstchunk.io.segments import read_segments
from fstchunk.runtime import scale

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def setup(corpus, tmp_path_factory):
    """A small CRF trained on 80 sentences, its file, and 120 dev sentences as input."""
    d = tmp_path_factory.mktemp("scale_decode")
    crf = CRF("tmpt1")
    data = crf._prepare(read_conll(corpus("conll2000", "train.txt"))[:80])
    crf.set_params(objective="ml", l2=1e-3, max_iter=15).fit(data)
    model = d / "crf.npz"
    crf.save(model)
    inp = d / "in.txt"
    src = open(corpus("conll2000", "dev.txt"), encoding="utf-8").read().split("\n\n")[:120]
    inp.write_text("-DOCSTART- -X- O\n\n" + "\n\n".join(src) + "\n\n\n")
    return crf, model, inp, read_conll(inp)


@pytest.fixture(scope="module")
def dask():
    ex = scale.DaskExecutor("local:2")
    yield ex
    ex.close()


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of ~100 tokens, so that 120 sentences make ~28 tasks."""
    monkeypatch.setattr(blocks, "BLOCK_TOKENS", 100)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("decoder", ["map", "meu", "meu-corpus", "posterior"])
def test_library_decoding_matches_one_process(setup, dask, small_blocks, decoder):
    crf, _, _, sents = setup
    want = list(batch.iter_decode_sentences(crf, sents, decoder, output_scheme="IOBES"))
    for ex in (scale.LocalExecutor(2), dask):
        got = list(batch.iter_decode_sentences(crf, iter(sents), decoder,
                                               output_scheme="IOBES", executor=ex))
        assert [(d.index, d.tags, d.error) for d in got] == \
            [(d.index, d.tags, d.error) for d in want]
        assert [d.sentence.lines for d in got] == [s.lines for s in sents]


def test_cli_decode_is_byte_identical(setup, dask, small_blocks, capsys, tmp_path):
    _, model, inp, _ = setup
    for decoder in ("map", "meu-corpus"):
        code, want, err = run(capsys, "decode", "--model", model, "--input", inp,
                              "--decoder", decoder)
        assert code == 0 and err == ""
        for extra in (["--workers", "2"], ["--scheduler", dask.address]):
            out = tmp_path / "out.txt"
            code, stdout, err = run(capsys, "decode", "--model", model, "--input", inp,
                                    "--decoder", decoder, "-o", out, *extra)
            assert code == 0 and err == "" and stdout == ""
            assert out.read_text() == want


def test_sentence_errors_cross_processes_to_their_own_lines(setup, dask, small_blocks, capsys):
    _, model, inp, sents = setup
    argv = ["decode", "--model", model, "--input", inp, "--decoder", "meu",
            "--memory-budget", "200K"]                 # the longest sentences do not fit
    code, want, err_want = run(capsys, *argv)
    assert code == 1 and "<error>" in want and 0 < err_want.count("not decoded, tagged") < \
        len(sents)
    for extra in (["--workers", "2"], ["--scheduler", dask.address]):
        code, out, err = run(capsys, *argv, *extra)
        assert (code, out, err) == (1, want, err_want)


def test_cli_expected_is_identical(setup, dask, small_blocks, capsys):
    _, model, inp, sents = setup
    for fmt in ([], ["--json"]):
        argv = ["expected", inp, "--model", model, *fmt]
        code, want, _ = run(capsys, *argv)
        assert code == 0
        for extra in (["--workers", "2"], ["--scheduler", dask.address]):
            assert run(capsys, *argv, *extra)[:2] == (0, want)
    doc = json.loads(want)
    assert len(doc["sentences"]) == len(sents) == doc["summary"]["sentences"]


def test_cli_segment_decode_is_identical(corpus, dask, small_blocks, capsys, tmp_path):
    sents = read_segments(corpus("genia", "train.jsonl"))[:150]
    model = SegmentModel(D=2 ** 16, max_gap=1, max_iter=1).fit(sents[:100])
    path = tmp_path / "seg.npz"
    model.save(path)
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"tokens": s.tokens}) + "\n" for s in sents[100:]))
    argv = ["segment", "decode", "--model", path, "--input", inp]
    code, want, _ = run(capsys, *argv)
    assert code == 0 and len(want.splitlines()) == 50
    for extra in (["--workers", "2"], ["--scheduler", dask.address]):
        assert run(capsys, *argv, *extra)[:2] == (0, want)


def test_a_killed_local_worker_during_decoding_loses_nothing(setup, small_blocks, tmp_path,
                                                            monkeypatch):
    crf, _, _, sents = setup
    want = batch.decode_sentences(crf, sents, "meu")
    flag = tmp_path / "killed"
    real = batch._decode_block

    def dies_once(job, block):
        if not flag.exists():
            flag.write_text("x")
            os._exit(9)                        # the forked worker dies without answering
        return real(job, block)
    monkeypatch.setattr(batch, "_decode_block", dies_once)
    got = batch.decode_sentences(crf, sents, "meu", executor=scale.LocalExecutor(2))
    assert flag.exists() and got == want


def test_a_dask_worker_killed_mid_stream_loses_nothing(setup, dask, small_blocks):
    crf, _, _, sents = setup
    want = batch.decode_sentences(crf, sents, "meu")
    it = batch.iter_decode_sentences(crf, iter(sents), "meu", executor=dask)
    got = [next(it)]                            # tasks are in flight on both workers
    pid = next(iter(dask.client.run(os.getpid).values()))
    os.kill(pid, signal.SIGKILL)
    got += list(it)
    assert [d.index for d in got] == list(range(len(sents)))
    assert [d.tags for d in got] == want and all(d.error is None for d in got)
    deadline = time.time() + 30
    while len(dask.client.scheduler_info()["workers"]) < 2 and time.time() < deadline:
        time.sleep(0.2)                         # the nanny restarts it for the next tests


def test_input_is_read_lazily_on_an_executor(setup, small_blocks):
    crf, _, _, sents = setup
    pulled = []

    def source():
        for s in sents:
            pulled.append(s)
            yield s
    it = batch.iter_decode_sentences(crf, source(), "map", executor=scale.LocalExecutor(2))
    assert pulled == []
    next(it)
    # one window: WINDOW blocks per worker of ~100 tokens (~4 sentences each)
    assert sum(map(len, pulled)) < scale.WINDOW * 2 * (blocks.BLOCK_TOKENS + 60)
    assert len(pulled) < len(sents)
    assert len(list(it)) == len(sents) - 1
