"""Machines out as pictures and text: AT&T text with symbol names, Graphviz drawings
(``fstchunk grammar print|draw``).

Pitfalls:

* :func:`draw` always writes the ``.dot`` file (next to an SVG/PNG/PDF: ``v.svg``
  also writes ``v.dot``); SVG/PNG/PDF need Graphviz's ``dot`` on ``PATH``.
* every file is written atomically (:mod:`fstchunk.core.outputs`): a missing folder, a
  folder given as the file, a full disk, a missing or failing ``dot`` are an
  :class:`~fstchunk.core.errors.OutputError` naming the path, and leave nothing at the
  destination.  OpenFst's ``Fst.draw`` only prints ``ERROR:`` lines and carries on,
  so the ``.dot`` is checked complete after writing.  A caller that builds the
  machine itself checks the destination first with :func:`check_drawing`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pynini

from ..core import outputs
from ..core.errors import InputError, OutputError


def att_text(fst: pynini.Fst) -> str:
    """AT&T text with tag names (acceptors in the 3-column form)."""
    acceptor = fst.properties(pynini.ACCEPTOR, True) == pynini.ACCEPTOR
    return fst.print(acceptor=acceptor, show_weight_one=False)


DRAW_FORMATS = ("dot", "svg", "png", "pdf")

GRAPHVIZ_HINT = ("install it (Debian/Ubuntu: apt-get install graphviz; macOS: brew install "
                 "graphviz; conda: conda install graphviz) or draw to a .dot file")


def check_drawing(path: str) -> str:
    """The format of a drawing to ``path`` (``dot``, ``svg``, ``png`` or ``pdf``),
    once ``path`` (and the ``.dot`` written next to an SVG/PNG/PDF) can be written;
    InputError for another extension, OutputError for an unwritable destination."""
    root, ext = os.path.splitext(path)
    ext = ext.lower().lstrip(".")
    if ext not in DRAW_FORMATS:
        raise InputError(f"cannot draw to {path!r}: use a .dot, .svg, .png or .pdf file name")
    outputs.check_output(path, "drawing")
    if ext != "dot":
        outputs.check_output(root + ".dot", "drawing")
    return ext


def draw(fst: pynini.Fst, path: str, title: str = "") -> str:
    """Draw ``fst`` to ``path``: ``.dot`` always; ``.svg``/``.png``/``.pdf`` via Graphviz.

    Every file is written atomically; an OutputError naming the path when it cannot
    be (with install instructions when Graphviz's ``dot`` is missing, with the first
    line of its complaint when it fails)."""
    ext = check_drawing(path)
    dot_path = path if ext == "dot" else os.path.splitext(path)[0] + ".dot"
    _write_dot(fst, dot_path, title)
    if ext == "dot":
        return path
    exe = shutil.which("dot")
    if exe is None:
        raise OutputError(f"{path}: rendering {ext.upper()} needs Graphviz's 'dot' program, "
                          f"which is not installed (wrote {dot_path}): {GRAPHVIZ_HINT}")
    with outputs.atomic_path(path, "drawing") as tmp:
        try:
            done = subprocess.run([exe, f"-T{ext}", dot_path, "-o", tmp],
                                  capture_output=True, text=True, errors="replace")
        except OSError as e:
            raise outputs.output_error(path, e, "cannot run Graphviz's 'dot'") from None
        if done.returncode != 0:
            said = outputs.first_error_line(done.stderr) or f"exit code {done.returncode}"
            raise OutputError(f"{path}: Graphviz's 'dot' could not render it ({said})")
        if not os.path.isfile(tmp) or os.path.getsize(tmp) == 0:
            raise OutputError(f"{path}: Graphviz's 'dot' wrote nothing")
    return path


def _write_dot(fst: pynini.Fst, dot_path: str, title: str) -> None:
    """``fst.draw`` to a temporary, checked complete (OpenFst only prints its write
    errors), renamed over ``dot_path``."""
    acceptor = fst.properties(pynini.ACCEPTOR, True) == pynini.ACCEPTOR
    with outputs.atomic_path(dot_path, "drawing") as tmp:
        with outputs.captured_stderr() as err:
            fst.draw(tmp, acceptor=acceptor, title=title, portrait=True, vertical=False,
                     show_weight_one=False, float_format="g", precision=4)
        complete = os.path.isfile(tmp) and _ends_with_brace(tmp)
        if not complete:
            reason = ("no space left on device" if outputs.disk_full(tmp) else
                      outputs.first_error_line(err.text) or "the file written is incomplete")
            raise OutputError(f"{dot_path}: cannot write the drawing ({reason})")
        if err.text:
            sys.stderr.write(err.text)


def _ends_with_brace(path: str) -> bool:
    """Whether the dot file at ``path`` ends with its closing ``}``."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - 64))
        return fh.read().rstrip().endswith(b"}")
