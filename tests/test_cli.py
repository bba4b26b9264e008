import json
import shutil

import pynini
import pytest

from fstchunk.grammars import registry as machines
from fstchunk.cli import main
from fstchunk.grammars import conversion, validity


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_grammar_list(capsys):
    code, out, _ = run(capsys, "grammar", "list")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    assert names == list(machines.GRAMMARS)
    assert {"validity", "encoder", "convert"} <= set(names)


def test_grammar_info(capsys):
    code, out, _ = run(capsys, "grammar", "info", "validity", "--types", "NP,VP")
    assert code == 0
    info = dict(line.split(": ", 1) for line in out.splitlines())
    acc = validity.validity_acceptor("IOB2", ["NP", "VP"])
    assert int(info["states"]) == acc.num_states()
    assert info["acceptor"] == "True" and info["deterministic"] == "True"
    assert info["arc type"] == "log64" and info["epsilon-free"] == "True"


def test_grammar_print_shows_tag_names(capsys):
    code, out, _ = run(capsys, "grammar", "print", "convert", "--scheme", "IOB2",
                       "--target", "IOE1", "--tags", "O,B-NP,I-NP")
    assert code == 0
    rows = [r.split("\t") for r in out.splitlines()]
    labels = {c for r in rows if len(r) >= 4 for c in r[2:4]}
    assert labels == {"O", "B-NP", "I-NP", "E-NP"}
    arcs = sum(1 for r in rows if len(r) >= 4)
    m = conversion.conversion_transducer("IOB2", "IOE1", ["NP"])
    assert arcs == sum(m.num_arcs(s) for s in m.states())


def test_grammar_export_reads_back(capsys, tmp_path):
    far = str(tmp_path / "g.far")
    code, out, _ = run(capsys, "grammar", "export", "--types", "NP", "--scheme", "IOE2",
                       "-o", far)
    assert code == 0
    with pynini.Far(far, "r") as f:
        got = {k: fst.copy() for k, fst in f}
    assert "validity.IOE2" in got and "convert.IOE2.IOB1" in got and len(got) >= 9
    assert pynini.equal(got["validity.IOE2"], validity.validity_acceptor("IOE2", ["NP"]))
    assert pynini.equal(got["convert.IOE2.IOB1"],
                        conversion.conversion_transducer("IOE2", "IOB1", ["NP"]))
    assert got["validity.IOE2"].input_symbols().find("I-NP") > 0


def test_grammar_export_from_data(capsys, tmp_path, corpus):
    far = str(tmp_path / "v.far")
    code, out, _ = run(capsys, "grammar", "export", "validity", "--from-data",
                       corpus("conll2000", "test.txt"), "-o", far)
    assert code == 0
    with pynini.Far(far, "r") as f:
        (key, fst), = [(k, v.copy()) for k, v in f]
    from fstchunk.io.conll import read_conll
    from fstchunk.schemes.encodings import chunk_types
    types = chunk_types(t for s in read_conll(corpus("conll2000", "test.txt")) for t in s.column(-1))
    assert key == "validity.IOB2" and len(types) >= 10
    assert fst.num_states() == 2 + len(types)    # start, O, one state per chunk type


def test_grammar_draw(capsys, tmp_path):
    dot = tmp_path / "v.dot"
    code, out, _ = run(capsys, "grammar", "draw", "validity", "--types", "NP,VP", "-o", str(dot))
    assert code == 0
    text = dot.read_text()
    assert "digraph" in text and "B-NP" in text and "I-VP" in text
    svg = tmp_path / "v.svg"
    code, out, err = run(capsys, "grammar", "draw", "validity", "--types", "NP", "-o", str(svg))
    if shutil.which("dot"):
        assert code == 0 and "<svg" in svg.read_text()
    else:
        assert code == 2 and "apt-get install graphviz" in err


def test_bad_grammar_and_options(capsys):
    code, _, err = run(capsys, "grammar", "info", "nosuch")
    assert code == 2 and "unknown grammar 'nosuch'" in err
    code, _, err = run(capsys, "grammar", "info", "validity", "--scheme", "IOX")
    assert code == 2 and "unknown chunk scheme 'IOX'" in err


def test_eval_text_and_json(capsys, tmp_path):
    p = tmp_path / "pred.txt"
    p.write_text("He PRP B-NP B-NP\nran VBD B-VP B-NP\n\nOK UH O O\n", encoding="utf-8")
    code, out, _ = run(capsys, "eval", str(p))
    assert code == 0
    assert out.splitlines()[0] == "processed 3 tokens with 2 phrases; found: 2 phrases; correct: 1."
    code, out, _ = run(capsys, "eval", str(p), "--json")
    d = json.loads(out)
    assert d["overall"]["precision"] == 50.0 and d["accuracy"] == pytest.approx(200 / 3)


