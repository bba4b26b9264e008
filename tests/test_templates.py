"""Template files (fstchunk/models/templates.py): the shipped .tpl files against the
templates as fstchunk wrote them in code (tests/template_oracle.py, the code of commit
00d9ed6), the CRF++/Wapiti syntax against hand-written features, the errors naming
file:line:column, and template files through the CRF, its model file and the CLI."""

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import template_oracle as oracle
from fstchunk.io.columns import Columns
from fstchunk.io.conll import Sentence, read_conll
from fstchunk.core.errors import InputError, ModelFileError
from fstchunk.models.crf import CRF
from fstchunk.models.features import TEMPLATES, FeatureMap, template_of, token_features
from fstchunk.models.templates import parse_template, read_template, wapiti_regex

DATA = os.environ.get("FSTCHUNK_DATA", "/work/shared/data")
needs_data = pytest.mark.skipif(not os.path.isdir(DATA), reason="FSTCHUNK_DATA not found")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _real(name: str, n: int) -> list[Sentence]:
    return read_conll(os.path.join(DATA, name))[:n]


def _oracle_matrix(sentences, template, names):
    index = {f: i for i, f in enumerate(names)}
    rows = []
    for s in sentences:
        pos = s.column(1) if oracle.reads_pos(template) else None
        rows += [sorted({index[f] for f in fs if f in index})
                 for fs in oracle.token_features(s.column(0), pos, template)]
    indptr = np.cumsum([0] + [len(r) for r in rows])
    return sp.csr_matrix((np.ones(indptr[-1]), np.concatenate(rows or [[]]).astype(int),
                          indptr), shape=(len(rows), len(names)))


@needs_data
@pytest.mark.parametrize("corpus", ["conll2000/train.txt", "conll2002/ned.train"])
@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_builtin_files_give_the_feature_matrix_of_the_code_before(corpus, template):
    """Every built-in .tpl file writes the attribute strings, in the same order, that
    the code before the template files wrote, on real sentences; so FeatureMap.fit
    learns the same names and transform the same matrix (models trained before keep
    their meaning)."""
    sents = _real(corpus, 150)
    for s in sents:
        pos = s.column(1)
        want = oracle.token_features(s.column(0), pos, template)
        assert token_features(s.column(0), pos, template) == want, (template, s.where(0))
    fm = FeatureMap.fit(sents, template, word_col=0, pos_col=1)
    names = sorted({f for s in sents for fs in oracle.token_features(
        s.column(0), s.column(1) if oracle.reads_pos(template) else None, template)
        for f in fs})
    assert fm.names == names
    assert (fm.transform(sents) != _oracle_matrix(sents, template, names)).nnz == 0


_WORD = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Zs", "Cc")),
                min_size=1, max_size=7)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_WORD, st.sampled_from(["NN", "VB", "DT", ","])), min_size=1,
                max_size=7), st.sampled_from(sorted(TEMPLATES)))
def test_builtin_files_equal_the_code_before_on_any_sentence(tokens, template):
    words, pos = [w for w, _ in tokens], [p for _, p in tokens]
    assert token_features(words, pos, template) == oracle.token_features(words, pos, template)


HAND = """# CRF++'s own example template (crfpp example/chunking/template), and extensions
U00:%x[-2,0]
U01:%x[-1,0]
U05:%x[-1,0]/%x[0,0]
U10:%x[0,1]/%x[1,1]

U:t=%t[0,0,"^\\u"]
U:m=%M[0,0,"\\d*$"]
U:abs=%x[@1,0]|%x[@-1, 0]|%x[@9,0]
U:f=%x[0,word:lower:suf2]|%x[0,pos:lower]
U:c=%x[0,word:cap]|%x[0,word:shape]
U:first%x[-1,word:out]
B
"""


def test_crfpp_and_wapiti_syntax_against_hand_written_features():
    t = parse_template(HAND, "hand.tpl").bind(Columns(0, 1, 2), 3)
    f = t.features({"word": ["He", "Reckons", "A1"], "pos": ["PRP", "VBZ", "DT"]})
    assert f[0] == ["U00:_B-2", "U01:_B-1", "U05:_B-1/He", "U10:PRP/VBZ", "t=true",
                    "m=", "abs=He|A1|_B+6", "f=he|prp", "c=CAPITAL|Xx", "first"]
    assert f[1] == ["U00:_B-1", "U01:He", "U05:He/Reckons", "U10:VBZ/DT", "t=true", "m=",
                    "abs=He|A1|_B+6", "f=ns|vbz", "c=CAPITAL|Xx"]
    assert f[2] == ["U00:He", "U01:Reckons", "U05:Reckons/A1", "U10:DT/_B+1", "t=true",
                    "m=1", "abs=He|A1|_B+6", "f=a1|dt", "c=NUMBER|Xd"]
    # suf2 of a one-letter word is undefined: the attribute is not written
    g = t.features({"word": ["x"], "pos": ["NN"]})[0]
    assert not any(a.startswith("f=") for a in g) and "first" in g


