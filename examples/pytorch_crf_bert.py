"""Entity confidences and MEU decoding for a pytorch-crf BERT-CRF checkpoint.

A BERT-CRF tagger written for pytorch-crf has an emission model (BERT and a linear
layer) and ``self.crf = torchcrf.CRF(num_tags, batch_first=True)``; its checkpoint is
the model's ``state_dict``.  Swap the CRF class for :class:`fstchunk.torch.CRF` (give
it the tag names and the scheme) and the same checkpoint loads unchanged; then

* without ``tags=``, ``decode`` gives pytorch-crf's Viterbi tags (checked here against
  torchcrf itself); with them, the best sequence the scheme allows;
* ``chunk_confidences`` gives every decoded entity with Pr(entity ∈ y), the model's
  probability that the entity is right;
* ``decode(..., decoder="meu", beta=β)`` the chunking of maximal expected F_β.

Without ``--checkpoint`` the example builds one: a small random emission model (a
stand-in for BERT: word embeddings and a linear layer, no network access) and a
torchcrf.CRF, saved with ``torch.save`` to a temporary file.

    python examples/pytorch_crf_bert.py [--checkpoint model.pt] [--beta 1.0]

Needs ``pip install ".[torch]" pytorch-crf==0.7.2``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

from fstchunk.torch import CRF

TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]
SENTENCES = [
    "Angela Merkel met Emmanuel Macron in Paris on Monday".split(),
    "The United Nations opened an office in Nairobi".split(),
    "Ada Lovelace worked with Charles Babbage".split(),
]


class BertCrf(torch.nn.Module):
    """The usual BERT-CRF layout: emissions from an encoder (here a random stand-in),
    then ``self.crf``, a pytorch-crf style CRF built by ``crf_class``."""

    def __init__(self, crf: torch.nn.Module, vocab: int = 1000, dim: int = 32):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.classifier = torch.nn.Linear(dim, crf.num_tags)
        self.crf = crf
        self.vocab = vocab

    def emissions(self, sentences: list[list[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        n = max(map(len, sentences))
        ids = torch.zeros(len(sentences), n, dtype=torch.long)
        mask = torch.zeros(len(sentences), n, dtype=torch.bool)
        for b, words in enumerate(sentences):
            ids[b, :len(words)] = torch.tensor([sum(map(ord, w)) % self.vocab for w in words])
            mask[b, :len(words)] = True
        return self.classifier(self.embed(ids)), mask


def build_checkpoint(path: Path) -> None:
    """A pytorch-crf BERT-CRF checkpoint: random weights, scaled so the model is sure
    of some entities and unsure of others."""
    import torchcrf
    torch.manual_seed(0)
    model = BertCrf(torchcrf.CRF(len(TAGS), batch_first=True))
    with torch.no_grad():
        model.classifier.weight.mul_(8)
        model.crf.transitions.mul_(20)
        model.classifier.bias[0] += 6             # most words are outside entities
    torch.save(model.state_dict(), path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", type=Path, help="a BertCrf state_dict saved with torch.save "
                    "(default: build one in a temporary folder)")
    ap.add_argument("--beta", type=float, default=1.0, help="β of the MEU decoder's F_β")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.checkpoint
        if path is None:
            path = Path(tmp) / "bert_crf.pt"
            build_checkpoint(path)
        model = BertCrf(CRF(len(TAGS), batch_first=True, tags=TAGS, scheme="IOB2"))
        model.load_state_dict(torch.load(path))      # the pytorch-crf checkpoint, unchanged
    model.eval()
    with torch.no_grad():
        em, mask = model.emissions(SENTENCES)
        viterbi = model.crf.decode(em, mask)           # over the valid IOB2 sequences
        plain = CRF(len(TAGS), batch_first=True)        # unconstrained, as pytorch-crf
        plain.load_state_dict(model.crf.state_dict())
        unconstrained = plain.decode(em, mask)
        try:                                            # pytorch-crf's own decode, if there
            import torchcrf
            theirs = torchcrf.CRF(len(TAGS), batch_first=True)
            theirs.load_state_dict(model.crf.state_dict())
            print("unconstrained Viterbi equals pytorch-crf's:",
                  theirs.decode(em, mask) == unconstrained)
        except ImportError:
            pass
        conf = model.crf.chunk_confidences(em, mask)
        meu = model.crf.decode_tags(em, mask, decoder="meu", beta=args.beta)
    for words, free, path_, ents, tags in zip(SENTENCES, unconstrained, viterbi, conf, meu):
        print(" ".join(words))
        print("  Viterbi, unconstrained:", " ".join(TAGS[i] for i in free))
        print("  Viterbi, IOB2:         ", " ".join(TAGS[i] for i in path_))
        for typ, s, e, p in ents:
            print(f"  {typ:4} {' '.join(words[s:e]):30} Pr = {p:.3f}")
        print(f"  MEU (β = {args.beta:g}):", " ".join(tags))
    return 0


if __name__ == "__main__":
    sys.exit(main())
