"""Evaluation modes (issue 47 §1) against nervaluate, their oracle: random typed chunkings,
the same chunks handed to both, every count and figure overall and per type."""

import json
import random

import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.core.errors import InputError
from fstchunk.evaluation.chunks import evaluate as evaluate_tags
from fstchunk.evaluation.modes import MODES, confusion, match, report_chunks

nervaluate = pytest.importorskip("nervaluate")

NV = {"strict": "strict", "exact": "exact", "partial": "partial", "type": "ent_type"}
TYPES = ("PER", "LOC", "ORG")


def chunking(rng: random.Random, n: int, widest: int = 4, types=TYPES
             ) -> list[tuple[str, int, int]]:
    """Random non-overlapping typed chunks over n tokens."""
    out, i = [], 0
    while i < n:
        if rng.random() < 0.5:
            w = rng.randint(1, min(widest, n - i))
            out.append((rng.choice(types), i, i + w))
            i += w
        else:
            i += 1
    return out


def tags(chunks, n):
    t = ["O"] * n
    for typ, s, e in chunks:
        t[s] = f"B-{typ}"
        for k in range(s + 1, e):
            t[k] = f"I-{typ}"
    return t


def nervaluate_results(gold, pred):
    as_dicts = [[{"label": c[0], "start": c[1], "end": c[2] - 1} for c in sent] for sent in gold]
    as_dicts_p = [[{"label": c[0], "start": c[1], "end": c[2] - 1} for c in sent] for sent in pred]
    return nervaluate.Evaluator(as_dicts, as_dicts_p, tags=list(TYPES), loader="dict").evaluate()


def same(ours, theirs):
    for k in ("correct", "incorrect", "partial", "missed", "spurious", "actual", "possible"):
        assert getattr(ours, k) == getattr(theirs, k), k
    for k in ("precision", "recall", "f1"):
        assert getattr(ours, k) == pytest.approx(getattr(theirs, k), abs=1e-12), k


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 6))
def test_every_mode_equals_nervaluate_overall_and_per_type(seed, sentences):
    rng = random.Random(seed)
    lengths = [rng.randint(1, 12) for _ in range(sentences)]
    types = TYPES[:rng.randint(1, 3)]          # one type: many same-type overlaps
    gold = [chunking(rng, n, 3, types) for n in lengths]
    pred = [chunking(rng, n, 7, types) for n in lengths]
    theirs = nervaluate_results(gold, pred)
    for mode in MODES:
        ours = report_chunks([(g, p, i) for i, (g, p) in enumerate(zip(gold, pred))], mode)
        same(ours.overall, theirs["overall"][NV[mode]])
        for t, s in ours.per_type.items():
            same(s, theirs["entities"][t][NV[mode]])


def test_the_tag_front_door_reads_chunks_as_conlleval():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG"]]
    pred = [["B-PER", "O", "O", "B-ORG"], ["I-ORG", "I-ORG"]]     # I-ORG after O opens one
    r = evaluate_tags(gold, pred, mode="partial")
    # PER: partial; LOC vs ORG same span: correct (type ignored); ORG: partial
    assert (r.overall.correct, r.overall.partial, r.overall.missed, r.overall.spurious) == \
        (1, 2, 0, 0)
    assert r.overall.precision == pytest.approx(2 / 3)
    assert r.confusion == {"PER": {"(none)": 1}, "(none)": {"PER": 1, "ORG": 1},
                           "LOC": {"ORG": 1}, "ORG": {"(none)": 1}}


def test_type_mode_takes_the_closest_gold_chunk_of_the_type():
    gold = [("PER", 0, 2), ("PER", 3, 6)]
    pred = [("PER", 1, 6), ("PER", 0, 2)]
    r = report_chunks([(gold, pred, 0)], "type")
    assert (r.overall.correct, r.overall.missed, r.overall.spurious) == (2, 0, 0)
    theirs = nervaluate_results([gold], [pred])["overall"]["ent_type"]
    same(r.overall, theirs)


def test_a_long_gold_chunk_needs_one_percent_overlap():
    gold = [("PER", 0, 200)]
    assert match(gold, [("PER", 0, 1)], "partial").spurious == 1          # 0.5%
    assert match(gold, [("PER", 0, 2)], "partial").partial == 1           # 1%


def test_confusion_counts_missed_and_spurious():
    table = {}
    confusion([("PER", 0, 2), ("LOC", 3, 4)], [("ORG", 0, 2), ("PER", 5, 6)], table)
    assert table == {"PER": {"ORG": 1}, "LOC": {"(none)": 1}, "(none)": {"PER": 1}}


def test_an_unknown_mode_is_one_error():
    with pytest.raises(InputError, match="unknown evaluation mode 'loose'"):
        evaluate_tags([["O"]], [["O"]], mode="loose")


def test_json_holds_fractions_per_type_and_macro():
    r = evaluate_tags([["B-PER", "O", "B-LOC"]], [["B-PER", "O", "O"]], mode="strict")
    d = json.loads(r.json())
    assert d["overall"]["precision"] == 1.0 and d["overall"]["recall"] == 0.5
    assert d["per_type"]["LOC"]["f1"] == 0.0 and d["per_type"]["PER"]["f1"] == 1.0
    assert d["macro"]["f1"] == pytest.approx(0.5)


@pytest.mark.parametrize("seed", range(4))
def test_eval_mode_json_on_a_generated_file_equals_nervaluate(seed, tmp_path, capsys):
    from fstchunk.cli import main
    rng = random.Random(seed)
    lengths = [rng.randint(1, 15) for _ in range(30)]
    gold = [tags(chunking(rng, n, 3), n) for n in lengths]
    pred = [tags(chunking(rng, n, 6), n) for n in lengths]
    path = tmp_path / "out.txt"
    path.write_text("\n\n".join("\n".join(f"w{k} {g} {p}" for k, (g, p) in enumerate(zip(gs, ps)))
                                for gs, ps in zip(gold, pred)) + "\n")
    theirs = nervaluate.Evaluator(gold, pred, tags=list(TYPES), loader="list").evaluate()
    for mode in MODES:
        assert main(["eval", str(path), "--mode", mode, "--json"]) == 0
        ours = json.loads(capsys.readouterr().out)
        want = theirs["overall"][NV[mode]]
        for k in ("correct", "incorrect", "partial", "missed", "spurious"):
            assert ours["overall"][k] == getattr(want, k), (mode, k)
        for k in ("precision", "recall", "f1"):
            assert ours["overall"][k] == pytest.approx(getattr(want, k), abs=1e-12), (mode, k)
            for t, s in ours["per_type"].items():
                assert s[k] == pytest.approx(getattr(theirs["entities"][t][NV[mode]], k),
                                             abs=1e-12), (mode, t, k)


def test_eval_mode_refuses_beta_and_the_crfsuite_format(tmp_path, capsys):
    from fstchunk.cli import main
    path = tmp_path / "out.txt"
    path.write_text("a B-PER B-PER\n")
    assert main(["eval", str(path), "--mode", "strict", "--beta", "2"]) == 2
    assert "--beta applies to --mode conlleval" in capsys.readouterr().err
    assert main(["eval", str(path), "--mode", "strict", "--format", "crfsuite"]) == 2
    assert "--mode is for --format conll" in capsys.readouterr().err
