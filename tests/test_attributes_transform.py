"""AttributeMap.transform reads the common item without building its name:value strings
(a (key, value) table); it must give exactly what reading every item's names gives
(flatten_item, then the name index) — colons in keys and values, nested values, numpy
numbers, unknown attributes — and refuse what flatten_item refuses."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.core.errors import InputError
from fstchunk.models.attributes import AttributeMap, flatten_item

TEXT = st.text(alphabet="ab:c", min_size=0, max_size=4)
VALUE = st.one_of(TEXT, st.floats(-5, 5, allow_nan=False), st.booleans(),
                  st.integers(-3, 3), st.lists(TEXT, max_size=2),
                  st.dictionaries(TEXT, st.one_of(TEXT, st.floats(-2, 2)), max_size=2),
                  st.builds(np.float64, st.floats(-2, 2)))
ITEM = st.one_of(st.dictionaries(TEXT, VALUE, max_size=4), st.lists(TEXT, max_size=3))


def by_names(amap: AttributeMap, X) -> np.ndarray:
    out = np.zeros((sum(map(len, X)), len(amap)))
    row = 0
    for seq in X:
        for item in seq:
            names, values = flatten_item(item)
            for n, v in zip(names, values):
                if n in amap.index:
                    out[row, amap.index[n]] += v
            row += 1
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(ITEM, min_size=1, max_size=3), min_size=1, max_size=3),
       st.lists(st.text(alphabet="ab:c", min_size=0, max_size=6), max_size=12, unique=True))
def test_transform_reads_what_the_names_read(X, names):
    amap = AttributeMap(names)
    np.testing.assert_array_equal(amap.transform(X).toarray(), by_names(amap, X))


def test_colons_in_keys_and_values():
    amap = AttributeMap(["a:b", "a:b:c", "x", "n:1", "k:v", "q", "w:z:", ":", "e:"])
    X = [[{"a": "b", "a:b": "c", "x": 2.5, "n": {"1": 3}, "k": ["v"], "q": True, "w": "z:",
           "": "", "e": "", "zz": np.float64(2)}, {"a:b": 1.0, "x": False}, ["k:v", "q"]]]
    np.testing.assert_array_equal(amap.transform(X).toarray(), by_names(amap, X))
    assert amap.transform(X).toarray()[0].tolist() == [1, 1, 2.5, 3, 1, 1, 1, 1, 1]


@pytest.mark.parametrize("bad", [{"a": math.nan}, {"a": math.inf}, {"a": None}, {1: "x"},
                                 {"a": (1, 2)}, {"a": 10 ** 400}])
def test_what_flatten_item_refuses_is_refused(bad):
    with pytest.raises(InputError, match=r"X\[0\]\[1\]"):
        AttributeMap(["a:x"]).transform([[{"a": "x"}, bad]])
