"""The online large-margin multilabel learner of the segment model (McDonald, Crammer &
Pereira 2005, §3.1 and Fig. 4; Crammer & Singer 2002).

For each training sentence x in turn (a seeded shuffle per epoch), with the current w:
take the k best segments bestk(x; w) (k = max(n, |act(x)|)) and solve

    min_Δ ½‖Δ‖²  s.t.  (w + Δ)·f(x, y) >= +1  for every gold y ∈ act(x),
                       (w + Δ)·f(x, y') <= −1  for every y' ∈ bestk(x; w) − act(x)

(§3.1's O(k + v) form of line 4 of Fig. 4: thresholds ±1 instead of pairwise margins),
then w ← w + Δ.  Constraint c reads a_c·(w + Δ) >= 1 with a_c = ±f(x, y_c) (a vector in
the type's column of W); its dual is solved by Hildreth's algorithm (Censor & Zenios
1997): cyclic coordinate ascent on α >= 0,

    α_c ← max(0, α_c + (r_c − (Gα)_c) / G_cc),   r_c = 1 − a_c·w,  G = [a_c·a_d],

until the largest KKT violation is < 1e-8 (or ``max_sweeps``); Δ = Σ_c α_c a_c.  No
constraint violated: no change (the update is conservative).

Averaging (``average=True``, the default; Collins 2002): the model keeps the mean of
w over all steps, computed with the usual trick — W and an accumulator U,
U += (c − 1)·Δ at step c, mean = W − U / c — so an update costs O(touched entries).

Pitfalls: segments of different types share no feature (the type selects W's column),
so their Gram entries are 0 and the QP splits into one per type (solved apart); gold segments that ``max_gap`` forbids still get their
+1 constraint (their features are computed, but inference never finds them);
``restrictions`` filter the top k during training too (§4.1, "Multilabel with
restrictions"), so a near miss that the filter removes gives no constraint.
"""

from __future__ import annotations

import random
from typing import Sequence

import numpy as np

from ...errors import InputError
from ...progress import progress as progress_bar
from ...segments.data import SegSentence, iter_types
from ...segments.scoring import score_segments
from ...segments.space import kbest, restrict
from .features import segment_entries
from .model import SegmentModel, restriction_flags


