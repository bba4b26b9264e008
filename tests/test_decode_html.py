"""``fstchunk decode --format html``: one self-contained page; its structure (every chunk
a titled span with its p and band, tokens escaped, colours fixed per type), its
documents, line numbers, summary and navigation (the colours: test_html_palette), and
the page in headless Chromium: axe-core's accessibility check and a screenshot
(:mod:`browser`)."""

import html.parser
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import browser
from fstchunk.schemes import encodings as enc
from fstchunk.cli import main
from fstchunk.decoding.palette import BANDS, band, css_rgb, p_label, shade
from oracles import random_scores
from test_html_palette import TABLE_TYPES, random_types


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


class Page(html.parser.HTMLParser):
    """Chunks of the sentences (attributes, words, label, sentence id), tags seen,
    external references, ids, headings, links and each sentence's lead."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.chunks, self.tags, self.refs, self.text = [], [], [], []
        self.ids, self.headings, self.links, self.leads = [], [], [], {}
        self.least = []                               # the links of the least confident
        self._open = self._label = self._heading = self._link = None
        self._in_least = False
        self._sentence = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        self.refs += [v for k, v in attrs if k == "src" or (k == "href" and v[:1] != "#")]
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "p" and a.get("class", "").split()[:1] == ["s"]:
            self._sentence = a["id"]
        if tag == "mark" and "data-type" in a:
            self._open = dict(a, words="", label="", sentence=self._sentence)
            self.chunks.append(self._open)
        elif tag == "span" and self._open is not None:
            self._open["words"] = self._open["words"].strip()
            self._label, self._open = self._open, None    # the label follows the words
        elif tag in ("h2", "h3"):
            self._heading = [a.get("id"), ""]
            self.headings.append(self._heading)
        elif tag == "a":
            self._link = [a["href"], ""]
            self.links.append(self._link)
            if self._in_least:
                self.least.append(self._link)
        elif tag == "ol" and a.get("class") == "least":
            self._in_least = True

    def handle_endtag(self, tag):
        if tag == "span":
            self._label = None
        elif tag in ("h2", "h3"):
            self._heading = None
        elif tag == "a":
            if self._link and self._link[0][1:] == self._sentence and not self.leads.get(
                    self._sentence):
                self.leads[self._sentence] = self._link[1]
            self._link = None
        elif tag == "p":
            self._sentence = None
        elif tag == "ol":
            self._in_least = False

    def handle_data(self, data):
        self.text.append(data)
        if self._open is not None:
            self._open["words"] += data
        if self._label is not None:
            self._label["label"] += data
        if self._heading is not None:
            self._heading[1] += data
        if self._link is not None:
            self._link[1] += data


def parse(page: str) -> Page:
    p = Page()
    p.feed(page)
    return p


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
    for c, w, r in zip(p.chunks, want, (r for r in rows for _ in r["chunks"])):
        assert c["title"] == f"{w[0]} p={w[3]:.3f}"
        assert f"background:{css_rgb(shade(w[0], w[3]))}" in c["style"]  # type's colour
        assert c["class"] == f"chunk {band(w[3])[0]}"                     # band: border
        assert c["label"] == f"{w[0]} {p_label(w[3])}"                    # p at a glance
        assert c["sentence"] == f"s{r['sentence']}"
        assert p.leads[c["sentence"]] == f"line {r['line']}"             # input line


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
        p = parse(page)
        assert all(float(c["data-p"]) >= least - 5e-7 for c in p.chunks)
        counts.append(len(p.chunks))
        assert "x<y" in "".join(p.text) and "not decoded" in "".join(p.text)
    assert counts[0] >= counts[1] >= counts[2]


def test_colours_do_not_depend_on_input_order(tmp_path, capsys):
    """The same sentences in the opposite order: every type keeps its colour."""
    fwd, back = tmp_path / "f.jsonl", tmp_path / "b.jsonl"
    _forced_scores(fwd, [("ORG", 0.9), ("PER", 0.9), ("LOC", 0.9)])
    _forced_scores(back, [("LOC", 0.9), ("PER", 0.9), ("ORG", 0.9)])
    colours = []
    for path in (fwd, back):
        code, page, err = run(capsys, "decode", "--scores", path, "--scheme", "IOB2",
                              "--format", "html")
        assert code == 0, err
        colours.append({c["data-type"]: c["style"] for c in parse(page).chunks})
    assert colours[0] == colours[1] and len(colours[0]) == 3


def _forced_scores(path, chunks, conll=None, docstarts=()):
    """A JSONL score file, one sentence per (type, p): tokens w0 w1 w2 whose only
    uncertain tag is B-type on w1, so its chunk has probability p exactly (a logistic
    of the score).  With ``conll``, the tokens also go into that CoNLL file, with a
    ``-DOCSTART-`` line before the sentences whose index is in ``docstarts``."""
    types = sorted({t for t, _ in chunks})
    tags = ["O"] + [f"{b}-{t}" for t in types for b in "BI"]
    lines = []
    with open(path, "w", encoding="utf-8") as fh:
        for k, (t, p) in enumerate(chunks):
            e = np.full((3, len(tags)), -40.0)
            e[:, 0] = 0.0
            q = min(max(p, 1e-12), 1 - 1e-12)
            e[1, tags.index(f"B-{t}")] = math.log(q / (1 - q))
            fh.write(json.dumps({"tokens": [f"w{k}a", f"w{k}b", f"w{k}c"], "tags": tags,
                                 "scores": e.tolist()}) + "\n")
            if k in docstarts:
                lines.append("-DOCSTART- O")
            lines += [f"w{k}{x} O" for x in "abc"] + [""]
    if conll is not None:
        with open(conll, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


def _page_with_documents(tmp_path, capsys, chunks, docstarts):
    path, conll = tmp_path / "s.jsonl", tmp_path / "in.txt"
    _forced_scores(path, chunks, conll, docstarts)
    out = tmp_path / "page.html"
    code, _, err = run(capsys, "decode", "--scores", path, "--input", conll, "--scheme",
                       "IOB2", "--format", "html", "-o", out)
    assert code == 0, err
    rows = json.loads("[" + ",".join(run(capsys, "decode", "--scores", path, "--input", conll,
                                         "--scheme", "IOB2", "--format", "jsonl")[1]
                                     .splitlines()) + "]")
    return out, rows, conll.read_text(encoding="utf-8").splitlines()


def test_documents_lines_and_navigation(tmp_path, capsys):
    """-DOCSTART- lines start documents ("Document k, line N", N that line), linked from
    the navigation; each sentence is led by its input line, as JSONL says."""
    chunks = [("PER", 0.99), ("ORG", 0.6), ("LOC", 0.2), ("PER", 0.95), ("MISC", 0.8)]
    out, rows, lines = _page_with_documents(tmp_path, capsys, chunks, docstarts=(0, 2, 3))
    p = parse(out.read_text(encoding="utf-8"))
    starts = [i + 1 for i, x in enumerate(lines) if x.startswith("-DOCSTART-")]
    docs = [(h[0], h[1]) for h in p.headings if h[0] and h[0].startswith("d")]
    assert docs == [(f"d{k}", f"Document {k}, line {n}") for k, n in enumerate(starts, 1)]
    assert [x for x in p.links if x[0].startswith("#d")] == [[f"#{a}", t] for a, t in docs]
    assert {k: v for k, v in p.leads.items()} == {f"s{r['sentence']}": f"line {r['line']}"
                                                  for r in rows}
    for r in rows:                              # the line holds the sentence's first token
        assert lines[r["line"] - 1].split()[0] == r["tokens"][0]
    text = "".join(p.text)
    assert f"5 sentences in 3 documents; {len(p.chunks)} chunks." in text
    assert len(p.chunks) == 4                  # MAP leaves out the chunk of p = 0.2


def test_summary_counts_and_least_confident_first(monkeypatch):
    """The table counts the chunks of each type and band; the list holds the LEAST least
    confident chunks, lowest p first (ties: page order), each linking to its sentence."""
    from fstchunk.decoding import display
    from fstchunk.decoding.confidence import ScoredChunk
    monkeypatch.setattr(display, "LEAST", 4)
    rng = np.random.default_rng(3)
    page, want = display.HtmlPage("t"), []
    for k in range(12):
        t = str(rng.choice(["PER", "ORG", "LOC"]))
        q = 0.07 if k in (3, 9) else float(rng.uniform(0.05, 1.0))  # a tie
        page.sentence(k, [f"x{k}", f"y{k}"], [ScoredChunk(t, 1, 2, q)], line=10 * k + 1)
        want.append((q, k, t, f"y{k}"))
    p = parse(page.text())
    assert len(p.chunks) == 12
    assert p.least == [[f"#s{k}", w] for _, k, _, w in sorted(want)[:4]]
    assert "The 4 least confident chunks" in "".join(p.text)
    text = "".join(p.text).replace(" ", "")
    for t in ("PER", "ORG", "LOC"):
        mine = [q for q, _, u, _ in want if u == t]
        bands = [sum(1 for q in mine if band(q)[0] == name) for _, name, _ in BANDS]
        row = f"{t}{len(mine)}" + "".join(map(str, bands)) + f"{sum(mine) / len(mine):.3f}"
        assert row in text, row
    assert "12 sentences; 12 chunks." in "".join(p.text)


def test_page_passes_axe_core_in_headless_chromium(tmp_path, capsys):
    """A page with every type of the table (and two others), every confidence band,
    documents and navigation, in a real browser with the network off: axe-core finds
    no violation (none of color-contrast in particular), and a screenshot (under
    pytest's tmp) shows every type's colour."""
    browser.chromium()
    types = TABLE_TYPES + random_types(2, seed=7)
    chunks = [(t, (1.0, 0.95, 0.8, 0.6)[k % 4]) for k, t in enumerate(types)]
    page, _, _ = _page_with_documents(tmp_path, capsys, chunks, docstarts=(0, 5, 12))
    from fstchunk.decoding.confidence import ScoredChunk
    from fstchunk.decoding.display import HtmlPage
    low = HtmlPage("doubtful chunks", "p below 0.5")       # MAP does not decide these
    for k, t in enumerate(types):
        low.sentence(k, ["a", "<b>", "c"], [ScoredChunk(t, 1, 3, (0.0, 0.2, 0.45)[k % 3])])
    page_low = tmp_path / "low.html"
    page_low.write_text(low.text(), encoding="utf-8")
    for path in (page, page_low):
        found = browser.axe_violations(path, tmp_path)
        assert found == [], json.dumps(found, indent=1)[:4000]
    p = parse(page.read_text(encoding="utf-8"))
    assert {c["data-type"] for c in p.chunks} == set(types)
    shot = tmp_path / "screenshot.png"
    browser.screenshot(page, shot, tmp_path, size=(900, 1400))
    print(f"screenshot: {shot}")
    from PIL import Image                       # matplotlib's dependency (test extra)
    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert img.shape[:2] == (1400, 900)
    for t in types:                              # the summary's swatches, at p = 1
        near = (np.abs(img - np.array(shade(t, 1.0))).max(axis=2) <= 3).sum()
        assert near > 200, f"{near} pixels of {t}'s colour {shade(t, 1.0)} in {shot}"
    assert (np.abs(img - 255).max(axis=2) <= 2).mean() > 0.5     # mostly white page
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 20        # text drawn, not blank


def test_type_names_escaped_everywhere_and_failures_linked():
    """A type name with markup is text in the chunk, its label, the summary table, the
    key and the least-confident list; a failed sentence is linked from the summary."""
    from fstchunk.decoding.confidence import ScoredChunk
    from fstchunk.decoding.display import HtmlPage
    odd = '<i>"x"&'
    page = HtmlPage("t")
    page.sentence(0, ["a", "b"], [ScoredChunk(odd, 0, 2, 0.4)], line=3)
    page.error(1, ["<c>"], "too long", line=7)
    p = parse(page.text())
    assert "i" not in p.tags and not p.refs
    assert [c["data-type"] for c in p.chunks] == [odd]
    assert p.chunks[0]["label"] == f"{odd} 0.40"
    assert "".join(p.text).count(odd) == 6      # chunk, table, the key's 3 bands, list
    assert ["#s1", "line 7"] in p.links and "1 not decoded" in "".join(p.text)


def test_navigation_without_documents(monkeypatch):
    """A long page without -DOCSTART- lines links every NAV_EVERY-th sentence; a short
    one has no navigation."""
    from fstchunk.decoding import display
    monkeypatch.setattr(display, "NAV_EVERY", 3)
    for n, want in ((3, []), (7, ["#s0", "#s3", "#s6"])):
        page = display.HtmlPage("t")
        for k in range(n):
            page.sentence(k, ["a"], [], line=2 * k + 1)
        p = parse(page.text())
        assert [x[0] for x in p.links if x[1].startswith("sentence")] == want
        assert ("nav" in p.tags) == bool(want)


def test_documents_from_standard_input(tmp_path):
    """--input - (a pipe, read twice: sentences and -DOCSTART- lines) gives the page the
    file gives."""
    path, conll = tmp_path / "s.jsonl", tmp_path / "in.txt"
    _forced_scores(path, [("PER", 0.9), ("ORG", 0.7), ("LOC", 0.99)], conll, docstarts=(0, 2))
    root = os.path.join(os.path.dirname(__file__), os.pardir)
    pages = []
    for where, stdin in ((str(conll), b""), ("-", conll.read_bytes())):
        proc = subprocess.run([sys.executable, "-m", "fstchunk", "decode", "--scores",
                               str(path), "--input", where, "--scheme", "IOB2", "--format",
                               "html"], input=stdin, capture_output=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": os.path.abspath(root)})
        assert proc.returncode == 0, proc.stderr
        pages.append(proc.stdout.decode("utf-8"))
    assert pages[0] == pages[1]
    assert [h[1] for h in parse(pages[1]).headings if (h[0] or "").startswith("d")] == [
        "Document 1, line 1", "Document 2, line 10"]
