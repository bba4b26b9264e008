"""Block-coordinate Frank–Wolfe for the max-margin objective of :mod:`.maxmargin`.

**Solver**: block-coordinate Frank–Wolfe on the dual (Lacoste-Julien, Jaggi, Schmidt
& Pletscher 2013, Algorithm 4) with λ' = 2λ, by default with the pairwise steps of
Osokin et al. 2016 ("Minding the gaps for block Frank–Wolfe", ICML), which converge
linearly where plain FW steps (``method="fw"``) zig-zag.  The dual point is stored as
each sentence's active set: sequences y with weights α_i(y) (Σ_y α_i(y) = 1; at the
start α_i = the gold, θ = 0) and their Δ; then w_i = c·Σ_y α_i(y)·ψ_i(y),
ψ_i(y) = φ(x_i, y_i) − φ(x_i, y), c = 1/(λ'N), w = Σ_i w_i = θ, ℓ_i = Σ_y α_i(y)·Δ/N.
For sentence i, with T(y) = Δ(y, y_i) + θ·φ(x_i, y) and ŷ = argmax T (the oracle):

    g_i = (1/N)[T(ŷ) − Σ_y α_i(y)·T(y)]  (≥ 0: the block's gap),
    FW:       w_i ← (1−γ)·w_i + γ·c·ψ_i(ŷ),         γ ∈ [0, 1],
    pairwise: α_i(v) −= γ, α_i(ŷ) += γ,             γ ∈ [0, α_i(v)], v = argmin_active T,

γ by exact line search (the dual is quadratic: γ* = num·λ'N²/‖φ(ŷ) − φ(·)‖², num =
g_i or (T(ŷ) − T(v))/N).  θ-space images are the CRF's chain rule Xᵀ·E at the
observed (feature, tag) pairs, on the sentence's own feature columns only.

**Certificate**: after every pass, w is recomputed from the active sets (no drift)
and the duality gap there is computed exactly by one more oracle sweep:

    gap = P(w) − D(α) = λ'‖w‖² + (1/N) Σ_i H_i(w) − Σ_i ℓ_i  ≥  P(w) − min P,

so gap ≤ tol certifies P(θ) within tol of the optimum (absolute: the objective is a
mean per sentence).  The pass's Σ g_i (at moving w) is an estimate only.

**Batched oracles** (Hamming loss, N ≥ 200): the pass finds the oracles of
:meth:`BCFW.oracle_batch` consecutive sentences (N/100, at most 64) in one padded
Viterbi at the w before the first of them; each block step still takes its line
search at the current w, so the dual still rises monotonically and the certificate is
exact; only the oracle is up to 1% of a pass stale.  On CoNLL-2000 a pass costs 5.6
ML objective+gradient evaluations and the certificate 1.5 (benchmarks/RESULTS.md;
6.8 and 2.0 one oracle at a time, in an earlier run on a busier machine), at a
slightly larger gap after 40 passes (0.19 against 0.17).

Pitfalls: while no step is clipped (γ* < α_i(v)), the w-trajectory does not depend on
λ (γ* ∝ λ'N² and w = c·Σα·ψ with c = 1/(λ'N): the w-step is num·N/‖Δφ‖²·Δφ): early
passes give the same θ for every λ (measured on CoNLL-2000: identical after 8 passes
on 400 sentences for λ from 3e-4 to 3e-3, θ within 1% after 40 passes for 1e-5 and
5e-5), and λ only matters once the gap is small, so tune λ at a small duality gap;
the dual starts at θ = 0, so a model with θ ≠ 0 is refused (no ``--init``);
λ must be > 0; a resumed run needs the dual state (:func:`save_state`, next to the
checkpoint), whose w must reproduce the checkpoint's θ; Δ is recomputed on loading.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..core.errors import InputError, ModelFileError
from ..core.fbeta import to_beta_sq
from ..learn import objectives as lo
from ..learn.epochs import EpochSolver
from ..learn.loss import Loss
from ..core.outputs import atomic_path
from ..schemes.tagspace import TagSpace
from .blocks import ChainBlocks, ChainModel, Data
from .maxmargin import (Chain, check_loss, hinge, l2_to_c, loss_of, most_violating,
                        sequence_score)

#: the dual state's file next to a checkpoint: CHECKPOINT + DUAL_SUFFIX
DUAL_SUFFIX = ".dual.npz"


@dataclass
class DualState:
    """The dual point: per sentence its active set (the sequences y with α_i(y) > 0, their
    weights α_i(y) summing to 1, and Δ(y, y_i)), and the passes made."""
    active: list[tuple[list[np.ndarray], np.ndarray, np.ndarray]]
    passes: int


METHODS = ("pairwise", "fw")


class BCFW(ChainBlocks):
    """Block-coordinate Frank–Wolfe for P(θ) (module doc) on one CRF's training data;
    ``method="fw"``: Lacoste-Julien et al.'s steps, ``"pairwise"`` (default): Osokin
    et al.'s pairwise steps, which move weight from the active set's worst sequence to
    the oracle's."""

    def __init__(self, model: ChainModel, data: Data, l2: float, loss: str = "hamming",
                 beta: float = 1.0, state: DualState | None = None, method: str = "pairwise",
                 executor: Any = None):
        beta_sq = to_beta_sq(beta)               # the standard β of the F loss
        check_loss(loss, beta_sq)
        if not (isinstance(l2, (int, float)) and 0 < l2 < math.inf):
            raise InputError(f"max-margin training needs λ > 0 (C = 1/(2λN) finite), got {l2!r}")
        if method not in METHODS:
            raise InputError(f"unknown BCFW method {method!r}; use one of {', '.join(METHODS)}")
        super().__init__(model, data)
        self.loss, self.beta, self.beta_sq = loss, beta, beta_sq
        self.method, self.l2, self.lam = method, float(l2), 2.0 * float(l2)
        self.c = 1.0 / (self.lam * self.N)                # w_y = c·ψ(y)
        self.chunks = data.gold.chunks if loss == "f" else [()] * self.N
        if state is None:
            if np.any(model.theta_ != 0):
                what = ("max-margin training starts from the dual point α = the gold, i.e. "
                        "θ = 0: it cannot start from a trained model ")
                raise InputError(what + "(fit a new one); resume from its checkpoint instead "
                                 "(Trainer(checkpoint=..., resume=True))",
                                 cli=what + "(no --init); resume from its checkpoint instead")
            state = DualState([([g.astype(np.int16)], np.ones(1), np.zeros(1))
                               for g in data.gold.sequences], 0)
        self._check_state(state)
        self.state = state
        self.sync()
        #: the executor's partitions (:mod:`fstchunk.runtime.scale`) that compute the certificate's
        #: hinge (every oracle of a pass) on its workers; None: in this process
        self.parts = executor.partitioned(model, data) if executor is not None else None

    # ------------------------------------------------------------------ w and θ
    def _check_state(self, st: DualState) -> None:
        """A dual state of this training set: valid sequences of the sentences' lengths,
        weights ≥ 0 summing to 1 per sentence (ModelFileError otherwise)."""
        space = TagSpace.of(tuple(self.tags), self.scheme)
        if len(st.active) != self.N:
            raise ModelFileError(f"dual state: {len(st.active)} sentences, the training set "
                                 f"has {self.N}")
        for k, (ys, al, _) in enumerate(st.active):
            n = len(self.gold.sequences[k])
            ok = len(ys) == len(al) >= 1 and np.all(al >= 0) and abs(al.sum() - 1) < 1e-6
            for y in ys:
                ok = ok and len(y) == n and bool(np.all((y >= 0) & (y < self.L))) and bool(
                    space.start_ok[y[0]] and space.end_ok[y[-1]]
                    and np.all(space.trans_ok[y[:-1], y[1:]]))
            if not ok:
                raise ModelFileError(f"dual state: sentence {k + 1}'s active set is not a "
                                     f"distribution over its valid tag sequences")
            st.active[k] = ([y.astype(np.int16) for y in ys], al, np.array([  # Δ recomputed
                loss_of(y, self.gold.sequences[k], self.chunks[k], self.tags, self.scheme,
                        self.loss, self.beta_sq) for y in ys]))

    def sync(self) -> None:
        """w = Σ_i w_i = c·Σ_i Σ_y α_i(y)·(φ(x_i, y_i) − φ(x_i, y)) in θ-space (dense W
        over features x tags, masked to the pairs), recomputed from the active sets."""
        off = self.gold.offsets
        E = np.zeros((self.X.shape[0], self.L))
        self.trans, self.start, self.end = (np.zeros((self.L, self.L)), np.zeros(self.L),
                                            np.zeros(self.L))
        for k, (ys, al, _) in enumerate(self.state.active):
            g = self.gold.sequences[k]
            parts = self.onehots(k, [g, *ys], [1.0, *(-al)])
            E[off[k]:off[k + 1]] = parts[0]
            self.trans += parts[1]
            self.start += parts[2]
            self.end += parts[3]
        self.W = np.asarray(self.X.T @ E) * self.mask * self.c
        self.trans, self.start, self.end = (self.c * self.trans, self.c * self.start,
                                            self.c * self.end)

    @property
    def theta(self) -> np.ndarray:
        """w in the CRF's θ layout (state weights at the pairs, trans, start, end)."""
        return self.theta_of(self.W, self.trans, self.start, self.end)

    @property
    def ell(self) -> float:
        """ℓ = Σ_i ℓ_i = (1/N) Σ_i Σ_y α_i(y)·Δ(y, y_i)."""
        return sum(float(al @ de) for _, al, de in self.state.active) / self.N

    # ------------------------------------------------------------------ the solver
    def oracle_batch(self) -> int:
        """Sentences whose Hamming oracles run as one batch at the same w: 1 (plain
        BCFW) below 200 sentences, then N/100 up to 64 (module doc)."""
        return 1 if self.loss != "hamming" else max(1, min(64, self.N // 100))

    def step(self, k: int, oracle: tuple[np.ndarray, float] | None = None) -> float:
        """One block update of sentence k; returns its gap g_k (at the w before it):
        g_k = (1/N)[H-term(ŷ) − Σ_y α_k(y)·H-term(y)], H-term(y) = Δ(y, y_k) + θ·φ(x_k, y).
        ``oracle``: (ŷ, Δ) found at an earlier w of this pass (the line search and g_k
        still use the current w), else found here."""
        g = self.gold.sequences[k]
        em = self.emissions(k, self.W)
        s, ds = oracle if oracle is not None else most_violating(
            self.tags, self.scheme, em, self.trans, self.start, self.end, g, self.chunks[k],
            self.loss, self.beta_sq)
        ys, al, de = self.state.active[k]
        terms = np.array([sequence_score(em, self.trans, self.start, self.end, y) + d
                          for y, d in zip(ys, de)])
        top = sequence_score(em, self.trans, self.start, self.end, s) + ds
        gap = (top - float(al @ terms)) / self.N
        here = next((j for j, y in enumerate(ys) if np.array_equal(y, s)), None)
        if self.method == "pairwise":          # move weight from v to s
            v = int(np.argmin(terms))
            num, limit = (top - terms[v]) / self.N, float(al[v])
            others, weights = [ys[v]], [1.0]
        else:                                   # move every weight towards s
            num, limit, others, weights, v = gap, 1.0, ys, al, None
        if num <= 0 or (v is not None and here == v):
            return gap
        parts = [a - b for a, b in zip(self.onehots(k, [s], [1.0]),
                                       self.onehots(k, others, weights))]
        gE = self.image(k, parts[0])                       # θ-space, over c
        sq = float(np.sum(gE * gE) + sum(np.sum(p * p) for p in parts[1:]))
        gamma = min(num * self.lam * self.N ** 2 / sq, limit) if sq > 0 else limit
        if gamma <= 0:
            return gap
        if self.method == "pairwise":
            al = al.copy()
            al[v] -= gamma
        else:
            al = (1.0 - gamma) * al
        ys, de = list(ys), de.copy()
        if here is None:
            ys.append(s.astype(np.int16))      # the sequences of the active sets: int16
            al, de = np.append(al, gamma), np.append(de, ds)
        else:
            al[here] += gamma
        keep = al > 1e-12 * max(1.0, float(al.max()))
        self.state.active[k] = ([y for y, ok in zip(ys, keep) if ok], al[keep] / al[keep].sum(),
                                de[keep])             # one assignment: Ctrl-C safe
        step = gamma * self.c                   # w ← w − γ·c·(φ(s) − φ(·)) in θ-space
        self.W[self.local[k][0]] -= step * gE
        self.trans -= step * parts[1]
        self.start -= step * parts[2]
        self.end -= step * parts[3]
        return gap

    def run_pass(self) -> float:
        """One pass over the sentences in a random order (seeded by the pass number, so
        a resumed run takes the same orders); w resynchronised.  Returns Σ g_k."""
        order = np.random.default_rng(self.state.passes).permutation(self.N)
        total, B = 0.0, self.oracle_batch()
        for first in range(0, self.N, B):
            ids = [int(k) for k in order[first:first + B]]
            found = [None] * len(ids) if B == 1 else self.oracles(
                ids, self.W, self.trans, self.start, self.end)
            total += sum(self.step(k, o) for k, o in zip(ids, found))
        self.state.passes += 1
        self.sync()
        return total

    def certificate(self) -> tuple[float, float]:
        """(P(w), duality gap P(w) − D(α)) at the current point, exactly (module doc)."""
        if self.parts is not None:
            values, _ = self.parts.statistics(self.theta, Loss(lo.MAX_MARGIN, 0.0,
                                                               self.beta, self.loss))
            h = float(values[0]) / max(self.N, 1)
        else:
            chain = Chain(self.tags, self.scheme, np.asarray(self.X @ self.W), self.trans,
                          self.start, self.end)
            h, _ = hinge(chain, self.gold, self.beta_sq, self.loss)
        sq = float(self.theta @ self.theta)
        primal = self.l2 * sq + h
        return primal, max(self.lam * sq + h - self.ell, 0.0)


# ---------------------------------------------------------------------- files
def save_state(path: str, state: DualState, gaps: Sequence[float] = ()) -> None:
    """Write the dual state to ``path`` (an .npz, atomically): per active sequence its
    sentence, weight and loss, the sequences' tags concatenated, and the duality gap
    of each pass so far."""
    sent = [k for k, (ys, _, _) in enumerate(state.active) for _ in ys]
    with atomic_path(path, "checkpoint") as tmp, open(tmp, "wb") as fh:
        np.savez(fh, sentence=np.array(sent, dtype=np.int64),
                 alpha=np.concatenate([al for _, al, _ in state.active]),
                 delta=np.concatenate([de for _, _, de in state.active]),
                 tags=np.concatenate([y for ys, _, _ in state.active for y in ys]),
                 passes=np.array(state.passes), gaps=np.asarray(gaps, dtype=float))


def load_gaps(path: str) -> list[float]:
    """The duality gaps of the passes saved with a dual state (none in older files)."""
    with np.load(path, allow_pickle=False) as f:
        return [float(g) for g in f["gaps"]] if "gaps" in f.files else []


class BCFWSolver(EpochSolver):
    """Max-margin training by :class:`BCFW` as an :class:`~fstchunk.learn.epochs.EpochSolver`:
    a step is a pass; it stops when the duality gap is <= ``tol``; its state (the dual
    point and the gaps so far) sits beside the checkpoint."""

    suffix, state_name = DUAL_SUFFIX, "max-margin dual state"

    def __init__(self, model: ChainModel, data: Data, l2: float, loss: str, beta: float,
                 tol: float, executor: Any = None):
        super().__init__(model, data)
        self.executor = executor
        self.l2, self.loss, self.beta, self.tol = l2, loss, beta, tol
        self.gaps: list[float] = []
        self.gap = math.inf

    def start(self, theta: np.ndarray) -> None:
        self.learner = BCFW(self.model, self.data, self.l2, self.loss, self.beta,
                            executor=self.executor)

    def load(self, path: str) -> None:
        state = load_state(path, [len(g) for g in self.data.gold.sequences])
        self.learner = BCFW(self.model, self.data, self.l2, self.loss, self.beta,
                            state=state, executor=self.executor)
        self.gaps = load_gaps(path)

    def begin(self) -> tuple[bool, float]:
        primal, self.gap = self.learner.certificate()
        return self.gap <= self.tol, primal

    def epoch(self) -> tuple[float, bool, dict]:
        estimate = self.learner.run_pass()
        primal, self.gap = self.learner.certificate()
        self.gaps.append(self.gap)
        return primal, self.gap <= self.tol, {"gap": f"{self.gap:.3g}",
                                                   "estimate": f"{estimate:.3g}"}

    def current(self) -> tuple[np.ndarray, int]:
        return self.learner.theta, self.learner.state.passes

    def settings(self, epochs: int, value: float) -> dict:
        return {"solver": "bcfw", "steps": self.learner.method, "loss": self.loss,
                "C": l2_to_c(self.l2, self.learner.N), "passes": epochs,
                "duality_gap": self.gap, "duality_gaps": list(self.gaps), "gap_tol": self.tol}

    def write(self, path: str) -> None:
        save_state(path, self.learner.state, self.gaps)

    def interrupted(self) -> tuple[np.ndarray, int]:
        """BCFW's w of its active sets (every block step is one assignment)."""
        if self.learner is not None:
            self.learner.sync()
        return super().interrupted()


def load_state(path: str, lengths: Sequence[int]) -> DualState:
    """The dual state saved at ``path`` for sentences of ``lengths``; ModelFileError
    naming the file if it cannot be read or does not fit them (the solver checks
    the rest)."""
    try:
        with np.load(path, allow_pickle=False) as f:
            sent, alpha = f["sentence"].astype(np.int64), f["alpha"].astype(float)
            delta, tags = f["delta"].astype(float), f["tags"].astype(np.int64)
            passes = int(f["passes"])
    except (OSError, KeyError, ValueError, TypeError) as e:
        raise ModelFileError(f"{path}: not a max-margin dual state ({e})") from None
    N = len(lengths)
    if not (len(sent) == len(alpha) == len(delta) and np.all(np.diff(sent) >= 0)
            and np.array_equal(np.unique(sent), np.arange(N)) and passes >= 0
            and len(tags) == sum(lengths[k] for k in sent)
            and np.all(np.isfinite(alpha)) and np.all(np.isfinite(delta))):
        raise ModelFileError(f"{path}: the dual state does not fit the {N} training sentences")
    active: list = [([], [], []) for _ in range(N)]
    pos = 0
    for k, a, d in zip(sent, alpha, delta):
        active[k][0].append(tags[pos:pos + lengths[k]])
        active[k][1].append(a)
        active[k][2].append(d)
        pos += lengths[k]
    return DualState([(ys, np.array(al), np.array(de)) for ys, al, de in active], passes)
