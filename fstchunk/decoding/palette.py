"""The colours of ``decode --format html`` (:mod:`fstchunk.decoding.display`): a fixed
pastel per chunk type, independent of the input, dark text on it, and the confidence
bands drawn as borders.

A type's colour is HSL(hue, saturation, lightness): hue and saturation from
:data:`TYPE_COLOURS` for the usual types (CoNLL NER, CoNLL-2000 chunks, GENIA) and
from a stable hash of the name (CRC-32, the same on every run and machine, unlike
Python's salted ``hash``) for any other; the lightness falls with the chunk's
probability p, 95% − 20%·p (:func:`shade`), so a surer chunk is a deeper pastel.
Text is :data:`INK` on every shade: the WCAG 2 contrast ratio
(:func:`contrast_ratio`, https://www.w3.org/TR/WCAG21/#dfn-contrast-ratio) stays
above 4.5 (level AA) for every hue and saturation drawn (≥ 6 at p = 1).
"""

from __future__ import annotations

import colorsys
import math
import zlib

#: the text colour on every chunk (and on the page)
INK = (17, 17, 17)

#: (hue in degrees, saturation) of the usual chunk types; NER, chunking and GENIA
#: types each spread over the circle so that types of one corpus differ
TYPE_COLOURS: dict[str, tuple[int, float]] = {
    # CoNLL-2002/2003 named entities
    "PER": (275, 0.75), "ORG": (185, 0.70), "LOC": (30, 0.85), "MISC": (55, 0.80),
    # CoNLL-2000 chunks
    "NP": (210, 0.80), "VP": (125, 0.60), "PP": (35, 0.85), "ADJP": (330, 0.75),
    "ADVP": (60, 0.75), "SBAR": (265, 0.65), "PRT": (170, 0.60), "CONJP": (15, 0.70),
    "INTJ": (0, 0.75), "LST": (0, 0.0), "UCP": (90, 0.60),
    # GENIA
    "protein": (215, 0.80), "DNA": (130, 0.60), "RNA": (30, 0.85),
    "cell_line": (285, 0.70), "cell_type": (340, 0.75),
}

#: the lightness of a chunk's background at p = 0 and the fall to p = 1
LIGHT, FALL = 0.95, 0.20
#: saturation of the types outside the table
HASHED_SATURATION = 0.70

#: the confidence bands, surest first: (least p, name, border style)
BANDS = ((0.9, "sure", "solid"), (0.5, "likely", "dashed"), (0.0, "doubtful", "dotted"))


def type_colour(type_: str) -> tuple[int, float]:
    """(hue, saturation) of a chunk type: :data:`TYPE_COLOURS`, else a hue from the
    CRC-32 of the name (stable across runs and machines)."""
    if type_ in TYPE_COLOURS:
        return TYPE_COLOURS[type_]
    return zlib.crc32(type_.encode("utf-8")) % 360, HASHED_SATURATION


def shade(type_: str, p: float) -> tuple[int, int, int]:
    """The background (RGB) of a chunk of ``type_`` and probability ``p``:
    HSL(hue, saturation, 95% − 20%·p) of :func:`type_colour`, p clipped to [0, 1]
    (NaN drawn as 0)."""
    hue, sat = type_colour(type_)
    light = LIGHT - FALL * (min(max(p, 0.0), 1.0) if p == p else 0.0)    # NaN: as 0
    r, g, b = colorsys.hls_to_rgb(hue / 360.0, light, sat)
    return round(r * 255), round(g * 255), round(b * 255)


def hundredths(p: float) -> int:
    """p in hundredths, rounded down (0 .. 100; NaN is 0): what the page prints
    (:func:`p_label`) and what :func:`band` reads, so that the two always agree."""
    if not p >= 0.0:
        return 0
    return min(100, math.floor(p * 100 + 1e-9))


def p_label(p: float) -> str:
    """p as the page prints it after a chunk's type: two decimals, rounded down
    (0.895 is ``0.89``: below 0.9, as its band says)."""
    h = hundredths(p)
    return f"{h // 100}.{h % 100:02d}"


def band(p: float) -> tuple[str, str]:
    """(name, border style) of the confidence band of ``p`` (:data:`BANDS`), read on
    :func:`hundredths`."""
    h = hundredths(p)
    for least, name, style in BANDS:
        if h >= round(least * 100):
            return name, style
    return BANDS[-1][1:]


def luminance(rgb: tuple[int, int, int]) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0 black .. 1 white)."""
    def lin(v: int) -> float:
        c = v / 255.0
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = map(lin, rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG 2 contrast ratio (L1 + 0.05) / (L2 + 0.05), L1 the lighter: 1 .. 21."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def css_rgb(rgb: tuple[int, int, int]) -> str:
    """``#rrggbb`` of an RGB triple."""
    return "#%02x%02x%02x" % rgb
