"""The segment model's runs that tests/test_estimator_contract_segment.py replays against
what the code before the estimator contract gave (tests/data/v2/make_segment_contract.py
wrote it): the data, the hyper-parameters, the run options and the probe sentences.

Plain data and the readers only (no API of the model), so the generator ran on the old
code and the test runs on the new.
"""

import json
import os
import tempfile

from fstchunk.io.conll import write_conll
from fstchunk.io.segments import SegSentence, Segment, read_conll_segments


def sent(text: str, segs=(), pos: str | None = None) -> SegSentence:
    return SegSentence(text.split(), [Segment(t, tuple(p)) for t, p in segs],
                       pos=pos.split() if pos else None)


# overlapping and non-contiguous segments of three types
TOY = [
    sent("Bill and Hilary Clinton traveled", [("PER", (0, 3)), ("PER", (2, 3))]),
    sent("Bill Clinton met Gates", [("PER", (0, 1)), ("PER", (3,))]),
    sent("P450 18 / 19 hydroxylase", [("ENZ", (0, 1, 4)), ("ENZ", (0, 3, 4))]),
    sent("the P450 11 hydroxylase was", [("ENZ", (1, 2, 3))]),
    sent("Hilary and Bill Gates spoke", [("PER", (0, 3)), ("PER", (2, 3))]),
    sent("alpha- and beta-globin genes", [("DNA", (0, 2)), ("DNA", (2,))]),
]

#: the probe sentences every run decodes, calibrates on and tunes on
PROBE = TOY + [
    sent("Gates and Clinton traveled", [("PER", (0,)), ("PER", (2,))]),
    sent("the P450 19 hydroxylase", [("ENZ", (1, 2, 3))]),
]

#: the runs' names (the first few are referred to by the test)
CONFIGS = ("defaults", "no-average", "select-dev", "conll-pos")


def conll_sentences(v2: str) -> list[SegSentence]:
    """tests/data/v2/expected.json's training sentences (word, POS, chunk tag) as
    segment sentences (their chunks), through a CoNLL file written beside it."""
    with open(os.path.join(v2, "expected.json"), encoding="utf-8") as fh:
        train = json.load(fh)["train"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "v2.txt")
        write_conll(train, path)
        return read_conll_segments(path)


def runs(conll: list[SegSentence]) -> dict[str, tuple[dict, list, dict, list]]:
    """name -> (hyper-parameters with ``max_iter``, training data, fit's run options,
    probe sentences)."""
    return {
        "defaults": (dict(D=2 ** 12, seed=5, max_iter=4), TOY, {}, PROBE),
        "no-average": (dict(D=2 ** 12, average=False, restrictions="no-overlap",
                            max_gap=2, k=3, threshold=0.2, seed=1, predicates="mcp05",
                            max_sweeps=50, max_iter=3), TOY, {}, PROBE),
        "select-dev": (dict(D=2 ** 11, max_gap=None, seed=2, max_iter=5), TOY,
                       dict(dev=TOY[:4], select="dev", dev_every=1), PROBE),
        "conll-pos": (dict(D=2 ** 12, seed=3, max_iter=3), conll[:8],
                      dict(dev=conll[8:], dev_restrictions="no-overlap,contiguous",
                           select="dev"), conll),
    }