def hildreth(G: np.ndarray, r: np.ndarray, max_sweeps: int = 1000,
             tol: float = 1e-8) -> np.ndarray:
    """α >= 0 maximising the dual of min ½‖Δ‖² s.t. a_c·Δ >= r_c (G = [a_c·a_d]):
    cyclic coordinate ascent until every KKT violation is < ``tol``; Δ = Σ α_c a_c.

    Acceleration: when a sweep leaves the support {c : α_c > 0} as the sweep before
    did, the equations G_SS α_S = r_S are solved once; if that point is dual feasible
    and meets the KKT test it is the answer (the exact solution the sweeps converge
    to), otherwise the sweeps go on."""
    G = np.asarray(G, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    C = len(r)
    alpha, Ga = np.zeros(C), np.zeros(C)
    diag = np.diag(G).tolist()
    rl = r.tolist()
    support, tried = None, None
    for _ in range(max_sweeps):
        for c in range(C):
            if diag[c] <= 0.0:
                continue
            old = alpha[c]
            new = max(0.0, old + (rl[c] - Ga[c]) / diag[c])
            if new != old:
                alpha[c] = new
                Ga += (new - old) * G[c]
        if _kkt(alpha, r - Ga) < tol:
            break
        now = np.flatnonzero(alpha > 0)
        if support is not None and np.array_equal(now, support) and (
                tried is None or not np.array_equal(now, tried)):
            tried = now
            exact = np.zeros(C)
            exact[now] = np.linalg.lstsq(G[np.ix_(now, now)], r[now], rcond=None)[0]
            if exact.min() >= 0 and _kkt(exact, r - G @ exact) < tol:
                return exact
        support = now
    return alpha


def _kkt(alpha: np.ndarray, resid: np.ndarray) -> float:
    """The largest KKT violation: |r − Gα| where α > 0, (r − Gα)⁺ where α = 0."""
    return float(np.where(alpha > 0, np.abs(resid), np.maximum(resid, 0.0)).max(initial=0.0))


class OnlineLearner:
    """One pass of Fig. 4 at a time over a :class:`SegmentModel` (W updated in place),
    with the averaging accumulator."""

    def __init__(self, model: SegmentModel, restrictions: str | dict | None = None,
                 max_sweeps: int = 1000):
        self.model = model
        self.flags = restriction_flags(restrictions)
        self.max_sweeps = max_sweeps
        self.U = np.zeros_like(model.W)
        self.steps = 0

    def averaged(self) -> np.ndarray:
        """The mean of W over the steps so far (W itself before any step)."""
        return self.model.W - self.U / self.steps if self.steps else self.model.W.copy()

    def step(self, sentence: SegSentence) -> int:
        """Apply the update of one sentence; the number of violated constraints."""
        m = self.model
        self.steps += 1
        if sentence.segments is None:
            raise InputError(f"{sentence.source}: a training sentence needs gold segments")
        sf = m.features(sentence)
        gold = [(m.type_index[g.type], g.positions) for g in sentence.segments
                if g.type in m.type_index]
        k = max(m.default_k(len(sentence)), len(gold))
        top = kbest(m.arc_scores(sentence, sf), k, m.max_gap)
        if any(self.flags.values()):
            top = restrict(top, **self.flags)
        golds = set(gold)
        cons = gold + [(t, pos) for _, t, pos in top if (t, pos) not in golds]
        if not cons:
            return 0
        C, T = len(cons), len(m.types)
        sign = np.array([1.0] * len(gold) + [-1.0] * (C - len(gold)))
        tt = np.array([t for t, _ in cons], dtype=np.int64)
        # f(x, y_c) as a dense C × U matrix over the U features the constraints touch
        row, col, val = segment_entries(sf, [pos for _, pos in cons], m.D)
        cols, inv = np.unique(col, return_inverse=True)
        M = np.zeros((C, len(cols)))
        M[row, inv.ravel()] = val
        Wc = m.W[cols]                                              # U × T
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
        m.W[cols] = Wc + delta
        self.U[cols] += (self.steps - 1) * delta
        return violated


def max_gap_of(sentences: Sequence[SegSentence]) -> int:
    """The most tokens a gold segment skips between two of its members."""
    gaps = [int(np.diff(g.positions).max()) - 1 for s in sentences for g in s.segments or ()
            if len(g.positions) > 1]
    return max(gaps, default=0)


def dev_f(model: SegmentModel, dev: Sequence[SegSentence], W: np.ndarray | None = None) -> float:
    """F over exact (type, positions) matches of ``model`` (weights ``W``) on ``dev``."""
    pred = model.decode(dev, W=W)
    return score_segments([s.segments or [] for s in dev], pred).overall.f()


def train(sentences: Sequence[SegSentence], epochs: int = 10,
          max_gap: int | None | str = "auto", D: int = 2 ** 20, average: bool = True,
          seed: int = 0, dev: Sequence[SegSentence] | None = None, progress: bool = True,
          restrictions: str | dict | None = None, k: int | None = None,
          max_sweeps: int = 1000, select: str = "last") -> SegmentModel:
    """A :class:`SegmentModel` trained by Fig. 4 for ``epochs`` passes.

    ``select="dev"`` keeps the weights of the epoch with the best dev F (ties: the
    earlier), recorded as ``settings["selected_epoch"]``: the number of epochs chosen on
    dev; ``"last"`` keeps the last epoch's.  The other weights of the kept epoch (the
    last iterate when averaging, else nothing) stay on ``model.other_weights`` for a
    comparison; they are not saved with the model.

    ``max_gap``: "auto" = the largest gap of a training gold segment, None = unlimited;
    ``k``: the top-k size (None: n); ``average``: keep the averaged weights (both the
    averaged and the last weights' dev F are recorded in ``settings["history"]``);
    ``restrictions`` (e.g. "no-overlap") apply in training and are the model's default
    in decoding."""
    sentences = list(sentences)
    if not sentences:
        raise InputError("no training sentences")
    missing = [s for s in sentences if s.segments is None]
    if missing:
        raise InputError(f"{missing[0].source}: a training sentence needs gold segments")
    types = list(iter_types(sentences))
    if not types:
        raise InputError(f"{sentences[0].source}: the training sentences hold no segment")
    epochs = int(epochs)
    if epochs < 1:
        raise InputError(f"epochs must be >= 1, got {epochs}")
    if select not in ("last", "dev") or (select == "dev" and not dev):
        raise InputError(f"select must be 'last' or 'dev' (with dev sentences), got {select!r}")
    gap = max_gap_of(sentences) if max_gap == "auto" else max_gap
    pos = all(s.pos is not None for s in sentences)          # read POS only if all have it
    model = SegmentModel(types, D, gap, k, restrictions, pos=pos)
    learner = OnlineLearner(model, restrictions, max_sweeps)
    rng = random.Random(seed)
    order = list(range(len(sentences)))
    history: list[dict] = []
    shown: dict = {}
    best: tuple = (-1.0, 0, None, None)            # (dev F, epoch, weights, other weights)
    for e in range(1, epochs + 1):
        rng.shuffle(order)
        updates = violated = 0
        bar = progress_bar(len(order), f"epoch {e}/{epochs}", "sent", enabled=progress,
                           every=0)                 # a log: one line per epoch
        bar.set_postfix(shown, refresh=False)
        try:
            for i in order:
                v = learner.step(sentences[i])
                updates += v > 0
                violated += v
                bar.update(1)
            rec = {"epoch": e, "updates": updates, "violated": violated}
            if dev:
                rec["dev_f_last"] = dev_f(model, dev)
                if average:
                    rec["dev_f_average"] = dev_f(model, dev, learner.averaged())
                shown = {"dev_F": f"{rec.get('dev_f_average', rec['dev_f_last']):.2f}"}
                if average:
                    shown["last"] = f"{rec['dev_f_last']:.2f}"
            shown["updates"] = updates
            bar.set_postfix(shown)
        finally:
            bar.close()
        history.append(rec)
        f = rec.get("dev_f_average" if average else "dev_f_last", -1.0)
        if select == "last" or f > best[0]:
            kept = learner.averaged() if average else model.W.copy()
            best = (f, e, kept, model.W.copy() if average else None)
    model.W, model.other_weights = best[2], best[3]
    model.settings.update(trainer="online-multilabel (Fig. 4, Hildreth)", epochs=epochs,
                          seed=seed, average=average, sentences=len(sentences),
                          max_sweeps=max_sweeps, history=history, select=select,
                          selected_epoch=best[1])
    return model
