"""Wapiti's regular expressions (Jekub/Wapiti ``src/pattern.c``) as Python patterns
that match what Wapiti's matcher matches, for the ``%t`` and ``%m`` commands of
template files (:mod:`.templates`)."""

from __future__ import annotations

import functools
import re

from ..core.errors import InputError

#: the classes of pattern.c's rex_matchit: C's isdigit, isalpha, ... (ASCII)
_WAPITI_CLASSES = {"d": "0-9", "a": "A-Za-z", "w": "A-Za-z0-9", "l": "a-z", "u": "A-Z",
                   "p": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), "s": " \\t\\n\\r\\f\\v"}


#: how a model reads its template's regular expressions: ``wapiti``, Wapiti's matcher
#: (``*`` lazy, ``$`` the end of the value); ``python``, the first translation, which
#: models trained before it record by having no ``template_regex`` field (``*``
#: greedy, ``$`` also before a final line break), kept so that they decode as trained
REGEX_FLAVORS = ("wapiti", "python")


@functools.lru_cache(maxsize=None)
def wapiti_regex(rx: str, flavor: str = "wapiti") -> re.Pattern:
    """Wapiti's regex subset (``pattern.c``, ``rex_match``) as a Python pattern that
    finds what Wapiti's backtracking matcher finds: the leftmost match, ``*`` lazy (as
    few repeats as let the rest match), ``?`` greedy; ``.``, ``^`` (at the start),
    ``$`` (at the end: the end of the value), ``\\d \\a \\w \\l \\u \\p \\s`` (ASCII
    classes as C's; upper case: the complement), ``\\x`` any other escaped character,
    the rest literal.  A ``*`` or ``?`` that repeats nothing (first, after ``^`` or
    after another ``*``/``?``) is one InputError, as Wapiti refuses it.  ``flavor``
    ``python``: the translation of models trained before (:data:`REGEX_FLAVORS`)."""
    out, i, atom = [], 0, False          # atom: whether the last item may be repeated
    while i < len(rx):
        c = rx[i]
        if c == "\\" and i + 1 < len(rx):
            d = rx[i + 1]
            if d.lower() in _WAPITI_CLASSES:
                out.append(("[^" if d.isupper() else "[") + _WAPITI_CLASSES[d.lower()] + "]")
            else:
                out.append(re.escape(d))
            i, atom = i + 2, True
            continue
        if c in "*?":
            if not atom:
                raise InputError(f"{c!r} at character {i + 1} of {rx!r} repeats nothing "
                                 f"(Wapiti refuses it; \\{c} is the character {c})")
            out.append("*?" if c == "*" and flavor == "wapiti" else c)
            atom = False
        elif c == "^" and i == 0:
            out.append(c)
        elif c == "$" and i == len(rx) - 1:
            out.append("\\Z" if flavor == "wapiti" else c)
        else:
            out.append("." if c == "." else re.escape(c))
            atom = True
        i += 1
    return re.compile("".join(out), re.DOTALL)
