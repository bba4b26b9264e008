"""The one error family of fstchunk.

Every error a user can cause (a malformed file, an unknown scheme or tag, an
invalid tag sequence, a bad array or option, an unreadable model file) is a
:class:`FstchunkError`, and its message names what and where (``file:line``,
position, tag, option).  The CLI prints such an error as one line and exits 2;
anything else is a bug in fstchunk.

Pitfall: the classes also derive from :class:`ValueError`, so code written
against the older ``except ValueError`` keeps catching them; catch
:class:`FstchunkError` to tell user errors from fstchunk's own failures.
"""

from __future__ import annotations


class FstchunkError(ValueError):
    """Base class: an input, option or file that fstchunk cannot use.

    The message names Python calls (``crf.calibrate(...)``); where the advice differs on
    the command line, ``cli`` holds the message that names the options instead, which
    the CLI prints (:meth:`cli_text`)."""

    def __init__(self, *args, cli: str | None = None):
        super().__init__(*args)
        self.cli = cli

    def cli_text(self) -> str:
        """The message as the command line shows it."""
        return self.cli or str(self)


class CoNLLError(FstchunkError):
    """A malformed CoNLL file; the message names file and line."""


class ModelFileError(FstchunkError):
    """A model file that cannot be read; the message names the file."""


class SchemeError(FstchunkError):
    """An unknown scheme, a tag outside the scheme, or an invalid tag sequence.

    ``position`` is the 0-based token position of the offending tag when the
    error is about one tag of a sequence (``None`` otherwise), so that a reader
    can name the tag's own line: ``sentence.where(e.position)``."""

    def __init__(self, message: str, position: int | None = None):
        super().__init__(message)
        self.position = position


class InputError(FstchunkError):
    """Score arrays, machines, sequences or options that do not fit together."""


class DownloadError(InputError):
    """A corpus that cannot be fetched (:mod:`fstchunk.io.datasets`): the server cannot be
    reached, answers with an error, or sends a file whose checksum is not the expected
    one; the message names the URL and how to point fstchunk at a local copy."""


class LayoutError(InputError):
    """An input whose layout (its columns) does not fit what reads it: a fault of the
    whole file, not of one sentence, so commands that go on past a failing sentence
    (``decode``, ``expected``) stop at the first one of these instead."""


class OutputError(FstchunkError):
    """A destination that cannot be written (missing folder, a folder given as a
    file, no permission, a full disk, a failed external tool); the message names
    the path.  Raised before the work starts wherever the path can be checked."""


class TrainingInterrupted(FstchunkError):
    """Training stopped by the user (Ctrl-C); ``checkpoint`` is the file that
    ``--resume`` continues from (``None`` if none was written)."""

    def __init__(self, message: str, checkpoint: str | None = None, cli: str | None = None):
        super().__init__(message, cli=cli)
        self.checkpoint = checkpoint


class FstchunkWarning(UserWarning):
    """Something fstchunk can compute but that is likely not what was meant (score
    arrays that look like probabilities); the CLI prints it as one line
    ``fstchunk COMMAND: warning: ...``."""


class BudgetError(FstchunkError):
    """A computation whose estimated size (machine states, bytes of memory) exceeds
    the settable budget; raised *before* the work starts.  The message names the
    estimate, the budget, the option that raises it, and the cheaper way (e.g.
    ``method="fast"`` or a smaller ``--max-length``).  ``estimate`` and ``budget``
    hold the two numbers."""

    def __init__(self, message: str, estimate: float | None = None,
                 budget: float | None = None, cli: str | None = None):
        super().__init__(message, cli=cli)
        self.estimate = estimate
        self.budget = budget
