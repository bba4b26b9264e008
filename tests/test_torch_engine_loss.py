"""The torch layer's losses from the numpy engine (meu-exact, meu-macro, meu-partial,
meu-weighted:T=w):
each sentence's value against the utility's own expectation (itself checked by
enumeration), the conlleval sweep against the torch recursion (values and gradients),
gradients by gradcheck, and a padded index gold."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fstchunk.core.errors import InputError  # noqa: E402
from fstchunk.decoding.utilities import utility  # noqa: E402
from fstchunk.schemes import encodings as enc  # noqa: E402
from fstchunk.torch import ChunkCRF, CRFLayer  # noqa: E402
from test_torch_crf import F64, lattice, make_batch, random_gold  # noqa: E402

LENGTHS = [5, 1, 3, 6]


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES"])
@pytest.mark.parametrize("name", ["conlleval", "exact", "macro", "partial",
                                  "weighted:LOC=2,PER=3"])
def test_values_are_the_utilities_expectations(scheme, name):
    rng = np.random.default_rng(11)
    tags = enc.scheme_tags(scheme, ("PER", "LOC"))
    crf = ChunkCRF(tags, scheme)
    args = make_batch(rng, len(tags), LENGTHS, scale=2.0)
    gold = random_gold(rng, tags, scheme, LENGTHS)
    got = crf.expected_utility(*args, gold=gold, utility=name, beta=0.5)
    for b, (n, g) in enumerate(zip(LENGTHS, gold)):
        want = utility(name).expected(lattice(tags, scheme, args, b, n), reference=g, beta=0.5)
        assert got[b].item() == pytest.approx(want, abs=1e-11)


def test_the_conlleval_sweep_equals_the_torch_recursion_with_its_gradient():
    rng = np.random.default_rng(12)
    tags = enc.scheme_tags("IOB2", ("PER", "LOC"))
    crf = ChunkCRF(tags, "IOB2")
    em, tr, mask, st, en = make_batch(rng, len(tags), LENGTHS, scale=1.5)
    gold = random_gold(rng, tags, "IOB2", LENGTHS)
    leaves = [x.clone().requires_grad_(True) for x in (em, tr, st, en)]
    a = crf.expected_utility(leaves[0], leaves[1], mask, leaves[2], leaves[3], gold=gold,
                             utility="conlleval")
    b = crf.expected_f(leaves[0], leaves[1], mask, leaves[2], leaves[3], gold=gold)
    torch.testing.assert_close(a, b, rtol=0, atol=1e-10)
    w = torch.tensor([0.3, -1.0, 2.0, 0.7], dtype=F64)
    for ga, gb in zip(torch.autograd.grad((a * w).sum(), leaves),
                      torch.autograd.grad((b * w).sum(), leaves)):
        torch.testing.assert_close(ga, gb, rtol=0, atol=1e-9)


@pytest.mark.parametrize("objective", ["meu-exact", "meu-macro", "meu-partial",
                                       "meu-type", "meu-weighted:LOC=3"])
def test_layer_losses_gradcheck_and_index_gold(objective):
    rng = np.random.default_rng(13)
    tags = enc.scheme_tags("IOB2", ("PER", "LOC"))
    layer = CRFLayer(tags, dtype=F64)
    with torch.no_grad():
        for p in (layer.transitions, layer.start, layer.end):
            p.normal_()
    lengths = [4, 2, 3]
    em, _, mask, _, _ = make_batch(rng, len(tags), lengths)
    gold = random_gold(rng, tags, "IOB2", lengths)
    name = {"meu-exact": "exact", "meu-macro": "macro", "meu-partial": "partial",
            "meu-type": "type",
            "meu-weighted:LOC=3": "weighted:LOC=3"}[objective]
    a = (em, layer.transitions, mask, layer.start, layer.end)
    per = layer.crf.expected_utility(*a, gold=gold, utility=name, beta=2.0)
    assert layer.loss(em, mask, gold, objective, beta=2.0).item() == pytest.approx(
        1 - per.mean().item(), abs=1e-12)
    idx = torch.full((len(lengths), max(lengths)), 3, dtype=torch.long)
    for b, g in enumerate(gold):
        idx[b, :len(g)] = torch.tensor([tags.index(t) for t in g])
    assert layer.loss(em, mask, idx, objective, beta=2.0).item() == pytest.approx(
        1 - per.mean().item(), abs=1e-12)

    def f(x, t, s, e):
        return 1 - layer.crf.expected_utility(x, t, mask, s, e, gold=gold, utility=name).sum()
    inputs = (em.clone(), layer.transitions.detach().clone(), layer.start.detach().clone(),
              layer.end.detach().clone())
    assert torch.autograd.gradcheck(f, tuple(x.requires_grad_(True) for x in inputs))


def test_a_weighted_loss_names_its_weights():
    layer = CRFLayer(enc.scheme_tags("IOB2", ("PER", "LOC")), dtype=F64)
    em, _, mask, _, _ = make_batch(np.random.default_rng(1), 5, [2])
    gold = [["B-PER", "O"]]
    for bad, said in [("meu-weighted", "needs its weights: meu-weighted:TYPE=W"),
                      ("meu-weighted:LOC=0", "each weight is TYPE=W with a whole W >= 1"),
                      ("meu-weighted:ORG=2", "'ORG' not among the lattice's types")]:
        with pytest.raises(InputError, match=said):
            layer.loss(em, mask, gold, bad)
