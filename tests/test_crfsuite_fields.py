"""CRFsuite data's attribute fields are read on a fast path when they hold no escape;
every field must read as CRFsuite's own rules (the unescaping reader, _split and
_number) read it, or be refused the same way."""

import io

import pytest
from hypothesis import given, settings, strategies as st

from fstchunk.io.crfsuite.data import _number, _split, iter_data
from fstchunk.core.errors import InputError

FIELD = st.text(alphabet="ab:\\1.e-+", min_size=1, max_size=7).filter(lambda f: f.strip())


def reference(fields):
    items = {}
    for k, f in enumerate(fields, 2):
        name, value = _split(f, f"x:1 (field {k})")
        items[name] = items.get(name, 0.0) + _number(value, f"x:1 (field {k})", name)
    return items


@settings(max_examples=300, deadline=None)
@given(st.lists(FIELD, min_size=1, max_size=4))
def test_fields_read_as_crfsuite_reads_them(fields):
    text = "L\t" + "\t".join(fields) + "\n"
    try:
        want = reference(fields)
    except InputError as e:
        with pytest.raises(InputError) as got:
            list(iter_data(io.StringIO(text)))
        assert str(got.value).split(": ", 1)[1] == str(e).split(": ", 1)[1]
        return
    (seq,) = iter_data(io.StringIO(text))
    assert seq.items == [want]


@pytest.mark.parametrize("field,value", [("w", 1.0), ("w:", 1.0), ("w:2.5", 2.5),
                                         ("a\\:b:3", 3.0), ("a\\\\:4", 4.0), ("x:-1e2", -100.0)])
def test_a_few_fields(field, value):
    (seq,) = iter_data(io.StringIO(f"L\t{field}\n"))
    assert list(seq.items[0].values()) == [value]


@pytest.mark.parametrize("field", ["w:nan", "w:inf", "w:1e400", "w:abc", "a:b:c"])
def test_refused_fields_name_the_line_and_field(field):
    with pytest.raises(InputError, match=r"<input>:1 \(field 2\)|:1 \(field 2\)"):
        list(iter_data(io.StringIO(f"L\t{field}\n")))
