"""Partial labels in ``y``: the estimator's reading of partial annotation.

:class:`fstchunk.sklearn.CRF` and :class:`.attribute_crf.AttributeCRF` take in ``y``,
for each token, a label (as always) or a *constraint* — the tags the token may take:

* a Python ``set``/``frozenset``/``tuple``/``list`` of labels, each taken literally
  (``{"B-PER", "O"}``; ``{"a|b"}`` is the one label ``a|b``);
* a string in the tag-column syntax of :mod:`fstchunk.io.annotation` (the one parser,
  :func:`~fstchunk.io.annotation.parse_cell`): ``?`` (any tag), ``B-PER|I-PER|O``,
  ``*-PER``, ``B-*``, ``*-*``, ``O!``, and a trailing ``~`` (a run of such labels is
  not exactly one chunk, :mod:`fstchunk.io.not_chunk`).  A string is read so when it is
  ``?`` or ``O!``, holds ``|`` or ``*``, or ends in ``~`` (:func:`is_open`), and is
  not a :class:`Literal`.  Outside a chunk scheme (the unconstrained chain) such a
  string is refused as ambiguous (a wildcard: as needing a chunk scheme): labels there
  have no structure, a morphological tag ``Number=Sing|Person=3`` must not silently
  become two labels, nor a POS tag ``?`` (sklearn-crfsuite's label ``?``) "any label".
  Pass a set for the partial label, or :class:`Literal` (``literal_labels=True`` of
  :class:`fstchunk.sklearn.CRF`) for the one label.

With any constraint in ``y`` training maximises the marginal likelihood
log Z(x) − log Z_A(x) (:mod:`.partial`, the ML statistics' partial form), A(x) the
product of the tokens' allowed sets.  The labels are the tags that ``y`` names (plain
labels, set members, the tags of a column string, in order of first appearance), then
the tags the scheme needs for the chunk types named (``*-PER`` names PER).

``scheme="auto"`` takes the first scheme of :data:`.attribute_crf.DETECT` in which
every named tag is a tag, every column string parses and every sequence allows a
valid tag sequence (:func:`fstchunk.io.annotation.check_mask`); else the unconstrained
chain, where only label sets are partial labels (a column string is refused) — as
with full labels, a sequence that no scheme accepts sends ``auto`` to the
unconstrained chain: force the scheme to get its error, which names ``y[i][t]``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..schemes import encodings as enc
from ..io.annotation import (ANY, STRICT_O, WILD, Item, allows, check_mask, item_types,
                             parse_cell)
from ..io.not_chunk import NOT_CHUNK, exclusion_terms, marked, runs
from ..core.errors import InputError, SchemeError
from ..schemes.tagspace import UNCONSTRAINED, TagSpace, canonical, missing_tags
from .attributes import Fitted, fit_attributes
from .partial import PartialGold

#: the Python containers that hold a token's allowed labels
SETS = (set, frozenset, tuple, list)
NO_LABEL = ("y: the partial labels name no label (only ? and wildcards without a type): "
            "nothing to learn")


class AmbiguousLabel(InputError):
    """A string label of ``y`` that outside a chunk scheme could be one label or a
    partial label (the module doc)."""


class Literal(str):
    """A label of ``y`` read as one label, whatever it holds
    (``Literal("Number=Sing|Person=3")``): never the tag-column syntax."""
    __slots__ = ()


def is_open(label: Any) -> bool:
    """Whether a label of ``y`` is a constraint (module doc), not one label."""
    if isinstance(label, SETS):
        return True
    return (isinstance(label, str) and not isinstance(label, Literal)
            and (label in (ANY, STRICT_O) or "|" in label or WILD in label
                 or marked(label)))


def literal(y: Any) -> Any:
    """``y`` with every string label a :class:`Literal` (sequences as lists; anything
    that is not label sequences is left for the checks to name)."""
    if isinstance(y, (str, bytes, dict)) or not hasattr(y, "__iter__"):
        return y
    return [ys if isinstance(ys, (str, bytes)) or not hasattr(ys, "__iter__") else
            [Literal(x) if isinstance(x, str) else x for x in ys] for ys in y]


def first_open(y: Sequence[Sequence[Any]]) -> tuple[int, int] | None:
    """(i, t) of the first constraint in ``y``, None when every label is one label."""
    if isinstance(y, (str, bytes, dict)) or not hasattr(y, "__iter__"):
        return None                          # not label sequences: the checks say so
    for i, ys in enumerate(y):
        if isinstance(ys, (str, bytes)) or not hasattr(ys, "__iter__"):
            continue
        for t, lab in enumerate(ys):
            if is_open(lab):
                return i, t
    return None


def refuse_open(y: Sequence[Sequence[Any]], what: str, why: str) -> None:
    """InputError naming ``what[i][t]`` of the first constraint in ``y``, if any."""
    at = first_open(y)
    if at is not None:
        i, t = at
        raise InputError(f"{what}[{i}][{t}] = {y[i][t]!r} is a partial label; {why}")


def check_set(label: Any, where: str) -> None:
    """InputError unless a set label holds labels (non-empty strings without white
    space), and at least one."""
    if not label:
        raise InputError(f"{where}: an empty set of labels allows no tag")
    for m in label:
        if not isinstance(m, str) or not m or any(c.isspace() for c in m):
            raise InputError(f"{where}: label {m!r} of the set is not a non-empty string "
                             f"without white space")


def label_items(label: Any, scheme: str, where: str) -> tuple[Item, ...]:
    """The annotation items of one label of ``y`` read in ``scheme``."""
    if isinstance(label, str):
        if scheme == UNCONSTRAINED and is_open(label) and WILD not in label:
            what = ("any label, or the label '?' (a POS tag set may have one)"
                    if label.rstrip(NOT_CHUNK) == ANY else
                    "a partial label in the tag-column syntax, or one label (as "
                    "'Number=Sing|Person=3' is)")       # (a wildcard: parse_cell's error)
            raise AmbiguousLabel(f"{where}: {str(label)!r} is ambiguous outside a chunk scheme: "
                                 f"{what}; pass a set of labels for the partial label, or "
                                 f"the one label as "
                                 f"fstchunk.models.partial_labels.Literal(...) "
                                 f"(fstchunk.sklearn.CRF(literal_labels=True): every string)")
        label = label[:-1] if marked(label) else label
        return parse_cell(label, scheme, where) if is_open(label) else (("tag", str(label)),)
    members = sorted(label) if isinstance(label, (set, frozenset)) else label
    return tuple(("tag", m) for m in dict.fromkeys(members))


def _key(label: Any) -> Any:
    if isinstance(label, Literal):
        return ("literal", str(label))
    return label if isinstance(label, str) else (type(label) in (set, frozenset),
                                                 tuple(label))


def _is_tag(tag: str, scheme: str) -> bool:
    if scheme == UNCONSTRAINED:
        return True
    try:
        enc.tags_to_chunks([tag], scheme, strict=False)
    except (SchemeError, InputError):
        return False
    return True


def annotate(y: Sequence[Sequence[Any]], scheme: str, space: TagSpace | None = None,
             check: bool = True) -> tuple[TagSpace, list[np.ndarray], list | None]:
    """The tag space of ``y`` in ``scheme`` (module doc; ``space``: a fitted model's,
    which must hold every tag and type ``y`` names), each sequence's mask allowed
    (n, L) and, where ``y`` marks spans not one chunk (``?~``), each sequence's
    disjoint product masks (:func:`fstchunk.io.not_chunk.exclusion_terms`; None
    elsewhere), checked by :func:`check_masks` (``check=False``: unchecked, and the
    spans in place of the product masks); errors name ``y[i][t]``."""
    items: dict[Any, tuple[Item, ...]] = {}
    named: dict[str, None] = {}
    types: dict[str, None] = {}
    for i, ys in enumerate(y):
        for t, lab in enumerate(ys):
            where = f"y[{i}][{t}]"
            if isinstance(lab, SETS):
                check_set(lab, where)
            k = _key(lab)
            if k in items:
                continue
            its = items[k] = label_items(lab, scheme, where)
            for kind, v in its:
                tag = v if kind == "tag" else enc.OUTSIDE if kind in ("O", "O!") else None
                if tag is not None:
                    if not _is_tag(tag, scheme):
                        raise SchemeError(f"{where}: {tag!r} is not a tag of {scheme}", t)
                    named[tag] = None
            if scheme != UNCONSTRAINED:
                types.update(dict.fromkeys(sorted(item_types(its))))
    if space is None:
        if not named and not types:
            raise InputError(NO_LABEL)
        labels = list(named)
        if scheme != UNCONSTRAINED:
            labels += [x for x in missing_tags(labels, scheme) if x not in named]
            have = {enc.split_tag(x)[1] for x in labels if x != enc.OUTSIDE}
            extra = [x for x in types if x not in have]
            if extra:
                labels += [x for x in enc.scheme_tags(scheme, extra) if x != enc.OUTSIDE]
        space = TagSpace.of(tuple(labels), scheme)
    else:
        _check_known(y, items, named, types, space)
    rows = {k: np.array([allows(its, tag, None) for tag in space.tags], dtype=bool)
            for k, its in items.items()}
    empty = np.zeros((0, len(space.tags)), bool)
    masks = [np.stack([rows[_key(lab)] for lab in ys]) if len(ys) else empty for ys in y]
    spans = [runs([marked(lab) for lab in ys]) for ys in y]
    return (space, masks, check_masks(space, masks, spans) if check else spans)


def check_masks(space: TagSpace, masks: Sequence[np.ndarray],
                spans: Sequence[tuple[tuple[int, int], ...]]) -> list | None:
    """SchemeError naming ``y[i][t]`` where a sequence's mask allows no valid tag
    sequence (:func:`fstchunk.io.annotation.check_mask`); the product masks of the
    sequences with ``~`` spans (None where none has one)."""
    terms: list = []
    for i, (m, sp) in enumerate(zip(masks, spans)):
        where = (lambda t, i=i: f"y[{i}][{t}]")
        if len(m):
            check_mask(m, space, where)
        terms.append(exclusion_terms(m, sp, space, where) if sp else None)
    return terms if any(t is not None for t in terms) else None


def _check_known(y, items, named, types, space: TagSpace) -> None:
    """SchemeError naming y[i][t] of the first tag or type ``space`` lacks."""
    tags, known = set(space.tags), set(space.types)
    for i, ys in enumerate(y):
        for t, lab in enumerate(ys):
            its = items[_key(lab)]
            bad = [v for k, v in its if k == "tag" and v not in tags] + \
                [x for x in item_types(its) if space.chunked and x not in known]
            if bad:
                raise SchemeError(f"y[{i}][{t}]: {bad[0]!r} is not among the model's labels "
                                  f"{', '.join(space.tags)}", t)


def detect(y: Sequence[Sequence[Any]], schemes: Sequence[str]
           ) -> tuple[TagSpace, list[np.ndarray], list | None]:
    """:func:`annotate` in the first of ``schemes`` that reads ``y``, else in the
    unconstrained chain (module doc); when that cannot read it either (a wildcard),
    the error of the scheme that came closest (a contradiction before a foreign tag)."""
    errors: list[tuple[int, str, Exception]] = []
    if not any(isinstance(lab, SETS) or lab not in (ANY, ANY + NOT_CHUNK)
               for ys in y for lab in ys):
        raise InputError(NO_LABEL)
    for scheme in schemes:
        try:
            space, masks, spans = annotate(y, scheme, check=False)
        except (SchemeError, InputError) as e:
            errors.append((1, scheme, e))
            continue
        try:
            terms = check_masks(space, masks, spans)
        except (SchemeError, InputError) as e:
            errors.append((0, scheme, e))
            continue
        return space, masks, terms
    try:
        return annotate(y, UNCONSTRAINED)
    except AmbiguousLabel:              # no chunk tags: the ambiguity is the whole story
        raise
    except (SchemeError, InputError) as e:
        _, scheme, best = min(errors, key=lambda x: x[0]) if errors else (0, "", e)
        raise SchemeError(f"scheme='auto': no chunk scheme reads the partial labels (in "
                          f"{scheme}: {best}) and the unconstrained chain cannot ({e}); "
                          f"give the scheme", getattr(best, "position", None)) from None


def learning_masks(masks: Sequence[np.ndarray], terms: Sequence | None = None
                   ) -> list[np.ndarray]:
    """The masks the features are counted on: a token that allows every label
    (``?``) stands for none (it would give every attribute every label), as
    :func:`.partial.allowed_pairs`; InputError when no token rules a label out (nor
    a ``~`` span)."""
    out = [m & ~m.all(axis=1, keepdims=True) for m in masks]
    if not any(m.any() for m in out) and not any(t is not None for t in terms or ()):
        raise InputError("y: the partial labels rule out no label anywhere (every token "
                         "allows every label): nothing to learn")
    return out


def check_trainer(y: Sequence[Sequence[Any]], algorithm: str, objective: str) -> bool:
    """Whether ``y`` holds partial labels; InputError naming the option and the first
    partial label's ``y[i][t]`` unless ``algorithm`` is lbfgs and ``objective`` ml (the
    one trainer of the marginal likelihood: L-BFGS, OWL-QN with an L1 term)."""
    at = first_open(y)
    if at is None:
        return False
    bad = (f"algorithm={algorithm!r}" if algorithm != "lbfgs" else
           f"objective={objective!r}" if objective != "ml" else None)
    if bad:
        i, t = at
        raise InputError(f"y[{i}][{t}] = {y[i][t]!r} is a partial label, which only "
                         f"algorithm='lbfgs' with objective='ml' trains (the marginal "
                         f"likelihood); {bad} needs one label per token")
    return True


def fit_partial(X: Sequence[Any], y: Sequence[Sequence[Any]], scheme: str,
                schemes: Sequence[str], min_freq: float, all_possible_states: bool,
                all_possible_transitions: bool) -> tuple[TagSpace, PartialGold, Fitted]:
    """The tag space (``scheme``: "auto" detects among ``schemes``), the gold and
    CRFsuite's features (:func:`.attributes.fit_attributes` over the masks of
    :func:`learning_masks`) of partially labelled training data."""
    space, masks, terms = (detect(y, schemes) if scheme == "auto" else
                           annotate(y, canonical(scheme)))
    fit = fit_attributes(X, learning_masks(masks, terms), len(space.tags), min_freq,
                         all_possible_states, all_possible_transitions)
    return space, PartialGold(masks, space.tags, space.scheme, terms), fit


def gold(y: Sequence[Sequence[Any]], space: TagSpace) -> PartialGold:
    """The partial labels ``y`` over a fitted model's ``space``."""
    masks, terms = annotate(y, space.scheme, space)[1:]
    return PartialGold(masks, space.tags, space.scheme, terms)


def named_labels(masks: Sequence[np.ndarray], tags: Sequence[str]) -> list[str]:
    """The labels partial annotation names, in order of first appearance (``classes_``):
    the tags allowed at the tokens it narrows (a token open to every tag names none);
    if it narrows none, all ``tags``."""
    order: dict[str, None] = {}
    for mask in masks:
        for row in np.asarray(mask, dtype=bool):
            if not row.all():
                order.update(dict.fromkeys(tags[j] for j in np.flatnonzero(row)))
    return list(order) if order else list(tags)
