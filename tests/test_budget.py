"""fstchunk.grammars.budget: size estimates against the real machines, and refusals that
come before the memory is spent (registry, ``fstchunk grammar``, ``expected_f(method="fst")``)."""

import time

import numpy as np
import pynini
import pytest

from fstchunk import Lattice, expected_f
from fstchunk.schemes import encodings as enc
from fstchunk.grammars import fsa
from fstchunk.cli import main
from fstchunk.core.errors import BudgetError, InputError
from fstchunk.decoding.expected import composition_estimate, marker_extractor
from fstchunk.grammars import budget as B
from fstchunk.grammars import counting as C
from fstchunk.grammars import loss, registry
from fstchunk.grammars.conversion import encoder
from fstchunk.schemes.tagspace import TagSet

TYPE_SETS = [("",), ("NP", "VP"), ("NP", "VP", "PP")]


@pytest.fixture(autouse=True)
def default_budget(monkeypatch):
    """Every test starts (and leaves) the process-wide budget at its default."""
    monkeypatch.delenv(B.ENV_VAR, raising=False)
    B.set_state_budget(None)
    yield
    B.set_state_budget(None)


def arcs(f: pynini.Fst) -> int:
    return sum(f.num_arcs(s) for s in f.states())


def close_above(est: int, actual: int, factor: float = 10.0) -> bool:
    """An estimate is an upper bound, and not absurdly larger."""
    return actual <= est <= factor * max(actual, 1)


def self_composition(f: pynini.Fst) -> pynini.Fst:
    """What ``fsa.is_functional`` builds: T^-1 o T, unweighted."""
    g = pynini.arcmap(f.copy(), map_type="rmweight")
    return pynini.compose(g.copy().invert().arcsort(sort_type="olabel"),
                          g.arcsort(sort_type="ilabel"))


# ------------------------------------------------------------------ estimates
@pytest.mark.parametrize("types", TYPE_SETS)
@pytest.mark.parametrize("K", [1, 2, 3, 5, 8])
def test_counting_machines_exact(types, K):
    k = len(types)
    for f, est in ((C.true_positive_transducer(types, K), B.tp_transducer(K, k)),
                   (C.chunk_counter(types, K), B.chunk_counter(K, k)),
                   (C.pair_machine(types, K), B.pair_machine(K, k))):
        assert (est.states, est.arcs) == (f.num_states(), arcs(f))


@pytest.mark.parametrize("types", TYPE_SETS)
@pytest.mark.parametrize("K", [1, 2, 4])
def test_functional_check_of_counting_machines(types, K):
    for name in ("T", "M", "TM"):
        real = self_composition(registry.build(name, types=types, max_length=K))
        est = B.counter_self_composition(name, K, len(types))
        assert close_above(est.states, real.num_states(), 3), name
        assert close_above(est.arcs, arcs(real), 3), name


@pytest.mark.parametrize("types", TYPE_SETS)
def test_scheme_machines(types):
    k = len(types)
    for scheme in enc.SCHEMES:
        v = registry.build("validity", scheme=scheme, types=types)
        e = registry.build("encoder", scheme=scheme, types=types)
        for f, est in ((v, B.validity_machine(k)), (e, B.encoder_machine(k))):
            assert close_above(est.states, f.num_states()) and close_above(est.arcs, arcs(f))
        real = self_composition(e)
        est = B.letter_self_composition(B.encoder_machine(k))
        assert close_above(est.states, real.num_states()) and close_above(est.arcs, arcs(real))
        for target in enc.SCHEMES:                    # every pair: each is milliseconds
            if target != scheme:
                c = registry.build("convert", scheme=scheme, target=target, types=types)
                est = B.conversion_machine(k)
                assert close_above(est.states, c.num_states()) and close_above(est.arcs, arcs(c))


@pytest.mark.parametrize("n", [1, 4, 16])
def test_toy(n):
    f = registry.build("toy", max_length=n)
    est = registry.size("toy", registry.Options(max_length=n))
    assert close_above(est.states, f.num_states()) and close_above(est.arcs, arcs(f))


