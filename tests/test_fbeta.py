"""β is the standard β on every surface (issue 32, item 7): F_β = (1+β²)PR/(β²P+R).

Oracles are written out here (scikit-learn's ``fbeta_score`` arithmetic on counts) or
come from seqeval, which implements the standard β; the brute-force expectations of
``expected_f``, ``decode_meu`` and the torch layer are in tests/test_expected.py,
tests/test_decode.py, tests/test_torch_crf.py and tests/test_torch_expected.py (all at
the standard β, 0 included).  Here: the scorers, the ``--beta`` options, the β = 0
agreement of API and CLI, and model files written with the slides' β' = β².

tests/data/beta_slides/ holds a CRF trained by fstchunk at commit 2857aae (before this
convention) with ``--objective meu --beta 4`` (the slides' β' = 4, i.e. the standard
β = 2) for 3 iterations on the four sentences of tests/test_training.py, and a checkpoint
of the same run stopped at iteration 2 (Trainer(objective="meu", l2=0.1, beta=4.0,
identity=test_training.IDENTITY), a callback raising KeyboardInterrupt)."""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import shutil
import warnings

import numpy as np
import pytest

from fstchunk import Lattice
from fstchunk.schemes import encodings as enc
from fstchunk.cli import build_parser, main
from fstchunk.decoding.decode import decode_meu
from fstchunk.decoding.decoders import decode_lattices
from fstchunk.evaluation.significance import unit_counts
from fstchunk.core.errors import InputError
from fstchunk.evaluation.chunks import evaluate, f_beta, sentence_f
from fstchunk.decoding.expected import expected_f
from fstchunk.core.fbeta import check_beta, to_beta_sq, upgrade_settings
from fstchunk.grammars.registry import Options
from fstchunk.models.crf import CRF
from fstchunk.decoding.segments import meu_set
from fstchunk.evaluation.segments import score_segments
from fstchunk.decoding.selection import expected_f_scores
from fstchunk.learn import Trainer
from oracles import TINY_CONLL, random_scores
from test_training import IDENTITY, SENTS

BETAS = (0.0, 0.5, 1.0, 2.0, 3.0)
FIXTURES = os.path.join(os.path.dirname(__file__), "data", "beta_slides")


def f_pr(p: float, r: float, beta: float) -> float:
    """sklearn.metrics.fbeta_score's formula: (1+β²)·P·R / (β²·P + R), 0 when 0/0."""
    den = beta ** 2 * p + r
    return (1 + beta ** 2) * p * r / den if den > 0 else 0.0


# ------------------------------------------------------------------ the scorers
def test_f_beta_is_the_standard_formula_on_random_counts():
    rng = random.Random(0)
    for beta in BETAS:
        for _ in range(300):
            m_hyp, m_ref = rng.randint(1, 40), rng.randint(1, 40)
            tp = rng.randint(1, min(m_hyp, m_ref))
            p, r = tp / m_hyp, tp / m_ref
            assert f_beta(tp, m_hyp, m_ref, beta) == pytest.approx(f_pr(p, r, beta), rel=1e-12)
        assert f_beta(0, 0, 0, beta) == 1.0                           # 0/0 := 1
        assert f_beta(0, 3, 2, beta) == 0.0
        assert f_beta(0, 0, 5, beta) == (1.0 if beta == 0 else 0.0)   # F_0(∅) = 0/0 := 1
    assert f_beta(2, 4, 8, 0.0) == 0.5                                # F_0 = precision


