"""Calibration of a CRF (issue 18: MEU decoding of a max-margin model): the temperature T
of p(y|x) ∝ exp(θ·φ(x, y)/T) by maximum likelihood on held-out sentences.

Oracles: brute-force enumeration of every valid tag sequence of short held-out
sentences (the NLL is minimal at T, its derivative 0 there); the scale equivariance
(θ·k gives T·k and the same probabilities); the refusals (an uncalibrated max-margin
model takes MAP only; retraining drops a stale T) and the command line."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.io.conll import Sentence
from fstchunk.decoding.batch import decode_sentences
from fstchunk.core.errors import InputError
from fstchunk.models import load_model
from fstchunk.models.crf import CRF
from fstchunk.models.maxmargin import sequence_score

from oracles import TINY_CONLL

TRAIN = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["Dogs", "NNS", "B-NP"], ["run", "VBP", "B-VP"]]),
         Sentence([["He", "PRP", "B-NP"], ["is", "VBZ", "B-VP"], ["running", "VBG", "I-VP"]])]
#: held out: some gold tags the model will not predict, so T is finite
HELD = [Sentence([["The", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["runs", "VBZ", "B-VP"]]),
        Sentence([["A", "DT", "B-NP"], ["dog", "NN", "B-NP"], ["barks", "VBZ", "B-VP"],
                  [".", ".", "O"]]),
        Sentence([["He", "PRP", "O"], ["sleeps", "VBZ", "B-VP"]]),
        Sentence([["Cats", "NNS", "B-NP"], ["is", "VBZ", "I-NP"]])]


def _margin_model() -> CRF:
    crf = CRF("tmpt1")
    data = crf._prepare(TRAIN)
    return crf.set_params(objective="max-margin", l2=0.02, max_iter=200, tol=1e-6).fit(data)


def _brute(crf: CRF, theta: np.ndarray, sents) -> list[tuple[np.ndarray, float]]:
    """Per sentence: the scores θ·φ(x, y) of every valid y, and the gold's."""
    probe = crf.copy(theta)
    probe.settings_ = {}
    out = []
    for s, lat in zip(sents, probe.lattices(sents)):
        em, tr, st, en = lat.scores
        every = [np.array(y) for y in itertools.product(range(len(crf.tags_)), repeat=len(s))
                 if enc.is_valid([crf.tags_[t] for t in y], crf.scheme_)]
        gold = np.array([crf.tags_.index(t) for t in s.column(-1)])
        out.append((np.array([sequence_score(em, tr, st, en, y) for y in every]),
                    sequence_score(em, tr, st, en, gold)))
    return out


def _nll(table, T: float) -> float:
    return sum(logsumexp(scores / T) - gold / T for scores, gold in table)


def test_the_temperature_is_the_brute_force_maximum_likelihood():
    crf = _margin_model()
    table = _brute(crf, crf.theta_, HELD)
    T = crf.calibrate(HELD, source="held")
    assert 0 < T < np.inf and crf.settings_["calibrated_on"] == {"source": "held",
                                                               "sentences": len(HELD)}
    for step in (1.02, 1 / 1.02):
        assert _nll(table, T) < _nll(table, T * step)
    h = sum(gold - np.exp(scores / T - logsumexp(scores / T)) @ scores
            for scores, gold in table)                     # T·dNLL/dlog T
    assert abs(h) < 1e-6 * sum(abs(g) for _, g in table)
    assert crf.settings_["calibration_nll"] == pytest.approx(_nll(table, T) / len(HELD),
                                                            rel=1e-9)
    assert crf.settings_["calibration_nll_t1"] == pytest.approx(_nll(table, 1.0) / len(HELD),
                                                               rel=1e-9)
    # the calibrated lattices are those of θ/T: the brute-force distribution
    for (scores, gold), lat in zip(table, crf.lattices(HELD)):
        assert lat.log_partition() == pytest.approx(logsumexp(scores / T), rel=1e-12)


def test_scaling_the_scores_scales_the_temperature():
    crf = _margin_model()
    T = crf.calibrate(HELD)
    big = crf.copy(1000.0 * crf.theta_)
    big.settings_ = {"objective": "max-margin"}
    assert big.calibrate(HELD) == pytest.approx(1000.0 * T, rel=1e-6)
    for a, b in zip(crf.lattices(HELD), big.lattices(HELD)):
        np.testing.assert_allclose(a.marginals(), b.marginals(), atol=1e-8)
    assert decode_sentences(crf, HELD, "meu") == decode_sentences(big, HELD, "meu")


