"""``fstchunk import crfsuite MODEL [--scheme S|none] -o model.npz``: a CRFsuite model
file (``crfsuite learn``, ``pycrfsuite.Trainer``, sklearn-crfsuite's
``model_filename``) as an fstchunk model of kind ``attribute-crf``
(:func:`fstchunk.models.crfsuite_import.from_crfsuite`), which ``decode``,
``expected`` and ``train --init`` read with ``--format crfsuite`` inputs.

The destination is checked before any work and written atomically.
"""

from __future__ import annotations

import argparse

from ..core.outputs import check_output
from ..models.crfsuite_import import from_crfsuite
from ..schemes.tagspace import UNCONSTRAINED
from .common import HelpFormatter


def add_parsers(sub) -> None:
    p = sub.add_parser("import", formatter_class=HelpFormatter,
                       help="read a model of another toolkit (CRFsuite) into an fstchunk "
                            "model file")
    isub = p.add_subparsers(dest="import_command", required=True, metavar="TOOLKIT")
    c = isub.add_parser("crfsuite", formatter_class=HelpFormatter,
                        help="a CRFsuite model file (crfsuite learn -m, pycrfsuite, "
                             "sklearn-crfsuite's model_filename)")
    c.add_argument("model", metavar="MODEL", help="the CRFsuite model file")
    c.add_argument("--scheme", default=UNCONSTRAINED,
                   help="none: the unconstrained chain over CRFsuite's labels, as CRFsuite "
                        "decodes it (any labels; MAP and posterior decoding); a chunk scheme "
                        "(IOB2, IOBES, ...): CRFsuite's distribution restricted to the "
                        "scheme's valid sequences (MEU, expected F, chunk confidences); "
                        "docs/howto/crfsuite.md")
    c.add_argument("-o", "--output", required=True, help="fstchunk model file to write (.npz)")
    c.set_defaults(func=run_import)


def run_import(args: argparse.Namespace) -> int:
    check_output(args.output)
    model = from_crfsuite(args.model, args.scheme)
    model.save(args.output)
    added = model.settings_.get("impossible_tags") or []
    extra = f" (+ {', '.join(added)}: needed by {model.scheme_}, impossible)" if added else ""
    print(f"wrote {args.output}: {model.L - len(added)} labels{extra}, {len(model.fmap_)} "
          f"attributes, {model.P} state features, {int(model.transitions_.sum())} transition "
          f"features; scheme {model.scheme_}")
    return 0
