"""The state budget: machine sizes estimated before they are built, and refused when too large.

Every builder whose machine can grow past a few thousand states has a size formula
here, in states and arcs, from the numbers that fix it (chunk bound K, number of
chunk types k, sentence length n, the fixed sequence's chunk spans, the lattice's
layers); none builds anything but the small, cached scheme encoder (itself checked
first), and none costs more than O(n + chunks).  Callers (:mod:`.registry` for
``fstchunk grammar``, :func:`fstchunk.decoding.expected.joint_by_composition` for
``expected_f(method="fst")``) call :func:`check` *before* building, and so do the
builders of validity, encoders, conversions, T, M, T⊠M, the toy model and the loss
machines themselves, so a machine that would exhaust memory (or take minutes) is one
:class:`~fstchunk.core.errors.BudgetError` instead, whichever way it is asked for.

The budget counts states, with ``ARCS_PER_STATE`` arcs weighing as much as one state
(:attr:`Estimate.size`): OpenFst spends ~80 bytes on a state of a VectorFst plus ~25-40
per arc, and a composition ~50-130 more per state for its state table.  Measured peak
memory per unit of the estimate: 106-144 bytes for ``expected_f(method="fst")`` (all
intermediates included; 1 and 11 types), ~120 for ``grammar info TM``.  The default,
``DEFAULT_STATE_BUDGET`` = 4,000,000, therefore keeps an accepted job under ~0.6 GB
(CoNLL-2000's 23 tags: composition up to ~48 tokens; ``grammar info TM`` up to
``--max-length 18``, 0.47 GB).  It is set, in this order of precedence, by
:func:`set_state_budget` or the context manager :func:`use_state_budget`, the
environment variable ``FSTCHUNK_STATE_BUDGET``, the default; on the command line by
``--state-budget N`` (``fstchunk grammar``, ``fstchunk expected``).

Sizes (g = 4k + 1 IOBES tags; exact unless said otherwise):

* T: 2(K+1)+1 states; M: K+2; T⊠M: K²+3K+3 (pairs ct <= cm, plus the marker
  states); their arcs exactly;
* ``grammar info`` also decides "functional" by composing the machine's inverse with
  it: for T, M, T⊠M at most S² states and Σ_x C(x)² arcs (C(x): the arcs reading x),
  quadratic in the machine (a bound; 1.2-3x the real size);
* validity and encoder <= 4k+2 states, conversions <= 6k+2 (maxima over the schemes);
  the toy bigram lattice 3n+1;
* the composition path (:func:`composition`): the specialised pair acceptor A has,
  after i tokens, the states (ct, match, cm) with ct <= the fixed chunks ended by i
  and ct + match <= cm <= i (an upper bound, exact when every chunk is one token);
  A ∘ E_scheme at most |E| times that; R = A' ∘ lattice at most A_i times the pairs
  (encoder state, lattice state) at i that an arc can enter; the marker extraction
  doubles R.  R∘extractor is the largest, and the one checked.

Pitfalls:

* this module imports only :mod:`.local` (for the encoder's shape), so that the family
  modules can import it and check their own sizes.
* the budget is process-wide (a module global, not per thread); forked workers
  inherit it.  :func:`use_state_budget` restores the previous setting on exit.
* an estimate is an upper bound or close to one (tested against ``num_states()`` and
  the arc counts on small machines, within 10x); a refused job may have fitted.  An
  estimate marked ``at_least`` is a lower bound, used to refuse before the exact size
  costs O(n) to work out (the F-loss machine of a long gold); the message says so.
* ``Lattice.fst`` is not guarded: it is linear in n·tags for score arrays, and in
  the size of the given machine for ``Lattice.from_fst``.  Grammars registered by
  other code without an ``estimate`` are built unchecked.
"""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np

from ..core.errors import BudgetError, InputError
from . import local

DEFAULT_STATE_BUDGET = 4_000_000
ENV_VAR = "FSTCHUNK_STATE_BUDGET"
#: Arcs that weigh as much as one state in the budget (their share of the memory).
ARCS_PER_STATE = 4

_override: int | None = None


# ---------------------------------------------------------------------- the budget
def _positive(value, where: str) -> int:
    try:
        n = int(str(value).strip().replace("_", ""))
    except ValueError:
        n = 0
    if n < 1 or isinstance(value, bool) or (isinstance(value, float) and value != n):
        raise InputError(f"{where} must be a positive integer (a number of states), "
                         f"got {value!r}")
    return n


def state_budget() -> int:
    """The budget in force: :func:`set_state_budget`, else ``$FSTCHUNK_STATE_BUDGET``,
    else ``DEFAULT_STATE_BUDGET``."""
    if _override is not None:
        return _override
    env = os.environ.get(ENV_VAR)
    if env is not None and env.strip():
        return _positive(env, f"the environment variable {ENV_VAR}")
    return DEFAULT_STATE_BUDGET