def _random_corpus(rng, tags, k=25):
    gold, pred = [], []
    for _ in range(k):
        n = rng.randint(1, 10)
        gold.append([rng.choice(tags) for _ in range(n)])
        pred.append([rng.choice(tags) for _ in range(n)])
    return gold, pred


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "IOE1"])
@pytest.mark.parametrize("seed", range(4))
def test_sentence_f_and_evaluate_equal_the_standard_formula(scheme, seed):
    """Random (valid) tag sequences in several schemes, every β: the per-sentence F
    and conlleval's corpus figures against the formula on directly counted chunks."""
    rng = random.Random(seed)
    tags = enc.scheme_tags(scheme, ("NP", "VP"))
    seqs = {n: [y for y in map(list, itertools.product(tags, repeat=n))
                if enc.is_valid(y, scheme)] for n in range(1, 5)}
    gold, pred = [], []
    for _ in range(20):
        n = rng.randint(1, 4)
        gold.append(rng.choice(seqs[n]))
        pred.append(rng.choice(seqs[n]))
    for beta in BETAS:
        rep = evaluate(gold, pred, scheme=scheme, beta=beta)
        tp = found = ref = 0
        for k, (g, p) in enumerate(zip(gold, pred)):
            gc, pc = set(enc.tags_to_chunks(g, scheme)), set(enc.tags_to_chunks(p, scheme))
            want = (1.0 if not pc and (beta == 0 or not gc) else
                    f_pr(len(gc & pc) / len(pc) if pc else 0.0,
                         len(gc & pc) / len(gc) if gc else 0.0, beta))
            assert sentence_f(pc, gc, beta) == pytest.approx(want, abs=1e-12)
            assert rep.sentence_f[k] == pytest.approx(want, abs=1e-12)
            tp, found, ref = tp + len(gc & pc), found + len(pc), ref + len(gc)
        p, r = (100 * tp / found if found else 0.0), (100 * tp / ref if ref else 0.0)
        assert rep.overall.f == pytest.approx(f_pr(p, r, beta), rel=1e-12, abs=1e-12)
        assert rep.as_dict()["beta"] == beta


