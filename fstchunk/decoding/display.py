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

HTML: inline CSS only, no script, no external resource.  Each chunk is a
``<mark class="chunk">`` whose background has its type's hue and a lightness
that falls linearly with p (:func:`shade`: p = 1 is the darkest), its ``title``
``TYPE p=0.873``, followed by a label with the type; every token is escaped.
"""

from __future__ import annotations

import colorsys
import html
from typing import Iterable, Sequence

from ..core.outputs import json_text
from .confidence import ScoredChunk

#: the hues (degrees) of chunk types, in order of first appearance, cycling
HUES = (210, 30, 120, 0, 270, 180, 60, 320)


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


def shade(hue: int, p: float) -> tuple[int, int, int]:
    """The background of a chunk of confidence ``p``: HSL(hue, 75%, 92% − 50%·p) in
    RGB, so p = 0 is near white and p = 1 a saturated 42% lightness."""
    r, g, b = colorsys.hls_to_rgb(hue / 360.0, 0.92 - 0.50 * min(max(p, 0.0), 1.0), 0.75)
    return round(r * 255), round(g * 255), round(b * 255)


class HtmlPage:
    """The page, built sentence by sentence: :meth:`sentence`, :meth:`error`, then
    :meth:`text` (header, sentences, legend of the types seen and of p)."""

    def __init__(self, title: str, subtitle: str = ""):
        self.title, self.subtitle = title, subtitle
        self.hues: dict[str, int] = {}
        self.parts: list[str] = []

    def hue(self, type_: str) -> int:
        if type_ not in self.hues:
            self.hues[type_] = HUES[len(self.hues) % len(HUES)]
        return self.hues[type_]

    def sentence(self, index: int, tokens: Sequence[str], chunks: Iterable[ScoredChunk]
                 ) -> None:
        """A sentence: its tokens, each chunk a shaded, labelled, titled span."""
        at = {c.start: c for c in chunks}
        out, i = [], 0
        while i < len(tokens):
            c = at.get(i)
            if c is None:
                out.append(_esc(tokens[i]))
                i += 1
                continue
            rgb = shade(self.hue(c.type), c.p)
            ink = "#fff" if c.p > 0.6 else "#111"
            words = " ".join(_esc(t) for t in tokens[c.start:c.end])
            out.append(f'<mark class="chunk" style="background:rgb{rgb};color:{ink}" '
                       f'title="{_esc(c.type)} p={c.p:.3f}" data-type="{_esc(c.type)}" '
                       f'data-start="{c.start}" data-end="{c.end}" data-p="{c.p:.6f}">'
                       f'{words}<span class="lab">{_esc(c.type)} {c.p:.2f}</span></mark>')
            i = c.end
        self.parts.append(f'<p class="s" id="s{index}"><span class="n">{index}</span>'
                          + " ".join(out) + "</p>")

    def error(self, index: int, tokens: Sequence[str], reason: str) -> None:
        self.parts.append(f'<p class="s err" id="s{index}"><span class="n">{index}</span>'
                          + " ".join(map(_esc, tokens))
                          + f'<span class="why">not decoded: {_esc(reason)}</span></p>')

    def text(self) -> str:
        legend = "".join(
            f'<span class="key" style="background:rgb{shade(h, 1.0)};color:#fff">'
            f'{_esc(t) or "(untyped)"}</span>' for t, h in self.hues.items())
        hue = next(iter(self.hues.values()), HUES[0])
        scale = "".join(f'<span class="key" style="background:rgb{shade(hue, p)};'
                        f'color:{"#fff" if p > 0.6 else "#111"}">{p:.1f}</span>'
                        for p in (0.1, 0.3, 0.5, 0.7, 0.9, 1.0))
        return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                f"<title>{_esc(self.title)}</title><style>{_CSS}</style></head><body>"
                f"<h1>{_esc(self.title)}</h1><p class=\"sub\">{_esc(self.subtitle)}</p>"
                f'<div class="legend">types: {legend or "(no chunk)"}'
                f"<br>confidence p (shade): {scale}</div>\n"
                + "\n".join(self.parts) + "\n</body></html>\n")


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


_CSS = ("body{font:16px/2.4 system-ui,sans-serif;margin:2em;background:#fff;color:#111}"
        "h1{font-size:1.3em;line-height:1.4;margin:0}.sub{color:#555;margin:0 0 1em}"
        ".legend{border-bottom:1px solid #ccc;padding-bottom:.5em;margin-bottom:1em}"
        ".key{padding:.1em .5em;margin:0 .2em;border-radius:.3em}"
        ".s{margin:.2em 0}.n{color:#999;font-size:.7em;margin-right:.8em}"
        "mark.chunk{padding:.25em .4em;-webkit-box-decoration-break:clone;box-decoration-break:clone;border-radius:.35em;margin:0 .15em}"
        ".lab{font-size:.6em;font-weight:bold;margin-left:.4em;vertical-align:middle}"
        ".err{color:#a00}.why{margin-left:1em;font-size:.8em}")
