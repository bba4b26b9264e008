"""The colours of ``decode --format html`` (:mod:`fstchunk.decoding.palette`): fixed per
type, dark text at WCAG AA contrast on every shade, confidence bands and the printed p
that always agree.  Pure Python: runs everywhere, without a browser."""

import os
import random
import string
import subprocess
import sys

import pytest

from fstchunk.decoding.palette import (BANDS, INK, TYPE_COLOURS, band, contrast_ratio,
                                       p_label, shade, type_colour)


def test_shade_deepens_with_p():
    for t in ("PER", "NP", "protein", "unknown-type"):
        light = [sum(shade(t, p)) for p in (0.0, 0.5, 1.0)]
        assert light[0] > light[1] > light[2]


def test_shade_of_any_p_is_a_colour():
    """p outside [0, 1] is clipped, NaN drawn as 0: always a valid RGB, never an error."""
    for p in (-1.0, 2.0, float("nan"), float("inf")):
        rgb = shade("PER", p)
        assert all(isinstance(v, int) and 0 <= v <= 255 for v in rgb)
    assert shade("PER", float("nan")) == shade("PER", 0.0) == shade("PER", -1.0)


def test_contrast_ratio_is_wcag():
    """The formula against WCAG's own figures: 21 for black on white, 1 for a colour on
    itself, and #777 on white just below AA (about 4.48), #767676 just above."""
    assert contrast_ratio((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert contrast_ratio((120, 30, 200), (120, 30, 200)) == pytest.approx(1.0)
    assert 4.4 < contrast_ratio((119, 119, 119), (255, 255, 255)) < 4.5
    assert 4.5 < contrast_ratio((118, 118, 118), (255, 255, 255)) < 4.6


def random_types(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(string.ascii_letters + "_-") for _ in range(rng.randint(1, 12)))
            for _ in range(n)]


#: the types the issue names, each with a colour of its own in the table
TABLE_TYPES = ("PER ORG LOC MISC NP VP PP ADJP ADVP SBAR PRT CONJP INTJ LST UCP protein DNA "
               "RNA cell_line cell_type").split()


def test_every_colour_meets_wcag_aa_at_every_p():
    """Dark text on every type's colour, at every confidence drawn: contrast >= 4.5 (WCAG
    2 AA for normal text), for the table's types and 500 random names."""
    assert set(TABLE_TYPES) <= set(TYPE_COLOURS)
    worst = min((contrast_ratio(INK, shade(t, p)), t, p)
                for t in list(TYPE_COLOURS) + random_types(500) + [""]
                for p in (0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0))
    assert worst[0] >= 4.5, worst


def test_colours_are_fixed_per_type():
    """A type's colour is its own, not its rank of appearance: the table's, or a hash of
    its name that Python's hash seed does not change (another interpreter agrees)."""
    names = random_types(20, seed=1)
    code = ("from fstchunk.decoding.palette import type_colour as c; import sys; "
            f"print([c(t) for t in {names!r}])")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert out.strip() == str([type_colour(t) for t in names])
    assert len({type_colour(t) for t in ("PER", "ORG", "LOC", "MISC")}) == 4
    assert len({type_colour(t) for t in ("protein", "DNA", "RNA", "cell_line",
                                         "cell_type")}) == 5


def test_bands_tell_080_from_095():
    """p = 0.80 and p = 0.95 look different: another border style, another label."""
    assert band(0.80) != band(0.95) and p_label(0.80) != p_label(0.95)
    assert [b[0] for b in BANDS] == sorted((b[0] for b in BANDS), reverse=True)
    assert band(1.0)[1] == "solid" and band(0.0)[1] == "dotted"


@pytest.mark.parametrize("p", [0.895, 0.8999999, 0.9, 0.29, 0.49999, 0.5, 0.0, 1.0, 1.2, -0.1,
                               float("nan")])
def test_label_and_band_agree(p):
    """The printed p and the border never contradict: a chunk labelled 0.90 is solid,
    one of p = 0.895 is labelled 0.89 and dashed (rounding would print 0.90)."""
    shown = float(p_label(p))
    assert band(shown) == band(p)
    assert shown <= max(p, 0.0) or p != p or p > 1
    for least, name, _ in BANDS:
        assert (band(p)[0] == name) == (shown >= least and all(
            shown < hi for hi, _, _ in BANDS if hi > least))
