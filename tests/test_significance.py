"""Error bars and significance (issue 47 §1): the bootstrap's resampled counts against
re-scoring the resampled sentences, exact randomisation against enumerating every swap
by re-scoring, approximate randomisation within its Monte Carlo error of the exact p, and
the command lines."""

import itertools
import json
import random

import numpy as np
import pytest

from fstchunk.cli import main
from fstchunk.core.errors import InputError
from fstchunk.evaluation.chunks import evaluate
from fstchunk.evaluation.significance import (bootstrap_interval, group, paired_bootstrap,
                                              randomisation, unit_counts)

TYPES = ("PER", "LOC")


def sentence(rng, n, p=0.4):
    tags, i = ["O"] * n, 0
    while i < n:
        if rng.random() < p:
            w = rng.randint(1, min(3, n - i))
            t = rng.choice(TYPES)
            tags[i:i + w] = [f"B-{t}"] + [f"I-{t}"] * (w - 1)
            i += w
        else:
            i += 1
    return tags


def corpus(seed, units=8):
    rng = random.Random(seed)
    lengths = [rng.randint(2, 9) for _ in range(units)]
    return ([sentence(rng, n) for n in lengths], [sentence(rng, n) for n in lengths],
            [sentence(rng, n) for n in lengths])


def scored(gold, pred, mode):
    r = evaluate(gold, pred, mode=mode)
    return r.overall.f if mode == "conlleval" else 100 * r.overall.f1


@pytest.mark.parametrize("mode", ["conlleval", "strict", "partial", "type"])
@pytest.mark.parametrize("seed", range(3))
def test_resampled_counts_score_as_the_resampled_sentences(mode, seed):
    gold, a, _ = corpus(seed)
    counts, figure = unit_counts(list(zip(gold, a)), mode)
    rng = np.random.default_rng(seed)
    for w in rng.multinomial(len(gold), np.full(len(gold), 1 / len(gold)), size=5):
        picked = [k for k, n in enumerate(w) for _ in range(n)]
        want = scored([gold[k] for k in picked], [a[k] for k in picked], mode)
        assert figure((w @ counts)[None, :])[0] == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("mode", ["conlleval", "exact", "partial"])
@pytest.mark.parametrize("seed", range(3))
def test_exact_randomisation_is_the_enumeration_of_every_swap(mode, seed):
    gold, a, b = corpus(seed, units=7)
    ca, figure = unit_counts(list(zip(gold, a)), mode)
    cb, _ = unit_counts(list(zip(gold, b)), mode)
    delta = scored(gold, a, mode) - scored(gold, b, mode)
    hits = 0
    swaps = list(itertools.product((0, 1), repeat=len(gold)))
    for s in swaps:
        a2 = [b[k] if s[k] else a[k] for k in range(len(gold))]
        b2 = [a[k] if s[k] else b[k] for k in range(len(gold))]
        hits += abs(scored(gold, a2, mode) - scored(gold, b2, mode)) >= abs(delta) - 1e-9
    t = randomisation(ca, cb, figure, exact=True)
    assert t.gain == pytest.approx(delta, abs=1e-9)
    assert t.p == pytest.approx(hits / len(swaps), abs=1e-12) and t.trials == 2 ** 7
    mc = randomisation(ca, cb, figure, trials=20000, seed=seed)
    assert abs(mc.p - t.p) <= 4 * mc.p_error + 1 / 20001


def test_paired_bootstrap_p_and_its_error():
    gold, a, b = corpus(5, units=30)
    ca, figure = unit_counts(list(zip(gold, a)), "conlleval")
    cb, _ = unit_counts(list(zip(gold, b)), "conlleval")
    t = paired_bootstrap(ca, cb, figure, samples=2000, seed=1)
    assert t.gain == pytest.approx(scored(gold, a, "conlleval") - scored(gold, b, "conlleval"))
    assert 0 <= t.p <= 1 and t.p_error == pytest.approx(np.sqrt(t.p * (1 - t.p) / 2000))
    same = paired_bootstrap(ca, ca, figure, samples=100)
    assert (same.gain, same.p) == (0.0, 1.0)          # no gain: nothing to test


