"""The toy example of the Jansche slides (§11): table, MAP vs MEU, and a plot.

Prints the slides' table of P, R, F_β against the gold OOB (the standard β = √3, the
slides' β' = β² = 3, reproduces it), then for θ in (0, 1) which sequence MAP and MEU
decoding pick, and plots the expected F_β of each of the slides' six hypotheses against θ.

    python examples/toy_example.py --png toy_expected_f.png
"""

import argparse

import numpy as np

from fstchunk.cli import demo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png", default="toy_expected_f.png", help="where to write the plot")
    ap.add_argument("--beta", type=float, default=demo.TOY_BETA,
                    help="the standard β of F_β = (1+β²)PR/(β²P+R) (default √3: the slides' 3)")
    args = ap.parse_args()

    print(f"{'x':<4} {'P(x|OOB)':>9} {'R(x|OOB)':>9} {'F(x|OOB)':>9}")
    for x, p, r, f in demo.toy_table(args.beta):
        print(f"{x:<4} {p:>9} {r:>9} {f:>9.2f}")
    thetas = np.linspace(0.01, 0.99, 99)
    sweep = demo.toy_sweep(thetas, args.beta)
    print(f"\n{'θ':>5}  MAP  MEU")
    last = None
    for row in sweep:
        pick = (row["map"], row["meu"])
        if pick != last:
            print(f"{row['theta']:5.2f}  {row['map']}  {row['meu']}")
            last = pick

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for x in demo.TOY_HYPOTHESES:
        ax.plot(thetas, [row["expected_f"][x] for row in sweep], label=x)
    ax.set_xlabel("θ")
    ax.set_ylabel(f"expected F_β, β = {args.beta:.3g}, under b(·|·; θ)")
    ax.set_title("Toy bigram model (Jansche §11): expected F of each hypothesis")
    ax.legend(title="hypothesis x")
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    print(f"\nwrote {args.png}")


if __name__ == "__main__":
    main()
