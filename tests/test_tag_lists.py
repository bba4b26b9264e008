"""Tag lists meet schemes (issue 32).

1. A tag list that cannot express its scheme (``O, B-NP, I-NP`` in IOBES: without
   ``E-NP``/``S-NP`` the only valid sequence is all ``O``) is refused wherever a tag
   list meets a scheme — tag spaces, lattices from scores or machines, score files
   (written, read, and through ``fstchunk expected --scores``), model files — with
   one error naming exactly the missing tags.  Oracle: the definition, each used
   type times the scheme's prefixes, with types read by conlleval.pl's regex.
2. Chunk types may contain hyphens (``B-ORG-X`` is ``B`` + ``ORG-X``): tag spaces,
   lattices (marginals and expected F against brute force) and the CLI's
   train/decode/eval; the types that still cannot be used are refused at their
   ``file:line``.
(Machines over hyphenated types: test_grammars_*; torch: test_torch_checks.)
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.io.conll import Sentence
from fstchunk.core.errors import InputError, ModelFileError, SchemeError
from fstchunk.decoding.expected import expected_f
from fstchunk.io.gold import check_gold
from fstchunk.structures.lattice import Lattice
from fstchunk.models import load_model
from fstchunk.models.crf import CRF
from fstchunk.models.hmm import HMM
from fstchunk.models.scorefile import load_lattices, save_scores
from fstchunk.io.segments import read_conll_segments
from fstchunk.schemes.tagspace import TagSet, TagSpace, normalize_types
from oracles import (all_chunkings, brute_chunk_marginals, brute_expectations, brute_force,
                     prepared,
                     brute_token_marginals)
from test_model_validation import SENTS, edit

ANY_MACHINE = Lattice.from_scores(("O",), np.zeros((1, 1)), np.zeros((1, 1))).fst
HYPHENATED = ("ORG-X", "I-PER", "a-b-c", "B-NP")
TYPE_POOL = ("NP", "VP") + HYPHENATED
CONLLEVAL_TAG = re.compile(r"^([^-]*)-(.*)$")      # conlleval.pl's split of a tag


def conlleval_type(tag):
    m = CONLLEVAL_TAG.match(tag)
    return m.group(2) if m else ""


def want_missing(tags, scheme):
    """The definition: every prefix of the scheme for every type the list uses."""
    used = {conlleval_type(t) for t in tags if t != "O"}
    return {f"{p}-{t}" if t else p for t in used for p in enc.scheme_prefixes(scheme)} - set(tags)


def named_missing(message):
    m = re.search(r"cannot express \w+: missing (.*) \((?:every chunk type|untyped chunks) "
                  r"needs? all of", message)
    assert m, message
    return set(m.group(1).split(", "))


@st.composite
def tag_lists(draw):
    """(scheme, types, tags): 1-3 types (or untyped) and a random subset of the
    scheme's full tag set, in random order."""
    scheme = draw(st.sampled_from(enc.SCHEMES))
    types = draw(st.one_of(st.just(("",)),
                           st.lists(st.sampled_from(TYPE_POOL), min_size=1, max_size=3,
                                    unique=True).map(tuple)))
    full = enc.scheme_tags(scheme, types)
    tags = draw(st.lists(st.sampled_from(full), min_size=1, max_size=len(full), unique=True))
    return scheme, types, tuple(tags)


@settings(max_examples=150, deadline=None)
@given(case=tag_lists(), seed=st.integers(0, 2**16), scale=st.sampled_from([0.1, 1.0, 30.0]))
def test_a_tag_list_is_refused_iff_it_cannot_express_its_scheme(tmp_path_factory, case,
                                                                 seed, scale):
    scheme, types, tags = case
    missing = want_missing(tags, scheme)
    rng = np.random.default_rng(seed)
    L, n = len(tags), 3
    em, tr, s, e = (rng.normal(scale=scale, size=shape) for shape in ((n, L), (L, L), L, L))
    path = tmp_path_factory.mktemp("scores") / "partial.npz"
    builders = {
        "TagSpace": lambda: TagSpace.of(tags, scheme),
        "from_scores": lambda: Lattice.from_scores(tags, em, tr, s, e, scheme=scheme),
        "from_fst": lambda: Lattice.from_fst(ANY_MACHINE, tags, scheme),
        "save_scores": lambda: save_scores(path, tags, [em], tr, s, e, scheme=scheme),
    }
    if missing:
        for name, build in builders.items():
            with pytest.raises(SchemeError) as err:
                build()
            assert named_missing(str(err.value)) == missing, name
            assert f"cannot express {scheme}" in str(err.value)
        assert not path.exists()                       # refused before writing
        np.savez(path, tags=np.array(tags), scheme=np.array(scheme), transitions=tr,
                 emissions_0=em)
        with pytest.raises(ModelFileError) as err:
            load_lattices(path)
        assert str(err.value).startswith(f"{path}: ")
        assert named_missing(str(err.value)) == missing
        return
    lat = builders["from_scores"]()
    seqs, logz = brute_force(tags, scheme, types, n, em, tr, s, e)
    np.testing.assert_allclose(lat.marginals(), brute_token_marginals(seqs, tags, n),
                               atol=1e-9)
    assert lat.log_partition() == pytest.approx(logz, rel=1e-12, abs=1e-9)
    np.testing.assert_allclose(Lattice.from_fst(lat.fst, tags, scheme).marginals(),
                               lat.marginals(), atol=1e-9)
    builders["save_scores"]()
    again, = load_lattices(path)
    np.testing.assert_allclose(again.marginals(), lat.marginals(), atol=1e-13)


