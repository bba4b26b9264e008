"""fstchunk.torch against pytorch-crf and torch-struct on CPU (issue 21): the negated
log-likelihood with its gradient, Viterbi, and fstchunk's expected-F losses.

For B = 32 sentences of n ∈ {20, 50, 200} tokens and L ∈ {9, 23} tags (IOB2 with 4 and
11 types: Dutch NER and CoNLL-2000 chunking), random float32 emissions and transitions:

* NLL + backward: fstchunk ``log_partition − score``; pytorch-crf ``−CRF(...)`` (the
  same quantity); torch-struct ``LinearChainCRF`` partition minus the gold potentials;
* Viterbi: fstchunk ``decode(method="map")`` (tag strings out), pytorch-crf
  ``decode``, torch-struct ``argmax`` (one-hot edges, by autograd through max);
* fstchunk only: ``expected_f`` and ``expected_corpus_f`` + backward, as a ratio to its
  own NLL + backward (target ≤ 3), under the random scores and under **tagger-like**
  scores (the gold tag's emission raised by 4 nats, as a trained tagger's are peaked):
  the expected sentence F's node rule covers the chunk counts a model finds plausible,
  so its cost depends on how sure the model is (K, the nodes per sentence, is shown).

fstchunk restricts every quantity to the scheme's valid sequences (the peers sum over
all L^n); the peers are optional benchmark dependencies (``pip install pytorch-crf==0.7.2
torch-struct==0.5``).  One thread (``torch.set_num_threads(1)``), the median of
``--repeats`` timed runs after one warm-up.

    python benchmarks/bench_torch.py [--repeats 5] [--no-write]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
import torch

from common import write_section
from fstchunk.schemes import encodings as enc
from fstchunk.decoding.decode import decode_map
from fstchunk import Lattice
from fstchunk.torch import ChunkCRF

TYPES = {9: ("PER", "LOC", "ORG", "MISC"),
         23: ("NP", "VP", "PP", "ADVP", "ADJP", "SBAR", "PRT", "CONJP", "INTJ", "LST", "UCP")}


def timed(fn, repeats: int) -> float:
    fn()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def case(L: int, n: int, B: int = 32, seed: int = 0):
    rng = np.random.default_rng(seed)
    tags = enc.scheme_tags("IOB2", TYPES[L])
    assert len(tags) == L
    em = torch.tensor(rng.normal(size=(B, n, L)), dtype=torch.float32)
    tr = torch.tensor(rng.normal(scale=0.5, size=(L, L)), dtype=torch.float32)
    mask = torch.ones((B, n), dtype=torch.bool)
    gold = [decode_map(Lattice.from_scores(tags, rng.normal(scale=2, size=(n, L)),
                                           np.zeros((L, L)))).tags for _ in range(B)]
    return tags, em, tr, mask, gold


def run(L: int, n: int, repeats: int) -> dict:
    import torch_struct
    import torchcrf
    tags, em0, tr0, mask, gold = case(L, n)
    col = {t: i for i, t in enumerate(tags)}
    gidx = torch.tensor([[col[t] for t in g] for g in gold])
    crf = ChunkCRF(tags)
    out = {}

    def ours_nll():
        em, tr = em0.clone().requires_grad_(True), tr0.clone().requires_grad_(True)
        (crf.log_partition(em, tr, mask) - crf.score(em, tr, mask, gold=gold)).sum().backward()

    peaked = em0.clone()
    peaked.scatter_add_(2, gidx.unsqueeze(-1), torch.full((32, n, 1), 4.0))

    def ours_ef(scores):
        em, tr = scores.clone().requires_grad_(True), tr0.clone().requires_grad_(True)
        crf.expected_f(em, tr, mask, gold=gold).sum().backward()

    def ours_ecf(scores):
        em, tr = scores.clone().requires_grad_(True), tr0.clone().requires_grad_(True)
        crf.expected_corpus_f(em, tr, mask, gold=gold).backward()

    def nodes(scores) -> int:
        from fstchunk.torch.checks import check_gold
        from fstchunk.torch.expected import node_axis
        bt = crf._check(scores, tr0, mask, None, None)
        g = check_gold(gold, bt, crf.scheme, crf.types, crf.type_index)
        return int(node_axis(crf, bt, g, 1.0)[0].shape[1]) - 2

    peer = torchcrf.CRF(L, batch_first=True)
    with torch.no_grad():
        peer.transitions.copy_(tr0)
        peer.start_transitions.zero_()
        peer.end_transitions.zero_()

    def crf_nll():
        em = em0.clone().requires_grad_(True)
        (-peer(em, gidx, mask, reduction="sum")).backward()

    def struct_pot(em, tr):
        pot = tr.view(1, 1, L, L) + em[:, 1:].unsqueeze(2)       # (B, n-1, from, to)
        return torch.cat([pot[:, :1] + em[:, 0].view(-1, 1, L, 1), pot[:, 1:]], 1)

    def struct_nll(backward=True):
        em, tr = em0.clone().requires_grad_(True), tr0.clone().requires_grad_(True)
        pot = struct_pot(em, tr).transpose(2, 3)                   # torch-struct: (to, from)
        dist = torch_struct.LinearChainCRF(pot)
        gold_pot = (pot[torch.arange(32)[:, None], torch.arange(n - 1)[None, :],
                        gidx[:, 1:], gidx[:, :-1]]).sum()
        value = dist.partition.sum() - gold_pot
        if backward:
            value.backward()
        return value

    # the two peers compute the same NLL (all L^n sequences): a check of this setup
    with torch.no_grad():
        a, b = float(-peer(em0, gidx, mask, reduction="sum")), float(struct_nll(False))
    assert abs(a - b) <= 1e-3 * max(1.0, abs(a)), (a, b)

    def struct_viterbi():
        pot = struct_pot(em0, tr0).transpose(2, 3).detach()
        torch_struct.LinearChainCRF(pot).argmax

    out["nll"] = {"fstchunk": timed(ours_nll, repeats), "pytorch-crf": timed(crf_nll, repeats),
                  "torch-struct": timed(struct_nll, repeats)}
    out["viterbi"] = {"fstchunk": timed(lambda: crf.decode(em0, tr0, mask), repeats),
                      "pytorch-crf": timed(lambda: peer.decode(em0, mask), repeats),
                      "torch-struct": timed(struct_viterbi, repeats)}
    for name, scores in (("random", em0), ("tagger-like", peaked)):
        out[name] = {"expected-f": timed(lambda: ours_ef(scores), repeats),
                     "expected-corpus-f": timed(lambda: ours_ecf(scores), repeats),
                     "K": nodes(scores)}
    return out


def ablation(repeats: int) -> str:
    """Why the expected-F DP reuses its buffers and computes count windows: the same
    losses (L = 23, n = 200, tagger-like scores, + backward) with the workspace bypassed
    (every buffer fresh from the allocator) or no windows (the node rule over every
    count); one 859-token sentence; and MKL's float64 (L, L) @ (L, 512) at L = 23 and
    24 (the DP's product at B = 32 and 16 rows per sentence: padding the column axis to
    24 no longer pays)."""
    from fstchunk.torch import expected, recursion
    tags, em0, tr0, mask, gold = case(23, 200)
    col = {t: i for i, t in enumerate(tags)}
    gidx = torch.tensor([[col[t] for t in g] for g in gold])
    em0 = em0.clone().scatter_add_(2, gidx.unsqueeze(-1), torch.full((32, 200, 1), 4.0))

    def loss(crf, name):
        em, tr = em0.clone().requires_grad_(True), tr0.clone().requires_grad_(True)
        getattr(crf, name)(em, tr, mask, gold=gold).sum().backward()

    take, shortest = recursion.take, expected.WINDOW_MIN_LENGTH

    def fresh(_crf, numel, device):
        return torch.empty(numel, dtype=torch.float64, device=device)

    rows = ["| variant | expected F + grad | expected corpus F + grad |", "|---|---|---|"]
    for name, patch in (("as built", None), ("workspace bypassed", "pool"),
                        ("no count windows", "win")):
        recursion.take = fresh if patch == "pool" else take
        expected.WINDOW_MIN_LENGTH = 10 ** 9 if patch == "win" else shortest
        try:
            crf = ChunkCRF(tags)
            t = [timed(lambda: loss(crf, k), repeats) for k in ("expected_f",
                                                                "expected_corpus_f")]
        finally:
            recursion.take, expected.WINDOW_MIN_LENGTH = take, shortest
        rows.append(f"| {name} | {1e3 * t[0]:.0f} ms | {1e3 * t[1]:.1f} ms |")
        print(rows[-1], flush=True)
    # one long sentence (the audit's 859 tokens), tagger-like scores
    tags, em1, tr1, mask1, gold1 = case(23, 859, B=1, seed=1)
    g1 = torch.tensor([[col[t] for t in gold1[0]]])
    em1 = em1.clone().scatter_add_(2, g1.unsqueeze(-1), torch.full((1, 859, 1), 4.0))
    crf = ChunkCRF(tags)

    def long_f():
        em = em1.clone().requires_grad_(True)
        crf.expected_f(em, tr1, mask1, gold=gold1).sum().backward()

    t_long = timed(long_f, repeats)
    pool = sum(b.numel() * 8 for k, v in crf._cache.items() if k[0] == "workspace"
               for b in v["free"] + [lent for lent, _ in v["lent"]])
    rows.append(f"| one 859-token sentence, expected F + grad | {1e3 * t_long:.0f} ms "
                f"(workspace {pool / 2**20:.0f} MiB) | |")
    print(rows[-1], flush=True)
    mm = []
    for L in (23, 24):
        a, b = torch.rand(L, L, dtype=torch.float64), torch.rand(L, 512, dtype=torch.float64)
        mm.append(f"L = {L}: {1e6 * timed(lambda: [a @ b for _ in range(100)], repeats) / 100:.1f} µs")
    return ("Ablation at L = 23, n = 200, B = 32, tagger-like scores (median of "
            f"{repeats} runs):\n\n" + "\n".join(rows) + "\n\nfloat64 (L, L) @ (L, 512), "
            "one thread: " + ", ".join(mm) + ".")


def windows_table() -> str:
    """K, the most quadrature nodes in a batch of 32 (the expected sentence F's rows
    scale with it), with the Chernoff count windows and without (the rule over every
    count), by length: the benchmark's dense gold under random and tagger-like scores,
    and sparse gold (a two-token chunk every 7 tokens, as in NER) under random scores
    and scores peaked on it by 6 nats.  fstchunk computes windows only from
    expected.WINDOW_MIN_LENGTH tokens on; this table is why."""
    from fstchunk.torch import expected
    rows = ["| L | n | dense gold, random | dense, tagger-like | sparse gold, random | "
            "sparse, peaked |", "|---|---|---|---|---|---|"]
    for L in (9, 23):
        for n in (15, 20, 30, 50, 100):
            tags, em0, tr0, mask, gold = case(L, n)
            crf = ChunkCRF(tags)
            col = {t: i for i, t in enumerate(tags)}
            sparse = [["O"] * n for _ in gold]
            for g in sparse:
                for s0 in range(2, n - 2, 7):
                    g[s0], g[s0 + 1] = tags[1], tags[2]
            cells = []
            for gl, bump in ((gold, 0.0), (gold, 4.0), (sparse, 0.0), (sparse, 6.0)):
                gidx = torch.tensor([[col[t] for t in g] for g in gl])
                em = em0.clone().scatter_add_(2, gidx.unsqueeze(-1),
                                              torch.full((32, n, 1), bump))
                bt = crf._check(em, tr0, mask, None, None).double()
                g = crf._gold(gl, bt)
                shortest = expected.WINDOW_MIN_LENGTH
                ks = []
                for limit in (0, 10 ** 9):
                    expected.WINDOW_MIN_LENGTH = limit
                    try:
                        ks.append(int(expected.node_axis(crf, bt, g, 1.0)[0].shape[1]) - 2)
                    finally:
                        expected.WINDOW_MIN_LENGTH = shortest
                cells.append(f"{ks[0]} / {ks[1]}")
            rows.append(f"| {L} | {n} | " + " | ".join(cells) + " |")
    return ("Quadrature nodes K (most in the batch of 32) with / without count windows "
            f"(node tolerance {expected.NODE_TOL:g}, tails {expected.WINDOW_TAIL:g}); windows "
            f"are computed from {expected.WINDOW_MIN_LENGTH} tokens on:\n\n" + "\n".join(rows))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--lengths", default="20,50,200")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = ["| L | n | NLL+grad fstchunk | pytorch-crf | torch-struct | fstchunk / faster "
            "peer | Viterbi fstchunk | pytorch-crf | torch-struct | fstchunk / faster peer |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    losses = ["| L | n | scores | K | expected F + grad | × NLL | expected corpus F + grad "
              "| × NLL |", "|---|---|---|---|---|---|---|---|"]
    for L in (9, 23):
        for n in map(int, args.lengths.split(",")):
            r = run(L, n, args.repeats)
            a, v = r["nll"], r["viterbi"]
            ms = {k: {p: 1e3 * t for p, t in d.items()} for k, d in (("a", a), ("v", v))}
            fa = min(ms["a"]["pytorch-crf"], ms["a"]["torch-struct"])
            fv = min(ms["v"]["pytorch-crf"], ms["v"]["torch-struct"])
            rows.append(
                f"| {L} | {n} | {ms['a']['fstchunk']:.1f} | {ms['a']['pytorch-crf']:.1f} | "
                f"{ms['a']['torch-struct']:.1f} | {ms['a']['fstchunk'] / fa:.2f} | "
                f"{ms['v']['fstchunk']:.1f} | {ms['v']['pytorch-crf']:.1f} | "
                f"{ms['v']['torch-struct']:.1f} | {ms['v']['fstchunk'] / fv:.2f} |")
            print(rows[-1], flush=True)
            for name in ("random", "tagger-like"):
                e = r[name]
                losses.append(
                    f"| {L} | {n} | {name} | {e['K']} | {1e3 * e['expected-f']:.0f} ms | "
                    f"{e['expected-f'] / a['fstchunk']:.1f} | "
                    f"{1e3 * e['expected-corpus-f']:.1f} ms | "
                    f"{e['expected-corpus-f'] / a['fstchunk']:.1f} |")
                print(losses[-1], flush=True)
    abl = ablation(args.repeats)
    win = windows_table()
    print(win, flush=True)
    text = ("B = 32 sentences, float32, one thread, CPU; milliseconds, the median of "
            f"{args.repeats} runs after a warm-up. fstchunk sums over the scheme's valid sequences "
            "only, the peers over all. Targets: no slower than the faster peer; expected-F "
            "loss ≤ 3× the log-partition (NLL) cost.\n\n" + "\n".join(rows) + "\n\n"
            "fstchunk's expected-F losses (+ backward) as a multiple of its own NLL + backward "
            "above; random scores as above, or tagger-like (the gold tag's emission + 4). K: "
            "quadrature nodes per sentence of the expected sentence F (the most in the "
            "batch).\n\n" + "\n".join(losses) + "\n\n" + abl + "\n\n" + win)
    print(text)
    if not args.no_write:
        write_section("torch (issue 21): speed against pytorch-crf and torch-struct", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
