"""``fstchunk data get NAME... [--dir D] [--mirror URL]`` and ``fstchunk data list``:
the public corpora the documentation uses, fetched once into a cache folder
(:mod:`fstchunk.io.datasets`: addresses, checksums, the cache, ``$FSTCHUNK_DATA``)."""

from __future__ import annotations

import argparse

from ..io import datasets
from .common import HelpFormatter


def add_parsers(sub) -> None:
    p = sub.add_parser("data", formatter_class=HelpFormatter,
                       help="fetch the public corpora the documentation uses (CoNLL-2000, "
                            "CoNLL-2002 Dutch) into a cache folder, or list them")
    dsub = p.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    g = dsub.add_parser("get", formatter_class=HelpFormatter,
                        help="download a corpus (once: a file already there is kept), check "
                             "its checksum, write it as UTF-8 CoNLL text; prints its folder")
    g.add_argument("names", nargs="+", metavar="NAME",
                   help=f"the corpora: {', '.join(datasets.CORPORA)}")
    g.add_argument("--dir", default=None,
                   help=f"write into DIR/NAME/ (then FSTCHUNK_DATA=DIR finds it); default: "
                        f"the corpus as ${datasets.DATA_ENV} holds it, else the cache folder "
                        f"(${datasets.CACHE_ENV}, else $XDG_CACHE_HOME/fstchunk/data or "
                        f"~/.cache/fstchunk/data)")
    g.add_argument("--mirror", default=None,
                   help=f"a base URL (http, https or file) serving NAME/FILE as the canonical "
                        f"site does, instead of the canonical addresses; default "
                        f"${datasets.MIRROR_ENV}")
    g.add_argument("--timeout", type=float, default=datasets.TIMEOUT,
                   help="seconds without an answer before a download is given up")
    g.add_argument("--quiet", action="store_true",
                   help="no progress bar (there is none when standard error is not a "
                        "terminal)")
    g.set_defaults(func=run_get)
    s = dsub.add_parser("list", formatter_class=HelpFormatter,
                        help="the corpora known: each file, where it comes from, and where "
                             "it is on this machine")
    s.set_defaults(func=run_list)


def run_get(args: argparse.Namespace) -> int:
    for name in args.names:
        datasets.corpus(name)                     # every name checked before any download
    for name in args.names:
        folder = datasets.fetch(name, args.dir, args.mirror, args.quiet, args.timeout)
        files = ", ".join(f.name for f in datasets.CORPORA[name].files)
        print(f"{name}: {folder} ({files})")
    return 0


def run_list(args: argparse.Namespace) -> int:
    for name, url, where, note in datasets.status():
        if not url:
            print(f"{name}: not a public download: {note}")
        else:
            print(f"{name}: {note}, from {url}; {where or 'not fetched'}")
    return 0
