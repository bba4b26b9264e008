"""Training layouts (issue 32, item 2): the figures behind the thresholds of
:mod:`fstchunk.io.layout`, the size of the record in a model file and the cost of the check.

For each pairing of a training file's column with an input's column: the share of the
input's first 1000 tokens seen in training and the distinct values among them, and the
check's verdict.  Then the layout record's size (the compressed npz arrays) and the time
to build it and to check an input's head.

    FSTCHUNK_DATA=../shared/data python benchmarks/bench_layout.py
"""

from __future__ import annotations

import io
import json

import numpy as np

from common import Timer, data_path, write_section
from fstchunk.io.columns import Columns
from fstchunk.io.conll import Sentence, read_conll
from fstchunk.io.layout import HEAD_TOKENS, Layout, head, looks_like


def project(sents, cols):
    return [Sentence([[r[c] for c in cols] for r in s.rows], s.lines, s.source) for s in sents]


def main() -> None:
    en_train = read_conll(data_path("conll2000", "train.txt"))
    en_test = read_conll(data_path("conll2000", "test.txt"))
    nl_train = read_conll(data_path("conll2002", "ned.train"))
    nl_testa = read_conll(data_path("conll2002", "ned.testa"))
    genia = [Sentence([[t] for t in json.loads(line)["tokens"]])
             for line in open(data_path("genia", "dev.jsonl"), encoding="utf-8")]
    with Timer() as t_en:
        en = Layout.of(en_train, Columns(0, 1, 2), "IOB2")
    nl = Layout.of(nl_train, Columns(0, 1, 2), "IOB2")
    cases = [  # (training, role, input name, input sentences, column, wanted)
        ("CoNLL-2000 train", en, "pos", "CoNLL-2000 test, POS", en_test, 1, True),
        ("CoNLL-2000 train", en, "word", "CoNLL-2000 test, words", en_test, 0, True),
        ("CoNLL-2002 ned.train", nl, "pos", "ned.testa, POS", nl_testa, 1, True),
        ("CoNLL-2002 ned.train", nl, "word", "ned.testa, words", nl_testa, 0, True),
        ("CoNLL-2000 train", en, "word", "GENIA dev, words (another domain)", genia, 0, True),
        ("CoNLL-2000 train", en, "word", "ned.testa, words (another language)", nl_testa, 0,
         True),
        ("CoNLL-2002 ned.train", nl, "word", "CoNLL-2000 test, words (another language)",
         en_test, 0, True),
        ("CoNLL-2000 train", en, "pos", "word/tag file: chunk tags as POS", en_test, 2, False),
        ("CoNLL-2000 train", en, "pos", "words as POS", en_test, 0, False),
        ("CoNLL-2000 train", en, "word", "POS as words", en_test, 1, False),
        ("CoNLL-2000 train", en, "word", "chunk tags as words", en_test, 2, False),
        ("CoNLL-2000 train", en, "pos", "Dutch POS (another tag set)", nl_testa, 1, False),
        ("CoNLL-2002 ned.train", nl, "pos", "NER tags as POS", nl_testa, 2, False),
        ("CoNLL-2002 ned.train", nl, "word", "POS as words", nl_testa, 1, False),
    ]
    rows = ["| trained on | column | input | seen | distinct | verdict | as wanted |",
            "|---|---|---|---|---|---|---|"]
    for train_name, lay, role, name, sents, col, want in cases:
        values = [r[col] for s in sents[:400] for r in s.rows][:HEAD_TOKENS]
        ok = looks_like(role, values, lay.vocab[role])
        rows.append(f"| {train_name} | {role} | {name} | {lay.vocab[role].seen(values):.3f} | "
                    f"{len(set(values))} | {'passes' if ok else 'refused'} | "
                    f"{'yes' if ok == want else 'NO'} |")
    sizes = ["| training file | word types | POS types | record (compressed npz) | build |",
             "|---|---|---|---|---|"]
    for name, sents in (("CoNLL-2000 train", en_train), ("CoNLL-2002 ned.train", nl_train)):
        with Timer() as t:
            lay = Layout.of(sents, Columns(0, 1, 2), "IOB2")
        buf = io.BytesIO()
        np.savez_compressed(buf, **lay.arrays())
        sizes.append(f"| {name} | {lay.vocab['word'].types} | {lay.vocab['pos'].types} | "
                     f"{len(buf.getvalue()) / 1024:.0f} KB | {t.seconds:.2f} s |")
    with Timer() as t_check:
        for _ in range(10):
            first, _rest = head(iter(en_test))
            en.mismatch(first, Columns(0, 1, None))
    body = (
        "The share of an input's first 1000 tokens seen in the training column, and their "
        "distinct values (a tag set: at most 64 in 200 tokens or more). A POS column passes "
        "at a share >= 0.5; a word column at >= 0.5, or >= 0.1 when its values are not a "
        "tag set.\n\n" + "\n".join(rows) + "\n\nThe record in a model file, and its cost:\n\n"
        + "\n".join(sizes) + f"\n\nChecking an input's head (1000 tokens) against the "
        f"CoNLL-2000 layout: {t_check.seconds / 10 * 1000:.1f} ms (mean of 10; the layout "
        f"was built in {t_en.seconds:.2f} s)."
    )
    print(body)
    write_section("Training layouts (issue 32): thresholds, record size, check cost", body)


if __name__ == "__main__":
    main()