def set_state_budget(n: int | None) -> int | None:
    """Set the budget to ``n`` states (``None``: back to the environment or default);
    return the previous setting (``None`` if there was none)."""
    global _override
    previous = _override
    _override = None if n is None else _positive(n, "the state budget")
    return previous


@contextlib.contextmanager
def use_state_budget(n: int | None) -> Iterator[int]:
    """``with use_state_budget(n):`` the budget is ``n`` inside (``None``: unchanged)."""
    previous = set_state_budget(n) if n is not None else _override
    try:
        yield state_budget()
    finally:
        set_state_budget(previous)


@dataclass(frozen=True)
class Estimate:
    """Estimated size of a machine: states and arcs (upper bounds or close); with
    ``at_least``, a lower bound (what is refused before the exact size is worked out)."""
    states: int
    arcs: int = 0
    at_least: bool = False

    @property
    def size(self) -> int:
        """What the budget counts: states plus arcs / ``ARCS_PER_STATE``."""
        return self.states + -(-self.arcs // ARCS_PER_STATE)

    def __add__(self, other: "Estimate") -> "Estimate":
        return Estimate(self.states + other.states, self.arcs + other.arcs,
                        self.at_least or other.at_least)

    def describe(self) -> str:
        about = "at least" if self.at_least else "about"
        if self.size == self.states:
            return f"{about} {self.states:,} states"
        return (f"{about} {self.size:,} states ({self.states:,} states and {self.arcs:,} arcs, "
                f"{ARCS_PER_STATE} arcs counted as one state)")


def fits(estimate: Estimate) -> bool:
    return estimate.size <= state_budget()


def check(what: str, estimate: Estimate | int, remedy: str = "") -> Estimate:
    """Raise :class:`BudgetError` if ``estimate`` is over the budget; return it otherwise.

    The message names ``what`` would be built, the estimate, the budget, ``remedy``
    (the cheaper way) and how to raise the budget."""
    est = estimate if isinstance(estimate, Estimate) else Estimate(int(estimate))
    limit = state_budget()
    if est.size <= limit:
        return est
    way = f"{remedy}, or give" if remedy else "give"
    raise BudgetError(f"{what} would build {est.describe()}, over the state budget of "
                      f"{limit:,}; {way} a state budget of at least {est.size:,} "
                      f"(--state-budget, {ENV_VAR} or "
                      f"fstchunk.grammars.budget.set_state_budget)", est.size, limit)


def largest_fitting(values: Sequence[int], estimate: Callable[[int], Estimate]) -> int | None:
    """The largest of the increasing ``values`` whose ``estimate`` fits the budget (None if
    none does), by bisection: ``estimate`` must grow with the value (every size here
    does), so a range of 10⁵ lengths costs 17 estimates."""
    lo, hi = 0, len(values)                 # values[:lo] fit, values[hi:] do not
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(estimate(values[mid])):
            lo = mid + 1
        else:
            hi = mid
    return values[lo - 1] if lo else None


# ---------------------------------------------------------------------- machines
def types_phrase(types: Sequence[str]) -> str:
    """"untyped tags" or "12 chunk types", for the messages."""
    return "untyped tags" if tuple(types) == ("",) else f"{len(types):,} chunk type(s)"


def iobes_tags(n_types: int) -> int:
    """g = 4k + 1: O plus B, I, E, S of each type (untyped: k = 1)."""
    return 4 * max(1, n_types) + 1


def tp_transducer(max_length: int, n_types: int) -> Estimate:
    """T with ct <= K: states (ct, match) and the marker sink; every pair of tags
    but the k + k² that would count past K at ct = K, and a marker per match = 0."""
    k, k1, g = max(1, n_types), max_length + 1, iobes_tags(n_types)
    return Estimate(2 * k1 + 1, 2 * k1 * g * g - k - k * k + k1)


def near_counter(max_length: int, n_types: int, inverse: bool = False) -> Estimate:
    """The counter of "a boundary off by one token earns half" (:mod:`fstchunk.schemes.near_match`)
    with credits <= 2K: at most 7(k + 1) match states (5k + 8 reachable) per credit
    count, every pair of tags from each; ``inverse``: its inverse composed with it,
    state pairs with at most g³ arcs each."""
    g = iobes_tags(n_types)
    states = 7 * (max(1, n_types) + 1) * (2 * max_length + 1) + 1
    if inverse:
        return Estimate(states * states, states * states * g ** 3)
    return Estimate(states, states * g * g)


def chunk_counter(max_length: int, n_types: int) -> Estimate:
    """M with cm <= K: states cm and the marker sink; at cm = K no B or S on y."""
    k, g = max(1, n_types), iobes_tags(n_types)
    return Estimate(max_length + 2, max_length * g * g + g * (2 * k + 1) + max_length + 1)


def pair_machine(max_length: int, n_types: int) -> Estimate:
    """T⊠M: (K+1)² states (ct, match, cm), K+1 between the markers, one final; the
    2K+1 states at cm = K read no B or S on y."""
    K, k, g = max_length, max(1, n_types), iobes_tags(n_types)
    markers = (K + 1) * (K + 2) // 2 + K + 1
    return Estimate((K + 1) ** 2 + K + 2, K * K * g * g + (2 * K + 1) * g * (2 * k + 1) + markers)


def self_composition(states: int, label_arcs: int, marker_arcs: int, n_types: int) -> Estimate:
    """A machine's inverse composed with it (``fsa.is_functional``): at most every
    pair of states, and Σ_x C(x)² arcs, C(x) the machine's arcs reading x: at most
    ``label_arcs`` for each of the g tags, ``marker_arcs`` for all markers together."""
    return Estimate(states * states, iobes_tags(n_types) * label_arcs ** 2 + marker_arcs ** 2)


def counter_self_composition(name: str, max_length: int, n_types: int) -> Estimate:
    """:func:`self_composition` of T, M or T⊠M (``name``)."""
    K, k, g = max_length, max(1, n_types), iobes_tags(n_types)
    if name == "T":
        return self_composition(2 * K + 3, 2 * (K + 1) * g, K + 1, n_types)
    if name == "M":
        return self_composition(K + 2, K * g + 2 * k + 1, K + 1, n_types)
    if name == "TM":
        return self_composition((K + 1) ** 2 + K + 2, K * K * g + (2 * K + 1) * (2 * k + 1),
                                (K + 1) * (K + 2) // 2 + K + 1, n_types)
    raise InputError(f"no self-composition estimate for {name!r}")


def validity_machine(n_types: int) -> Estimate:
    """A validity acceptor (the largest scheme: IOBES3)."""
    k = max(1, n_types)
    return Estimate(4 * k + 2, k * k + 12 * k + 2)


def encoder_machine(n_types: int) -> Estimate:
    """An encoder IOBES -> scheme (the largest: IOBES3 in states, IOE1 in arcs)."""
    k = max(1, n_types)
    return Estimate(4 * k + 2, 3 * k * k + 12 * k + 2)


def conversion_machine(n_types: int) -> Estimate:
    """A conversion transducer (the largest: into or out of IOE1/IOBES3)."""
    k = max(1, n_types)
    return Estimate(6 * k + 2, 3 * k * k + 17 * k + 2)


def letter_self_composition(machine: Estimate) -> Estimate:
    """The encoders and conversions composed with their inverse: measured the size of
    the machine itself (they are input-deterministic bijections); twice, for margin."""
    return Estimate(2 * machine.states, 2 * machine.arcs)


def score_lattice(n: int, n_labels: int) -> Estimate:
    """A linear-chain lattice over ``n`` tokens and ``n_labels`` tags (the toy model)."""
    return Estimate(1 + n * n_labels, n_labels + (n - 1) * n_labels * n_labels)


# ---------------------------------------------------------------------- composition path
def pair_acceptor_layers(n: int, fixed_spans: Sequence[tuple[int, int]]) -> list[int]:
    """States of the specialised pair acceptor after i = 0..n tokens (see module doc):
    with d_i = min(chunks ended by i, u - 1) and u = i - match + 1 cm values,
    Σ_match (d_i + 1)·u − d_i(d_i + 1)/2, match = 1 only inside a fixed chunk.
    Vectorised: O(n + chunks), so a long sentence is sized in milliseconds."""
    i = np.arange(n + 1, dtype=np.int64)
    spans = np.array(fixed_spans, np.int64).reshape(-1, 2)
    done = np.searchsorted(np.sort(spans[:, 1]), i, side="right")
    long = spans[spans[:, 1] > spans[:, 0] + 1]
    inside = (np.bincount(long[:, 0] + 1, minlength=n + 2)     # s < i < e: a fixed
              - np.bincount(long[:, 1], minlength=n + 2))        # chunk is open at i
    open_ = np.cumsum(inside)[:n + 1] > 0
    open_[n] = False
    total = np.zeros(n + 1, np.int64)
    for match in (0, 1):
        u = i - match + 1                             # cm values for ct = 0
        d = np.minimum(done, u - 1)
        term = np.where(d >= 0, (d + 1) * u - d * (d + 1) // 2, 0)
        total += term if match == 0 else np.where(open_, term, 0)
    return total.tolist()


def pair_acceptor(n: int, fixed_spans: Sequence[tuple[int, int]], n_types: int) -> Estimate:
    """``counting.specialised_pair_acceptor``: the layers plus n + 2 marker states."""
    layers = pair_acceptor_layers(n, fixed_spans)
    g = iobes_tags(n_types)
    return Estimate(sum(layers) + n + 2, g * sum(layers[:-1]) + layers[-1] + n + 1)


@dataclass(frozen=True)
class EncoderShape:
    """What the estimates read off E_scheme: its size, its start's out-degree, and for
    each scheme tag label the E states an arc writing it enters (how many, and the sum
    of their out-degrees)."""
    states: int
    arcs: int
    start_degree: int
    entered: Mapping[int, tuple[int, int]]


@functools.lru_cache(maxsize=None)
def encoder_shape(scheme: str, types: tuple[str, ...]) -> EncoderShape:
    """The :class:`EncoderShape` of E_scheme (IOBES -> ``scheme``).  Builds the encoder
    (a few states per type, cached) once it fits the budget (BudgetError otherwise);
    not for IOBES, which needs none."""
    check(f"the encoder IOBES -> {scheme} over {types_phrase(types)}",
          encoder_machine(len(types)))
    e = local.machine(("IOBES", scheme), types)
    into: dict[int, set[int]] = {}
    for s in e.states():
        for a in e.arcs(s):
            into.setdefault(a.olabel, set()).add(a.nextstate)
    entered = {lab: (len(v), sum(e.num_arcs(q) for q in v)) for lab, v in into.items()}
    return EncoderShape(e.num_states(), sum(e.num_arcs(q) for q in e.states()),
                        e.num_arcs(e.start()), entered)


def composition(n: int, fixed_spans: Sequence[tuple[int, int]], scheme: str,
                types: tuple[str, ...], layer_labels: Sequence[Sequence[int]],
                layer_arcs: Sequence[int]) -> dict[str, Estimate]:
    """The machines of ``joint_by_composition``: ``A`` (pair acceptor), ``AE`` (∘ the
    encoder), ``Q`` (the lattice plus markers), ``R`` (A' ∘ Q), ``R2`` (∘ the marker
    extractor, the largest).  The lattice: ``layer_labels[i]`` are the tag labels of
    its states after token i+1 (one per state), ``layer_arcs[i]`` its arcs into them."""
    n_types = len(types)
    layers = pair_acceptor_layers(n, fixed_spans)
    a = pair_acceptor(n, fixed_spans, n_types)
    widths = [len(labs) for labs in layer_labels]
    marks = 2 * (n + 2)                        # marker states of a stage: O(n)
    if scheme == "IOBES":                      # no encoder: A' = A, R states (a, q)
        ae = a
        pairs = [1] + widths
        degrees = list(layer_arcs)             # q's arcs: the lattice's own
    else:                                      # (a, e), then ((a, e), q)
        e = encoder_shape(scheme, types)
        inner, last = e.states * sum(layers[:-1]), e.states * layers[-1]
        ae = Estimate(inner + last + marks,
                      e.arcs * sum(layers[:-1]) + 2 * (last + marks))
        pairs = [1] + [sum(e.entered.get(int(lab), (0, 0))[0] for lab in labs)
                       for labs in layer_labels]
        degrees = [e.start_degree] + [sum(e.entered.get(int(lab), (0, 0))[1] for lab in labs)
                                      for labs in layer_labels]
    last = layers[-1] * pairs[-1]
    r_states = sum(ai * pi for ai, pi in zip(layers, pairs)) + marks
    r_arcs = sum(ai * di for ai, di in zip(layers[:-1], degrees)) + 2 * (last + marks)
    q_arcs = sum(layer_arcs)
    return {"A": a, "AE": ae,
            "Q": Estimate(1 + sum(widths) + 3,
                          q_arcs + (max(widths[-1:], default=1) + 2) * 2 * (n + 1)),
            "R": Estimate(r_states, r_arcs),
            "R2": Estimate(2 * r_states + 2, r_arcs + r_states + 2)}


__all__ = ["ARCS_PER_STATE", "DEFAULT_STATE_BUDGET", "ENV_VAR", "EncoderShape", "Estimate",
           "check", "chunk_counter", "composition", "conversion_machine",
           "counter_self_composition", "encoder_machine", "encoder_shape", "fits",
           "largest_fitting", "letter_self_composition", "near_counter", "pair_acceptor",
           "pair_acceptor_layers", "pair_machine", "score_lattice", "self_composition",
           "set_state_budget", "state_budget", "tp_transducer", "types_phrase",
           "use_state_budget", "validity_machine"]