@pytest.mark.parametrize("scheme, tags, missing", [
    ("IOBES", "O B-NP I-NP B-VP I-VP", "E-NP, S-NP, E-VP, S-VP"),
    ("BILOU", "O B-NP I-NP L-NP", "U-NP"),
    ("IOBES3", "B I E S E2", "E3"),
    ("IOB2", "O B-ORG-X", "I-ORG-X"),
])
def test_the_message_names_scheme_and_missing_tags(scheme, tags, missing):
    tags = tuple(tags.split())
    with pytest.raises(SchemeError) as err:
        TagSpace.of(tags, scheme)
    prefixes = ", ".join(enc.scheme_prefixes(scheme))
    assert str(err.value) == (
        f"tags {', '.join(tags)} cannot express {scheme}: missing {missing} "
        f"({'untyped chunks need' if tags[0] == 'B' else 'every chunk type needs'} "
        f"all of {prefixes})")


@pytest.mark.parametrize("scheme", ["IOB2", "IOE1", "IOBES", "BILOU", "IOBES2"])
def test_lists_without_O_are_legitimate(scheme):
    """A tagger whose every token is in a chunk: the lattice is over chunk tags only."""
    types = ("NP", "ORG-X")
    tags = enc.scheme_tags(scheme, types)[1:]
    rng = np.random.default_rng(7)
    L, n = len(tags), 4
    em, tr, s, e = rng.normal(size=(n, L)), rng.normal(size=(L, L)), rng.normal(size=L), \
        rng.normal(size=L)
    lat = Lattice.from_scores(tags, em, tr, s, e, scheme=scheme)
    seqs, _ = brute_force(tags, scheme, types, n, em, tr, s, e)
    assert all("O" not in y for y, _, _ in seqs)
    np.testing.assert_allclose(lat.marginals(), brute_token_marginals(seqs, tags, n), atol=1e-10)


def test_mixing_untyped_and_typed_chunk_tags_is_refused():
    """It raised a bare ValueError from tuple.index (the untyped 'B' has no type)."""
    for tags in (("O", "B", "I", "B-NP", "I-NP"), ("B-NP", "I-NP", "B", "I")):
        with pytest.raises(SchemeError, match=r"mix untyped chunk tags \(B, I\) with typed"):
            TagSpace.of(tags, "IOB2")
    with pytest.raises(SchemeError, match="mix untyped"):
        TagSet.from_tags({"B", "B-NP", "O"}, "IOB2")


# ----------------------------------------------------------------- files and CLI
def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


CONLL = "The DT B-NP\ndog NN I-NP\nbarks VBZ B-VP\n\nA DT B-NP\ncat NN I-NP\n"


@pytest.mark.parametrize("scheme, tags", [
    ("IOBES", ("O", "B-NP", "I-NP", "B-VP", "I-VP")),
    ("IOE2", ("O", "E-NP", "I-NP", "I-VP")),
    ("BILOU", ("B-NP", "I-NP", "L-NP", "U-NP", "O", "B-VP", "I-VP", "L-VP")),
])
def test_expected_with_a_partial_score_file_is_refused(tmp_path, capsys, scheme, tags):
    data = tmp_path / "d.txt"
    data.write_text(CONLL)
    rng = np.random.default_rng(0)
    L = len(tags)
    path = tmp_path / "s.npz"
    np.savez(path, tags=np.array(tags), scheme=np.array(scheme),
             transitions=rng.normal(size=(L, L)), emissions_0=rng.normal(size=(3, L)),
             emissions_1=rng.normal(size=(2, L)))
    code, out, err = run(capsys, "expected", "--scores", path, "--scheme", "IOB2", data)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"{path}: " in err and f"cannot express {scheme}" in err
    assert named_missing(err) == want_missing(tags, scheme)


