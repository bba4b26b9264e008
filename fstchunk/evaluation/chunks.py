"""Chunk scoring exactly as conlleval.pl computes it, and per-sentence F_β.

Definitions (Jansche slides §8), for hypothesis x and reference y:
tp(x, y) = chunks (same type, same span) in both; m(x) = chunks of x;
P = tp/m(x), R = tp/m(y), and, with the standard β (van Rijsbergen; conlleval,
scikit-learn's ``fbeta_score``, seqeval)

    F_β(x | y) = (1+β²)·tp / (m(x) + β²·m(y))  =  (1+β²)·P·R / (β²·P + R).

Pitfall: the slides write (β'+1)·tp / (m(x) + β'·m(y)), the same measure with β' = β²
(:mod:`fstchunk.core.fbeta`); every ``beta`` here is the standard β.  β = 1 is FB1, β = 0
precision.

Corpus scores (:func:`evaluate`) follow conlleval.pl: micro-averaged over chunks,
P = 0 when nothing was found, F = 0 when P + R = 0, token accuracy = share of
tokens whose full tag is right.  Invalid sequences are read as conlleval.pl reads
them (:func:`fstchunk.schemes.encodings.conlleval_chunks`), or leniently in a given scheme.
The per-sentence F (:func:`sentence_f`) instead uses the convention 0/0 := 1 of the
slides, which the expected-utility code uses too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from ..core.errors import InputError
from ..core.fbeta import check_beta, f_rates, to_beta_sq
from ..core.outputs import json_text
from ..schemes import encodings as enc
from ..schemes.tagseq import tag_sentences
from .conlleval import ChunkCounts, Reading, SchemeTally, iter_rows
from .modes import ModeReport, check_mode, report_chunks
from .sentences import UNDECODED, check_chunk_tag, documented, row_tags  # noqa: F401  (old import paths)

Chunk = enc.Chunk



def f_beta(tp: float, m_hyp: float, m_ref: float, beta: float = 1.0) -> float:
    """F_β = (1+β²)·tp / (m_hyp + β²·m_ref), with 0/0 := 1 (Jansche slides §2, §8,
    whose β' is β²)."""
    return _f_counts(tp, m_hyp, m_ref, to_beta_sq(beta))


def _f_counts(tp: float, m_hyp: float, m_ref: float, beta_sq: float) -> float:
    den = m_hyp + beta_sq * m_ref
    return 1.0 if den == 0 else (beta_sq + 1.0) * tp / den


def sentence_f(hyp: Iterable[Chunk], ref: Iterable[Chunk], beta: float = 1.0) -> float:
    """F_β of one sentence's chunk sets, 0/0 := 1."""
    h, r = set(hyp), set(ref)
    return f_beta(len(h & r), len(h), len(r), beta)


def read_chunks(tags: Sequence[str], scheme: str | None = None) -> list[Chunk]:
    """Chunks as the scorer reads them: conlleval.pl's reading, or ``scheme``'s lenient one."""
    return enc.conlleval_chunks(tags) if scheme is None else enc.tags_to_chunks(
        tags, scheme, strict=False)


@dataclass
class Scores:
    """Counts and the derived figures for one chunk type (or all)."""
    correct: int = 0      # tp
    found: int = 0        # chunks in the hypothesis, m(x)
    gold: int = 0         # chunks in the reference, m(y)
    beta: float = 1.0

    @property
    def precision(self) -> float:
        return 100.0 * self.correct / self.found if self.found else 0.0

    @property
    def recall(self) -> float:
        return 100.0 * self.correct / self.gold if self.gold else 0.0

    @property
    def f(self) -> float:
        """(1+β²)·P·R / (β²·P + R), 0 when that is 0/0 (conlleval)."""
        return f_rates(self.precision, self.recall, self.beta)


@dataclass
class Report:
    """conlleval.pl's figures: overall, per type, and token accuracy."""
    overall: Scores
    per_type: dict[str, Scores]
    tokens: int
    correct_tags: int
    sentences: int
    beta: float = 1.0
    sentence_f: list[float] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return 100.0 * self.correct_tags / self.tokens if self.tokens else 0.0

    @property
    def mean_sentence_f(self) -> float:
        return sum(self.sentence_f) / len(self.sentence_f) if self.sentence_f else 0.0

    def conlleval(self) -> str:
        """The report in conlleval.pl's format."""
        o = self.overall
        fname = "FB1" if self.beta == 1 else f"F{self.beta:g}"
        lines = [f"processed {self.tokens} tokens with {o.gold} phrases; "
                 f"found: {o.found} phrases; correct: {o.correct}."]
        if self.tokens > 0:
            lines.append(f"accuracy: {self.accuracy:6.2f}%; precision: {o.precision:6.2f}%; "
                         f"recall: {o.recall:6.2f}%; {fname}: {o.f:6.2f}")
        for t in sorted(self.per_type):
            s = self.per_type[t]
            pad = " " * max(0, 17 - len(t.encode("utf-8")))    # Perl's %17s counts bytes
            # conlleval.pl lists the untyped chunks ("") once per table that holds them
            # (its de-duplication skips a false type name)
            for _ in range((s.gold > 0) + (s.found > 0) if t == "" else 1):
                lines.append(f"{pad}{t}: precision: {s.precision:6.2f}%; recall: "
                             f"{s.recall:6.2f}%; {fname}: {s.f:6.2f}  {s.found}")
        return "\n".join(lines) + "\n"

    def as_dict(self) -> dict:
        def d(s: Scores) -> dict:
            return {"precision": s.precision, "recall": s.recall, "f": s.f,
                    "correct": s.correct, "found": s.found, "gold": s.gold}
        return {"beta": self.beta, "tokens": self.tokens, "sentences": self.sentences,
                "accuracy": self.accuracy, "overall": d(self.overall),
                "per_type": {t: d(s) for t, s in sorted(self.per_type.items())},
                "mean_sentence_f": 100.0 * self.mean_sentence_f}

    def json(self) -> str:
        return json_text(self.as_dict(), indent=2, sort_keys=True)


def evaluate(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]],
             scheme: str | None = None, beta: float = 1.0,
             where: Sequence[str] | None = None, mode: str = "conlleval"
             ) -> Report | ModeReport:
    """Score predicted against gold tag sequences, chunk by chunk.

    Args:
        gold: the gold tags, one list per sentence (a flat list of tags is one
            sentence, as in seqeval; a string is no sentence).
        pred: the predicted tags, the same shape.
        scheme: ``None`` reads tags exactly as conlleval.pl; a scheme reads them
            leniently in that scheme.
        beta: β of $F_\\beta = (1+\\beta^2)PR/(\\beta^2 P + R)$.
        where: a name per sentence, for error messages.
        mode: ``conlleval`` (exact match, F_β) or one of the SemEval-2013 modes
            ``strict``, ``exact``, ``partial``, ``type`` (F1, figures as fractions).

    Returns:
        A :class:`Report` (``mode="conlleval"``: ``.overall`` and per type the
        precision, recall and F_β in %), or a :class:`~.modes.ModeReport`.

    Raises:
        InputError: sentences of different lengths or counts, naming the sentence.
        SchemeError: an invalid tag, naming the sentence and position.

    Examples:
        >>> import fstchunk
        >>> report = fstchunk.evaluate([["B-PER", "I-PER", "O", "B-LOC"]],
        ...                            [["B-PER", "I-PER", "O", "O"]])
        >>> report.overall.precision, report.overall.recall
        (100.0, 50.0)
    """
    beta = check_beta(beta)
    if mode != "conlleval":
        check_mode(mode)
    gold, pred = tag_sentences(gold, "gold"), tag_sentences(pred, "pred")
    if len(gold) != len(pred):
        raise InputError(f"{len(gold)} gold sentences but {len(pred)} predicted")
    triples = ((g, p, where[k] if where else f"sentence {k}")
               for k, (g, p) in enumerate(zip(gold, pred)))
    return _score(triples, scheme, beta) if mode == "conlleval" else \
        _mode_report(triples, scheme, mode)


