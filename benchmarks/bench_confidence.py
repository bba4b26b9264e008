"""What entity confidences cost in ``fstchunk decode`` (issue 35, part 5).

Decodes a test set with each decoder three times in one process — tags only (the
CoNLL output's work), tags plus each chunk's p (``--format jsonl``), and tags, p and
token marginals (``--marginals``) — through :func:`fstchunk.decoding.batch.iter_decode_sentences`,
the path the CLI takes, and reports the seconds and the ratio to tags only.  The
model: the counting HMM fitted on the training set (no tuning; δ = 0.1, min_count =
2), or a saved model with ``--model``.  Also checks that every p equals the dense
table of :meth:`Lattice.chunk_marginals` on the first sentences.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_confidence.py --sentences 500
"""

from __future__ import annotations

import argparse
import os

from common import Timer, data_path, write_section
from fstchunk.schemes import encodings as enc
from fstchunk.decoding.batch import iter_decode_sentences
from fstchunk.io.conll import read_conll
from fstchunk.models import load_model
from fstchunk.models.hmm import HMM

DECODERS = ("map", "posterior", "meu")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="a saved model (default: the HMM)")
    ap.add_argument("--sentences", type=int, default=500, help="test sentences decoded")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each setting (the fastest "
                                                           "is reported)")
    args = ap.parse_args()
    train = read_conll(data_path("conll2000", "train.txt"))
    test = read_conll(data_path("conll2000", "test.txt"))[:args.sentences]
    model = load_model(args.model) if args.model else HMM().fit(train)
    tokens = sum(map(len, test))
    rows, chunks = [], 0
    for decoder in DECODERS:
        secs = [float("inf")] * 3
        for _ in range(args.rounds):                 # interleaved; the fastest of each
            for j, (conf, marg) in enumerate(((False, False), (True, False), (True, True))):
                with Timer() as t:
                    got = list(iter_decode_sentences(model, test, decoder, confidences=conf,
                                                     marginals=marg))
                secs[j] = min(secs[j], t.seconds)
                if conf and not marg:
                    chunks = sum(len(d.chunks) for d in got)
                    _check(model, test[:50], got[:50])
        rows.append(f"| {decoder} | {secs[0]:.2f} | {secs[1]:.2f} | {secs[1] / secs[0]:.2f} | "
                    f"{secs[2]:.2f} | {secs[2] / secs[0]:.2f} |")
    body = (f"CoNLL-2000 test, first {len(test)} sentences ({tokens} tokens, {chunks} chunks "
            f"decoded by meu), model: {args.model or 'counting HMM on train.txt'}; one "
            f"process, the fastest of {args.rounds} interleaved runs each (seconds; load "
            f"average at the end {os.getloadavg()[0]:.1f} on this machine, so the ratios are "
            "rough).  Every p checked against `Lattice.chunk_marginals` on the first 50 "
            "sentences (max |Δ| < 1e-9).\n\n"
            "| decoder | tags only | + chunk p | ratio | + p + marginals | ratio |\n"
            "|---|---|---|---|---|---|\n" + "\n".join(rows))
    print(body)
    write_section("Entity confidences (issue 35): what p and marginals cost in decode", body)


def _check(model, sents, decoded) -> None:
    for lat, d in zip(model.lattices(sents), decoded):
        dense = lat.chunk_marginals()
        for c in d.chunks:
            want = dense[lat.space.types.index(c.type), c.start, c.end]
            assert abs(c.p - want) < 1e-9, (c, want)
        assert [c[:3] for c in d.chunks] == enc.tags_to_chunks(d.tags, "IOB2")


if __name__ == "__main__":
    main()
