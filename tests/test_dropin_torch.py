"""fstchunk.torch.CRF, the pytorch-crf drop-in (issue 46 §2): torchcrf's own numbers and
checkpoints, the refusals, TorchScript, and the extras (tags=/scheme=, marginals, chunk
confidences, MEU, expected F) against brute force (Lattice.enumerate) and ChunkCRF.

Tolerances: float32 parameters, so 1e-5 relative on log-likelihoods and 1e-6 absolute
on probabilities; brute force in float64 at 1e-9."""

import itertools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchcrf = pytest.importorskip("torchcrf")

from fstchunk.core.errors import InputError  # noqa: E402
from fstchunk.schemes import encodings as enc  # noqa: E402
from fstchunk.structures.lattice import Lattice  # noqa: E402
from fstchunk.torch import CRF, ChunkCRF  # noqa: E402
from fstchunk.torch.semiring import NEG  # noqa: E402

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def pair(L=5, batch_first=False, seed=0):
    torch.manual_seed(seed)
    theirs = torchcrf.CRF(L, batch_first=batch_first)
    ours = CRF(L, batch_first=batch_first)
    ours.load_state_dict(theirs.state_dict())
    return theirs, ours


def batch(L=5, n=6, B=4, seed=1):
    g = torch.Generator().manual_seed(seed)
    em = torch.randn(n, B, L, generator=g) * 2
    tags = torch.randint(0, L, (n, B), generator=g)
    lens = [n, n - 2, 1, n - 1][:B]
    mask = torch.tensor([[t < k for k in lens] for t in range(n)], dtype=torch.uint8)
    return em, tags, mask


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("reduction", ["sum", "none", "mean", "token_mean"])
def test_torchcrf_state_dict_gives_the_same_forward_and_decode(batch_first, reduction):
    theirs, ours = pair(batch_first=batch_first)
    em, tags, mask = batch()
    if batch_first:
        em, tags, mask = em.transpose(0, 1), tags.transpose(0, 1), mask.transpose(0, 1)
    for m in (mask, mask.bool(), None):
        want = theirs(em, tags, mask=m, reduction=reduction)
        got = ours(em, tags, mask=m, reduction=reduction)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        assert ours.decode(em, mask=m) == theirs.decode(em, mask=m)


def test_state_dict_keys_match_and_load_both_ways(tmp_path):
    theirs, ours = pair()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    torch.save({"crf": theirs.state_dict()}, tmp_path / "ckpt.pt")
    fresh = CRF(5)
    fresh.load_state_dict(torch.load(tmp_path / "ckpt.pt")["crf"])
    back = torchcrf.CRF(5)
    back.load_state_dict(fresh.state_dict())
    for name in ("start_transitions", "end_transitions", "transitions"):
        assert torch.equal(getattr(back, name), getattr(theirs, name))


def test_initialisation_is_uniform_in_a_tenth():
    crf = CRF(50)
    for p in (crf.start_transitions, crf.end_transitions, crf.transitions):
        assert isinstance(p, torch.nn.Parameter)
        assert float(p.abs().max()) <= 0.1 and float(p.std()) > 0.02


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_emissions_are_accepted_as_torchcrf_does(dtype):
    theirs, ours = pair()
    em, tags, mask = batch()
    em = em.to(dtype)
    torch.testing.assert_close(ours(em, tags, mask), theirs(em, tags, mask),
                               rtol=1e-5, atol=1e-4)
    assert ours.decode(em, mask) == theirs.decode(em, mask)


def test_gradients_match_torchcrf():
    theirs, ours = pair()
    em, tags, mask = batch()
    theirs(em, tags, mask).backward()
    ours(em, tags, mask).backward()
    for name in ("start_transitions", "end_transitions", "transitions"):
        torch.testing.assert_close(getattr(ours, name).grad, getattr(theirs, name).grad,
                                   rtol=1e-5, atol=1e-5)


