"""CRFsuite model files (``crfsuite learn -m``, ``pycrfsuite.Trainer.train``), read in
pure Python: labels, attributes, state features and the transition matrix.

The format, from CRFsuite's ``lib/crf/src/crf1d_model.c`` and ``lib/cqdb/src/cqdb.c``
(chokkan/crfsuite), all integers little-endian uint32:

* header, 48 bytes: ``lCRF``, file size, ``FOMC``, version 100, the numbers of
  features (CRFsuite's writer leaves it 0: the feature chunk's count is the one),
  labels and attributes, the offsets of the feature chunk, the label and
  attribute string databases, and the label and attribute reference chunks;
* feature chunk ``FEAT``: size, count, then per feature ``type`` (0: state, from an
  attribute to a label; 1: transition, from a label to a label), ``src``, ``dst`` and
  the weight as a little-endian IEEE double (20 bytes);
* string databases ``CQDB`` (one for labels, one for attributes): a 24-byte header
  (``CQDB``, size, flag, byte-order mark 0x62445371, number and offset of the backward
  links), 256 hash-table references, the records (id, key size, the key with its NUL)
  and the backward array: record offsets by id, which give id -> string;
* reference chunks ``LFRF``/``AFRF``: per label/attribute the features that use it
  (derived data: their headers are checked, their contents are not needed).

The model scores a label sequence y of items x as CRFsuite does (``crf1d_context``):
score(y) = Σ_t Σ_a x_t[a]·w_state[a, y_t] + Σ_t trans[y_{t-1}, y_t] — no start or end
weights, every transition allowed.

Every inconsistency (a short or truncated file, a wrong magic, chunk or byte-order
mark, an offset or index out of range, a non-finite weight, a string that is not
UTF-8, a feature given twice) is one :class:`~fstchunk.core.errors.ModelFileError` naming
the file and the byte offset.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np

from ...core import sources
from ...core.errors import ModelFileError

HEADER = struct.Struct("<4sI4s9I")
CHUNK = struct.Struct("<4sII")
CQDB_HEADER = struct.Struct("<4sIIIII")
CQDB_TABLES = 256
BYTEORDER = 0x62445371
FEATURE = np.dtype([("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("weight", "<f8")])
STATE, TRANSITION = 0, 1


@dataclass
class CRFsuiteModel:
    """A CRFsuite model: ``labels`` and ``attributes`` by id, the state features as
    parallel arrays (``state_attr``, ``state_label``, ``state_weight``: one entry per
    (attribute, label) feature of the file, in its order) and the dense
    ``transitions[from, to]`` (0 where the file has no feature; ``has_transition``
    says where it has one); ``header``: the file header's fields, as ``crfsuite dump``
    names them (None for a model not read from a file)."""
    path: str
    labels: list[str]
    attributes: list[str]
    state_attr: np.ndarray
    state_label: np.ndarray
    state_weight: np.ndarray
    transitions: np.ndarray
    has_transition: np.ndarray
    header: dict | None = None

    def state_features(self) -> dict[tuple[str, str], float]:
        """``{(attribute, label): weight}``, as ``pycrfsuite.Tagger.info()`` has it."""
        return {(self.attributes[a], self.labels[y]): float(w) for a, y, w in
                zip(self.state_attr, self.state_label, self.state_weight)}

    def transition_features(self, nonzero: bool = True) -> dict[tuple[str, str], float]:
        """``{(from_label, to_label): weight}`` of the file's transition features; only
        the non-zero ones by default."""
        L = len(self.labels)
        return {(self.labels[i], self.labels[j]): float(self.transitions[i, j])
                for i in range(L) for j in range(L)
                if self.has_transition[i, j] and (not nonzero or self.transitions[i, j] != 0)}


class _Buffer:
    """The file's bytes with bounds-checked reads; errors name the file and offset."""

    def __init__(self, path: str, data: bytes):
        self.path, self.data = path, data

    def error(self, offset: int, problem: str) -> ModelFileError:
        return ModelFileError(f"{self.path}: byte offset {offset}: {problem} (not a CRFsuite "
                              f"model file, or a damaged or truncated one)")

    def need(self, offset: int, size: int, what: str) -> None:
        if offset < 0 or offset + size > len(self.data):
            raise self.error(offset, f"{what} needs {size} bytes, but the file has "
                                     f"{len(self.data)}")

    def unpack(self, s: struct.Struct, offset: int, what: str) -> tuple:
        self.need(offset, s.size, what)
        return s.unpack_from(self.data, offset)

    def chunk(self, offset: int, tag: bytes, what: str) -> tuple[int, int]:
        """(size, count) of the chunk ``tag`` at ``offset``."""
        got, size, num = self.unpack(CHUNK, offset, what)
        if got != tag:
            raise self.error(offset, f"{what}: expected chunk {tag.decode()}, found {got!r}")
        return size, num


