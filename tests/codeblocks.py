"""Running the code blocks of Markdown pages (``README.md``, ``docs/``), for the tests
that keep the pages true (:mod:`test_readme`, :mod:`test_docs`).

A page's fenced blocks run in order, in one namespace and one working folder:

* ```` ```python ````: executed statement by statement; a statement whose last line
  ends in a comment ``# SomeError: message`` must raise that exception (by class name,
  its bases included) with ``message`` in its text.  What it prints is compared with
  a ```` ```text ```` block that follows it directly, where there is one;
* ```` ```console ````: ``$ COMMAND`` lines (``\\`` continues a line) and the output
  shown under each, compared with what the command writes (standard output and
  error, in order);
* ```` ```bash ````: every line a command, no output shown;
* ```` ```sh ````: setup (``pip install``, ``mkdocs serve``): never run, and allowed to
  hold nothing else (:data:`SETUP`);
* ```` ``` ```` (no language), ```` ```text ````, ``yaml``, ``json``, ``markdown``:
  shown, not run (diagrams, file contents); any other language fails.

Commands are ``fstchunk ...`` (run as :func:`fstchunk.cli.main`, exit status 0
expected, 2 where the output shown ends in ``fstchunk ...: error: ...``) and
``head [-n N] FILE``; ``> FILE`` redirects standard output.  Anything else fails.

Shown output matches when every line does: ``...`` alone matches any lines (none
included), ``...`` within a line any text, and a number with a decimal point may
differ from the shown one by one unit of its last digit (BLAS and L-BFGS round
differently on other machines); everything else is compared exactly.  A figure that
moves by more from one CPU to another (an online learner's trajectory, whose decisions
hang on the last bits of BLAS sums, and what its model decodes) is shown as ``...``.

``python tests/codeblocks.py PAGE.md ... --update`` runs pages from a scratch folder
(``FSTCHUNK_DATA`` read as the pages read it) and writes each output that no longer
matches back into the page, as the commands print it today, and the SVG drawings the
page shows (``![...](img/NAME.svg)``, drawn by its commands as ``NAME.svg``) into
``img/`` beside it.  An exit status other than the page implies still fails: the error
line of a command that should fail is written by hand.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass, field

#: what an ``sh`` block may hold: set-up lines a test cannot run
SETUP = ("pip ", "python3 -m venv ", "python -m venv ", "mkdocs ", "git clone ", "cd ",
         "conda ",
         "apt-get ", "sudo apt-get ")
#: blocks that are shown, not run: outputs, diagrams (no language), file contents
TEXT = ("", "text", "yaml", "json", "markdown")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<lang>[\w+-]*)[^\n`]*$")
NUMBER = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")
ERROR_LINE = re.compile(r"^fstchunk [\w -]+: error: ")


@dataclass
class Block:
    """A fenced block: its language, text, and where it sits (1-based lines)."""
    path: str
    line: int
    end: int
    lang: str
    text: str
    output: "Block | None" = None       # a ```text block right after a python block

    @property
    def where(self) -> str:
        return f"{os.path.basename(self.path)}:{self.line}"


@dataclass
class Command:
    """One command of a console or bash block, and the output shown under it."""
    line: int
    text: str
    shown: list[str] | None = None
    out_lines: tuple[int, int] = (0, 0)     # the shown output's page lines, 0-based [a, b)


@dataclass
class Result:
    code: int
    output: str
    files: list[str] = field(default_factory=list)


def blocks(path: str) -> list[Block]:
    """Every fenced block of the page at ``path`` in order; a ```` ```text ```` block
    that directly follows a python block is that block's ``output``."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m["indent"], m["fence"]
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            j += 1
        if j == len(lines):
            raise AssertionError(f"{path}:{i + 1}: code block never closed")
        body = [ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[i + 1:j]]
        block = Block(path, i + 1, j + 1, m["lang"] or "", "\n".join(body) + "\n")
        previous = out[-1] if out else None
        if (block.lang == "text" and previous is not None and previous.lang == "python"
                and not any(ln.strip() for ln in lines[previous.end:i])):
            previous.output = block
        else:
            out.append(block)
        i = j + 1
    return out


# ---------------------------------------------------------------- python blocks

def _expected_error(source_line: str) -> tuple[str, str] | None:
    m = re.search(r"#\s*(\w+(?:Error|Exception|Warning)):\s*(.*)$", source_line)
    return (m.group(1), m.group(2).strip()) if m else None


def run_python(block: Block, env: dict) -> str:
    """Execute ``block`` in ``env`` (see the module doc); what it printed."""
    import ast
    source = block.text
    lines = source.split("\n")
    tree = ast.parse(source, filename=block.where)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        for node in tree.body:
            code = compile(ast.Module([node], []), f"{block.where}+{node.lineno}", "exec")
            expect = _expected_error(lines[node.end_lineno - 1])
            if expect is None:
                exec(code, env)
                continue
            name, message = expect
            try:
                exec(code, env)
            except Exception as e:          # noqa: BLE001 - the page names what it expects
                kinds = {k.__name__ for k in type(e).__mro__}
                assert name in kinds, f"{block.where}+{node.lineno}: raised {e!r}, not {name}"
                assert message in str(e), (f"{block.where}+{node.lineno}: {name} says "
                                           f"{str(e)!r}, the page shows {message!r}")
                continue
            raise AssertionError(f"{block.where}+{node.lineno}: did not raise {name}")
    return buf.getvalue()


# ---------------------------------------------------------------- commands

def commands(block: Block) -> list[Command]:
    """The commands of a console block (``$`` lines, output under each) or a bash block
    (every line), continuation lines joined."""
    lines = block.text.rstrip("\n").split("\n")
    out: list[Command] = []
    i = 0
    while i < len(lines):
        raw = lines[i]
        if block.lang == "console" and not raw.startswith("$ "):
            if not out:
                raise AssertionError(f"{block.where}: output before any '$ ' command")
            i += 1
            continue
        text, first = (raw[2:] if block.lang == "console" else raw), i
        while text.rstrip().endswith("\\"):
            i += 1
            text = text.rstrip()[:-1] + " " + lines[i].strip()
        i += 1
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        cmd = Command(block.line + 1 + first, text.strip())
        if block.lang == "console":
            j = i
            while j < len(lines) and not lines[j].startswith("$ "):
                j += 1
            cmd.shown = lines[i:j]
            cmd.out_lines = (block.line + i, block.line + j)
            i = j
        out.append(cmd)
    return out


def run_cli(argv: list[str]) -> tuple[int, str]:
    """``fstchunk ARGV`` in this process: exit status and everything it wrote
    (standard output and error in one stream, in order)."""
    from fstchunk.cli import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        code = main(argv)
    return code, buf.getvalue()


def _head(words: list[str]) -> str:
    n, files = 10, []
    it = iter(words)
    for w in it:
        if w == "-n":
            n = int(next(it))
        elif re.fullmatch(r"-\d+", w):
            n = int(w[1:])
        else:
            files.append(w)
    out = []
    for name in files:
        with open(name, encoding="utf-8") as fh:
            out.extend(line for _, line in zip(range(n), fh))
    return "".join(out)


def run_command(cmd: Command, where: str) -> Result:
    """Run one command line of a page (``fstchunk``, ``head``; ``> FILE``)."""
    words = shlex.split(cmd.text, comments=True)
    target = None
    if ">" in words:
        k = words.index(">")
        words, target = words[:k], words[k + 1]
    if words[0] == "fstchunk":
        code, output = run_cli(words[1:])
    elif words[0] == "head":
        code, output = 0, _head(words[1:])
    else:
        raise AssertionError(f"{where}:{cmd.line}: {words[0]!r} is not a command the "
                             f"pages may run (fstchunk, head)")
    if target is not None:
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(output)
        output = ""
    return Result(code, output)


def expected_code(shown: list[str] | None) -> int:
    """2 where the output shown ends in the CLI's one-line error, else 0."""
    tail = [ln for ln in shown or [] if ln.strip()]
    return 2 if tail and ERROR_LINE.match(tail[-1]) else 0


# ---------------------------------------------------------------- output comparison

def _line_matches(shown: str, actual: str) -> bool:
    pattern, numbers, pos = [], [], 0
    for m in re.finditer(r"\.\.\.|" + NUMBER.pattern, shown):
        pattern.append(re.escape(shown[pos:m.start()]))
        if m.group(0) == "...":
            pattern.append(".*?")
        else:
            pattern.append(f"({NUMBER.pattern})")
            numbers.append(m.group(0))
        pos = m.end()
    pattern.append(re.escape(shown[pos:]))
    m = re.fullmatch("".join(pattern), actual.rstrip())
    if m is None:
        return False
    for want, got in zip(numbers, m.groups()):
        digits = len(want.split(".")[1].split("e")[0].split("E")[0])
        scale = 10.0 ** int(re.split("[eE]", want)[1]) if re.search("[eE]", want) else 1.0
        if abs(float(want) - float(got)) > 1.0001 * scale * 10.0 ** -digits:
            return False
    return True


def output_matches(shown: list[str], actual: str) -> bool:
    """Whether ``actual`` is the output ``shown`` (see the module doc)."""
    want = [ln.rstrip() for ln in shown]
    while want and not want[-1]:
        want.pop()
    got = actual.rstrip("\n").split("\n") if actual.strip() else []

    def match(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(got)
        if want[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and _line_matches(want[i], got[j]) and match(i + 1, j + 1)
    return match(0, 0)


def mismatch(where: str, shown: list[str], actual: str) -> str:
    return (f"{where}: the page shows\n" + "\n".join(shown) + "\n--- the command printed\n"
            + actual)


# ---------------------------------------------------------------- a whole page

@dataclass
class Outcome:
    """What running a page gave: per block or command, the shown output that does
    not match (its page lines, 0-based [a, b), and the new text), for --update."""
    stale: list[tuple[int, int, str]] = field(default_factory=list)


def run_page(path: str, env: dict | None = None, update: bool = False) -> Outcome:
    """Run every block of the page at ``path`` in the current folder; raise on the
    first failure (or, with ``update``, collect the stale outputs instead)."""
    env = {"__name__": "__page__"} if env is None else env
    outcome = Outcome()
    for block in blocks(path):
        if block.lang == "python":
            printed = run_python(block, env)
            if block.output is not None:
                shown = block.output.text.rstrip("\n").split("\n")
                if not output_matches(shown, printed):
                    if not update:
                        raise AssertionError(mismatch(block.where, shown, printed))
                    outcome.stale.append((block.output.line, block.output.end - 1, printed))
            elif printed.strip() and not update:
                raise AssertionError(f"{block.where}: the block prints but the page shows "
                                     f"no ```text block after it:\n{printed}")
        elif block.lang in ("console", "bash"):
            for cmd in commands(block):
                result = run_command(cmd, block.path)
                want = expected_code(cmd.shown)
                where = f"{os.path.basename(path)}:{cmd.line}"
                if result.code != want:
                    raise AssertionError(f"{where}: {cmd.text}: exit status {result.code}, "
                                         f"not {want}:\n{result.output}")
                if cmd.shown is not None and not output_matches(cmd.shown, result.output):
                    if not update:
                        raise AssertionError(mismatch(where, cmd.shown, result.output))
                    outcome.stale.append((*cmd.out_lines, result.output))
        elif block.lang == "sh":
            for line in block.text.strip().split("\n"):
                if not line.lstrip("$ ").startswith(SETUP):
                    raise AssertionError(f"{block.where}: an sh block holds set-up lines "
                                         f"only ({', '.join(SETUP)}), not {line!r}")
        elif block.lang not in TEXT:
            raise AssertionError(f"{block.where}: a ```{block.lang} block the tests cannot "
                                 f"run")
    return outcome


def _update(page: str) -> None:
    """Rewrite the stale outputs of ``page`` (run in a scratch folder)."""
    import tempfile
    page = os.path.abspath(page)
    here = os.getcwd()
    with open(page, encoding="utf-8") as fh:
        pictures = re.findall(r"!\[[^\]]*\]\((img/[^)\s]+\.svg)\)", fh.read())
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            outcome = run_page(page, update=True)
        finally:
            os.chdir(here)
        for name in pictures:           # the drawings the page shows, as drawn today
            drawn = os.path.join(tmp, os.path.basename(name))
            if os.path.exists(drawn):
                target = os.path.join(os.path.dirname(page), name)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copyfile(drawn, target)
    with open(page, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for start, end, text in sorted(outcome.stale, reverse=True):
        lines[start:end] = text.rstrip("\n").split("\n") if text.strip() else []
    with open(page, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))
    print(f"{page}: {len(outcome.stale)} output(s) rewritten")


if __name__ == "__main__":
    pages = [a for a in sys.argv[1:] if a != "--update"]
    if "--update" not in sys.argv or not pages:
        sys.exit("usage: python tests/codeblocks.py PAGE.md ... --update")
    for p in pages:
        _update(p)
