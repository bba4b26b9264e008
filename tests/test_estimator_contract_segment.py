"""The estimator contract (issue 45, :mod:`fstchunk.models.estimator`) for
:class:`fstchunk.SegmentModel`: items 1-4 (hyper-parameters as given, ``fit`` never
rewrites them and refuses them as options, fitted state in ``*_`` attributes with the
old names as warning aliases, ``warm_start``), the names the shared code reads (item 5),
the model files (item 6), and behaviour unchanged (item 7): trained weights equal to
those of the code before the change at 1e-12 and its decode outputs identical
(tests/data/v2/segment-contract.*, written by tests/data/v2/make_segment_contract.py on
that code)."""

import inspect
import json
import os
import warnings

import numpy as np
import pytest

from fstchunk.core.errors import FstchunkDeprecationWarning, InputError
from fstchunk.models import load_model
from fstchunk.models.segment import SegmentModel
from segment_contract_data import CONFIGS, PROBE, TOY, conll_sentences, runs

V2 = os.path.join(os.path.dirname(__file__), "data", "v2")
#: the old code's messages for each bad hyper-parameter (its constructor raised them)
BAD = (({"D": 0}, "D must be an integer >= 1, got 0"),
       ({"predicates": "crf"}, "unknown predicate set 'crf'"),
       ({"max_gap": "two"}, "max_gap must be None or an integer >= 0, got 'two'"),
       ({"k": 0}, "k must be None or an integer >= 1, got 0"),
       ({"restrictions": "no-crossing"}, "no-crossing"),
       ({"threshold": float("nan")}, "threshold must be a finite number, got nan"),
       ({"average": "yes"}, "average must be True or False, got 'yes'"),
       ({"seed": -1}, "seed must be an integer >= 0, got -1"),
       ({"max_sweeps": 0}, "max_sweeps must be an integer >= 1, got 0"),
       ({"max_iter": 0}, "max_iter must be an integer >= 1, got 0"),
       ({"warm_start": 1}, "warm_start must be True or False, got 1"))


def rows(pred):
    return [[[g.type, list(g.positions)] for g in segs] for segs in pred]


def public_fitted(model) -> set:
    return {n for n in vars(model) if n.endswith("_") and not n.startswith("_")}


# ---------------------------------------------------------------- 1. __init__
def test_init_stores_every_hyperparameter_as_given():
    sig = inspect.signature(SegmentModel.__init__)
    assert all(p.default is not p.empty for n, p in sig.parameters.items() if n != "self")
    given = dict(D=np.int64(2 ** 10), max_gap="auto", k=None,
                 restrictions="no-overlap,contiguous", threshold=1, average=True,
                 seed=np.int32(3), max_sweeps=20, predicates="mcp05", max_iter=2,
                 warm_start=False)
    m = SegmentModel(**given)
    got = m.get_params()
    assert list(got) == list(sig.parameters)[1:]
    assert all(got[k] is v for k, v in given.items())            # no conversion at all
    again = type(m)(**got)
    assert again.get_params() == got and repr(again) == repr(m) and not again.fitted
    assert m.set_params(k=4) is m and m.k == 4
    with pytest.raises(InputError, match="unknown SegmentModel parameter 'types'"):
        m.set_params(types=["PER"])
    # the trained weights of the model built from the given values are those of the
    # converted ones (fit converts; what is stored stays)
    a = m.set_params(k=None).fit(TOY)
    b = SegmentModel(**{**given, "D": 2 ** 10, "seed": 3}).fit(TOY)
    np.testing.assert_array_equal(a.W_, b.W_)
    assert type(m.D) is np.int64 and type(m.seed) is np.int32


@pytest.mark.parametrize("bad, message", BAD)
def test_init_checks_nothing_fit_raises_the_old_message(bad, message):
    m = SegmentModel(**{"D": 2 ** 10, "max_iter": 1, **bad})        # no error here
    assert m.get_params()[next(iter(bad))] is next(iter(bad.values()))
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        m.fit(TOY)
    assert not m.fitted and public_fitted(m) == set()


def test_a_bad_set_params_leaves_the_fitted_model_as_it_was():
    m = SegmentModel(D=2 ** 10, max_iter=2).fit(TOY)
    W = m.W_.copy()
    m.set_params(D=0)
    with pytest.raises(InputError, match="D must be an integer >= 1"):
        m.fit(TOY)
    assert m.fitted and np.array_equal(m.W_, W)
    assert rows(m.decode(PROBE)) == rows(m.set_params(D=2 ** 10).decode(PROBE))