@pytest.mark.parametrize("seed", range(10))
def test_evaluate_equals_seqeval_at_every_beta(seed):
    """seqeval's precision_recall_fscore_support(beta=β) is the standard F_β."""
    from seqeval.metrics.sequence_labeling import precision_recall_fscore_support
    rng = random.Random(seed)
    gold, pred = _random_corpus(rng, ["O", "B-NP", "I-NP", "B-VP", "I-VP", "I-PP"])
    for beta in BETAS:
        rep = evaluate(gold, pred, beta=beta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                # seqeval's zero-division warning
            p, r, f, _ = precision_recall_fscore_support(gold, pred, average="micro", beta=beta)
        assert rep.overall.precision == pytest.approx(100 * p)
        assert rep.overall.recall == pytest.approx(100 * r)
        assert rep.overall.f == pytest.approx(100 * f, abs=1e-10), beta


def test_eval_cli_text_and_json_use_the_standard_beta(capsys, tmp_path):
    for beta in BETAS:
        _check_eval_cli(capsys, tmp_path, beta)


def _check_eval_cli(capsys, tmp_path, beta):
    rng = random.Random(7)
    gold, pred = _random_corpus(rng, ["O", "B-NP", "I-NP", "B-VP", "I-VP"], k=12)
    path = tmp_path / "scored.txt"
    path.write_text("\n\n".join("\n".join(f"w{i} {g} {p}" for i, (g, p) in enumerate(zip(gs, ps)))
                                for gs, ps in zip(gold, pred)) + "\n", encoding="utf-8")
    tp = found = ref = 0
    for g, p in zip(gold, pred):
        gc, pc = set(enc.conlleval_chunks(g)), set(enc.conlleval_chunks(p))
        tp, found, ref = tp + len(gc & pc), found + len(pc), ref + len(gc)
    want = f_pr(100 * tp / found, 100 * tp / ref, beta)
    assert main(["eval", str(path), "--beta", repr(beta)]) == 0
    text = capsys.readouterr().out
    label = "FB1" if beta == 1 else f"F{beta:g}"
    assert f"{label}: {want:6.2f}" in text.splitlines()[1], text
    assert main(["eval", str(path), "--beta", repr(beta), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["beta"] == beta
    assert d["overall"]["f"] == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_segment_scores_use_the_standard_beta():
    from fstchunk.io.segments import Segment
    gold = [[Segment("A", (0, 1)), Segment("B", (2,)), Segment("A", (4,))]]
    pred = [[Segment("A", (0, 1)), Segment("B", (3,))]]
    for beta in BETAS:
        r = score_segments(gold, pred, beta=beta)
        assert r.overall.f(beta) == pytest.approx(f_pr(50.0, 100 / 3, beta))
        assert r.to_json()["overall"]["f"] == pytest.approx(f_pr(50.0, 100 / 3, beta))


# ------------------------------------------------------------- the range of β
def test_check_beta_and_its_square():
    assert check_beta(0) == 0.0 and to_beta_sq(2) == 4.0 and to_beta_sq(np.float32(0.5)) == 0.25
    assert to_beta_sq(3 ** 0.5) == pytest.approx(3.0)
    for bad in (-1.0, float("nan"), float("inf"), True, "2", None, 1e-200, 1e200):
        with pytest.raises(InputError, match="beta must be a finite number >= 0"):
            check_beta(bad)
    with pytest.raises(InputError, match="beta must be a finite number > 0"):
        check_beta(0.0, positive=True)


def _beta_commands(parser, path=()):
    """(command path, the names of its required arguments) of every parser with --beta."""
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _beta_commands(sub, path + (name,))
        elif "--beta" in a.option_strings:
            yield path


#: per command with --beta: its minimal argv and the API it stands for, called with β
def _lat():
    tags = enc.scheme_tags("IOB2", ("NP",))
    return Lattice.from_scores(tags, *random_scores(np.random.default_rng(0), 3, 4))


COMMANDS = {
    ("eval",): (["x"], lambda b: evaluate([["B-NP"]], [["O"]], beta=b)),
    ("expected",): (["x", "--scores", "s"],
                    lambda b: expected_f(_lat(), reference=["O"] * 4, beta=b)),
    ("decode",): (["--model", "m", "--input", "x", "--decoder", "meu"],
                  lambda b: decode_lattices([_lat()], "meu", beta=b)),
    ("train",): (["--train", "x", "-o", "m", "--objective", "meu"],
                 lambda b: Trainer(objective="meu", beta=b)),
    ("joint", "decode"): (["--model", "m", "--input", "x"],      # joint.predict -> decode_meu
                          lambda b: decode_meu(_lat(), beta=b)),
    ("grammar",): (["print", "f-loss", "--gold", "B-NP,O"],
                   lambda b: Options(gold=("B-NP", "O"), beta=b)),
    ("segment", "decode"): (["--model", "m", "--input", "x", "--decoder", "meu"],
                            lambda b: meu_set([0.5, 0.2], beta=b)),  # SegmentModel.decode's
    ("segment", "eval"): (["g", "p"], lambda b: score_segments([[]], [[]], beta=b)),
    ("compare",): (["g", "a", "b"], lambda b: unit_counts([(["B-NP"], ["O"])], "conlleval",
                                                       beta=b)),
    ("select",): (["--model", "m", "--input", "x", "--budget", "1", "-o", "p"],
                  lambda b: expected_f_scores([_lat()], beta=b)),   # ties at β = 0
}


def test_every_beta_option_accepts_what_its_api_accepts(capsys):
    """β = 0 (F_0 = precision) and the refused values mean the same in the CLI and the
    API: accepted everywhere but training (where F_0's 0/0 := 1 makes 'no chunk' the
    optimum), one message otherwise."""
    parser = build_parser()
    assert set(_beta_commands(parser)) == set(COMMANDS)
    for path, (argv, api) in COMMANDS.items():
        for value in ("0", "0.5", "2", "-1", "nan", "inf", "1e-200"):
            try:
                api(float(value))
                api_ok = True
            except InputError as e:
                api_ok = False
                assert "beta must be a finite number" in str(e)
            try:
                args = parser.parse_args([*path, *argv, "--beta", value])
                cli_ok = True
                assert args.beta == float(value)
            except SystemExit as e:
                cli_ok = False
                assert e.code == 2
                err = capsys.readouterr().err
                assert "--beta: must be a finite number" in err, err
            assert cli_ok == api_ok, (path, value)
            assert api_ok == (value in ("0", "0.5", "2") and not (
                path in (("train",), ("select",)) and value == "0"))


def test_beta_zero_runs_through_the_commands(capsys, tmp_path):
    """End to end at β = 0: eval, expected, decode (MEU maximises expected precision;
    with 0/0 := 1 that is the tagging without chunks), grammar f-loss, segment eval."""
    from fstchunk.models.hmm import HMM
    from fstchunk.io.conll import read_conll
    data = tmp_path / "tiny.txt"
    data.write_text(TINY_CONLL, encoding="utf-8")
    model = tmp_path / "hmm.npz"
    HMM().fit(read_conll(data)).save(model)
    out = tmp_path / "out.txt"
    assert main(["decode", "--model", str(model), "--input", str(data), "--decoder", "meu",
                 "--beta", "0", "-o", str(out)]) == 0
    assert all(r[-1] == "O" for s in read_conll(out) for r in s.rows)
    assert main(["eval", str(out), "--beta", "0"]) == 0
    assert "F0:" in capsys.readouterr().out
    assert main(["expected", str(data), "--model", str(model), "--beta", "0", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["beta"] == 0.0
    # the corpus F of expected counts at β = 0 is the expected-count precision
    assert summary["corpus_f_of_expectations"] == pytest.approx(
        summary["expected_tp"] / summary["expected_m_hyp"], rel=1e-12)
    assert main(["grammar", "print", "f-loss", "--gold", "B-NP,O", "--beta", "0"]) == 0
    capsys.readouterr()
    seg = tmp_path / "seg.jsonl"
    seg.write_text(json.dumps({"tokens": ["a", "b"], "segments": [
        {"type": "A", "positions": [0]}]}) + "\n", encoding="utf-8")
    assert main(["segment", "eval", str(seg), str(seg), "--beta", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["f"] == 100.0


def test_expected_cli_corpus_f_uses_the_standard_beta(capsys, tmp_path):
    from fstchunk.models.hmm import HMM
    from fstchunk.io.conll import read_conll
    data = tmp_path / "tiny.txt"
    data.write_text(TINY_CONLL, encoding="utf-8")
    model = tmp_path / "hmm.npz"
    HMM().fit(read_conll(data)).save(model)
    for beta in (0.5, 2.0):
        assert main(["expected", str(data), "--model", str(model), "--beta", str(beta),
                     "--json"]) == 0
        s = json.loads(capsys.readouterr().out)["summary"]
        want = (1 + beta ** 2) * s["expected_tp"] / (s["expected_m_hyp"]
                                                     + beta ** 2 * s["expected_m_ref"])
        assert s["corpus_f_of_expectations"] == pytest.approx(want, rel=1e-12)


# ------------------------------------------------------------- training and files
def test_meu_corpus_objective_is_the_standard_corpus_f():
    """−(1+β²)·Σ E[tp] / (Σ E[m(x)] + β²·Σ m(y)), x ~ the model, y the gold (the counts
    were swapped before: F_{1/β})."""
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    crf.theta_ = np.random.default_rng(3).normal(scale=0.5, size=crf.theta_.shape)
    for beta in (0.5, 2.0):
        got = -crf.objective_function("meu-corpus", data, 0.0, beta)(crf.theta_)[0]
        rs = [expected_f(crf.lattice(s), reference=s.column(-1), beta=beta) for s in SENTS]
        tp, m_x, m_y = (sum(getattr(r, k) for r in rs) for k in ("tp", "m_hyp", "m_ref"))
        assert got == pytest.approx((1 + beta ** 2) * tp / (m_x + beta ** 2 * m_y), rel=1e-10)
        # and the per-sentence objective is the mean E[F_β] of the same direction
        got = -crf.objective_function("meu", data, 0.0, beta)(crf.theta_)[0]
        assert got == pytest.approx(np.mean([r.f for r in rs]), rel=1e-10)


def test_a_model_file_with_the_slides_beta_keeps_its_meaning():
    """A CRF trained by the old code with --objective meu --beta 4 (the slides' β' = 4)
    reads as β = 2, and its recorded objective value is the objective at β = 2."""
    old = CRF.load(os.path.join(FIXTURES, "meu_beta4.npz"))
    s = old.settings_
    assert (s["beta"], s["beta_slides"], s["beta_convention"]) == (2.0, 4.0, "standard")
    assert s["run"]["beta"] == 2.0 and "beta_slides" not in s["run"]
    _ = CRF("tmpt1")
    data = _._prepare(SENTS)
    value = old.objective_function("meu", data, s["l2"], s["beta"])(old.theta_)[0]
    assert value == pytest.approx(s["final_objective"], rel=1e-9)


def test_a_new_model_file_records_the_standard_beta(tmp_path):
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    crf.set_params(objective="meu", l2=0.1, beta=2.0, max_iter=2).fit(data, progress=False)
    path = tmp_path / "m.npz"
    crf.save(path)
    s = CRF.load(path).settings_
    assert (s["beta"], s["run"]["beta"], s["beta_convention"]) == (2.0, 2.0, "standard")
    assert "beta_slides" not in s


def test_resuming_a_checkpoint_with_the_slides_beta(tmp_path):
    """The old run's checkpoint (β' = 4) resumes under the standard β = 2 and is refused,
    naming β, under β = 4."""
    ckpt = str(tmp_path / "m.npz.ckpt")
    kw = dict(objective="meu", l2=0.1, max_iter=4, progress=False, identity=IDENTITY,
              checkpoint=ckpt, resume=True)
    shutil.copy(os.path.join(FIXTURES, "meu_beta4.npz.ckpt"), ckpt)
    crf = CRF("tmpt1")
    data = crf._prepare(SENTS)
    with pytest.raises(InputError, match=r"is of another run .*beta: 2\.0 vs 4\.0"):
        Trainer(beta=4.0, **kw).fit(crf, data)
    messages = []
    Trainer(beta=2.0, log=messages.append, **kw).fit(crf, data)
    assert messages[0].endswith("at iteration 2")
    assert crf.settings_["beta"] == 2.0 and crf.settings_["iteration"] > 2


def test_upgrade_settings_converts_once_and_only_numbers():
    old = {"beta": 2.0, "run": {"beta": 2.0, "l2": 0.1}, "l2": 0.1}
    new = upgrade_settings(old)
    assert new["beta"] == math.sqrt(2.0) and new["run"]["beta"] == math.sqrt(2.0)
    assert new["beta_slides"] == 2.0 and old["beta"] == 2.0           # the input unchanged
    assert upgrade_settings(new) == new                                 # labelled: kept
    assert upgrade_settings({"l2": 0.1}) == {"l2": 0.1}                 # no β: untouched
    assert upgrade_settings({"beta": None}) == {"beta": None}           # a non-finite β


# ------------------------------------------------------------------------- torch
def test_torch_layer_losses_use_the_standard_beta():
    """CRFLayer's expected-F losses at β ≠ 1 against enumeration with the standard F."""
    torch = pytest.importorskip("torch")
    from fstchunk.torch import CRFLayer
    from oracles import f_standard
    from test_torch_crf import enumerate_valid
    tags = list(enc.scheme_tags("IOB2", ("A", "B")))
    layer = CRFLayer(tags, "IOB2", dtype=torch.float64)
    with torch.no_grad():
        layer.transitions.normal_(generator=torch.Generator().manual_seed(0))
    rng = np.random.default_rng(1)
    em = torch.tensor(rng.normal(size=(2, 4, len(tags))))
    mask = torch.tensor([[True] * 4, [True] * 3 + [False]])
    gold = [["B-A", "I-A", "O", "B-B"], ["O", "B-B", "I-B"]]
    for beta in (0.0, 0.5, 2.0):
        per, tp, m_x, m_y = [], 0.0, 0.0, 0
        for b, n in enumerate((4, 3)):
            seqs, _ = enumerate_valid(tags, "IOB2", em[b, :n].numpy(),
                                      layer.transitions.detach().numpy(),
                                      np.zeros(len(tags)), np.zeros(len(tags)))
            g = frozenset(enc.tags_to_chunks(gold[b], "IOB2"))
            per.append(sum(p * f_standard(len(c & g), len(c), len(g), beta)
                           for _, c, p in seqs))
            tp += sum(p * len(c & g) for _, c, p in seqs)
            m_x += sum(p * len(c) for _, c, p in seqs)
            m_y += len(g)
        got = layer.loss(em, mask, gold, "expected-f", beta=beta).item()
        assert got == pytest.approx(1 - np.mean(per), abs=1e-10), beta
        got = layer.loss(em, mask, gold, "expected-corpus-f", beta=beta).item()
        assert got == pytest.approx(1 - f_standard(tp, m_x, m_y, beta), abs=1e-10), beta
