"""Every Python snippet of the README runs as shown, and every command line runs on
slices of CoNLL-2000 (the machinery: :mod:`codeblocks`, shared with the docs' pages)."""

import os
import re

from codeblocks import blocks, run_cli, run_python

README = os.path.join(os.path.dirname(__file__), os.pardir, "README.md")


def test_readme_python_snippets_run():
    """The python blocks in order, in one namespace; a line ending in ``# ValueError:
    message`` must raise it."""
    python = [b for b in blocks(README) if b.lang == "python"]
    assert len(python) >= 2
    env: dict = {}
    for block in python:
        run_python(block, env)


def _commands() -> list[str]:
    """The ``fstchunk ...`` lines of the README's indented command blocks (continuations
    joined, comments and ``[optional]`` parts dropped)."""
    with open(README, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("    fstchunk "):
            cmd = line.strip()
            while cmd.endswith("\\"):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            out.append(re.sub(r"\[[^\]]*\]", "", cmd.split("  #")[0]).strip())
        i += 1
    return out


def _order(cmd: str) -> int:
    """Run producers before consumers: train, decode, the rest, then the joint commands."""
    words = cmd.split()
    if words[1] == "joint":
        return 3 if words[2] == "train" else 4
    return {"train": 0, "decode": 1}.get(words[1], 2)


def test_readme_commands_run_on_a_slice(tmp_path, monkeypatch, corpus):
    """Each command line of the README, on slices of CoNLL-2000 (train.txt: 120 sentences;
    dev.txt: 15 of the first 40 dev sentences, those whose POS tags the train slice holds,
    as ``joint train`` requires; test.txt: 20; words.txt: the train slice without its POS
    column), with ``--max-iter 8 --quiet`` added to ``train`` (``--max-iter 1`` to ``joint
    train`` and ``segment train``, whose epochs and calibration are long) for speed.  Each
    must exit 0."""
    from fstchunk.io.conll import read_conll, write_conll

    train = read_conll(corpus("conll2000", "train.txt"))[:120]
    pos = {r[1] for s in train for r in s.rows}
    dev = [s for s in read_conll(corpus("conll2000", "dev.txt"))[:40]
           if {r[1] for r in s.rows} <= pos][:15]
    assert len(dev) == 15
    write_conll(train, tmp_path / "train.txt")
    write_conll(dev, tmp_path / "dev.txt")
    write_conll(read_conll(corpus("conll2000", "test.txt"))[:20], tmp_path / "test.txt")
    write_conll([[[r[0], r[-1]] for r in s.rows] for s in read_conll(tmp_path / "train.txt")],
                tmp_path / "words.txt")
    monkeypatch.chdir(tmp_path)
    cmds = sorted(_commands(), key=_order)
    assert len(cmds) >= 10 and any("--columns word,tag" in c for c in cmds)
    for cmd in cmds:
        argv = cmd.split()[1:]
        if "train" in argv[:2]:                  # train, joint train, segment train
            argv = [a for k, a in enumerate(argv)
                    if a != "--max-iter" and (k == 0 or argv[k - 1] != "--max-iter")]
            argv += ["--max-iter", "8" if argv[0] == "train" else "1", "--quiet"]
        code, output = run_cli(argv)
        assert code == 0, f"{cmd}: {output}"


def test_readme_is_short():
    """The README is a front door (issue 34): at most ~150 lines; the rest is in docs/."""
    with open(README, encoding="utf-8") as fh:
        assert len(fh.read().splitlines()) <= 150