def _mode_report(triples: Iterable[tuple[Sequence[str], Sequence[str], str]],
                 scheme: str | None, mode: str) -> ModeReport:
    sentences = []
    for g, p, at in triples:
        if len(g) != len(p):
            raise InputError(f"{at}: {len(g)} gold tags but {len(p)} predicted")
        sentences.append((read_chunks(g, scheme), read_chunks(p, scheme), at))
    return report_chunks(sentences, mode)


def _score(triples: Iterable[tuple[Sequence[str], Sequence[str], str]], scheme: str | None,
           beta: float) -> Report:
    """The report of (gold, predicted, where) per sentence, read once, in order: only
    counts and one F per sentence are kept, so a file streams through."""
    overall = Scores(beta=beta)
    beta_sq = to_beta_sq(beta)
    per_type: dict[str, Scores] = {}
    tokens = correct_tags = sentences = 0
    sent_f = []
    for g, p, at in triples:
        if len(g) != len(p):
            raise InputError(f"{at}: {len(g)} gold tags but {len(p)} predicted")
        sentences += 1
        tokens += len(g)
        correct_tags += sum(a == b for a, b in zip(g, p))
        gc, pc = set(read_chunks(g, scheme)), set(read_chunks(p, scheme))
        tp = gc & pc
        for name, chunks in (("gold", gc), ("found", pc), ("correct", tp)):
            for t, n in Counter(c[0] for c in chunks).items():
                s = per_type.setdefault(t, Scores(beta=beta))
                setattr(s, name, getattr(s, name) + n)
            setattr(overall, name, getattr(overall, name) + len(chunks))
        sent_f.append(_f_counts(len(tp), len(pc), len(gc), beta_sq))
    return Report(overall, per_type, tokens, correct_tags, sentences, beta, sent_f)


