"""Utilities as machines (fstchunk.decoding.utilities): conlleval, exact-boundary,
per-type and macro F and type maps of one's own.  Oracles: brute-force enumeration of
every valid sequence (E[u] of a fixed hypothesis, both directions; the best hypothesis
over all of them), u itself computed here from chunk sets; the fast engine against
composition with T⊠M; the type filter's machine against the chunks it should keep."""

import itertools
import pickle

import numpy as np
import pynini
import pytest

import fstchunk
from fstchunk import Lattice
from fstchunk.core.errors import InputError
from fstchunk.decoding.decoders import decoder
from fstchunk.decoding.utilities import MacroF, Utility, expected_utility, utility
from fstchunk.grammars.conversion import mapped_types, type_filter, type_map
from fstchunk.schemes import encodings as enc
from oracles import random_scores

TYPES = ("A", "B", "C")


def u_oracle(name, x, y, scheme, types, beta=1.0):
    """u(x, y) from the definitions: F_β of the mapped chunk sets, 0/0 := 1."""
    if name == "macro":
        return np.mean([u_oracle(f"type:{t}", x, y, scheme, types, beta) for t in types])
    maps = {"conlleval": {}, "exact": {t: "" for t in types},
            "merge": {"B": "A"}, "drop": {"C": None}}
    m = maps[name] if name in maps else {t: (t if f"type:{t}" == name else None) for t in types}

    def image(tags):
        return {(m.get(t, t), s, e) for t, s, e in enc.tags_to_chunks(list(tags), scheme)
                if m.get(t, t) is not None}
    X, Y = image(x), image(y)
    if not X and not Y:
        return 1.0
    return (1 + beta ** 2) * len(X & Y) / (len(X) + beta ** 2 * len(Y))


def made(name):
    return {"merge": Utility("merge", {"B": "A"}),
            "drop": Utility("drop", {"C": None})}.get(name) or utility(name)


NAMES = ("conlleval", "exact", "type:A", "type:C", "macro", "merge", "drop")


def lattice(seed, scheme, n, scale=1.0, types=TYPES):
    rng = np.random.default_rng(seed)
    tags = enc.scheme_tags(scheme, types)
    return Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale=scale),
                               scheme=scheme)


@pytest.mark.parametrize("scheme,n,scale", [("IOB2", 3, 1.0), ("IOBES", 3, 30.0),
                                            ("IOB1", 3, 2.0), ("IOE1", 2, 0.5)])
def test_expected_utilities_equal_enumeration_both_ways_and_both_methods(scheme, n, scale):
    lat = lattice(7, scheme, n, scale)
    law = [(list(y), np.exp(lp)) for y, lp in lat.enumerate()]
    rng = np.random.default_rng(1)
    fixed = [law[i][0] for i in rng.choice(len(law), 4, replace=False)] + [["O"] * n]
    for name in NAMES:
        u = made(name)
        for x in fixed:
            for beta in (1.0, 0.5):
                dec = sum(p * u_oracle(name, x, y, scheme, TYPES, beta) for y, p in law)
                tra = sum(p * u_oracle(name, y, x, scheme, TYPES, beta) for y, p in law)
                assert u.expected(lat, hypothesis=x, beta=beta) == pytest.approx(dec, abs=1e-10)
                assert u.expected(lat, reference=x, beta=beta) == pytest.approx(tra, abs=1e-10)
                if name != "macro":
                    assert u.expected(lat, hypothesis=x, beta=beta, method="fst") == \
                        pytest.approx(dec, abs=1e-10)
                assert u(x, x, scheme, TYPES, beta) == 1.0
            assert expected_utility(lat, x, utility=u) == pytest.approx(
                sum(p * u_oracle(name, x, y, scheme, TYPES) for y, p in law), abs=1e-10)


@pytest.mark.parametrize("scheme,seed,scale", [("IOB2", 3, 1.0), ("IOBES", 4, 3.0),
                                               ("IOB1", 5, 1.0), ("IOB2", 6, 30.0)])
