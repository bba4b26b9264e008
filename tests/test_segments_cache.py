"""The segment learner's cheaper epoch (issue 37): each sentence's step features kept
across epochs (:mod:`fstchunk.models.segment.cache`) give bit for bit the weights,
history and dev F of features computed afresh on every visit, over the predicate sets,
with and without POS tags, restrictions, a max gap that forbids a gold step, and a
byte budget that keeps only some sentences; packing keeps every entry (counts above
1 included); the learner's updates run under one BLAS thread and give the caller's
setting back."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import fstchunk.models.segment.cache as cache_mod
import fstchunk.models.segment.train as train_mod
from fstchunk.io.segments import Segment, SegSentence
from fstchunk.models.segment import SegmentModel
from fstchunk.models.segment.cache import FeatureCache, Packed
from fstchunk.models.segment.features import PREDICATES, sentence_features, step_index


def sent(text: str, segs=(), pos: bool = False) -> SegSentence:
    words = text.split()
    tags = [("NN" if w[0].isupper() else "DT") for w in words] if pos else None
    return SegSentence(words, [Segment(t, tuple(p)) for t, p in segs], pos=tags)


def toy(pos: bool) -> list[SegSentence]:
    """Overlapping, nested and non-contiguous segments of two types; repeated words
    between members give feature counts above 1."""
    return [
        sent("Bill and Hilary Clinton traveled", [("PER", (0, 3)), ("PER", (2, 3))], pos),
        sent("Bill Clinton met Gates", [("PER", (0, 1)), ("PER", (3,))], pos),
        sent("P450 18 / 19 hydroxylase", [("ENZ", (0, 1, 4)), ("ENZ", (0, 3, 4))], pos),
        sent("the P450 11 hydroxylase was", [("ENZ", (1, 2, 3))], pos),
        sent("alpha the the the beta genes", [("DNA", (0, 4, 5)), ("DNA", (4, 5))], pos),
        sent("Hilary and Bill Gates spoke", [("PER", (0, 3)), ("PER", (2, 3))], pos),
    ]


def counting(monkeypatch) -> dict:
    """Count the cache's hits and misses over every FeatureCache made."""
    seen = {"hits": 0, "misses": 0}
    real = FeatureCache.features

    def features(self, sentence, compute):
        hits = self.hits
        out = real(self, sentence, compute)
        seen["hits" if self.hits > hits else "misses"] += 1
        return out
    monkeypatch.setattr(FeatureCache, "features", features)
    return seen


def same(a: SegmentModel, b: SegmentModel) -> None:
    np.testing.assert_array_equal(a.W_, b.W_)
    np.testing.assert_array_equal(a.other_weights_, b.other_weights_)
    assert a.settings_["history"] == b.settings_["history"]
    assert a.settings_["dev_f"] == b.settings_["dev_f"]


@pytest.mark.parametrize("predicates", PREDICATES)
@pytest.mark.parametrize("pos", [False, True])
@pytest.mark.parametrize("restrictions,max_gap", [(None, "auto"), ("no-overlap", "auto"),
                                                  (None, 1), ("contiguous", 0)])
def test_kept_features_train_bit_identical_weights(monkeypatch, predicates, pos,
                                                   restrictions, max_gap):
    data = toy(pos)
    hyper = dict(D=2 ** 12, predicates=predicates, restrictions=restrictions,
                 max_gap=max_gap, seed=3)
    seen = counting(monkeypatch)
    kept = SegmentModel(**hyper, max_iter=3).fit(data, dev=data[:3])
    # every visit after the first epoch, and every dev sentence after its first decoding
    assert seen["hits"] > 0 and seen["misses"] == len(data)
    monkeypatch.setattr(cache_mod, "BUDGET_MB", 0)
    seen.update(hits=0, misses=0)
    fresh = SegmentModel(**hyper, max_iter=3).fit(data, dev=data[:3])
    assert seen["hits"] == 0 and seen["misses"] > 3 * len(data)
    same(kept, fresh)
    assert kept._cache is None and fresh._cache is None       # dropped after fit


def test_a_budget_that_keeps_some_sentences_gives_the_same_weights(monkeypatch):
    data = toy(True) + toy(True)                    # distinct objects: 12 sentences
    full = SegmentModel(D=2 ** 12, seed=1, max_iter=2).fit(data, dev=data[:2])
    one = Packed.of(sentence_features(data[0].tokens, data[0].pos, 2 ** 12, 2,
                                      "mcp05+sp03")).nbytes
    monkeypatch.setattr(cache_mod, "BUDGET_MB", 2.5 * one / 2 ** 20)  # about three kept
    seen = counting(monkeypatch)
    part = SegmentModel(D=2 ** 12, seed=1, max_iter=2).fit(data, dev=data[:2])
    assert seen["hits"] > 0 and seen["misses"] > len(data)   # some kept, some not
    same(full, part)


@pytest.mark.parametrize("predicates", PREDICATES)
@pytest.mark.parametrize("pos", [False, True])
@pytest.mark.parametrize("max_gap", [None, 0, 2])
def test_packing_keeps_every_entry(predicates, pos, max_gap):
    s = sent("alpha the the the the beta of the the gene", pos=pos)
    sf = sentence_features(s.tokens, s.pos, 2 ** 10, max_gap, predicates)
    assert sf.F.data.max() > 1 or max_gap == 0      # counts above one (words between)
    back = Packed.of(sf).unpack(max_gap)
    for name in ("ids", "J", "I", "index"):
        np.testing.assert_array_equal(getattr(back, name), getattr(sf, name))
    assert back.F.dtype == sf.F.dtype and back.F.shape == sf.F.shape
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(back.F, name), getattr(sf.F, name))
    np.testing.assert_array_equal(back.at, sf.at)
    assert back.n == sf.n and back.pos == sf.pos


def test_step_index_is_shared_and_read_only():
    J, I, index = step_index(6, 2)
    assert step_index(6, 2)[2] is index
    with pytest.raises(ValueError):
        index[0, 1] = 5
    assert index[J, I].tolist() == list(range(len(J)))
    assert (index >= 0).sum() == len(J)


def blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_the_learner_updates_with_one_blas_thread(monkeypatch):
    seen = []
    real = train_mod.hildreth

    def spy(*a, **k):
        seen.append(blas_threads())
        return real(*a, **k)
    monkeypatch.setattr(train_mod, "hildreth", spy)
    with threadpool_limits(limits=3, user_api="blas"):
        assert set(blas_threads()) == {3}
        SegmentModel(D=2 ** 10, max_iter=1).fit(toy(False))
        assert set(blas_threads()) == {3}           # the caller's setting is back
    assert seen and all(set(x) == {1} for x in seen)
