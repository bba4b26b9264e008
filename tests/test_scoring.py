import random

import pytest

from fstchunk.schemes import encodings as enc
from fstchunk.core.errors import CoNLLError, InputError
from fstchunk.evaluation.chunks import evaluate, evaluate_file, f_beta, sentence_f
from oracles import all_chunkings


def conlleval_pl(gold_sents, pred_sents):
    """Line-by-line port of conlleval.pl's counting loop (the oracle).

    Returns (correctChunk, foundCorrect, foundGuessed, correctTags, tokens) and
    the per-type counts, exactly as the Perl script accumulates them.
    """
    def split(tag):
        return tuple(tag.split("-", 1)) if "-" in tag else (tag, "")

    def end_of(pt, t, ptype, ty):
        e = (pt, t) in {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"),
                        ("E", "E"), ("E", "I"), ("E", "O"), ("I", "O")}
        if pt != "O" and pt != "." and ptype != ty:
            e = True
        return e or pt in ("]", "[")

    def start_of(pt, t, ptype, ty):
        s = (pt, t) in {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"),
                        ("E", "E"), ("E", "I"), ("O", "E"), ("O", "I")}
        if t != "O" and t != "." and ptype != ty:
            s = True
        return s or t in ("[", "]")

    c = dict(correct=0, gold=0, found=0, tags=0, tokens=0)
    per = {}
    in_correct = False
    lc, lct, lg, lgt = "O", "", "O", ""
    stream = []
    for g, p in zip(gold_sents, pred_sents):
        stream += [(a, b, False) for a, b in zip(g, p)] + [("O", "O", True)]
    for gold, guess, boundary in stream:
        cor, cty = split(gold)
        gue, gty = split(guess)
        if in_correct:
            ec, eg = end_of(lc, cor, lct, cty), end_of(lg, gue, lgt, gty)
            if ec and eg and lgt == lct:
                in_correct = False
                c["correct"] += 1
                per.setdefault(lct, [0, 0, 0])[0] += 1
            elif ec != eg or gty != cty:
                in_correct = False
        sc, sg = start_of(lc, cor, lct, cty), start_of(lg, gue, lgt, gty)
        if sc and sg and gty == cty:
            in_correct = True
        if sc:
            c["gold"] += 1
            per.setdefault(cty, [0, 0, 0])[1] += 1
        if sg:
            c["found"] += 1
            per.setdefault(gty, [0, 0, 0])[2] += 1
        if not boundary:
            c["tags"] += cor == gue and gty == cty
            c["tokens"] += 1
        lc, lct, lg, lgt = cor, cty, gue, gty
    return c, per


def random_corpus(rng, tags, k=30):
    gold, pred = [], []
    for _ in range(k):
        n = rng.randint(1, 12)
        gold.append([rng.choice(tags) for _ in range(n)])
        pred.append([rng.choice(tags) for _ in range(n)])
    return gold, pred


@pytest.mark.parametrize("seed", range(40))
def test_counts_equal_conlleval_pl_on_arbitrary_tags(seed):
    rng = random.Random(seed)
    tags = ["O", "B-NP", "I-NP", "E-NP", "S-NP", "B-VP", "I-VP", "E-VP", "I-PP"]
    gold, pred = random_corpus(rng, tags)
    rep = evaluate(gold, pred)
    c, per = conlleval_pl(gold, pred)
    assert (rep.overall.correct, rep.overall.gold, rep.overall.found) == \
        (c["correct"], c["gold"], c["found"])
    assert (rep.correct_tags, rep.tokens) == (c["tags"], c["tokens"])
    for t, (cc, gc, fc) in per.items():
        s = rep.per_type[t]
        assert (s.correct, s.gold, s.found) == (cc, gc, fc)


@pytest.mark.parametrize("seed", range(20))
def test_equals_seqeval_on_iob_tags(seed):
    from seqeval.metrics import f1_score, precision_score, recall_score
    rng = random.Random(seed)
    gold, pred = random_corpus(rng, ["O", "B-NP", "I-NP", "B-VP", "I-VP", "I-PP"])
    rep = evaluate(gold, pred)
    assert rep.overall.precision == pytest.approx(100 * precision_score(gold, pred))
    assert rep.overall.recall == pytest.approx(100 * recall_score(gold, pred))
    assert rep.overall.f == pytest.approx(100 * f1_score(gold, pred))


