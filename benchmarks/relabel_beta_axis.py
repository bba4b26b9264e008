"""Relabel the β axis of the stored MAP-vs-MEU plots (``meu_precision_recall_vs_beta*.png``).

Those runs decoded at the slides' β' = β² ∈ {1/4, 1/2, 1, 2, 4} and labelled the axis
"β"; redrawing them takes the models and five exact-MEU decodings per test set again.
The points do not move: on the log₂ axis the tick at β' sits where the standard
β = √β' does, so only the text changes: the tick labels become 0.5, 0.71, 1, 1.41, 2
and the axis label names the standard β.  Pixels under the axis are repainted; the
plot area is untouched.  Idempotent (it finds the ticks from the drawn axis):

    python benchmarks/relabel_beta_axis.py benchmarks/meu_precision_recall_vs_beta*.png
"""

from __future__ import annotations

import sys

import numpy as np

LABELS = ("0.5", "0.71", "1", "1.41", "2")          # √β' for β' = 2^-2 … 2^2
XLABEL = "β of F_β = (1+β²)PR/(β²P+R)"              # what bench_decoders.py writes today


def relabel(path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.image as mpimg
    import matplotlib.pyplot as plt
    img = mpimg.imread(path)
    h, w = img.shape[:2]
    dark = img[:, :, :3].sum(axis=2) < 1.0
    spine = max(i for i in range(h) if dark[i].sum() > 200)          # the lower spine
    cols = [j for j in range(w) if dark[:spine, j].sum() > 250]       # the side spines
    panels = [(a, b) for a, b in zip(cols[::2], cols[1::2])]
    img = img.copy()
    img[spine + 6:, :, :3] = 1.0                                      # tick labels, axis label
    fig = plt.figure(figsize=(w / 100, h / 100), dpi=100)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.imshow(img, extent=(0, w, h, 0), interpolation="none")
    ax.set_axis_off()
    for left, right in panels:
        ticks = [j for j in range(left + 2, right - 1) if dark[spine + 2, j]]
        if len(ticks) != len(LABELS):
            raise SystemExit(f"{path}: {len(ticks)} ticks between x={left} and {right}, "
                             f"expected {len(LABELS)}")
        for x, label in zip(ticks, LABELS):
            ax.text(x, spine + 8, label, ha="center", va="top", fontsize=10)
        ax.text((left + right) / 2, h - 4, XLABEL, ha="center", va="bottom", fontsize=10)
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        relabel(name)
