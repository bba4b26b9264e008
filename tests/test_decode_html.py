"""``fstchunk decode --format html``: one self-contained page; its structure (every chunk
a titled span with its p, tokens escaped) and its rendering in headless Chromium."""

import html.parser
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.decoding.display import HUES, shade
from oracles import random_scores


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


class Page(html.parser.HTMLParser):
    """Chunks (attributes and text), tags seen, external references."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.chunks, self.tags, self.refs, self.text = [], [], [], []
        self._open = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        self.refs += [v for k, v in attrs if k in ("src", "href") and v]
        if tag == "mark":
            self._open = dict(a, words="")
            self.chunks.append(self._open)
        elif tag == "span" and self._open is not None:
            self._open["words"] = self._open["words"].strip()
            self._open = None                 # the label follows the chunk's words

    def handle_data(self, data):
        self.text.append(data)
        if self._open is not None:
            self._open["words"] += data


def _scores_file(path, tokens_per_sentence, scheme="IOB2", seed=0):
    rng = np.random.default_rng(seed)
    tags = list(enc.scheme_tags(scheme, ("PER", "ORG", "LOC")))
    with open(path, "w", encoding="utf-8") as fh:
        for toks in tokens_per_sentence:
            e, t, s, en = random_scores(rng, len(tags), len(toks), 3.0)
            fh.write(json.dumps({"tokens": toks, "tags": tags, "scores": e.tolist(),
                                 "transitions": t.tolist()}) + "\n")


SENTENCES = [["<script>alert(1)</script>", "Tom", "&", "Jerry", "\"quoted\"", "'x'"],
             ["New", "York", "<b>bold</b>", "is", "big"],
             ["a", "b", "c", "d", "e", "f", "g", "h"]]


@pytest.mark.parametrize("decoder", ["map", "meu", "meu-corpus"])
def test_html_structure_matches_jsonl(tmp_path, capsys, decoder):
    path = tmp_path / "s.jsonl"
    _scores_file(path, SENTENCES)
    base = ["decode", "--scores", path, "--scheme", "IOB2", "--decoder", decoder]
    rows = [json.loads(x) for x in run(capsys, *base, "--format", "jsonl")[1].splitlines()]
    code, page, err = run(capsys, *base, "--format", "html")
    assert code == 0, err
    p = Page()
    p.feed(page)
    assert "script" not in p.tags and "b" not in p.tags and not p.refs   # escaped, no links
    assert "<script>alert(1)</script>" in "".join(p.text)              # shown as text
    assert "style" in p.tags and "link" not in p.tags
    want = [(c["type"], c["start"], c["end"], c["p"], " ".join(r["tokens"][c["start"]:c["end"]]))
            for r in rows for c in r["chunks"]]
    got = [(c["data-type"], int(c["data-start"]), int(c["data-end"]), float(c["data-p"]),
            c["words"]) for c in p.chunks]
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        assert g[:3] == w[:3] and g[3] == pytest.approx(w[3], abs=1e-6) and g[4] == w[4]
    hues: dict = {}                              # a hue per type, by first appearance
    for c, w in zip(p.chunks, want):
        assert c["title"] == f"{w[0]} p={w[3]:.3f}"
        hue = hues.setdefault(w[0], HUES[len(hues)])
        assert f"background:rgb{shade(hue, w[3])}" in c["style"]        # shaded by p


def test_html_min_confidence_and_errors(tmp_path, capsys):
    path = tmp_path / "s.jsonl"
    _scores_file(path, SENTENCES, seed=1)
    with open(path, "a", encoding="utf-8") as fh:            # a sentence that fails
        fh.write(json.dumps({"tokens": ["x<y"], "tags": ["O", "B-A"], "scores": [[0, 1]]})
                 + "\n")
    counts = []
    for least in (0.0, 0.5, 0.95):
        code, page, err = run(capsys, "decode", "--scores", path, "--scheme", "IOB2",
                              "--format", "html", "--min-confidence", least)
        assert code == 1 and "1 of 4 sentences not decoded" in err
        p = Page()
        p.feed(page)
        assert all(float(c["data-p"]) >= least - 5e-7 for c in p.chunks)
        counts.append(len(p.chunks))
        assert "x<y" in "".join(p.text) and "not decoded" in "".join(p.text)
    assert counts[0] >= counts[1] >= counts[2]


def test_shade_darkens_with_p():
    light = [sum(shade(h, p)) for h in HUES[:3] for p in (0.0, 0.5, 1.0)]
    for h in range(3):
        assert light[3 * h] > light[3 * h + 1] > light[3 * h + 2]


def _chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        msg = "chromium not installed (apt-get install chromium; .ci/run installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return exe


def test_page_renders_in_headless_chromium(tmp_path, capsys):
    """The page, rendered by a real browser with the network off, shows the shading:
    pixels of the darkest shade of the first type (a chunk of p = 1.000 is forced)."""
    exe = _chromium()
    toks = [["Alpha", "Beta", "went", "to", "Gamma"], ["<script>x</script>", "and", "more"]]
    tags = ["O", "B-PER", "I-PER"]
    big = 40.0                                    # token 0..1 a PER chunk, p = 1 - ~e^-40
    with open(tmp_path / "s.jsonl", "w", encoding="utf-8") as fh:
        for k, t in enumerate(toks):
            e = np.zeros((len(t), 3))
            e[:, 0] = big
            if k == 0:
                e[0] = [0, big * 2, 0]
                e[1] = [0, 0, big * 2]
            fh.write(json.dumps({"tokens": t, "tags": tags, "scores": e.tolist()}) + "\n")
    page = tmp_path / "page.html"
    code, _, err = run(capsys, "decode", "--scores", tmp_path / "s.jsonl", "--scheme", "IOB2",
                       "--format", "html", "-o", page)
    assert code == 0, err
    shot = tmp_path / "screenshot.png"
    proc = subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-extensions", "--force-device-scale-factor=1",
         "--proxy-server=127.0.0.1:9", "--force-color-profile=srgb",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=900,500",
         f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    print(f"screenshot: {shot}")
    assert shot.exists() and shot.stat().st_size > 1000, proc.stderr[-2000:]
    from PIL import Image                       # matplotlib's dependency (test extra)
    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert img.shape[:2] == (500, 900)
    rule = np.flatnonzero((np.abs(img - 204).max(axis=2) <= 3).mean(axis=1) > 0.5)
    assert len(rule), f"no legend rule in {shot}"
    body = img[rule[-1] + 1:]                    # the sentences, below the legend
    want = np.array(shade(HUES[0], 1.0))
    near = (np.abs(body - want).max(axis=2) <= 6).sum()
    assert near > 500, f"{near} pixels of the shade {tuple(want)} in {shot}"
    assert (np.abs(img - 255).max(axis=2) <= 2).mean() > 0.5     # mostly white page
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 20        # text drawn, not blank
