"""The joint model of Shimizu & Haas (2006) as one object: decoding, chunk layer, files.

:class:`JointModel` is a :class:`~.scoring.PartScorer` (templates,
vocabularies, one weight vector: a sentence's part scores) that hands the parts
to Figure 1's DP (:mod:`.dp`: Viterbi, inside-outside), the machine twin
(:mod:`.machine`) or the chunk layer's :class:`~fstchunk.lattice.Lattice`, and
trains through :mod:`.train`.  It follows the model protocol: ``kind``,
``scheme``, ``lattices``, ``fit`` (returns the model), ``save`` and ``load``.
:func:`encode` reads a :class:`~.corpus.Layered` sentence the one way that
training, :func:`~.data.predict` and :meth:`JointModel.lattices` share.

Pitfalls:

* ``kind`` is the model file's kind (always ``"joint"``); ``settings["kind"]``
  (:attr:`JointModel.variant`) says which of joint model, tagger (chunk label O
  only, the POS layer carries the tags) or chunker (the chunk tags as the label
  layer, the POS column as input) it was built as.  Only the joint variant has
  a chunk layer (:meth:`JointModel.lattices` raises
  :class:`~fstchunk.errors.InputError` otherwise).
* The chunk node's score is split into a start half and an end half, so the
  chunk layer is also a first-order chain over token states (C, P,
  starts-a-segment): :meth:`JointModel.chunk_lattice` uses it to hand the chunk
  distribution to the exact MEU decoder; decoding itself follows Figure 1.
* The model file (kind ``joint``) stores labels, templates, vocabularies in id
  order, settings and ``w``; a file that does not fit raises
  :class:`~fstchunk.errors.ModelFileError` naming it.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pynini

from ...conll import Sentence
from ...engine.chain import Layers, token_marginals
from ...errors import InputError, ModelFileError
from ...lattice import Lattice
from ..io import load_model_file, save_model
from . import train
from .corpus import Layered, layered
from .dp import chain_layers, inside_outside, viterbi
from .machine import chunk_fst, joint_fst, pair_symbol
from .scoring import Encoded, PartScorer
from .structure import Parts, Structure, structure_parts


class JointModel(PartScorer):
    """Label-chunk model (see :class:`~.scoring.PartScorer` for the parts' scores):
    Figure 1's decoding, the chunk layer, training and model files."""

    kind = "joint"
    scheme = "IOB2"

    @property
    def variant(self) -> str:
        """``joint``, ``tagger`` or ``chunker`` (see the module doc)."""
        return self.settings.get("kind", "joint")

    # --------------------------------------------------------------- decoding
    def decode(self, x: Encoded, w: np.ndarray | None = None) -> tuple[Structure, float]:
        """Figure 1's Viterbi: the best structure and its score."""
        return viterbi(self.parts(x, w))

    def marginals(self, x: Encoded) -> tuple[float, Parts]:
        """log Z and part marginals (inside-outside over Figure 1's tables)."""
        return inside_outside(self.parts(x))

    def chunk_lattice(self, x: Encoded) -> Lattice:
        """The chunk layer's distribution (POS summed out) as a :class:`Lattice` over
        IOB2 chunk tags; its machine is :func:`joint_fst` projected to chunk tags."""
        parts = self.parts(x)
        return Lattice(self.chunk_tags, self.scheme, chain_layers(parts, self._tag_index),
                       raw_fst=lambda: self.chunk_fst(parts))

    def lattices(self, sentences: Sequence[Sentence]) -> list[Lattice]:
        """One chunk-layer lattice per sentence (the model protocol), the sentences
        read as :func:`~.data.predict` reads them (this model's POS/NP settings)."""
        if self.variant != "joint":
            raise InputError(f"a {self.variant} model has no chunk layer: lattices need "
                             f"the joint model")
        data = layered(sentences, self.settings.get("collapse_pos", False),
                       self.settings.get("np_only", False))
        return [self.chunk_lattice(encode(self, d, gold=False)) for d in data]

    def token_marginals(self, x: Encoded) -> tuple[list[str], np.ndarray]:
        """Pr(token k has ``chunktag|POS``), from the chain's state posteriors;
        the twin of :func:`~.machine.fst_token_marginals` on :meth:`fst`."""
        names = [pair_symbol(t, self.pos_labels[P])
                 for C in range(self.c) for P in range(self.p)
                 for t in (self.chunk_tags[self._tag_index[0, C]],
                           self.chunk_tags[self._tag_index[1, C]])]
        cols = list(dict.fromkeys(names))
        index = np.array([cols.index(x) for x in names])
        lay = chain_layers(self.parts(x), self._tag_index)
        pairs = Layers(lay.weights, [index] * x.n, lay.final)    # states (C, P, s) → pair
        return cols, token_marginals(pairs, len(cols))

    def fst(self, x: Encoded, arc_type: str = "log64") -> pynini.Fst:
        """:func:`~.machine.joint_fst` of one sentence."""
        return joint_fst(self.parts(x), self.chunk_labels, self.pos_labels, self.outside,
                         arc_type)

    def chunk_fst(self, parts: Parts) -> pynini.Fst:
        """:func:`~.machine.joint_fst` with each ``chunktag|POS`` symbol mapped to its chunk tag."""
        return chunk_fst(parts, self.chunk_labels, self.pos_labels, self.outside,
                         self.chunk_tags)

    # --------------------------------------------------------------- training
    def loss(self, gold: Structure, y: Structure) -> float:
        """Hamming loss over both layers: wrong POS labels + wrong chunk tags."""
        gp, gc = self.tags(gold)
        yp, yc = self.tags(y)
        return float(sum(a != b for a, b in zip(gp, yp)) + sum(a != b for a, b in zip(gc, yc)))

    def fit(self, data: Sequence[Encoded], algorithm: str = "perceptron", iterations: int = 10,
            l2: float = 0.5, progress: bool = False,
            callback: Callable[[int, "JointModel"], None] | None = None) -> "JointModel":
        """Train in place and return the model: averaged perceptron (Algorithm 4.1
        with Collins' averaging), MMVP (Algorithm 4.3), both with the first-iteration
        trick; or ``crf``: conditional likelihood + l2·‖w‖² by L-BFGS (``iterations``
        = its maximum number of iterations).  See :mod:`.train`."""
        train.fit(self, data, algorithm, iterations, l2, progress, callback)
        return self

    def _difference(self, x: Encoded, gold: Structure, y: Structure
                    ) -> tuple[np.ndarray, np.ndarray]:
        """f(x, gold) − f(x, y) as a sparse (indices, values) vector."""
        gi, gv = self.features(x, structure_parts(gold, self.c, self.p))
        pi, pv = self.features(x, structure_parts(y, self.c, self.p))
        idx, inv = np.unique(np.concatenate([gi, pi]), return_inverse=True)
        val = np.bincount(inv, weights=np.concatenate([gv, -pv]), minlength=len(idx))
        keep = val != 0
        return idx[keep], val[keep]

    def _objective(self, w: np.ndarray, data: Sequence[Encoded], l2: float
                   ) -> tuple[float, np.ndarray]:
        """The CRF objective and its gradient at ``w`` (:func:`.train.objective`)."""
        return train.objective(self, w, data, l2)

    # -------------------------------------------------------------------- io
    def save(self, path) -> None:
        meta = {"chunk_labels": list(self.chunk_labels), "pos_labels": list(self.pos_labels),
                "templates": {k: [list(map(list, t)) for t in v] for k, v in self.templates.items()},
                "vocabs": [sorted(v, key=v.get) for v in self.vocabs],
                "settings": self.settings}
        save_model(path, self.kind, {"w": self.w}, meta)

    @classmethod
    def load(cls, path) -> "JointModel":
        meta, arrays = load_model_file(path, kind=cls.kind)
        try:
            vocabs = [{o: i + 1 for i, o in enumerate(v)} for v in meta["vocabs"]]
            return cls(meta["chunk_labels"], meta["pos_labels"], meta["templates"], vocabs,
                       arrays["w"], meta.get("settings", {}))
        except (KeyError, ValueError, TypeError) as e:
            raise ModelFileError(f"{path}: corrupt joint model ({e})") from None


def input_columns(variant: str, d: Layered) -> dict[str, list[str]]:
    """The observation columns of a sentence for a model variant (a chunker
    also reads ``d.pos`` as input)."""
    return JointModel.columns(d.sentence.column(0), d.pos if variant == "chunker" else None)


def encode(model: JointModel, d: Layered, cols: dict | None = None, gold: bool = True
           ) -> Encoded:
    """Encode one sentence for ``model`` (a chunker reads ``d.pos`` as input),
    with its gold structure if ``gold``."""
    if cols is None:
        cols = input_columns(model.variant, d)
    where = d.sentence.where(0)
    if not gold:
        return model.encode(cols, where=where)
    if model.variant == "joint":
        return model.encode(cols, d.pos, d.chunks, where)
    labels = d.pos if model.variant == "tagger" else d.chunks
    known = [t if t in model.pos_labels else model.pos_labels[0] for t in labels]
    return model.encode(cols, known, ["O"] * len(labels), where)
