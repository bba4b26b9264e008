"""Joint POS tagging and chunking with label-chunk structures (Shimizu & Haas 2006).

A structure y of an n-token sentence is a segmentation into segments [q, e), each
with a chunk label C (a chunk type, or ``O``) and a POS label P_r for every
token; score(x, y) = Σ_parts w·f(x, part) over its POS nodes, POS transitions,
chunk nodes and chunk transitions (§2, Table 2), lexicalised as in Table 6.

The package, bottom up:

* :mod:`.structure` — :class:`Parts`, :class:`Structure`, a structure's parts and
  score, the brute-force enumerator :func:`all_structures`;
* :mod:`.dp` — Figure 1's two-table DP: :func:`viterbi`, :func:`inside_outside`
  (log Z and part marginals), :func:`chain_layers` (the chunk layer as a chain);
* :mod:`.machine` — the weighted-machine twin: :func:`joint_fst`,
  :func:`fst_viterbi`, :func:`fst_token_marginals`, :func:`fst_log_partition`;
* :mod:`.corpus` — the corpus layers: :func:`layered` (strict IOB2 gold), Table 3's
  :func:`collapse_pos`, :func:`np_only`, and :func:`scores` (Table 7's columns);
* :mod:`.scoring` — observations, vocabularies, weights: a sentence's part scores;
* :mod:`.encoding` — :func:`encode`, a sentence read for a model;
* :mod:`.train` — the objectives (``--algorithm`` perceptron, mmvp, crf = ML), their
  solvers for :class:`fstchunk.learn.loop.Trainer` (the averaged perceptron and MMVP
  by epochs, L-BFGS over the mean NLL) and the NLL's additive statistics;
* :mod:`.calibration` — the temperature T of p(y|x) ∝ exp(score/T), fitted by
  maximum likelihood on held-out sentences (:func:`fit_temperature`);
* :mod:`.files` — the model file, every field checked on load (:func:`read_model`);
* :mod:`.build` — Table 6's templates; the labels and vocabularies of a training
  corpus (:func:`~.build.learn_scorer`);
* :mod:`.fitting` — the estimator: hyper-parameters, ``fit``, the fitted state
  (``scorer_``, ``theta_``, ``settings_``, ``layout_``, ``scheme_``);
* :mod:`.model` — :class:`JointModel` (the model protocol: decoding, calibration,
  files);
* :mod:`.data` — :func:`predict`, :func:`calibrate`, and :func:`model_for` (the
  way before :meth:`JointModel.fit` learnt labels and vocabularies).

Pitfalls: ``O`` segments are maximal (O→O is forbidden), so structures and
(POS, IOB2 chunk) tag pairs are one-to-one.  Perceptron and MMVP scores are not
probabilities: MEU, marginals and lattices need a ``crf`` model or a calibrated one
(:attr:`JointModel.probabilistic`); MAP decoding needs neither.
"""

from ...core.namespace import public_dir
from .calibration import HeldOut, TemperatureFit, fit_temperature
from .corpus import COLLAPSED_POS, Layered, collapse_pos, layered, np_only, scores
from .build import CHUNKER_TEMPLATES, JOINT_TEMPLATES, KIND_TEMPLATES, TAGGER_TEMPLATES
from .data import calibrate, model_for, predict
from .dp import chain_layers, inside_outside, viterbi
from .files import VARIANTS, read_model
from .machine import (chunk_fst, fst_log_partition, fst_token_marginals, fst_viterbi,
                      joint_fst, pair_symbol)
from .encoding import encode, input_columns
from .model import JointModel
from .scoring import Encoded, PartScorer
from .structure import (KINDS, Parts, Structure, all_structures, chunk_tag_names,
                        structure_parts, structure_score)

__all__ = ["CHUNKER_TEMPLATES", "COLLAPSED_POS", "Encoded", "HeldOut",
           "JOINT_TEMPLATES", "JointModel", "KINDS", "KIND_TEMPLATES", "Layered",
           "PartScorer", "Parts", "Structure", "TAGGER_TEMPLATES", "TemperatureFit",
           "VARIANTS", "all_structures", "calibrate", "chain_layers", "chunk_fst",
           "chunk_tag_names", "collapse_pos", "encode", "fit_temperature",
           "fst_log_partition", "fst_token_marginals", "fst_viterbi", "inside_outside",
           "input_columns", "joint_fst", "layered", "model_for", "np_only", "pair_symbol",
           "predict", "read_model", "scores", "structure_parts", "structure_score", "viterbi"]

__dir__ = public_dir(globals(), __all__)