def _strings(buf: _Buffer, offset: int, count: int, what: str) -> list[str]:
    """The ``count`` strings by id of the CQDB database at ``offset``."""
    magic, size, _flag, order, bwd_size, bwd_offset = buf.unpack(CQDB_HEADER, offset, what)
    if magic != b"CQDB":
        raise buf.error(offset, f"{what}: expected a CQDB string database, found {magic!r}")
    if order != BYTEORDER:
        raise buf.error(offset + 12, f"{what}: byte-order mark {order:#x}, expected "
                                     f"{BYTEORDER:#x}")
    buf.need(offset, size, what)
    if bwd_size != count:
        raise buf.error(offset + 16, f"{what}: {bwd_size} strings, but the header says "
                                     f"{count}")
    if count == 0:
        return []
    if bwd_offset == 0:
        raise buf.error(offset + 20, f"{what}: no id -> string array")
    links = np.frombuffer(buf.data, "<u4", count, offset + bwd_offset) if (
        offset + bwd_offset + 4 * count <= len(buf.data)) else None
    if links is None:
        raise buf.error(offset + bwd_offset, f"{what}: the id -> string array runs past the "
                                             f"end of the file")
    out = []
    for i, link in enumerate(links.tolist()):
        at = offset + link
        if link == 0 or link + 8 > size:
            raise buf.error(offset + bwd_offset + 4 * i, f"{what}: string {i} at offset "
                                                         f"{link}, outside the database")
        rid, ksize = struct.unpack_from("<II", buf.data, at)
        if rid != i:
            raise buf.error(at, f"{what}: record of string {i} has id {rid}")
        if ksize == 0 or link + 8 + ksize > size or buf.data[at + 8 + ksize - 1] != 0:
            raise buf.error(at + 4, f"{what}: string {i} of {ksize} bytes is not a "
                                    f"NUL-terminated string inside the database")
        try:
            out.append(buf.data[at + 8:at + 7 + ksize].decode("utf-8"))
        except UnicodeDecodeError as e:
            raise buf.error(at + 8 + e.start, f"{what}: string {i} is not UTF-8") from None
    return out


def read_model(path: str | os.PathLike) -> CRFsuiteModel:
    """The CRFsuite model file at ``path`` (see the module doc); ModelFileError naming
    the file and the byte offset of the first inconsistency."""
    name = os.fspath(path)
    try:
        data = sources.read_bytes(name)
    except OSError as e:
        raise ModelFileError(f"{name}: cannot read the CRFsuite model ({e.strerror})") from None
    return parse_model(data, name)


#: the names of the header's fields after the magic, as ``crfsuite dump`` prints them
HEADER_FIELDS = ("size", "type", "version", "num_features", "num_labels", "num_attrs",
                 "off_features", "off_labels", "off_attrs", "off_labelrefs", "off_attrrefs")