def test_meu_for_each_utility_is_the_best_sequence_by_enumeration(scheme, seed, scale):
    lat = lattice(seed, scheme, 3, scale)
    law = [(list(y), np.exp(lp)) for y, lp in lat.enumerate()]
    everything = [list(x) for x in itertools.product(lat.tags, repeat=3)
                  if enc.is_valid(list(x), scheme)]
    for name in NAMES:
        u = made(name)
        value = {tuple(x): sum(p * u_oracle(name, x, y, scheme, TYPES) for y, p in law)
                 for x in everything}
        best = max(value.values())
        d = u.decode(lat)
        assert enc.is_valid(d.tags, scheme) and len(d.tags) == 3
        assert d.score == pytest.approx(value[tuple(d.tags)], abs=1e-10)   # its own E[u]
        assert d.gap >= 0 and best <= d.score + d.gap + 1e-10             # the certificate
        if name != "macro":
            assert d.score == pytest.approx(best, abs=1e-10) and d.gap < 1e-9
        via = decoder("meu", utility=u if name in ("merge", "drop") else name).decode(lat)
        assert via.tags == d.tags and via.score == pytest.approx(d.score, abs=1e-12)


@pytest.mark.parametrize("seed", [27, 64, 76])
def test_macro_resolves_overlapping_type_decisions_with_a_certificate(seed):
    """Lattices where the type:A and type:B decisions overlap: macro MEU drops chunks
    until none do; its value is its own E[macro-F] and the certificate bounds the best
    of all sequences (found by enumeration)."""
    types = ("A", "B")
    lat = lattice(seed, "IOB2", 3, 1.5, types)
    per = {t: enc.tags_to_chunks(made(f"type:{t}").decode(lat).tags, "IOB2") for t in types}
    assert any(c[1] < d[2] and d[1] < c[2] for c in per["A"] for d in per["B"])  # a clash
    d = MacroF().decode(lat)
    law = [(list(y), np.exp(lp)) for y, lp in lat.enumerate()]
    value = {tuple(x): sum(p * u_oracle("macro", x, y, "IOB2", types) for y, p in law)
             for x, _ in law}
    assert enc.is_valid(d.tags, "IOB2")
    assert d.score == pytest.approx(value[tuple(d.tags)], abs=1e-12)
    assert d.score <= max(value.values()) + 1e-12
    assert max(value.values()) <= d.score + d.gap + 1e-12 and d.gap > 0


@pytest.mark.parametrize("scheme", ["IOB1", "IOB2", "IOE1", "IOBES", "BILOU"])
def test_the_type_filter_keeps_exactly_the_chunks_of_its_types(scheme):
    u = type_filter(scheme, ("A", "B"), ["A"], arc_type="standard")
    for n in range(1, 4):
        for y in itertools.product(enc.scheme_tags(scheme, ("A", "B")), repeat=n):
            if not enc.is_valid(list(y), scheme):
                continue
            want = enc.chunks_to_tags([c for c in enc.tags_to_chunks(list(y), scheme)
                                       if c[0] == "A"], n, "IOBES")
            out = pynini.compose(pynini.accep(" ".join(y), token_type=u.input_symbols()), u)
            out.project("output").rmepsilon()
            assert list(out.paths(output_token_type=u.output_symbols()).ostrings()) == \
                [" ".join(want)], y


def test_type_maps_are_checked_and_decoders_carry_them():
    assert mapped_types(TYPES, {"B": "A", "C": None}) == ("A",)
    for bad, msg in [({"Z": "A"}, "names 'Z', which is not among the types"),
                     ({"A": "", "B": "X"}, "mixes untyped"),
                     ({t: None for t in TYPES}, "drops every type"),
                     ({"A": "a b"}, "a type is a non-empty string")]:
        with pytest.raises(InputError, match=msg):
            type_map("IOB2", TYPES, bad)
    lat = lattice(2, "IOB2", 2)
    with pytest.raises(InputError, match="'Q' is not among the lattice's types A, B, C"):
        utility("type:Q").decode(lat)
    with pytest.raises(InputError, match="unknown utility 'f1'; use one of conlleval, exact, "
                                         "partial, type, macro, type:TYPE"):
        decoder("meu", utility="f1")
    with pytest.raises(InputError, match="give exactly one of hypothesis"):
        utility("macro").expected(lat)
    with pytest.raises(InputError, match="no single pushed lattice"):
        MacroF().pushed(lat)
    dec = pickle.loads(pickle.dumps(decoder("meu", utility=Utility("m", {"B": "A"}))))
    assert dec.decode(lat).tags == Utility("m", {"B": "A"}).decode(lat).tags
    assert fstchunk.utility("exact").name == "exact" and fstchunk.Utility is Utility