# ---------------------------------------------------------------- 2. fit
def test_fit_returns_self_and_never_rewrites_a_hyperparameter():
    m = SegmentModel(D=2 ** 10, max_gap="auto", threshold=0.2, restrictions="no-overlap",
                     max_iter=2)
    before = m.get_params()
    assert m.fit(TOY, dev=TOY[:3], select="dev", identity={"data": "toy"},
                 record={"train": "toy"}, dev_restrictions="contiguous") is m
    assert m.get_params() == before
    assert m.max_gap == "auto" and m.max_gap_ == 2
    assert m.restrictions == "no-overlap" and m.restrictions_["no_overlap"]
    assert m.settings_["train"] == "toy" and m.settings_["run"]["data"] == "toy"
    m.calibrate(PROBE)
    tuned = m.tune_threshold(PROBE)
    assert m.threshold == 0.2 and m.threshold_ == tuned
    assert m.settings_["threshold_tuned_on"]["before"] == 0.2
    assert m.get_params() == before
    m.fit(TOY)                                        # starts from the hyper-parameter
    assert m.threshold_ == 0.2 and "threshold_tuned_on" not in m.settings_


@pytest.mark.parametrize("name", list(inspect.signature(SegmentModel.__init__).parameters)[1:])
def test_a_hyperparameter_given_to_fit_is_one_error(name):
    m = SegmentModel(D=2 ** 10)
    value = m.get_params()[name]
    with pytest.raises(InputError, match=rf"takes no hyper-parameter \({name}\).*"
                                         rf"set_params\({name}="):
        m.fit(TOY, **{name: value})
    assert not m.fitted


# ---------------------------------------------------------------- 3. fitted state
def test_fitted_state_ends_in_underscore_and_the_old_names_alias_it(tmp_path):
    unfitted = SegmentModel(D=2 ** 10, max_iter=2)
    assert public_fitted(unfitted) == set() and not unfitted.fitted
    assert not hasattr(unfitted, "W_") and not hasattr(unfitted, "types_")
    for call in (lambda: unfitted.decode(TOY[:1]), lambda: unfitted.save(tmp_path / "x"),
                 lambda: unfitted.theta_):
        with pytest.raises(InputError, match="not fitted"):
            call()
    fitted = SegmentModel(D=2 ** 10, max_iter=2).fit(TOY)
    new = set(vars(fitted)) - set(vars(unfitted))
    assert new and all(n.endswith("_") or n.startswith("_") for n in new)
    assert {"types_", "type_index_", "W_", "pos_", "max_gap_", "threshold_",
            "restrictions_", "settings_", "layout_", "scheme_",
            "other_weights_"} <= public_fitted(fitted) and fitted.fitted
    fitted.save(tmp_path / "m.npz")
    loaded = load_model(str(tmp_path / "m.npz"))
    assert public_fitted(loaded) == public_fitted(fitted) and loaded.fitted
    # the old names read and write the new ones, with a deprecation warning
    for old in ("types", "type_index", "W", "theta", "pos", "settings", "layout",
                "data_scheme", "other_weights"):
        with pytest.warns(FstchunkDeprecationWarning, match=rf"SegmentModel\.{old} is "
                                                            rf"SegmentModel\.{old}_"):
            value = getattr(fitted, old)
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, getattr(fitted, old + "_"))
        else:
            assert value is getattr(fitted, old + "_") or value == getattr(fitted, old + "_")
    theta = fitted.theta_ + 1.0
    with pytest.warns(FstchunkDeprecationWarning):
        fitted.theta = theta
    np.testing.assert_array_equal(fitted.W_.ravel(), theta)
    fitted.theta_ = theta * 2
    np.testing.assert_array_equal(fitted.W_.ravel(), theta * 2)
    with pytest.raises(InputError, match="θ has 3 entries"):
        fitted.theta_ = np.zeros(3)


def test_the_shared_codes_names():
    conll = conll_sentences(V2)
    m = SegmentModel(D=2 ** 10, max_iter=1).fit(conll)
    assert isinstance(m.settings_, dict) and m.scheme_ is None
    assert m.layout_ is not None and m.data_scheme_ == m.layout_.data_scheme == "IOB2"
    assert m.kind == "segment" and m.theta_.shape == (m.W_.size,)
    with warnings.catch_warnings():            # the new names warn nothing
        warnings.simplefilter("error", FstchunkDeprecationWarning)
        m.decode(conll)
        m.calibrate(conll)
        m.tune_threshold(conll)
        assert m.layout_mismatch(conll) is None and m.calibrated