def parse_model(data: bytes, name: str = "<bytes>") -> CRFsuiteModel:
    """The CRFsuite model in the bytes ``data`` (``name``: what errors call it)."""
    if data[:4] == b"PK\x03\x04":
        raise ModelFileError(f"{name}: a zip archive (an fstchunk model file, .npz?), not a "
                             f"CRFsuite model file: an fstchunk model needs no import; give it "
                             f"as --model (fstchunk.load_model)")
    buf = _Buffer(name, data)
    (magic, size, mtype, version, n_feat, n_labels, n_attrs, off_feat, off_labels, off_attrs,
     off_lrefs, off_arefs) = buf.unpack(HEADER, 0, "the file header")
    if magic != b"lCRF":
        raise buf.error(0, f"magic {magic!r}, expected b'lCRF'")
    if size != len(data):
        raise buf.error(4, f"the header says the file has {size} bytes, but it has "
                           f"{len(data)}")
    if mtype != b"FOMC" or version != 100:
        raise buf.error(8, f"model type {mtype!r} version {version}; this reader knows "
                           f"b'FOMC' version 100 (CRFsuite 0.12's first-order CRF)")
    labels = _strings(buf, off_labels, n_labels, "the label database")
    attributes = _strings(buf, off_attrs, n_attrs, "the attribute database")
    buf.chunk(off_lrefs, b"LFRF", "the label references")
    buf.chunk(off_arefs, b"AFRF", "the attribute references")
    chunk_size, num = buf.chunk(off_feat, b"FEAT", "the feature chunk")
    if n_feat not in (0, num) or chunk_size != CHUNK.size + FEATURE.itemsize * num:
        raise buf.error(off_feat + 4, f"the feature chunk holds {num} features in "
                                      f"{chunk_size} bytes; the header says {n_feat}")
    buf.need(off_feat, chunk_size, "the feature chunk")
    feats = np.frombuffer(data, FEATURE, num, off_feat + CHUNK.size)
    where = off_feat + CHUNK.size + FEATURE.itemsize * np.arange(num)

    def refuse(mask: np.ndarray, field: int, problem: str) -> None:
        if mask.any():
            k = int(np.flatnonzero(mask)[0])
            raise buf.error(int(where[k]) + field, f"feature {k}: {problem}")

    typ = feats["type"]
    refuse((typ != STATE) & (typ != TRANSITION), 0, "type is neither 0 (state) nor 1 "
                                                    "(transition)")
    state, trans = typ == STATE, typ == TRANSITION
    refuse(state & (feats["src"] >= n_attrs), 4, f"attribute id out of range of {n_attrs}")
    refuse(trans & (feats["src"] >= n_labels), 4, f"label id out of range of {n_labels}")
    refuse(feats["dst"] >= n_labels, 8, f"label id out of range of {n_labels}")
    refuse(~np.isfinite(feats["weight"]), 12, "the weight is not finite")
    key = feats["src"].astype(np.int64) * max(n_labels, 1) + feats["dst"] + (
        typ.astype(np.int64) * (max(n_attrs, n_labels) + 1) * max(n_labels, 1))
    _, first = np.unique(key, return_index=True)
    refuse(~np.isin(np.arange(num), first), 0, "a (source, label) pair given twice")
    T = np.zeros((n_labels, n_labels))
    T[feats["src"][trans], feats["dst"][trans]] = feats["weight"][trans]
    has = np.zeros((n_labels, n_labels), dtype=bool)
    has[feats["src"][trans], feats["dst"][trans]] = True
    header = dict(zip(("magic",) + HEADER_FIELDS, buf.unpack(HEADER, 0, "the file header")))
    header.update(magic=magic.decode("latin-1"), type=mtype.decode("latin-1"))
    return CRFsuiteModel(name, labels, attributes, feats["src"][state].astype(np.int64),
                         feats["dst"][state].astype(np.int64),
                         feats["weight"][state].astype(float), T, has, header)
