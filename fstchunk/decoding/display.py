"""What ``fstchunk decode --format jsonl|html`` writes: a decided sentence with its
chunks' confidences, as one JSON object or as part of one self-contained HTML page.

JSONL (one object per sentence, in input order)::

    {"sentence": 0, "line": 1, "tokens": ["He", "reckons", ...],
     "tags": ["B-NP", "B-VP", ...],
     "chunks": [{"type": "NP", "start": 0, "end": 1, "p": 0.9987}, ...],
     "marginals": [{"B-NP": 0.998, "I-NP": 0.0, "O": 0.002, ...}, ...]}

``start``/``end`` are 0-based token positions, ``end`` exclusive; ``p`` is
Pr(chunk ∈ chunks(y)) (:func:`fstchunk.decoding.confidence.scored_chunks`).  ``tags`` are
in the output scheme and always spell exactly ``chunks`` (after
``--min-confidence``).  ``marginals`` (with ``--marginals``) holds per token
Pr(y_i = tag) for every tag of the model, in the model's tag order and scheme
(``marginals_scheme``), which may differ from the output scheme.  ``line`` is the
input's line of the first token (null for a score file without tokens, whose
``tokens`` are null).  A sentence that could not be decoded is
``{"sentence", "line", "tokens", "error"}``, without tags or chunks.

HTML (:class:`HtmlPage`): one page, inline CSS only, no script, no external
resource, every token escaped.  At the top a summary: sentences, documents and chunks,
a table of the chunks by type (each type's colour, count, how many in each
confidence band, mean p) that is also the legend, the confidence key, the least
confident chunks first (:data:`LEAST` of them, with p, type, words and a link to
their sentence) and the sentences not decoded; then links to the documents
(``-DOCSTART-`` lines start them; without any, links every :data:`NAV_EVERY`
sentences of a long page).  Each document is a heading ``Document k, line N`` (the
``-DOCSTART-`` line), each sentence a paragraph with the id ``s<index>`` led by its
input line.  Each chunk is a ``<mark class="chunk">`` on its type's fixed pastel
(:mod:`fstchunk.decoding.palette`: the same type has the same colour on every input;
dark text, WCAG AA contrast at every p), deeper as p rises, with a solid, dashed or
dotted border for p ≥ 0.9, 0.5 ≤ p < 0.9 and p < 0.5, followed by a label
``TYPE 0.87`` (p to two decimals, rounded down, as the band reads it); its ``title``
is ``TYPE p=0.873`` and its ``data-type``, ``data-start``, ``data-end``, ``data-p``
attributes hold the chunk.
"""

from __future__ import annotations

import heapq
import html
from typing import Iterable, Sequence

from ..core.outputs import json_text
from .confidence import ScoredChunk
from .palette import BANDS, INK, band, css_rgb, p_label, shade

#: how many of the least confident chunks the summary lists
LEAST = 50
#: without documents, a page of more sentences than this links every that many
NAV_EVERY = 100


def record(index: int, line: int | None, tokens: Sequence[str] | None,
           tags: Sequence[str] | None, chunks: Sequence[ScoredChunk] | None,
           marginals=None, model_tags: Sequence[str] | None = None,
           model_scheme: str | None = None, error: str | None = None) -> str:
    """One JSONL line (module doc), newline included."""
    out: dict = {"sentence": index, "line": line,
                 "tokens": None if tokens is None else list(tokens)}
    if error is not None:
        out["error"] = error
    else:
        out["tags"] = list(tags)
        out["chunks"] = [{"type": c.type, "start": c.start, "end": c.end, "p": c.p}
                         for c in chunks]
        if marginals is not None:
            out["marginals_scheme"] = model_scheme
            out["marginals"] = [dict(zip(model_tags, map(float, row))) for row in marginals]
    return json_text(out, ensure_ascii=False) + "\n"