def test_where_seqeval_differs_we_follow_conlleval_pl():
    """seqeval's default mode ends a chunk after every E; conlleval.pl does not
    end it when E-X is followed by B-X (it reads E-X B-X as one chunk)."""
    from seqeval.metrics.sequence_labeling import get_entities
    tags = ["B-NP", "E-NP", "B-NP", "I-NP"]
    assert [(t, s, e + 1) for t, s, e in get_entities(tags)] == [("NP", 0, 2), ("NP", 2, 4)]
    c, _ = conlleval_pl([tags], [tags])
    assert c["gold"] == 1
    assert evaluate([tags], [tags]).overall.gold == 1
    # on valid IOE1 sequences (no B tag at all) the two agree
    for n in range(1, 6):
        for ch in all_chunkings(n, ("NP", "VP")):
            t = enc.chunks_to_tags(ch, n, "IOE1")
            assert sorted(enc.conlleval_chunks(t)) == sorted(
                (a, s, e + 1) for a, s, e in get_entities(t))


def test_report_format_and_figures():
    gold = [["B-NP", "I-NP", "O", "B-VP"], ["B-PP", "B-NP"]]
    pred = [["B-NP", "I-NP", "O", "B-NP"], ["B-PP", "I-PP"]]
    rep = evaluate(gold, pred)
    text = rep.conlleval()
    lines = text.splitlines()
    assert lines[0] == "processed 6 tokens with 4 phrases; found: 3 phrases; correct: 1."
    tp, found, goldn = 1, 3, 4
    p, r = 100 * tp / found, 100 * tp / goldn
    assert lines[1] == (f"accuracy: {100 * 4 / 6:6.2f}%; precision: {p:6.2f}%; "
                        f"recall: {r:6.2f}%; FB1: {2 * p * r / (p + r):6.2f}")
    assert lines[2].startswith("               NP: precision:  50.00%; recall:  50.00%;")
    assert lines[3] == "               PP: precision:   0.00%; recall:   0.00%; FB1:   0.00  1"
    assert lines[4] == "               VP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0"
    d = rep.as_dict()
    assert d["overall"]["correct"] == 1 and d["per_type"]["NP"]["found"] == 2


def test_f_beta_convention():
    assert f_beta(0, 0, 0) == 1.0                    # 0/0 := 1
    assert f_beta(1, 3, 1, beta=3 ** 0.5) == pytest.approx(4 / 6)   # the slides' β' = 3
    # (1+β²)PR/(β²P+R) with P = tp/m(x), R = tp/m(y)
    tp, mx, my, b = 2, 5, 3, 0.5
    P, R = tp / mx, tp / my
    assert f_beta(tp, mx, my, b) == pytest.approx((1 + b * b) * P * R / (b * b * P + R))
    assert sentence_f([("", 0, 1)], [], beta=1) == 0.0
    with pytest.raises(InputError, match="beta"):
        f_beta(1, 1, 1, beta=float("nan"))
    rep = evaluate([["B", "I"], ["O"]], [["B", "I"], ["B"]], beta=2.0)
    assert rep.sentence_f == [1.0, 0.0]
    tp, mx, my = 1, 2, 1
    P, R = 100 * tp / mx, 100 * tp / my
    assert rep.overall.f == pytest.approx(5 * P * R / (4 * P + R))


def test_length_mismatch_names_sentence():
    with pytest.raises(InputError, match="sentence 1: 2 gold tags but 1 predicted"):
        evaluate([["O"], ["O", "O"]], [["O"], ["O"]])
    with pytest.raises(InputError, match="2 gold sentences but 1 predicted"):
        evaluate([["O"], ["O"]], [["O"]])
    with pytest.raises(InputError, match="f.txt:3: 2 gold tags"):
        evaluate([["O", "O"]], [["O"]], where=["f.txt:3"])


def test_evaluate_file_needs_two_columns(tmp_path):
    p = tmp_path / "one.txt"
    p.write_text("word\n", encoding="utf-8")
    with pytest.raises(CoNLLError, match=r"one\.txt:1: one column; eval reads the gold and the predicted tag"):
        evaluate_file(p)


def test_evaluate_file_on_real_data(corpus, tmp_path):
    from fstchunk.io.conll import read_conll, write_conll
    sents = read_conll(corpus("conll2000", "test.txt"))
    rng = random.Random(3)
    rows = []
    gold, pred = [], []
    for s in sents:
        g = s.column(-1)
        p = [t if rng.random() < 0.9 else rng.choice(["O", "B-NP", "I-NP", "I-VP"]) for t in g]
        rows.append([r + [q] for r, q in zip(s.rows, p)])
        gold.append(g)
        pred.append(p)
    path = tmp_path / "out.txt"
    write_conll(rows, path)
    rep = evaluate_file(path)
    c, _ = conlleval_pl(gold, pred)
    assert (rep.overall.correct, rep.overall.found, rep.overall.gold, rep.tokens) == \
        (c["correct"], c["found"], c["gold"], c["tokens"])
    assert rep.tokens == 47377