@pytest.mark.parametrize("kind, scheme, drop", [
    ("crf", "IOBES", ("E-NP", "S-NP")), ("crf", "BILOU", ("U-VP",)),
    ("hmm", "IOB2", ("I-VP",)), ("hmm", "IOBES2", ("B3-NP",))])
def test_a_model_file_with_a_partial_tag_list_is_refused(tmp_path, capsys, kind, scheme, drop):
    model = (prepared(CRF("tmpt1", scheme), SENTS)[0] if kind == "crf"
             else HMM(min_count=1, scheme=scheme).fit(SENTS))
    p = tmp_path / "m.npz"
    model.save(p)
    load_model(p)                                          # the complete list loads
    partial = [t for t in model.tags_ if t not in drop]
    edit(p, lambda m: m.update(tags=partial))              # the checksum catches it
    with pytest.raises(ModelFileError, match=r"m\.npz: .*'tags'"):
        load_model(p)
    edit(p, v1=True)                                       # files without the checksum
    with pytest.raises(ModelFileError) as err:
        load_model(p)
    assert str(err.value).startswith(f"{p}: field 'tags': ")
    assert named_missing(str(err.value)) == set(drop)
    data = tmp_path / "d.txt"
    data.write_text(CONLL)
    code, _, err = run(capsys, "decode", "--model", p, "--input", data)
    assert code == 2 and err.count("\n") == 1 and f"{p}: field 'tags'" in err


# ------------------------------------------------------------------ hyphenated types
@settings(max_examples=60, deadline=None)
@given(scheme=st.sampled_from(enc.SCHEMES), target=st.sampled_from(enc.SCHEMES),
       types=st.lists(st.sampled_from(HYPHENATED), min_size=1, max_size=3, unique=True),
       n=st.integers(1, 4), data=st.data())
def test_hyphenated_types_split_at_the_first_hyphen(scheme, target, types, n, data):
    chunks = list(data.draw(st.sampled_from(all_chunkings(n, tuple(types)))))
    tags = enc.chunks_to_tags(chunks, n, scheme)
    assert [conlleval_type(t) for t in tags] == [enc.split_tag(t)[1] for t in tags]
    assert enc.tags_to_chunks(tags, scheme) == sorted(chunks, key=lambda c: c[1])
    assert enc.convert(tags, scheme, target) == enc.chunks_to_tags(chunks, n, target)
    ts = TagSet(scheme, types)
    assert ts.types == tuple(sorted(types)) and ts.tags == enc.scheme_tags(scheme, ts.types)
    for i, t in enumerate(ts.tags):
        assert ts.type_index[i] == (-1 if t == "O" else ts.types.index(conlleval_type(t)))
        assert ts.symbols.find(ts.labels[i]) == t
    assert TagSpace.of(tuple(reversed(ts.tags)), scheme).types == ts.types


@settings(max_examples=40, deadline=None)
@given(scheme=st.sampled_from(enc.SCHEMES),
       types=st.lists(st.sampled_from(HYPHENATED), min_size=1, max_size=2, unique=True),
       n=st.integers(1, 4), seed=st.integers(0, 2**16),
       scale=st.sampled_from([0.1, 1.0, 20.0]))
def test_lattices_over_hyphenated_types_match_brute_force(scheme, types, n, seed, scale):
    types = tuple(sorted(types))
    tags = enc.scheme_tags(scheme, types)
    L = len(tags)
    rng = np.random.default_rng(seed)
    em, tr, s, e = (rng.normal(scale=scale, size=shape) for shape in ((n, L), (L, L), L, L))
    lat = Lattice.from_scores(tags, em, tr, s, e, scheme=scheme)
    seqs, _ = brute_force(tags, scheme, types, n, em, tr, s, e)
    np.testing.assert_allclose(lat.marginals(), brute_token_marginals(seqs, tags, n), atol=1e-9)
    np.testing.assert_allclose(lat.chunk_marginals(), brute_chunk_marginals(seqs, types, n),
                               atol=1e-9)
    ref = enc.chunks_to_tags([(types[-1], 0, n)], n, scheme)
    want = brute_expectations(seqs, frozenset(enc.tags_to_chunks(ref, scheme)), 1.0,
                              "training")
    for method in ("fast", "fst"):
        got = expected_f(lat, reference=ref, method=method)
        assert got.f == pytest.approx(want["f"], abs=1e-8), method


def test_normalize_types_takes_hyphens_and_refuses_what_cannot_be_a_type():
    assert normalize_types("ORG-X, I-PER,NP") == ("I-PER", "NP", "ORG-X")
    assert normalize_types(["a-b-c"]) == ("a-b-c",)
    for bad, what in [(["N P"], "white space"), (["A,B"], "','"), ([3], "not a string")]:
        with pytest.raises(InputError, match=what):
            normalize_types(bad)