# ---------------------------------------------------------------- 4. warm_start
def test_warm_start():
    fresh = SegmentModel(D=2 ** 10, max_iter=2).fit(TOY)
    m = SegmentModel(D=2 ** 10, max_iter=2)
    assert m.fit(TOY[:2]).types_ == ["PER"]               # warm_start=False: afresh
    assert m.fit(TOY).types_ == fresh.types_
    np.testing.assert_array_equal(m.W_, fresh.W_)
    warm = SegmentModel(D=2 ** 10, max_iter=2, warm_start=True)
    np.testing.assert_array_equal(warm.fit(TOY).W_, fresh.W_)   # unfitted: afresh
    W = warm.W_.copy()
    with pytest.raises(InputError, match="warm_start=True: a segment model cannot train "
                                         "on from its weights.*resume=True"):
        warm.fit(TOY)
    assert warm.fitted and np.array_equal(warm.W_, W)           # untouched
    np.testing.assert_array_equal(warm.set_params(warm_start=False).fit(TOY).W_, W)


# ---------------------------------------------------------------- 6-7. the old code
with open(os.path.join(V2, "segment-contract.json"), encoding="utf-8") as fh:
    OLD = json.load(fh)


@pytest.fixture(scope="module")
def old_arrays():
    with np.load(os.path.join(V2, "segment-contract.npz")) as z:
        return dict(z)


@pytest.mark.parametrize("name", CONFIGS)
def test_weights_and_outputs_are_the_old_codes(name, old_arrays):
    """The run of the old ``SegmentModel(**hyper).fit(data, max_iter=n, **options)``
    as ``SegmentModel(**hyper, max_iter=n).fit(data, **options)``: W (and the last W)
    at 1e-12, the same types, max gap, history and selected epoch, identical decode
    outputs (threshold, lower threshold, MEU after calibration, after tuning)."""
    hyper, data, options, probe = runs(conll_sentences(V2))[name]
    ref = OLD[name]
    m = SegmentModel(**hyper).fit(data, **options)
    np.testing.assert_allclose(m.W_, old_arrays[f"{name}/W"], rtol=1e-12, atol=1e-12)
    if f"{name}/other" in old_arrays:
        np.testing.assert_allclose(m.other_weights_, old_arrays[f"{name}/other"],
                                   rtol=1e-12, atol=1e-12)
    else:
        assert m.other_weights_ is None
    assert m.types_ == ref["types"] and m.max_gap_ == ref["max_gap"]
    history = json.loads(json.dumps(m.settings_["history"]))
    assert [{k: v for k, v in h.items() if k != "violated"} for h in history] == \
        [{k: v for k, v in h.items() if k != "violated"} for h in ref["history"]]
    # a constraint at margin exactly 0 counts as violated or not by the last bit of a
    # BLAS sum, which differs from one CPU to another (OpenBLAS's Sandybridge kernels)
    assert all(abs(h["violated"] - r["violated"]) <= 2
               for h, r in zip(history, ref["history"]))
    assert (m.settings_["iteration"], m.settings_["selected_epoch"]) == \
        (ref["iteration"], ref["selected_epoch"])
    assert rows(m.decode(probe)) == ref["decode"]
    assert rows(m.decode(probe, threshold=-0.5)) == ref["decode_low"]
    m.calibrate(probe)
    np.testing.assert_allclose(m.settings_["platt"], ref["platt"], rtol=1e-9)
    assert rows(m.decode(probe, decoder="meu")) == ref["meu"]
    assert m.tune_threshold(probe) == ref["tuned"]
    assert rows(m.decode(probe)) == ref["decode_tuned"]
    assert m.get_params() == hyper | {k: v for k, v in SegmentModel().get_params().items()
                                      if k not in hyper}


def test_an_old_tuned_model_file_loads_with_its_hyperparameters(old_arrays):
    """The old code's file of the ``no-average`` run, calibrated and tuned on the probe
    sentences: its hyper-parameters as fitted (``threshold``: the one before tuning,
    ``max_iter``: its epochs), its tuned threshold in ``threshold_``, its decode
    outputs, and ``type(m)(**m.get_params())`` trains its weights again."""
    name = CONFIGS[1]
    hyper, data, options, probe = runs(conll_sentences(V2))[name]
    ref = OLD[name]
    m = load_model(os.path.join(V2, "segment-contract-tuned.npz"))
    p = m.get_params()
    assert p["threshold"] == hyper["threshold"] and m.threshold_ == ref["tuned"]
    assert p["max_iter"] == hyper["max_iter"] and p["average"] is False
    assert (p["D"], p["k"], p["seed"], p["max_sweeps"], p["predicates"]) == \
        (hyper["D"], hyper["k"], hyper["seed"], hyper["max_sweeps"], hyper["predicates"])
    assert p["restrictions"]["no_overlap"] and m.max_gap_ == p["max_gap"] == 2
    assert rows(m.decode(probe)) == ref["decode_tuned"]
    assert rows(m.decode(probe, decoder="meu")) == ref["meu"]
    again = type(m)(**p).fit(data, **options)
    np.testing.assert_allclose(again.W_, m.W_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(again.W_, old_arrays[f"{name}/W"], rtol=1e-12, atol=1e-12)
    assert again.threshold_ == hyper["threshold"]
