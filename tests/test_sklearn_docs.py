"""docs/howto/sklearn.md runs as shown, every block in order (by :mod:`codeblocks`, here
rather than in :mod:`test_docs`, which leaves this page to this test)."""

import os

from codeblocks import run_page

DOC = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "howto", "sklearn.md")


def test_sklearn_howto_runs_as_shown(corpus, tmp_path, monkeypatch):
    corpus("conll2002", "ned.train")                     # the data the snippets read
    monkeypatch.chdir(tmp_path)
    env: dict = {"__name__": "__page__"}
    run_page(DOC, env)
    assert env["crf"].scheme_ == "IOB2"