def pipeline(lat: Lattice, chunks) -> dict[str, pynini.Fst]:
    """The machines of ``joint_by_composition``, step by step."""
    n, types = lat.n, lat.space.types
    marks = fsa.union_of([C.tp_marker(a) for a in range(n + 1)] +
                         [C.m_marker(b) for b in range(n + 1)], "log64").closure()
    out = {"A": fsa.bare(C.specialised_pair_acceptor(chunks, n, types))}
    a = out["A"]
    if lat.scheme != "IOBES":
        e = fsa.bare(encoder(lat.scheme, types)) + marks
        a = pynini.compose(a.arcsort("olabel"), e.arcsort()).project("output")
        out["AE"] = a.copy()
        a.rmepsilon(delta=fsa.DELTA)
    out["Q"] = (fsa.bare(lat.fst) + marks).rmepsilon(delta=fsa.DELTA)
    out["R"] = pynini.compose(a.arcsort("olabel"), out["Q"].arcsort())
    out["R2"] = pynini.compose(out["R"].copy().connect(), marker_extractor(lat, n))
    return out


def random_chunks(rng, n, types, density):
    out, i = [], 0
    while i < n:
        if rng.random() < density:
            length = min(int(rng.integers(1, 4)), n - i)
            out.append((types[int(rng.integers(len(types)))], i, i + length))
            i += length
        else:
            i += 1
    return out


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "IOE1", "IOBES3"])
@pytest.mark.parametrize("types", TYPE_SETS[:2])
def test_composition_path(scheme, types):
    rng = np.random.default_rng(len(scheme) + len(types))
    tags = TagSet(scheme, types).tags
    for n in (5, 9, 14):
        lat = Lattice.from_scores(tags, rng.normal(size=(n, len(tags))),
                                  rng.normal(size=(len(tags), len(tags))), scheme=scheme)
        for density in (0.3, 1.0):
            chunks = random_chunks(rng, n, types, density)
            est = composition_estimate(lat, chunks)
            for key, f in pipeline(lat, chunks).items():
                assert close_above(est[key].states, f.num_states()), (key, n)
                assert close_above(est[key].arcs, arcs(f)), (key, n)


def test_pair_acceptor_exact_for_one_token_chunks():
    n = 12
    chunks = [("NP", i, i + 1) for i in range(n)]
    a = C.specialised_pair_acceptor(chunks, n, ("NP",))
    est = B.pair_acceptor(n, [(s, e) for _, s, e in chunks], 1)
    assert (est.states, est.arcs) == (a.num_states(), arcs(a))


# ------------------------------------------------------------------ the budget
def test_budget_settings(monkeypatch):
    assert B.state_budget() == B.DEFAULT_STATE_BUDGET
    monkeypatch.setenv(B.ENV_VAR, "1_000")
    assert B.state_budget() == 1000
    with B.use_state_budget(50) as limit:
        assert limit == 50 == B.state_budget()
        with B.use_state_budget(None):             # None: unchanged
            assert B.state_budget() == 50
    assert B.state_budget() == 1000
    assert B.set_state_budget(7) is None and B.set_state_budget(None) == 7
    for bad in (0, -3, "many", True, 2.5):
        with pytest.raises(InputError, match="positive integer"):
            B.set_state_budget(bad)
    monkeypatch.setenv(B.ENV_VAR, "lots")
    with pytest.raises(InputError, match=B.ENV_VAR):
        B.state_budget()


def test_check_message():
    B.check("X", B.Estimate(10, 40))
    B.set_state_budget(10)
    with pytest.raises(BudgetError) as e:
        B.check("the machine X", B.Estimate(10, 40), "use a smaller one")
    msg = str(e.value)
    assert "\n" not in msg and e.value.estimate == 20 and e.value.budget == 10
    assert "the machine X would build about 20 states (10 states and 40 arcs" in msg
    assert "state budget of 10; use a smaller one, or give a state budget of at least 20" in msg


