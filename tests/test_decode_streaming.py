"""Streaming ``fstchunk decode`` (issue 17): each sentence written as soon as it is
decoded, a sentence that cannot be decoded reported on one line and tagged
``<error>`` while the others are written, exit status 1, ``--memory-budget``
passed down to the MEU decoder; ``iter_decode_sentences`` underneath."""

import argparse
import io
import os
import sys

import pytest

import fstchunk.decoding.batch as batch
import fstchunk.runtime.blocks as blocks
import fstchunk.decoding.decode as dec
import fstchunk.decoding.decoders as decoders
import fstchunk.engine.inference as inference
from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.cli.common import memory_size
from fstchunk.io.conll import iter_lines, read_conll
from fstchunk.core.errors import BudgetError, FstchunkError, InputError
from fstchunk.evaluation.chunks import UNDECODED
from fstchunk.models.hmm import HMM
from fstchunk.core.outputs import temp_path
from oracles import TINY_CONLL

# TINY_CONLL behind a document header and with extra blank lines: token lines of the
# three sentences are 3-6 (4 tokens), 8-10 (3 tokens) and 13-14 (2 tokens)
SOURCE = "-DOCSTART- -X- O\n\n" + TINY_CONLL.replace("\n\nDogs", "\n\n\nDogs")
FIRST_LINES = (3, 8, 13)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path):
    """(input file, HMM model file, the HMM) on the tiny corpus."""
    inp = tmp_path / "in.txt"
    inp.write_text(SOURCE)
    hmm = HMM().fit(read_conll(inp))
    model = tmp_path / "hmm.npz"
    hmm.save(model)
    return inp, model, hmm


def previous_output(inp, hmm, decoder: str) -> str:
    """What decode wrote before streaming: every lattice built, every sentence decoded
    (decode_lattices over the whole file), then the lines echoed with their tags."""
    sents = read_conll(inp)
    preds = decoders.decode_lattices(hmm.lattices(sents), decoder, 1.0, 20)
    tag_of = {line: t for s, p in zip(sents, preds)
              for line, t in zip(s.lines, enc.convert(p, hmm.scheme_, "IOB2"))}
    out = []
    for lineno, raw in iter_lines(inp):
        text = raw.rstrip("\r\n")
        if lineno in tag_of:
            text += " " + tag_of[lineno]
        elif text.startswith("-DOCSTART-"):       # conlleval.pl reads it as a token
            text += " O"
        out.append(text + "\n")
    return "".join(out)


def fail_meu_on_length(monkeypatch, n: int, error: BaseException):
    """The MEU decoder raises ``error`` on every sentence of ``n`` tokens (its batched
    path replaced by the per-sentence one, which raises)."""
    real = decoders.MEU.decode_one

    def decode_one(self, lattice):
        if lattice.n == n:
            raise error
        return real(self, lattice)
    monkeypatch.setattr(decoders.MEU, "decode_one", decode_one)
    monkeypatch.setattr(decoders.MEU, "decode_batch", decoders.Decoder.decode_batch)


# ------------------------------------------------------------------ the library
@pytest.mark.parametrize("decoder", decoders.names())
def test_iter_decode_sentences_gives_what_decode_lattices_gives(files, decoder):
    inp, _, hmm = files
    sents = read_conll(inp)
    want = [enc.convert(p, hmm.scheme_, "IOBES")
            for p in decoders.decode_lattices(hmm.lattices(sents), decoder, 1.0, 20)]
    got = list(batch.iter_decode_sentences(hmm, sents, decoder, output_scheme="IOBES"))
    assert [d.index for d in got] == [0, 1, 2] and all(d.error is None for d in got)
    assert [d.tags for d in got] == want
    assert batch.decode_sentences(hmm, sents, decoder, output_scheme="IOBES") == want