def test_refusals_are_input_errors_naming_the_place():
    crf = CRF(5)
    em, tags, mask = batch()
    holed = mask.clone()
    holed[2, 1] = 0                             # sentence 1: on, on, off, on
    with pytest.raises(InputError, match="sentence 1 is on again at position 3"):
        crf(em, tags, holed)
    with pytest.raises(InputError, match="left-aligned"):
        crf.decode(em, holed)
    bad = tags.clone()
    bad[3, 0] = 7
    with pytest.raises(InputError, match="sentence 0, position 3: tag index 7"):
        crf(em, bad, mask)
    with pytest.raises(ValueError, match="invalid number of tags: -1"):
        CRF(-1)
    with pytest.raises(InputError, match="tag names"):
        CRF(3, tags=TAGS)
    with pytest.raises(InputError, match="needs the tag names"):
        crf.chunk_confidences(em, mask)
    with pytest.raises(InputError, match="needs the tag names"):
        crf.decode(em, mask, decoder="meu")
    with pytest.raises(InputError, match="no token or no sentence"):
        crf.decode(em[:0], None)
    with pytest.raises(InputError, match="no token or no sentence"):
        crf(em[:, :0], tags[:, :0], reduction="mean")
    assert CRF(np.int64(4)).num_tags == 4
    with pytest.raises(InputError, match="invalid number of tags: 2.5"):
        CRF(2.5)


def test_meu_choosing_a_tag_the_columns_lack_is_named(monkeypatch):
    """Columns without O: a decoder may leave a token outside every chunk (O), which no
    column index can express; decode says so (decode_tags gives the names)."""
    crf = CRF(2, tags=["B-PER", "I-PER"], scheme="IOB2")
    em = torch.zeros(3, 1, 2)
    assert crf.decode(em, decoder="meu") == [[crf.tag_names.index(t) for t in
                                              crf.decode_tags(em, decoder="meu")[0]]]
    monkeypatch.setattr(crf._chunk, "decode", lambda *a, **k: [["O", "B-PER", "I-PER"]])
    with pytest.raises(InputError, match=r"chose tag\(s\) \['O'\] that are not among"):
        crf.decode(em, decoder="meu")


def test_tags_on_padding_are_ignored():
    """BERT-CRF code pads tags with -100 (the ignore index): read where the mask is on."""
    crf = CRF(5)
    em, tags, mask = batch()
    padded = torch.where(mask.bool(), tags, torch.full_like(tags, -100))
    for red in ("none", "token_mean"):
        torch.testing.assert_close(crf(em, padded, mask, red), crf(em, tags, mask, red))


def test_a_forbidden_gold_is_refused_with_tags():
    crf = CRF(5, tags=TAGS, scheme="IOB2")
    em, tags, mask = batch()
    tags[:] = 0
    tags[0, 2] = TAGS.index("I-PER")            # I-PER opens a sentence: IOB2 forbids it
    with pytest.raises(InputError, match="sentence 2, position 0: tag I-PER"):
        crf(em, tags, mask)


def test_scripted_module_equals_eager():
    crf = CRF(5, tags=TAGS)
    s = torch.jit.script(crf)
    em, tags, mask = batch()
    tags[:] = 0
    for red in ("sum", "none", "token_mean"):
        torch.testing.assert_close(s(em, tags, mask, red), crf(em, tags, mask, red))
    assert s.decode(em, mask) == crf.decode(em, mask)
    torch.testing.assert_close(s.marginals(em, mask), crf.marginals(em, mask))
    with pytest.raises(Exception, match="invalid reduction: foo"):
        s(em, tags, mask, "foo")


def test_the_forbidden_score_is_semiring_neg():
    crf = CRF(5, tags=TAGS)
    assert float(crf._scores()[1].min()) == pytest.approx(NEG)


# ------------------------------------------------------------------ the extras
def brute(crf, em, mask):
    """Per sentence: {tags: log Pr} from Lattice.enumerate (batch-first em)."""
    out = []
    for b in range(em.shape[0]):
        n = int(mask[b].sum())
        lat = Lattice.from_scores(TAGS, em[b, :n].double().numpy(),
                                  crf.transitions.detach().double().numpy(),
                                  crf.start_transitions.detach().double().numpy(),
                                  crf.end_transitions.detach().double().numpy(), warn=False)
        out.append((lat, dict(lat.enumerate())))
    return out


@pytest.fixture
def small():
    torch.manual_seed(3)
    crf = CRF(5, batch_first=True, tags=TAGS, scheme="IOB2")
    with torch.no_grad():
        for p in crf.parameters():
            p.mul_(10)
    em, _, mask = batch(n=4, B=3, seed=4)
    return crf, em.transpose(0, 1).double(), mask.transpose(0, 1).bool()


