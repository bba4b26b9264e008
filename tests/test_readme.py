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
