"""The joint model of Shimizu & Haas (2006) as one object: decoding, chunk layer, training, files.

:class:`JointModel` is a :class:`~.scoring.PartScorer` (templates,
vocabularies, one weight vector: a sentence's part scores) that hands the parts
to Figure 1's DP (:mod:`.dp`: Viterbi, inside-outside), the machine twin
(:mod:`.machine`) or the chunk layer's :class:`~fstchunk.structures.lattice.Lattice`, and
trains through :class:`fstchunk.learn.loop.Trainer` (its ``Learnable``:
``objectives``, ``theta`` = ``w``, ``training_data``, ``solver``, ``dev_f``; the
objectives, solvers and statistics in :mod:`.train`; ``statistics`` and
``partitions`` for :mod:`fstchunk.runtime.scale`'s executors).  It follows the model
protocol: ``kind``, ``scheme``, ``lattices``, ``fit`` (returns the model), ``save``
and ``load``.

Settings: the structure's (variant, Table 3's POS, NP only, columns) are fixed by
:func:`~.data.model_for`, which builds the model from its training corpus; the
training's (algorithm, ``max_iter``, λ, and every option of the trainer) are
arguments of :meth:`JointModel.fit`, as :meth:`fstchunk.models.crf.CRF.fit`'s; both
end in ``settings`` and the model file.
:func:`encode` reads a :class:`~.corpus.Layered` sentence the one way that
training, :func:`~.data.predict` and :meth:`JointModel.lattices` share.

Pitfalls:

* ``kind`` is the model file's kind (always ``"joint"``); ``settings["kind"]``
  (:attr:`JointModel.variant`) says which of joint model, tagger (chunk label O
  only, the POS layer carries the tags) or chunker (the chunk tags as the label
  layer, the POS column as input) it was built as.  Only the joint variant has
  a chunk layer (:meth:`JointModel.lattices` raises
  :class:`~fstchunk.core.errors.InputError` otherwise).
* The chunk node's score is split into a start half and an end half, so the
  chunk layer is also a first-order chain over token states (C, P,
  starts-a-segment): :meth:`JointModel.chunk_lattice` uses it to hand the chunk
  distribution to the exact MEU decoder; decoding itself follows Figure 1.
* Probabilities: p(y|x) ∝ exp(score(x, y)/T), T = ``settings["temperature"]``
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
  layout (:attr:`JointModel.layout`, :mod:`fstchunk.io.layout`) is recorded by the
  trainer that saw the file (``fstchunk joint train``), None otherwise.
* The model file (kind ``joint``) stores labels, templates, vocabularies in id
  order, settings and ``w``; :mod:`.files` checks every field on load and names the
  file and field of one that does not fit (:class:`~fstchunk.core.errors.ModelFileError`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pynini

from ...io.columns import Columns
from ...io.conll import Sentence
from ...engine.chain import Layers, token_marginals
from ...core.errors import InputError
from ...structures.lattice import Lattice
from ...io.layout import Layout
from ...learn import objectives as lo
from ...learn.loop import Trainer
from ...learn.loss import Loss
from ...learn.solvers import LBFGS, Solver
from ...runtime.scale import split
from ..io import save_model
from .calibration import HeldOut, fit_temperature
from .corpus import Layered, layered, scores
from .encoding import encode
from .dp import chain_layers, inside_outside, viterbi
from .files import read_model, reading
from .machine import chunk_fst, joint_fst, pair_symbol
from .scoring import Encoded, PartScorer, Size
from .structure import Parts, Structure
from .train import (ALGORITHMS, JOINT_OBJECTIVES, JointPerceptronSolver, algorithm_name,
                    check_training, default_l2, nll_statistics)
from .train import algorithm as objective_of

#: the Python call that calibrates a joint model (:meth:`JointModel.require_probabilities`)
CALIBRATE_CALL = "fstchunk.joint.calibrate(model, fstchunk.joint.layered(held_out_sentences))"


class JointModel(PartScorer):
    """Shimizu & Haas's (2006) joint model: one linear model labels each token (a
    POS tag) and chunks the sentence at once, decoded by their Figure 1's dynamic
    programme; its chunk layer is a :class:`Lattice` for the decoders (MEU
    included).  Build one from training sentences with ``fstchunk.joint.model_for``
    (which fixes the vocabularies and templates), then :meth:`fit` (perceptron,
    MMVP, or ``crf``: likelihood); ``fstchunk.joint.predict`` tags and chunks.

    Args:
        chunk_labels: the chunk types, then ``O``.
        pos_labels: the token labels (POS tags).
        templates: the feature templates, by part kind.
        vocabs: each template's vocabulary (id 0: unseen).
        w: the weights (``None``: zeros).
        settings: the structure's and training's settings (``kind``, ...).

    Raises:
        InputError: chunk labels without ``O``, or a weight vector of the wrong size.

    Attributes:
        variant: ``joint``, ``tagger`` or ``chunker`` (module doc).
        probabilistic: whether its scores are a distribution (``crf``, or calibrated).
        settings: what training recorded (algorithm, epochs, temperature, ...).

    Examples:
        >>> import io, fstchunk
        >>> text = "John NNP B-NP\\nran VBD O\\n\\nMary NNP B-NP\\nsat VBD O\\ndown RB O\\n"
        >>> train = fstchunk.joint.layered(fstchunk.read_conll(io.StringIO(text)))
        >>> model, data = fstchunk.joint.model_for(train)
        >>> model = model.fit(data, "crf", max_iter=5)
        >>> model.variant, model.probabilistic, model.chunk_labels
        ('joint', True, ('NP', 'O'))
        >>> fstchunk.joint.predict(model, train[:1])
        ([['NNP', 'VBD']], [['B-NP', 'O']])
    """

    kind = "joint"
    scheme = "IOB2"

    #: the file this model was loaded from or last saved to (for messages)
    path: str | None = None
    #: where :meth:`lattices` reads the words and POS tags (:func:`~.corpus.layered`)
    reads = Columns(0, 1, None)
    #: the training layout (None: not recorded)
    layout: Layout | None = None

    @property
    def data_scheme(self) -> str | None:
        """The scheme of the training file's chunk column (None if not recorded)."""
        return self.layout.data_scheme if self.layout is not None else None

    @property
    def variant(self) -> str:
        """``joint``, ``tagger`` or ``chunker`` (see the module doc)."""
        return self.settings.get("kind", "joint")

    # ---------------------------------------------------------- probabilities
    @property
    def temperature(self) -> float:
        """T of p(y|x) ∝ exp(score(x, y)/T): the calibrated one, else 1."""
        return float(self.settings.get("temperature", 1.0))

    @property
    def trained_by(self) -> lo.Objective | None:
        """The objective the weights were trained by (``settings["algorithm"]``, which
        every trained file records; None: untrained)."""
        return ALGORITHMS.get(self.settings.get("algorithm"))

    @property
    def probabilistic(self) -> bool:
        """Whether exp(score/T) is a fitted distribution: trained by ML (``crf``, T = 1)
        or calibrated (:meth:`calibrate`)."""
        trained = self.trained_by
        return (trained is not None and trained.probabilistic) or "temperature" in self.settings

    def require_probabilities(self, fix: str | None = None) -> None:
        """InputError saying how to calibrate, unless :attr:`probabilistic`: ``fix`` (the
        command line names its command), else the Python call."""
        if self.probabilistic:
            return
        name = self.path or "this joint model"
        how = (f"was trained by {self.settings['algorithm']}" if "algorithm" in self.settings
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
        if self.variant != "joint":
            raise InputError(f"a {self.variant} model has no chunk layer to calibrate: "
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
        self.settings.update(temperature=fit.temperature, calibration_nll=fit.nll,
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
        if self.variant == "tagger":
            chunk = list(d.chunks) if d.chunks is not None else ["_"] * len(labels)
        elif self.variant == "chunker":
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
        return Lattice(self.chunk_tags, self.scheme, chain_layers(parts, self._tag_index),
                       raw_fst=lambda: self.chunk_fst(parts))

    def lattices(self, sentences: Sequence[Sentence], require_probabilities: bool = True
                 ) -> list[Lattice]:
        """One chunk-layer lattice per sentence (the model protocol), the sentences
        read as :func:`~.data.predict` reads them (this model's POS/NP settings;
        words and POS only).  Expected counts and MEU need probabilities: refused for
        a model that is not :attr:`probabilistic` unless ``require_probabilities=False``,
        which MAP decoding may pass (its decision does not depend on T)."""
        if self.variant != "joint":
            raise InputError(f"a {self.variant} model has no chunk layer: lattices need "
                             f"the joint model")
        if require_probabilities:
            self.require_probabilities()
        data = layered(sentences, self.settings.get("collapse_pos", False),
                       self.settings.get("np_only", False), gold=False)
        return [self.chunk_lattice(encode(self, d, gold=False), False) for d in data]

    def token_marginals(self, x: Encoded) -> tuple[list[str], np.ndarray]:
        """Pr_T(token k has ``chunktag|POS``), from the chain's state posteriors;
        the twin of :func:`~.machine.fst_token_marginals` on :meth:`fst`; needs
        :attr:`probabilistic`."""
        self.require_probabilities()
        names = [pair_symbol(t, self.pos_labels[P])
                 for C in range(self.c) for P in range(self.p)
                 for t in (self.chunk_tags[self._tag_index[0, C]],
                           self.chunk_tags[self._tag_index[1, C]])]
        cols = list(dict.fromkeys(names))
        index = np.array([cols.index(x) for x in names])
        lay = chain_layers(self.calibrated_parts(x), self._tag_index)
        pairs = Layers(lay.weights, [index] * x.n, lay.final)    # states (C, P, s) → pair
        return cols, token_marginals(pairs, len(cols))

    def fst(self, x: Encoded, arc_type: str = "log64") -> pynini.Fst:
        """:func:`~.machine.joint_fst` of one sentence, weights −score/T (its
        shortest path is the MAP structure for any T; its log-semiring sums are
        probabilities only when the model is :attr:`probabilistic`)."""
        return joint_fst(self.calibrated_parts(x), self.chunk_labels, self.pos_labels,
                         self.outside, arc_type)

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

    #: the objectives it trains (``--algorithm``: :data:`.train.ALGORITHMS`)
    objectives = JOINT_OBJECTIVES
    #: its own solvers of names of :data:`fstchunk.models.solvers.SOLVERS`
    own_solvers = {"perceptron": lambda m, c: JointPerceptronSolver(m, c.data, False),
                   "lbfgs": lambda m, c: LBFGS(
                       c.objective_loss.function(m, c.data, c.executor), c.tol)}

    @property
    def theta(self) -> np.ndarray:
        """θ of :class:`~fstchunk.learn.loop.Trainer`: the weight vector ``w``."""
        return self.w

    @theta.setter
    def theta(self, value: np.ndarray) -> None:
        value = np.asarray(value, dtype=float)
        if value.shape != (self.size,):
            raise InputError(f"weight vector has shape {value.shape}, expected {(self.size,)}")
        self.w = value

    def fit(self, train: Sequence[Encoded | Layered], algorithm: str | lo.Objective =
            "perceptron", max_iter: int | None = None, l2: float | None = None,
            **options: Any) -> "JointModel":
        """Train in place by :class:`fstchunk.learn.loop.Trainer` and return the model:
        ``algorithm`` ``perceptron`` (Algorithm 4.1 with Collins' averaging) or ``mmvp``
        (Algorithm 4.3), both with the first-iteration trick, ``max_iter`` epochs; or
        ``crf``: the mean NLL per sentence + λ‖w‖² by L-BFGS, ``max_iter`` iterations
        (``l2=None``: :data:`.train.DEFAULT_L2`).  ``options``: the trainer's others
        (dev, select, checkpoint, resume, callbacks, executor, ...; no progress bar
        unless asked).  A calibration of earlier weights is dropped (the scores
        change).  ``iterations`` is ``max_iter``'s older name.  See :mod:`.train`."""
        if "iterations" in options:
            if max_iter is not None:
                raise InputError("give max_iter or its older name iterations, not both")
            max_iter = options.pop("iterations")
        max_iter = 10 if max_iter is None else max_iter
        o = objective_of(algorithm)
        options.setdefault("progress", False)
        return Trainer(objective=o, l2=default_l2(o, l2), max_iter=max_iter,
                       **options).fit(self, train)

    def training_data(self, train: Sequence[Encoded | Layered]) -> list[Encoded]:
        """The encoded training sentences (:func:`encode` with gold; encoded ones pass
        through); InputError for none, or one without gold POS and chunk tags."""
        data = [x if isinstance(x, Encoded) else encode(self, x) for x in train]
        check_training(data)
        return data

    def solver(self, objective: lo.Objective, data: Sequence[Encoded], *, l2: float,
               beta: float, loss: str, tol: float | None, executor: Any) -> Solver:
        """L-BFGS over the mean NLL for ML (``crf``; the statistics over ``executor``'s
        partitions when given), the perceptron or MMVP's passes, by
        :func:`fstchunk.models.solvers.make_solver`; records the ``algorithm`` and the
        training sentences in the settings."""
        from ..solvers import make_solver          # the table imports this package
        for key in ("crf_iterations", "iterations"):
            self.settings.pop(key, None)
        self.settings.update(algorithm=algorithm_name(objective), sentences=len(data))
        return make_solver(self, objective, data, l2=l2, beta=beta, loss=loss, tol=tol,
                           executor=executor, kind="the joint model")

    def dev_f(self, dev: Sequence[Layered]) -> float:
        """Percent, of Viterbi decoding on held-out layered ``dev`` sentences (gold POS
        and chunks): conlleval chunk F1 for the joint model and a chunker, POS accuracy
        for a tagger (which predicts no chunk) — what ``joint train --select dev``
        selects on."""
        if not dev:
            raise InputError("no dev sentences to score")
        pos, chunks = zip(*(self.map_tags(d) for d in dev))
        s = scores(dev, pos, chunks)
        return s["pos_accuracy"] if self.variant == "tagger" else s["np_f1"]

    def statistics(self, data: Sequence[Encoded], theta: np.ndarray, loss: Loss
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The additive statistics of ``loss``'s smooth objective (ML: Σ NLL and its
        gradient, :func:`.train.nll_statistics`) over ``data`` at θ
        (:mod:`fstchunk.runtime.scale`)."""
        name = loss.objective.name
        if lo.objective(loss.objective, JOINT_OBJECTIVES) is not lo.ML:
            raise InputError(f"algorithm={name!r} is run by passes, not as a function of θ",
                             cli=f"--algorithm {name} is run by passes, not as a function of θ")
        return nll_statistics(self, data, theta)

    def partitions(self, data: Sequence[Encoded], parts: int
                   ) -> list[tuple["JointModel", list[Encoded]]]:
        """``data`` in ``parts`` runs of sentences of about equal token counts, each with a
        :meth:`scoring_copy` (the shards of :mod:`fstchunk.runtime.scale`)."""
        copy = self.scoring_copy()
        return [(copy, [data[i] for i in r]) for r in split([x.n for x in data], parts)]

    def scoring_copy(self) -> "JointModel":
        """This model without its vocabularies' strings (their sizes only) and settings:
        it scores encoded sentences but encodes none; what a worker receives."""
        return JointModel(self.chunk_labels, self.pos_labels, self.templates,
                          [Size(len(v)) for v in self.vocabs])

    # -------------------------------------------------------------------- io
    def save(self, path) -> None:
        """Write the model file (atomically; :mod:`fstchunk.models.io`)."""
        meta = {"chunk_labels": list(self.chunk_labels), "pos_labels": list(self.pos_labels),
                "templates": {k: [list(map(list, t)) for t in v] for k, v in self.templates.items()},
                "vocabs": [sorted(v, key=v.get) for v in self.vocabs],
                "reading": reading(self.settings), "settings": self.settings}
        save_model(path, self.kind, {"w": self.w}, meta, self.layout)
        self.path = str(path)

    @classmethod
    def load(cls, path) -> "JointModel":
        """Read a joint model file, every field checked (:func:`.files.read_model`):
        :class:`~fstchunk.core.errors.ModelFileError` naming the file and the field."""
        got = read_model(path)
        fields, w = got.pop("fields"), got.pop("w")
        model = cls(**got)
        if w.shape != (model.size,):
            raise fields.error("w", f"expected {model.size} weights for these labels, "
                                    f"templates and vocabularies, found {w.shape[0]}")
        model.w = w
        model.layout = fields.layout()
        model.path = str(path)
        return model
