"""fstchunk.torch input checks (issue 32): malformed masks say which way they are
malformed; tag lists that cannot express their scheme are refused naming the
missing tags; hyphenated chunk types work.  Oracles: a mask's kind from a regular
expression over its 0/1 string; the definition of the missing tags; brute-force
marginals over every valid sequence (tests/oracles.py)."""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

torch = pytest.importorskip("torch")

from fstchunk.schemes import encodings as enc  # noqa: E402
from fstchunk.core.errors import InputError  # noqa: E402
from fstchunk.torch import ChunkCRF, CRFLayer  # noqa: E402
from oracles import brute_chunk_marginals, brute_force, brute_token_marginals  # noqa: E402

F64 = torch.float64
LEFT = ("fstchunk.torch expects left-aligned masks: True for the first n tokens, "
        "then False")


def kind_of(row):
    """The kind of a mask row, from its 0/1 string (independent of checks.py)."""
    s = "".join("1" if v else "0" for v in row)
    if re.fullmatch(r"1+0*", s):
        return "ok"
    if re.fullmatch(r"0+", s):
        return "empty"
    if re.fullmatch(r"0+1+", s):
        return "right-aligned"
    if re.fullmatch(r"0+1+0+", s):
        return "both sides"
    return "hole"


def expected_message(b, row):
    s = "".join("1" if v else "0" for v in row)
    first, last = s.index("1") if "1" in s else -1, s.rindex("1") if "1" in s else -1
    kind = kind_of(row)
    if kind == "empty":
        return f"mask of sentence {b} has no token (all False; every sentence needs at least one)"
    if kind == "right-aligned":
        return (f"mask of sentence {b} is right-aligned (padding on the left: positions "
                f"0..{first - 1} False, {first}..{last} True)")
    if kind == "both sides":
        return (f"mask of sentence {b} has padding on both sides (positions 0..{first - 1} "
                f"and {last + 1}..{len(s) - 1} False)")
    hole = s.index("0", first)
    lead = f"starts with padding (positions 0..{first - 1} False) and " if first else ""
    return (f"mask of sentence {b} {lead}has a hole: position {hole} is False between "
            f"True positions {first} and {last}")


@settings(max_examples=200, deadline=None)
@given(rows=st.integers(2, 6).flatmap(lambda n: st.lists(
    st.lists(st.booleans(), min_size=n, max_size=n), min_size=1, max_size=4)))
def test_each_malformed_mask_is_named_by_its_kind(rows):
    tags = enc.scheme_tags("IOB2", ("A",))
    crf = ChunkCRF(tags, "IOB2")
    B, n, L = len(rows), len(rows[0]), len(tags)
    mask = torch.tensor(rows)
    em, tr = torch.zeros(B, n, L, dtype=F64), torch.zeros(L, L, dtype=F64)
    bad = [b for b, r in enumerate(rows) if kind_of(r) != "ok"]
    if not bad:
        lz = crf.log_partition(em, tr, mask)
        assert lz.shape == (B,)
        return
    with pytest.raises(InputError) as err:
        crf.log_partition(em, tr, mask)
    assert str(err.value) == f"{expected_message(bad[0], rows[bad[0]])}; {LEFT}"


@pytest.mark.parametrize("row, says", [
    ([0, 0, 1, 1, 1], "is right-aligned (padding on the left: positions 0..1 False, 2..4 True)"),
    ([1, 0, 1, 1, 0], "has a hole: position 1 is False between True positions 0 and 3"),
    ([0, 1, 0, 1, 1], "starts with padding (positions 0..0 False) and has a hole: position 2 "
                      "is False between True positions 1 and 4"),
    ([0, 1, 1, 0, 0], "has padding on both sides (positions 0..0 and 3..4 False)"),
    ([0, 0, 0, 0, 0], "has no token (all False; every sentence needs at least one)"),
])
def test_the_issue_masks(row, says):
    """Sentence 2 of a batch, as in the issue: through the module layer too."""
    tags = enc.scheme_tags("IOBES", ("PER",))
    L, n = len(tags), len(row)
    mask = torch.tensor([[1] * n, [1] * 3 + [0] * (n - 3), row]).bool()
    em = torch.zeros(3, n, L, dtype=F64)
    layer = CRFLayer(tags, "IOBES").double()
    for call in (lambda: ChunkCRF(tags, "IOBES").marginals(em, layer.transitions, mask),
                 lambda: layer.decode(em, mask)):
        with pytest.raises(InputError, match=re.escape(f"mask of sentence 2 {says}; {LEFT}")):
            call()


@pytest.mark.parametrize("scheme, tags, missing", [
    ("IOBES", ("O", "B-NP", "I-NP", "B-VP", "I-VP"), "E-NP, S-NP, E-VP, S-VP"),
    ("BILOU", ("B-ORG-X", "I-ORG-X", "L-ORG-X"), "U-ORG-X"),
    ("IOB2", ("O", "B-NP", "I-NP", "B-VP"), "I-VP"),
    ("IOBES2", ("O", "B", "I", "E", "S", "B2"), "B3"),
])
def test_crf_refuses_tags_that_cannot_express_the_scheme(scheme, tags, missing):
    for make in (lambda: ChunkCRF(tags, scheme), lambda: CRFLayer(tags, scheme)):
        with pytest.raises(InputError, match=re.escape(
                f"cannot express {scheme}: missing {missing} (")):
            make()


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "BILOU", "IOE1", "IOBES3"])
@pytest.mark.parametrize("types", [("ORG-X", "I-PER"), ("a-b-c",)])
@pytest.mark.parametrize("with_o", [True, False])
def test_hyphenated_types_and_lists_without_O_match_brute_force(scheme, types, with_o):
    tags = enc.scheme_tags(scheme, types)[0 if with_o else 1:]
    crf = ChunkCRF(tags, scheme)
    assert crf.types == types                  # order of first appearance in tags
    rng = np.random.default_rng(len(tags))
    lengths, L = [4, 2, 3], len(tags)
    n = max(lengths)
    em = torch.tensor(rng.normal(size=(3, n, L)), dtype=F64)
    tr, st_, en = (torch.tensor(rng.normal(size=s), dtype=F64) for s in ((L, L), L, L))
    mask = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]
    mg = crf.marginals(em, tr, mask, st_, en)
    cm = crf.chunk_marginals(em, tr, mask, st_, en)
    for b, k in enumerate(lengths):
        seqs, logz = brute_force(tags, scheme, types, k, em[b, :k].numpy(), tr.numpy(),
                                 st_.numpy(), en.numpy())
        np.testing.assert_allclose(mg[b, :k].numpy(), brute_token_marginals(seqs, tags, k),
                                   atol=1e-10)
        np.testing.assert_allclose(cm[b, :k, :k + 1].numpy(),
                                   brute_chunk_marginals(seqs, types, k).transpose(1, 2, 0),
                                   atol=1e-10)
    assert crf.log_partition(em, tr, mask, st_, en)[0].item() == pytest.approx(
        brute_force(tags, scheme, types, 4, em[0].numpy(), tr.numpy(), st_.numpy(),
                    en.numpy())[1], abs=1e-10)
