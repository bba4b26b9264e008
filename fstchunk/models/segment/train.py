"""The online large-margin multilabel learner of the segment model (McDonald, Crammer &
Pereira 2005, §3.1 and Fig. 4; Crammer & Singer 2002), as a solver of the one training
loop (:class:`fstchunk.learn.loop.Trainer`, objective ``multilabel``).

For each training sentence x in turn (epoch e visits them in the order of e seeded
shuffles, :meth:`HildrethSolver.order`), with the current w: take the k best segments
bestk(x; w) (k = max(n, |act(x)|)) and solve

    min_Δ ½‖Δ‖²  s.t.  (w + Δ)·f(x, y) >= +1  for every gold y ∈ act(x),
                       (w + Δ)·f(x, y') <= −1  for every y' ∈ bestk(x; w) − act(x)

(§3.1's O(k + v) form of line 4 of Fig. 4: thresholds ±1 instead of pairwise margins),
then w ← w + Δ.  Constraint c reads a_c·(w + Δ) >= 1 with a_c = ±f(x, y_c) (a vector in
the type's column of W); its dual is solved by Hildreth's algorithm (Censor & Zenios
1997): cyclic coordinate ascent on α >= 0,

    α_c ← max(0, α_c + (r_c − (Gα)_c) / G_cc),   r_c = 1 − a_c·w,  G = [a_c·a_d],

until the largest KKT violation is < 1e-8 (or ``max_sweeps``); Δ = Σ_c α_c a_c.  No
constraint violated: no change (the update is conservative).

Averaging (``average=True``, the default; Collins 2002): θ is the mean of w over all
visits, computed with the usual trick (:class:`fstchunk.learn.epochs.Average` from
count 0: W and an accumulator U, U += (c − 1)·Δ at visit c, mean = W − U / c), so an
update costs O(touched entries).  The learner's W
and U are solver state (:class:`HildrethSolver`, saved beside a checkpoint); the
model's W is θ.

Pitfalls: segments of different types share no feature (the type selects W's column),
so their Gram entries are 0 and the QP splits into one per type (solved apart); gold
segments that ``max_gap`` forbids still get their +1 constraint (their features are
computed, but inference never finds them); ``restrictions`` filter the top k during
training too (§4.1, "Multilabel with restrictions"), so a near miss that the filter
removes gives no constraint; the learner has no λ (averaging regularises it) and no
stopping criterion: it runs every epoch asked for; a resumed run redoes an epoch cut
short from the state after the last complete one, so its weights are bit-identical to
an uninterrupted run's.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...core.blas import one_blas_thread
from ...core.errors import InputError, ModelFileError
from ...core.outputs import atomic_path
from ...evaluation.segments import score_segments
from ...io.segments import SegSentence, iter_types
from ...learn.epochs import Average, EpochSolver
from ...structures.segments import kbest, restrict
from .features import segment_entries
from .hildreth import hildreth

#: the learner state's file next to a checkpoint: CHECKPOINT + STATE_SUFFIX
STATE_SUFFIX = ".hildreth.npz"


class OnlineLearner:
    """Fig. 4 one sentence at a time over a :class:`~.model.SegmentModel`'s features,
    with its own weights W (D × T, updated in place) and the averaging accumulator U;
    the model's W is not touched (the training loop sets it to the average).

    A journal (:meth:`commit`, :meth:`rollback`) keeps the rows of W and U as they were
    at the last commit, each at its first change: what a pass cut short returns to."""

    def __init__(self, model: Any, max_sweeps: int = 1000, W: np.ndarray | None = None,
                 U: np.ndarray | None = None, steps: int = 0):
        self.model = model
        self.flags = model.restrictions_
        self.max_sweeps = max_sweeps
        shape = model.W_.shape
        self.avg = Average([np.zeros(shape) if W is None else W], steps)
        if U is not None:
            self.avg.u = [U]
        self._logged = np.zeros(shape[0], dtype=bool)
        #: (the step count at the last commit, the journal since: (rows, W, U) each)
        self._undo: tuple[int, list] = (steps, [])

    @property
    def W(self) -> np.ndarray:
        """The learner's weights (D × T)."""
        return self.avg.w[0]

    @property
    def U(self) -> np.ndarray:
        """The averaging accumulator (D × T)."""
        return self.avg.u[0]

    @property
    def steps(self) -> int:
        """The visits so far."""
        return self.avg.count

    @steps.setter
    def steps(self, value: int) -> None:
        self.avg.count = value

    @property
    def committed(self) -> int:
        """The step count at the last :meth:`commit`."""
        return self._undo[0]

    def commit(self) -> None:
        """Make the present W, U and step count what :meth:`rollback` returns to (one
        assignment: a Ctrl-C leaves the commit done or not)."""
        for rows, _, _ in self._undo[1]:
            self._logged[rows] = False
        self._undo = (self.steps, [])

    def rollback(self) -> None:
        """Return W, U and the step count to the last :meth:`commit`."""
        for rows, w, u in reversed(self._undo[1]):
            self.W[rows], self.U[rows] = w, u
        self.steps = self._undo[0]
        self.commit()

    def averaged(self) -> np.ndarray:
        """The mean of W over the steps so far (W itself before any step): W − U/c."""
        return Average.mean(self.W, self.U, self.steps)

    @one_blas_thread
    def step(self, sentence: SegSentence) -> int:
        """Apply the update of one sentence; the number of violated constraints (one
        BLAS thread: the Gram matrices are small, and a multithreaded BLAS made an
        epoch 5x slower on 2 cores, benchmarks/RESULTS.md "Segments (issue 37): cost")."""
        try:
            return self._update(sentence)
        finally:
            self.avg.visit()

    def _update(self, sentence: SegSentence) -> int:
        """The update of one sentence at the present visit count (:meth:`step`)."""
        m = self.model
        if sentence.segments is None:
            raise InputError(f"{sentence.source}: a training sentence needs gold segments")
        sf = m.features(sentence)
        gold = [(m.type_index_[g.type], g.positions) for g in sentence.segments
                if g.type in m.type_index_]
        k = max(m.default_k(len(sentence)), len(gold))
        top = kbest(m.arc_scores(sentence, sf, self.W), k, m.max_gap_)
        if any(self.flags.values()):
            top = restrict(top, **self.flags)
        golds = set(gold)
        cons = gold + [(t, pos) for _, t, pos in top if (t, pos) not in golds]
        if not cons:
            return 0
        C, T = len(cons), len(m.types_)
        sign = np.array([1.0] * len(gold) + [-1.0] * (C - len(gold)))
        tt = np.array([t for t, _ in cons], dtype=np.int64)
        # f(x, y_c) as a dense C × U matrix over the U features the constraints touch
        row, col, val = segment_entries(sf, [pos for _, pos in cons], m.W_.shape[0])
        cols, inv = np.unique(col, return_inverse=True)
        M = np.zeros((C, len(cols)))
        M[row, inv.ravel()] = val
        Wc = self.W[cols]                                           # U × T
        score = np.einsum("cu,uc->c", M, Wc[:, tt])
        r = 1.0 - sign * score
        violated = int((r > 0).sum())
        if not violated:
            return 0
        beta = np.zeros(C)
        for t in np.unique(tt):                 # types share no feature: one QP per type
            ix = np.flatnonzero(tt == t)
            if r[ix].max() <= 0:
                continue                        # nothing violated: α = 0 solves it
            G = (M[ix] @ M[ix].T) * np.outer(sign[ix], sign[ix])
            beta[ix] = hildreth(G, r[ix], self.max_sweeps) * sign[ix]
        onehot = np.zeros((C, T))
        onehot[np.arange(C), tt] = beta
        delta = M.T @ onehot                                        # U × T
        new = cols[~self._logged[cols]]
        if len(new):                            # journal first: Ctrl-C may come anywhere
            self._undo[1].append((new, self.W[new], self.U[new]))
            self._logged[new] = True
        self.avg.add(0, cols, delta)
        return violated