def evaluate_file(path, scheme: str | None = None, beta: float = 1.0,
                  delimiter: str | None = None, warn=None, mode: str = "conlleval"
                  ) -> Report | ModeReport:
    """Score a CoNLL file whose last two columns are gold and predicted tags, read as
    conlleval.pl reads it (its delimiter, boundaries, ``-DOCSTART-`` lines as tokens,
    white space: :mod:`fstchunk.evaluation.conlleval`), so that the figures are the
    script's: P = tp/found, R = tp/gold, $F_\\beta = (1+\\beta^2)PR/(\\beta^2 P + R)$.

    Both columns must hold chunk tags: a gold-only file (word, POS, tag) would
    otherwise score its POS column as the gold and find 0 phrases.  Without
    ``scheme``, a gold and a predicted column in two schemes that conlleval.pl reads
    apart (IOB2 against IOBES: :class:`fstchunk.evaluation.conlleval.SchemeTally`) are
    refused.

    Args:
        path: the file, or a text stream.
        scheme: ``None``: chunks as conlleval.pl counts them, over the whole stream;
            a scheme: each sentence's tags read leniently in it.
        beta: β of F_β.
        delimiter: what separates the columns (``None``: any white space).
        warn: called with a message for a file that conlleval.pl reads otherwise
            than its scheme means (both sides IOBES) or for CRLF line ends.
        mode: ``conlleval``, or a SemEval mode of :func:`evaluate` (``strict``,
            ``exact``, ``partial``, ``type``), each sentence's chunks read as
            conlleval.pl does (or in ``scheme``).

    Returns:
        A report: ``.overall`` and ``.per_type`` (correct, found, gold, precision,
        recall, f in %), ``.accuracy``; for a SemEval mode, that mode's report.

    Raises:
        InputError: a column that holds no chunk tags, naming file:line and column;
            two schemes apart; no sentences; an unknown ``mode``; an invalid ``beta``.
        OSError: the file cannot be opened (``FileNotFoundError`` naming the path).

    Examples:
        >>> import io, fstchunk
        >>> text = "John B-PER B-PER\\nSmith I-PER B-PER\\nran O O\\n\\nParis B-LOC B-LOC\\n"
        >>> r = fstchunk.evaluate_file(io.StringIO(text))
        >>> r.overall.correct, r.overall.found, r.overall.gold, r.overall.f
        (1, 3, 2, 40.0)
        >>> r.per_type["LOC"].f, r.accuracy
        (100.0, 75.0)
    """
    beta = check_beta(beta)
    reading = Reading()
    rows = iter_rows(path, delimiter, reading)
    if mode != "conlleval":
        check_mode(mode)
        scheme = enc.canonical_scheme(scheme) if scheme is not None else None
        report = _mode_report(_sentences(rows, path, scheme), scheme, mode)
        if not report.sentences:
            raise InputError(f"{path}: no sentences to score")
        return report
    if scheme is None:
        report, tally = _stream_report(rows, path, beta)
    else:
        scheme = enc.canonical_scheme(scheme)
        report = _score(_sentences(rows, path, scheme), scheme, beta)
        tally = None
    if not report.tokens:
        raise InputError(f"{path}: no sentences to score")
    said = tally.verdict() if tally is not None else None
    if said is not None and said.startswith("refuse: "):
        raise InputError(f"{path}: {said.removeprefix('refuse: ')}")
    if said is not None and warn is not None:
        warn(f"{path}: {said}")
    if reading.crlf and warn is not None:
        warn(f"{path}: CRLF line ends (read without the carriage returns; conlleval.pl "
             f"would keep them in the predicted tag and refuse the blank lines)")
    return report


