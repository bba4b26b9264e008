"""CRFsuite model files written in pure Python: what ``crfsuite learn -m`` and
``pycrfsuite.Trainer.train`` write, so that CRFsuite's tagger (``crfsuite tag -m``,
``pycrfsuite.Tagger().open``) reads and tags with it.

The layout is the one :mod:`.model` reads (CRFsuite's ``lib/crf/src/crf1d_model.c``,
``crf1dmw_*``): the 48-byte header; the feature chunk ``FEAT`` (state features, then
transition features, 20 bytes each); the label and the attribute string databases
``CQDB`` (``lib/cqdb/src/cqdb.c``: records ``id, size, key + NUL``, 256 open-addressing
hash tables keyed by Bob Jenkins' lookup3 ``hashlittle`` of the key with its NUL — what
the tagger looks an attribute up by — and the id → record array); the reference chunks
``LFRF`` (per label the transition features leaving it; L + 2 entries, as CRFsuite
writes, the last two empty) and ``AFRF`` (per attribute its state features), each
aligned to 4 bytes.  ``num_features`` of the header is 0, as CRFsuite leaves it.
"""

from __future__ import annotations

import os
import struct

import numpy as np

from ...core.errors import InputError
from ...core.outputs import atomic_path
from .model import BYTEORDER, CHUNK, CQDB_HEADER, CQDB_TABLES, FEATURE, HEADER, STATE, \
    TRANSITION, CRFsuiteModel

_M32 = 0xFFFFFFFF
_WORDS = struct.Struct("<III")


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _M32


def hashlittle(key: bytes, initval: int = 0) -> int:
    """Bob Jenkins' lookup3 ``hashlittle`` (public domain, 2006) of ``key``: the hash
    CQDB files index their strings by."""
    a = b = c = (0xDEADBEEF + len(key) + initval) & _M32
    n, at = len(key), 0
    while n > 12:
        x, y, z = _WORDS.unpack_from(key, at)
        a, b, c = (a + x) & _M32, (b + y) & _M32, (c + z) & _M32
        # mix(a, b, c)
        a = (a - c) & _M32; a ^= _rot(c, 4); c = (c + b) & _M32      # noqa: E702
        b = (b - a) & _M32; b ^= _rot(a, 6); a = (a + c) & _M32      # noqa: E702
        c = (c - b) & _M32; c ^= _rot(b, 8); b = (b + a) & _M32      # noqa: E702
        a = (a - c) & _M32; a ^= _rot(c, 16); c = (c + b) & _M32     # noqa: E702
        b = (b - a) & _M32; b ^= _rot(a, 19); a = (a + c) & _M32     # noqa: E702
        c = (c - b) & _M32; c ^= _rot(b, 4); b = (b + a) & _M32      # noqa: E702
        n, at = n - 12, at + 12
    if n == 0:
        return c
    x, y, z = _WORDS.unpack(key[at:] + bytes(12 - n))     # the last 1..12 bytes
    a, b, c = (a + x) & _M32, (b + y) & _M32, (c + z) & _M32
    # final(a, b, c)
    c ^= b; c = (c - _rot(b, 14)) & _M32       # noqa: E702
    a ^= c; a = (a - _rot(c, 11)) & _M32       # noqa: E702
    b ^= a; b = (b - _rot(a, 25)) & _M32       # noqa: E702
    c ^= b; c = (c - _rot(b, 16)) & _M32       # noqa: E702
    a ^= c; a = (a - _rot(c, 4)) & _M32        # noqa: E702
    b ^= a; b = (b - _rot(a, 14)) & _M32       # noqa: E702
    c ^= b; c = (c - _rot(b, 24)) & _M32       # noqa: E702
    return c


def _key(text: str, what: str) -> bytes:
    if not isinstance(text, str) or "\0" in text:
        raise InputError(f"{what} {text!r} cannot be written to a CRFsuite model file "
                         f"(a string without NUL characters is needed)")
    return text.encode("utf-8") + b"\0"


def cqdb(strings: list[str], what: str) -> bytes:
    """The CQDB string database of ``strings`` (id = position), as ``cqdb_writer``
    lays it out (module doc)."""
    head = CQDB_HEADER.size + 8 * CQDB_TABLES
    records, tables, offsets = [], [[] for _ in range(CQDB_TABLES)], []
    cur = head
    for i, s in enumerate(strings):
        key = _key(s, f"{what} {i}")
        hv = hashlittle(key)
        tables[hv % CQDB_TABLES].append((hv, cur))
        offsets.append(cur)
        records.append(struct.pack("<II", i, len(key)) + key)
        cur += 8 + len(key)
    refs, buckets = [], []
    for table in tables:
        n = 2 * len(table)
        refs.append((cur if table else 0, n))
        slots = [(0, 0)] * n
        for hv, off in table:
            k = (hv >> 8) % n
            while slots[k][1] != 0:
                k = (k + 1) % n
            slots[k] = (hv, off)
        buckets.append(b"".join(struct.pack("<II", *s) for s in slots))
        cur += 8 * n
    bwd = np.asarray(offsets, "<u4").tobytes()
    size = cur + len(bwd)
    header = CQDB_HEADER.pack(b"CQDB", size, 0, BYTEORDER, len(strings),
                              cur if strings else 0)
    table_refs = b"".join(struct.pack("<II", *r) for r in refs)
    return header + table_refs + b"".join(records) + b"".join(buckets) + bwd