def max_gap_of(sentences: Sequence[SegSentence]) -> int:
    """The most tokens a gold segment skips between two of its members."""
    gaps = [int(np.diff(g.positions).max()) - 1 for s in sentences for g in s.segments or ()
            if len(g.positions) > 1]
    return max(gaps, default=0)


def segment_f(model: Any, dev: Sequence[SegSentence], W: np.ndarray | None = None) -> float:
    """F (percent) over exact (type, positions) matches of ``model`` (weights ``W``,
    default its own) on ``dev``, decoded under the restrictions of ``fit``'s
    ``dev_restrictions`` while it runs (the model's otherwise)."""
    pred = model.decode(dev, W=W, restrictions=getattr(model, "_dev_flags", None))
    return score_segments([s.segments or [] for s in dev], pred).overall.f()


@dataclass(frozen=True)
class SegmentData:
    """Training sentences, checked: each has gold segments (what the Trainer passes to
    :class:`HildrethSolver`)."""
    sentences: tuple[SegSentence, ...]

    @classmethod
    def of(cls, sentences: Sequence[SegSentence]) -> "SegmentData":
        """InputError naming the source for no sentence, one without gold segments, or
        none holding a segment."""
        sentences = tuple(sentences)
        if not sentences:
            raise InputError("no training sentences")
        missing = [s for s in sentences if s.segments is None]
        if missing:
            raise InputError(f"{missing[0].source}: a training sentence needs gold segments")
        if next(iter_types(sentences), None) is None:
            raise InputError(f"{sentences[0].source}: the training sentences hold no segment")
        return cls(sentences)


