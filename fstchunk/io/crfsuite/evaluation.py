"""CRFsuite's evaluation (``crfsuite tag -qt``, ``crfsuite_evaluation_output`` in
chokkan/crfsuite ``lib/crf/src/crfsuite.c``) of a file of ``GOLD<TAB>PREDICTED``
lines (``crfsuite tag -r``'s output, ``fstchunk decode --format crfsuite``'s), a blank
line after each sequence: per label (#match, #model, #ref) and precision, recall, F1;
their macro-average; item and instance accuracy.

CRFsuite averages over the labels of its model; a file knows only the labels it shows,
so the labels here are those of the file (gold or predicted, in order of first
appearance): the figures equal CRFsuite's when every label of the model appears in the
file.  A label never in the gold has no precision, recall or F1 (``******``, as
CRFsuite prints) and adds 0 to the macro sums.  Pure Python (no numpy), as ``eval``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import InputError
from ..conll import iter_lines, source_name


def read_reference(path_or_file) -> list[list[tuple[str, str]]]:
    """The (gold, predicted) pairs of each sequence; InputError naming file:line for a
    line that is not two tab-separated labels."""
    name = source_name(path_or_file)
    seqs: list[list[tuple[str, str]]] = [[]]
    for lineno, raw in iter_lines(path_or_file):
        line = raw.rstrip("\r\n")
        if not line:
            if seqs[-1]:
                seqs.append([])
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not all(fields):
            raise InputError(f"{name}:{lineno}: expected GOLD<TAB>PREDICTED (crfsuite tag -r, "
                             f"fstchunk decode --format crfsuite), got {len(fields)} "
                             f"tab-separated field{'s' if len(fields) != 1 else ''}")
        if fields[1] == "<error>":
            raise InputError(f"{name}:{lineno}: a sequence that was not decoded (<error>)")
        seqs[-1].append((fields[0], fields[1]))
    if not seqs[-1]:
        seqs.pop()
    if not seqs:
        raise InputError(f"{name}: no sequences")
    return seqs


@dataclass
class Report:
    """Counts per label (in order of first appearance) and per item and instance."""
    labels: list[str]
    match: dict[str, int]
    model: dict[str, int]
    ref: dict[str, int]
    items: int
    items_correct: int
    instances: int
    instances_correct: int

    def prf(self, label: str) -> tuple[float, float, float] | None:
        """CRFsuite's precision, recall, F1 of ``label`` (None: not in the gold)."""
        if self.ref[label] == 0:
            return None
        p = self.match[label] / self.model[label] if self.model[label] else 0.0
        r = self.match[label] / self.ref[label]
        return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)

    def macro(self) -> tuple[float, float, float]:
        got = [self.prf(y) or (0.0, 0.0, 0.0) for y in self.labels]
        n = len(self.labels)
        return tuple(sum(v[k] for v in got) / n for k in range(3))   # type: ignore

    def text(self) -> str:
        """The report as CRFsuite prints it."""
        out = ["Performance by label (#match, #model, #ref) (precision, recall, F1):"]
        for y in self.labels:
            counts = f"({self.match[y]}, {self.model[y]}, {self.ref[y]})"
            v = self.prf(y)
            out.append(f"    {y}: {counts} " + ("(******, ******, ******)" if v is None else
                                                 f"({v[0]:1.4f}, {v[1]:1.4f}, {v[2]:1.4f})"))
        p, r, f = self.macro()
        out.append(f"Macro-average precision, recall, F1: ({p:f}, {r:f}, {f:f})")
        out.append(f"Item accuracy: {self.items_correct} / {self.items} "
                   f"({self.items_correct / self.items:1.4f})")
        out.append(f"Instance accuracy: {self.instances_correct} / {self.instances} "
                   f"({self.instances_correct / self.instances:1.4f})")
        return "\n".join(out) + "\n"


def evaluate(seqs: list[list[tuple[str, str]]]) -> Report:
    """CRFsuite's counts of (gold, predicted) sequences."""
    labels: dict[str, None] = {}
    for s in seqs:
        for g, p in s:
            labels.setdefault(g)
            labels.setdefault(p)
    zero = dict.fromkeys(labels, 0)
    rep = Report(list(labels), dict(zero), dict(zero), dict(zero), 0, 0, len(seqs), 0)
    for s in seqs:
        right = 0
        for g, p in s:
            rep.ref[g] += 1
            rep.model[p] += 1
            if g == p:
                rep.match[g] += 1
                right += 1
        rep.items += len(s)
        rep.items_correct += right
        rep.instances_correct += right == len(s)
    return rep
