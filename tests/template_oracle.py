"""The feature templates as fstchunk wrote them in code before the template files
(commit 00d9ed6, fstchunk/models/features.py): the oracle that the shipped .tpl files
must reproduce attribute for attribute (tests/test_templates.py)."""

from __future__ import annotations

from typing import Sequence

from fstchunk.models.templates import word_shape

_ATOMIC = [("W", -2), ("W", -1), ("W", 0), ("W", 1), ("W", 2),
           ("P", -2), ("P", -1), ("P", 0), ("P", 1), ("P", 2)]
_PURE = [[("W", -2), ("W", -1)], [("W", -1), ("W", 0)], [("W", 0), ("W", 1)],
         [("W", 1), ("W", 2)], [("P", -2), ("P", -1)], [("P", -1), ("P", 0)],
         [("P", 0), ("P", 1)], [("P", 1), ("P", 2)], [("P", -2), ("P", -1), ("P", 0)],
         [("P", -1), ("P", 0), ("P", 1)], [("P", 0), ("P", 1), ("P", 2)]]
_W_TRIGRAMS = [[("W", -2), ("W", -1), ("W", 0)], [("W", -1), ("W", 0), ("W", 1)],
               [("W", 0), ("W", 1), ("W", 2)]]
_MIXED = [[("P", -1), ("W", -1)], [("P", 0), ("W", 0)], [("P", -1), ("P", 0), ("W", -1)],
          [("P", -1), ("P", 0), ("W", 0)], [("P", -1), ("W", -1), ("W", 0)],
          [("P", 0), ("W", -1), ("W", 0)], [("P", -1), ("P", 0), ("P", 1), ("W", 0)]]

_BASE: dict[str, list] = {
    "tmpt1": [[a] for a in _ATOMIC] + _PURE,
    "tmpt2": [[a] for a in _ATOMIC] + _PURE + _W_TRIGRAMS,
    "tmpt3": [[a] for a in _ATOMIC] + _PURE + _MIXED,
    "tmpt4": [[a] for a in _ATOMIC] + _PURE + _W_TRIGRAMS + _MIXED,
}
#: the suffix of a template's POS-free variant
NOPOS = "-nopos"


def _shapes_for_pos(spec: list) -> list:
    return [[("S" if k == "P" else k, o) for k, o in items] for items in spec]


#: every template by name (``None``: the NER template, built by its own function)
TEMPLATES: dict[str, list | None] = {
    **_BASE, **{name + NOPOS: _shapes_for_pos(spec) for name, spec in _BASE.items()},
    "ner": None, "ner" + NOPOS: None,
}


def _check_template(template: str) -> None:
    assert template in TEMPLATES, template


def reads_pos(template: str) -> bool:
    """Whether ``template`` reads a POS column (every template but the ``-nopos`` ones)."""
    _check_template(template)
    return not template.endswith(NOPOS)


def _off(o: int) -> str:
    return f"{o:+d}" if o else "0"


def _name(items) -> str:
    return "".join(f"{k}{_off(o)}" for k, o in items)


def _affixes(w: str) -> list[str]:
    return ([f"pre{k}={w[:k]}" for k in range(1, 5) if len(w) >= k] +
            [f"suf{k}={w[-k:]}" for k in range(1, 5) if len(w) >= k])


def token_features(words: Sequence[str], pos: Sequence[str] | None, template: str
                   ) -> list[list[str]]:
    """Feature strings of every token of one sentence (``pos`` is not read, and may be
    None, for a ``-nopos`` template)."""
    assert not (reads_pos(template) and pos is None)
    n = len(words)
    if template.startswith("ner"):
        return _ner_features(words, pos if reads_pos(template) else None)
    cols = {"W": list(words), "P": list(pos or ()), "S": [word_shape(w) for w in words]}

    def at(kind, i):
        if i < 0:
            return f"__BOS{i}__"
        if i >= n:
            return f"__EOS+{i - n + 1}__"
        return cols[kind][i]

    specs = [(_name(items), items) for items in TEMPLATES[template]]
    affixes = not reads_pos(template)
    out = []
    for i in range(n):
        feats = ["b"]
        for name, items in specs:
            feats.append(name + "=" + "|".join(at(k, i + o) for k, o in items))
        if affixes:
            feats += _affixes(words[i])
        out.append(feats)
    return out


def _ner_features(words: Sequence[str], pos: Sequence[str] | None) -> list[list[str]]:
    n = len(words)
    low = [w.lower() for w in words]
    shp = [word_shape(w) for w in words]

    def at(seq, i, pad="__PAD__"):
        return seq[i] if 0 <= i < n else f"{pad}{i - (n - 1) if i >= n else i}"

    shape_window = (-1, 0, 1) if pos is not None else (-2, -1, 0, 1, 2)
    out = []
    for i in range(n):
        f = ["b"] + [f"w{_off(o)}={at(low, i + o)}" for o in (-2, -1, 0, 1, 2)]
        f += [f"s{_off(o)}={at(shp, i + o)}" for o in shape_window]
        if pos is not None:
            f += [f"p{_off(o)}={at(pos, i + o)}" for o in (-2, -1, 0, 1, 2)]
        f += _affixes(words[i])
        f += ["w0|w+1=" + low[i] + "|" + at(low, i + 1), "w-1|w0=" + at(low, i - 1) + "|" + low[i]]
        if i == 0:
            f.append("first")
        out.append(f)
    return out
