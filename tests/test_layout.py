"""fstchunk.io.layout: a model's training layout, and whether an input has it (issue 32,
item 2); Columns specs that must name every column (item 3); the record in model files,
old files without it."""

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstchunk.io import layout as L
from fstchunk.decoding.batch import decode_sentences
from fstchunk.io.columns import Columns
from fstchunk.schemes.encodings import convert
from fstchunk.io.conll import Sentence, read_conll
from fstchunk.core.errors import InputError, ModelFileError
from fstchunk.io.layout import Arrangement, Layout, Vocabulary
from fstchunk.models import joint as J
from fstchunk.models import load_model
from fstchunk.models.crf import CRF
from fstchunk.models.hmm import HMM

V2 = os.path.join(os.path.dirname(__file__), "data", "v2")


def sentences(rows_list, source="f.txt"):
    out, line = [], 1
    for rows in rows_list:
        out.append(Sentence([list(r) for r in rows], list(range(line, line + len(rows))),
                            source))
        line += len(rows) + 1
    return out


def project(sents, cols):
    return [Sentence([[r[c] for c in cols] for r in s.rows], s.lines, s.source) for s in sents]


# ------------------------------------------------------------------ vocabulary
def test_vocabulary_is_most_frequent_first_capped_and_round_trips(monkeypatch):
    v = Vocabulary.of(["b", "a", "b", "c", "a", "b"])
    assert v.values == ("b", "a", "c") and v.types == 3
    assert v.seen(["a", "x", "b", "y"]) == 0.5 and v.seen([]) == 1.0
    monkeypatch.setattr(L, "MAX_TYPES", 2)
    capped = Vocabulary.of(["b", "a", "b", "c", "a", "b"])
    assert capped.values == ("b", "a") and capped.types == 3
    def again(v: Vocabulary, types: int) -> Vocabulary:
        return Vocabulary.from_arrays("v", v.to_arrays("v"), types)
    assert again(capped, capped.types) == capped
    assert again(Vocabulary.of([]), 0).values == ()
    spaced = Vocabulary.of(["10\u00a0000", "New York"])         # U+00A0; a tab file's token
    assert again(spaced, 2) == spaced
    for blob, types, match in [(np.frombuffer(b"a\na", np.uint8), 2, "distinct"),
                               (np.frombuffer(b"a\n\nb", np.uint8), 3, "non-empty"),
                               (np.frombuffer(b"\xff", np.uint8), 1, "not UTF-8"),
                               (np.frombuffer(b"a\nb", np.uint8), 1, "types must be"),
                               (np.frombuffer(b"a", np.uint8), True, "types must be"),
                               (np.array(26027071470), 1, "1-d uint8 array"),   # not bytes(n)
                               (np.array([97], np.int64), 1, "1-d uint8 array")]:
        with pytest.raises(InputError, match="^v: .*" + match):
            Vocabulary.from_arrays("v", {"v": blob}, types)


# ------------------------------------------------------------------ layouts
ROWS = [[("The", "DT", "x", "B-NP"), ("dog", "NN", "y", "I-NP"), ("barks", "VBZ", "z", "B-VP")],
        [("A", "DT", "x", "B-NP"), ("cat", "NN", "y", "I-NP")]]


@pytest.mark.parametrize("cols, pos, held", [
    (Columns(0, 1, 3), "feature", ("word", "pos", "_", "tag")),
    (Columns(0, 1, 3), "unread", ("word", "_", "_", "tag")),
    (Columns(0, 1, 3), "gold", ("word", "pos", "_", "tag")),
    (Columns(2, None, 0), "feature", ("tag", "_", "word", "_")),
    (Columns(3, 1, None), "feature", ("_", "pos", "_", "word")),
])
def test_layout_of_training_sentences_round_trips(cols, pos, held):
    lay = Layout.of(sentences(ROWS), cols, "IOBES", pos)
    assert lay.held == held and lay.width == 4 and lay.data_scheme == "IOBES"
    assert set(lay.vocab) == {"word"} | ({"pos"} if pos == "feature" and cols.pos else set())
    assert lay.vocab["word"].values[0] in ("The", "A", "DT", "B-NP", "x")
    back = Layout.from_json(json.loads(json.dumps(lay.to_json())), lay.arrays())
    assert back == lay
    assert lay.spec() == ",".join(held)


