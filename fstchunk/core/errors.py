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
    """The base of every error a user can cause: an input, option or file that
    fstchunk cannot use.  Its message names what and where (file:line, position,
    tag, option) and how to fix it; anything else fstchunk raises is a bug.  Catch
    this class to tell your data's faults from the rest; it is also a
    :class:`ValueError`, so ``except ValueError`` keeps working.

    The message names Python calls (``crf.calibrate(...)``); where the advice differs
    on the command line, ``cli`` holds the message that names the options instead,
    which the CLI prints (:meth:`cli_text`).

    Attributes:
        cli: the command line's wording of the message (``None``: the same).

    Examples:
        >>> import fstchunk
        >>> try:
        ...     fstchunk.tags_to_chunks(["O", "I-PER"], "IOB2")
        ... except fstchunk.FstchunkError as e:
        ...     print(type(e).__name__, "|", e)
        SchemeError | position 1: tag 'I-PER' cannot stand after 'O' in IOB2
        >>> [c.__name__ for c in fstchunk.InputError.__mro__[:4]]
        ['InputError', 'FstchunkError', 'ValueError', 'Exception']
    """

    def __init__(self, *args, cli: str | None = None):
        super().__init__(*args)
        self.cli = cli

    def cli_text(self) -> str:
        """The message as the command line shows it."""
        return self.cli or str(self)


class CoNLLError(FstchunkError):
    """A malformed CoNLL file (ragged columns, a line that cannot be read); the
    message names the file and line.

    Examples:
        >>> import io, fstchunk
        >>> fstchunk.read_conll(io.StringIO("a B-NP\\nb\\n"), min_columns=2)
        Traceback (most recent call last):
        fstchunk.core.errors.CoNLLError: <stream>:2: expected 2 columns like the lines before, found 1 (columns split at spaces and tabs): 'b'
    """


class ModelFileError(FstchunkError):
    """A model file that cannot be read: not a model file, of another kind, or
    with a field that does not fit (a checksum, a shape, a tag); the message names
    the file and the field.  Raised by :func:`fstchunk.load_model` and the models'
    ``load``.

    Examples:
        >>> import os, tempfile, fstchunk
        >>> path = os.path.join(tempfile.mkdtemp(), "m.npz")
        >>> with open(path, "w") as f:
        ...     _ = f.write("no model")
        >>> fstchunk.load_model(path)
        Traceback (most recent call last):
        fstchunk.core.errors.ModelFileError: ...m.npz: not a readable fstchunk model file (not an .npz)
    """


class SchemeError(FstchunkError):
    """An unknown scheme, a tag outside the scheme, or an invalid tag sequence
    (``I-PER`` after ``O`` in IOB2).

    Attributes:
        position: the 0-based token position of the offending tag when the error is
            about one tag of a sequence (``None`` otherwise), so that a reader can
            name the tag's own line: ``sentence.where(e.position)``.

    Examples:
        >>> import fstchunk
        >>> try:
        ...     fstchunk.tags_to_chunks(["O", "I-PER"], "IOB2")
        ... except fstchunk.SchemeError as e:
        ...     print(e.position)
        1
    """

    def __init__(self, message: str, position: int | None = None):
        super().__init__(message)
        self.position = position


class InputError(FstchunkError):
    """Score arrays, machines, sequences or options that do not fit together (a
    shape, a length, a value out of range, an unknown name); the message names the
    argument.

    Examples:
        >>> import numpy as np, fstchunk
        >>> tags = ("O", "B-PER", "I-PER")
        >>> fstchunk.Lattice.from_scores(tags, np.zeros((2, 2)), np.zeros((3, 3)))
        Traceback (most recent call last):
        fstchunk.core.errors.InputError: emissions has 2 columns but there are 3 tags
    """


class DownloadError(InputError):
    """A corpus that cannot be fetched (``fstchunk data get``,
    :mod:`fstchunk.io.datasets`): the server cannot be reached, answers with an error,
    or sends a file whose checksum is not the expected one; the message names the URL
    and how to point fstchunk at a local copy (``FSTCHUNK_DATA``).  An
    :class:`InputError`."""


