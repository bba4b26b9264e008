"""Issue 43, items 4 and 5: ``select --beta 0`` (every expected F of the MEU decision 1,
every score 0: the first sentences) is refused; a sentence repeated in the pool
counts once (its first copy), and the summary line says how many copies were set aside."""

import numpy as np
import pytest

from fstchunk.cli import main
from fstchunk.core.errors import InputError
from fstchunk.decoding.selection import expected_f_scores
from fstchunk.io.conll import Sentence, read_conll, write_conll
from fstchunk.models.crf import CRF


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def pool(tmp_path_factory, corpus):
    d = tmp_path_factory.mktemp("select")
    sents = read_conll(corpus("conll2000", "train.txt"))
    CRF("tmpt1", max_iter=10).fit(sents[:100]).save(d / "m.npz")
    return d, sents[100:130]


def test_beta_zero_is_refused_where_every_expected_f_ties(pool, capsys):
    d, sents = pool
    write_conll(sents, d / "pool.txt")
    for beta in ("0", "0.0"):
        with pytest.raises(SystemExit) as e:
            main(["select", "--model", str(d / "m.npz"), "--input", str(d / "pool.txt"),
                  "--budget", "3", "--beta", beta, "-o", str(d / "out.txt")])
        err = capsys.readouterr().err
        assert e.value.code == 2 and "--beta: must be a finite number > 0" in err, err
    model = CRF.load(d / "m.npz")
    lats = model.lattices(sents[:5])
    assert np.all(expected_f_scores(lats, 1e-9) >= 0)
    with pytest.raises(InputError, match="beta must be a finite number > 0.*all would tie"):
        expected_f_scores(lats, 0.0)                 # the library refuses it too
    with pytest.raises(SystemExit):
        main(["select", "--help"])
    assert "all would tie" in " ".join(capsys.readouterr().out.split())


def test_repeated_sentences_count_once(pool, capsys):
    """The pool holds sentence A three times among others: it is scored and picked
    at most once, the first copy, and the output says so."""
    d, sents = pool
    a = sents[0]
    repeated = [a, sents[1], Sentence([list(r) for r in a.rows]), sents[2],
                Sentence([r[:2] + ["O"] for r in a.rows])] + sents[3:12]  # tags differ
    write_conll(repeated, d / "rep.txt")
    out = d / "picked.txt"
    for strategy in ("expected-f", "entropy", "random"):
        code, stdout, err = run(capsys, "select", "--model", d / "m.npz", "--input",
                                d / "rep.txt", "--budget", "12", "--strategy", strategy,
                                "-o", out)
        assert code == 0, err
        picked = read_conll(out)
        words = [tuple(s.column(0)) for s in picked]
        assert len(words) == len(set(words)) == 12                # every distinct one
        assert "2 repeated sentences (the same tokens as an earlier one) counted once" in \
            stdout, stdout
        assert [s.rows for s in picked if s.column(0) == a.column(0)] == [a.rows]
        assert "is not below the pool's 12 distinct sentences" in err
    from fstchunk.decoding.selection import distinct
    assert distinct([["a"], ["b"], ["a"], ["a", "b"], ["b"]]) == [0, 1, 3]