def test_lattices_are_built_in_small_blocks_and_sentences_read_lazily(files, monkeypatch):
    inp, _, hmm = files
    sents = read_conll(inp) * 4
    monkeypatch.setattr(blocks, "BLOCK_TOKENS", 5)
    calls, pulled = [], []
    real = hmm.lattices
    monkeypatch.setattr(hmm, "lattices", lambda ss: calls.append(len(ss)) or real(ss))

    def source():
        for s in sents:
            pulled.append(s)
            yield s
    it = batch.iter_decode_sentences(hmm, source(), "meu")
    assert pulled == []                                   # nothing read before asked
    first = next(it)
    assert first.index == 0 and len(pulled) <= 2
    rest = list(it)
    assert max(calls) <= 2 and sum(calls) == len(sents)
    assert [d.tags for d in [first] + rest] == batch.decode_sentences(hmm, sents, "meu")


def test_a_failing_sentence_is_its_own_error_and_decode_sentences_raises_it(files,
                                                                           monkeypatch):
    inp, _, hmm = files
    sents = read_conll(inp)
    want = batch.decode_sentences(hmm, sents, "meu")
    fail_meu_on_length(monkeypatch, 3, BudgetError("too big", 10.0, 1.0))
    got = list(batch.iter_decode_sentences(hmm, sents, "meu"))
    assert [d.tags for d in got] == [want[0], None, want[2]]
    assert isinstance(got[1].error, BudgetError) and got[0].error is got[2].error is None
    with pytest.raises(BudgetError, match="too big"):
        batch.decode_sentences(hmm, sents, "meu")


def test_a_sentence_whose_lattice_fails_is_isolated_from_its_block(files, monkeypatch):
    inp, _, hmm = files
    sents = read_conll(inp)
    want = batch.decode_sentences(hmm, sents, "meu-corpus")
    real = HMM.lattice

    def lattice(self, s):
        if len(s) == 2:
            raise MemoryError
        return real(self, s)
    monkeypatch.setattr(HMM, "lattice", lattice)
    for decoder in ("map", "meu-corpus"):
        got = list(batch.iter_decode_sentences(hmm, sents, decoder))
        assert [d.error is None for d in got] == [True, True, False]
        assert isinstance(got[2].error, MemoryError) and got[2].tags is None
        assert [len(d.tags) for d in got[:2]] == [len(w) for w in want[:2]]


def test_settings_are_refused_before_any_work(files):
    _, _, hmm = files
    never = iter(())       # no sentence is needed to refuse the settings
    for kw, match in (({"decoder": "nosuch"}, "unknown decoder"),
                      ({"decoder": "meu", "beta": -1.0}, "beta"),
                      ({"decoder": "meu-kbest", "k": 0}, "k must be"),
                      ({"output_scheme": "IOX"}, "unknown chunk scheme"),
                      ({"memory_budget": 0}, "memory_budget")):
        with pytest.raises(FstchunkError, match=match):
            batch.iter_decode_sentences(hmm, never, **kw)


def test_a_model_that_refuses_every_sentence_is_refused_before_any_work(files):
    _, _, hmm = files

    class NoChunks:
        scheme_ = "IOB2"

        def lattices(self, sentences):
            raise InputError("a tagger model has no chunk layer")
    with pytest.raises(InputError, match="no chunk layer"):
        batch.iter_decode_sentences(NoChunks(), iter(()), "map")


# ------------------------------------------------------------------ the command line
@pytest.mark.parametrize("decoder", ["map", "meu", "meu-corpus"])
def test_output_is_what_it_was_before_streaming(capsys, files, tmp_path, decoder):
    inp, model, hmm = files
    out = tmp_path / "out.txt"
    code, stdout, err = run(capsys, "decode", "--model", model, "--input", inp,
                            "--decoder", decoder, "-o", out)
    assert code == 0 and err == "" and stdout == ""
    want = previous_output(inp, hmm, decoder)
    assert out.read_text() == want
    code, stdout, err = run(capsys, "decode", "--model", model, "--input", inp,
                            "--decoder", decoder)
    assert code == 0 and stdout == want