# ------------------------------------------------------------------ refusals
def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_grammar_info_refused_before_building(capsys):
    t0 = time.thread_time()
    code, out, err = run(capsys, "grammar", "info", "TM", "--max-length", "64")
    assert time.thread_time() - t0 < 10.0
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "grammar TM.n64" in err and "functional" in err and "state budget of 4,000,000" in err
    assert "use --max-length 18 or less" in err and "--state-budget" in err
    # the largest length named fits, the next one does not
    assert B.fits(registry.size("TM", registry.Options(max_length=18), info=True))
    code, _, err = run(capsys, "grammar", "info", "TM", "--max-length", "19")
    assert code == 2 and "use --max-length 18 or less" in err


def test_state_budget_option_and_environment(capsys, monkeypatch):
    code, _, err = run(capsys, "grammar", "info", "TM", "--max-length", "8", "--state-budget",
                       "10000")
    assert code == 2 and "state budget of 10,000; use --max-length 3 or less" in err
    code, out, _ = run(capsys, "grammar", "info", "TM", "--max-length", "8", "--state-budget",
                       "1000000")
    assert code == 0 and "states: 91" in out
    assert B.state_budget() == B.DEFAULT_STATE_BUDGET       # the option does not linger
    monkeypatch.setenv(B.ENV_VAR, "1000")
    code, _, err = run(capsys, "grammar", "print", "TM", "--max-length", "8", "--types", "NP,VP")
    assert code == 2 and "state budget of 1,000" in err
    code, _, err = run(capsys, "grammar", "print", "TM", "--max-length", "8", "--state-budget",
                       "100000")                         # the option wins over the variable
    assert code == 0
    monkeypatch.setenv(B.ENV_VAR, "lots")
    code, _, err = run(capsys, "grammar", "info", "T")
    assert code == 2 and "FSTCHUNK_STATE_BUDGET must be a positive integer" in err
    with pytest.raises(SystemExit) as e:                # argparse's usage error
        main(["grammar", "info", "T", "--state-budget", "0"])
    assert e.value.code == 2 and "--state-budget: must be an integer >= 1" in \
        capsys.readouterr().err


def test_export_refused_before_writing(capsys, tmp_path):
    far = tmp_path / "c.far"
    code, _, err = run(capsys, "grammar", "export", "T", "M", "TM", "--max-length", "30",
                       "--state-budget", "2000", "-o", str(far))
    assert code == 2 and "grammar export of 3 machines (T.n30, M.n30, TM.n30)" in err
    assert "use --max-length" in err and not far.exists()
    with pytest.raises(BudgetError, match="max_length|--max-length"):
        with B.use_state_budget(100):
            registry.build("TM", max_length=30)


def random_lattice(n: int, seed: int = 0) -> Lattice:
    tags = TagSet("IOB2", ("NP",)).tags
    rng = np.random.default_rng(seed)
    return Lattice.from_scores(tags, rng.normal(size=(n, 3)), rng.normal(size=(3, 3)))


@pytest.mark.parametrize("name,counter", [("type", "the type-match counter⊠M"),
                                          ("partial", "the partial-credit counter P⊠M"),
                                          ("weighted:NP=2", "the weighted T⊠M")])
def test_a_utility_composition_over_budget_names_its_counter(name, counter):
    from fstchunk.decoding.utilities import utility
    B.set_state_budget(20_000)
    with pytest.raises(BudgetError) as e:
        utility(name).expected(random_lattice(40), hypothesis=["B-NP"] + ["O"] * 39,
                               method="fst")
    assert (f'the expected value by composition (method="fst") on a lattice of 40 tokens '
            f'and 3 IOB2 tags: composing {counter} with it' in str(e.value))
    assert 'use method="fast"' in str(e.value)


def test_expected_f_fst_refused_quickly_on_300_tokens():
    lat = random_lattice(300)
    ref = ["B-NP", "I-NP", "O"] * 100
    t0 = time.thread_time()
    with pytest.raises(BudgetError) as e:
        expected_f(lat, reference=ref, method="fst")
    assert time.thread_time() - t0 < 10.0
    msg = str(e.value)
    assert ('the expected value by composition (method="fst") on a lattice of 300 tokens '
            'and 3 IOB2 tags: composing T⊠M with it' in msg)
    assert 'use method="fast"' in msg and "state budget of 4,000,000" in msg
    assert e.value.estimate > e.value.budget == B.DEFAULT_STATE_BUDGET
    fast = expected_f(lat, reference=ref, method="fast")       # the way out works
    assert 0.0 <= fast.f <= 1.0