def _refs(tag: bytes, begin: int, groups: list[np.ndarray], extra: int = 0) -> bytes:
    """A reference chunk at file offset ``begin`` (4-aligned): per group its feature ids."""
    n = len(groups) + extra
    at = begin + CHUNK.size + 4 * n
    offsets, body = [], []
    for ids in groups:
        offsets.append(at)
        part = struct.pack("<I", len(ids)) + np.asarray(ids, "<u4").tobytes()
        body.append(part)
        at += len(part)
    offsets += [0] * extra
    return (CHUNK.pack(tag, at - begin, n) + np.asarray(offsets, "<u4").tobytes()
            + b"".join(body))


def _pad(data: bytearray) -> None:
    data.extend(bytes(-len(data) % 4))


def encode_model(m: CRFsuiteModel) -> bytes:
    """The bytes of the CRFsuite model file of ``m``: its state features in its order,
    then a transition feature for each ``has_transition[i, j]`` (row by row)."""
    L, A = len(m.labels), len(m.attributes)
    src_t, dst_t = np.nonzero(m.has_transition)
    w_t = m.transitions[src_t, dst_t]
    weights = np.concatenate([np.asarray(m.state_weight, float), w_t])
    if not np.isfinite(weights).all():
        raise InputError("a CRFsuite model file holds finite weights only; this model has "
                         "an infinite or NaN weight")
    S = len(m.state_attr)
    if S and (np.min(m.state_attr) < 0 or np.max(m.state_attr) >= A
              or np.min(m.state_label) < 0 or np.max(m.state_label) >= L):
        raise InputError("a state feature names an attribute or label out of range")
    feats = np.zeros(S + len(src_t), FEATURE)
    feats["type"] = np.r_[np.full(S, STATE), np.full(len(src_t), TRANSITION)]
    feats["src"] = np.r_[np.asarray(m.state_attr, np.int64), src_t]
    feats["dst"] = np.r_[np.asarray(m.state_label, np.int64), dst_t]
    feats["weight"] = weights
    data = bytearray(HEADER.size)
    off_feat = len(data)
    data += CHUNK.pack(b"FEAT", CHUNK.size + FEATURE.itemsize * len(feats), len(feats))
    data += feats.tobytes()
    off_labels = len(data)
    data += cqdb(list(m.labels), "label")
    off_attrs = len(data)
    data += cqdb(list(m.attributes), "attribute")
    _pad(data)
    off_lrefs = len(data)
    ids = np.arange(len(feats))
    trans_ids = ids[S:]
    data += _refs(b"LFRF", off_lrefs, [trans_ids[src_t == i] for i in range(L)], extra=2)
    _pad(data)
    off_arefs = len(data)
    order = np.argsort(feats["src"][:S], kind="stable")
    cuts = np.searchsorted(feats["src"][:S][order], np.arange(A + 1))
    data += _refs(b"AFRF", off_arefs, [order[cuts[a]:cuts[a + 1]] for a in range(A)])
    data[:HEADER.size] = HEADER.pack(b"lCRF", len(data), b"FOMC", 100, 0, L, A, off_feat,
                                     off_labels, off_attrs, off_lrefs, off_arefs)
    return bytes(data)


def write_model(m: CRFsuiteModel, path: str | os.PathLike) -> None:
    """Write ``m`` as a CRFsuite model file at ``path`` (atomically)."""
    data = encode_model(m)
    with atomic_path(os.fspath(path), "CRFsuite model") as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def dump(m: CRFsuiteModel) -> str:
    """``crfsuite dump``'s text of the model file ``m`` was read from (``crf1dm_dump``):
    FILEHEADER, LABELS, ATTRIBUTES, TRANSITIONS (by source label), STATE_FEATURES (by
    attribute), weights printed with ``%f``."""
    h = m.header or {}
    out = ["FILEHEADER = {"]
    for k in ("magic", "size", "type", "version", "num_features", "num_labels", "num_attrs"):
        out.append(f"  {k}: {h.get(k, '')}")
    for k in ("off_features", "off_labels", "off_attrs", "off_labelrefs", "off_attrrefs"):
        out.append(f"  {k}: 0x{int(h.get(k, 0)):X}")
    out += ["}", "", "LABELS = {"]
    out += [f"  {i:5d}: {s}" for i, s in enumerate(m.labels)]
    out += ["}", "", "ATTRIBUTES = {"]
    out += [f"  {i:5d}: {s}" for i, s in enumerate(m.attributes)]
    out += ["}", "", "TRANSITIONS = {"]
    L = len(m.labels)
    out += [f"  ({TRANSITION}) {m.labels[i]} --> {m.labels[j]}: {m.transitions[i, j]:f}"
            for i in range(L) for j in range(L) if m.has_transition[i, j]]
    out += ["}", "", "STATE_FEATURES = {"]
    order = np.argsort(m.state_attr, kind="stable")
    out += [f"  ({STATE}) {m.attributes[m.state_attr[k]]} --> {m.labels[m.state_label[k]]}: "
            f"{m.state_weight[k]:f}" for k in order]
    out += ["}", "", ""]
    return "\n".join(out)