def test_the_interval_holds_the_figure_and_narrows_with_more_units():
    gold, a, _ = corpus(2, units=200)
    counts, figure = unit_counts(list(zip(gold, a)), "conlleval")
    wide = bootstrap_interval(counts[:20], figure, 0.95, 2000, seed=3)
    narrow = bootstrap_interval(counts, figure, 0.95, 2000, seed=3)
    assert narrow.low <= narrow.value <= narrow.high
    assert narrow.high - narrow.low < wide.high - wide.low
    assert bootstrap_interval(counts, figure, 0.95, 2000, seed=3) == narrow   # by seed
    assert group([[1, 2], [3, 4], [5, 6]], [0, 0, 1]).tolist() == [[4, 6], [5, 6]]


def test_bad_levels_and_tiny_sample_counts_are_refused():
    counts, figure = unit_counts([(["B-PER"], ["B-PER"])], "conlleval")
    with pytest.raises(InputError, match="confidence level"):
        bootstrap_interval(counts, figure, 1.5)
    with pytest.raises(InputError, match="samples"):
        bootstrap_interval(counts, figure, 0.9, samples=3)
    with pytest.raises(InputError, match="at most 20 units"):
        big = np.ones((21, 3))
        randomisation(big, big, figure, exact=True)


def write(path, sents, words=None, docs=False):
    lines = []
    for k, tags in enumerate(sents):
        if docs and k % 3 == 0:
            lines += ["-DOCSTART- O", ""]
        lines += [f"w{k}_{i} {t}" for i, t in enumerate(tags)] + [""]
    path.write_text("\n".join(lines))


def test_compare_and_eval_ci_on_the_command_line(tmp_path, capsys):
    gold, a, b = corpus(7, units=12)
    for name, sents in (("g", gold), ("a", a), ("b", b)):
        write(tmp_path / f"{name}.txt", sents, docs=True)
    g, fa, fb = (str(tmp_path / f"{n}.txt") for n in "gab")
    assert main(["compare", g, fa, fb, "--json", "--samples", "500"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["by"] == "document" and out["units"] == 4
    assert out["a"] == pytest.approx(scored(gold, a, "conlleval"))
    assert [t["method"] for t in out["tests"]] == ["paired bootstrap",
                                                  "approximate randomisation"]
    assert main(["compare", g, fa, fb, "--exact", "--by", "sentence"]) == 0
    assert "exact randomisation: p = " in capsys.readouterr().out
    # eval --ci on a file of gold and A's tags
    both = tmp_path / "ga.txt"
    both.write_text("\n".join(f"{line} {la.split()[-1]}" if line and not line.startswith("-DOC")
                              else (f"{line} O" if line else "")
                              for line, la in zip((tmp_path / "g.txt").read_text().split("\n"),
                                                  (tmp_path / "a.txt").read_text().split("\n"))))
    assert main(["eval", str(both), "--ci", "0.9", "--json", "--samples", "300"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["interval"]["by"] == "document" and rep["interval"]["level"] == 0.9
    assert rep["interval"]["value"] == pytest.approx(rep["overall"]["f"])


def test_compare_refuses_files_that_do_not_align(tmp_path, capsys):
    gold, a, _ = corpus(1, units=4)
    write(tmp_path / "g.txt", gold)
    write(tmp_path / "a.txt", a)
    (tmp_path / "c.txt").write_text((tmp_path / "a.txt").read_text().replace("w0_0", "x", 1))
    assert main(["compare", str(tmp_path / "g.txt"), str(tmp_path / "a.txt"),
                 str(tmp_path / "c.txt")]) == 2
    assert "words differ from the gold's" in capsys.readouterr().err
