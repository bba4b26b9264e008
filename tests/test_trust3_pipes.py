"""Issue 43, item 3: every input is read once, so a pipe, a FIFO, process substitution,
``/dev/stdin`` and ``-`` give exactly what the file gives, for every command and every
input option; ``-o -`` is standard output where the output is text.

The FIFOs here behave as ``<(cat FILE)`` does: the content is written once, and a
second opening reads nothing (an empty pipe), never hangs."""

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from fstchunk.cli import main
from fstchunk.io.conll import read_conll, write_conll
from fstchunk.io.crfsuite import Sequence, write_data
from fstchunk.models import load_model
from fstchunk.models.crf import CRF
from fstchunk.models.features import TEMPLATES, token_features
from fstchunk.models.hmm import HMM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Fifo:
    """A named pipe holding ``data`` once, as ``<(cat FILE)`` does: the first reader
    gets ``data``; any later opening reads nothing at once (no hang)."""

    def __init__(self, path, data: bytes):
        self.path, self.data = str(path), data
        os.mkfifo(self.path)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            with open(self.path, "wb") as fh:          # waits for the first reader
                fh.write(self.data)
        except OSError:                                # the reader stopped early
            pass
        while not self.done.wait(0.02):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:                            # nobody waiting to read
                continue
            os.close(fd)                               # a second reader: end of file

    def close(self) -> None:
        self.done.set()
        try:                                           # a writer still waiting: release it
            os.close(os.open(self.path, os.O_RDONLY | os.O_NONBLOCK))
        except OSError:
            pass
        self.thread.join(5)


@pytest.fixture
def pipe(tmp_path):
    """pipe(file) -> the path of a FIFO that holds the file's bytes once."""
    made = []

    def make(path):
        f = Fifo(tmp_path / f"fifo{len(made)}", open(path, "rb").read())
        made.append(f)
        return f.path
    yield make
    for f in made:
        f.close()


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def data(tmp_path_factory, corpus):
    """Training, dev and held-out slices of CoNLL-2000 (more than a pipe's 64 KiB
    buffer for the training file), a CRF, a max-margin CRF and CRFsuite copies."""
    d = tmp_path_factory.mktemp("pipes")
    sents = read_conll(corpus("conll2000", "train.txt"))
    train, dev, held = sents[:400], sents[400:460], sents[460:500]
    write_conll(train[:150], d / "small.txt")         # where the pipe is not --train
    for name, part in (("train", train), ("dev", dev), ("held", held)):
        write_conll(part, d / f"{name}.txt")

        def items(s):
            return [dict.fromkeys(f, 1.0) for f in token_features(s.column(0), s.column(1),
                                                                  "tmpt1")]
        write_data(d / f"{name}.crfsuite", [Sequence(s.column(2), items(s)) for s in part])
    assert os.path.getsize(d / "train.txt") > 65536
    CRF("tmpt1", max_iter=15).fit(train).save(d / "crf.npz")
    CRF("tmpt1", objective="max-margin", max_iter=10).fit(train[:150]).save(d / "mm.npz")
    HMM().fit(train).save(d / "hmm.npz")
    (d / "my.tpl").write_text(TEMPLATES["tmpt1"].read_text(encoding="utf-8"))
    return d


def test_decode_reads_a_fifo_dev_stdin_and_dash_as_the_file(data, pipe, capsys, tmp_path):
    want = run(capsys, "decode", "--model", data / "crf.npz", "--input", data / "dev.txt")
    assert want[0] == 0 and want[1]
    assert run(capsys, "decode", "--model", data / "crf.npz", "--input",
               pipe(data / "dev.txt")) == want
    assert run(capsys, "decode", "--model", pipe(data / "crf.npz"), "--input",
               data / "dev.txt") == want                          # a model from a pipe
    for fmt in ("jsonl", "html"):
        file = run(capsys, "decode", "--model", data / "crf.npz", "--input", data / "dev.txt",
                   "--format", fmt)
        assert run(capsys, "decode", "--model", data / "crf.npz", "--input",
                   pipe(data / "dev.txt"), "--format", fmt) == file
    # -o - is standard output, not a file named '-'
    os.chdir(tmp_path)
    assert run(capsys, "decode", "--model", data / "crf.npz", "--input", data / "dev.txt",
               "-o", "-") == want
    assert not os.path.exists(tmp_path / "-")