class LayoutError(InputError):
    """An input whose layout (its columns) does not fit what reads it: ``--columns``
    that name a missing column, or a POS column that would be the tag column, or a
    file unlike the model's training file.  A fault of the whole file, not of one
    sentence, so commands that go on past a failing sentence (``decode``,
    ``expected``) stop at the first one of these instead.  An :class:`InputError`."""


class OutputError(FstchunkError):
    """A destination that cannot be written (missing folder, a folder given as a
    file, no permission, a full disk, a failed external tool); the message names
    the path.  Raised before the work starts wherever the path can be checked.

    Examples:
        >>> import fstchunk
        >>> fstchunk.write_conll([[["John", "B-PER"]]], "/no/such/folder/out.txt")
        Traceback (most recent call last):
        fstchunk.core.errors.OutputError: /no/such/folder/out.txt: folder /no/such/folder does not exist
    """


class TrainingInterrupted(FstchunkError):
    """Training stopped by the user (Ctrl-C, or SIGTERM on the command line) between
    the first step and the final model: what the solver keeps is saved to the
    checkpoint first, and :class:`fstchunk.Trainer` (``resume=True``) continues from it.

    Attributes:
        checkpoint: the file that ``resume`` / ``--resume`` continues from (``None``
            if none was written).
    """

    def __init__(self, message: str, checkpoint: str | None = None, cli: str | None = None):
        super().__init__(message, cli=cli)
        self.checkpoint = checkpoint


class NotFittedError(InputError, AttributeError):
    """A model used before ``fit`` or ``load`` gave it what it learns (scikit-learn's
    ``NotFittedError``); also an AttributeError, so ``hasattr(model, "theta_")`` is False
    on an unfitted model.

    Examples:
        >>> import fstchunk
        >>> fstchunk.CRF().theta_
        Traceback (most recent call last):
        ...
        fstchunk.core.errors.NotFittedError: this CRF is not fitted (theta_ is what fit learns): call fit(...) or CRF.load(path) first
    """


class FstchunkWarning(UserWarning):
    """A warning, not an error: something fstchunk can compute but that is likely
    not what was meant (score arrays that look like probabilities); the CLI prints
    it as one line ``fstchunk COMMAND: warning: ...``.  Silence or raise it with
    :mod:`warnings` filters on this class.

    Examples:
        >>> import warnings, numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # probabilities, not log
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _ = fstchunk.Lattice.from_scores(("O", "B", "I"), np.array(p), np.zeros((3, 3)))
        >>> caught[0].category.__name__, str(caught[0].message)[:40]
        ('FstchunkWarning', 'emissions: every row sums to 1 and every')
    """


class FstchunkDeprecationWarning(DeprecationWarning):
    """A name kept for old scripts that has a new one: the message names the new one.
    Fitted state is read under names ending in ``_`` (``crf.theta_``, ``crf.tags_``),
    scikit-learn's convention; the old names still work and say so.

    Examples:
        >>> import warnings, fstchunk
        >>> issubclass(fstchunk.FstchunkDeprecationWarning, DeprecationWarning)
        True
    """


class BudgetError(FstchunkError):
    """A computation whose estimated size (machine states, bytes of memory) exceeds
    the settable budget; raised *before* the work starts.  The message names the
    estimate, the budget, the option that raises it, and the cheaper way (e.g.
    ``method="fast"`` or a smaller ``--max-length``).

    Attributes:
        estimate: the estimated size.
        budget: the budget it exceeds.

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> try:
        ...     fstchunk.decode_meu(lattice, memory_budget=10)
        ... except fstchunk.BudgetError as e:
        ...     print(e.estimate > e.budget)
        True
    """

    def __init__(self, message: str, estimate: float | None = None,
                 budget: float | None = None, cli: str | None = None):
        super().__init__(message, cli=cli)
        self.estimate = estimate
        self.budget = budget