def _stream_report(rows, path, beta: float) -> tuple[Report, SchemeTally]:
    """conlleval.pl's counts over the whole file (:class:`fstchunk.evaluation.conlleval.ChunkCounts`),
    each sentence's F from the counts its boundary closes, and the schemes each column's
    sentences read as (:class:`fstchunk.evaluation.conlleval.SchemeTally`)."""
    counter = ChunkCounts()
    tally = SchemeTally()
    sent_f: list[float] = []
    gold: list[str] = []
    pred: list[str] = []
    before = (0, 0, 0)

    def end_sentence() -> None:
        nonlocal before
        if gold:
            now = (counter.correct, counter.found, counter.gold)
            tp, found, wanted = (a - b for a, b in zip(now, before))
            sent_f.append(f_beta(tp, found, wanted, beta))
            tally.add(gold, pred)
            before = now
            gold.clear()
            pred.clear()
    checked: set[tuple[str, str]] = set()
    for row in rows:
        if row.boundary:
            counter.push("O", "O", token=False)
            end_sentence()
            continue
        key = (row.fields[-2], row.fields[-1])
        if key not in checked:
            row_tags(row, path, None)
            checked.add(key)
        g, p = key
        counter.push(g, p)
        if not row.docstart:
            gold.append(g)
            pred.append(p)
    counter.close()
    end_sentence()
    per_type = {t: Scores(c, f, g, beta) for t, (c, g, f) in counter.per_type.items()}
    overall = Scores(counter.correct, counter.found, counter.gold, beta)
    return Report(overall, per_type, counter.tokens, counter.correct_tags, len(sent_f), beta,
                  sent_f), tally


def _sentences(rows, path, scheme: str | None
               ) -> Iterator[tuple[list[str], list[str], str]]:
    """(gold, predicted, where) of each run of token rows between boundaries, the tags
    checked to be chunk tags (of ``scheme`` when given; ``-DOCSTART-`` rows are tokens,
    as in conlleval.pl)."""
    return ((g, p, at) for g, p, at, _ in documented(rows, path, scheme))