class HtmlPage:
    """The page (module doc), built in input order: :meth:`document` where a
    ``-DOCSTART-`` line starts one, :meth:`sentence` or :meth:`error` per sentence,
    then :meth:`text`."""

    def __init__(self, title: str, subtitle: str = ""):
        self.title, self.subtitle = title, subtitle
        self.parts: list[str] = []
        self.counts: dict[str, list] = {}       # type -> [chunks, per band..., sum of p]
        self.least: list[tuple] = []            # a max-heap (-p, -order) of LEAST
        self.failed: list[tuple[int, int | None]] = []
        self.documents: list[tuple[int, int]] = []   # (document number, its line)
        self.sentences = self.chunks = 0

    def document(self, line: int) -> None:
        """A document starts at input ``line`` (its ``-DOCSTART-`` line)."""
        k = len(self.documents) + 1
        self.documents.append((k, line))
        self.parts.append(f'<h2 id="d{k}">Document {k}, line {line}</h2>')

    def sentence(self, index: int, tokens: Sequence[str], chunks: Iterable[ScoredChunk],
                 line: int | None = None) -> None:
        """A sentence: its tokens, each chunk a coloured, bordered, labelled span."""
        at = {c.start: c for c in chunks}
        out, i = [], 0
        while i < len(tokens):
            c = at.get(i)
            if c is None:
                out.append(_esc(tokens[i]))
                i += 1
                continue
            words = " ".join(_esc(t) for t in tokens[c.start:c.end])
            self._count(c, words, index, line)
            name = _esc(c.type) or "(untyped)"
            out.append(f'<mark class="chunk {band(c.p)[0]}" '
                       f'style="background:{css_rgb(shade(c.type, c.p))}" '
                       f'title="{_esc(c.type)} p={c.p:.3f}" data-type="{_esc(c.type)}" '
                       f'data-start="{c.start}" data-end="{c.end}" data-p="{c.p:.6f}">'
                       f'{words}<span class="lab">{name} {p_label(c.p)}</span></mark>')
            i = c.end
        self.sentences += 1
        self.parts.append(f'<p class="s" id="s{index}">{_lead(index, line)}'
                          + " ".join(out) + "</p>")

    def error(self, index: int, tokens: Sequence[str], reason: str,
              line: int | None = None) -> None:
        """A sentence that could not be decoded: its tokens and why."""
        self.sentences += 1
        self.failed.append((index, line))
        self.parts.append(f'<p class="s err" id="s{index}">{_lead(index, line)}'
                          + " ".join(map(_esc, tokens))
                          + f'<span class="why">not decoded: {_esc(reason)}</span></p>')

    def _count(self, c: ScoredChunk, words: str, index: int, line: int | None) -> None:
        row = self.counts.setdefault(c.type, [0] * (len(BANDS) + 2))
        row[0] += 1
        row[1 + [b[1] for b in BANDS].index(band(c.p)[0])] += 1
        row[-1] += c.p
        self.chunks += 1
        item = (-c.p, -self.chunks, c.type, words, index, line)
        if len(self.least) < LEAST:
            heapq.heappush(self.least, item)
        elif item > self.least[0]:
            heapq.heapreplace(self.least, item)

    def text(self) -> str:
        """The whole page."""
        return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                f'<meta name="viewport" content="width=device-width">'
                f"<title>{_esc(self.title)}</title><style>{_CSS}</style></head><body>"
                f"<header><h1>{_esc(self.title)}</h1>"
                f'<p class="sub">{_esc(self.subtitle)}</p></header>\n<main>'
                + self._summary() + self._navigation() + '<section class="text" '
                'aria-label="sentences">\n' + "\n".join(self.parts)
                + "\n</section></main></body></html>\n")

    def _summary(self) -> str:
        docs = f" in {_n(len(self.documents), 'document')}" if self.documents else ""
        failed = f", {len(self.failed)} not decoded" if self.failed else ""
        head = "".join(f'<th scope="col">{name} ({_band_text(k)})</th>'
                       for k, (_, name, _) in enumerate(BANDS))
        rows = "".join(
            f'<tr><th scope="row">{_swatch(t)}</th>'
            f'<td>{n[0]}</td>' + "".join(f"<td>{k}</td>" for k in n[1:-1])
            + f"<td>{n[-1] / n[0]:.3f}</td></tr>"
            for t, n in sorted(self.counts.items(), key=lambda kv: (kv[0].lower(), kv[0])))
        table = (f'<table><caption>Chunks by type (the type\'s colour at p = 1)</caption>'
                 f'<thead><tr><th scope="col">type</th><th scope="col">chunks</th>{head}'
                 f'<th scope="col">mean p</th></tr></thead><tbody>{rows}</tbody></table>'
                 if self.counts else "<p>No chunk.</p>")
        least = sorted(self.least, reverse=True)
        items = "".join(
            f'<li>{p_label(-q)} {_swatch(t)} <a href="#s{i}">{w}</a> '
            f'<span class="n">{_where(i, line)}</span></li>'
            for q, _, t, w, i, line in least)
        low = (f'<h3>The {_n(len(least), "least confident chunk")}</h3>'
               f'<ol class="least">{items}</ol>' if least else "")
        bad = ""
        if self.failed:
            bad = ("<h3>Not decoded</h3><p>" + ", ".join(
                f'<a href="#s{i}">{_where(i, line)}</a>' for i, line in self.failed[:LEAST])
                + (f" and {len(self.failed) - LEAST} more" if len(self.failed) > LEAST
                   else "") + "</p>")
        return (f'<section aria-labelledby="summary"><h2 id="summary">Summary</h2>'
                f"<p>{_n(self.sentences, 'sentence')}{docs}{failed}; "
                f"{_n(self.chunks, 'chunk')}.</p>"
                f"{table}{_key(sorted(self.counts) or [''])}{low}{bad}</section>\n")

    def _navigation(self) -> str:
        if self.documents:
            links = [(f"d{k}", f"Document {k}, line {line}") for k, line in self.documents]
        elif self.sentences > NAV_EVERY:
            links = [(f"s{k}", f"sentence {k}") for k in range(0, self.sentences, NAV_EVERY)]
        else:
            return ""
        items = "".join(f'<li><a href="#{a}">{_esc(t)}</a></li>' for a, t in links)
        return (f'<nav aria-labelledby="nav"><h2 id="nav">Go to</h2>'
                f'<ul class="nav">{items}</ul></nav>\n')


