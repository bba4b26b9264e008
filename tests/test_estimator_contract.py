"""The estimator contract (fstchunk.models.estimator) for every model (CRF, attribute CRF,
HMM, joint model, segment model): hyper-parameters as given in the constructor and never
rewritten by fit, fitted state in ``*_`` attributes, hyper-parameters refused by fit,
clone, warm_start, the old names as warning aliases.  Each model's own details are in
test_estimator_contract_joint.py and test_estimator_contract_segment.py."""

import inspect
import pickle
import warnings

import numpy as np
import pytest

from fstchunk.core.errors import FstchunkDeprecationWarning, InputError
from fstchunk.io.conll import Sentence
from fstchunk.learn.loop import Trainer
from fstchunk.models.attribute_crf import AttributeCRF
from fstchunk.models.crf import CRF
from fstchunk.models.estimator import Estimator
from fstchunk.models.hmm import HMM
from fstchunk.models.joint import JointModel
from fstchunk.models.segment import SegmentModel
from segment_contract_data import TOY as SEGMENT_TOY

SENTS = [Sentence([["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["barks", "VBZ", "B-VP"]]),
         Sentence([["A", "DT", "B-NP"], ["cat", "NN", "I-NP"], ["sleeps", "VBZ", "B-VP"],
                   [".", ".", "O"]]),
         Sentence([["Dogs", "NNS", "B-NP"], ["bark", "VBP", "B-VP"]])]
X = [[{"w": "John"}, {"w": "ran"}], [{"w": "Mary"}, {"w": "sat"}, {"w": "down"}]]
Y = [["B-PER", "O"], ["B-PER", "O", "O"]]


class Case:
    """One estimator: how to build it with unusual hyper-parameters, what it learns from,
    and a hyper-parameter fit must refuse."""

    def __init__(self, make, data, refused, warm="continues"):
        self.make, self.data, self.refused, self.warm = make, data, refused, warm

    def fit(self, model, **options):
        return model.fit(*self.data, **options)


CASES = {
    "crf": Case(lambda **kw: CRF("tmpt1", "iob2", columns="word,pos,tag", max_iter=3, l2=0.1,
                                 **kw), (SENTS,), {"objective": "meu"}),
    "attribute-crf": Case(lambda **kw: AttributeCRF("bio", max_iter=3, options={"epsilon": 1e-5},
                                                    **kw), (X, Y), {"max_iter": 5}),
    "hmm": Case(lambda **kw: HMM("iobes", min_count=1, **kw), (SENTS,), {"data_scheme": "IOB2"},
                warm=None),
    "joint": Case(lambda **kw: JointModel(variant="chunker", max_iter=2, **kw), (SENTS,),
                  {"algorithm": "crf"}),
    "segment": Case(lambda **kw: SegmentModel(D=2 ** 12, max_iter=2, **kw), (SEGMENT_TOY,),
                    {"max_iter": 3}, warm="refused"),
}


def same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return type(a) is type(b) and a == b


@pytest.fixture(params=sorted(CASES))
def case(request):
    return CASES[request.param]


def test_the_constructor_stores_its_arguments_as_given(case):
    model = case.make()
    assert isinstance(model, Estimator)
    names = [p for p in inspect.signature(type(model).__init__).parameters if p != "self"]
    params = model.get_params()
    assert list(params) == names
    assert all(getattr(model, n) is params[n] for n in names)
    assert all(p.default is not inspect.Parameter.empty
               for n, p in inspect.signature(type(model).__init__).parameters.items()
               if n != "self")                          # every model builds with no argument
    clone = model.clone()
    assert type(clone) is type(model) and all(
        same(clone.get_params()[n], params[n]) for n in names)
    with pytest.raises(InputError, match="unknown .* parameter 'no_such'"):
        model.set_params(no_such=1)


def test_fit_learns_only_attributes_ending_in_underscore_and_rewrites_no_parameter(case):
    model = case.make()
    before = dict(model.get_params())
    unfitted = set(vars(model))
    assert not model.fitted
    assert not [a for a in unfitted if a.endswith("_") and not a.startswith("_")]
    assert case.fit(model) is model and model.fitted
    after = model.get_params()
    assert all(same(after[n], before[n]) for n in before), (before, after)
    learned = set(vars(model)) - unfitted
    assert learned and all(a.endswith("_") or a.startswith("_") for a in learned), learned


def test_every_fit_has_one_signature_and_y_only_where_labels_are_apart(case):
    """fit(X, y=None, *, dev=None, **options) for all five; a model whose sentences hold
    their tags refuses y (a dev set given where y goes, say), and the attribute CRF
    refuses a fit without its labels."""
    model = case.make()
    params = inspect.signature(type(model).fit).parameters
    assert [(n, p.kind, p.default) for n, p in params.items()] == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("X", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("y", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
        ("dev", inspect.Parameter.KEYWORD_ONLY, None),
        ("options", inspect.Parameter.VAR_KEYWORD, inspect.Parameter.empty)]
    if len(case.data) == 2:
        with pytest.raises(InputError, match=r"AttributeCRF.fit\(X, y, \*, dev=None\): the "
                                             "labels y are missing"):
            model.fit(case.data[0])
    else:
        name = type(model).__name__
        with pytest.raises(InputError, match=rf"{name}.fit\(X, y=None, \*, dev=None\): .*y "
                                             "must be None, got list; held-out sentences go "
                                             r"in dev=\.\.\."):
            model.fit(case.data[0], case.data[0])
    assert not model.fitted


def test_fit_refuses_a_hyper_parameter(case):
    model = case.make()
    (name, value), = case.refused.items()
    with pytest.raises(InputError, match=rf"takes no hyper-parameter \({name}\).*set_params"):
        case.fit(model, **{name: value})


def test_a_fitted_model_round_trips_through_its_file_and_pickle(case, tmp_path):
    model = case.fit(case.make())
    model.save(tmp_path / "m.npz")
    back = type(model).load(tmp_path / "m.npz")
    assert back.fitted and back.scheme_ == model.scheme_
    weights = model.theta_ if case.warm else model.log_word_
    np.testing.assert_array_equal(back.theta_ if case.warm else back.log_word_, weights)
    again = pickle.loads(pickle.dumps(model))
    assert again.get_params().keys() == model.get_params().keys() and again.fitted
    np.testing.assert_array_equal(again.theta_ if case.warm else again.log_word_, weights)


def _starts(monkeypatch):
    """θ at the start of every training run."""
    seen = []
    fit = Trainer.fit

    def spy(self, model, data):
        seen.append(np.array(model.theta_, copy=True))
        return fit(self, model, data)
    monkeypatch.setattr(Trainer, "fit", spy)
    return seen


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if CASES[n].warm])
def test_warm_start_trains_on_from_theta_and_otherwise_fit_starts_afresh(name, monkeypatch):
    case = CASES[name]
    seen = _starts(monkeypatch)
    model = case.fit(case.make())
    first = np.array(model.theta_, copy=True)
    assert np.any(first != 0)
    case.fit(model)                                   # warm_start=False: from 0 again
    np.testing.assert_array_equal(seen[-1], np.zeros_like(first))
    np.testing.assert_allclose(model.theta_, first, rtol=1e-12, atol=1e-12)   # the same fit
    model.set_params(warm_start=True)
    if case.warm == "refused":                        # its learner's state is not in it
        with pytest.raises(InputError, match="warm_start"):
            case.fit(model)
        np.testing.assert_array_equal(model.theta_, first)
        return
    case.fit(model)
    np.testing.assert_array_equal(seen[-1], first)    # from the fitted θ


def test_an_hmm_refit_is_a_fresh_count():
    case = CASES["hmm"]
    model = case.fit(case.make())
    model.fit(SENTS[:2])
    fresh = HMM("iobes", min_count=1).fit(SENTS[:2])
    np.testing.assert_array_equal(model.log_word_, fresh.log_word_)
    assert model.settings_ == fresh.settings_


def test_the_old_names_read_and_write_the_new_with_a_warning():
    crf = CASES["crf"].fit(CASES["crf"].make())
    with pytest.warns(FstchunkDeprecationWarning, match=r"CRF.theta is CRF.theta_"):
        theta = crf.theta
    assert theta is crf.theta_
    with pytest.warns(FstchunkDeprecationWarning, match=r"CRF.settings is CRF.settings_"):
        crf.settings = {"k": 1}
    assert crf.settings_ == {"k": 1}


def test_a_model_pickled_with_the_old_names_unpickles_fitted():
    model = CASES["attribute-crf"].fit(CASES["attribute-crf"].make())
    state = model.__getstate__()
    old = {("scheme_param" if k == "scheme" else k[:-1] if k in (
        "theta_", "tags_", "fmap_", "pairs_", "settings_", "transitions_") else k): v
        for k, v in state.items()}
    old.pop("warm_start")
    old["objective_"] = old.pop("objective")
    back = AttributeCRF.__new__(AttributeCRF)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back.__setstate__(old)
    assert back.fitted and back.scheme == "bio" and back.objective == "ml"
    assert back.warm_start is False and back.tags_ == model.tags_
    np.testing.assert_array_equal(back.theta_, model.theta_)
    assert back.lattices(X)[0].marginals().shape == model.lattices(X)[0].marginals().shape


@pytest.mark.parametrize("algorithm, objective", [("pa", "pa"), ("arow", "arow"),
                                                  ("l2sgd", "ml"), ("ap", "perceptron")])
def test_the_attribute_crf_trains_every_algorithm_with_its_default_options(algorithm, objective):
    """``options=None`` (the default, stored as given) is no options for every solver."""
    model = AttributeCRF(algorithm=algorithm, objective=objective, max_iter=2)
    assert model.options is None and model.fit(X, Y) is model and model.fitted
    assert model.get_params()["options"] is None
