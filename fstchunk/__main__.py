"""``python -m fstchunk`` and the ``fstchunk`` script: the command line.

Nothing heavy is imported before :func:`run` catches Ctrl-C, so an interrupt while the
command's modules load ends with one line and exit status 130, not a traceback."""
import sys


def run() -> int:
    """The command line (:func:`fstchunk.cli.main`), Ctrl-C during its imports included."""
    try:
        from .cli import main
        return main()
    except KeyboardInterrupt:
        print("fstchunk: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(run())
