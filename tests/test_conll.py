import io

import pytest

from fstchunk.io.conll import CoNLLError, read_conll, write_conll


def conll_string(sentences) -> str:
    """What :func:`write_conll` writes, as a string."""
    buf = io.StringIO()
    write_conll(sentences, buf)
    return buf.getvalue()


def test_read_sentences_docstart_and_columns():
    text = ("-DOCSTART- -DOCSTART- O\n\nDe Art O\nman N B-PER\n\n\n"
            "-DOCSTART- -DOCSTART- O\nZij Pron O\n")
    sents = read_conll(io.StringIO(text))
    assert [s.words for s in sents] == [["De", "man"], ["Zij"]]
    assert sents[0].column(-1) == ["O", "B-PER"]
    assert sents[0].lines == [3, 4]
    assert conll_string(sents) == "De Art O\nman N B-PER\n\nZij Pron O\n\n"


def test_malformed_line_names_file_and_line(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("a DT B-NP\nb NN\n", encoding="utf-8")
    with pytest.raises(CoNLLError, match=r"bad.txt:2: expected 3 columns"):
        read_conll(p)


def test_non_utf8_names_file_and_line(tmp_path):
    p = tmp_path / "latin1.txt"
    p.write_bytes("a DT O\n\nb\xe9 NN O\n".encode("latin-1"))
    with pytest.raises(CoNLLError, match=r"latin1.txt:3: not valid UTF-8"):
        read_conll(p)


def test_non_utf8_binary_stream_names_line():
    data = io.BytesIO("a DT O\nb\xe9 NN O\n".encode("latin-1"))
    data.name = "bytes.txt"
    with pytest.raises(CoNLLError, match=r"bytes.txt:2: not valid UTF-8"):
        read_conll(data)


def test_write_conll_to_path_and_last_sentence_without_blank_line(tmp_path):
    p = tmp_path / "out.txt"
    write_conll([[["a", "O"], ["b", "B-NP"]], [["c", "O"]]], p, delimiter="\t")
    assert p.read_text(encoding="utf-8") == "a\tO\nb\tB-NP\n\nc\tO\n\n"
    sents = read_conll(io.StringIO("a O\n\nb B-NP"))
    assert [s.rows for s in sents] == [[["a", "O"]], [["b", "B-NP"]]]
    assert sents[1].where(0) == "<stream>:3"


def test_min_columns():
    with pytest.raises(CoNLLError, match="at least 2 columns"):
        read_conll(io.StringIO("a\n"), min_columns=2)


def test_real_corpora_counts(corpus):
    for parts, n_sent, n_tok in [(("conll2000", "train.txt"), 8936, 211727),
                                 (("conll2000", "test.txt"), 2012, 47377),
                                 (("conll2002", "ned.train"), 15806, 202644),
                                 (("conll2002", "ned.testa"), 2895, 37687)]:
        sents = read_conll(corpus(*parts))
        assert (len(sents), sum(map(len, sents))) == (n_sent, n_tok), parts