def test_decode_takes_every_utility_from_the_command_line(tmp_path, capsys):
    from fstchunk.cli import main
    from fstchunk.io.conll import read_conll
    from fstchunk.models import load_model
    from oracles import TINY_CONLL
    train = tmp_path / "train.txt"
    train.write_text(TINY_CONLL * 3, encoding="utf-8")
    model = tmp_path / "m.npz"
    assert main(["train", "--train", str(train), "--max-iter", "10", "--quiet",
                 "-o", str(model)]) == 0
    lats = load_model(str(model)).lattices(read_conll(str(train)))
    for util in ("type:VP", "macro", "type", "near"):
        out = tmp_path / "out.txt"
        assert main(["decode", "--model", str(model), "--input", str(train), "--decoder",
                     "meu", "--utility", util, "-o", str(out)]) == 0
        want = [enc.convert(utility(util).decode(lat).tags, lat.scheme, "IOB2")
                for lat in lats]
        assert [s.column(-1) for s in read_conll(str(out))] == want
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["decode", "--model", str(model), "--input", str(train), "--decoder", "meu",
              "--utility", "f1"])
    assert "argument --utility: unknown utility 'f1'; use one of conlleval, exact, partial, type, " \
           "macro, type:TYPE (e.g. type:PER), weighted:TYPE=W" in capsys.readouterr().err
    assert main(["decode", "--model", str(model), "--input", str(train), "--decoder", "meu",
                 "--utility", "type:PER", "-o", str(tmp_path / "x.txt")]) != 0
    assert "'PER' is not among the lattice's types NP, VP" in capsys.readouterr().err


def singles(scheme, types):
    """U of one's own: only single-token chunks count (conversion to IOBES, then S-X
    kept and B, I, E to O) — no type map says this."""
    from fstchunk.grammars.conversion import conversion_transducer
    from fstchunk.schemes.tagspace import symbol_table
    conv = conversion_transducer(scheme, "IOBES", types)
    table = symbol_table(types)
    keep = pynini.Fst(conv.arc_type())
    q = keep.add_state()
    keep.set_start(q)
    keep.set_final(q)
    for tag in enc.scheme_tags("IOBES", types):
        out = tag if tag.startswith("S-") or tag == "O" else "O"
        keep.add_arc(q, pynini.Arc(table.find(tag), table.find(out),
                                   pynini.Weight.one(keep.weight_type()), q))
    return pynini.compose(conv, keep), types


def merge_b(scheme, types):
    return type_map(scheme, types, {"B": "A"}), ("A", "C")


@pytest.mark.parametrize("scheme", ["IOB2", "IOB1", "IOBES"])
def test_a_transducer_of_ones_own_is_a_utility(scheme):
    from fstchunk.decoding.machine_utility import MachineUtility
    lat = lattice(11, scheme, 3, 2.0)
    law = [(list(y), np.exp(lp)) for y, lp in lat.enumerate()]

    def oracle(x, y):
        one = lambda tags: {c for c in enc.tags_to_chunks(tags, scheme) if c[2] - c[1] == 1}
        X, Y = one(x), one(y)
        return 1.0 if not X and not Y else 2 * len(X & Y) / (len(X) + len(Y))
    value = {tuple(x): sum(p * oracle(x, y) for y, p in law) for x, _ in law}
    u = MachineUtility("singles", singles)
    for x, _ in law[::9]:
        assert u.expected(lat, hypothesis=x) == pytest.approx(value[tuple(x)], abs=1e-10)
        assert u.expected(lat, hypothesis=x, method="fst") == pytest.approx(value[tuple(x)],
                                                                             abs=1e-10)
        assert u(x, law[0][0], scheme, TYPES) == oracle(x, law[0][0])
    d = decoder("meu", utility=u).decode(lat)
    assert d.score == pytest.approx(max(value.values()), abs=1e-10)
    assert value[tuple(d.tags)] == pytest.approx(d.score, abs=1e-10)
    merged = pickle.loads(pickle.dumps(MachineUtility("merge", merge_b)))   # picklable
    twin = Utility("merge", {"B": "A"})
    assert merged.decode(lat).score == pytest.approx(twin.decode(lat).score, abs=1e-12)
    assert merged.expected(lat, reference=law[3][0]) == pytest.approx(
        twin.expected(lat, reference=law[3][0]), abs=1e-12)
    with pytest.raises(InputError, match="not \\(a pynini.Fst, its output types\\)"):
        MachineUtility("bad", lambda s, t: ("U", t)).decode(lat)
    two = MachineUtility("two", lambda s, t: (pynini.union(singles(s, t)[0],
                                                           type_map(s, t, {})), t))
    many = [x for x, _ in law if enc.tags_to_chunks(x, scheme)
            and any(c[2] - c[1] > 1 for c in enc.tags_to_chunks(x, scheme))][0]
    with pytest.raises(InputError, match="U maps .* to 2 sequences; it must map every valid "
                                         "sequence to exactly one"):
        two.image(many, scheme, TYPES)