@pytest.mark.parametrize("record, arrays, match", [
    ({"width": 2, "held": ["word", "tag"], "data_scheme": None}, {}, "keys"),
    ({"width": 2, "held": ["word", "tag", "_"], "data_scheme": None, "types": {"word": 1}},
     {"layout_word": np.frombuffer(b"a", np.uint8)}, "roles"),
    ({"width": 2, "held": ["word", "word"], "data_scheme": None, "types": {"word": 1}},
     {"layout_word": np.frombuffer(b"a", np.uint8)}, "one word column"),
    ({"width": 2, "held": ["word", "color"], "data_scheme": None, "types": {"word": 1}},
     {"layout_word": np.frombuffer(b"a", np.uint8)}, "unknown role"),
    ({"width": 2, "held": ["word", "tag"], "data_scheme": None, "types": {"word": 1}},
     {}, "layout_word missing"),
    ({"width": 2, "held": ["word", "tag"], "data_scheme": 3, "types": {"word": 1}},
     {"layout_word": np.frombuffer(b"a", np.uint8)}, "data_scheme"),
    ({"width": 2, "held": ["word", "tag"], "data_scheme": None, "types": {"word": 1,
                                                                         "pos": 1}},
     {"layout_word": np.frombuffer(b"a", np.uint8),
      "layout_pos": np.frombuffer(b"a", np.uint8)}, "vocabularies"),
])
def test_layout_records_that_are_not_layouts_are_refused(record, arrays, match):
    with pytest.raises(InputError, match=match):
        Layout.from_json(record, arrays)


def test_source_is_the_training_columns_or_those_without_the_tag_column():
    lay = Layout.of(sentences(ROWS), Columns(1, 3, 2), "IOB2")      # _,word,tag,pos
    assert lay.source(4) == Columns(1, 3, 2)
    assert lay.source(3) == Columns(1, 2, None)                      # pos moved left
    assert lay.source(2) is None and lay.source(5) is None
    notag = Layout.of(sentences(ROWS), Columns(0, 1, None), None)
    assert notag.source(4) == Columns(0, 1, None) and notag.source(3) is None
    assert lay.describe() == "4 columns (_,word,tag,pos) or 3 without the tag column"
    assert Layout.of(sentences(ROWS), Columns(0, 1, 3), None).suggest(5) == "word,pos,_,_,tag"
    assert Layout.of(sentences(ROWS), Columns(0, 1, 3), None).suggest(2) == "word,pos"


# ------------------------------------------------------------------ real data
def head_of(path, cols):
    return project(read_conll(path)[:200], cols)


@pytest.fixture(scope="module")
def conll(corpus):
    train = read_conll(corpus("conll2000", "train.txt"))
    return {"wpt": Layout.of(train, Columns(0, 1, 2), "IOB2"),
            "wt": Layout.of(project(train, (0, 2)), Columns(0, None, 1), "IOB2"),
            "test": corpus("conll2000", "test.txt")}


def test_real_test_files_pass_and_their_wrong_columns_fail(conll, corpus):
    """The thresholds on real data: CoNLL-2000 test and Dutch testa look like their
    training files; a word/tag file under a word/POS/tag model, swapped columns, words
    as POS or a Dutch file under the English model do not."""
    wpt, wt, test = conll["wpt"], conll["wt"], conll["test"]
    assert wpt.mismatch(head_of(test, (0, 1, 2)), Columns(0, 1, 2)) is None
    assert wpt.mismatch(head_of(test, (0, 1)), Columns(0, 1, None)) is None
    assert wt.mismatch(head_of(test, (0, 2)), Columns(0, None, 1)) is None
    # the case: a word/tag file read with the word/POS/tag model
    role, why = wpt.mismatch(head_of(test, (0, 2)), Columns(0, 1, None))
    assert role == "pos" and why.startswith("column 2 holds 'I-NP', 'B-NP', 'O', ... "
                                            "(chunk tags), but the model read POS tags "
                                            "there in training ('NN', 'IN', 'NNP', ...)")
    role, why = wpt.mismatch(head_of(test, (1, 0, 2)), Columns(0, 1, 2))     # pos,word,tag
    assert role == "pos" and "(words)" in why
    role, why = wpt.mismatch(head_of(test, (1, 1, 2)), Columns(0, 1, 2))     # POS as words
    assert role == "word" and "(POS tags)" in why and "the model read words" in why
    role, why = wt.mismatch(head_of(test, (2, 2)), Columns(0, None, 1))      # chunk tags
    assert role == "word" and "(chunk tags)" in why
    ned = corpus("conll2002", "ned.train")
    nl = Layout.of(read_conll(ned), Columns(0, 1, 2), "IOB2")
    assert nl.mismatch(head_of(corpus("conll2002", "ned.testa"), (0, 1, 2)),
                       Columns(0, 1, 2)) is None
    role, why = wpt.mismatch(head_of(corpus("conll2002", "ned.testa"), (0, 1, 2)),
                             Columns(0, 1, 2))
    assert role == "pos" and "'N', " in why and "but the model read POS tags" in why