def test_eval_malformed_file(capsys, tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("He PRP B-NP B-NP\nran B-VP\n", encoding="utf-8")
    code, _, err = run(capsys, "eval", str(p))
    assert code == 2 and "bad.txt:2: expected 4 columns" in err


def test_demo_runs_and_shows_the_toy_table(capsys):
    code, out, _ = run(capsys, "demo")
    assert code == 0 and "Verwilghen" in out
    assert "BOB        1/2       1/1        0.80" in out and "BBB" in out


def test_counting_machines_in_registry(capsys, tmp_path):
    from fstchunk.grammars import counting
    code, out, _ = run(capsys, "grammar", "print", "T", "--types", "NP", "--max-length", "2")
    assert code == 0 and "<tp=2>" in out and "B-NP" in out
    far = str(tmp_path / "c.far")
    code, out, _ = run(capsys, "grammar", "export", "T", "M", "TM", "toy", "--types", "NP",
                       "--max-length", "2", "-o", far)
    assert code == 0
    with pynini.Far(far) as f:
        got = {k: v.copy() for k, v in f}
    assert set(got) == {"T.n2", "M.n2", "TM.n2", "toy.n2.theta0.5"}
    assert pynini.equal(got["TM.n2"], counting.pair_machine(("NP",), 2))
    code, out, _ = run(capsys, "grammar", "draw", "T", "--types", "NP", "--max-length", "2",
                       "-o", str(tmp_path / "t.dot"))
    assert code == 0 and "<tp=1>" in (tmp_path / "t.dot").read_text()


def test_expected_command(capsys, tmp_path):
    import numpy as np
    from fstchunk import Lattice, expected_f
    from fstchunk.models.scorefile import save_scores
    tags = ("O", "B-NP", "I-NP")
    rng = np.random.default_rng(0)
    conll = tmp_path / "s.txt"
    conll.write_text("a DT B-NP\nb NN I-NP\nc VB O\n\nd NN B-NP\n", encoding="utf-8")
    ems = [rng.normal(size=(3, 3)), rng.normal(size=(1, 3))]
    trans = rng.normal(size=(3, 3))
    npz = tmp_path / "s.npz"
    save_scores(npz, tags, ems, trans)
    code, out, _ = run(capsys, "expected", str(conll), "--scores", str(npz), "--json",
                       "--beta", "2")
    assert code == 0
    d = json.loads(out)
    want = expected_f(Lattice.from_scores(tags, ems[0], trans), reference=["B-NP", "I-NP", "O"],
                      beta=2.0)
    assert d["sentences"][0]["f"] == pytest.approx(want.f, rel=1e-12)
    assert d["summary"]["sentences"] == 2
    code, out, _ = run(capsys, "expected", str(conll), "--scores", str(npz), "--direction",
                       "decoding", "--method", "fst")
    assert code == 0 and "decoding direction" in out


def test_expected_command_errors(capsys, tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    conll = tmp_path / "s.txt"
    conll.write_text("a DT B-NP\n", encoding="utf-8")
    code, _, err = run(capsys, "expected", str(conll), "--scores", str(bad))
    assert code == 2 and "bad.npz: not a readable score file" in err
    import numpy as np
    from fstchunk.models.scorefile import save_scores
    npz = tmp_path / "s.npz"
    save_scores(npz, ("O", "B-NP", "I-NP"), [np.zeros((2, 3))], np.zeros((3, 3)))
    code, _, err = run(capsys, "expected", str(conll), "--scores", str(npz))
    assert code == 1 and "has 1 tags but the lattice has 2 tokens" in err   # its row says
    conll.write_text("a DT I-NP\nb DT O\n", encoding="utf-8")
    code, _, err = run(capsys, "expected", str(conll), "--scores", str(npz))
    assert code == 0 and "repaired 1 invalid tag sequence" in err and "s.txt:1 ('I-NP')" in err
    code, _, err = run(capsys, "expected", str(conll), "--scores", str(npz),
                       "--on-invalid", "error")
    assert code == 2 and "s.txt:1: tag 'I-NP' cannot stand at the start of a sentence" in err


@pytest.mark.parametrize("decoder", ["map", "posterior", "meu", "meu-kbest", "meu-corpus"])
def test_decode_then_eval(capsys, tmp_path, decoder, corpus):
    from fstchunk.io.conll import read_conll, write_conll
    from fstchunk.models.hmm import HMM
    model = tmp_path / "hmm.npz"
    HMM().fit(read_conll(corpus("conll2000", "train.txt"))[:500]).save(model)
    test = read_conll(corpus("conll2000", "test.txt"))[:15]
    inp = tmp_path / "in.txt"
    write_conll(test, inp)
    out = tmp_path / "out.txt"
    beta = ["--beta", "2"] if decoder.startswith("meu") else []     # map reads no --beta
    code, _, err = run(capsys, "decode", "--model", str(model), "--input", str(inp),
                       "--decoder", decoder, *beta, "-o", str(out))
    assert code == 0, err
    got = read_conll(out)
    assert [len(s.rows[0]) for s in got] == [4] * len(test)
    assert [s.words for s in got] == [s.words for s in test]
    code, text, _ = run(capsys, "eval", str(out))
    assert code == 0 and text.startswith(f"processed {sum(map(len, test))} tokens")


def test_decode_bad_model(capsys, tmp_path):
    bad = tmp_path / "m.npz"
    bad.write_bytes(b"garbage")
    inp = tmp_path / "in.txt"
    inp.write_text("a DT\n", encoding="utf-8")
    code, _, err = run(capsys, "decode", "--model", str(bad), "--input", str(inp))
    assert code == 2 and "m.npz: not a readable fstchunk model file" in err


def test_train_ml_then_meu_from_init_and_resume(capsys, tmp_path, corpus):
    from fstchunk.io.conll import read_conll, write_conll
    from fstchunk.models.crf import CRF
    train = read_conll(corpus("conll2000", "train.txt"))[:60]
    dev = read_conll(corpus("conll2000", "dev.txt"))[:20]
    tr, dv = tmp_path / "train.txt", tmp_path / "dev.txt"
    write_conll(train, tr)
    write_conll(dev, dv)
    ml = str(tmp_path / "ml.npz")
    code, out, err = run(capsys, "train", "--train", str(tr), "--dev", str(dv), "--features",
                         "tmpt1", "--objective", "ml", "--l2", "0.1", "--max-iter", "15",
                         "-o", ml, "--quiet")
    assert code == 0, err
    assert "dev F =" in out
    meu = str(tmp_path / "meu.npz")
    code, out, err = run(capsys, "train", "--train", str(tr), "--objective", "meu", "--beta",
                         "1", "--init", ml, "--max-iter", "3", "-o", meu, "--quiet")
    assert code == 0, err
    m = CRF.load(meu)
    assert m.settings_["objective"] == "meu" and m.settings_["init"] == ml
    assert m.settings_["train_seconds"] > 0
    # a checkpoint from an interrupted run is picked up by --resume
    crf = CRF.load(ml)
    crf.settings_["iteration"] = 14
    crf.save(str(tmp_path / "again.npz") + ".ckpt")
    code, out, err = run(capsys, "train", "--train", str(tr), "--features", "tmpt1",
                         "--max-iter", "15", "-o", str(tmp_path / "again.npz"), "--resume",
                         "--quiet", "--l2", "0.1")
    assert code == 0 and "resuming from" in out and "at iteration 14" in out
    code, out, _ = run(capsys, "decode", "--model", meu, "--input", str(dv), "--decoder", "meu")
    assert code == 0 and len(out.splitlines()) == sum(len(s) + 1 for s in dev)


def test_expected_with_saved_model(capsys, tmp_path, corpus):
    from fstchunk import expected_f
    from fstchunk.io.conll import read_conll, write_conll
    from fstchunk.models.hmm import HMM
    model = tmp_path / "hmm.npz"
    hmm = HMM().fit(read_conll(corpus("conll2000", "train.txt"))[:300])
    hmm.save(model)
    test = read_conll(corpus("conll2000", "test.txt"))[:3]
    inp = tmp_path / "t.txt"
    write_conll(test, inp)
    code, out, err = run(capsys, "expected", str(inp), "--model", str(model), "--json")
    assert code == 0, err
    d = json.loads(out)
    want = expected_f(hmm.lattice(test[0]), reference=test[0].column(-1), method="fast")
    assert d["sentences"][0]["f"] == pytest.approx(want.f, rel=1e-12)
    code, _, err = run(capsys, "expected", str(inp))
    assert code == 2 and "exactly one of --model MODEL or --scores NPZ" in err


def test_joint_train_and_decode(capsys, tmp_path, corpus):
    import json
    from fstchunk.models import joint as J
    from fstchunk.io.conll import read_conll, write_conll
    test_file = tmp_path / "test.txt"
    test = read_conll(corpus("conll2000", "test.txt"))[:25]
    write_conll(test, test_file)
    model = str(tmp_path / "joint.npz")
    code, _, err = run(capsys, "joint", "train", "--train", corpus("conll2000", "train.txt"), "--sentences", "80",
        "--collapse-pos", "--np-only", "--algorithm", "mmvp", "--iterations", "3", "--quiet",
        "-o", model)
    assert code == 0, err
    got = json.loads(run(capsys, "joint", "decode", "--model", model, "--input", str(test_file),
                         "--json")[1])
    m = J.JointModel.load(model)
    data = J.layered(test, collapse=True, np_chunks=True)
    assert got == pytest.approx(J.scores(data, *J.predict(m, data)))
    assert set(got) == {"pos_accuracy", "np_accuracy", "np_f1"} and got["np_f1"] > 30
    out = run(capsys, "joint", "decode", "--model", model, "--input", str(test_file))[1]
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert len(rows) == sum(len(s) for s in test)
    assert all(len(r) == 5 for r in rows)
    assert {r[3] for r in rows} <= set(J.COLLAPSED_POS)
    assert {r[4] for r in rows} <= {"B-NP", "I-NP", "O"}
    code, out, err = run(capsys, "joint", "decode", "--model", model, "--input",
                         str(test_file), "--decoder", "meu", "--json")
    assert code == 2 and out == "" and "fstchunk joint calibrate --model" in err   # MMVP scores
    heldout = tmp_path / "heldout.txt"
    write_conll(read_conll(corpus("conll2000", "dev.txt"))[:60], heldout)
    calibrated = str(tmp_path / "calibrated.npz")
    code, out, err = run(capsys, "joint", "calibrate", "--model", model, "--input",
                         str(heldout), "-o", calibrated)
    assert code == 0 and "temperature" in out, err
    meu = json.loads(run(capsys, "joint", "decode", "--model", calibrated, "--input",
                         str(test_file), "--decoder", "meu", "--json")[1])
    assert meu["pos_accuracy"] == got["pos_accuracy"]
    assert meu["np_f1"] > got["np_f1"] - 10           # not the uncalibrated collapse (12.9)
    with pytest.raises(SystemExit):
        main(["joint", "train", "--train", "x", "--algorithm", "svm", "-o", "m.npz"])


def test_train_in_iobes_decodes_to_iob2(capsys, tmp_path, corpus):
    """A CRF trained with --scheme IOBES (data converted from IOB2) keeps its scheme
    through --init, and decode writes IOB2 unless --output-scheme says otherwise."""
    from fstchunk.schemes import encodings as enc
    from fstchunk.io.conll import read_conll, write_conll
    from fstchunk.models.crf import CRF
    from fstchunk.decoding.decode import decode_map
    train = read_conll(corpus("conll2000", "train.txt"))[:60]
    dev = read_conll(corpus("conll2000", "dev.txt"))[:10]
    tr, dv = tmp_path / "train.txt", tmp_path / "dev.txt"
    write_conll(train, tr)
    write_conll(dev, dv)
    ml, meu = str(tmp_path / "ml.npz"), str(tmp_path / "meu.npz")
    code, _, err = run(capsys, "train", "--train", str(tr), "--features", "tmpt1",
                       "--scheme", "IOBES", "--l2", "0.1", "--max-iter", "15", "-o", ml,
                       "--quiet")
    assert code == 0, err
    code, _, err = run(capsys, "train", "--train", str(tr), "--objective", "meu-corpus",
                       "--l2", "1e-6", "--init", ml, "--max-iter", "3", "-o", meu, "--quiet")
    assert code == 0, err
    model = CRF.load(meu)
    assert model.scheme_ == "IOBES" and any(t.startswith("S-") for t in model.tags_)
    raw = [decode_map(lat).tags for lat in model.lattices(dev)]
    for scheme in ("IOB2", "IOBES"):
        out = tmp_path / f"out.{scheme}.txt"
        code, _, err = run(capsys, "decode", "--model", meu, "--input", str(dv),
                           "--output-scheme", scheme, "-o", str(out))
        assert code == 0, err
        got = [s.column(-1) for s in read_conll(out)]
        assert got == [enc.convert(r, "IOBES", scheme) for r in raw]
        for tags in got:
            enc.validate(tags, scheme)
    assert any(t.startswith("S-") for s in read_conll(tmp_path / "out.IOBES.txt")
               for t in s.column(-1))


def test_generic_map_decode_of_an_uncalibrated_joint_model(capsys, tmp_path, corpus):
    """MAP needs no probabilities: `fstchunk decode --decoder map` works on an MMVP joint
    model; MEU on it is refused until it is calibrated."""
    from fstchunk.io.conll import read_conll, write_conll
    test_file = tmp_path / "test.txt"
    write_conll(read_conll(corpus("conll2000", "test.txt"))[:10], test_file)
    model = str(tmp_path / "joint.npz")
    code, _, err = run(capsys, "joint", "train", "--train", corpus("conll2000", "train.txt"),
                       "--sentences", "40", "--np-only", "--iterations", "2", "--quiet",
                       "-o", model)
    assert code == 0, err
    code, out, err = run(capsys, "decode", "--model", model, "--input", str(test_file))
    assert code == 0, err
    assert len([x for x in out.splitlines() if x.strip()]) == sum(
        len(s) for s in read_conll(test_file))
    code, out, err = run(capsys, "decode", "--model", model, "--input", str(test_file),
                         "--decoder", "meu")
    assert code == 2 and "joint calibrate" in err
