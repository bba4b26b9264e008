"""argparse types for options that name an entry of a registry: ``--utility`` (the
utilities of :mod:`fstchunk.decoding.utilities`) and ``--objective`` (the objectives of
:mod:`fstchunk.learn.objectives`), each also in the parametrised forms the registry
reads (``weighted:LOC=2``, ``meu-weighted:LOC=2``) — which argparse's ``choices``
cannot list — refused with the registry's own message."""

from __future__ import annotations

import argparse
from typing import Callable

from ..core.errors import InputError
from ..decoding.utilities import utility as resolve_utility
from ..learn.objectives import objective


def utility_option(text: str) -> str:
    """argparse type: ``--utility``, a name :func:`fstchunk.decoding.utilities.utility`
    knows (``type:T``'s T is checked against the model's types when it reads them)."""
    try:
        resolve_utility(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e).replace(" or a fstchunk.Utility", "")) from None
    return text


def objective_option(among: tuple) -> Callable[[str], str]:
    """argparse type: ``--objective``, a name of ``among`` (``meu-weighted:T=w,...``
    with its weights), written back in the registry's form."""
    def parse(text: str) -> str:
        try:
            return objective(text, among).name
        except InputError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse
