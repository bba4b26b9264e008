"""Wapiti's regular expressions as Wapiti matches them (issue 43, item 6): its ``*`` is
lazy (``rex_matchme`` in Jekub/Wapiti ``src/pattern.c`` tries the rest of the pattern
before each repeat), so ``%m[0,0,"\\d*"]`` is always empty there, while fstchunk's
greedy translation gave the leading digits.  The oracle below is pattern.c's
``rex_match``/``rex_matchme``/``rex_matchit`` ported line by line (returning where the
match ends, rather than counting its length: C's count is not restored after a failed
``?`` branch, which makes Wapiti's ``%m`` copy bytes past the match; fstchunk returns the
match).  Models trained before keep the greedy reading (their files lack
``template_regex``), so that they decode as trained."""

from __future__ import annotations

import random

import pytest

from fstchunk.core.errors import InputError
from fstchunk.io.columns import Columns
from fstchunk.io.conll import Sentence
from fstchunk.models import load_model
from fstchunk.models.crf import CRF
from fstchunk.models.io import load_model_file, save_model
from fstchunk.models.templates import parse_template, wapiti_regex

_CLASSES = {"a": str.isalpha, "d": str.isdigit, "l": str.islower, "p": None,
            "s": None, "u": str.isupper, "w": str.isalnum}
_PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _isclass(c: str, x: str) -> bool:
    """C's isalpha, isdigit, ... of the C locale (ASCII only)."""
    if not x.isascii():
        return False
    if c == "p":
        return x in _PUNCT
    if c == "s":
        return x in " \t\n\v\f\r"
    return _CLASSES[c](x)


def rex_matchit(ch: str, s: str, i: int) -> bool:
    if i >= len(s):                              # str[0] == '\0'
        return False
    if ch[0] == ".":
        return True
    if ch[0] == "\\":
        if ch[1].lower() in _CLASSES:
            hit = _isclass(ch[1].lower(), s[i])
            return not hit if ch[1].isupper() else hit
        return ch[1] == s[i]
    return ch[0] == s[i]


def rex_matchme(rx: str, j: int, s: str, i: int) -> int | None:
    """Where a match of rx[j:] starting at s[i] ends (None: no match)."""
    if j == len(rx):
        return i
    if rx[j] == "$" and j + 1 == len(rx):
        return i if i == len(s) else None
    ch = rx[j:j + 2] if rx[j] == "\\" else rx[j]
    nxt = j + len(ch)
    if rx[j] in "*?":
        raise ValueError("unescaped * or ? in regexp")          # Wapiti's fatal()
    if nxt < len(rx) and rx[nxt] == "*":
        nxt += 1
        k = i
        while True:                              # do { try the rest } while (match one)
            end = rex_matchme(rx, nxt, s, k)
            if end is not None:
                return end
            if not rex_matchit(ch, s, k):
                return None
            k += 1
    if nxt < len(rx) and rx[nxt] == "?":
        nxt += 1
        if rex_matchit(ch, s, i):
            end = rex_matchme(rx, nxt, s, i + 1)
            if end is not None:
                return end
        return rex_matchme(rx, nxt, s, i)
    if rex_matchit(ch, s, i):
        return rex_matchme(rx, nxt, s, i + 1)
    return None


def rex_match(rx: str, s: str) -> tuple[int, int] | None:
    """(start, end) of Wapiti's match of ``rx`` in ``s``, None when there is none."""
    if rx.startswith("^"):
        end = rex_matchme(rx, 1, s, 0)
        return None if end is None else (0, end)
    for pos in range(len(s) + 1):
        end = rex_matchme(rx, 0, s, pos)
        if end is not None:
            return pos, end
    return None


def found(rx: str, s: str) -> tuple[int, int] | None:
    m = wapiti_regex(rx).search(s)
    return None if m is None else m.span()


