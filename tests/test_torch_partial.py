"""Partial labels in fstchunk.torch (issue 36): ChunkCRF.log_partition(allowed=...) and
CRFLayer.loss(allowed=...) against brute force, the numpy engine and the full NLL."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

torch = pytest.importorskip("torch")

from fstchunk import Lattice  # noqa: E402
from fstchunk.core.errors import InputError  # noqa: E402
from fstchunk.schemes.tagspace import TagSet  # noqa: E402
from fstchunk.torch import ChunkCRF, CRFLayer  # noqa: E402
from oracles import brute_log_partition  # noqa: E402

SCHEMES = ("IOB1", "IOB2", "IOE1", "IOBES", "BILOU", "IOBES2")


@st.composite
def batches(draw):
    scheme = draw(st.sampled_from(SCHEMES))
    ts = TagSet(scheme, draw(st.sampled_from([("",), ("NP",), ("LOC", "PER")])))
    lengths = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    return ts, lengths, draw(st.sampled_from([0.1, 1.0, 40.0, 1e3])), draw(st.integers(0, 2**31))


@settings(max_examples=50, deadline=None)
@given(batches())
def test_constrained_log_partition_is_brute_force_and_the_numpy_engine(case):
    ts, lengths, sc, seed = case
    rng = np.random.default_rng(seed)
    B, n, L = len(lengths), max(lengths), len(ts.tags)
    em = rng.normal(scale=sc, size=(B, n, L))
    tr, s, e = (rng.normal(scale=sc, size=x) for x in ((L, L), L, L))
    mask = np.arange(n)[None, :] < np.array(lengths)[:, None]
    allowed = rng.random((B, n, L)) < 0.5
    crf = ChunkCRF(ts.tags, ts.scheme)
    args = [torch.tensor(x) for x in (em, tr)] + [torch.tensor(mask)] + \
        [torch.tensor(s), torch.tensor(e)]
    wants = [brute_log_partition(ts.tags, ts.scheme, ts.types, (em[b, :k], tr, s, e),
                                 allowed[b, :k]) for b, k in enumerate(lengths)]
    if any(w == -np.inf for w in wants):
        b = next(b for b, w in enumerate(wants) if w == -np.inf)
        with pytest.raises(InputError, match=f"allowed: sentence {b}: position"):
            crf.log_partition(*args, allowed=torch.tensor(allowed))
        return
    got = crf.log_partition(*args, allowed=torch.tensor(allowed)).numpy()
    for b, k in enumerate(lengths):
        tol = 1e-9 * max(1.0, abs(wants[b]))
        assert got[b] == pytest.approx(wants[b], abs=tol)
        lat = Lattice.from_scores(ts.tags, em[b, :k], tr, s, e, scheme=ts.scheme)
        assert got[b] == pytest.approx(lat.constrained(allowed[b, :k]).log_partition(),
                                       abs=tol)


def test_the_partial_nll_gradient_is_autograd_exact_and_one_hot_is_the_nll():
    ts = TagSet("IOBES", ("LOC", "PER"))
    rng = np.random.default_rng(5)
    B, n, L = 2, 4, len(ts.tags)
    em = torch.tensor(rng.normal(size=(B, n, L)), requires_grad=True)
    mask = torch.tensor([[True] * 4, [True, True, True, False]])
    layer = CRFLayer(ts.tags, "IOBES", dtype=torch.float64)
    with torch.no_grad():
        layer.transitions.normal_()
    gold = [["B-PER", "E-PER", "O", "S-LOC"], ["O", "S-PER", "O"]]
    onehot = torch.zeros((B, n, L), dtype=torch.bool)
    for b, g in enumerate(gold):
        onehot[b, torch.arange(len(g)), torch.tensor(ts.indices(g))] = True
    full = layer.loss(em, mask, gold)
    part = layer.loss(em, mask, allowed=onehot)
    assert part.item() == pytest.approx(full.item(), rel=1e-10)
    allowed = onehot.clone()
    allowed[:, 1] = True                                   # token 1 unknown
    allowed[0, 2, ts.index("B-LOC")] = True
    torch.autograd.gradcheck(lambda x: layer.loss(x, mask, allowed=allowed), (em,))
    (g,) = torch.autograd.grad(layer.loss(em, mask, allowed=allowed), em)
    assert bool((g[~mask] == 0).all())


def test_partial_loss_refusals():
    layer = CRFLayer(TagSet("IOB2", ("PER",)).tags, "IOB2", dtype=torch.float64)
    em = torch.zeros((1, 2, 3), dtype=torch.float64)
    mask = torch.ones((1, 2), dtype=torch.bool)
    ok = torch.ones((1, 2, 3), dtype=torch.bool)
    with pytest.raises(InputError, match="one of the two"):
        layer.loss(em, mask)
    with pytest.raises(InputError, match="trains objective 'ml' only"):
        layer.loss(em, mask, allowed=ok, objective="expected-f")
    with pytest.raises(InputError, match="bool tensor"):
        layer.loss(em, mask, allowed=ok.double())
    bad = torch.tensor([[[True, False, False], [False, False, True]]])   # O then I-PER
    with pytest.raises(InputError, match="allowed: sentence 0: position 1"):
        layer.loss(em, mask, allowed=bad)
