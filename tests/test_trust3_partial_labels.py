"""Outside a chunk scheme a bare ``?`` in ``y`` is ambiguous (issue 43, item 2): POS data
may have a tag ``?`` (sklearn-crfsuite reads it as a label), which was read as "any
label", so that the tag vanished from ``classes_`` and from every prediction.  It is
refused, naming y[i][t], or read literally with ``literal_labels``; under a chunk scheme
``?`` is still any tag."""

from __future__ import annotations

import pytest

from fstchunk.core.errors import InputError
from fstchunk.models.attribute_crf import AttributeCRF
from fstchunk.models.partial_labels import AmbiguousLabel, Literal
from fstchunk.sklearn import CRF

#: a question mark is tagged '?' (a tag set with a tag of its own for it)
X = [[{"w": "who"}, {"w": "ran"}, {"w": "?"}], [{"w": "he"}, {"w": "ran"}, {"w": "."}],
     [{"w": "what"}, {"w": "?"}]]
Y = [["WP", "VBD", "?"], ["PRP", "VBD", "."], ["WP", "?"]]


@pytest.mark.parametrize("scheme", ["auto", None])
@pytest.mark.parametrize("label", ["?", "?~"])
def test_a_question_mark_label_outside_a_chunk_scheme_is_refused(scheme, label):
    y = [[t if t != "?" else label for t in ys] for ys in Y]
    with pytest.raises(AmbiguousLabel, match=r"y\[0\]\[2\]: '\?~?' is ambiguous outside a "
                                             r"chunk scheme: any label, or the label '\?'"):
        CRF(max_iterations=5, scheme=scheme).fit(X, y)
    with pytest.raises(AmbiguousLabel, match=r"y\[0\]\[2\]"):
        AttributeCRF(scheme, max_iter=5).fit(X, y)


@pytest.mark.parametrize("scheme", ["auto", None])
def test_with_literal_labels_the_question_mark_is_a_tag_it_predicts(scheme):
    crf = CRF(max_iterations=50, scheme=scheme, literal_labels=True).fit(X, Y)
    assert crf.classes_ == ["WP", "VBD", "?", "PRP", "."]
    assert [list(p) for p in crf.predict(X)] == Y
    assert crf.score(X, Y) == 1.0
    lit = AttributeCRF(scheme, max_iter=50).fit(X, [[Literal(t) for t in ys] for ys in Y])
    assert lit.tags_ == ("WP", "VBD", "?", "PRP", ".")


def test_only_partial_labels_name_no_label():
    with pytest.raises(InputError, match="name no label"):
        CRF().fit(X, [["?"] * len(x) for x in X])


def test_under_a_chunk_scheme_a_question_mark_is_still_any_tag():
    y = [["B-NP", "O", "?"], ["B-NP", "O", "O"], ["B-NP", "?"]]
    crf = CRF(max_iterations=5).fit(X, y)
    assert crf.scheme_ == "IOB2" and "?" not in crf.classes_
