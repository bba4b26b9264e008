"""Fuzz suite (issue 16): every reader, the command line and the lattice/decoder front door
either work or raise one fstchunk error — never another exception, never a traceback.

* random bytes and random CoNLL-like text to every reader (CoNLL, eval, gold check,
  score files, model files);
* random option values to ``train``/``decode``/``eval``/``expected`` on a tiny file:
  exit 0, or exit 2 with one line on standard error;
* random score arrays, huge magnitudes included, to ``Lattice.from_scores`` and every
  decoder: valid tag sequences and finite expectations, or one FstchunkError.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.io.conll import read_conll
from fstchunk.decoding.decoders import decode_lattices, names as decoder_names
DECODERS = decoder_names()
from fstchunk.core.errors import FstchunkError
from fstchunk.evaluation.chunks import evaluate_file
from fstchunk.decoding.expected import expected_f
from fstchunk.io.gold import check_gold
from fstchunk.structures.lattice import Lattice
from fstchunk.models import load_model
from fstchunk.models.scorefile import load_lattices
from oracles import TINY_CONLL

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

TOKENS = st.sampled_from(["The", "dog", "DT", "NN", "B-NP", "I-NP", "O", "I-VP", "B-VP",
                          "E-NP", "S-NP", "X", "-DOCSTART-", "é", "\t", " ", "B-", "-",
                          "0", "\u00a0", "I"])
LINES = st.lists(st.lists(TOKENS, min_size=0, max_size=4).map(" ".join),
                 min_size=0, max_size=12).map("\n".join)
RAW = st.one_of(st.binary(max_size=200), LINES.map(lambda t: t.encode("utf-8")))


def _either(func, *args, **kwargs):
    """Run ``func``; a FstchunkError is an accepted outcome."""
    try:
        return func(*args, **kwargs)
    except FstchunkError as e:
        assert str(e) and "\n" not in str(e).strip(), repr(e)
        return None


# ------------------------------------------------------------------ readers
@FUZZ
@given(RAW)
def test_conll_readers(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("f") / "x.txt"
    path.write_bytes(data)
    sents = _either(read_conll, path)
    if sents:
        assert all(len(s) >= 1 for s in sents)
        for scheme in ("IOB2", "IOBES"):
            for mode in ("repair", "skip", "error"):
                rep = _either(check_gold, sents, scheme, -1, mode)
                if rep is not None:
                    assert all(enc.is_valid(s.column(-1), scheme) for s in rep.sentences)
    _either(evaluate_file, path)
    _either(evaluate_file, path, "IOB1")
    _either(read_conll, io.BytesIO(data))


@FUZZ
@given(st.binary(max_size=300))
def test_binary_readers_of_arrays(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("f") / "x.npz"
    path.write_bytes(data)
    _either(load_lattices, path)
    _either(load_model, path)


# ------------------------------------------------------------------ command line
TINY = TINY_CONLL

NUMBERS = st.sampled_from(["0", "1", "-1", "0.5", "nan", "inf", "-inf", "1e308", "1e-300",
                           "x", "", "3", "2.5", "-0"])
OPTIONS = {
    "train": {"--beta": NUMBERS, "--l2": NUMBERS, "--max-iter": NUMBERS,
              "--min-count": NUMBERS, "--dev-every": NUMBERS, "--checkpoint-every": NUMBERS,
              "--objective": st.sampled_from(["ml", "meu", "meu-corpus", "x"]),
              "--features": st.sampled_from(["tmpt1", "ner", "tmpt3-nopos", "bad"]),
              "--scheme": st.sampled_from(["IOB2", "IOBES", "BILOU", "iob1", "nope"]),
              "--columns": st.sampled_from(["word,pos,tag", "word,tag", "word,_,tag",
                                            "tag,word", "pos,tag", "word,pos", "a,b", ""]),
              "--model-type": st.sampled_from(["crf", "hmm"]),
              "--on-invalid": st.sampled_from(["repair", "skip", "error", "x"])},
    "decode": {"--beta": NUMBERS, "--k": NUMBERS,
               "--decoder": st.sampled_from(list(DECODERS) + ["bad"]),
               "--output-scheme": st.sampled_from(["IOB2", "IOE1", "BILOU", "nope"]),
               "--format": st.sampled_from(["conll", "jsonl", "html", "xml"]),
               "--min-confidence": NUMBERS},
    "eval": {"--beta": NUMBERS, "--scheme": st.sampled_from(["IOB2", "IOBES", "zzz"]),
             "--delimiter": st.sampled_from([" ", "\t", ",", "xx"])},
    "expected": {"--beta": NUMBERS, "--column": NUMBERS,
                 "--direction": st.sampled_from(["training", "decoding", "x"]),
                 "--method": st.sampled_from(["fast", "fst", "slow"]),
                 "--scheme": st.sampled_from(["IOB2", "IOE2", "x"])},
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    (d / "t.txt").write_text(TINY)
    (d / "g.txt").write_text(TINY.replace("DT B-NP", "B-NP B-NP").replace(
        "NN I-NP", "I-NP I-NP").replace("VBZ B-VP", "B-VP O").replace(". . O", ". O O"))
    assert main(["train", "--train", str(d / "t.txt"), "--model-type", "hmm",
                 "-o", str(d / "m.npz")]) == 0
    return d


def _run_cli(argv, capsys) -> None:
    try:
        code = main(argv)
    except SystemExit as e:                   # argparse: usage error
        code = e.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        assert err.strip(), argv
        assert len([x for x in err.strip().splitlines() if ": error:" in x]) == 1, err


@pytest.mark.parametrize("command", list(OPTIONS))
def test_random_option_values(command, tiny, capsys):
    base = {"train": ["train", "--train", str(tiny / "t.txt"), "-o", str(tiny / "out.npz"),
                      "--quiet"],
            "decode": ["decode", "--model", str(tiny / "m.npz"), "--input", str(tiny / "t.txt"),
                       "-o", str(tiny / "out.txt")],
            "eval": ["eval", str(tiny / "g.txt")],
            "expected": ["expected", str(tiny / "t.txt"), "--model", str(tiny / "m.npz")]
            }[command]
    picks = st.dictionaries(st.sampled_from(sorted(OPTIONS[command])), st.just(None),
                            max_size=4).flatmap(
        lambda keys: st.fixed_dictionaries({k: OPTIONS[command][k] for k in keys}))

    @settings(max_examples=40 if command != "train" else 25, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(picks)
    def check(opts):
        argv = list(base)
        for k, v in opts.items():
            argv += [f"{k}={v}"]
        if command == "train" and opts.get("--max-iter", "1") not in ("1", "2", "0.5"):
            argv += ["--max-iter=3"]          # argparse keeps the last value: bounded runtime
        _run_cli(argv, capsys)

    check()


# ------------------------------------------------------------------ lattices and decoders
TAGS = ("O", "B-NP", "I-NP", "B-VP", "I-VP")
SCALES = st.sampled_from([1e-300, 1e-3, 1.0, 30.0, 1e3, 1e8, 1e150, 1e300])


@FUZZ
@given(st.integers(1, 6), SCALES, st.integers(0, 2**32 - 1),
       st.sampled_from(["normal", "inf", "nan", "huge"]))
def test_random_scores_to_lattices_and_decoders(n, scale, seed, kind):
    rng = np.random.default_rng(seed)
    emis = rng.normal(size=(n, len(TAGS))) * scale
    trans = rng.normal(size=(len(TAGS), len(TAGS))) * scale
    if kind == "inf":
        emis[rng.integers(n), rng.integers(len(TAGS))] = -np.inf
    elif kind == "nan":
        trans[rng.integers(len(TAGS)), rng.integers(len(TAGS))] = np.nan
    elif kind == "huge":
        emis[0, 0] = 1e308
    lat = _either(Lattice.from_scores, TAGS, emis, trans)
    if lat is None:
        return
    for decoder in DECODERS:
        got = _either(decode_lattices, [lat], decoder, 1.0, 5 if decoder == "meu-kbest" else 20)
        if got is not None:
            assert len(got[0]) == n and enc.is_valid(got[0], "IOB2"), (decoder, got)
    ref = ["B-NP"] + ["I-NP"] * (n - 1)
    r = _either(expected_f, lat, reference=ref, beta=1.0, method="fast")
    if r is not None:
        assert all(math.isfinite(v) and -1e-9 <= v <= 1 + 1e-9
                   for v in (r.f, r.precision, r.recall)), r
    assume(True)
