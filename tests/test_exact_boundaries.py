"""Issue 47 §2, the exact-boundary utility (a chunk correct with the other side's
boundaries, any type; SemEval's ``exact`` mode): its expected F_β by the untyped sweep,
by composition with T⊠M on the type-erased machine and by the erased lattice's engine,
all against brute-force enumeration; its MEU decision against the best of every valid
chunking; the decoder registry and ``decode --utility``."""

from __future__ import annotations

import numpy as np
import pytest

import fstchunk
from fstchunk import Lattice
from fstchunk.core.errors import InputError
from fstchunk.decoding.exact_boundaries import (decode_meu_exact, expected_exact_f,
                                                untyped_lattice)
from fstchunk.schemes import encodings as enc
from oracles import all_chunkings, random_scores

SCHEMES = ["IOB2", "IOB1", "IOE1", "IOBES", "BILOU"]


def spans(tags, scheme):
    return {(s, e) for _, s, e in enc.tags_to_chunks(list(tags), scheme)}


def f_of(h: set, y: set, b2: float) -> float:
    den = len(h) + b2 * len(y)
    return (1 + b2) * len(h & y) / den if den else 1.0


def lattice(rng, scheme, n, scale=1.5):
    tags = enc.scheme_tags(scheme, ("A", "B"))
    return Lattice.from_scores(tags, *random_scores(rng, len(tags), n, scale=scale),
                               scheme=scheme)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("scale", [1.5, 200.0])
def test_expected_exact_f_four_ways_equals_enumeration(scheme, scale):
    rng = np.random.default_rng(abs(hash((scheme, scale))) % 2**32)
    lat = lattice(rng, scheme, 4, scale)
    law = [(spans(y, scheme), np.exp(lp)) for y, lp in lat.enumerate()]
    machine = Lattice.from_fst(lat.fst, lat.tags, scheme)
    for fixed in (list(lat.map().tags),
                  enc.chunks_to_tags([("A", 0, 2), ("B", 2, 3)], 4, scheme),
                  ["O"] * 4):
        for beta in (1.0, 0.5):
            b2 = beta * beta
            h = spans(fixed, scheme)
            dec = sum(p * f_of(h, y, b2) for y, p in law)         # hypothesis fixed
            tra = sum(p * f_of(y, h, b2) for y, p in law)         # reference fixed
            for lt, method in ((lat, "fast"), (lat, "fst"), (machine, "fast")):
                assert expected_exact_f(lt, hypothesis=fixed, beta=beta,
                                        method=method).f == pytest.approx(dec, abs=1e-9)
                assert expected_exact_f(lt, reference=fixed, beta=beta,
                                        method=method).f == pytest.approx(tra, abs=1e-9)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_erased_lattice_holds_the_untyped_law(scheme):
    rng = np.random.default_rng(3)
    lat = lattice(rng, scheme, 4)
    want: dict = {}
    for y, lp in lat.enumerate():
        key = tuple(sorted(spans(y, scheme)))
        want[key] = want.get(key, 0.0) + np.exp(lp)
    got = {}
    for y, lp in untyped_lattice(lat).enumerate():
        got[tuple(sorted(spans(y, "IOBES")))] = np.exp(lp)
    assert set(got) == set(want)
    for k in want:
        assert got[k] == pytest.approx(want[k], abs=1e-12)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("beta", [1.0, 2.0])
def test_meu_for_the_exact_utility_is_the_best_valid_chunking(scheme, beta):
    rng = np.random.default_rng(abs(hash((scheme, beta, "meu"))) % 2**32)
    n, b2 = 4, beta * beta
    lat = lattice(rng, scheme, n, scale=1.0)
    law = [(spans(y, scheme), np.exp(lp)) for y, lp in lat.enumerate()]
    best = max(sum(p * f_of({(s, e) for _, s, e in c}, y, b2) for y, p in law)
               for c in all_chunkings(n, ("A",)))
    d = decode_meu_exact(lat, beta)
    assert enc.is_valid(d.tags, scheme)
    assert d.score == pytest.approx(best, abs=1e-9)
    assert d.gap < 1e-9
    assert sum(p * f_of(spans(d.tags, scheme), y, b2) for y, p in law) == \
        pytest.approx(best, abs=1e-9)
    dec = fstchunk.decoder("meu", beta=beta, utility="exact")
    assert dec.decode_all([lat, lat]) == [d, d]          # the registry, batched
    assert dec.tags([lat]) == [d.tags]


def test_the_decoder_and_the_command_line_take_the_utility(tmp_path, capsys):
    with pytest.raises(InputError, match="unknown utility 'f1'; use one of conlleval, "
                                         "exact"):
        fstchunk.decoder("meu", utility="f1")
    with pytest.raises(InputError, match="decoder map reads no utility"):
        fstchunk.decoder("map", utility="exact")
    assert fstchunk.decoder("map", utility="conlleval").name == "map"    # the default
    from fstchunk.cli import main
    from fstchunk.io.conll import read_conll
    from fstchunk.models import load_model
    from oracles import TINY_CONLL
    train = tmp_path / "train.txt"
    train.write_text(TINY_CONLL * 3, encoding="utf-8")
    model = tmp_path / "m.npz"
    assert main(["train", "--train", str(train), "--max-iter", "10", "--quiet",
                 "-o", str(model)]) == 0
    out = tmp_path / "out.txt"
    assert main(["decode", "--model", str(model), "--input", str(train), "--decoder", "meu",
                 "--utility", "exact", "-o", str(out)]) == 0
    sents = read_conll(str(train))
    lats = load_model(str(model)).lattices(sents)
    want = [decode_meu_exact(lat).tags for lat in lats]
    got = [s.column(-1) for s in read_conll(str(out))]
    assert got == [enc.convert(t, lats[0].scheme, "IOB2") for t in want]
    capsys.readouterr()
    assert main(["decode", "--model", str(model), "--input", str(train), "--utility",
                 "exact"]) == 2
    assert "decoder map reads no --utility" in capsys.readouterr().err


def test_the_segment_model_refuses_the_exact_utility():
    """Segments are decided for their own F; a tag-sequence utility is refused, not ignored."""
    dec = fstchunk.decoder("meu", utility="exact", structure="segments")
    with pytest.raises(InputError, match="utility='exact' decides tag sequences"):
        dec.choose_segments([0.0, 1.0], [0.2, 0.9], None)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_type_eraser_grammar_maps_each_valid_sequence_to_its_untyped_chunks(scheme):
    """``fstchunk grammar print type-eraser``: every valid sequence of up to 4 tokens
    goes to one output, the IOBES tags of its chunks without their types."""
    import itertools

    import pynini

    from fstchunk.grammars import registry
    u = registry.build("type-eraser", scheme=scheme, types=("A", "B"), arc_type="standard")
    tags = enc.scheme_tags(scheme, ("A", "B"))
    typed, plain = u.input_symbols(), u.output_symbols()
    for n in range(1, 5):
        for seq in itertools.product(tags, repeat=n):
            x = pynini.accep(" ".join(seq), token_type=typed)
            out = pynini.compose(x.set_output_symbols(typed), u).project("output")
            out.rmepsilon()
            paths = list(out.paths(output_token_type=plain).ostrings()) \
                if out.start() != -1 else []
            if not enc.is_valid(list(seq), scheme):
                assert paths == [], seq
                continue
            want = enc.chunks_to_tags([("", s, e) for _, s, e in
                                       enc.tags_to_chunks(list(seq), scheme)], n, "IOBES")
            assert paths == [" ".join(want)], seq
