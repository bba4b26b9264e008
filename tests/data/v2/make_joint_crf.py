"""Wrote tests/data/v2/joint-crf.npz and joint-crf.json with the code before issue 33
(a checkout of commit 2c482bd): a joint model trained as a CRF, and what that code
decoded with it (MAP, MEU at β = 1 and 3) and its log Z per sentence, which
tests/test_joint_training.py requires of today's code.

    PYTHONPATH=CHECKOUT python tests/data/v2/make_joint_crf.py tests/data/v2
"""
import json
import sys

from fstchunk.io.conll import Sentence
from fstchunk.models import joint as J
out = sys.argv[1]
with open(out + "/expected.json") as fh:
    ref = json.load(fh)
sents = [Sentence(rows, list(range(1, len(rows) + 1)), "v2") for rows in ref["train"]]
data = J.layered(sents)
model, enc = J.model_for(data, "joint", {"collapse_pos": False, "np_only": False})
model.fit(enc, "crf", 3, l2=3.0)
model.save(out + "/joint-crf.npz")
back = J.JointModel.load(out + "/joint-crf.npz")
pos, chunks = J.predict(back, data, "map")
_, meu = J.predict(back, data, "meu", 1.0)
_, meu2 = J.predict(back, data, "meu", 3.0)
logz = [back.marginals(J.encode(back, d, gold=False))[0] for d in data]
with open(out + "/joint-crf.json", "w") as fh:
    json.dump({"written_by": "fstchunk at commit 2c482bd (before issue 33): joint crf, 3 "
               "L-BFGS iterations, l2 = 3.0 on the summed NLL, on expected.json's train",
               "map_pos": pos, "map_chunks": chunks, "meu_chunks": meu, "meu_beta3_chunks": meu2,
               "log_z": logz}, fh, indent=0)
print(back.settings_)
