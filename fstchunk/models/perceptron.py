"""The averaged structured perceptron on the CRF's features (Collins 2002; CRFsuite's
``-a ap``): ``fstchunk train --objective perceptron``.

For each pass, each training sentence in a random order (seeded by the pass number):

    ŷ = argmax_{valid y} θ·φ(x, y)                 (constrained Viterbi),
    θ ← θ + φ(x, y_gold) − φ(x, ŷ)                 (only where ŷ ≠ y_gold),

and the model keeps the average of θ over every visit (Collins' averaging), kept in
O(1) per update by :class:`fstchunk.learn.epochs.Average` from count 0: the average
of θ_1..θ_c after c visits is θ − u/c (θ_j: θ after visit j).

Pitfalls:

* the scores are not log-probabilities (nothing scales them): MAP decoding is fine,
  but MEU, marginals and ``expected`` need a temperature fitted on held-out sentences
  (:meth:`fstchunk.models.crf.CRF.calibrate`, ``train --calibrate``), as for max-margin;
* there is no λ (the averaging is the regulariser) and no line search; a pass with no
  mistake has converged (the training set is separated) and training stops;
* it starts from θ = 0 (no ``--init``); a resumed run needs the state file next to the
  checkpoint (:data:`STATE_SUFFIX`: the current θ, u, c and the passes), whose
  average must reproduce the checkpoint's θ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError, ModelFileError
from ..core.outputs import atomic_path
from ..learn.epochs import Average, EpochSolver
from .blocks import ChainBlocks, ChainModel, Data

#: the solver state's file next to a checkpoint: CHECKPOINT + STATE_SUFFIX
STATE_SUFFIX = ".perceptron.npz"


@dataclass
class PassReport:
    """What one pass gives the training loop: its mistakes (sentences with ŷ ≠ gold) and
    CRFsuite's loss, Σ_i (labels of ŷ_i ≠ gold) / len_i."""
    mistakes: int
    sentences: int
    error_ratio: float = 0.0

    @property
    def converged(self) -> bool:
        return self.mistakes == 0


