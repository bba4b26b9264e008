"""Writes segment-contract.npz / .json and segment-contract-tuned.npz: what the segment
model gave BEFORE the estimator contract (issue 45), which
tests/test_estimator_contract_segment.py holds the new code to.

Run once with the code before the change (main at 9089163), from the repository root:

    git archive 9089163 fstchunk | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old python tests/data/v2/make_segment_contract.py

It uses that code's API (``fit(..., max_iter=...)``, ``model.W``), so it does not run on
the code after the change: it is kept to say how the files were made.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from segment_contract_data import CONFIGS, conll_sentences, runs  # noqa: E402

from fstchunk.models.segment import SegmentModel  # noqa: E402

HERE = os.path.dirname(__file__)


def rows(pred):
    return [[[g.type, list(g.positions)] for g in segs] for segs in pred]


def main() -> None:
    arrays, out = {}, {}
    for name, (hyper, data, options, probe) in runs(conll_sentences(HERE)).items():
        hyper = dict(hyper)
        max_iter = hyper.pop("max_iter")
        m = SegmentModel(**hyper).fit(data, max_iter=max_iter, **options)
        arrays[f"{name}/W"] = m.W
        if m.other_weights is not None:
            arrays[f"{name}/other"] = m.other_weights
        rec = {"types": m.types, "max_gap": m.max_gap,
               "history": m.settings["history"], "iteration": m.settings["iteration"],
               "selected_epoch": m.settings["selected_epoch"],
               "decode": rows(m.decode(probe)),
               "decode_low": rows(m.decode(probe, threshold=-0.5))}
        m.calibrate(probe)
        rec["platt"] = m.settings["platt"]
        rec["meu"] = rows(m.decode(probe, decoder="meu"))
        rec["tuned"] = m.tune_threshold(probe)
        rec["decode_tuned"] = rows(m.decode(probe))
        out[name] = rec
        if name == CONFIGS[1]:
            m.save(os.path.join(HERE, "segment-contract-tuned.npz"))
    np.savez_compressed(os.path.join(HERE, "segment-contract.npz"), **arrays)
    with open(os.path.join(HERE, "segment-contract.json"), "w", encoding="utf-8") as fh:
        json.dump(out, fh, sort_keys=True)


if __name__ == "__main__":
    main()
