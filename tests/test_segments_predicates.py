"""The segment model's predicate sets (issue 37): Sha & Pereira's (2003) window predicates
(``sp03``) against a hand-written list, the union with the older set, the model
hyper-parameter, its model files and ``segment train --predicates``."""

from __future__ import annotations

import os

import numpy as np
import pytest

from fstchunk.cli import main
from fstchunk.core.errors import InputError, ModelFileError
from fstchunk.models import load_model
from fstchunk.models.io import load_model_file, save_model
from fstchunk.models.segment.features import (FEATURES, NEXT, PREDICATES, START, _AT_I, _AT_J,
                                              _mix, at_columns, crc, feature_version,
                                              predicates_of, sentence_features, token_ids)
from fstchunk.models.segment.model import SegmentModel
from fstchunk.io.segments import Segment, SegSentence

WORDS, TAGS = ["The", "cat", "sat"], ["DT", "NN", "VBD"]

#: Sha & Pereira's predicates at "cat" (member index 2), written out by hand
AT_CAT = ["w-2=<s>", "w-1=The", "w+0=cat", "w+1=sat", "w+2=</s>", "w-1w0=The|cat",
          "w0w+1=cat|sat"]
AT_CAT_POS = ["t-2=<s>", "t-1=DT", "t+0=NN", "t+1=VBD", "t+2=</s>", "t-2t-1=<s>|DT",
              "t-1t+0=DT|NN", "t+0t+1=NN|VBD", "t+1t+2=VBD|</s>", "t-2t-1t+0=<s>|DT|NN",
              "t-1t+0t+1=DT|NN|VBD", "t+0t+1t+2=NN|VBD|</s>"]
#: ... and at "The" (member index 1: two markers before it)
AT_THE = ["w-2=<s>", "w-1=<s>", "w+0=The", "w+1=cat", "w+2=sat", "w-1w0=<s>|The",
          "w0w+1=The|cat"]


@pytest.mark.parametrize("pos", [TAGS, None])
def test_sp03_predicates_of_a_hand_made_sentence(pos):
    ids = token_ids(WORDS, pos, "sp03")
    base = token_ids(WORDS, pos, "mcp05")
    np.testing.assert_array_equal(ids[:, :base.shape[1]], base)   # the older ids first
    window = ids[:, base.shape[1]:]
    want_cat = AT_CAT + (AT_CAT_POS if pos else [])
    assert window[2].tolist() == [crc(s) for s in want_cat]
    assert window[1].tolist()[:7] == [crc(s) for s in AT_THE]
    assert window.shape == (len(WORDS) + 2, len(want_cat))
    assert at_columns("sp03", pos is not None).tolist() == \
        list(range(base.shape[1], ids.shape[1]))


def _row(sf, j, i) -> set[int]:
    F = sf.F
    a = sf.index[j, i]
    return set(F.indices[F.indptr[a]:F.indptr[a + 1]].tolist())


@pytest.mark.parametrize("pos", [TAGS, None])
def test_sp03_step_features_hold_the_window_conjoined_with_the_state(pos):
    """g(1, 2) (The → cat, state next) and g(0, 2) (start at cat): the sp03 row is the
    mcp05 row less its own "at" predicates plus the window ones at i and j, each
    conjoined with the state; the union has both."""
    D = 2 ** 30                                     # no collisions among these few
    sp03 = sentence_features(WORDS, pos, D, 0, "sp03")
    mcp = sentence_features(WORDS, pos, D, 0, "mcp05")
    both = sentence_features(WORDS, pos, D, 0, "mcp05+sp03")
    want_cat = AT_CAT + (AT_CAT_POS if pos else [])
    base = token_ids(WORDS, pos).shape[1]
    for (j, i), state in (((1, 2), NEXT), ((0, 2), START)):
        mcp_at = {int(_mix(code, np.uint64(state), np.uint64(c), x) % np.uint64(D))
                  for code, ids in ((_AT_I, mcp.ids[i]), (_AT_J, mcp.ids[j]))
                  for c, x in enumerate(ids)}
        window_i = {int(_mix(_AT_I, np.uint64(state), np.uint64(base + c), np.uint64(crc(s)))
                        % np.uint64(D)) for c, s in enumerate(want_cat)}
        assert window_i <= _row(sp03, j, i)
        assert _row(sp03, j, i) - window_i - _row(mcp, j, i) == \
            {int(_mix(_AT_J, np.uint64(state), np.uint64(base + c), x) % np.uint64(D))
             for c, x in enumerate(sp03.ids[j, base:])}
        assert _row(sp03, j, i) == (_row(mcp, j, i) - mcp_at) | (_row(sp03, j, i) - _row(mcp, j, i))
        assert _row(both, j, i) == _row(mcp, j, i) | _row(sp03, j, i)


