"""The picture of ``decode --format html`` on docs/howto/confidence.md
(docs/howto/img/entity-view.png): a small CRF (the first 1,500 sentences of
CoNLL-2002 Dutch train, 40 iterations) decodes with MEU five sentences of Dutch
testa (a ``-DOCSTART-`` line, then the sentences from line 5607), the page is
rendered by headless Chromium and cropped to what it draws.

    PYTHONPATH=. FSTCHUNK_DATA=../shared/data python benchmarks/docs_entity_view.py
"""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

from fstchunk.cli import main
from fstchunk.io.conll import data_path, read_conll, write_conll

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "docs", "howto", "img",
                   "entity-view.png")
FIRST_LINE, SENTENCES = 5607, 5


def excerpt(path: str) -> None:
    """A ``-DOCSTART-`` line, then SENTENCES sentences of testa from FIRST_LINE."""
    sents = read_conll(data_path("conll2002", "ned.testa"))
    k = next(i for i, s in enumerate(sents) if s.lines[0] == FIRST_LINE)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("-DOCSTART- -DOCSTART- O\n")
        write_conll(sents[k:k + SENTENCES], fh)


def run(*argv: str) -> None:
    code = main(list(argv))
    if code:
        sys.exit(f"fstchunk {argv[0]}: exit {code}")


def main_() -> None:
    out = os.path.abspath(OUT)
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)                             # the page names the model crf.npz
        train, few = os.path.join(tmp, "train.txt"), os.path.join(tmp, "few.txt")
        write_conll(read_conll(data_path("conll2002", "ned.train"))[:1500], train)
        excerpt(few)
        model, page = "crf.npz", os.path.join(tmp, "view.html")
        run("train", "--train", train, "--max-iter", "40", "-o", model)
        run("decode", "--model", model, "--input", few, "--decoder", "meu", "--format",
            "html", "-o", page)
        shot = os.path.join(tmp, "shot.png")
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--force-device-scale-factor=1",
                        "--force-color-profile=srgb", "--window-size=960,1400",
                        f"--user-data-dir={os.path.join(tmp, 'profile')}",
                        f"--screenshot={shot}", "file://" + page], check=True,
                       capture_output=True)
        img = Image.open(shot).convert("RGB")
        ink = np.flatnonzero((np.asarray(img).min(axis=2) < 250).any(axis=1))
        img = img.crop((0, 0, img.width, min(img.height, ink[-1] + 24)))
        img = img.quantize(colors=64)             # a few flat colours: a small PNG
        img.save(out, optimize=True)
    print(f"wrote {out} ({os.path.getsize(out)} bytes, {img.width}x{img.height})")


if __name__ == "__main__":
    main_()
