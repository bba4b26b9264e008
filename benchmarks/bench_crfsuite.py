"""A CRFsuite model imported into fstchunk (issue 35, part 3), on CoNLL-2000.

python-crfsuite trains on the first --train-sentences of train.txt (tmpt1 attributes,
CRFsuite's L-BFGS with c1, c2, --iterations); ``fstchunk.models.crfsuite_import``
reads the model file under ``none`` and IOB2; every test sentence is tagged by
CRFsuite (Tagger.tag) and decoded by fstchunk:

* ``none``: MAP tags equal to CRFsuite's (sentences that differ), the largest token
  marginal difference;
* IOB2: the sentences whose CRFsuite Viterbi path is not a valid IOB2 sequence, MAP
  equal to CRFsuite's on all the others; conlleval F of CRFsuite's tags (conlleval
  reads invalid sequences leniently), of fstchunk's MAP and of its MEU (β = 1);
* times: CRFsuite's tagging, fstchunk's lattices + MAP (one process, one thread).

    python benchmarks/bench_crfsuite.py --train-sentences 2000 --iterations 100
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import Timer, data_path, write_section  # noqa: E402
from fstchunk.schemes import encodings as enc  # noqa: E402
from fstchunk.io.conll import read_conll  # noqa: E402
from fstchunk.decoding.decode import decode_map, decode_meu  # noqa: E402
from fstchunk import evaluate  # noqa: E402
from fstchunk.models.crfsuite_import import from_crfsuite  # noqa: E402
from fstchunk.models.features import token_features  # noqa: E402


def items(s):
    return [dict.fromkeys(f, 1.0) for f in token_features(s.column(0), s.column(1), "tmpt1")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train-sentences", type=int, default=2000)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--c1", type=float, default=0.1)
    ap.add_argument("--c2", type=float, default=0.01)
    ap.add_argument("--possible-transitions", action="store_true",
                    help="CRFsuite's feature.possible_transitions (sklearn-crfsuite's "
                         "all_possible_transitions): weights for transitions never seen")
    args = ap.parse_args()
    import pycrfsuite
    train = read_conll(data_path("conll2000", "train.txt"))[:args.train_sentences]
    test = read_conll(data_path("conll2000", "test.txt"))
    X = [items(s) for s in test]
    gold = [s.column(2) for s in test]
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "model.crfsuite")
        trainer = pycrfsuite.Trainer(verbose=False)
        for s in train:
            trainer.append(pycrfsuite.ItemSequence(items(s)), s.column(2))
        trainer.set_params({"c1": args.c1, "c2": args.c2, "max_iterations": args.iterations,
                            "feature.possible_transitions": args.possible_transitions})
        with Timer() as t_train:
            trainer.train(path)
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        with Timer() as t_tag:
            theirs = []
            for x in X:
                tagger.set(pycrfsuite.ItemSequence(x))
                theirs.append(tagger.tag())
        marg = [np.array([[tagger.marginal(y, t) for y in tagger.labels()]
                          for t in range(len(x))]) for x in X if tagger.set(
                              pycrfsuite.ItemSequence(x)) is None]
        free = from_crfsuite(path, None)
        chunk = from_crfsuite(path, "IOB2")
        with Timer() as t_fst:
            lats = free.lattices(X)
            ours_free = [decode_map(lat).tags for lat in lats]
    diff_free = sum(list(a) != b for a, b in zip(ours_free, theirs))
    worst = max(float(np.abs(lat.marginals() - m).max()) for lat, m in zip(lats, marg))
    clats = chunk.lattices(X)
    map_iob = [list(decode_map(lat).tags) for lat in clats]
    with Timer() as t_meu:
        meu = [list(decode_meu(lat).tags) for lat in clats]
    invalid = [i for i, y in enumerate(theirs) if not enc.is_valid(y, "IOB2")]
    differ_valid = sum(map_iob[i] != theirs[i] for i in range(len(test)) if i not in invalid)
    f = {name: evaluate(gold, pred, scheme="IOB2").overall.f
         for name, pred in (("CRFsuite Viterbi", theirs), ("fstchunk MAP, IOB2", map_iob),
                            ("fstchunk MEU β=1, IOB2", meu))}
    ntok = sum(len(x) for x in X)
    from importlib.metadata import version
    body = (f"python-crfsuite {version('python-crfsuite')} trained on the first {len(train)} sentences of train.txt (tmpt1 attributes, "
            f"L-BFGS, c1 = {args.c1:g}, c2 = {args.c2:g}, {args.iterations} iterations, "
            f"possible transitions {'on' if args.possible_transitions else 'off'}, "
            f"{t_train.seconds:.1f} s; {len(free.fmap_)} attributes, {free.P} state "
            f"features), imported by `fstchunk import crfsuite`; test.txt: {len(test)} "
            f"sentences, {ntok} tokens.\n\n"
            "| check | figure |\n|---|---|\n"
            f"| `--scheme none`: sentences whose MAP differs from CRFsuite's Viterbi | "
            f"**{diff_free}** of {len(test)} |\n"
            f"| `--scheme none`: largest token marginal difference | {worst:.1e} |\n"
            f"| CRFsuite's Viterbi not a valid IOB2 sequence | **{len(invalid)}** of "
            f"{len(test)} sentences |\n"
            f"| `--scheme IOB2`: MAP differs from CRFsuite's where CRFsuite's is valid | "
            f"**{differ_valid}** |\n"
            + "".join(f"| conlleval F, {name} | {v:.2f} |\n" for name, v in f.items())
            + f"| CRFsuite tagging (Tagger.set + tag) | {t_tag.seconds:.2f} s |\n"
            f"| fstchunk lattices + MAP (`none`) | {t_fst.seconds:.2f} s |\n"
            f"| fstchunk MEU (IOB2) | {t_meu.seconds:.2f} s |\n\n"
            "Times on a machine shared with other jobs: indicative only.")
    print(body)
    write_section(f"CRFsuite models in fstchunk (issue 35, part 3): {len(train)} training "
                  f"sentences, c1 {args.c1:g}, c2 {args.c2:g}"
                  + (", all possible transitions" if args.possible_transitions else ""), body)


if __name__ == "__main__":
    main()
