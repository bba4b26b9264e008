"""Calibration of the joint model (issue 16, item 3): the temperature T of
p(y|x) ∝ exp(score/T), fitted by maximum likelihood on held-out sentences; MEU and
every probabilistic use refused for an uncalibrated perceptron/MMVP model, MAP not.

Oracles: brute-force enumeration of every structure of tiny sentences (NLL, E_T[score]),
finite differences (dNLL/dT), and sampling gold structures from a known T."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstchunk.io.conll import data_path, read_conll
from fstchunk.decoding.decode import decode_map, decode_meu
from fstchunk.core.errors import InputError
from fstchunk.models import joint as J
from fstchunk.models.joint import calibration as cal
from oracles import brute_joint as brute

C, P, OUT = 3, 2, 2


def random_parts(rng, n, scale=1.0):
    parts = J.Parts(*(rng.normal(size=s) * scale for s in
                      ((n, C, P), (n, C, P, P), (n, C), (n, C), (n, C, C))))
    parts.trans[0] = 0.0
    parts.ctrans[0] = 0.0
    parts.ctrans[1:, OUT, OUT] = -np.inf
    return parts


def held_out(parts_list, golds):
    return cal.HeldOut(lambda i: parts_list[i], golds, [p.shape[0] for p in parts_list],
                       2 * C * P)


def brute_nll(parts_list, golds, T):
    """Σ log Σ_y exp(s(y)/T) − s(gold)/T and Σ s(gold) − E_T[s], by enumeration."""
    nll = h = 0.0
    for parts, g in zip(parts_list, golds):
        _, sc = brute(parts, C, P, OUT)
        logz = np.logaddexp.reduce(sc / T)
        gs = J.structure_score(parts, g)
        nll += logz - gs / T
        h += gs - float(np.exp(sc / T - logz) @ sc)
    return nll, h


def sample(rng, parts, T):
    ys, sc = brute(parts, C, P, OUT)
    pr = np.exp(sc / T - np.logaddexp.reduce(sc / T))
    return ys[rng.choice(len(ys), p=pr)]


def tiny_set(seed, m, T, scale=2.0):
    rng = np.random.default_rng(seed)
    parts_list = [random_parts(rng, int(rng.integers(1, 4)), scale) for _ in range(m)]
    return parts_list, [sample(rng, p, T) for p in parts_list]


# ------------------------------------------------------------------ the fit
@pytest.mark.parametrize("T", [0.3, 1.0, 2.5])
def test_nll_and_its_gradient_equal_brute_force(T):
    parts_list, golds = tiny_set(1, 12, 1.0)
    held = held_out(parts_list, golds)
    nll, h = held.evaluate(T)
    want_nll, want_h = brute_nll(parts_list, golds, T)
    assert nll == pytest.approx(want_nll, rel=1e-10)
    assert h == pytest.approx(want_h, rel=1e-9, abs=1e-10)
    e = 1e-5 * T                                     # dNLL/dT = h / T² by finite differences
    fd = (held.evaluate(T + e)[0] - held.evaluate(T - e)[0]) / (2 * e)
    assert fd == pytest.approx(h / T ** 2, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("T0", [0.4, 1.0, 3.0])
def test_fit_recovers_the_temperature_the_gold_was_sampled_at(T0):
    parts_list, golds = tiny_set(7, 600, T0)
    fit = cal.fit_temperature(held_out(parts_list, golds))
    assert fit.temperature == pytest.approx(T0, rel=0.15)
    assert not fit.at_bound and fit.sentences == 600
    held = held_out(parts_list, golds)
    assert abs(held.evaluate(fit.temperature)[1]) < 1e-6 * len(golds)   # gradient zero there
    for k in (0.9, 1.1):                                             # and it is a minimum
        assert held.evaluate(fit.temperature * k)[0] > fit.nll * len(golds)
    assert fit.nll == pytest.approx(brute_nll(parts_list, golds, fit.temperature)[0] / 600)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), k=st.floats(0.01, 100.0))
def test_temperature_scales_with_the_scores(seed, k):
    """T fitted to scores k·s is k times the T fitted to s (MLE is scale-equivariant)."""
    parts_list, golds = tiny_set(seed, 30, 1.0)
    t1 = cal.fit_temperature(held_out(parts_list, golds))
    tk = cal.fit_temperature(held_out([p.scaled(k) for p in parts_list], golds))
    assert tk.temperature == pytest.approx(k * t1.temperature, rel=1e-5)


def test_cached_rebuilt_and_split_batches_agree(monkeypatch):
    parts_list, golds = tiny_set(3, 40, 0.8)
    cached = cal.fit_temperature(held_out(parts_list, golds))
    monkeypatch.setattr(cal._t, "CACHE_FLOATS", 0)
    held = held_out(parts_list, golds)
    assert held._cache is None and len(held.groups) == 3          # lengths 1, 2, 3
    assert cal.fit_temperature(held).temperature == pytest.approx(cached.temperature,
                                                                   rel=1e-12)
    monkeypatch.setattr(cal._t, "BATCH_FLOATS", 1)                     # one sentence a batch
    held = held_out(parts_list, golds)
    assert len(held.groups) == 40
    assert cal.fit_temperature(held).temperature == pytest.approx(cached.temperature,
                                                                   rel=1e-12)


def test_gold_always_best_stops_at_the_lower_bound():
    rng = np.random.default_rng(5)
    parts_list = [random_parts(rng, 3) for _ in range(5)]
    golds = [J.viterbi(p)[0] for p in parts_list]
    fit = cal.fit_temperature(held_out(parts_list, golds))
    assert fit.at_bound and fit.temperature < 0.01                  # scores are O(1)
    assert abs(fit.nll) < 1e-9 < fit.nll_untempered          # NLL 0 up to rounding


def test_gold_worse_than_average_is_refused():
    rng = np.random.default_rng(6)
    parts_list = [random_parts(rng, 3) for _ in range(5)]
    worst = [J.Parts(*(np.where(np.isfinite(a), -a, a) for a in
                       (p.node, p.trans, p.start, p.end, p.ctrans))) for p in parts_list]
    golds = [J.viterbi(p)[0] for p in worst]                        # the worst structures
    with pytest.raises(InputError, match="carry no information to calibrate"):
        cal.fit_temperature(held_out(parts_list, golds))
    with pytest.raises(InputError, match="at least one held-out sentence"):
        cal.fit_temperature(held_out([], []))


# ------------------------------------------------------------ the model
@pytest.fixture(scope="module")
def slices():
    """Set D's first 150 sentences to train on; 150 dev sentences to calibrate on and
    the next 120 of at most 15 tokens to evaluate on (exact MEU is slow on long
    sentences; dev only: no test figure here)."""
    train, dev = data_path("conll2000", "train.txt"), data_path("conll2000", "dev.txt")
    if not (os.path.exists(train) and os.path.exists(dev)):
        pytest.skip("corpus not found (set FSTCHUNK_DATA)")

    def read(path, a, b):
        return J.layered(read_conll(path)[a:b], collapse=True, np_chunks=True)
    ev = [d for d in read(dev, 150, 1000) if len(d.pos) <= 15][:120]
    return read(train, 0, 150), read(dev, 0, 150), ev


def trained(slices, algorithm):
    model, enc = J.model_for(slices[0], "joint", {"collapse_pos": True, "np_only": True})
    return model.set_params(algorithm=algorithm, max_iter=5 if algorithm != "crf" else 8).fit(enc)


def test_uncalibrated_mmvp_refuses_meu_but_decodes_map(slices, tmp_path):
    model = trained(slices, "mmvp")
    assert not model.probabilistic
    _, _, ev = slices
    x = J.encode(model, ev[0], gold=False)
    for call in (lambda: J.predict(model, ev[:3], "meu"), lambda: model.marginals(x),
                 lambda: model.token_marginals(x), lambda: model.chunk_lattice(x),
                 lambda: model.lattices([d.sentence for d in ev[:3]])):
        with pytest.raises(InputError, match=r"this joint model was trained by mmvp; its "
                                             r"scores are not probabilities\. Calibrate it on "
                                             r"held-out sentences first: fstchunk\."
                                             r"joint\.calibrate\(model, ") as e:
            call()
        assert e.value.cli_text().endswith(
            "first: fstchunk joint calibrate --model MODEL --input HELDOUT -o MODEL (or "
            "joint train --calibrate HELDOUT)")
    path = tmp_path / "mmvp.npz"
    model.save(path)
    back = J.JointModel.load(path)
    with pytest.raises(InputError, match=f"{path} was trained by mmvp") as e:
        J.predict(back, ev[:3], "meu")
    assert f"--model {path} --input HELDOUT -o {path}" in e.value.cli_text()
    pos, chunks = J.predict(back, ev, "map")                      # MAP needs no calibration
    lats = back.lattices([d.sentence for d in ev], require_probabilities=False)
    assert [decode_map(lat).tags for lat in lats] == chunks


def test_calibrated_meu_is_close_to_map_where_raw_scores_fail(slices, tmp_path):
    """The failure of issue 16 item 3, on a slice: MEU of the raw MMVP scores is far
    below MAP; calibrated on held-out sentences MEU is within noise of MAP."""
    model = trained(slices, "mmvp")
    _, heldout, ev = slices
    raw = [decode_meu(model.chunk_lattice(J.encode(model, d, gold=False), False)).tags
           for d in ev]
    pos, map_chunks = J.predict(model, ev)
    f_map = J.scores(ev, pos, map_chunks)["np_f1"]
    f_raw = J.scores(ev, pos, raw)["np_f1"]
    T = J.calibrate(model, heldout, source="dev.txt[0:150]")
    assert model.probabilistic and model.temperature == T and 0 < T < 1
    assert model.settings_["calibrated_on"] == {"source": "dev.txt[0:150]", "sentences": 150}
    assert model.settings_["calibration_nll"] > 0
    assert J.predict(model, ev)[1] == map_chunks                   # MAP unchanged by T
    f_meu = J.scores(ev, *J.predict(model, ev, "meu"))["np_f1"]
    assert f_meu > f_map - 2.5 and f_meu > f_raw + 20.0, (f_map, f_raw, f_meu)
    path = tmp_path / "calibrated.npz"
    model.save(path)
    back = J.JointModel.load(path)
    assert back.temperature == T and back.probabilistic
    assert J.predict(back, ev[:20], "meu") == J.predict(model, ev[:20], "meu")
    enc = J.model_for(slices[0], "joint")[1]
    back.set_params(algorithm="mmvp", max_iter=1).fit(enc)                          # new weights: the old T is dropped
    assert not back.probabilistic and "temperature" not in back.settings_


def test_crf_is_probabilistic_and_may_be_calibrated(slices):
    model = trained(slices, "crf")
    assert model.probabilistic and model.temperature == 1.0
    _, heldout, ev = slices
    J.predict(model, ev[:5], "meu")                  # no calibration needed
    map_chunks = J.predict(model, ev)[1]
    T = J.calibrate(model, heldout)
    assert 0.3 < T < 3.0                             # a CRF is roughly calibrated already
    assert model.settings_["calibrated_on"]["source"] == "<unnamed>"
    assert J.predict(model, ev)[1] == map_chunks


def test_calibration_input_errors(slices):
    model = trained(slices, "perceptron")
    _, heldout, _ = slices
    with pytest.raises(InputError, match="held-out.txt: no held-out sentences"):
        J.calibrate(model, [], source="held-out.txt")
    with pytest.raises(InputError, match="held-out sentence 1 of h.txt: calibration needs gold"):
        model.calibrate([J.encode(model, heldout[0], gold=False)], "h.txt")
    tagger, enc = J.model_for(slices[0], "tagger")
    tagger.set_params(algorithm="perceptron", max_iter=1).fit(enc)
    with pytest.raises(InputError, match="tagger model has no chunk layer to calibrate"):
        J.calibrate(tagger, heldout[:5])
    gold_worst = []                       # gold structures the model scores worst
    for d in heldout[:10]:
        x = J.encode(model, d)
        p = model.parts(x)
        worst = J.viterbi(J.Parts(*(np.where(np.isfinite(a), -a, a) for a in
                                    (p.node, p.trans, p.start, p.end, p.ctrans))))[0]
        gold_worst.append(J.Encoded(x.ids, x.n, worst))
    with pytest.raises(InputError, match="^bad.txt: calibration: on the 10 held-out sentences "
                                         "the gold structures score below"):
        model.calibrate(gold_worst, "bad.txt")
    assert not model.probabilistic