@pytest.mark.parametrize("error", [BudgetError("estimated 9.0 GiB exceeds the budget of "
                                               "1.0 GiB", 9e9, 1e9),
                                   MemoryError()])
@pytest.mark.parametrize("to_file", [True, False])
def test_a_sentence_that_fails_is_reported_and_the_others_are_written(
        capsys, files, tmp_path, monkeypatch, error, to_file):
    inp, model, hmm = files
    want = previous_output(inp, hmm, "meu").splitlines()
    fail_meu_on_length(monkeypatch, 3, error)
    out = tmp_path / "out.txt"
    code, stdout, err = run(capsys, "decode", "--model", model, "--input", inp, "--decoder",
                            "meu", *(["-o", out] if to_file else []))
    assert code == 1 and "Traceback" not in err
    lines = (out.read_text() if to_file else stdout).splitlines()
    assert not list(tmp_path.glob(".out.txt.tmp*"))
    assert len(lines) == len(want)
    bad = range(7, 10)                                   # lines 8-10, 0-based
    for i, (got, w) in enumerate(zip(lines, want)):
        if i in bad:
            assert got == w.rsplit(" ", 1)[0] + " " + UNDECODED
        else:
            assert got == w
    first, summary = err.strip().splitlines()
    assert first.startswith(f"fstchunk decode: error: {inp}:8: sentence 2 (3 tokens) not "
                            f"decoded, tagged {UNDECODED}: ")
    assert ("9.0 GiB" in first and "--memory-budget" in first
            if isinstance(error, BudgetError) else "out of memory" in first)
    assert summary.startswith(f"fstchunk decode: error: 1 of 3 sentences not decoded "
                              f"({inp}:8)")
    if to_file:
        # eval refuses the placeholder on one line naming its line, rather than score it
        code, stdout, err = run(capsys, "eval", out)
        assert code == 2 and stdout == "" and "Traceback" not in err
        (line,) = err.strip().splitlines()
        assert f"{out}:8: the predicted column holds {UNDECODED}" in line
        assert "could not decode this sentence" in line


def test_every_sentence_failing_still_writes_the_file(capsys, files, tmp_path, monkeypatch):
    inp, model, _ = files
    monkeypatch.setattr(inference, "viterbi", lambda batch: (_ for _ in ()).throw(MemoryError()))
    out = tmp_path / "out.txt"
    code, _, err = run(capsys, "decode", "--model", model, "--input", inp, "-o", out)
    assert code == 1 and len(err.strip().splitlines()) == 4
    assert f"3 of 3 sentences not decoded ({inp}:3, {inp}:8, {inp}:13)" in err
    assert out.read_text().count(UNDECODED) == 9


def test_each_block_is_written_before_the_next_is_decoded(files, tmp_path, monkeypatch,
                                                          capsys):
    """Standard output is flushed, and -o's temporary holds the block's sentences, before
    the next block is decoded (blocks of one sentence here)."""
    inp, model, hmm = files
    want = previous_output(inp, hmm, "map").splitlines(keepends=True)

    class Recorder(io.StringIO):
        flushed = ""

        def flush(self):
            self.flushed = self.getvalue()

    out = tmp_path / "out.txt"
    seen: list[tuple[str, str]] = []
    real = inference.viterbi

    def viterbi(b):
        tmp = temp_path(out)
        seen.append((sys.stdout.flushed, open(tmp).read() if os.path.exists(tmp) else ""))
        return real(b)
    monkeypatch.setattr(inference, "viterbi", viterbi)
    monkeypatch.setattr(blocks, "BLOCK_TOKENS", 1)
    monkeypatch.setattr(sys, "stdout", Recorder())
    assert main(["decode", "--model", str(model), "--input", str(inp)]) == 0
    # before sentence k is decoded, every line up to its first line is out
    assert [s for s, _ in seen] == ["".join(want[:first - 1]) for first in FIRST_LINES]
    assert sys.stdout.getvalue() == "".join(want)
    seen.clear()
    assert main(["decode", "--model", str(model), "--input", str(inp), "-o", str(out)]) == 0
    assert [t for _, t in seen] == ["".join(want[:first - 1]) for first in FIRST_LINES]
    assert out.read_text() == "".join(want)