def _cli(*argv, stdin: bytes):
    return subprocess.run([sys.executable, "-m", "fstchunk", *map(str, argv)], input=stdin,
                          capture_output=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": ROOT})


def test_standard_input_through_a_real_pipe(data):
    """/dev/stdin and - read a pipe from another process (the AssertionError of
    ``decode --input /dev/stdin``), for decode, eval and expected."""
    text = (data / "dev.txt").read_bytes()
    want = _cli("decode", "--model", data / "crf.npz", "--input", data / "dev.txt", stdin=b"")
    assert want.returncode == 0, want.stderr
    for name in ("/dev/stdin", "-"):
        got = _cli("decode", "--model", data / "crf.npz", "--input", name, stdin=text)
        assert (got.returncode, got.stdout) == (0, want.stdout), got.stderr
    decoded = want.stdout
    ev = _cli("eval", data / "dev.txt", stdin=b"")
    ev_file = (data / "decoded.txt")
    ev_file.write_bytes(decoded)
    want_eval = _cli("eval", ev_file, stdin=b"")
    got_eval = _cli("eval", "-", stdin=decoded)
    assert got_eval.returncode == 0 and got_eval.stdout == want_eval.stdout, got_eval.stderr
    assert ev.returncode == 2                               # (a file without predictions)
    want_exp = _cli("expected", data / "held.txt", "--model", data / "crf.npz", "--json",
                    stdin=b"")
    got_exp = _cli("expected", "-", "--model", data / "crf.npz", "--json",
                   stdin=(data / "held.txt").read_bytes())
    assert got_exp.returncode == 0 and got_exp.stdout == want_exp.stdout, got_exp.stderr
    bad = _cli("decode", "--model", data / "crf.npz", "--input", "-", stdin=b"")
    assert bad.returncode == 2 and b"<stdin>: no sentences" in bad.stderr, bad.stderr


def test_train_reads_every_input_once(data, pipe, capsys, tmp_path):
    """--train, --dev, --calibrate, --features and --init through pipes train the model
    the files train (the same dev F, temperature and weights)."""
    def train(*extra, out):
        code, stdout, err = run(capsys, "train", "--train", *extra[:1], *extra[1:],
                                "--max-iter", "4", "--quiet", "-o", out)
        assert code == 0, err
        return stdout, load_model(out)
    files = train(data / "train.txt", "--dev", data / "dev.txt", "--features",
                  data / "my.tpl", out=tmp_path / "a.npz")
    piped = train(pipe(data / "train.txt"), "--dev", pipe(data / "dev.txt"), "--features",
                  pipe(data / "my.tpl"), out=tmp_path / "b.npz")
    assert files[0].replace("a.npz", "b.npz") == piped[0] and "dev F" in piped[0]
    np.testing.assert_allclose(piped[1].theta_, files[1].theta_, rtol=1e-9, atol=1e-12)
    assert piped[1].settings_["dev_f"] == pytest.approx(files[1].settings_["dev_f"], abs=1e-9)
    # --calibrate and --init
    cal = [train(data / "small.txt", "--objective", "max-margin", "--calibrate", held,
                 out=tmp_path / f"c{k}.npz")[1].temperature
           for k, held in enumerate((data / "held.txt", pipe(data / "held.txt")))]
    assert cal[1] == pytest.approx(cal[0], rel=1e-9)
    init = [train(data / "small.txt", "--init", m, out=tmp_path / f"i{k}.npz")[1].theta_
            for k, m in enumerate((data / "crf.npz", pipe(data / "crf.npz")))]
    np.testing.assert_allclose(init[1], init[0], rtol=1e-9, atol=1e-12)


def test_calibrate_select_and_expected_read_pipes(data, pipe, capsys, tmp_path):
    temps = []
    for k, (model, held) in enumerate(((data / "mm.npz", data / "held.txt"),
                                       (pipe(data / "mm.npz"), pipe(data / "held.txt")))):
        code, _, err = run(capsys, "calibrate", "--model", model, "--input", held, "-o",
                           tmp_path / f"cal{k}.npz")
        assert code == 0, err
        temps.append(load_model(tmp_path / f"cal{k}.npz").temperature)
    assert temps[1] == pytest.approx(temps[0], rel=1e-9)
    want = run(capsys, "select", "--model", data / "crf.npz", "--input", data / "dev.txt",
               "--budget", "5", "-o", "-")
    assert want[0] == 0 and want[1].count("\n\n") == 5
    assert "to standard output" in want[2]                # the summary is not in the data
    assert run(capsys, "select", "--model", pipe(data / "crf.npz"), "--input",
               pipe(data / "dev.txt"), "--budget", "5", "-o", "-") == want
    want = run(capsys, "expected", data / "held.txt", "--model", data / "crf.npz", "--json")
    assert run(capsys, "expected", pipe(data / "held.txt"), "--model",
               pipe(data / "crf.npz"), "--json") == want


def test_score_files_through_pipes(data, pipe, capsys, tmp_path):
    """expected --scores (.npz) and decode --scores (.npz and JSONL) from pipes."""
    from fstchunk.models.scorefile import save_scores
    held = read_conll(data / "held.txt")
    tags = ["O", "B-NP", "I-NP"]
    rng = np.random.default_rng(0)
    emissions = [rng.normal(size=(len(s), 3)) for s in held]
    trans = rng.normal(size=(3, 3))
    gold = tmp_path / "gold.txt"                 # NP chunks only, as the scores know them
    write_conll([[[r[0], t if t.endswith("-NP") else "O"] for r, t in zip(s.rows,
                                                                           s.column(2))]
                 for s in held], gold)
    scores = tmp_path / "s.npz"
    save_scores(scores, tags, emissions, trans)
    want = run(capsys, "expected", gold, "--scores", scores, "--json")
    assert want[0] == 0, want[2]
    assert run(capsys, "expected", pipe(gold), "--scores", pipe(scores), "--json") == want
    want = run(capsys, "decode", "--scores", scores, "--input", gold)
    assert want[0] == 0, want[2]
    assert run(capsys, "decode", "--scores", pipe(scores), "--input", pipe(gold)) == want
    jsonl = tmp_path / "s.jsonl"
    with open(jsonl, "w") as fh:
        for s, e in zip(held, emissions):
            fh.write(json.dumps({"tokens": s.column(0), "tags": tags, "scores": e.tolist(),
                                 "transitions": trans.tolist()}) + "\n")
    want = run(capsys, "decode", "--scores", jsonl, "--scheme", "IOB2")
    assert want[0] == 0, want[2]
    assert run(capsys, "decode", "--scores", pipe(jsonl), "--scheme", "IOB2") == want


def test_crfsuite_data_and_models_through_pipes(data, pipe, capsys, tmp_path):
    """train/decode/expected/calibrate --format crfsuite and import crfsuite from pipes."""
    pycrfsuite = pytest.importorskip("pycrfsuite")
    code, _, err = run(capsys, "train", "--format", "crfsuite", "--train",
                       pipe(data / "train.crfsuite"), "--max-iter", "5", "--quiet",
                       "-o", tmp_path / "p.npz")
    assert code == 0, err
    code, _, err = run(capsys, "train", "--format", "crfsuite", "--train",
                       data / "train.crfsuite", "--max-iter", "5", "--quiet",
                       "-o", tmp_path / "f.npz")
    assert code == 0, err
    np.testing.assert_allclose(load_model(tmp_path / "p.npz").theta_,
                               load_model(tmp_path / "f.npz").theta_, rtol=1e-9, atol=1e-12)
    m = tmp_path / "f.npz"
    for argv in (["decode", "--model", m, "--format", "crfsuite", "--input", "{dev}"],
                 ["expected", "{dev}", "--format", "crfsuite", "--model", m, "--json"]):
        file = run(capsys, *[data / "dev.crfsuite" if a == "{dev}" else a for a in argv])
        assert file[0] == 0, file[2]
        assert run(capsys, *[pipe(data / "dev.crfsuite") if a == "{dev}" else a
                             for a in argv]) == file
    trainer = pycrfsuite.Trainer(verbose=False)
    for s in read_conll(data / "dev.txt"):
        trainer.append(pycrfsuite.ItemSequence(
            [dict.fromkeys(f, 1.0) for f in token_features(s.column(0), s.column(1),
                                                            "tmpt1")]), s.column(2))
    trainer.set_params({"max_iterations": 5})
    trainer.train(str(tmp_path / "m.crfsuite"))
    outs = []
    for k, src in enumerate((tmp_path / "m.crfsuite", pipe(tmp_path / "m.crfsuite"))):
        code, out, err = run(capsys, "import", "crfsuite", src, "--scheme", "IOB2", "-o",
                             tmp_path / f"imp{k}.npz")
        assert code == 0, err
        outs.append(load_model(tmp_path / f"imp{k}.npz").theta_)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_grammar_from_data_and_segment_commands_read_pipes(data, pipe, capsys, tmp_path,
                                                         corpus):
    want = run(capsys, "grammar", "info", "validity", "--from-data", data / "dev.txt")
    assert want[0] == 0
    assert run(capsys, "grammar", "info", "validity", "--from-data",
               pipe(data / "dev.txt")) == want
    genia = tmp_path / "g.jsonl"
    with open(corpus("genia", "train.jsonl"), encoding="utf-8") as fh:
        genia.write_text("".join(next(fh) for _ in range(60)), encoding="utf-8")
    models = []
    for k, src in enumerate((genia, pipe(genia))):
        out = tmp_path / f"seg{k}.npz"
        code, _, err = run(capsys, "segment", "train", "--train", src, "--dev", src,
                           "--max-iter", "1", "--hash-bits", "12", "--quiet", "-o", out)
        assert code == 0, err
        models.append(load_model(out))
    np.testing.assert_allclose(models[1].W_, models[0].W_, rtol=1e-12)
    m = tmp_path / "seg0.npz"
    want = run(capsys, "segment", "decode", "--model", m, "--input", genia)
    assert want[0] == 0 and want[1]
    assert run(capsys, "segment", "decode", "--model", pipe(m), "--input",
               pipe(genia)) == want
    want = run(capsys, "segment", "eval", genia, genia)
    assert run(capsys, "segment", "eval", pipe(genia), pipe(genia)) == want
    conll = data / "dev.txt"                                  # CoNLL: its lines echoed
    want = run(capsys, "segment", "decode", "--model", m, "--input", conll)
    assert want[0] == 0 and want[1]
    assert run(capsys, "segment", "decode", "--model", m, "--input", pipe(conll),
               "-o", "-") == want


def test_joint_commands_read_pipes(data, pipe, capsys, tmp_path):
    models = []
    for k, (tr, dev, cal) in enumerate((
            (data / "train.txt", data / "held.txt", data / "held.txt"),
            (pipe(data / "train.txt"), pipe(data / "held.txt"), pipe(data / "held.txt")))):
        out = tmp_path / f"j{k}.npz"
        code, stdout, err = run(capsys, "joint", "train", "--train", tr, "--dev", dev,
                                "--calibrate", cal, "--collapse-pos",
                                "--np-only", "--sentences", "120", "--algorithm",
                                "perceptron", "--max-iter", "1", "--quiet", "-o", out)
        assert code == 0, err
        models.append((stdout.replace(f"j{k}.npz", "J").replace(str(cal), "CAL"),
                       load_model(out)))
    assert models[0][0] == models[1][0]
    assert models[1][1].temperature == pytest.approx(models[0][1].temperature, rel=1e-9)
    m = tmp_path / "j0.npz"
    want = run(capsys, "joint", "decode", "--model", m, "--input", data / "held.txt")
    assert want[0] == 0 and want[1]
    assert run(capsys, "joint", "decode", "--model", pipe(m), "--input",
               pipe(data / "held.txt"), "-o", "-") == want
    code, _, err = run(capsys, "joint", "calibrate", "--model", pipe(m), "--input",
                       pipe(data / "held.txt"), "-o", tmp_path / "jc.npz")
    assert code == 0, err


def test_dash_twice_and_binary_outputs_to_dash_are_refused(data, capsys):
    code, out, err = run(capsys, "expected", "-", "--model", "-")
    assert code == 2 and "FILE and --model are all - (standard input)" in err, err
    for argv in (["train", "--train", data / "train.txt", "-o", "-"],
                 ["import", "crfsuite", data / "crf.npz", "-o", "-"],
                 ["grammar", "export", "validity", "-o", "-"],
                 ["calibrate", "--model", data / "mm.npz", "--input", data / "held.txt",
                  "-o", "-"]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and "-o -:" in err and "give a file name" in err, (argv, err)
        assert len(err.strip().splitlines()) == 1


def test_a_pipe_beyond_the_held_bytes_streams_once(data, pipe, capsys, monkeypatch):
    """Beyond sources.HOLD_BYTES a pipe is streamed, not kept: decode (its last reading
    streams) gives what the file gives; a command that reads the input twice past them
    is refused, naming the input, instead of reading less."""
    from fstchunk.core import sources
    monkeypatch.setattr(sources, "HOLD_BYTES", 4096)
    assert os.path.getsize(data / "dev.txt") > 4 * 4096
    want = run(capsys, "decode", "--model", data / "crf.npz", "--input", data / "dev.txt")
    assert run(capsys, "decode", "--model", data / "crf.npz", "--input",
               pipe(data / "dev.txt")) == want
    fifo = pipe(data / "train.txt")
    code, _, err = run(capsys, "train", "--train", fifo, "--features", "tmpt1",
                       "--max-iter", "1", "-o", data / "x.npz")
    assert code == 2 and f"{fifo}: a pipe or standard input larger than" in err
    assert "give a file instead" in err and "Traceback" not in err


def test_held_readers_share_the_kept_bytes_and_seek_in_them(tmp_path):
    from fstchunk.core import sources
    payload = bytes(range(256)) * 40
    f = Fifo(tmp_path / "f", payload)
    try:
        with sources.held():
            a = sources.open_binary(f.path)
            head = a.read(10)
            a.seek(0)
            assert a.read(10) == head == payload[:10]
            b = sources.open_binary(f.path)
            assert b.read() == payload and a.read() == payload[10:]
            assert sources.read_bytes(f.path) == payload
    finally:
        f.close()
