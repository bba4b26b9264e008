"""``fstchunk demo``: the Jansche slides' examples, on built-in data.

1. The named entities of the slides' running sentence (§1, §6) in every scheme.
2. The toy example (§11): the bigram model b(·|·; θ) over untyped IOB2, the table
   of P, R, F_β of six hypotheses against the gold OOB, and which hypothesis MAP
   and MEU decoding pick as θ runs over (0, 1).

The slides' F column ("F_3") is F with β' = 3 in the slides' own parametrisation
F = (β'+1)·tp / (m(x) + β'·m(y)), i.e. the standard F_β = (1+β²)PR/(β²P+R) at
β = √3 (:mod:`fstchunk.core.fbeta`): BBB gets 4/6 = 0.67 and BOB 4/5 = 0.80 against OOB;
β = 1 would give 0.50 and 0.67.

Pitfalls: the MEU pick may be a sequence of probability zero (BBB for small θ:
b(B|B) = 0), which is right, not a bug; and near-ties in E[F] are printed as
ties (``BOB=OOB``), up to a relative 1e-12, not broken by dictionary order.
"""

from __future__ import annotations

import itertools
import math
from typing import Iterable

import numpy as np

from ..schemes import encodings as enc
from ..evaluation.chunks import f_beta
from ..decoding.expected import expected_f
from ..grammars.models import toy_bigram
from ..structures.lattice import Lattice

#: The slides' example sentence (§1, §6) with its named entities in untyped IOB2.
SLIDES_WORDS = ("De liberale minister van Justitie Marc Verwilghen is geen kandidaat op "
                "de lokale VLD-lijst bij de komende gemeenteraadsverkiezingen in "
                "Dendermonde .").split()
SLIDES_TAGS = ("O O O O B B I O O O O O O B O O O O O B O").split()

TOY_GOLD = "OOB"
TOY_HYPOTHESES = ("OOO", "OBO", "BOO", "BBB", "BOB", "OOB")   # the slides' table, in order
#: the standard β of the slides' column (their β' = β² = 3)
TOY_BETA = math.sqrt(3.0)


def _ratio(a: int, b: int) -> str:
    return f"{a}/{b}"


def toy_table(beta: float = TOY_BETA) -> list[tuple[str, str, str, float]]:
    """(x, P(x|OOB), R(x|OOB), F_β(x|OOB)) for the slides' six hypotheses."""
    gold = set(enc.tags_to_chunks(list(TOY_GOLD), "IOB2"))
    rows = []
    for x in TOY_HYPOTHESES:
        hyp = set(enc.tags_to_chunks(list(x), "IOB2"))
        tp = len(hyp & gold)
        rows.append((x, _ratio(tp, len(hyp)), _ratio(tp, len(gold)),
                     f_beta(tp, len(hyp), len(gold), beta)))
    return rows


def toy_lattice(theta: float, n: int = 3) -> Lattice:
    """The slides' toy bigram model b(·|·; θ) as a lattice over untyped IOB2, n tokens."""
    return Lattice.from_fst(toy_bigram(theta, n), ("O", "B", "I"), "IOB2")


def valid_sequences(n: int = 3) -> list[str]:
    """Every valid untyped IOB2 sequence of length ``n``, as a string such as "OBI"."""
    return ["".join(s) for s in itertools.product("OBI", repeat=n) if enc.is_valid(s, "IOB2")]


def toy_sweep(thetas: Iterable[float], beta: float = TOY_BETA) -> list[dict]:
    """For each θ: Pr and E[F_β] of every valid length-3 sequence, the MAP and MEU picks."""
    out = []
    seqs = valid_sequences(3)
    for theta in thetas:
        lat = toy_lattice(theta)
        prob = {x: float(np.exp(lat.log_prob(list(x)))) for x in seqs}
        ef = {x: expected_f(lat, hypothesis=list(x), beta=beta, method="fst").f for x in seqs}
        out.append({"theta": theta, "prob": prob, "expected_f": ef,
                    "map": _argmax_with_ties(prob), "meu": _argmax_with_ties(ef)})
    return out


def _argmax_with_ties(values: dict[str, float]) -> str:
    """The best key; exact ties (up to rounding) are listed, joined by '='."""
    best = max(values.values())
    return "=".join(sorted(k for k, v in values.items() if v >= best - 1e-12 * max(1, best)))


def run() -> int:
    print("fstchunk demo (Jansche, 'Novel algorithms for minimum risk phrase chunking')\n")
    print("1. The slides' sentence and its named entities (untyped IOB2, §6):")
    chunks = enc.tags_to_chunks(SLIDES_TAGS, "IOB2")
    print("   chunks (type, start, end):", chunks)
    print("   " + " ".join("[" + " ".join(SLIDES_WORDS[s:e]) + "]" for _, s, e in chunks))
    width = max(map(len, SLIDES_WORDS))
    table = {s: enc.chunks_to_tags(chunks, len(SLIDES_WORDS), s) for s in enc.SCHEMES}
    print(f"\n   {'word':<{width}}  " + " ".join(f"{s:<6}" for s in enc.SCHEMES))
    for i, w in enumerate(SLIDES_WORDS):
        print(f"   {w:<{width}}  " + " ".join(f"{table[s][i]:<6}" for s in enc.SCHEMES))

    print(f"\n2. The toy example (§11): gold {TOY_GOLD}; F_β with β = √3 (the slides' β' = "
          "β² = 3) reproduces the slides' column (β = 1 would give BBB 0.50, BOB 0.67):")
    print(f"   {'x':<4} {'P(x|OOB)':>9} {'R(x|OOB)':>9} {'F_√3(x|OOB)':>11}")
    for x, p, r, f in toy_table():
        print(f"   {x:<4} {p:>9} {r:>9} {f:>11.2f}")

    thetas = [round(t, 2) for t in np.arange(0.05, 0.96, 0.1)]
    print("\n   b(I|I)=b(I|O)=0, b(I|B)=θ², b(O|I)=b(O|O)=θ, b(O|B)=1−θ², b(B|·)=1−θ, "
          "b(B|B)=0.\n   As θ varies, MAP picks the most probable sequence, MEU the one of "
          "maximum expected F_√3\n   (by composing T⊠M with the model; all 13 valid "
          "length-3 sequences considered):")
    print(f"   {'θ':>5}  {'MAP':<7} {'Pr':>6}   {'MEU':<4} {'E[F]':>6}   E[F] of MAP")
    for row in toy_sweep(thetas):
        m, u = row["map"], row["meu"]
        m1, u1 = m.split("=")[0], u.split("=")[0]
        print(f"   {row['theta']:5.2f}  {m:<7} {row['prob'][m1]:6.3f}   {u:<4} "
              f"{row['expected_f'][u1]:6.3f}   {row['expected_f'][m1]:6.3f}")
    print("\n   (examples/toy_example.py plots E[F] of each hypothesis against θ.)")
    return 0