def test_padding_directive_and_rows_beyond_the_window():
    t = parse_template("%pad <{}> <+{}>\nU:a=%x[-3,0]|%x[3,0]\nB\n", "p.tpl").bind(
        Columns(0, None, 1))
    assert t.features({"word": ["a", "b"]}) == [["a=<-3>|<+2>"], ["a=<-2>|<+3>"]]


@pytest.mark.parametrize("rx,hits,misses", [
    (r"^\u", ["Ab", "A"], ["aB", ""]), (r"\d$", ["a1"], ["1a"]), (r"^.?.?$", ["", "ab"], ["abc"]),
    (r"\p", ["a.b"], ["ab"]), (r"^\L*$", ["AB1"], ["aB"]), (r"a\*", ["a*"], ["aa"]),
    (r"x(y", ["x(y"], ["xy"])])
def test_wapiti_regex_subset(rx, hits, misses):
    p = wapiti_regex(rx)
    assert all(p.search(s) for s in hits) and not any(p.search(s) for s in misses)


@pytest.mark.parametrize("text,where,what", [
    ("U00:%x[0,0]\nU01:%x[a,0]\nB\n", "t.tpl:2:5", "needs \\[ROW,COLUMN\\]"),
    ("U00:%x[0,9x]\nB\n", "t.tpl:1:11", "not closed"),
    ("U00:%x[0,0:upper]\nB\n", "t.tpl:1:12", "unknown function 'upper'"),
    ("U00:%x[0,lemma]\nB\n", "t.tpl:1:10", "unknown column 'lemma'"),
    ("U00:%x[0,0\nB\n", "t.tpl:1:11", "not closed"),
    ("U00:%t[0,0]\nB\n", "t.tpl:1:11", "quoted regular expression"),
    ("U00:%x[@0,0]\nB\n", "t.tpl:1:5", "@0"),
    ("U00:%x[0,0]\nB01:%x[-1,0]\n", "t.tpl:2:5", "bigram template with observation"),
    ("*:p=%x[0,1]\n", "t.tpl:1:5", "observation context.*and a bare B"),
    ("X00:%x[0,0]\nB\n", "t.tpl:1:1", "starts with U"),
    ("%pad _B _E\nU:%x[0,0]\nB\n", "t.tpl:1:1", "%pad BEFORE AFTER"),
    ("U00:%x[0,0]\n", "t.tpl", "no B line"),
    ("# nothing\nB\n", "t.tpl", "no U line")])
def test_template_errors_name_file_line_and_column(text, where, what):
    with pytest.raises(InputError, match=f"^{where}: .*{what}"):
        parse_template(text, "t.tpl")


def test_binding_refuses_columns_the_data_lacks_or_must_not_be_read():
    t = parse_template("U:a=%x[0,0]\nU:b=%x[1,3]\nB\n", "c.tpl")
    with pytest.raises(InputError, match=r"c.tpl:2:5: reads column 3 .*f.txt:1 has 3 columns"):
        t.bind(Columns(0, 1, 2), 3, "f.txt:1")
    with pytest.raises(InputError, match=r"c.tpl:2:5: .*the gold tag column"):
        t.bind(Columns(0, 1, 3), 4, "f.txt:1")
    with pytest.raises(InputError, match=r"c.tpl:2:5: .*--columns word,pos,_,_,tag does not"):
        t.bind(Columns(0, 1, 4), 5, "f.txt:1")
    with pytest.raises(InputError, match=r"p.tpl:1:5: reads the POS column, but --columns "
                                         r"word,tag has none"):
        parse_template("U:a=%x[0,pos]\nB\n", "p.tpl").bind(Columns(0, None, 1), 2)
    bound = t.bind(Columns(3, 0, 4), 5)          # column 3 is the word, 0 the POS
    assert bound.features({"word": ["w"], "pos": ["P"]}) == [["a=P", "b=_B+1"]]


