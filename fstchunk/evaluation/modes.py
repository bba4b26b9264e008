"""The SemEval-2013 Task 9.1 evaluation modes (Segura-Bedmar et al. 2013) that NER papers
and tools report, with the counts and matching rules of nervaluate 1.2 (its package is
the oracle of the tests), and the type confusion table; ``fstchunk.evaluate(gold, pred,
mode=...)``, ``evaluate_file(..., mode=...)`` and ``fstchunk eval --mode`` report them.

Each predicted chunk is matched against the gold chunks of its sentence, in order, one
gold chunk at most once:

* ``strict``: correct when boundaries and type are equal; incorrect when it overlaps a
  gold chunk otherwise; spurious when it overlaps none;
* ``exact``: correct when the boundaries are equal (any type); else as ``strict``;
* ``partial``: correct when the boundaries are equal (any type); partial when it only
  overlaps a gold chunk; spurious when it overlaps none;
* ``type``: correct when it overlaps a gold chunk of its type (of those, the one with the
  closest boundaries: least |Δstart| + |Δend|); incorrect when it overlaps only chunks of
  other types (the first); spurious when it overlaps none.

"Overlaps" means: covers at least 1% of the gold chunk's tokens.  Gold chunks left
unmatched are missed.  With COR, INC, PAR, MIS, SPU:

    ACT = COR + INC + PAR + SPU,   POS = COR + INC + PAR + MIS,
    P = (COR + ½·PAR) / ACT,   R = (COR + ½·PAR) / POS,   F1 = 2PR / (P + R)

(½·PAR only in ``partial``; 0 where a denominator is 0).  Per type, the chunks of that
type alone are matched (so ``incorrect`` stays 0 in ``type``), as nervaluate does; the
macro average is the mean over types of P, R and F1.  Figures are fractions.

Pitfall: the matching is greedy in the predicted chunks' order, not an optimal
assignment (a first overlapping gold chunk is consumed even if a later prediction would
have matched it exactly); that is the published tools' definition, kept here so that the
numbers are the ones papers report.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Sequence

from ..core.errors import InputError
from ..core.outputs import json_text

Chunk = tuple[str, int, int]

#: the modes besides conlleval's (:func:`fstchunk.evaluation.chunks.evaluate`'s ``mode``)
MODES = ("strict", "exact", "partial", "type")


@dataclass
class ModeScores:
    """The counts of one mode (overall or of one type) and the figures from them."""
    correct: int = 0
    incorrect: int = 0
    partial: int = 0
    missed: int = 0
    spurious: int = 0
    half_partial: bool = False

    def add(self, other: "ModeScores") -> None:
        for f in ("correct", "incorrect", "partial", "missed", "spurious"):
            setattr(self, f, getattr(self, f) + getattr(other, f))

    @property
    def actual(self) -> int:
        return self.correct + self.incorrect + self.partial + self.spurious

    @property
    def possible(self) -> int:
        return self.correct + self.incorrect + self.partial + self.missed

    @property
    def _credit(self) -> float:
        return self.correct + (0.5 * self.partial if self.half_partial else 0.0)

    @property
    def precision(self) -> float:
        return self._credit / self.actual if self.actual else 0.0

    @property
    def recall(self) -> float:
        return self._credit / self.possible if self.possible else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    def as_dict(self) -> dict:
        counts = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "half_partial"}
        return {**counts, "actual": self.actual, "possible": self.possible,
                "precision": self.precision, "recall": self.recall, "f1": self.f1}


def _overlap(p: Chunk, g: Chunk) -> bool:
    """Whether predicted ``p`` covers at least 1% of gold ``g``'s tokens (nervaluate's
    default threshold: any overlap, for chunks of up to 100 tokens)."""
    shared = min(p[2], g[2]) - max(p[1], g[1])
    return shared > 0 and 100 * shared >= g[2] - g[1]


def _same_span(a: Chunk, b: Chunk) -> bool:
    return a[1] == b[1] and a[2] == b[2]


def match(gold: Sequence[Chunk], pred: Sequence[Chunk], mode: str) -> ModeScores:
    """The counts of one sentence's predicted chunks against its gold chunks (module
    doc); chunks are (type, start, end) with ``end`` exclusive."""
    check_mode(mode)
    out = ModeScores(half_partial=mode == "partial")
    used: set[int] = set()
    for p in pred:
        hit = near = None                  # the gold chunk matched; the first overlapping
        best = None                        # (type: closest boundaries)
        for k, g in enumerate(gold):
            if k in used:
                continue
            if mode == "type":
                if _overlap(p, g):
                    if p[0] == g[0]:
                        d = abs(p[1] - g[1]) + abs(p[2] - g[2])
                        if best is None or d < best:
                            hit, best = k, d
                    elif near is None:
                        near = k
                continue
            exact = _same_span(p, g) and (mode != "strict" or p[0] == g[0])
            if exact:
                hit = k
                break
            if near is None and _overlap(p, g):
                near = k
        if hit is not None:
            out.correct += 1
            used.add(hit)
        elif near is not None:
            used.add(near)
            if mode == "partial":
                out.partial += 1
            else:
                out.incorrect += 1
        else:
            out.spurious += 1
    out.missed = len(gold) - len(used)
    return out


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise InputError(f"unknown evaluation mode {mode!r}; use one of conlleval, "
                         f"{', '.join(MODES)}", cli=f"--mode {mode}: unknown; use one of "
                         f"conlleval, {', '.join(MODES)}")


@dataclass
class ModeReport:
    """One mode's figures: ``overall``, ``per_type`` (each type's chunks matched alone),
    their macro average, and the type ``confusion`` table."""
    mode: str
    overall: ModeScores
    per_type: dict[str, ModeScores]
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    sentences: int = 0

    def macro(self) -> dict[str, float]:
        """The mean over types of P, R and F1 (0 with no type)."""
        s = list(self.per_type.values())
        n = max(len(s), 1)
        return {"precision": sum(x.precision for x in s) / n,
                "recall": sum(x.recall for x in s) / n, "f1": sum(x.f1 for x in s) / n}

    def as_dict(self) -> dict:
        return {"mode": self.mode, "sentences": self.sentences,
                "overall": self.overall.as_dict(),
                "per_type": {t: s.as_dict() for t, s in sorted(self.per_type.items())},
                "macro": self.macro(), "confusion": self.confusion}

    def json(self) -> str:
        return json_text(self.as_dict(), indent=2, sort_keys=True)

    def text(self) -> str:
        """A table: overall, each type, macro; then the confusion table."""
        head = f"{'':>12} {'COR':>6} {'INC':>6} {'PAR':>6} {'MIS':>6} {'SPU':>6} " \
               f"{'P':>7} {'R':>7} {'F1':>7}"
        rows = [f"mode: {self.mode}", head]
        for name, s in [("overall", self.overall), *sorted(self.per_type.items())]:
            rows.append(f"{name or '(untyped)':>12} {s.correct:6d} {s.incorrect:6d} "
                        f"{s.partial:6d} {s.missed:6d} {s.spurious:6d} {100 * s.precision:7.2f}"
                        f" {100 * s.recall:7.2f} {100 * s.f1:7.2f}")
        m = self.macro()
        rows.append(f"{'macro':>12} {'':41} {100 * m['precision']:7.2f} "
                    f"{100 * m['recall']:7.2f} {100 * m['f1']:7.2f}")
        cols = sorted({p for row in self.confusion.values() for p in row})
        rows += ["", "type confusion (gold rows, predicted columns; same boundaries):",
                 f"{'':>12} " + " ".join(f"{c or '(none)':>10}" for c in cols)]
        for g in sorted(self.confusion):
            rows.append(f"{g or '(none)':>12} " + " ".join(
                f"{self.confusion[g].get(c, 0):10d}" for c in cols))
        return "\n".join(rows) + "\n"


#: the confusion table's row and column of chunks with no counterpart (missed, spurious)
NONE = "(none)"


def confusion(gold: Sequence[Chunk], pred: Sequence[Chunk], table: dict) -> None:
    """Adds one sentence to ``table`` (gold type -> predicted type -> count) over chunks
    with the same boundaries; a gold chunk with no predicted chunk on its span counts in
    column :data:`NONE` (missed), a predicted one with no gold chunk in row :data:`NONE`."""
    g = {(c[1], c[2]): c[0] for c in gold}
    p = {(c[1], c[2]): c[0] for c in pred}
    for span in g.keys() | p.keys():
        row = table.setdefault(g.get(span, NONE), {})
        col = p.get(span, NONE)
        row[col] = row.get(col, 0) + 1


def report_chunks(sentences: Sequence[tuple[list[Chunk], list[Chunk], int]], mode: str
                  ) -> ModeReport:
    """The report of sentences given as (gold chunks, predicted chunks, index)."""
    types = sorted({c[0] for g, p, _ in sentences for c in (*g, *p)})
    overall = ModeScores(half_partial=mode == "partial")
    per_type = {t: ModeScores(half_partial=mode == "partial") for t in types}
    table: dict[str, dict[str, int]] = {}
    for g, p, _ in sentences:
        overall.add(match(g, p, mode))
        for t in types:
            per_type[t].add(match([c for c in g if c[0] == t], [c for c in p if c[0] == t],
                                  mode))
        confusion(g, p, table)
    return ModeReport(mode, overall, per_type, table, len(sentences))
