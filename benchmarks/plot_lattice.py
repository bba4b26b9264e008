"""The picture of one sentence's lattice: ``benchmarks/lattice_sentence.png``.

A CRF (features ``ner``, 40 L-BFGS iterations on the first 500 sentences of
CoNLL-2002 ned.train, the model of the documentation's home page) and the first
sentence of ned.testb: one column per token, one row per tag, each dot's area the
token marginal Pr(y_i = tag); over the words, the chunks of the MEU decision with their
exact probabilities Pr(chunk ∈ chunks(y)); under them, the gold chunks.  About 10 s:

    FSTCHUNK_DATA=../shared/data python benchmarks/plot_lattice.py
"""

from __future__ import annotations

import argparse
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import fstchunk  # noqa: E402
from fstchunk.io.conll import data_path  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", default=str(HERE / "lattice_sentence.png"))
    ap.add_argument("--tokens", type=int, default=22, help="the sentence's first N tokens")
    args = ap.parse_args(argv)
    train = fstchunk.read_conll(data_path("conll2002", "ned.train"))[:500]
    sentence = fstchunk.read_conll(data_path("conll2002", "ned.testb"))[0]
    crf = fstchunk.CRF("ner", max_iter=40).fit(train)
    lattice = crf.lattices([sentence])[0]
    chunks = fstchunk.decode_chunks(lattice, "meu")
    gold = fstchunk.tags_to_chunks(sentence.column(-1), "IOB2")
    draw(sentence.column(0)[:args.tokens], list(lattice.tags), lattice.marginals()[:args.tokens],
         chunks, gold, args.out)
    print(f"wrote {args.out}")
    return 0


def draw(words, tags, marginals, chunks, gold, out) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    order = sorted(range(len(tags)), key=lambda j: (tags[j] != "O", tags[j][2:], tags[j][0]))
    n = len(words)
    fig, ax = plt.subplots(figsize=(0.62 * n + 1.5, 4.6))
    for row, j in enumerate(order):
        ax.scatter(range(n), [row] * n, s=420 * marginals[:, j], color="tab:blue",
                   alpha=0.85, linewidths=0)
        ax.scatter(range(n), [row] * n, s=4, color="0.75")
    top = len(tags)
    for c in chunks:
        if c.end > n:
            continue
        ax.plot([c.start - 0.35, c.end - 0.65], [top + 0.1] * 2, color="tab:green", lw=3)
        ax.text((c.start + c.end - 1) / 2, top + 0.3, f"{c.type} {c.p:.3f}", ha="center",
                va="bottom", fontsize=9, color="tab:green")
    for t, s, e in gold:
        if e <= n:
            ax.plot([s - 0.35, e - 0.65], [-0.9] * 2, color="0.3", lw=2)
            ax.text((s + e - 1) / 2, -1.4, t, ha="center", va="top", fontsize=8, color="0.3")
    ax.set_yticks(range(len(tags)), [tags[j] for j in order], fontsize=9)
    ax.set_xticks(range(n), words, rotation=50, ha="right", fontsize=9)
    ax.set_ylim(-2.0, top + 1.2)
    ax.set_xlim(-0.7, n - 0.3)
    ax.tick_params(length=0)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title("token marginals Pr(y_i = tag) (dot area); above: MEU chunks with "
                 "Pr(chunk); below: gold", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
