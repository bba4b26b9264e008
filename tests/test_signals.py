"""SIGTERM is Ctrl-C (issue 32, item 10): a command killed by ``kill`` or a job
scheduler leaves no temporary behind, training writes its checkpoint, the exit
status is 143 with one line on standard error."""

import os
import signal
import subprocess
import sys
import time

import pytest


def start(*argv, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen([sys.executable, "-m", "fstchunk", *map(str, argv)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def wait_for(predicate, proc, timeout=120.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the command ended before the signal: {proc.returncode} {err}")
        time.sleep(0.02)
    proc.kill()
    pytest.fail("timed out waiting for the command to start its work")


def temporaries(folder):
    return [p.name for p in folder.iterdir() if ".tmp" in p.name]


@pytest.fixture(scope="module")
def model_and_input(tmp_path_factory, corpus):
    from fstchunk.io.conll import read_conll
    from fstchunk.models.hmm import HMM
    d = tmp_path_factory.mktemp("sig")
    HMM().fit(read_conll(corpus("conll2000", "train.txt"))[:2000]).save(d / "hmm.npz")
    return d / "hmm.npz", os.path.abspath(corpus("conll2000", "train.txt"))


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_sigterm_during_decode_leaves_no_temporary(model_and_input, tmp_path, workers):
    model, inp = model_and_input
    out = tmp_path / "out.txt"
    proc = start("decode", "--model", model, "--input", inp, "--decoder", "meu", "-o", out,
                 *workers, cwd=tmp_path)
    wait_for(lambda: temporaries(tmp_path), proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "fstchunk decode: terminated"
    assert "Traceback" not in err
    assert temporaries(tmp_path) == [] and not out.exists()


def test_sigterm_during_training_writes_the_checkpoint(corpus, tmp_path):
    from fstchunk.io.conll import read_conll, write_conll
    write_conll(read_conll(corpus("conll2000", "train.txt"))[:300], tmp_path / "train.txt")
    model = tmp_path / "m.npz"
    proc = start("train", "--train", "train.txt", "--max-iter", "500", "--checkpoint-every",
                 "1", "--quiet", "-o", "m.npz", cwd=tmp_path)
    ckpt = tmp_path / "m.npz.ckpt"
    wait_for(ckpt.exists, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "fstchunk train: terminated" in err and "m.npz.ckpt" in err
    assert "Traceback" not in err
    assert temporaries(tmp_path) == [] and ckpt.exists() and not model.exists()