@pytest.mark.parametrize("predicates", PREDICATES)
@pytest.mark.parametrize("pos", [True, False])
def test_segment_features_equal_the_sum_of_step_rows(predicates, pos):
    """f(x, y) through :func:`segment_entries` (steps max_gap forbids computed on the
    fly) scores as the sum of the step scores, for every predicate set."""
    rng = np.random.default_rng(3)
    m = SegmentModel(D=2 ** 12, max_gap=1, predicates=predicates)._fitted(["A", "B"], pos=pos)
    m.W_ = rng.normal(size=m.W_.shape)
    s = SegSentence("w x y z v".split(), [], pos=list("NVNDN") if pos else None)
    a = m.arc_scores(s)
    for seg in (Segment("A", (0, 1)), Segment("B", (1, 3)), Segment("A", (0, 3))):
        t = m.type_index_[seg.type]
        score = float((m.segment_features(s, seg) @ m.W_[:, t])[0])
        idx = [0, *(p + 1 for p in seg.positions), len(s) + 1]
        steps = [a[t, j, i] for j, i in zip(idx, idx[1:])]
        if np.all(np.isfinite(steps)):
            assert score == pytest.approx(sum(steps), rel=1e-12, abs=1e-12)
        else:                                       # (0, 3) skips 2 > max_gap
            g = sentence_features(s.tokens, s.pos, m.D, None, predicates)
            want = sum(float((g.F[g.index[j, i]] @ m.W_[:, t])[0]) for j, i in zip(idx, idx[1:]))
            assert score == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_feature_versions_name_the_sets():
    assert feature_version("mcp05") == FEATURES == "mcp05-hashed-v1"   # older files' name
    assert [predicates_of(feature_version(p)) for p in PREDICATES] == list(PREDICATES)
    assert predicates_of("other-v9") is None
    with pytest.raises(InputError, match="unknown predicate set 'crf'"):
        SegmentModel(predicates="crf").fit(TRAIN)
    with pytest.raises(InputError, match="unknown predicate set"):
        token_ids(WORDS, None, "sp")


TRAIN = [SegSentence("the cat sat on the mat".split(), [Segment("NP", (0, 1)),
                                                         Segment("NP", (4, 5))],
                     pos="DT NN VBD IN DT NN".split()),
         SegSentence("a dog ran".split(), [Segment("NP", (0, 1))], pos="DT NN VBD".split())]


@pytest.mark.parametrize("predicates", PREDICATES)
def test_model_file_records_the_predicate_set(tmp_path, predicates):
    m = SegmentModel(D=2 ** 12, predicates=predicates, max_iter=2).fit(TRAIN)
    m.save(tmp_path / "m.npz")
    meta, _ = load_model_file(tmp_path / "m.npz", "segment")
    assert meta["features"] == feature_version(predicates)
    back = load_model(tmp_path / "m.npz")
    assert back.predicates == predicates
    np.testing.assert_array_equal(back.arc_scores(TRAIN[0]), m.arc_scores(TRAIN[0]))
    assert back.decode(TRAIN) == m.decode(TRAIN)


def test_a_file_of_the_older_version_loads_as_mcp05_and_a_foreign_one_is_named(tmp_path):
    m = SegmentModel(D=2 ** 12, predicates="mcp05", max_iter=2).fit(TRAIN)
    m.save(tmp_path / "m.npz")
    meta, arrays = load_model_file(tmp_path / "m.npz", "segment")
    keep = {k: v for k, v in meta.items() if k not in ("format", "version", "kind", "checksum")}
    assert keep["features"] == "mcp05-hashed-v1"    # exactly what files before issue 37 hold
    back = load_model(tmp_path / "m.npz")
    assert back.predicates == "mcp05" and back.decode(TRAIN) == m.decode(TRAIN)
    save_model(tmp_path / "bad.npz", "segment", arrays, {**keep, "features": "sp03-hashed-v9"})
    with pytest.raises(ModelFileError, match="field 'features'.*sp03-hashed-v1"):
        load_model(tmp_path / "bad.npz")


def _write_conll(path, sents) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for s in sents:
            tags = ["O"] * len(s)
            for g in s.segments:
                tags[g.positions[0]] = "B-NP"
                for p in g.positions[1:]:
                    tags[p] = "I-NP"
            fh.writelines(f"{w} {t} {y}\n" for w, t, y in zip(s.tokens, s.pos, tags))
            fh.write("\n")


@pytest.mark.parametrize("option, want", [([], SegmentModel().predicates),
                                          (["--predicates", "sp03"], "sp03"),
                                          (["--predicates", "mcp05+sp03"], "mcp05+sp03")])
def test_cli_train_predicates(tmp_path, capsys, option, want):
    _write_conll(tmp_path / "train.txt", TRAIN)
    out = str(tmp_path / "m.npz")
    assert main(["segment", "train", "--train", str(tmp_path / "train.txt"), "--epochs", "2",
                 "--quiet", "--hash-bits", "12", "-o", out, *option]) == 0
    assert load_model(out).predicates == want
    assert main(["segment", "decode", "--model", out, "--input",
                 str(tmp_path / "train.txt"), "-o", str(tmp_path / "p.txt")]) == 0
    assert os.path.getsize(tmp_path / "p.txt") > 0


def test_cli_unknown_predicate_set_is_one_error(tmp_path, capsys):
    _write_conll(tmp_path / "train.txt", TRAIN)
    with pytest.raises(SystemExit) as e:
        main(["segment", "train", "--train", str(tmp_path / "train.txt"), "--predicates",
              "crf", "-o", str(tmp_path / "m.npz")])
    assert e.value.code == 2
    assert "--predicates: invalid choice: 'crf'" in capsys.readouterr().err