#: hand-worked from pattern.c: (regex, value, Wapiti's %m)
HAND = [
    (r"\d*", "12ab", ""),          # zero repeats already let the (empty) rest match at 0
    (r"a.*b", "axxbyyb", "axxb"),  # the first b that ends a match, not the last
    (r"x\d*", "ax12", "x"),
    (r"\d*$", "ab12", "12"),       # the anchor makes the repeats happen
    (r"^.?.?", "abc", "ab"),       # ? is greedy: it takes the character first
    (r"\u\l*", "the Big Dog", "B"),
    (r"\u\l*$", "the Big Dog", "Dog"),
    (r"a?b", "aab", "ab"),
    (r"\d$", "a1\n", None),        # $ is the end of the value, not before a final \n
    (r"b*$", "ab", "b"),
    (r"\.", "a.b", "."),
    (r"\*", "a*", "*"),
]


@pytest.mark.parametrize("rx, value, want", HAND)
def test_hand_worked_cases(rx, value, want):
    span = found(rx, value)
    assert span == rex_match(rx, value)
    assert (None if span is None else value[span[0]:span[1]]) == want


def test_random_patterns_match_as_pattern_c_does():
    rng = random.Random(43)
    atoms = ["a", "b", ".", r"\d", r"\D", r"\a", r"\l", r"\u", r"\p", r"\s", r"\w", r"\.",
             r"\*", "1", " "]
    for _ in range(4000):
        rx = "^" if rng.random() < 0.3 else ""
        for _ in range(rng.randint(1, 5)):
            rx += rng.choice(atoms) + rng.choice(["", "", "*", "?"])
        rx += "$" if rng.random() < 0.3 else ""
        value = "".join(rng.choice("ab1A. ,\t") for _ in range(rng.randint(0, 7)))
        assert found(rx, value) == rex_match(rx, value), (rx, value)


@pytest.mark.parametrize("rx", ["*a", "a**", "a*?", "?", "^*a", "a?*"])
def test_a_repeat_of_nothing_is_refused_as_wapiti_refuses_it(rx):
    with pytest.raises(ValueError):
        rex_match(rx, "aaa")
    with pytest.raises(InputError, match="repeats nothing"):
        wapiti_regex(rx)
    with pytest.raises(InputError, match=r"^t\.tpl:1:\d+: .*repeats nothing"):
        parse_template(f'U:m=%m[0,0,"{rx}"]\nB\n', "t.tpl")


TEMPLATE = 'U:m=%m[0,0,"\\d*"]\nU:n=%M[0,0,"\\u\\l*"]\nU:w=%x[0,0]\nB\n'
SENTS = [Sentence([["12ab", "B-X"], ["Big", "I-X"], ["x", "O"]]),
         Sentence([["7", "O"], ["Dog", "B-X"]])]


def test_template_features_follow_wapiti():
    t = parse_template(TEMPLATE, "t.tpl").bind(Columns(0, None, 1), 2)
    assert t.features({"word": ["12ab", "Big"]}) == [["m=", "n=", "w=12ab"],
                                                     ["m=", "n=b", "w=Big"]]


def test_a_model_trained_before_reads_its_template_as_it_was_trained(tmp_path):
    """A model file without ``template_regex`` (trained with the greedy reading) keeps
    it: its feature names are what its decoding computes."""
    tpl = tmp_path / "t.tpl"
    tpl.write_text(TEMPLATE, encoding="utf-8")
    crf = CRF(str(tpl), columns="word,tag", max_iter=3).fit(SENTS, progress=False)
    assert "m=" in crf.fmap_.index and "m=12" not in crf.fmap_.index
    path = tmp_path / "m.npz"
    crf.save(path)
    assert load_model(path).fmap_.spec.flavor == "wapiti"
    meta, arrays = load_model_file(path)
    assert meta["template_regex"] == "wapiti"
    old = {k: v for k, v in meta.items()
           if k not in ("format", "version", "kind", "checksum", "template_regex")}
    save_model(path, "crf", arrays, old)                 # as the code before wrote it
    back = load_model(path)
    assert back.fmap_.spec.flavor == "python"
    feats = back.fmap_.spec.features({"word": ["12ab", "Big"]})
    assert feats[0][0] == "m=12" and feats[1][1] == "n=big"          # greedy, as before
    meta["template_regex"] = "perl"
    save_model(path, "crf", arrays, {k: v for k, v in meta.items()
                                     if k not in ("format", "version", "kind", "checksum")})
    with pytest.raises(Exception, match="field 'template_regex': expected one of wapiti"):
        load_model(path)
