"""Small helpers for building and inspecting pynini machines over tag labels.

Pitfalls:

* pynini's string compilation treats ``[`` and ``]`` specially and splits on
  white space; tags are therefore turned into machines by *label*, never by
  compiling a string (:func:`string_fst`, :func:`union_of`).
* :func:`pynini.difference` needs an unweighted, epsilon-free, deterministic
  subtrahend; the builders work in the standard (tropical) semiring with no
  weights and convert to the caller's arc type at the end (:func:`to_arc_type`).
* OpenFst has no "is functional" test; :func:`is_functional` decides it for
  epsilon-free letter-to-letter machines (all machines here) from ``T^-1 o T``
  (``None`` when an arc reads or writes epsilon: ``EPSILONS`` alone misses 1:0).
* an arc type is not a weight type: ``"standard"`` arcs carry ``"tropical"``
  weights, and ``pynini.Weight.one("standard")`` fails (:func:`weight_type`).
* :func:`write_far` writes keys sorted (FARs require it) and refuses machines of
  another arc type than the FAR's.  OpenFst's FarWriter fails *silently* (a missing
  folder, a folder given as the file, a full disk: ``ERROR:`` lines on stderr,
  ``error()`` still False, a truncated file): the destination is checked first
  (:func:`fstchunk.core.outputs.check_output`), the FAR is written to a temporary in
  the same folder, read back (arc type, every key, every machine) and only then
  renamed over ``path``; any failure is an :class:`~fstchunk.core.errors.OutputError`
  naming ``path``, with nothing left at the destination.
"""

from __future__ import annotations

import math
import os
import struct
import sys
from typing import Iterable, Sequence

import numpy as np
import pynini

from ..core import outputs
from ..core.errors import InputError, OutputError

ARC_TYPES = ("standard", "log", "log64")

#: Convergence threshold for OpenFst's weighted algorithms.  Pitfall: the
#: defaults (push: 1/1024, rmepsilon: 1e-6) silently drop path mass below that
#: relative size, which breaks 1e-9 agreement with brute force.
DELTA = 1e-14


def check_arc_type(arc_type: str) -> str:
    if arc_type not in ARC_TYPES:
        raise InputError(f"unknown arc type {arc_type!r}; use one of {', '.join(ARC_TYPES)}")
    return arc_type


#: The weight type of each arc type (``pynini.Weight`` wants the former).
WEIGHT_TYPES = {"standard": "tropical", "log": "log", "log64": "log64"}


def weight_type(arc_type: str) -> str:
    """The weight type of ``arc_type``: ``"standard"`` arcs carry ``"tropical"`` weights.

    Pitfall: ``pynini.Weight.one("standard")`` fails; builders that take an arc
    type make their weights with this name."""
    return WEIGHT_TYPES[check_arc_type(arc_type)]


def attach(fst: pynini.Fst, symbols: pynini.SymbolTable) -> pynini.Fst:
    """Attach ``symbols`` as input and output table (in place); return ``fst``."""
    fst.set_input_symbols(symbols)
    fst.set_output_symbols(symbols)
    return fst


def bare(fst: pynini.Fst) -> pynini.Fst:
    """Copy without symbol tables, for compositions whose tables differ only by
    extra symbols (OpenFst refuses tables with different checksums)."""
    f = fst.copy()
    f.set_input_symbols(None)
    f.set_output_symbols(None)
    return f


def union_of(labels: Iterable[int] | Iterable[tuple[int, int]], arc_type: str = "standard",
             ) -> pynini.Fst:
    """Two-state machine with one arc per label (or ``(ilabel, olabel)`` pair)."""
    f = pynini.Fst(arc_type)
    s, t = f.add_state(), f.add_state()
    f.set_start(s)
    f.set_final(t)
    one = pynini.Weight.one(f.weight_type())
    for lab in labels:
        i, o = lab if isinstance(lab, tuple) else (lab, lab)
        f.add_arc(s, pynini.Arc(i, o, one, t))
    return f


def string_fst(labels: Sequence[int], arc_type: str = "standard",
               olabels: Sequence[int] | None = None) -> pynini.Fst:
    """Linear machine reading ``labels`` (writing ``olabels`` if given)."""
    olabels = labels if olabels is None else olabels
    if len(olabels) != len(labels):
        raise InputError(f"input and output label sequences differ in length "
                         f"({len(labels)} and {len(olabels)})")
    f = pynini.Fst(arc_type)
    s = f.add_state()
    f.set_start(s)
    one = pynini.Weight.one(f.weight_type())
    for i, o in zip(labels, olabels):
        t = f.add_state()
        f.add_arc(s, pynini.Arc(i, o, one, t))
        s = t
    f.set_final(s)
    return f


