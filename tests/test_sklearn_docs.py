"""Every Python snippet of docs/howto/sklearn.md runs as shown, in order."""

import os
import re

DOC = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "howto", "sklearn.md")


def test_sklearn_howto_snippets_run(corpus):
    corpus("conll2002", "ned.train")                     # the data the snippets read
    with open(DOC, encoding="utf-8") as fh:
        blocks = re.findall(r"```python\n(.*?)```", fh.read(), re.S)
    assert len(blocks) >= 2
    env: dict = {}
    for block in blocks:
        exec(block, env)
    assert env["crf"].scheme_ == "IOB2"
