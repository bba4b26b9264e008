"""The joint model of Shimizu & Haas (2006) as one object: decoding, chunk layer, training, files.

:class:`JointModel` is an estimator (:mod:`.fitting`: the constructor takes the
hyper-parameters, :meth:`~.fitting.JointEstimator.fit` learns labels, vocabularies and
weights, a :class:`~.scoring.PartScorer` in ``scorer_``) that hands a sentence's parts
to Figure 1's DP (:mod:`.dp`: Viterbi, inside-outside), the machine twin
(:mod:`.machine`) or the chunk layer's :class:`~fstchunk.structures.lattice.Lattice`, and
trains through :class:`fstchunk.learn.loop.Trainer` (the objectives, solvers and
statistics in :mod:`.train`).  It follows the model protocol: ``kind``, ``scheme_``,
``lattices``, ``fit`` (returns the model), ``save`` and ``load``.

    model = fstchunk.JointModel(algorithm="mmvp", collapse_pos=True, np_only=True)
    model.fit(read_conll("train.txt"))

:func:`encode` reads a :class:`~.corpus.Layered` sentence the one way that
training, :func:`~.data.predict` and :meth:`JointModel.lattices` share.

Pitfalls:

* ``kind`` is the model file's kind (always ``"joint"``); ``variant_``
  (``settings_["kind"]``) says which of joint model, tagger (chunk label O only, the
  POS layer carries the tags) or chunker (the chunk tags as the label layer, the POS
  column as input) it was built as.  Only the joint variant has a chunk layer
  (:meth:`JointModel.lattices` raises :class:`~fstchunk.core.errors.InputError`
  otherwise).
* The chunk node's score is split into a start half and an end half, so the
  chunk layer is also a first-order chain over token states (C, P,
  starts-a-segment): :meth:`JointModel.chunk_lattice` uses it to hand the chunk
  distribution to the exact MEU decoder; decoding itself follows Figure 1.
* Probabilities: p(y|x) ∝ exp(score(x, y)/T), T = ``settings_["temperature"]``
  (1 when absent).  A ``crf`` (ML) model is probabilistic with T = 1; a perceptron or
  MMVP model only once calibrated (:meth:`JointModel.calibrate`, :mod:`.calibration`).
  Every probabilistic use (:meth:`~JointModel.marginals`,
  :meth:`~JointModel.token_marginals`, :meth:`~JointModel.chunk_lattice`,
  :meth:`~JointModel.lattices`, MEU in :func:`~.data.predict`) applies T, and
  refuses an uncalibrated non-probabilistic model with
  :class:`~fstchunk.core.errors.InputError` saying how to calibrate it, unless the
  caller passes ``require_probabilities=False`` (MAP decoding through the generic
  decoders: Viterbi does not change with T).  :meth:`~JointModel.decode` and
  :meth:`~JointModel.fst` never refuse.
* The model reads word column 0 and POS column 1 of the sentences it is given
  (:attr:`JointModel.reads`); the CLI moves a file's columns there.  Its training
  layout (``layout_``, :mod:`fstchunk.io.layout`) is recorded by the trainer that saw
  the file (``fstchunk joint train``: ``fit(layout=...)``), None otherwise.
* The model file (kind ``joint``) stores labels, templates, vocabularies in id
  order, settings and ``w``; :mod:`.files` checks every field on load and names the
  file and field of one that does not fit (:class:`~fstchunk.core.errors.ModelFileError`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pynini

from ...core.errors import InputError
from ...engine.chain import Layers, token_marginals
from ...io.columns import Columns
from ...io.conll import Sentence
from ...io.layout import Layout
from ...learn import objectives as lo
from ...structures.lattice import Lattice
from ..io import save_model
from .calibration import HeldOut, fit_temperature
from .corpus import Layered, layered
from .dp import chain_layers, inside_outside, viterbi
from .encoding import encode
from .files import read_model, reading
from .fitting import JointEstimator
from .machine import chunk_fst, joint_fst, pair_symbol
from .scoring import Encoded, PartScorer
from .structure import Parts, Structure
from .train import ALGORITHMS

#: the Python call that calibrates a joint model (:meth:`JointModel.require_probabilities`)
CALIBRATE_CALL = "fstchunk.joint.calibrate(model, fstchunk.joint.layered(held_out_sentences))"


class JointModel(JointEstimator):
    """Shimizu & Haas's (2006) joint model: one linear model labels each token (a
    POS tag) and chunks the sentence at once, decoded by their Figure 1's dynamic
    programme; its chunk layer is a :class:`Lattice` for the decoders (MEU
    included).  The constructor takes the hyper-parameters; :meth:`fit` learns the
    labels, vocabularies and weights from training sentences;
    ``fstchunk.joint.predict`` tags and chunks.

    Args:
        variant: ``joint``, ``tagger`` or ``chunker`` (module doc).
        algorithm: ``perceptron``, ``mmvp`` or ``crf`` (likelihood; probabilistic).
        max_iter: epochs of perceptron/mmvp, L-BFGS iterations of crf.
        l2: λ of crf (``None``: :data:`.train.DEFAULT_L2`); the others take none.
        tol: L-BFGS's stopping tolerance (``None``: the solver's default).
        select: the weights kept: ``last``, or ``dev`` (the best dev F).
        collapse_pos: POS collapsed by Table 3 when reading sentences.
        np_only: NP chunks only when reading sentences.
        warm_start: ``fit`` on a fitted model trains on from its weights.

    Raises:
        InputError: from :meth:`fit`, for a hyper-parameter it cannot take.

    Attributes:
        chunk_labels_: the chunk types, then ``O``.
        pos_labels_: the token labels (POS tags).
        theta_: the weights.
        settings_: what training recorded (algorithm, epochs, temperature, ...).
        layout_: the training file's layout (None: not recorded).
        scheme_: ``"IOB2"``, the chunk layer's scheme.
        probabilistic: whether its scores are a distribution (``crf``, or calibrated).

    Examples:
        >>> import io, fstchunk
        >>> text = "John NNP B-NP\\nran VBD O\\n\\nMary NNP B-NP\\nsat VBD O\\ndown RB O\\n"
        >>> train = fstchunk.read_conll(io.StringIO(text))
        >>> model = fstchunk.JointModel(algorithm="crf", max_iter=5).fit(train)
        >>> model.variant_, model.probabilistic, model.chunk_labels_
        ('joint', True, ('NP', 'O'))
        >>> fstchunk.joint.predict(model, fstchunk.joint.layered(train[:1]))
        ([['NNP', 'VBD']], [['B-NP', 'O']])
    """

    #: where :meth:`lattices` reads the words and POS tags (:func:`~.corpus.layered`)
    reads = Columns(0, 1, None)
    #: the file this model was loaded from or last saved to (for messages)
    _path: str | None = None

    @property
    def path(self) -> str | None:
        """The file this model was loaded from or last saved to (None: neither)."""
        return self._path

    @classmethod
    def from_state(cls, chunk_labels: Sequence[str], pos_labels: Sequence[str],
                   templates: dict[str, list[tuple]], vocabs: list[dict[str, int]],
                   w: np.ndarray | None = None, settings: dict | None = None,
                   layout: Layout | None = None) -> "JointModel":
        """A fitted model of this state (what a file holds, or :func:`~.data.model_for`
        builds), its hyper-parameters those the settings record.  InputError: chunk
        labels without ``O``, or weights of the wrong size."""
        settings = dict(settings or {})
        algorithm = settings.get("algorithm", "perceptron")
        smooth = ALGORITHMS.get(algorithm, lo.PERCEPTRON).smooth
        run = settings.get("run") if isinstance(settings.get("run"), dict) else {}
        steps = settings.get("iteration")
        model = cls(variant=settings.get("kind", "joint"), algorithm=algorithm,
                    max_iter=steps if isinstance(steps, int) and steps >= 1 else 10,
                    l2=settings.get("l2") if smooth else None,
                    select=run.get("select", "last"),
                    collapse_pos=bool(settings.get("collapse_pos", False)),
                    np_only=bool(settings.get("np_only", False)))
        model._set_state(PartScorer(chunk_labels, pos_labels, templates, vocabs, w),
                         settings, layout)
        return model

    # ---------------------------------------------------------- probabilities
    @property
    def temperature(self) -> float:
        """T of p(y|x) ∝ exp(score(x, y)/T): the calibrated one, else 1."""
        return float(self.settings_.get("temperature", 1.0))

    @property
    def trained_by(self) -> lo.Objective | None:
        """The objective the weights were trained by (``settings_["algorithm"]``, which
        every trained file records; None: untrained)."""
        return ALGORITHMS.get(self.settings_.get("algorithm"))

    @property
    def probabilistic(self) -> bool:
        """Whether exp(score/T) is a fitted distribution: trained by ML (``crf``, T = 1)
        or calibrated (:meth:`calibrate`)."""
        trained = self.trained_by
        return (trained is not None and trained.probabilistic) or "temperature" in self.settings_

    def require_probabilities(self, fix: str | None = None) -> None:
        """InputError saying how to calibrate, unless :attr:`probabilistic`: ``fix`` (the
        command line names its command), else the Python call."""
        if self.probabilistic:
            return
        name = self.path or "this joint model"
        how = (f"was trained by {self.settings_['algorithm']}" if "algorithm" in self.settings_
               else "is untrained")
        what = (f"{name} {how}; its scores are not probabilities. Calibrate it on held-out "
                f"sentences first: ")
        arg = self.path or "MODEL"
        raise InputError(what + f"{fix or CALIBRATE_CALL}; MAP decoding needs no calibration",
                         cli=what + (fix or f"fstchunk joint calibrate --model {arg} --input "
                                     f"HELDOUT -o {arg} (or joint train --calibrate HELDOUT)"))

    def calibrate(self, data: Sequence[Encoded], source: str | None = None) -> float:
        """Fit the temperature T by maximum likelihood of the gold structures of
        held-out encoded sentences (:func:`encode` with ``gold=True``; not the
        training set), store it in the settings (``temperature``, ``calibrated_on``
        = {source, sentences}, ``calibration_nll`` = mean NLL per sentence at T) and
        return it.  See :mod:`.calibration`; MAP decoding is unchanged by T."""
        if self.variant_ != "joint":
            raise InputError(f"a {self.variant_} model has no chunk layer to calibrate: "
                             f"calibration is for the joint model")
        missing = [i for i, x in enumerate(data) if x.gold is None]
        if missing:
            of = f" of {source}" if source else ""
            raise InputError(f"held-out sentence {missing[0] + 1}{of}: calibration needs gold "
                             f"POS and chunk tags")
        try:
            fit = fit_temperature(HeldOut(lambda i: self.parts(data[i]), [x.gold for x in data],
                                          [x.n for x in data], 2 * self.c * self.p))
        except InputError as e:
            raise InputError(f"{source}: {e}" if source else str(e)) from None
        self.settings_.update(temperature=fit.temperature, calibration_nll=fit.nll,
                             calibrated_on={"source": source or "<unnamed>",
                                            "sentences": fit.sentences})
        return fit.temperature

    def calibrated_parts(self, x: Encoded) -> Parts:
        """Part scores of the tempered distribution: score/T."""
        return self.parts(x).scaled(1.0 / self.temperature)

    # --------------------------------------------------------------- decoding
    def decode(self, x: Encoded, w: np.ndarray | None = None) -> tuple[Structure, float]:
        """Figure 1's Viterbi: the best structure and its (untempered) score."""
        return viterbi(self.parts(x, w))

    def map_tags(self, d: Layered, x: Encoded | None = None) -> tuple[list[str], list[str]]:
        """(POS, chunk) tags of a sentence by Viterbi (``x``: its :func:`encode`, without
        gold); a tagger predicts POS only (chunks copied from ``d``, ``_`` where it has
        none), a chunker chunk tags only (POS copied from ``d``)."""
        y, _ = self.decode(encode(self, d, gold=False) if x is None else x)
        labels, chunk = self.tags(y)
        if self.variant_ == "tagger":
            chunk = list(d.chunks) if d.chunks is not None else ["_"] * len(labels)
        elif self.variant_ == "chunker":
            labels, chunk = list(d.pos), labels
        return labels, chunk

    def marginals(self, x: Encoded) -> tuple[float, Parts]:
        """log Z_T and part marginals of p(y|x) ∝ exp(score/T) (inside-outside over
        Figure 1's tables); needs :attr:`probabilistic`."""
        self.require_probabilities()
        return inside_outside(self.calibrated_parts(x))

    def chunk_lattice(self, x: Encoded, require_probabilities: bool = True) -> Lattice:
        """The chunk layer's distribution under p(y|x) ∝ exp(score/T) (POS summed
        out) as a :class:`Lattice` over IOB2 chunk tags; its machine is
        :func:`joint_fst` projected to chunk tags.  Refused for a model that is not
        :attr:`probabilistic` unless ``require_probabilities=False`` (MAP use only)."""
        if require_probabilities:
            self.require_probabilities()
        parts = self.calibrated_parts(x)
        return Lattice(self.chunk_tags, self.scheme_, chain_layers(parts, self.scorer_._tag_index),
                       raw_fst=lambda: self.chunk_fst(parts))

    def lattices(self, sentences: Sequence[Sentence], require_probabilities: bool = True
                 ) -> list[Lattice]:
        """One chunk-layer lattice per sentence (the model protocol), the sentences
        read as :func:`~.data.predict` reads them (this model's POS/NP settings;
        words and POS only).  Expected counts and MEU need probabilities: refused for
        a model that is not :attr:`probabilistic` unless ``require_probabilities=False``,
        which MAP decoding may pass (its decision does not depend on T)."""
        if self.variant_ != "joint":
            raise InputError(f"a {self.variant_} model has no chunk layer: lattices need "
                             f"the joint model")
        if require_probabilities:
            self.require_probabilities()
        data = layered(sentences, self.settings_.get("collapse_pos", False),
                       self.settings_.get("np_only", False), gold=False)
        return [self.chunk_lattice(encode(self, d, gold=False), False) for d in data]

    def token_marginals(self, x: Encoded) -> tuple[list[str], np.ndarray]:
        """Pr_T(token k has ``chunktag|POS``), from the chain's state posteriors;
        the twin of :func:`~.machine.fst_token_marginals` on :meth:`fst`; needs
        :attr:`probabilistic`."""
        self.require_probabilities()
        names = [pair_symbol(t, self.pos_labels_[P])
                 for C in range(self.c) for P in range(self.p)
                 for t in (self.chunk_tags[self.scorer_._tag_index[0, C]],
                           self.chunk_tags[self.scorer_._tag_index[1, C]])]
        cols = list(dict.fromkeys(names))
        index = np.array([cols.index(x) for x in names])
        lay = chain_layers(self.calibrated_parts(x), self.scorer_._tag_index)
        pairs = Layers(lay.weights, [index] * x.n, lay.final)    # states (C, P, s) → pair
        return cols, token_marginals(pairs, len(cols))

    def fst(self, x: Encoded, arc_type: str = "log64") -> pynini.Fst:
        """:func:`~.machine.joint_fst` of one sentence, weights −score/T (its
        shortest path is the MAP structure for any T; its log-semiring sums are
        probabilities only when the model is :attr:`probabilistic`)."""
        return joint_fst(self.calibrated_parts(x), self.chunk_labels_, self.pos_labels_,
                         self.outside, arc_type)

    def chunk_fst(self, parts: Parts) -> pynini.Fst:
        """:func:`~.machine.joint_fst` with each ``chunktag|POS`` symbol mapped to its chunk tag."""
        return chunk_fst(parts, self.chunk_labels_, self.pos_labels_, self.outside,
                         self.chunk_tags)

    # -------------------------------------------------------------------- io
    def save(self, path) -> None:
        """Write the model file (atomically; :mod:`fstchunk.models.io`)."""
        meta = {"chunk_labels": list(self.chunk_labels_), "pos_labels": list(self.pos_labels_),
                "templates": {k: [list(map(list, t)) for t in v] for k, v in self.templates_.items()},
                "vocabs": [sorted(v, key=v.get) for v in self.vocabs_],
                "reading": reading(self.settings_), "settings": self.settings_}
        save_model(path, self.kind, {"w": self.theta_}, meta, self.layout_)
        self._path = str(path)

    @classmethod
    def load(cls, path) -> "JointModel":
        """Read a joint model file, every field checked (:func:`.files.read_model`):
        :class:`~fstchunk.core.errors.ModelFileError` naming the file and the field."""
        got = read_model(path)
        fields, w = got.pop("fields"), got.pop("w")
        model = cls.from_state(**got, layout=fields.layout())
        if w.shape != (model.size,):
            raise fields.error("w", f"expected {model.size} weights for these labels, "
                                    f"templates and vocabularies, found {w.shape[0]}")
        model.theta_ = w
        model._path = str(path)
        return model