@pytest.mark.parametrize("tag, problem", [
    ("B-", "its chunk type '' is empty"),
    ("I-A,B", "its chunk type 'A,B' contains ','"),
])
def test_unusable_types_are_refused_at_their_line(tmp_path, capsys, tag, problem):
    f = tmp_path / "bad.txt"
    f.write_text(f"a A B-NP\nb B I-NP\n\nc C O\nd D {tag}\n")
    sents = [Sentence([["c", "C", "O"], ["d", "D", tag]], [4, 5], str(f))]
    for mode in ("repair", "error"):
        with pytest.raises(SchemeError, match=re.escape(f"{f}:5: tag {tag!r}: {problem}")):
            check_gold(sents, "IOB2", on_invalid=mode)
    for scheme in ("IOB2", "IOBES"):               # the segment reader
        with pytest.raises(SchemeError, match=re.escape(f"{f}:5: tag {tag!r}: {problem}")):
            read_conll_segments(str(f), scheme)
    model = tmp_path / "m.npz"
    prepared(CRF("tmpt1"), SENTS)[0].save(model)
    for argv in (["train", "--train", f, "-o", tmp_path / "o.npz", "--quiet"],
                 ["train", "--train", f, "-o", tmp_path / "o.npz", "--quiet",
                  "--scheme", "IOBES", "--on-invalid", "error"],
                 ["expected", "--model", model, f],
                 ["grammar", "info", "validity", "--from-data", f]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.count("\n") == 1, (argv, err)
        assert f"{f}:5: tag {tag!r}: {problem}" in err, (argv, err)


TRAIN = """John NNP B-ORG-X
Smith NNP I-ORG-X
went VBD O
to TO O
Paris NNP B-I-PER

Mary NNP B-a-b-c
saw VBD O
Bob NNP B-I-PER
Jones NNP I-I-PER
"""


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "IOE1"])
def test_train_decode_eval_round_trip_with_hyphenated_types(tmp_path, capsys, scheme):
    data = tmp_path / "train.txt"
    data.write_text(TRAIN)
    assert [[(g.type, g.positions) for g in s.segments] for s in read_conll_segments(
        str(data))] == [[("ORG-X", (0, 1)), ("I-PER", (4,))],
                        [("a-b-c", (0,)), ("I-PER", (2, 3))]]
    model = tmp_path / "m.npz"
    code, _, err = run(capsys, "train", "--train", data, "-o", model, "--quiet",
                       "--features", "tmpt1", "--scheme", scheme, "--max-iter", "40")
    assert code == 0, err
    assert load_model(model).tags_ == enc.scheme_tags(scheme, ("I-PER", "ORG-X", "a-b-c"))
    out = tmp_path / "out.txt"
    for decoder in ("map", "meu"):
        code, _, err = run(capsys, "decode", "--model", model, "--input", data,
                           "--decoder", decoder, "-o", out)
        assert code == 0, err
        predicted = [ln.split()[-1] for ln in out.read_text().splitlines() if ln.strip()]
        gold = [ln.split()[-1] for ln in TRAIN.splitlines() if ln.strip()]
        assert predicted == gold           # the training data, memorised, types intact
        code, report, err = run(capsys, "eval", out)
        assert code == 0, err
        assert "FB1: 100.00" in report.splitlines()[1]
        for t in ("ORG-X", "I-PER", "a-b-c"):
            assert re.search(rf"^\s*{re.escape(t)}: precision: 100.00%", report, re.M), t


def test_grammar_types_with_hyphens_and_tags_that_must_express_the_scheme(capsys):
    code, out, err = run(capsys, "grammar", "info", "validity", "--types", "ORG-X,I-PER",
                         "--scheme", "IOBES")
    assert code == 0, err
    assert "tag set: I-PER, ORG-X" in out
    assert err == ("fstchunk grammar: warning: --types I-PER: read as chunk types (tags "
                   "B-I-PER, ...); for a tag list use --tags\n")
    code, out, err = run(capsys, "grammar", "info", "validity", "--tags",
                         "O,B-ORG-X,I-ORG-X,E-ORG-X,S-ORG-X", "--scheme", "IOBES")
    assert code == 0 and "tag set: ORG-X" in out, err
    code, _, err = run(capsys, "grammar", "info", "validity", "--tags", "O,B-NP,I-NP",
                       "--scheme", "IOBES")
    assert code == 2 and err.count("\n") == 1
    assert "--tags: tags O, B-NP, I-NP cannot express IOBES: missing E-NP, S-NP" in err
