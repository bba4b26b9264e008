"""What a resumed training run must match: the run fields a checkpoint records.

:class:`~fstchunk.learn.loop.Trainer` records its run (objective, λ, β, the loss, and the
caller's identity: the CLI passes scheme, features, columns and the training file's
:func:`file_digest`) in every checkpoint; :func:`check_same_run` refuses a resume whose
run differs, naming each differing field, both values and (on the command line) the
option that sets it.

Pitfall: identity fields must be :func:`plain` values, which a checkpoint's JSON gives
back unchanged.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from ..core import sources
from ..core.errors import InputError

def file_digest(path) -> str:
    """sha256 (hex) of the file at ``path``: the training file's identity in a
    checkpoint.  InputError naming the file if it cannot be read."""
    h = hashlib.sha256()
    try:
        with sources.open_binary(path) as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None
    return h.hexdigest()


def plain(value: Any) -> bool:
    """A value a checkpoint's JSON gives back unchanged (an identity field)."""
    return value is None or isinstance(value, (str, bool, int)) or (
        isinstance(value, float) and math.isfinite(value))


_MISSING = object()


#: run fields added after checkpoints recorded runs: their value in a checkpoint without them
ABSENT = {"min_count": 1}

#: the option that sets each run field a resume compares (named when it differs)
OPTIONS = {
    "objective": "--objective", "l2": "--l2", "beta": "--beta", "loss": "--loss",
    "select": "--select", "scheme": "--scheme", "template": "--features",
    "columns": "--columns", "train_sha256": "--train: the file's content",
    "dev_sha256": "--dev: the file's content", "init": "--init", "partial": "--partial",
    "min_count": "--min-count", "format": "--format", "D": "--hash-bits", "features": "--predicates",
    "max_gap": "--max-gap", "restrictions": "--restrict", "seed": "--seed",
    "average": "--no-average", "threshold": "--threshold", "kind": "--kind",
    "types": "the --train file's segment types", "collapse_pos": "--collapse-pos",
    "np_only": "--np-only", "sentences": "--sentences",
}


def _shown(record: dict, key: str) -> str:
    return repr(record[key]) if key in record else "(not recorded)"


def _difference(key: str, recorded: dict, now: dict, cli: bool = False) -> str:
    """One differing field of a resume, both values, and (``cli``) the option that sets
    it."""
    option = OPTIONS.get(key)
    if key == "D":                           # 2**bits buckets: as --hash-bits gives them
        bits = [f"{v.bit_length() - 1}" if isinstance(v, int) and v > 0 else "?"
                for v in (recorded.get(key), now.get(key))]
        option = f"--hash-bits {bits[0]} vs {bits[1]}"
    return (f"{key}: {_shown(recorded, key)} vs {_shown(now, key)}"
            + (f" ({option})" if option and cli else ""))


def check_same_run(checkpoint: str, recorded: dict, now: dict) -> None:
    """InputError naming every field where the checkpoint's ``recorded`` run differs
    from ``now`` (fields added since a checkpoint was written read as :data:`ABSENT`)."""
    recorded = {**{k: v for k, v in ABSENT.items() if k in now}, **recorded}
    keys = [key for key in list(now) + [k for k in recorded if k not in now]
            if recorded.get(key, _MISSING) != now.get(key, _MISSING)]
    if keys:
        what = f"checkpoint {checkpoint} is of another run (checkpoint vs now): "
        raise InputError(
            f"resume=True: {what}" + "; ".join(_difference(k, recorded, now) for k in keys),
            cli=f"--resume: {what}" + "; ".join(_difference(k, recorded, now, True)
                                                for k in keys))
