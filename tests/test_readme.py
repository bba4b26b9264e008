"""Every Python snippet of the README runs as shown (the CLI lines are in test_cli)."""

import os
import re

README = os.path.join(os.path.dirname(__file__), os.pardir, "README.md")


def _snippets() -> list[str]:
    with open(README, encoding="utf-8") as fh:
        return re.findall(r"```python\n(.*?)```", fh.read(), re.S)


def test_readme_python_snippets_run():
    blocks = _snippets()
    assert len(blocks) >= 3
    env: dict = {}
    for block in blocks:
        for line in block.splitlines():
            code = line.split("  #")[0].rstrip()
            if "# ValueError:" in line:              # the line that shows an error
                try:
                    exec(code, env)
                except ValueError as e:
                    assert "position 1" in str(e)
                    continue
                raise AssertionError(f"README line did not raise: {line}")
            if code.startswith("decode_meu_corpus(lattices"):
                code = code.replace("lattices", "[lat]")
            exec(code, env)


def _commands() -> list[str]:
    """The ``fstchunk ...`` lines of the README's code blocks (continuations joined,
    comments and ``[optional]`` parts dropped)."""
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


def test_readme_commands_run_on_a_slice(tmp_path, monkeypatch, capsys, corpus):
    """Each command line of the README, on slices of CoNLL-2000 (train.txt: 120 sentences,
    dev.txt and test.txt: 40; words.txt: the train slice without its POS column), with
    ``--max-iter 8 --quiet`` added to ``train`` for speed.  Each must exit 0."""
    from fstchunk.cli import main
    from fstchunk.conll import read_conll, write_conll

    for name, src, n in (("train.txt", "train.txt", 120), ("dev.txt", "dev.txt", 40),
                         ("test.txt", "test.txt", 40)):
        write_conll(read_conll(corpus("conll2000", src))[:n], tmp_path / name)
    write_conll([[[r[0], r[-1]] for r in s.rows] for s in read_conll(tmp_path / "train.txt")],
                tmp_path / "words.txt")
    monkeypatch.chdir(tmp_path)
    cmds = sorted(_commands(), key=_order)
    assert len(cmds) >= 15 and any("--columns word,tag" in c for c in cmds)
    for cmd in cmds:
        argv = cmd.split()[1:]
        if argv[0] == "train":
            argv = [a for k, a in enumerate(argv)
                    if a != "--max-iter" and (k == 0 or argv[k - 1] != "--max-iter")]
            argv += ["--max-iter", "8", "--quiet"]
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 0, f"{cmd}: {err}"
