"""docs/howto/confidence.md runs as shown: every ``fstchunk`` command (on slices of
CoNLL-2000 and GENIA), every Python block, and the JSONL shown is what decode writes
and what ``--scores`` reads."""

import json
import os
import re

from fstchunk.cli import main
from fstchunk.conll import read_conll, write_conll

HOWTO = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "howto", "confidence.md")


def _blocks(kind: str) -> list[str]:
    with open(HOWTO, encoding="utf-8") as fh:
        return re.findall(rf"```{kind}\n(.*?)```", fh.read(), re.S)


def test_howto_commands_and_snippets_run(tmp_path, monkeypatch, capsys, corpus):
    for name, src, n in (("train.txt", "train.txt", 120), ("dev.txt", "dev.txt", 40),
                         ("test.txt", "test.txt", 40)):
        write_conll(read_conll(corpus("conll2000", src))[:n], tmp_path / name)
    for name, src, n in (("genia-train.jsonl", "train.jsonl", 100),
                         ("genia-dev.jsonl", "dev.jsonl", 30)):
        lines = open(corpus("genia", src), encoding="utf-8").read().splitlines()[:n]
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    shown_output, scores_line = (json.loads(b) for b in _blocks("json"))
    (tmp_path / "scores.jsonl").write_text(json.dumps(scores_line) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    cmds = [line.strip() for b in _blocks("sh") for line in b.splitlines() if line.strip()]
    assert len(cmds) >= 9 and all(c.startswith("fstchunk ") for c in cmds)
    for cmd in cmds:
        argv = cmd.split()[1:]
        if argv[0] == "train":
            argv += ["--max-iter", "8", "--quiet"]
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 0, f"{cmd}: {err}"
    out = [json.loads(x) for x in open("out.jsonl", encoding="utf-8")]
    assert set(out[0]) == set(shown_output)
    assert set(out[0]["chunks"][0]) == set(shown_output["chunks"][0])
    marg = json.loads(open("marg.jsonl", encoding="utf-8").readline())
    assert {"marginals", "marginals_scheme"} <= set(marg)
    scored = json.loads(open("scored.jsonl", encoding="utf-8").readline())
    assert scored["tokens"] == scores_line["tokens"] and len(scored["tags"]) == 3
    assert open("out.html", encoding="utf-8").read().startswith("<!DOCTYPE html>")
    assert all("p" in g for x in open("seg.jsonl", encoding="utf-8")
               for g in json.loads(x)["segments"])
    env: dict = {}
    for block in _blocks("python"):
        exec(block, env)
    lat = env["lat"]
    from fstchunk import decode_map, scored_chunks
    assert env["decode_chunks"](lat, "map") == scored_chunks(lat, decode_map(lat).tags)
