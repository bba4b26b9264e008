"""Choosing what to annotate (issue 36, part 4): fstchunk.decoding.selection's scores against
brute force, pick's order, ties and budget, and the select command."""

import numpy as np
import pytest

from fstchunk import Lattice
from fstchunk.cli import main
from fstchunk.io.conll import Sentence, read_conll, write_conll
from fstchunk.core.errors import InputError
from fstchunk.models.crf import CRF
from fstchunk.decoding.selection import entropy_scores, expected_f_scores, pick, scores
from fstchunk.schemes.tagspace import TagSet
from oracles import all_utilities, brute_force, brute_token_marginals, random_scores


@pytest.mark.parametrize("scheme, types", [("IOB2", ("NP",)), ("IOBES", ("LOC", "PER")),
                                           ("BILOU", ("",))])
@pytest.mark.parametrize("scale", [0.3, 3.0])
def test_scores_are_the_brute_force_quantities(scheme, types, scale):
    ts = TagSet(scheme, types)
    rng = np.random.default_rng(7)
    lats, want_f, want_h = [], [], []
    for n in (1, 3, 4):
        sc = random_scores(rng, len(ts.tags), n, scale)
        lats.append(Lattice.from_scores(ts.tags, *sc, scheme=scheme))
        seqs, _ = brute_force(ts.tags, scheme, types, n, *sc)
        want_f.append(1 - all_utilities(seqs, 1.0).max())        # the MEU decision's E[F]
        p = brute_token_marginals(seqs, ts.tags, n)
        want_h.append(float(np.mean([-sum(q * np.log(q) for q in row if q > 0) for row in p])))
    np.testing.assert_allclose(expected_f_scores(lats), want_f, rtol=0, atol=1e-10)
    np.testing.assert_allclose(entropy_scores(lats), want_h, rtol=0, atol=1e-10)
    np.testing.assert_allclose(scores(lats, "entropy"), want_h, rtol=0, atol=1e-10)


def test_pick_keeps_input_order_breaks_ties_early_and_caps_at_the_pool():
    assert pick(np.array([0.1, 0.9, 0.5, 0.9, 0.2]), 2) == [1, 3]
    assert pick(np.array([0.3, 0.3, 0.3]), 2) == [0, 1]
    assert pick(np.array([0.1, 0.5]), 10) == [0, 1]
    a, b = pick(50, 10, seed=3), pick(50, 10, seed=3)
    assert a == b == sorted(a) and len(set(a)) == 10
    assert pick(50, 10, seed=4) != a
    assert pick(5, 9, seed=1) == [0, 1, 2, 3, 4]
    with pytest.raises(InputError, match="budget"):
        pick(np.zeros(3), 0)
    with pytest.raises(InputError, match="no score"):
        scores([], "random")


ROWS = [[("The", "DT", "B-NP"), ("dog", "NN", "I-NP"), ("barks", "VBZ", "O")],
        [("A", "DT", "B-NP"), ("cat", "NN", "I-NP"), ("sleeps", "VBZ", "O"), (".", ".", "O")],
        [("Dogs", "NNS", "B-NP"), ("run", "VBP", "O")],
        [("He", "PRP", "B-NP"), ("saw", "VBD", "O"), ("a", "DT", "B-NP"), ("dog", "NN", "I-NP")],
        [("Big", "JJ", "B-NP"), ("cats", "NNS", "I-NP"), ("purr", "VBP", "O")],
        [("Zebras", "NNS", "B-NP"), ("graze", "VBP", "O"), ("quietly", "RB", "O")]]


@pytest.mark.parametrize("strategy", ["expected-f", "entropy"])
def test_select_writes_the_most_uncertain_in_input_order(tmp_path, strategy, capsys):
    sents = [Sentence([list(r) for r in rows]) for rows in ROWS]
    crf = CRF("tmpt3", "IOB2", max_iter=3, l2=0.1).fit(sents[:3])
    model, pool, out = tmp_path / "m.npz", tmp_path / "pool.conll", tmp_path / "picked.conll"
    crf.save(str(model))
    write_conll(sents, str(pool))
    want = pick(scores(crf.lattices(sents), strategy), 3)
    assert main(["select", "--model", str(model), "--input", str(pool), "--budget", "3",
                 "--strategy", strategy, "-o", str(out)]) == 0
    got = [s.rows for s in read_conll(str(out))]
    assert got == [sents[i].rows for i in want]
    assert main(["select", "--model", str(model), "--input", str(pool), "--budget", "99",
                 "--strategy", strategy, "-o", str(out)]) == 0
    assert "all of them are picked" in capsys.readouterr().err
    assert [s.rows for s in read_conll(str(out))] == [s.rows for s in sents]


def test_select_random_is_deterministic_by_seed(tmp_path):
    sents = [Sentence([list(r) for r in rows]) for rows in ROWS * 5]
    crf = CRF("tmpt3", "IOB2", max_iter=2).fit(sents[:6])
    model, pool = tmp_path / "m.npz", tmp_path / "pool.conll"
    crf.save(str(model))
    write_conll(sents, str(pool))
    runs = []
    for seed in ("1", "1", "2"):
        out = tmp_path / f"r{len(runs)}.conll"
        assert main(["select", "--model", str(model), "--input", str(pool), "--budget", "4",
                     "--strategy", "random", "--seed", seed, "-o", str(out)]) == 0
        runs.append(out.read_text())
    assert runs[0] == runs[1] != runs[2]
    assert runs[0].count("\n\n") == 4