def test_expected_takes_every_utility_from_the_command_line(tmp_path, capsys):
    """``expected --utility U``: each row is U's own E[u] of the sentence's tag column
    under the model (both directions, both methods, a score file, workers); a type the
    model lacks is one error before any row; ``--input`` refuses it."""
    import json
    from fstchunk.cli import main
    from fstchunk.io.conll import read_conll
    from fstchunk.models import load_model
    from fstchunk.models.scorefile import save_scores
    from oracles import TINY_CONLL
    train = tmp_path / "train.txt"
    train.write_text(TINY_CONLL * 2, encoding="utf-8")
    model = tmp_path / "m.npz"
    assert main(["train", "--train", str(train), "--max-iter", "3", "--quiet",
                 "-o", str(model)]) == 0
    sents = read_conll(str(train))
    lats = load_model(str(model)).lattices(sents)
    capsys.readouterr()

    def rows(*extra):
        assert main(["expected", str(train), "--json", *extra]) == 0
        return json.loads(capsys.readouterr().out)
    for util, extra in [("partial", ["--model", str(model)]),
                        ("macro", ["--model", str(model), "--direction", "decoding"]),
                        ("weighted:NP=3", ["--model", str(model), "--beta", "0.5"]),
                        ("type:VP", ["--model", str(model), "--method", "fst"]),
                        ("type", ["--model", str(model), "--direction", "decoding"]),
                        ("exact", ["--model", str(model), "--workers", "2"])]:
        got = rows("--utility", util, *extra)
        side = "hypothesis" if "decoding" in extra else "reference"
        beta = 0.5 if "0.5" in extra else 1.0
        want = [utility(util).expected(lat, beta=beta, **{side: enc.convert(
            s.column(-1), "IOB2", lat.scheme)}) for s, lat in zip(sents, lats)]
        assert [r["expected_utility"] for r in got["sentences"]] == pytest.approx(want)
        assert got["summary"]["utility"] == util
        assert got["summary"]["mean_sentence_expected_utility"] == pytest.approx(np.mean(want))
    # a score file: the same rows; and the text table
    npz = tmp_path / "scores.npz"
    _, trans, start, end = lats[0].scores
    save_scores(npz, lats[0].space.tags, [lat.scores[0] for lat in lats], trans, start, end,
                scheme=lats[0].scheme)
    got = rows("--scores", str(npz), "--utility", "partial")
    want = [utility("partial").expected(lat, reference=enc.convert(s.column(-1), "IOB2",
                                                                   lat.scheme))
            for s, lat in zip(sents, lats)]
    assert [r["expected_utility"] for r in got["sentences"]] == pytest.approx(want)
    assert main(["expected", str(train), "--model", str(model), "--utility", "partial"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split() == ["sent", "line", "n", "E[u]"]
    assert f"mean per-sentence E[u] of partial = {np.mean(want):.6f} over {len(sents)} " \
           f"sentences (training direction, β = 1)" in text
    # strict is conlleval: the full table
    assert main(["expected", str(train), "--model", str(model), "--utility", "strict"]) == 0
    assert "E[tp]" in capsys.readouterr().out
    # refusals, each one line naming what is wrong
    for bad, said in [(["--utility", "type:PER"], "'PER' is not among the lattice's types "
                       "NP, VP"),
                      (["--utility", "weighted:PER=2"], "'PER' not among the lattice's types")]:
        assert main(["expected", str(train), "--model", str(model), *bad]) != 0
        cap = capsys.readouterr()
        assert said in cap.err and cap.out == ""
    assert main(["expected", "--input", str(train), "--model", str(model), "--utility",
                 "macro"]) != 0
    assert "--utility macro is for the per-sentence table" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["expected", str(train), "--model", str(model), "--utility", "f1"])
    assert "argument --utility: unknown utility 'f1'" in capsys.readouterr().err
