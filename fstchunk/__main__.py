"""``python -m fstchunk`` and the ``fstchunk`` script: the command line.

Nothing heavy is imported before :func:`run` catches Ctrl-C, so an interrupt while the
command's modules load ends with one line and exit status 130, not a traceback.

Pitfall: a Ctrl-C that lands inside an extension module's C import (numpy's) does not
always arrive as KeyboardInterrupt: the C code may turn it into another error (numpy's
``ImportError: PyCapsule_Import could not import module "datetime"``).  So :func:`run`
notes the signal itself, and any error raised after it is told as the interrupt."""
import signal
import sys


def _command() -> str:
    """The command word of the command line, for the one line (no import needed)."""
    word = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    return f"fstchunk {word}" if word and word.isidentifier() else "fstchunk"


def run() -> int:
    """The command line (:func:`fstchunk.cli.main`), Ctrl-C during its imports included."""
    interrupted: list[int] = []

    def on_sigint(signum, frame):            # Python's own handler, noting the signal
        interrupted.append(signum)
        raise KeyboardInterrupt

    previous = None
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:   # not if ignored
        previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        from .cli import main
        return main()
    except KeyboardInterrupt:
        print(f"{_command()}: interrupted", file=sys.stderr)
        return 130
    except Exception:
        if not interrupted:
            raise
        print(f"{_command()}: interrupted", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    sys.exit(run())