def _key(types: list[str]) -> str:
    """The confidence key: a chunk of each band, of the page's first type."""
    t = types[0]
    marks = " · ".join(
        f'<mark class="chunk {name}" style="background:{css_rgb(shade(t, p))}">'
        f'{name}<span class="lab">{_esc(t) or "(untyped)"} {p_label(p)}</span></mark> '
        f"{_band_text(k)}" for k, ((_, name, _), p) in enumerate(zip(BANDS, (0.95, 0.7, 0.3))))
    return (f'<p class="keyline">Confidence: the number after the type is p, the '
            f"probability that the model's sequences hold the chunk; the border shows its "
            f"band and the colour deepens as p rises. {marks}</p>")


def _swatch(type_: str) -> str:
    """The type's name on its colour at p = 1."""
    return (f'<span class="key" style="background:{css_rgb(shade(type_, 1.0))}">'
            f'{_esc(type_) or "(untyped)"}</span>')


def _band_text(k: int) -> str:
    """The range of p of band ``k`` of :data:`BANDS`, escaped."""
    least, upper = BANDS[k][0], BANDS[k - 1][0] if k else None
    if upper is None:
        return f"p ≥ {least:g}"
    return f"{least:g} ≤ p &lt; {upper:g}" if least else f"p &lt; {upper:g}"


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}{'s' if k != 1 else ''}"


def _lead(index: int, line: int | None) -> str:
    return f'<a class="n" href="#s{index}">{_where(index, line)}</a> '


def _where(index: int, line: int | None) -> str:
    return f"line {line}" if line is not None else f"sentence {index}"


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


_CSS = ("body{font:16px/2.4 system-ui,sans-serif;margin:2em;background:#fff;color:%s}"
        "h1{font-size:1.3em;line-height:1.4;margin:0}h2{font-size:1.1em;line-height:1.4;"
        "margin:1.2em 0 .3em}h3{font-size:1em;line-height:1.4;margin:.8em 0 .2em}"
        ".sub{color:#555;margin:0 0 1em}"
        "table{border-collapse:collapse;line-height:1.6}th,td{padding:.1em .6em;"
        "text-align:right}th[scope=row]{text-align:left}"
        "thead th,caption{text-align:left;font-weight:normal;color:#444}"
        "tbody tr{border-top:1px solid #ddd}"
        ".key{padding:.1em .5em;border-radius:.3em;font-weight:bold;white-space:nowrap}"
        ".keyline mark{white-space:nowrap}"
        ".least{line-height:1.6;columns:22em;margin:0}"
        ".nav{list-style:none;padding:0;line-height:1.6;columns:14em}"
        ".text{border-top:1px solid #ccc;margin-top:1em}"
        ".s{margin:.2em 0}.n{color:#555;font-size:.75em;margin-right:.8em}"
        "a.n{text-decoration:none}"
        "mark.chunk{color:%s;padding:.2em .4em;-webkit-box-decoration-break:clone;"
        "box-decoration-break:clone;border-radius:.35em;margin:0 .15em;"
        "border:2px solid #333}"
        "mark.likely{border-style:dashed}mark.doubtful{border-style:dotted}"
        ".lab{font-size:.7em;font-weight:bold;margin-left:.4em;vertical-align:middle;"
        "white-space:nowrap}"
        ".err{color:#a00}.why{margin-left:1em;font-size:.8em}"
        ) % (css_rgb(INK), css_rgb(INK))
