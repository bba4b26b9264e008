"""One systematic cause is one error, not one per sentence (issue 32, item 11): a
model whose columns the input lacks stops ``decode`` and ``expected`` at the first
sentence, writing nothing; a cause that repeats over many sentences is shown three
times and then counted in the summary."""

import pytest

from fstchunk.cli import main
from fstchunk.io.conll import read_conll
from fstchunk.core.errors import BudgetError
from fstchunk.models.crf import CRF
from fstchunk.models.hmm import HMM
from oracles import TINY_CONLL


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    (d / "tiny.txt").write_text(TINY_CONLL)
    sents = read_conll(d / "tiny.txt")
    HMM().fit(sents).save(d / "hmm.npz")
    crf = CRF("tmpt3")
    data = crf._prepare(sents)
    crf.set_params(objective="ml", l2=0.1, max_iter=5).fit(data)
    crf.save(d / "crf.npz")
    return {"hmm": d / "hmm.npz", "crf": d / "crf.npz"}


def word_only_file(path, n=200):
    path.write_text("".join(f"w{i}\nx{i}\n\n" for i in range(n)))
    return path


@pytest.mark.parametrize("kind", ["hmm", "crf"])
@pytest.mark.parametrize("extra", [[], ["-o", "OUT"], ["--workers", "2"]])
@pytest.mark.parametrize("columns", [[], ["--columns", "word"]])
def test_a_layout_fault_stops_decode_at_once(capsys, tmp_path, models, kind, extra, columns):
    """Caught by the layout check before any work, or (the user named the columns, so
    the check only warns) by the reader of the first sentence: one error either way."""
    inp = word_only_file(tmp_path / "words.txt")
    out = tmp_path / "out.txt"
    argv = [a if a != "OUT" else out for a in extra]
    code, stdout, err = run(capsys, "decode", "--model", models[kind], "--input", inp, *argv,
                            *columns)
    assert code == 2 and stdout == "" and not out.exists()
    errors = [x for x in err.strip().splitlines() if ": error:" in x]
    assert len(errors) == 1 and "words.txt:1" in errors[0] and "pos" in errors[0].lower()
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


@pytest.mark.parametrize("kind", ["hmm", "crf"])
def test_a_layout_fault_stops_expected_before_its_header(capsys, tmp_path, models, kind):
    inp = tmp_path / "wt.txt"
    inp.write_text("".join(f"w{i} B-NP\nx{i} I-NP\n\n" for i in range(50)))
    code, stdout, err = run(capsys, "expected", inp, "--model", models[kind],
                            "--columns", "word,tag")
    assert code == 2 and stdout == ""
    errors = [x for x in err.strip().splitlines() if ": error:" in x]
    assert len(errors) == 1 and "pos" in errors[0].lower()


def test_a_repeated_cause_is_shown_three_times_then_counted(capsys, tmp_path, models,
                                                           monkeypatch):
    from fstchunk.decoding.decoders import MEU

    def refuse(self, batch, *a, **kw):         # the batched engine refuses every sentence
        n = int(batch.lengths.max())
        raise BudgetError(f"estimated {n * 3.5} GiB exceeds the budget of 1.0 GiB",
                          n * 3.5, 1.0)
    monkeypatch.setattr(MEU, "decode_batch", refuse)
    inp = tmp_path / "in.txt"
    inp.write_text((TINY_CONLL + "\n") * 40)           # 120 sentences, lengths 4, 3, 2
    code, stdout, err = run(capsys, "decode", "--model", models["hmm"], "--input", inp,
                            "--decoder", "meu")
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 4, err
    assert "counted, not shown" in lines[2]
    assert lines[-1].startswith("fstchunk decode: error: 120 of 120 sentences not decoded")
    assert "120 × BudgetError: estimated # GiB exceeds the budget of # GiB" in lines[-1]
    assert stdout.count("<error>") == 120 * 3


def test_expected_reports_a_failing_sentence_and_goes_on(capsys, tmp_path, models,
                                                        monkeypatch):
    from fstchunk.engine import inference
    real = inference.tp_count_tables

    def fail_on_three(ops, batch, *a, **kw):      # a batch holding the 3-token sentence
        if 3 in batch.lengths:
            raise BudgetError("estimated 9.0 GiB exceeds the budget of 1.0 GiB", 9e9, 1e9)
        return real(ops, batch, *a, **kw)
    monkeypatch.setattr(inference, "tp_count_tables", fail_on_three)
    inp = tmp_path / "in.txt"
    inp.write_text(TINY_CONLL)
    code, stdout, err = run(capsys, "expected", inp, "--model", models["hmm"])
    assert code == 1
    rows = stdout.strip().splitlines()
    assert len(rows) == 1 + 3 + 1 and "error" in rows[2]          # header, 3 rows, summary
    assert "2 of 3 sentences" in rows[-1] or "over 2 sentences" in rows[-1]
    assert f"{inp}:6: sentence 2 (3 tokens) not scored" in err
    code, stdout, err = run(capsys, "expected", inp, "--model", models["hmm"], "--json")
    import json
    doc = json.loads(stdout)
    assert code == 1 and doc["sentences"][1]["error"].startswith("estimated 9.0 GiB")
    assert doc["summary"]["sentences"] == 2 and doc["summary"]["failed"] == 1