def test_ctrl_c_while_streaming_to_a_file_leaves_no_file(capsys, files, tmp_path,
                                                         monkeypatch):
    inp, model, _ = files
    fail_meu_on_length(monkeypatch, 2, KeyboardInterrupt())
    out = tmp_path / "out.txt"
    code, _, err = run(capsys, "decode", "--model", model, "--input", inp, "--decoder", "meu",
                       "-o", out)
    assert code == 130 and err.strip() == "fstchunk decode: interrupted"
    assert list(tmp_path.glob("*out.txt*")) == []


def test_bad_output_scheme_is_refused_before_any_output(capsys, files):
    inp, model, _ = files
    code, stdout, err = run(capsys, "decode", "--model", model, "--input", inp,
                            "--output-scheme", "IOX")
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and "unknown chunk scheme 'IOX'" in err


# ------------------------------------------------------------------ --memory-budget
@pytest.mark.parametrize("text,value", [("2G", 2 * 2 ** 30), ("512M", 512 * 2 ** 20),
                                        ("100K", 102400), ("1000", 1000), ("1.5k", 1536),
                                        ("2GB", 2 * 2 ** 30), ("1GiB", 2 ** 30)])
def test_memory_size_reads_plain_bytes_and_suffixes(text, value):
    assert memory_size(text) == value


@pytest.mark.parametrize("text", ["0", "-1", "2X", "nan", "", "G", "1.5", "infG", "0.0001K"])
def test_memory_size_refuses(text):
    with pytest.raises(argparse.ArgumentTypeError, match="number of bytes"):
        memory_size(text)


def test_bad_memory_budget_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["decode", "--model", "m", "--input", "x", "--memory-budget", "lots"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--memory-budget: must be a number of bytes" in err and "Traceback" not in err


def test_memory_budget_reaches_the_meu_decoder(capsys, files, monkeypatch):
    inp, model, _ = files
    got = []
    for cls, method in ((decoders.MEU, "exact"), (decoders.MEUKBest, "kbest")):
        def decode_batch(self, batch, value=True, real=cls.decode_batch, method=method):
            got.extend([(method, self.memory_budget)] * batch.B)
            return real(self, batch, value)
        monkeypatch.setattr(cls, "decode_batch", decode_batch)
    code, _, err = run(capsys, "decode", "--model", model, "--input", inp, "--decoder", "meu",
                       "--memory-budget", "2G")
    assert code == 0, err
    assert got == [("exact", 2 * 2 ** 30)] * 3
    got.clear()
    code, _, err = run(capsys, "decode", "--model", model, "--input", inp, "--decoder",
                       "meu-kbest")
    assert code == 0 and got == [("kbest", None)] * 3          # None: the library default


def test_a_tiny_budget_fails_the_long_sentence_only(capsys, files, tmp_path):
    inp, model, _ = files
    big = tmp_path / "big.txt"
    big.write_text(SOURCE + "\n" + "the DT B-NP\n" * 60)
    code, out, err = run(capsys, "decode", "--model", model, "--input", big, "--decoder", "meu",
                         "--memory-budget", "64K", "-o", tmp_path / "o.txt")
    assert code == 1
    first, summary = err.strip().splitlines()
    assert f"{big}:16: sentence 4 (60 tokens) not decoded" in first
    assert "1 of 4 sentences not decoded" in summary
    assert (tmp_path / "o.txt").read_text().count(UNDECODED) == 60