class AveragedPerceptron(ChainBlocks):
    """The averaged perceptron of the module doc on one CRF's training data: the weights
    W (features x tags) and ``rest`` (transitions, start, end) averaged by
    :class:`~fstchunk.learn.epochs.Average`."""

    def __init__(self, model: ChainModel, data: Data, state: str | None = None):
        """From θ = 0, or from the :meth:`save_state` file ``state`` (a resumed run)."""
        super().__init__(model, data)
        if state is None and np.any(model.theta_ != 0):
            what = "perceptron training starts from θ = 0: it cannot start from a trained model "
            raise InputError(what + "(fit a new one); resume from its checkpoint instead "
                             "(Trainer(checkpoint=..., resume=True))",
                             cli=what + "(no --init); resume from its checkpoint instead")
        F, L = self.mask.shape
        self.avg = Average([np.zeros((F, L)), np.zeros(L * L + 2 * L)])
        self.passes = 0
        self._snap()
        if state is not None:
            self.load_state(state)

    @property
    def W(self) -> np.ndarray:
        return self.avg.w[0]

    @property
    def rest(self) -> np.ndarray:
        return self.avg.w[1]

    def _snap(self) -> None:
        """Keep (θ, u, c, passes) in θ layout: the state after the last complete pass,
        which checkpoints and Ctrl-C save (a pass cut short is redone on resume)."""
        a = self.avg
        self.snapshot = (self.theta_flat(*a.w), self.theta_flat(*a.u), a.count, self.passes)

    @property
    def theta(self) -> np.ndarray:
        """The averaged θ after the last complete pass, in the CRF's layout: θ − u/c."""
        w, u, c, _ = self.snapshot
        return Average.mean(w, u, c)

    def run_pass(self) -> PassReport:
        """One pass in a random order (seeded by the pass number)."""
        order = np.random.default_rng(self.passes).permutation(self.N)
        mistakes, error_ratio = 0, 0.0
        for k in order:
            k = int(k)
            (y, wrong), = self.oracles([k], self.W, *self.rest_parts(self.rest), cost=0.0)
            if wrong:
                g = self.gold.sequences[k]
                E, T, S, En = [a - b for a, b in zip(self.onehots(k, [g], [1.0]),
                                                     self.onehots(k, [y], [1.0]))]
                self.avg.add(0, self.local[k][0], self.image(k, E))
                self.avg.add(1, slice(None), np.concatenate([T.ravel(), S, En]))
                mistakes += 1
                error_ratio += float(np.mean(np.asarray(y) != np.asarray(g)))
            self.avg.visit()
        self.passes += 1
        self._snap()
        return PassReport(mistakes, self.N, error_ratio)

    # ------------------------------------------------------------------ files
    def save_state(self, path: str) -> None:
        """θ, u (at the pairs), c and the passes of the last complete pass, atomically
        to ``path`` (.npz)."""
        w, u, c, passes = self.snapshot
        with atomic_path(path, "checkpoint") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, w=w, u=u, c=np.array(c), passes=np.array(passes),
                     pairs=np.asarray(self.pairs, dtype=np.int64))

    def load_state(self, path: str) -> None:
        """Restore :meth:`save_state`'s file; ModelFileError naming it if it cannot be read
        or is of another training set."""
        try:
            with np.load(path, allow_pickle=False) as f:
                w, u = f["w"].astype(float), f["u"].astype(float)
                c, passes, pairs = int(f["c"]), int(f["passes"]), f["pairs"]
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise ModelFileError(f"{path}: not a perceptron state ({e})") from None
        P, L = len(self.pairs), self.L
        if not (w.shape == u.shape == (P + L * L + 2 * L,) and np.array_equal(pairs, self.pairs)
                and c >= 0 and passes >= 0 and np.all(np.isfinite(w)) and np.all(np.isfinite(u))):
            raise ModelFileError(f"{path}: the perceptron state does not fit this training "
                                 f"set's features")
        self.avg.w, self.avg.u = self.blocks_of(w), self.blocks_of(u)
        self.avg.count, self.passes = c, passes
        self._snap()


class PerceptronSolver(EpochSolver):
    """The averaged perceptron as an :class:`~fstchunk.learn.epochs.EpochSolver`: a step
    is a pass; it stops after a pass without a mistake, or, when the model's
    ``options`` hold ``epsilon`` (sklearn's ``algorithm='ap'``), by CRFsuite's rule
    (train_averaged_perceptron.c): when loss/N < ε, loss = Σ_i wrong labels_i / len_i
    (ε = 0: never, all max_iterations); its state (θ, u, c, passes of the last complete
    pass) sits beside the checkpoint."""

    suffix, state_name = STATE_SUFFIX, "perceptron state"
    mistakes = 0

    def start(self, theta: np.ndarray) -> None:
        self.learner = AveragedPerceptron(self.model, self.data)

    def load(self, path: str) -> None:
        self.learner = AveragedPerceptron(self.model, self.data, path)

    def epoch(self) -> tuple[float, bool, dict]:
        report = self.learner.run_pass()
        self.mistakes = report.mistakes
        eps = (getattr(self.model, "options", None) or {}).get("epsilon")
        done = (report.converged if eps is None
                else report.error_ratio / max(report.sentences, 1) < float(eps))
        # the pass's figure is CRFsuite's loss per sentence, Σ_i wrong labels_i / len_i / N
        return (report.error_ratio / max(report.sentences, 1), done,
                {"mistakes": str(report.mistakes)})

    def current(self) -> tuple[np.ndarray, int]:
        return self.learner.theta, self.learner.passes

    def write(self, path: str) -> None:
        self.learner.save_state(path)

    def settings(self, epochs: int, value: float) -> dict:
        return {"solver": "averaged-perceptron", "passes": epochs, "mistakes": self.mistakes}