def to_arc_type(fst: pynini.Fst, arc_type: str) -> pynini.Fst:
    """Copy of ``fst`` with arcs of ``arc_type`` (weights carried over)."""
    check_arc_type(arc_type)
    if fst.arc_type() == arc_type:
        return fst.copy()
    map_type = {"standard": "to_std", "log": "to_log", "log64": "to_log64"}[arc_type]
    return pynini.arcmap(fst, map_type=map_type)


def write_far(path: str, machines: dict[str, pynini.Fst], arc_type: str) -> list[str]:
    """Write ``machines`` to a FAR at ``path`` (keys sorted, as FARs require);
    return the keys written.  Atomic and verified: an OutputError naming ``path``
    (and nothing at ``path``) when it cannot be written in full."""
    check_arc_type(arc_type)
    keys = sorted(machines)
    if not keys:                            # OpenFst reads an empty FAR back as arc type "error"
        raise InputError(f"cannot write {path}: no machines to write")
    wrong = [k for k in keys if machines[k].arc_type() != arc_type]
    if wrong:
        raise InputError(f"cannot write {path}: machine {wrong[0]!r} has "
                         f"{machines[wrong[0]].arc_type()} arcs, the FAR {arc_type} arcs")
    with outputs.atomic_path(path, "FAR") as tmp:
        with outputs.captured_stderr() as err:
            failed = _write_far_file(tmp, machines, keys, arc_type)
        reason = failed or _far_problem(tmp, keys, arc_type)
        if reason:
            said = outputs.first_error_line(err.text)
            if outputs.disk_full(tmp):
                reason = "no space left on device"
            elif said:
                reason = f"{reason}; OpenFst: {said}"
            raise OutputError(f"{path}: cannot write the FAR ({reason})")
        if err.text:                        # warnings of a write that succeeded
            sys.stderr.write(err.text)
    return keys


def _write_far_file(tmp: str, machines: dict[str, pynini.Fst], keys: list[str],
                    arc_type: str) -> str:
    """Write the FAR at ``tmp``; "" or what went wrong as far as the writer says."""
    far = pynini.Far(tmp, "w", arc_type=arc_type)
    try:
        if far.error():
            return "the FAR writer could not open the file"
        for key in keys:
            far[key] = machines[key]
            if far.error():
                return f"writing machine {key!r} failed"
    finally:
        far.close()
    return ""


def _far_problem(tmp: str, keys: list[str], arc_type: str) -> str:
    """Read the FAR at ``tmp`` back: "" if it holds ``keys`` (in order) and a machine
    of ``arc_type`` under each, else what is wrong."""
    if not os.path.isfile(tmp) or os.path.getsize(tmp) == 0:
        return "no data was written"
    if not _sttable_intact(tmp, len(keys)):
        return "the file read back is damaged"
    got = []
    with outputs.captured_stderr():         # OpenFst's own complaints: reported below
        try:
            with pynini.Far(tmp, "r") as far:
                if far.arc_type() != arc_type:
                    return f"read back with {far.arc_type()} arcs, not {arc_type}"
                while not far.done():
                    got.append(far.get_key())
                    if far.get_fst().arc_type() != arc_type:
                        return f"machine {got[-1]!r} read back with the wrong arc type"
                    far.next()
                if far.error():
                    return "the file read back is damaged"
        except Exception as e:              # pywrapfst raises its own FstIOError etc.
            return f"the file read back is unreadable: {type(e).__name__}"
    if got != keys:
        return f"read back {len(got)} of {len(keys)} machines"
    return ""


def _sttable_intact(path: str, count: int) -> bool:
    """Whether the trailer of the STTable FAR at ``path`` (OpenFst's default: int32
    magic and version, the entries, their int64 offsets, then their int64 count) holds
    ``count`` offsets, increasing from 8, inside the file.  Checked before OpenFst
    reads it: a truncated file's trailer is garbage, and OpenFst spends half a minute
    on a count it reads there."""
    size = os.path.getsize(path)
    table = size - 8 - 8 * count
    if table < 8:
        return False
    with open(path, "rb") as fh:
        fh.seek(table)
        tail = fh.read()
    *offsets, n = struct.unpack(f"<{count + 1}q", tail)
    return n == count and offsets[0] == 8 and all(
        a < b for a, b in zip(offsets, offsets[1:] + [table]))