def test_constrained_forward_marginals_viterbi_against_brute_force(small):
    crf, em, mask = small
    marg = crf.marginals(em, mask).double().detach()
    best = crf.decode(em, mask)
    for b, (lat, dist) in enumerate(brute(crf, em, mask)):
        n = lat.n
        assert math.isclose(sum(math.exp(v) for v in dist.values()), 1, rel_tol=1e-9)
        for seq, lp in list(dist.items())[:20]:
            t = torch.zeros(em.shape[:2], dtype=torch.long)
            t[b, :n] = torch.tensor([TAGS.index(x) for x in seq])
            t[:, 0] = torch.where(torch.arange(em.shape[0]) == b, t[:, 0], 0)
            got = crf(em, t, mask, reduction="none")[b]
            assert float(got) == pytest.approx(lp, rel=1e-5, abs=1e-4)
        want = np.zeros((n, 5))
        for seq, lp in dist.items():
            for i, x in enumerate(seq):
                want[i, TAGS.index(x)] += math.exp(lp)
        np.testing.assert_allclose(marg[b, :n].numpy(), want, atol=1e-6)
        assert [TAGS[i] for i in best[b]] == list(max(dist, key=dist.get))


def test_chunk_extras_against_brute_force(small):
    crf, em, mask = small
    conf = crf.chunk_confidences(em, mask, decoder="meu", beta=1.0)
    assert sum(map(len, conf)) >= 2           # the loop below has entities to check
    meu = crf.decode(em, mask, decoder="meu")
    gold = []
    for b, (lat, dist) in enumerate(brute(crf, em, mask)):
        assert [TAGS[i] for i in meu[b]] == list(lat.meu().tags)
        for typ, s, e, p in conf[b]:
            want = sum(math.exp(lp) for seq, lp in dist.items()
                       if (typ, s, e) in enc.tags_to_chunks(list(seq), "IOB2"))
            assert p == pytest.approx(want, abs=1e-6)
        gold.append(list(max(dist, key=dist.get)))
    loss = crf.expected_f_loss(em, gold, mask)
    want = np.mean([1 - lat.expected_f(reference=g).f
                    for (lat, _), g in zip(brute(crf, em, mask), gold)])
    assert float(loss) == pytest.approx(want, abs=1e-6)


def test_recursions_equal_chunkcrf(small):
    crf, em, mask = small
    c = ChunkCRF(TAGS, "IOB2")
    args = (em, crf.transitions.double(), mask, crf.start_transitions.double(),
            crf.end_transitions.double())
    torch.testing.assert_close(crf.marginals(em, mask).double(), c.marginals(*args),
                               atol=1e-6, rtol=0)
    assert [[TAGS[i] for i in r] for r in crf.decode(em, mask)] == c.decode(*args)
    zero = torch.zeros(em.shape[:2], dtype=torch.long)
    zero_tags = [["O"] * int(k) for k in mask.sum(1)]
    llh = crf(em, zero, mask, reduction="none").double()
    torch.testing.assert_close(llh, c.score(*args, gold=zero_tags) - c.log_partition(*args),
                               rtol=1e-6, atol=1e-5)
    # the gradient a training loop takes, with respect to the emissions
    e1, e2 = em.clone().requires_grad_(), em.clone().requires_grad_()
    crf(e1, zero, mask).backward()
    args = (e2,) + args[1:]
    (c.score(*args, gold=zero_tags) - c.log_partition(*args)).sum().backward()
    torch.testing.assert_close(e1.grad, e2.grad, atol=1e-6, rtol=0)


def test_unconstrained_marginals_sum_torchcrf_probabilities():
    """Token marginals of the unconstrained CRF against torchcrf's own forward over
    every tag sequence of a tiny batch."""
    theirs, ours = pair(L=3)
    em, _, mask = batch(L=3, n=3, B=2)
    marg = ours.marginals(em, mask)
    for b in range(2):
        n = int(mask[:, b].sum())
        want = torch.zeros(n, 3)
        for seq in itertools.product(range(3), repeat=n):
            t = torch.tensor(seq).view(n, 1)
            p = theirs(em[:n, b:b + 1], t).exp().detach()
            for i, x in enumerate(seq):
                want[i, x] += p
        torch.testing.assert_close(marg[:n, b], want, atol=1e-5, rtol=0)


def test_vendored_suite_statement_holds_for_torchcrf(tmp_path):
    """tests/test_dropin_torch_suite.py with torchcrf's import: all but the TorchScript
    tests pass for pytorch-crf 0.7.2 itself (so ours must pass at least those)."""
    src = Path(__file__).with_name("test_dropin_torch_suite.py").read_text()
    assert src.count("from fstchunk.torch import CRF") == 1
    (tmp_path / "test_theirs.py").write_text(src.replace("from fstchunk.torch import CRF",
                                                         "from torchcrf import CRF"))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-k", "not TorchScript", str(tmp_path / "test_theirs.py")],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:]
    assert "23 passed" in r.stdout