def _train_set():
    return [Sentence([["He", "PRP", "B-NP"], ["reckons", "VBZ", "B-VP"],
                      ["the", "DT", "B-NP"], ["deficit", "NN", "I-NP"]], [1, 2, 3, 4], "t"),
            Sentence([["It", "PRP", "B-NP"], ["rose", "VBD", "B-VP"]], [6, 7], "t")]


def test_a_model_keeps_its_template_file_whole(tmp_path):
    """A template file's text goes into the model file (checked by its checksum), so
    the model decodes the same after the file is gone; a damaged text is refused
    naming the field."""
    path = tmp_path / "my.tpl"
    path.write_text("U00:%x[0,0]\nU01:%x[-1,1]/%x[0,0:lower]\nB\n")
    crf = CRF(str(path), "IOB2", max_iter=5).fit(_train_set())
    assert "U01:PRP/reckons" in crf.fmap_.names
    crf.save(tmp_path / "m.npz")
    path.unlink()
    back = CRF.load(tmp_path / "m.npz")
    assert back.fmap_.template == str(path) and back.fmap_.names == crf.fmap_.names
    a, b = crf.lattices(_train_set()), back.lattices(_train_set())
    assert all(np.allclose(x.marginals(), y.marginals()) for x, y in zip(a, b))
    import json
    with np.load(tmp_path / "m.npz") as z:
        arrays = dict(z)
    meta = json.loads(str(arrays["__metadata__"]))
    assert meta["template_source"] == "U00:%x[0,0]\nU01:%x[-1,1]/%x[0,0:lower]\nB\n"
    meta["template_source"] = "U00:%x[0,0]\n"                    # no B: damaged
    arrays["__metadata__"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ModelFileError, match="bad.npz"):
        CRF.load(tmp_path / "bad.npz")
    builtin = CRF("tmpt1", "IOB2", max_iter=2).fit(_train_set())
    builtin.save(tmp_path / "b.npz")
    with np.load(tmp_path / "b.npz") as z:
        assert "template_source" not in json.loads(str(z["__metadata__"]))


def _cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "fstchunk", *args], capture_output=True,
                          text=True, env=env, cwd=cwd)


def test_cli_trains_with_a_template_file_and_names_a_bad_one(tmp_path):
    data = tmp_path / "train.txt"
    data.write_text("He PRP B-NP\nreckons VBZ B-VP\nthe DT B-NP\ndeficit NN I-NP\n\n"
                    "It PRP B-NP\nrose VBD B-VP\n")
    tpl = tmp_path / "my.tpl"
    tpl.write_text("U00:%x[0,0]\nU01:%x[0,1]/%x[1,1]\nB\n")
    r = _cli("train", "--train", str(data), "--features", str(tpl), "-o",
             str(tmp_path / "m.npz"), "--max-iter", "3", "--quiet")
    assert r.returncode == 0, r.stderr
    r = _cli("decode", "--model", str(tmp_path / "m.npz"), "--input", str(data))
    assert r.returncode == 0 and r.stdout.splitlines()[0].split()[-1] in ("B-NP", "B-VP", "O")
    r = _cli("decode", "--model", str(tmp_path / "m.npz"), "--input", str(data),
             "--decoder", "meu", "--format", "jsonl")
    assert r.returncode == 0 and '"chunks"' in r.stdout.splitlines()[0], r.stderr
    tpl.write_text("U00:%x[0,0]\nU01:%x[0,2]\nB\n")                   # reads the gold tags
    r = _cli("train", "--train", str(data), "--features", str(tpl), "-o",
             str(tmp_path / "n.npz"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{tpl}:2:5: reads column 2 (0-based), the gold tag column" in r.stderr
    tpl.write_text("U00:%x[0,0]\nB01:%x[0,0]\n")
    r = _cli("train", "--train", str(data), "--features", str(tpl), "-o",
             str(tmp_path / "n.npz"))
    assert r.returncode == 2 and f"{tpl}:2:5: a bigram template" in r.stderr
    r = _cli("train", "--train", str(data), "--features", "tmpt9", "-o",
             str(tmp_path / "n.npz"))
    assert r.returncode == 2 and "unknown feature template 'tmpt9'" in r.stderr


def test_builtin_files_are_package_data_and_parse():
    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    assert '"fstchunk.models" = ["tpl/*.tpl"]' in text
    for name, path in TEMPLATES.items():
        assert read_template(path).source == template_of(name).source