def test_higher_budget_lets_a_mid_size_one_through():
    lat = random_lattice(30, seed=1)
    ref = ["B-NP", "O"] * 15
    need = max(e.size for e in composition_estimate(
        lat, enc.tags_to_chunks(ref, "IOB2")).values())
    with B.use_state_budget(need - 1):
        with pytest.raises(BudgetError, match='method="fast"'):
            expected_f(lat, reference=ref, method="fst")
    with B.use_state_budget(need):
        got = expected_f(lat, reference=ref, method="fst")
    assert got.f == pytest.approx(expected_f(lat, reference=ref, method="fast").f, rel=1e-9)


def test_expected_command_budget(capsys, tmp_path):
    from fstchunk.models.scorefile import save_scores
    conll = tmp_path / "s.txt"
    conll.write_text("".join(f"w{i} NN {t}\n" for i, t in
                             enumerate(["B-NP", "I-NP", "O"] * 4)), encoding="utf-8")
    npz = tmp_path / "s.npz"
    rng = np.random.default_rng(0)
    save_scores(npz, ("O", "B-NP", "I-NP"), [rng.normal(size=(12, 3))], rng.normal(size=(3, 3)))
    argv = ["expected", str(conll), "--scores", str(npz), "--method", "fst"]
    code, _, err = run(capsys, *argv, "--state-budget", "100")
    assert code == 1 and len(err.strip().splitlines()) == 2     # the sentence, the summary
    assert "sentence 1 (12 tokens) not scored" in err
    assert 'use method="fast"' in err and "--method fast" in err
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "training direction" in out


# ------------------------------------------------------------------ sizes read fast
def layers_by_loop(n, fixed_spans):
    """The pair acceptor's layers token by token (the definition, O(n·chunks))."""
    ends = sorted(e for _, e in fixed_spans)
    out, done = [], 0
    for i in range(n + 1):
        while done < len(ends) and ends[done] <= i:
            done += 1
        open_ = any(s < i < e for s, e in fixed_spans) if i < n else False
        total = 0
        for match in ((0, 1) if open_ else (0,)):
            u = i - match + 1
            d = min(done, u - 1)
            if d >= 0:
                total += (d + 1) * u - d * (d + 1) // 2
        out.append(total)
    return out


def test_pair_acceptor_layers_vectorised_as_the_loop():
    rng = np.random.default_rng(7)
    for n in list(range(1, 12)) + [40, 97]:
        for density in (0.0, 0.3, 1.0):
            spans = [(s, e) for _, s, e in random_chunks(rng, n, ("NP",), density)]
            assert B.pair_acceptor_layers(n, spans) == layers_by_loop(n, spans)
    t0 = time.thread_time()
    long = B.pair_acceptor_layers(10 ** 6, [(i, i + 2) for i in range(0, 10 ** 6 - 1, 3)])
    assert time.thread_time() - t0 < 10.0 and len(long) == 10 ** 6 + 1


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "IOE1"])
def test_f_loss_floor_is_a_lower_bound(scheme):
    """The size from the gold's length alone: the pair acceptor of a gold without chunks
    (exact) plus the scorer, at most the estimate of any gold of that length."""
    rng = np.random.default_rng(3)
    for types in TYPE_SETS[:2]:
        for n in (1, 5, 12):
            floor = loss.f_loss_floor(n, len(types))
            assert floor.at_least and "at least" in floor.describe()
            bare = B.pair_acceptor(n, [], len(types)) + B.Estimate(n + 2, (n + 1) ** 2)
            assert (floor.states, floor.arcs) == (bare.states, bare.arcs)
            for density in (0.0, 0.5, 1.0):
                spans = [(s, e) for _, s, e in random_chunks(rng, n, types, density)]
                est = loss.f_loss_estimate(n, spans, scheme, types)
                assert est.states >= floor.states and est.arcs >= floor.arcs