def unweighted_optimize(fst: pynini.Fst) -> pynini.Fst:
    """Epsilon-free, deterministic, minimal copy of an unweighted acceptor or
    functional letter transducer (label pairs encoded while determinizing)."""
    f = fst.copy().rmepsilon()
    if f.properties(pynini.ACCEPTOR, True) == pynini.ACCEPTOR:
        return pynini.determinize(f).minimize()
    mapper = pynini.EncodeMapper(f.arc_type(), encode_labels=True)
    f.encode(mapper)
    f = pynini.determinize(f).minimize()
    return f.decode(mapper)


def weight_value(w) -> float:
    """A tropical/log weight as a float at full double precision (``inf`` for zero).

    Pitfall: ``str(w)`` and ``float(w)`` print only 9 significant digits.  We read
    that value v0, then the residual w ⊘ v0 (in these semirings a subtraction,
    done in C++ at full precision), whose 9 digits carry the rest.
    """
    s = w.to_string()
    if s in ("Infinity", "inf"):
        return math.inf
    if s in ("-Infinity", "-inf"):
        return -math.inf
    v0 = float(s)
    if w.type() not in ("tropical", "log", "log64"):
        return v0
    residual = pynini.divide(w, pynini.Weight(w.type(), v0)).to_string()
    return v0 + float(residual)


class ArcTable:
    """A machine's arcs as arrays, read from OpenFst's binary VectorFst form in one pass
    (:func:`arc_table`): ``start``; per state ``final`` (the final weight's value, inf
    for zero); per arc ``src``, ``ilabel``, ``olabel``, ``weight`` (its value, full
    precision) and ``dst``, in state order and each state's arc order."""

    def __init__(self, start, final, src, ilabel, olabel, weight, dst):
        self.start, self.final = start, final
        self.src, self.ilabel, self.olabel, self.weight, self.dst = (
            src, ilabel, olabel, weight, dst)


_WEIGHT_BYTES = {"log64": "<f8", "log": "<f4", "standard": "<f4"}


