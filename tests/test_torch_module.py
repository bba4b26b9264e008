"""fstchunk.torch.CRFLayer, ChunkCRF.score and first_subword_pool.

Oracles: the gold score against the sum of its arrays' entries and −log p(gold) of the
numpy :class:`fstchunk.structures.lattice.Lattice`; the losses against the ChunkCRF quantities they
are made of; gradients by gradcheck; a tiny tagger that must learn its training data.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fstchunk.schemes import encodings as enc  # noqa: E402
from fstchunk.core.errors import InputError  # noqa: E402
from fstchunk.torch import ChunkCRF, CRFLayer, first_subword_pool  # noqa: E402
from test_torch_crf import F64, lattice, make_batch, random_gold  # noqa: E402

TAGS = enc.scheme_tags("IOB2", ("PER", "LOC"))


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES"])
def test_score_and_nll_equal_the_engine(scheme):
    rng = np.random.default_rng(3)
    tags = enc.scheme_tags(scheme, ("PER", "LOC"))
    crf = ChunkCRF(tags, scheme)
    lengths = [5, 1, 3, 7]
    args = make_batch(rng, len(tags), lengths, scale=3.0)
    gold = random_gold(rng, tags, scheme, lengths)
    sc = crf.score(*args, gold=gold)
    nll = crf.log_partition(*args) - sc
    em, tr, _, st, en = (x.numpy() for x in args)
    col = {t: i for i, t in enumerate(tags)}
    for b, (n, g) in enumerate(zip(lengths, gold)):
        y = [col[t] for t in g]
        want = st[y[0]] + en[y[-1]] + sum(em[b, i, k] for i, k in enumerate(y)) + sum(
            tr[a, c] for a, c in zip(y, y[1:]))
        assert sc[b].item() == pytest.approx(want, abs=1e-12)
        lat = lattice(tags, scheme, args, b, n)
        assert nll[b].item() == pytest.approx(-lat.log_prob(g), abs=1e-9)
    # the same gold as a padded index tensor (padding entries are ignored)
    idx = torch.full((len(lengths), max(lengths)), 7, dtype=torch.long)
    for b, g in enumerate(gold):
        idx[b, :len(g)] = torch.tensor([col[t] for t in g])
    torch.testing.assert_close(crf.score(*args, gold=idx), sc, rtol=0, atol=0)


def test_layer_losses_are_their_quantities_and_differentiable():
    rng = np.random.default_rng(5)
    layer = CRFLayer(TAGS, dtype=F64)
    with torch.no_grad():
        layer.transitions.normal_()
        layer.start.normal_()
        layer.end.normal_()
    lengths = [4, 2, 6]
    em, _, mask, _, _ = make_batch(rng, len(TAGS), lengths)
    gold = random_gold(rng, TAGS, "IOB2", lengths)
    a = (em, layer.transitions, mask, layer.start, layer.end)
    crf = layer.crf
    nll = crf.log_partition(*a) - crf.score(*a, gold=gold)
    assert layer.loss(em, mask, gold).item() == pytest.approx(nll.mean().item(), abs=1e-12)
    assert layer.loss(em, mask, gold, reduction="sum").item() == pytest.approx(
        nll.sum().item(), abs=1e-12)
    ef = crf.expected_f(*a, gold=gold, beta=2.0)
    assert layer.loss(em, mask, gold, "expected-f", beta=2.0).item() == pytest.approx(
        1 - ef.mean().item(), abs=1e-12)
    ecf = crf.expected_corpus_f(*a, gold=gold)
    assert layer.loss(em, mask, gold, "expected-corpus-f").item() == pytest.approx(
        1 - ecf.item(), abs=1e-12)
    torch.testing.assert_close(layer(em, mask), crf.marginals(*a))
    # one name per concept: the registry's ml, meu, meu-corpus; the old torch names alias them
    for new_name, old_name in (("ml", "nll"), ("meu", "expected-f"),
                               ("meu-corpus", "expected-corpus-f")):
        assert layer.loss(em, mask, gold, new_name, beta=2.0).item() == \
            layer.loss(em, mask, gold, old_name, beta=2.0).item()
    with pytest.raises(InputError, match=r"unknown objective 'max-margin'; use one of ml, "
                                         r"meu, meu-corpus"):
        layer.loss(em, mask, gold, "max-margin")
    for objective in ("ml", "meu", "meu-corpus"):
        wrapped = _Loss(layer, mask, gold, objective)

        def f(x, t, s, e):
            return torch.func.functional_call(
                wrapped, {"layer.transitions": t, "layer.start": s, "layer.end": e}, (x,))

        inputs = [em.clone(), *(p.detach().clone() for p in
                                (layer.transitions, layer.start, layer.end))]
        assert torch.autograd.gradcheck(f, tuple(x.requires_grad_(True) for x in inputs))


class _Loss(torch.nn.Module):
    """The layer's loss as a module's forward (for functional_call)."""

    def __init__(self, layer, mask, gold, objective):
        super().__init__()
        self.layer, self.mask, self.gold, self.objective = layer, mask, gold, objective

    def forward(self, x):
        return self.layer.loss(x, self.mask, self.gold, self.objective)


def test_a_tiny_tagger_learns_its_training_data():
    """Word embeddings + CRFLayer, NLL by Adam, then expected-corpus-F fine-tuning:
    MAP and MEU decode the training sentences exactly."""
    torch.manual_seed(0)
    sents = [("Ann lives in Rome".split(), ["B-PER", "O", "O", "B-LOC"]),
             ("Bob Ray met Ann".split(), ["B-PER", "I-PER", "O", "B-PER"]),
             ("in Paris".split(), ["O", "B-LOC"])]
    vocab = {w: i for i, w in enumerate(sorted({w for s, _ in sents for w in s}))}
    n = max(len(s) for s, _ in sents)
    ids = torch.zeros((len(sents), n), dtype=torch.long)
    mask = torch.zeros((len(sents), n), dtype=torch.bool)
    for b, (s, _) in enumerate(sents):
        ids[b, :len(s)] = torch.tensor([vocab[w] for w in s])
        mask[b, :len(s)] = True
    gold = [g for _, g in sents]
    emb = torch.nn.Embedding(len(vocab), len(TAGS))
    layer = CRFLayer(TAGS)
    opt = torch.optim.Adam([*emb.parameters(), *layer.parameters()], lr=0.1)
    first = None
    for step in range(80):
        opt.zero_grad()
        loss = layer.loss(emb(ids), mask, gold, "nll" if step < 60 else "expected-corpus-f")
        first = first if first is not None else loss.item()
        loss.backward()
        opt.step()
    assert layer.loss(emb(ids), mask, gold).item() < 0.1 * first
    for method in ("map", "meu"):
        assert layer.decode(emb(ids), mask, method) == gold


def test_layer_errors():
    layer = CRFLayer(TAGS)
    em, mask = torch.zeros((1, 2, len(TAGS))), torch.ones((1, 2), dtype=torch.bool)
    with pytest.raises(InputError, match="unknown objective"):
        layer.loss(em, mask, [["O", "O"]], "hinge")
    with pytest.raises(InputError, match="reduction"):
        layer.loss(em, mask, [["O", "O"]], reduction="none")
    with pytest.raises(InputError, match="tag 'E-PER' is not among the tags"):
        layer.loss(em, mask, [["O", "E-PER"]])
    with pytest.raises(InputError, match="position 1: tag 'I-PER' makes an invalid IOB2"):
        layer.loss(em, mask, [["O", "I-PER"]])
    with pytest.raises(InputError, match="list of 2 tags"):
        layer.loss(em, mask, [["O"]])
    with pytest.raises(InputError, match="column index 99"):
        layer.crf.score(em, layer.transitions, mask, gold=torch.tensor([[0, 99]]))
    with pytest.raises(InputError, match="integer column"):
        layer.crf.score(em, layer.transitions, mask, gold=torch.zeros((1, 2)))


def test_first_subword_pool():
    scores = torch.arange(2 * 6 * 3, dtype=F64).reshape(2, 6, 3).requires_grad_(True)
    word_ids = [[None, 0, 0, 1, 2, None], [None, 0, 1, 1, None]]
    words, mask = first_subword_pool(scores, word_ids)
    assert words.shape == (2, 3, 3)
    assert mask.tolist() == [[True, True, True], [True, True, False]]
    torch.testing.assert_close(words[0], scores[0, [1, 3, 4]])
    torch.testing.assert_close(words[1, :2], scores[1, [1, 2]])
    assert torch.all(words[1, 2] == 0)
    words.sum().backward()                     # gradient only at the first pieces
    assert scores.grad[0, :, 0].tolist() == [0, 1, 0, 1, 1, 0]
    with pytest.raises(InputError, match="numbered 0..n-1"):
        first_subword_pool(scores, [[None, 1], [0]])
    with pytest.raises(InputError, match="1 sentences but scores has 2"):
        first_subword_pool(scores, [[0]])
    with pytest.raises(InputError, match="word index"):
        first_subword_pool(scores, [[0, -1], [0]])
    with pytest.raises(InputError, match="no word"):
        first_subword_pool(scores, [[None], [None]])