def test_another_language_in_a_word_only_model_is_no_layout_error(conll, corpus):
    """Dutch words under an English word/tag model: few seen (0.33), but not a tag set,
    so the column is words: a domain question, not a layout one."""
    dutch = head_of(corpus("conll2002", "ned.testa"), (0, 2))
    assert conll["wt"].mismatch(dutch, Columns(0, None, 1)) is None


def test_tag_sets_are_tag_like_and_words_are_not(conll):
    sents = read_conll(conll["test"])[:200]
    words = [r[0] for s in sents for r in s.rows][:L.HEAD_TOKENS]
    pos = [r[1] for s in sents for r in s.rows][:L.HEAD_TOKENS]
    assert not L.tag_like(words) and L.tag_like(pos) and not L.tag_like(pos[:100])


# ------------------------------------------------------------------ properties
roles = st.lists(st.sampled_from(["word", "pos", "tag", "_"]), min_size=1, max_size=5).filter(
    lambda r: r.count("word") == 1 and r.count("pos") <= 1 and r.count("tag") <= 1)
tokens = st.text(alphabet="abcXYZ-.", min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(roles, st.lists(st.lists(st.lists(tokens, min_size=5, max_size=5), min_size=1,
                                max_size=4), min_size=1, max_size=3))
def test_any_layout_passes_its_own_file_and_its_tagless_variant(held, raw):
    """The training file itself, and the same file without its tag column, pass the
    check; the source columns of the tag-less file hold the training values; the
    arrangement moves them back to the training positions."""
    width = len(held)
    sents = sentences([[row[:width] for row in s] for s in raw])
    at = {r: held.index(r) for r in ("word", "pos", "tag") if r in held}
    cols = Columns(at["word"], at.get("pos"), at.get("tag"))
    lay = Layout.of(sents, cols, "IOB2")
    assert Layout.from_json(lay.to_json(), lay.arrays()) == lay
    assert lay.source(width) == cols and lay.mismatch(sents, cols) is None
    if cols.tag is None:
        assert lay.source(width - 1) is None
        return
    keep = [j for j in range(width) if j != cols.tag]
    tagless = project(sents, keep)
    src = lay.source(width - 1)
    assert src is not None and lay.mismatch(tagless, src) is None
    moved = Arrangement(src, cols)
    for a, b in zip(sents, map(moved, tagless)):
        assert [r[cols.word] for r in a.rows] == [r[cols.word] for r in b.rows]
        if cols.pos is not None:
            assert [r[cols.pos] for r in a.rows] == [r[cols.pos] for r in b.rows]


# ------------------------------------------------------------------ --columns
@pytest.mark.parametrize("spec, ncols, suggestion", [
    ("word,pos,tag", 4, "word,pos,_,tag"), ("word,tag", 3, "word,_,tag"),
    ("word,pos", 3, "word,pos,_"), ("_,word,pos,tag", 5, "_,word,pos,_,tag"),
    ("word,pos,_", 4, "word,pos,_,_"),
])
def test_a_spec_of_names_must_name_every_column(spec, ncols, suggestion):
    """Issue 32, item 3: word,pos,tag on a four-column file would take the tag from the
    third column; refused, naming the count and a complete spec, which resolves."""
    cols = Columns.parse(spec)
    for need_tag in (True, False):
        with pytest.raises(InputError) as e:
            cols.resolve(ncols, "x.txt:1", need_tag=need_tag)
        assert str(e.value) == (f"--columns {spec} names {len(spec.split(','))} of the "
                                f"{ncols} columns of x.txt:1; name each, with _ for one not "
                                f"read: e.g. {suggestion}")
    fixed = Columns.parse(suggestion).resolve(ncols, "x.txt:1", need_tag=False)
    assert (fixed.word, fixed.pos) == (cols.word, cols.pos)


def test_explicit_and_default_specs_are_not_checked_for_completeness():
    assert Columns.parse("word=0,pos=1,tag=3").resolve(5, "x:1") == Columns(0, 1, 3)
    assert Columns().resolve(5, "x:1") == Columns(0, 1, 4)
    assert Columns.parse("word,pos,tag").resolve(2, "x:1", need_tag=False) == \
        Columns(0, 1, None)                                # fewer: a file without gold
    assert Columns.parse("word,pos,_").spec() == "word,pos,_"


# ------------------------------------------------------------------ models
TRAIN = sentences([[("The", "DT", "B-NP"), ("dog", "NN", "I-NP"), ("barks", "VBZ", "B-VP")],
                   [("A", "DT", "B-NP"), ("cat", "NN", "I-NP"), ("sleeps", "VBZ", "B-VP")]])


@pytest.mark.parametrize("columns, template", [(None, "tmpt1"), ("word,tag", "tmpt1"),
                                               (None, "tmpt1-nopos")])
def test_crf_records_its_layout_and_data_scheme(tmp_path, columns, template):
    cols = Columns.parse(columns) if columns else None
    sents = project(TRAIN, (0, 2)) if columns else TRAIN
    crf = CRF(template, "IOBES", data_scheme="IOB2", columns=cols)
    crf._prepare(sents)
    want = ("word", "tag") if columns else ("word", "pos" if template == "tmpt1" else "_",
                                            "tag")
    assert crf.layout_.held == want and crf.data_scheme_ == "IOB2"
    assert set(crf.layout_.vocab) == ({"word", "pos"} if "pos" in want else {"word"})
    assert crf.settings_["min_count"] == 1
    crf.save(tmp_path / "m.npz")
    back = CRF.load(tmp_path / "m.npz")
    assert back.layout_ == crf.layout_ and back.data_scheme_ == "IOB2"


def test_hmm_and_joint_record_their_layouts(tmp_path):
    iobes = [Sentence([r[:2] + [t] for r, t in zip(s.rows, convert(s.column(2), "IOB2",
                                                                   "IOBES"))], s.lines)
             for s in TRAIN]
    hmm = HMM(min_count=1, data_scheme="IOBES").fit(iobes)
    assert hmm.layout_.held == ("word", "pos", "tag") and hmm.data_scheme_ == "IOBES"
    hmm.save(tmp_path / "h.npz")
    back = load_model(tmp_path / "h.npz")
    assert back.layout_ == hmm.layout_ and back.data_scheme_ == "IOBES"
    jm, enc = J.model_for(J.layered(TRAIN), "joint", {})
    jm.layout_ = Layout.of(TRAIN, Columns(0, 1, 2), "IOB2", "gold")
    jm.set_params(algorithm="perceptron", max_iter=1).fit(enc, progress=False)
    jm.save(tmp_path / "j.npz")
    back = load_model(tmp_path / "j.npz")
    assert back.layout_ == jm.layout_ and back.data_scheme_ == "IOB2"
    assert set(back.layout_.vocab) == {"word"}          # its POS is an output, not checked


@pytest.fixture(scope="module")
def v2():
    with open(os.path.join(V2, "expected.json"), encoding="utf-8") as fh:
        ref = json.load(fh)
    ref["sentences"] = sentences(ref["train"])
    return ref


@pytest.mark.parametrize("name", ["hmm", "crf", "crf-wordtag"])
@pytest.mark.parametrize("decoder", ["map", "meu"])
def test_files_without_a_layout_load_and_decode_as_before(v2, name, decoder):
    """Model files written before the record (fstchunk at 2857aae: tests/data/v2) load
    with no layout and no data scheme, and decode exactly as they did."""
    model = load_model(os.path.join(V2, f"{name}.npz"))
    assert model.layout_ is None and model.data_scheme_ is None
    sents = v2["sentences"] if name != "crf-wordtag" else project(v2["sentences"], (0, 2))
    assert decode_sentences(model, sents, decoder, 1.0) == v2["expect"][f"{name}-{decoder}"]


def test_joint_file_without_a_layout_decodes_as_before(v2):
    model = load_model(os.path.join(V2, "joint.npz"))
    assert model.layout_ is None and model.data_scheme_ is None
    _, chunks = J.predict(model, J.layered(v2["sentences"]), "map", 1.0)
    assert chunks == v2["expect"]["joint-map"]


def test_layout_edits_are_caught(tmp_path):
    """The layout field is in the checksum; its arrays' contents are validated."""
    crf = CRF("tmpt1")
    crf._prepare(TRAIN)
    p = tmp_path / "m.npz"
    crf.save(p)
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["__metadata__"]))
    meta["layout"]["held"] = ["word", "tag", "pos"]
    np.savez(p, **{**arrays, "__metadata__": np.array(json.dumps(meta))})
    with pytest.raises(ModelFileError, match=r"field\(s\) 'layout' do not match the checksum"):
        CRF.load(p)
    n = len(arrays["layout_pos"])                  # same shape: only the contents change
    arrays["layout_pos"] = np.frombuffer(b"NN\nNN\n" + b"X" * (n - 6), np.uint8)
    np.savez(p, **arrays)
    with pytest.raises(ModelFileError, match=r"m.npz: field 'layout': layout_pos: not a list "
                                             r"of distinct non-empty values"):
        CRF.load(p)


def test_a_handful_of_new_words_is_not_a_layout_fault():
    """Below WORD_MIN_TOKENS tokens a share of seen words says nothing (one new word of
    two is 50%): the word column passes unless every value is a chunk tag."""
    vocab = Vocabulary.of(["the", "cat", "sat"])
    assert L.looks_like("word", ["{", "x"], vocab)
    assert not L.looks_like("word", ["B-NP", "I-NP", "O"], vocab)
    many = [f"w{i}" for i in range(L.WORD_MIN_TOKENS)]
    assert not L.looks_like("word", many, vocab)            # 20 unseen words: a share