def arc_table(fst: pynini.Fst) -> ArcTable:
    """The arcs of ``fst`` (log64, log or standard arcs) as arrays (:class:`ArcTable`):
    the values :func:`weight_value` reads one arc at a time, without a Python call per
    arc.  Pitfall: this reads the binary layout of OpenFst's VectorFst (header, then per
    state its final weight, arc count and arcs); a layout it does not recognise, or one
    that does not end where the header says, is a RuntimeError, never a wrong table."""
    f = bare(fst)
    kind = f.arc_type()
    if kind not in _WEIGHT_BYTES:
        raise InputError(f"arc_table reads log64, log or standard arcs, not {kind!r}")
    buf = f.write_to_string()
    wdt = np.dtype(_WEIGHT_BYTES[kind])
    try:
        magic, = struct.unpack_from("<i", buf, 0)
        at, out = 4, []
        for _ in range(2):                            # the FST type and the arc type
            k, = struct.unpack_from("<i", buf, at)
            out.append(buf[at + 4:at + 4 + k].decode())
            at += 4 + k
        _, flags, _, start, n_states, n_arcs = struct.unpack_from("<iiQqqq", buf, at)
        at += 40
        if magic != 2125659606 or out != ["vector", kind] or flags & 3:
            raise ValueError(f"header {magic}, {out}, flags {flags}")
        arc = np.dtype([("i", "<i4"), ("o", "<i4"), ("w", wdt), ("d", "<i4")])
        finals, counts, firsts = np.empty(n_states, np.int64), [], []
        head = struct.Struct("<q")
        for q in range(n_states):                 # per state: final weight, arc count, arcs
            finals[q] = at
            k, = head.unpack_from(buf, at + wdt.itemsize)
            at += wdt.itemsize + 8
            counts.append(k)
            firsts.append(at)
            at += arc.itemsize * k
        if at != len(buf) or n_states != f.num_states() or (n_arcs and sum(counts) != n_arcs):
            raise ValueError(f"{len(buf) - at} bytes left, {n_states} states")
    except (ValueError, struct.error) as e:
        raise RuntimeError(f"fstchunk bug: OpenFst's binary machine was not read ({e})") from None
    raw = np.frombuffer(buf, np.uint8)
    counts = np.array(counts, dtype=np.int64)
    starts = np.repeat(np.array(firsts, dtype=np.int64), counts) + arc.itemsize * (
        np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
    arcs = raw[starts[:, None] + np.arange(arc.itemsize)].copy().view(arc).ravel()
    final = raw[finals[:, None] + np.arange(wdt.itemsize)].copy().view(wdt).ravel()
    return ArcTable(int(start), final.astype(float), np.repeat(np.arange(n_states), counts),
                    arcs["i"].astype(np.int64), arcs["o"].astype(np.int64),
                    arcs["w"].astype(float), arcs["d"].astype(np.int64))


def total_weight(fst: pynini.Fst) -> float:
    """-log of the sum over all paths (log semirings), exactly.

    Pitfall: :func:`pynini.shortestdistance` hands back weights rounded to 9
    digits; here every label is mapped to epsilon and epsilon removal sums the
    paths inside OpenFst, leaving the total as a final weight we read exactly.
    """
    if fst.num_states() == 0 or fst.start() == pynini.NO_STATE_ID:
        return math.inf
    f = pynini.arcmap(pynini.arcmap(fst, map_type="input_epsilon"), map_type="output_epsilon")
    f.rmepsilon(delta=DELTA)
    if f.num_states() == 0 or f.start() == pynini.NO_STATE_ID:
        return math.inf
    return weight_value(f.final(f.start()))


def paths(fst: pynini.Fst, limit: int = 100000) -> list[tuple[list[int], list[int], float]]:
    """All successful paths of an acyclic machine: (ilabels, olabels, -log weight).

    Epsilon labels (0) are dropped from the label lists.
    """
    if fst.num_states() == 0 or fst.start() == pynini.NO_STATE_ID:
        return []
    if fst.properties(pynini.CYCLIC, True) == pynini.CYCLIC:
        raise InputError("paths() needs an acyclic machine; this one is cyclic")
    out = []
    stack = [(fst.start(), [], [], 0.0)]
    while stack:
        s, il, ol, w = stack.pop()
        fw = weight_value(fst.final(s))
        if fw != math.inf:
            out.append((il, ol, w + fw))
            if len(out) > limit:
                raise InputError(f"paths(): the machine has more than {limit} paths (raise limit=)")
        for a in fst.arcs(s):
            stack.append((a.nextstate,
                          il + ([a.ilabel] if a.ilabel else []),
                          ol + ([a.olabel] if a.olabel else []),
                          w + weight_value(a.weight)))
    return out


def is_functional(fst: pynini.Fst) -> bool | None:
    """Whether ``fst`` maps each input to at most one output (weights ignored).

    Decided exactly for epsilon-free machines: trim ``T^-1 o T``; every arc of an
    epsilon-free letter machine then reads and writes the same label iff the
    relation is a partial identity, i.e. iff ``T`` is functional.  Acceptors are
    functional; returns ``None`` (unknown) for other machines with epsilon arcs.
    """
    f = pynini.arcmap(fst.copy(), map_type="rmweight")
    if f.properties(pynini.ACCEPTOR, True) == pynini.ACCEPTOR:
        return True                   # an identity, epsilons or not
    # Pitfall: EPSILONS flags only 0:0 arcs; a 1:0 arc must make the answer unknown too.
    if f.properties(pynini.I_EPSILONS | pynini.O_EPSILONS, True):
        return None
    inv = f.copy().invert().arcsort(sort_type="olabel")
    r = pynini.compose(inv, f.arcsort(sort_type="ilabel")).connect()
    return all(a.ilabel == a.olabel for s in r.states() for a in r.arcs(s))


def properties(fst: pynini.Fst) -> dict[str, object]:
    """The figures ``fstchunk grammar info`` prints."""
    def has(p):
        return fst.properties(p, True) == p
    return {
        "states": fst.num_states(),
        "arcs": sum(fst.num_arcs(s) for s in fst.states()),
        "arc type": fst.arc_type(),
        "acceptor": has(pynini.ACCEPTOR),
        "deterministic": has(pynini.I_DETERMINISTIC),
        "functional": is_functional(fst),
        "acyclic": has(pynini.ACYCLIC),
        "epsilon-free": has(pynini.NO_EPSILONS),
        "unweighted": has(pynini.UNWEIGHTED),
    }
