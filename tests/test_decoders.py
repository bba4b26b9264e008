"""The decoder registry: one vocabulary, settings checked where the decoder is made,
refusals that name what and where, every decoder over a mixed list of lattices (dense
chains batched, machine lattices one at a time) equal to one lattice at a time, a
sentence's error its own, and a new decoder as one class."""

import numpy as np
import pytest

import fstchunk
from fstchunk.decoding import decoders as D
from fstchunk.core.errors import InputError, SchemeError
from fstchunk.structures.lattice import Decoding, Lattice
from fstchunk.schemes.tagspace import TagSet
from oracles import random_scores, stable_seed


def mixed_lattices(seed=0, scheme="IOB2"):
    """Dense chains of two models and a machine lattice, interleaved."""
    rng = np.random.default_rng(seed)
    tags = TagSet(scheme, ("A", "B")).tags
    L = len(tags)
    a, b = (random_scores(rng, L, 1, 1.5)[1:] for _ in range(2))
    out = []
    for k, n in enumerate([3, 7, 1, 12, 5, 9, 2]):
        tr, s, e = a if k % 2 else b
        out.append(Lattice.from_scores(tags, rng.normal(size=(n, L)) * 1.5, tr, s, e,
                                       scheme=scheme))
    out.insert(3, Lattice.from_fst(out[1].fst, tags, scheme))
    return out


def test_the_registry_names_every_decoder_once_by_structure():
    assert D.names() == ("map", "posterior", "meu", "meu-kbest", "meu-corpus")
    assert D.names("segments") == ("meu", "threshold")
    for name, cls in D.REGISTRY.items():
        assert cls.name == name and cls.scope in ("sentence", "corpus")
        assert cls.structures <= {"chain", "segments"}
    assert not D.MAP.needs_probabilities and D.MEU.needs_probabilities
    assert not D.Posterior.needs_chunks and D.MEU.needs_chunks
    assert D.MEUCorpus.scope == "corpus"


def test_settings_are_checked_when_the_decoder_is_made():
    assert D.decoder("meu", beta=0.5) == D.MEU(beta=0.5) != D.MEU(beta=2.0)
    assert hash(D.decoder("meu-kbest", k=5)) == hash(D.MEUKBest(k=5))
    assert repr(D.decoder("meu", beta=2)) == "MEU(beta=2.0, memory_budget=None, utility='conlleval')"
    for bad, match in ((dict(beta=-1.0), "beta"), (dict(beta=float("nan")), "beta"),
                       (dict(memory_budget=0), "memory_budget"),
                       (dict(memory_budget=True), "memory_budget")):
        with pytest.raises(InputError, match=match):
            D.decoder("meu", **bad)
    with pytest.raises(InputError, match="k must be a positive integer"):
        D.decoder("meu-kbest", k=0)
    with pytest.raises(InputError, match=r"unknown decoder 'viterbi'.*map, posterior"):
        D.decoder("viterbi")


def test_a_setting_the_decoder_does_not_read_is_refused_by_name():
    with pytest.raises(InputError, match="decoder map reads no beta"):
        D.decoder("map", beta=2.0)
    with pytest.raises(InputError, match="decoder posterior reads no --k"):
        D.decoder("posterior", k=5, as_options=True)
    assert D.decoder("map", beta=1.0, k=20) == D.MAP()          # the defaults: nothing said
    with pytest.raises(InputError, match="to the decoder object"):
        D.decoder(D.MEU(beta=2.0), beta=0.5)
    with pytest.raises(InputError, match="does not decode segments"):
        D.decoder("map", structure="segments")
    with pytest.raises(InputError, match="does not decode tag sequences"):
        D.decoder("threshold")


@pytest.mark.parametrize("name", D.names())
def test_every_decoder_on_a_mixed_list_equals_one_lattice_at_a_time(name):
    lats = mixed_lattices(stable_seed(name))
    kw = {"k": 4} if name == "meu-kbest" else {}
    dec = D.decoder(name, **kw)
    got = dec.decode_all(lats)
    assert all(isinstance(d, Decoding) for d in got)
    assert dec.tags(lats) == [d.tags for d in got]
    if dec.scope == "corpus":
        return
    for lat, d in zip(lats, got):
        one = dec.decode(lat)
        assert one.tags == d.tags
        assert one.score == pytest.approx(d.score, rel=1e-9, abs=1e-9)


def test_a_sentence_error_is_its_own():
    lats = mixed_lattices(3)
    tags = lats[0].tags
    L = len(tags)
    # a sentence whose mask leaves no valid sequence, amid good ones of the same model
    bad = lats[1].constrained(np.zeros((lats[1].n, L), bool))
    lats.insert(2, bad)
    for name in ("map", "posterior", "meu"):
        got = D.decoder(name).decode_all(lats, errors="return")
        assert isinstance(got[2], InputError) and "no weight" in str(got[2])
        assert [d.tags for i, d in enumerate(got) if i != 2] == \
            [D.decoder(name).decode(lat).tags for i, lat in enumerate(lats) if i != 2]
        with pytest.raises(InputError, match="no weight"):
            D.decoder(name).decode_all(lats)


def test_unconstrained_chains_take_map_and_posterior_only():
    rng = np.random.default_rng(1)
    lat = Lattice.from_scores(("N", "V", "D"), rng.normal(size=(4, 3)), rng.normal(size=(3, 3)),
                              scheme=None)
    assert len(D.decoder("map").decode(lat).tags) == 4
    assert len(D.decoder("posterior").decode(lat).tags) == 4
    with pytest.raises(SchemeError, match="scheme=None"):
        D.decoder("meu").decode(lat)


def test_a_new_decoder_is_one_class():
    class LastTag(D.Decoder):
        """Every token takes the MAP's first tag's neighbour... here: all O."""
        name = "all-o-test"
        needs_probabilities = False
        needs_chunks = False
        returns = "0"

        def decode_one(self, lattice):
            return Decoding(["O"] * lattice.n, 0.0)
    try:
        assert "all-o-test" in D.names()
        lats = mixed_lattices(5)
        assert fstchunk.decoders.decode_lattices(lats, "all-o-test") == \
            [["O"] * lat.n for lat in lats]
        from fstchunk.models.hmm import HMM
        from oracles import TINY_CONLL
        from fstchunk.io.conll import read_conll
        import io
        sents = read_conll(io.StringIO(TINY_CONLL))
        hmm = HMM().fit(sents)
        assert fstchunk.decode_sentences(hmm, sents, "all-o-test") == \
            [["O"] * len(s) for s in sents]
    finally:
        D.REGISTRY.pop("all-o-test")


def test_the_command_line_refuses_an_option_the_decoder_does_not_read(capsys, tmp_path):
    from fstchunk.cli import main
    from fstchunk.io.conll import read_conll
    from fstchunk.models.hmm import HMM
    from oracles import TINY_CONLL
    import io
    inp = tmp_path / "in.txt"
    inp.write_text(TINY_CONLL)
    model = tmp_path / "hmm.npz"
    HMM().fit(read_conll(io.StringIO(TINY_CONLL))).save(model)
    assert main(["decode", "--model", str(model), "--input", str(inp), "--decoder", "map",
                 "--beta", "2"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "fstchunk decode: error: decoder map reads no --beta (its settings: none)"