def test_an_uncalibrated_max_margin_model_decodes_map_only(tmp_path):
    crf = _margin_model()
    maps = decode_sentences(crf, HELD, "map")
    for decoder in ("meu", "posterior", "meu-kbest", "meu-corpus"):
        with pytest.raises(InputError, match=r"crf\.calibrate\(held_out_sentences\)") as e:
            decode_sentences(crf, HELD, decoder)
        assert "fstchunk calibrate --model" in e.value.cli_text()
    with pytest.raises(InputError, match="scores are margins"):
        crf.lattices(HELD)
    crf.calibrate(HELD)
    assert decode_sentences(crf, HELD, "map") == maps            # T does not move MAP
    decode_sentences(crf, HELD, "meu")
    path = str(tmp_path / "m.npz")
    crf.save(path)
    again = load_model(path)
    assert again.temperature == crf.temperature and again.probabilistic
    # training θ again makes T stale: it is dropped, and a max-margin θ is refused again
    crf2 = CRF("tmpt1")
    data = crf2._prepare(TRAIN)
    crf2.settings_["temperature"] = 3.0
    crf2.set_params(objective="max-margin", l2=0.05, max_iter=3).fit(data)
    assert "temperature" not in crf2.settings_ and not crf2.probabilistic
    ml = crf.copy()
    ml.set_params(objective="ml", l2=0.01, max_iter=5, warm_start=True).fit(TRAIN)
    assert "temperature" not in ml.settings_ and ml.probabilistic


def test_an_ml_crf_is_probabilistic_and_may_be_calibrated():
    crf = CRF("tmpt1")
    data = crf._prepare(TRAIN)
    crf.set_params(objective="ml", l2=0.01, max_iter=30).fit(data)
    assert crf.probabilistic and crf.temperature == 1.0
    decode_sentences(crf, HELD, "meu")
    assert crf.calibrate(HELD) > 0


def test_held_out_sentences_with_an_unseen_tag_are_refused():
    crf = _margin_model()
    bad = [Sentence([["The", "DT", "B-ADJP"], ["cat", "NN", "I-ADJP"]], source="h.txt:3")]
    with pytest.raises(Exception, match="ADJP"):
        crf.calibrate(bad, source="h.txt")


def test_cli_train_calibrate_decode(capsys, tmp_path):
    train = tmp_path / "train.txt"
    train.write_text(TINY_CONLL)
    model, cal = str(tmp_path / "mm.npz"), str(tmp_path / "cal.npz")
    assert main(["train", "--train", str(train), "--features", "tmpt1", "--objective",
                 "max-margin", "--max-iter", "20", "-o", model, "--quiet"]) == 0
    capsys.readouterr()
    code = main(["decode", "--model", model, "--input", str(train), "--decoder", "meu"])
    out, err = capsys.readouterr()
    assert code == 2 and "fstchunk calibrate --model" in err and out == ""   # before any work
    assert main(["decode", "--model", model, "--input", str(train)]) == 0      # MAP
    capsys.readouterr()
    assert main(["calibrate", "--model", model, "--input", str(train), "-o", cal]) == 0
    assert "temperature" in capsys.readouterr().out
    assert CRF.load(cal).temperature > 0
    assert main(["decode", "--model", cal, "--input", str(train), "--decoder", "meu"]) == 0
    capsys.readouterr()
    both = str(tmp_path / "both.npz")
    assert main(["train", "--train", str(train), "--features", "tmpt1", "--objective",
                 "max-margin", "--max-iter", "20", "--calibrate", str(train), "-o", both,
                 "--quiet"]) == 0
    assert CRF.load(both).temperature == pytest.approx(CRF.load(cal).temperature, rel=1e-9)
    capsys.readouterr()
    hmm = str(tmp_path / "hmm.npz")
    assert main(["train", "--train", str(train), "--model-type", "hmm", "-o", hmm]) == 0
    capsys.readouterr()
    assert main(["calibrate", "--model", hmm, "--input", str(train), "-o", cal]) == 2
    assert "a hmm model; calibrate fits a CRF's temperature" in capsys.readouterr().err
    assert main(["train", "--train", str(train), "--model-type", "hmm", "--calibrate",
                 str(train), "-o", hmm]) == 2
    assert "--calibrate: --model-type hmm is estimated by counting and does not read it" \
        in capsys.readouterr().err


def test_cli_train_calibrate_failure_names_the_uncalibrated_model(capsys, tmp_path):
    """A held-out file the calibration refuses (a tag the model never saw) is one error
    that says the trained model was written uncalibrated and how to calibrate it later;
    the file on disk is that model, and it refuses MEU until calibrated."""
    train, held = tmp_path / "train.txt", tmp_path / "held.txt"
    train.write_text(TINY_CONLL)
    held.write_text("The DT B-ADJP\ncat NN I-ADJP\n")
    model = str(tmp_path / "mm.npz")
    code = main(["train", "--train", str(train), "--features", "tmpt1", "--objective",
                 "max-margin", "--max-iter", "5", "--calibrate", str(held), "-o", model,
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "ADJP" in err and f"written to {model} without calibration" in err
    assert f"fstchunk calibrate --model {model}" in err
    assert not CRF.load(model).probabilistic