class HildrethSolver(EpochSolver):
    """The online multilabel learner as an :class:`~fstchunk.learn.epochs.EpochSolver`: a step
    is an epoch (a pass over the sentences in epoch e's order, :meth:`order`); θ is the
    average of W over every visit (``average=True``), else the last W; its state (W, U,
    visits, epochs and the history, after the last complete epoch: an epoch cut short
    is rolled back) sits beside the checkpoint (:data:`STATE_SUFFIX`).  The history
    records per epoch the updates, the violated constraints and, when the training loop
    measures it, the dev F of θ and of the last W (:meth:`dev_f`)."""

    unit, suffix, state_name = "epoch", STATE_SUFFIX, "segment learner state"

    def __init__(self, model: Any, data: SegmentData, seed: int = 0, average: bool = True,
                 max_sweeps: int = 1000):
        super().__init__(model, data)
        self.seed, self.average, self.max_sweeps = int(seed), bool(average), int(max_sweeps)
        self.history: list[dict] = []
        self._rng, self._order, self._shuffles = random.Random(self.seed), [], 0
        self._dev: Sequence[SegSentence] | None = None
        self._theta: tuple[int, np.ndarray] | None = None    # (committed visits, θ)

    def order(self, epoch: int) -> list[int]:
        """The sentences' order in epoch ``epoch`` (1-based): the list 0..N−1 shuffled
        ``epoch`` times by ``random.Random(seed)``, whether or not the run was resumed."""
        if self._shuffles > epoch or not self._order:
            self._rng = random.Random(self.seed)
            self._order, self._shuffles = list(range(len(self.data.sentences))), 0
        while self._shuffles < epoch:
            self._rng.shuffle(self._order)
            self._shuffles += 1
        return self._order

    @property
    def epochs(self) -> int:
        """The complete epochs: the learner's committed visits over N."""
        return 0 if self.learner is None else \
            self.learner.committed // len(self.data.sentences)

    @property
    def theta(self) -> np.ndarray:
        """θ of the learner's present W and U, flat: the average W − U/c, or the last W
        (after a complete epoch, or :meth:`interrupted`: the last complete epoch's);
        computed once per commit (read it, do not write it)."""
        L = self.learner
        if self._theta is not None and self._theta[0] == L.committed == L.steps:
            return self._theta[1]
        theta = (L.averaged() if self.average else L.W.copy()).ravel()
        if L.steps == L.committed:
            self._theta = (L.committed, theta)
        return theta

    def start(self, theta: np.ndarray) -> None:
        if np.any(theta != 0):
            raise InputError("segment training starts from W = 0: it cannot start from "
                             "a trained model; resume from its checkpoint instead")
        self.learner = OnlineLearner(self.model, self.max_sweeps)

    def epoch(self) -> tuple[float, bool, dict]:
        L, sentences = self.learner, self.data.sentences
        epoch = self.epochs + 1
        updates = violated = 0
        for i in self.order(epoch):
            v = L.step(sentences[i])
            updates += v > 0
            violated += v
        self.history.append({"epoch": epoch, "updates": updates, "violated": violated})
        L.commit()                  # the epoch is complete (its record came first)
        return updates / len(sentences), False, {"updates": str(updates)}

    def current(self) -> tuple[np.ndarray, int]:
        return self.theta, self.epochs

    def settings(self, epochs: int, value: float) -> dict:
        """The run's record; hands the model the last W (``other_weights_``) when θ is
        the average."""
        self.model.other_weights_ = self.learner.W if self.average else None
        return {"solver": "hildreth", "trainer": "online-multilabel (Fig. 4, Hildreth)",
                "epochs": epochs, "seed": self.seed, "average": self.average,
                "sentences": len(self.data.sentences), "max_sweeps": self.max_sweeps,
                "history": self.history}

    def interrupted(self) -> tuple[np.ndarray, int]:
        """θ after the last complete epoch (an epoch cut short is rolled back and redone
        on resume)."""
        if self.learner is None:                  # stopped before the first visit
            self.learner = OnlineLearner(self.model, self.max_sweeps)
        self.learner.rollback()
        del self.history[self.epochs:]
        return self.theta, self.epochs

    # ------------------------------------------------------------------ dev F
    def dev_f(self, dev: Sequence[SegSentence]) -> float:
        """F (percent) on ``dev`` of the model's θ; when θ is the last complete epoch's,
        recorded in that epoch's history as ``dev_f_average`` (averaging) or
        ``dev_f_last``, with the last W's F beside the average's, once per epoch for
        the first dev set measured (a repeat is read back, not decoded again)."""
        m = self.model
        rec = self.history[-1] if self.learner is not None and self.history and \
            self.history[-1]["epoch"] == self.epochs else None
        if rec is None or (self._dev is not None and dev is not self._dev) \
                or not np.array_equal(m.W_.ravel(), self.theta):
            return segment_f(m, dev)
        key = "dev_f_average" if self.average else "dev_f_last"
        if key not in rec:
            self._dev = dev
            rec[key] = segment_f(m, dev)
            if self.average:
                rec["dev_f_last"] = segment_f(m, dev, self.learner.W)
        return rec[key]

    # ------------------------------------------------------------------ files
    def write(self, path: str) -> None:
        """The state after the last complete epoch to ``path`` (.npz, atomically): the
        rows of W and U that are not zero, the visits, the epochs and the history (JSON).
        Called at the end of an epoch or after :meth:`interrupted`."""
        L = self.learner
        W, U, c, epochs = L.W, L.U, L.steps, self.epochs
        rows = np.flatnonzero(np.any(W != 0, axis=1) | np.any(U != 0, axis=1))
        with atomic_path(path, "checkpoint") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, shape=np.array(W.shape, dtype=np.int64), rows=rows, W=W[rows],
                     U=U[rows], visits=np.int64(c), epochs=np.int64(epochs),
                     history=np.array(json.dumps(self.history)))

    def load(self, path: str) -> None:
        """The state saved at ``path``; ModelFileError naming it if it cannot be read or
        is of another training set."""
        m, N = self.model, len(self.data.sentences)
        try:
            with np.load(path, allow_pickle=False) as f:
                shape, rows = tuple(int(x) for x in f["shape"]), f["rows"].astype(np.int64)
                Wr, Ur = f["W"].astype(float), f["U"].astype(float)
                c, epochs = int(f["visits"]), int(f["epochs"])
                history = json.loads(str(f["history"]))
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise ModelFileError(f"{path}: not a segment learner state ({e})") from None
        D, T = m.W_.shape
        if not (shape == (D, T) and Wr.shape == Ur.shape == (len(rows), T)
                and (len(rows) == 0 or (rows.min() >= 0 and rows.max() < D))
                and np.all(np.isfinite(Wr)) and np.all(np.isfinite(Ur))
                and epochs >= 0 and c == epochs * N and isinstance(history, list)
                and len(history) == epochs):
            raise ModelFileError(f"{path}: the segment learner state does not fit this "
                                 f"training set ({N} sentences, D × T = {D} × {T})")
        W, U = np.zeros((D, T)), np.zeros((D, T))
        W[rows], U[rows] = Wr, Ur
        self.learner = OnlineLearner(m, self.max_sweeps, W, U, c)
        self.history[:] = history
